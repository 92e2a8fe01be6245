//! Where a test verdict is decided: exit status against parsed results, and head failures against the baseline.
//!
//! Pure functions over results, so every rule is unit-tested without running a toolchain.

use std::collections::{BTreeMap, BTreeSet};

use crate::gate::outcome::{Finding, StepStatus, Verdict};
use crate::gate::results::{TestResult, TestStatus};
use crate::gate::steps::StepReport;

/// The verdict from the steps and the findings: `error` when a step could not run at all (the gate cannot
/// judge), `fail` when any rule is broken, else `pass`.
pub fn verdict(steps: &[StepReport], findings: &[Finding]) -> Verdict {
    if steps.iter().any(|s| s.status == StepStatus::Error) {
        Verdict::Error
    } else if !findings.is_empty() {
        Verdict::Fail
    } else {
        Verdict::Pass
    }
}

/// Why the exit status and the parsed results disagree, or why the run says nothing about tests.
/// `None` when they agree.
pub fn exit_mismatch(
    exit_code: Option<i32>,
    results: &[TestResult],
    tests_exist: bool,
) -> Option<String> {
    let failed = results
        .iter()
        .filter(|r| r.status == TestStatus::Fail)
        .count();
    let ran = results.len();
    match exit_code {
        Some(0) if failed > 0 => Some(format!(
            "test results do not match exit status: the command exited 0 but {failed} of {ran} tests failed"
        )),
        Some(0) if ran == 0 && tests_exist => Some(
            "test results do not match exit status: the command exited 0 but ran no tests, and the tree has tests"
                .to_owned(),
        ),
        Some(code) if code != 0 && ran > 0 && failed == 0 => Some(format!(
            "test results do not match exit status: the command exited {code} but all {ran} tests it reported passed"
        )),
        _ => None,
    }
}

/// The ids that failed.
pub fn failing(results: &[TestResult]) -> BTreeSet<String> {
    results
        .iter()
        .filter(|r| r.status == TestStatus::Fail)
        .map(|r| r.id.clone())
        .collect()
}

/// Head failures split by what the baseline says about them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Split {
    /// Failing at head, passing or absent at base (or no usable baseline).
    pub candidates: BTreeSet<String>,
    /// Failing at head and at base.
    pub preexisting: BTreeSet<String>,
}

/// Splits head failures by the base results. `base` is None when there is no usable baseline (disabled, or
/// base does not build): then every failure is a candidate. A test absent at base is never pre-existing.
pub fn split_by_baseline(head_failing: &BTreeSet<String>, base: Option<&[TestResult]>) -> Split {
    let base_status: BTreeMap<&str, TestStatus> = base
        .unwrap_or_default()
        .iter()
        .map(|r| (r.id.as_str(), r.status))
        .collect();
    let mut split = Split::default();
    for id in head_failing {
        match base_status.get(id.as_str()) {
            Some(TestStatus::Fail) if base.is_some() => {
                split.preexisting.insert(id.clone());
            }
            _ => {
                split.candidates.insert(id.clone());
            }
        }
    }
    split
}

/// The final sets after reruns and policy.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Judgement {
    pub new_failures: Vec<String>,
    pub preexisting_failures: Vec<String>,
    pub flaky: Vec<String>,
}

/// Applies the policy: pre-existing failures are blamed under `strict_baseline`, flaky ones under `no_flaky`.
pub fn judge(
    split: &Split,
    flaky: &BTreeSet<String>,
    strict_baseline: bool,
    no_flaky: bool,
) -> Judgement {
    let mut new: BTreeSet<String> = BTreeSet::new();
    for id in &split.candidates {
        if !flaky.contains(id) || no_flaky {
            new.insert(id.clone());
        }
    }
    if strict_baseline {
        new.extend(split.preexisting.iter().cloned());
    }
    Judgement {
        new_failures: new.into_iter().collect(),
        preexisting_failures: split.preexisting.iter().cloned().collect(),
        flaky: flaky.iter().cloned().collect(),
    }
}

/// Ids that passed in any of the rerun results.
pub fn passed_on_rerun(wanted: &BTreeSet<String>, reruns: &[TestResult]) -> BTreeSet<String> {
    reruns
        .iter()
        .filter(|r| r.status == TestStatus::Pass && wanted.contains(&r.id))
        .map(|r| r.id.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(name: &str, status: StepStatus) -> StepReport {
        StepReport {
            name: name.into(),
            kind: crate::gate::profile::StepKind::Build,
            status,
            duration_ms: 0,
            command: String::new(),
            exit_code: None,
            log_tail: String::new(),
            log: None,
            note: None,
            tests: None,
            drift: Vec::new(),
        }
    }

    #[test]
    fn the_verdict_is_error_when_a_step_could_not_run_else_fail_on_any_finding() {
        use crate::gate::outcome::Rule;
        let ok = [
            step("build", StepStatus::Pass),
            step("lint", StepStatus::Skipped),
        ];
        assert_eq!(verdict(&ok, &[]), Verdict::Pass);
        let no_bite = [Finding::new(Rule::NoBite, "no-bite: inert")];
        assert_eq!(verdict(&ok, &no_bite), Verdict::Fail);
        let broken = [
            step("build", StepStatus::Pass),
            step("test", StepStatus::Error),
        ];
        assert_eq!(verdict(&broken, &no_bite), Verdict::Error);
        assert_eq!(verdict(&broken, &[]), Verdict::Error);
    }

    fn r(id: &str, status: TestStatus) -> TestResult {
        TestResult {
            id: id.into(),
            status,
            duration_ms: None,
            message: None,
        }
    }

    fn set(ids: &[&str]) -> BTreeSet<String> {
        ids.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn exit_zero_with_a_failed_test_is_a_mismatch() {
        let m = exit_mismatch(Some(0), &[r("a", TestStatus::Fail)], true).unwrap();
        assert!(
            m.starts_with("test results do not match exit status"),
            "{m}"
        );
    }

    #[test]
    fn exit_zero_with_no_tests_is_a_mismatch_only_when_tests_exist() {
        assert!(exit_mismatch(Some(0), &[], true).is_some());
        assert!(exit_mismatch(Some(0), &[], false).is_none());
    }

    #[test]
    fn a_nonzero_exit_with_all_tests_passing_is_a_mismatch() {
        let m = exit_mismatch(Some(1), &[r("a", TestStatus::Pass)], true).unwrap();
        assert!(m.contains("exited 1 but all 1 tests"), "{m}");
    }

    #[test]
    fn agreeing_results_are_no_mismatch() {
        assert!(exit_mismatch(Some(0), &[r("a", TestStatus::Pass)], true).is_none());
        assert!(exit_mismatch(Some(101), &[r("a", TestStatus::Fail)], true).is_none());
        assert!(exit_mismatch(Some(101), &[], true).is_none());
    }

    #[test]
    fn a_test_failing_at_base_too_is_preexisting_and_one_absent_at_base_is_new() {
        let head = set(&["old_broken", "brand_new", "regressed"]);
        let base = [
            r("old_broken", TestStatus::Fail),
            r("regressed", TestStatus::Pass),
        ];
        let s = split_by_baseline(&head, Some(&base));
        assert_eq!(s.preexisting, set(&["old_broken"]));
        assert_eq!(s.candidates, set(&["brand_new", "regressed"]));
    }

    #[test]
    fn without_a_baseline_every_failure_is_a_candidate() {
        let s = split_by_baseline(&set(&["a"]), None);
        assert_eq!(s.candidates, set(&["a"]));
        assert!(s.preexisting.is_empty());
    }

    #[test]
    fn policy_blames_preexisting_only_when_strict_and_flaky_only_when_asked() {
        let s = Split {
            candidates: set(&["new", "flaky"]),
            preexisting: set(&["old"]),
        };
        let flaky = set(&["flaky"]);
        let j = judge(&s, &flaky, false, false);
        assert_eq!(j.new_failures, vec!["new".to_string()]);
        assert_eq!(j.preexisting_failures, vec!["old".to_string()]);
        assert_eq!(j.flaky, vec!["flaky".to_string()]);
        let j = judge(&s, &flaky, true, true);
        assert_eq!(
            j.new_failures,
            vec!["flaky".to_string(), "new".into(), "old".into()]
        );
    }

    #[test]
    fn only_wanted_tests_that_pass_count_as_passed_on_rerun() {
        let got = passed_on_rerun(
            &set(&["a", "b"]),
            &[
                r("a", TestStatus::Pass),
                r("b", TestStatus::Fail),
                r("c", TestStatus::Pass),
            ],
        );
        assert_eq!(got, set(&["a"]));
    }
}
