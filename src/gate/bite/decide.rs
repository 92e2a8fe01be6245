//! The bite check's outcomes and decision: each selected test's outcome from the reverted run (or from head,
//! for tests that fail or skip there already), the policy's decision over all of them, and the timeout of a
//! reverted run.
//!
//! Pure functions, so every outcome and every reason is tested without running a toolchain.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use crate::gate::bite::BiteTest;
use crate::gate::outcome::{BiteStatus, TestOutcome};
use crate::gate::profile::{BitePolicy, BiteRequire, BuildFailure};
use crate::gate::results::{TestResult, TestStatus};

/// The decision from the outcomes, per policy, every test counted as changed. Returns (status, reasons,
/// warnings).
pub fn decide(tests: &[BiteTest], policy: &BitePolicy) -> (BiteStatus, Vec<String>, Vec<String>) {
    let changed: BTreeSet<String> = tests.iter().map(|t| t.id.clone()).collect();
    decide_touched(tests, policy, &changed)
}

/// The tests the reasons count: "3 changed tests", or, when some were selected only because what they use
/// changed, "2459 tests (3 changed, 2456 selected)".
fn counted(n: usize, changed: usize) -> String {
    if changed >= n {
        format!("{n} changed tests")
    } else {
        format!("{n} tests ({changed} changed, {} selected)", n - changed)
    }
}

/// The decision from the outcomes, per policy; `changed` are the tests whose own text changed, the others
/// were selected because something they use changed (they are counted apart). Returns (status, reasons,
/// warnings).
pub fn decide_touched(
    tests: &[BiteTest],
    policy: &BitePolicy,
    changed: &BTreeSet<String>,
) -> (BiteStatus, Vec<String>, Vec<String>) {
    let what = counted(
        tests.len(),
        tests.iter().filter(|t| changed.contains(&t.id)).count(),
    );
    let counts = |o: TestOutcome| tests.iter().filter(|t| t.outcome == o).count();
    let ids = |o: TestOutcome| {
        tests
            .iter()
            .filter(|t| t.outcome == o)
            .map(|t| t.id.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let accept_build = policy.build_failure == BuildFailure::Accept;
    let biting =
        |o: TestOutcome| o == TestOutcome::Bites || (accept_build && o == TestOutcome::BitesBuild);
    let mut warnings = Vec::new();
    for (o, what) in [
        (
            TestOutcome::Inert,
            "inert (pass without the production change)",
        ),
        (
            TestOutcome::Skipped,
            "skipped without the production change (counted as inert)",
        ),
        (
            TestOutcome::Timeout,
            "timed out without the production change",
        ),
        (
            TestOutcome::Absent,
            "not found when run without the production change",
        ),
        (
            TestOutcome::FailsAtHead,
            "failing at head (broken, never a bite)",
        ),
    ] {
        if counts(o) > 0 {
            warnings.push(format!("{what}: {}", ids(o)));
        }
    }
    if !accept_build && counts(TestOutcome::BitesBuild) > 0 {
        warnings.push(format!(
            "only fail to build without the change (rejected by build_failure = \"reject\"): {}",
            ids(TestOutcome::BitesBuild)
        ));
    }
    let n = tests.len();
    let biters = tests.iter().filter(|t| biting(t.outcome)).count();
    let ok = match policy.require {
        BiteRequire::Any => biters > 0,
        BiteRequire::All => n > 0 && biters == n,
    };
    let mut reasons = Vec::new();
    if ok {
        let strong = counts(TestOutcome::Bites);
        let weak = if accept_build {
            counts(TestOutcome::BitesBuild)
        } else {
            0
        };
        reasons.push(if weak == 0 {
            format!("{strong} of {what} fail without the production change")
        } else {
            format!(
                "{} of {what} bite without the production change ({strong} fail, {weak} do not build)",
                strong + weak
            )
        });
        (BiteStatus::Bites, reasons, warnings)
    } else {
        let timeouts = counts(TestOutcome::Timeout);
        // A timeout is no evidence: when the tests that timed out could still make the policy hold, the
        // check is inconclusive, never a no-bite.
        let could_hold = match policy.require {
            BiteRequire::Any => biters == 0,
            BiteRequire::All => biters + timeouts == n,
        };
        if timeouts > 0 && could_hold {
            reasons.push(format!(
                "the check could not finish: {} of {n} changed tests timed out without the production change ({})",
                timeouts,
                ids(TestOutcome::Timeout)
            ));
            return (BiteStatus::Inconclusive, reasons, warnings);
        }
        if n == 0 {
            reasons
                .push("the changed tests were not found among the tests that ran at head".into());
        } else if policy.require == BiteRequire::All && biters > 0 {
            reasons.push(format!(
                "require = \"all\": only {biters} of {what} fail without the production change"
            ));
        } else if counts(TestOutcome::FailsAtHead) == n {
            reasons.push(format!(
                "{} already at head, so {} prove nothing without the production change",
                if n == 1 {
                    "the changed test fails".to_owned()
                } else {
                    format!("all {what} fail")
                },
                if n == 1 { "it can" } else { "they can" }
            ));
        } else {
            let mut kinds: Vec<String> = Vec::new();
            for (o, word) in [
                (TestOutcome::Inert, "inert"),
                (TestOutcome::Skipped, "skipped"),
                (TestOutcome::Timeout, "timed out"),
                (TestOutcome::Absent, "absent"),
                (TestOutcome::FailsAtHead, "failing at head"),
                (TestOutcome::BitesBuild, "only failing to build"),
            ] {
                if counts(o) > 0 {
                    kinds.push(format!("{} {word}", counts(o)));
                }
            }
            reasons.push(format!(
                "none of the {what} fails without the production change ({})",
                kinds.join(", ")
            ));
        }
        (BiteStatus::NoBite, reasons, warnings)
    }
}

/// Outcomes for the selected ids from the reverted run of one command.
pub fn outcomes(
    ids: &[String],
    results: &[TestResult],
    exit_code: Option<i32>,
    timed_out: bool,
) -> Vec<BiteTest> {
    let by_id: BTreeMap<&str, TestStatus> =
        results.iter().map(|r| (r.id.as_str(), r.status)).collect();
    let found_any = ids.iter().any(|id| by_id.contains_key(id.as_str()));
    ids.iter()
        .map(|id| {
            let outcome = match by_id.get(id.as_str()) {
                Some(TestStatus::Fail) => TestOutcome::Bites,
                Some(TestStatus::Pass) => TestOutcome::Inert,
                Some(TestStatus::Skip) => TestOutcome::Skipped,
                None if timed_out => TestOutcome::Timeout,
                // Nothing of this selection ran and the command failed: it did not build, import or collect.
                None if !found_any && exit_code != Some(0) => TestOutcome::BitesBuild,
                None if exit_code != Some(0)
                    && results.iter().any(|r| {
                        r.status == TestStatus::Fail && !ids.contains(&r.id) && not_a_test(&r.id)
                    }) =>
                {
                    TestOutcome::BitesBuild
                }
                None => TestOutcome::Absent,
            };
            BiteTest::new(id.clone(), outcome)
        })
        .collect()
}

/// Ids a runner reports for a failure outside any test: a package or crate that does not build, a test file
/// that does not load or collect. Another test failing in the same run says nothing about ours.
fn not_a_test(id: &str) -> bool {
    id.contains("[build]")
        || id.contains("[package]")
        || id.contains("[file]")
        || !id.contains("::")
}

/// Head status of the touched tests: those not passing at head get their outcome now.
pub fn at_head(ids: &BTreeSet<String>, head: &[TestResult]) -> (Vec<String>, Vec<BiteTest>) {
    let status: BTreeMap<&str, TestStatus> =
        head.iter().map(|r| (r.id.as_str(), r.status)).collect();
    let mut run = Vec::new();
    let mut settled = Vec::new();
    for id in ids {
        match status.get(id.as_str()) {
            Some(TestStatus::Fail) => {
                settled.push(BiteTest::new(id.clone(), TestOutcome::FailsAtHead))
            }
            Some(TestStatus::Skip) => settled.push(BiteTest::new(id.clone(), TestOutcome::Skipped)),
            _ => run.push(id.clone()),
        }
    }
    (run, settled)
}

/// The timeout of one reverted run: the profile's `bite.timeout`, else derived from how long the whole test
/// step took at head (five times that, at least a minute, at most the step's own timeout). A test that loops
/// without the fix then costs minutes, not the half hour a full test step may take.
pub fn timeout(policy: &BitePolicy, step_timeout: Duration, head_duration: Duration) -> Duration {
    if let Some(t) = policy.timeout {
        return t;
    }
    (head_duration * 5)
        .max(Duration::from_secs(60))
        .min(step_timeout)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(id: &str, outcome: TestOutcome) -> BiteTest {
        BiteTest::new(id, outcome)
    }

    fn r(id: &str, status: TestStatus) -> TestResult {
        TestResult {
            id: id.into(),
            status,
            duration_ms: None,
            message: None,
        }
    }

    #[test]
    fn selected_tests_are_counted_apart_from_the_changed_ones() {
        let tests = [
            t("a", TestOutcome::Bites),
            t("b", TestOutcome::Inert),
            t("c", TestOutcome::Inert),
        ];
        let changed: BTreeSet<String> = ["a".to_string()].into();
        let (status, reasons, _) = decide_touched(&tests, &BitePolicy::default(), &changed);
        assert_eq!(status, BiteStatus::Bites);
        assert_eq!(
            reasons,
            vec![
                "1 of 3 tests (1 changed, 2 selected) fail without the production change"
                    .to_string()
            ]
        );
        let (_, reasons, _) = decide(&tests, &BitePolicy::default());
        assert_eq!(
            reasons,
            vec!["1 of 3 changed tests fail without the production change".to_string()]
        );
    }

    #[test]
    fn one_biting_test_of_three_bites_with_two_inert_warnings() {
        let (status, reasons, warnings) = decide(
            &[
                t("a", TestOutcome::Bites),
                t("b", TestOutcome::Inert),
                t("c", TestOutcome::Inert),
            ],
            &BitePolicy::default(),
        );
        assert_eq!(status, BiteStatus::Bites);
        assert_eq!(
            reasons,
            vec!["1 of 3 changed tests fail without the production change".to_string()]
        );
        assert_eq!(
            warnings,
            vec!["inert (pass without the production change): b, c".to_string()]
        );
    }

    #[test]
    fn require_all_fails_on_one_inert_test() {
        let policy = BitePolicy {
            require: BiteRequire::All,
            ..BitePolicy::default()
        };
        let (status, reasons, _) = decide(
            &[t("a", TestOutcome::Bites), t("b", TestOutcome::Inert)],
            &policy,
        );
        assert_eq!(status, BiteStatus::NoBite);
        assert!(reasons[0].contains("only 1 of 2"), "{reasons:?}");
    }

    #[test]
    fn a_build_only_bite_is_accepted_by_default_and_rejected_on_request() {
        let tests = [t("a", TestOutcome::BitesBuild)];
        assert_eq!(decide(&tests, &BitePolicy::default()).0, BiteStatus::Bites);
        let reject = BitePolicy {
            build_failure: BuildFailure::Reject,
            ..BitePolicy::default()
        };
        let (status, _, warnings) = decide(&tests, &reject);
        assert_eq!(status, BiteStatus::NoBite);
        assert!(
            warnings[0].contains("rejected by build_failure"),
            "{warnings:?}"
        );
    }

    #[test]
    fn timeouts_absent_and_broken_tests_never_bite() {
        let tests = [
            t("a", TestOutcome::Timeout),
            t("b", TestOutcome::Absent),
            t("c", TestOutcome::FailsAtHead),
            t("d", TestOutcome::Skipped),
        ];
        let (status, _, warnings) = decide(&tests, &BitePolicy::default());
        // The timeout is no evidence either way: inconclusive, not a no-bite.
        assert_eq!(status, BiteStatus::Inconclusive);
        assert_eq!(warnings.len(), 4);
        let (status, _, warnings) = decide(&tests[1..], &BitePolicy::default());
        assert_eq!(status, BiteStatus::NoBite);
        assert_eq!(warnings.len(), 3);
    }

    #[test]
    fn a_timeout_is_inconclusive_unless_other_tests_decide_the_policy() {
        let (status, reasons, _) = decide(&[t("a", TestOutcome::Timeout)], &BitePolicy::default());
        assert_eq!(status, BiteStatus::Inconclusive);
        assert_eq!(
            reasons,
            vec!["the check could not finish: 1 of 1 changed tests timed out without the production change (a)".to_string()]
        );
        let tests = [t("a", TestOutcome::Timeout), t("b", TestOutcome::Bites)];
        assert_eq!(decide(&tests, &BitePolicy::default()).0, BiteStatus::Bites);
        let all = BitePolicy {
            require: BiteRequire::All,
            ..BitePolicy::default()
        };
        assert_eq!(decide(&tests, &all).0, BiteStatus::Inconclusive);
        let tests = [t("a", TestOutcome::Timeout), t("b", TestOutcome::Inert)];
        assert_eq!(decide(&tests, &all).0, BiteStatus::NoBite);
    }

    #[test]
    fn no_bite_reasons_say_what_the_changed_tests_did() {
        let (_, reasons, _) = decide(&[t("a", TestOutcome::FailsAtHead)], &BitePolicy::default());
        assert_eq!(
            reasons,
            vec!["the changed test fails already at head, so it can prove nothing without the production change".to_string()]
        );
        let (_, reasons, _) = decide(
            &[t("a", TestOutcome::Inert), t("b", TestOutcome::Absent)],
            &BitePolicy::default(),
        );
        assert_eq!(
            reasons,
            vec!["none of the 2 changed tests fails without the production change (1 inert, 1 absent)".to_string()]
        );
    }

    #[test]
    fn reverted_results_map_to_outcomes() {
        let ids: Vec<String> = ["a", "b", "c"].iter().map(|s| s.to_string()).collect();
        let got = outcomes(
            &ids,
            &[r("a", TestStatus::Fail), r("b", TestStatus::Pass)],
            Some(1),
            false,
        );
        assert_eq!(
            got.iter().map(|b| b.outcome).collect::<Vec<_>>(),
            vec![TestOutcome::Bites, TestOutcome::Inert, TestOutcome::Absent]
        );
        let got = outcomes(&ids, &[], Some(101), false);
        assert!(got.iter().all(|b| b.outcome == TestOutcome::BitesBuild));
        let got = outcomes(&ids, &[r("pkg::[build]", TestStatus::Fail)], Some(1), false);
        assert!(got.iter().all(|b| b.outcome == TestOutcome::BitesBuild));
        let got = outcomes(&ids, &[r("a", TestStatus::Pass)], None, true);
        assert_eq!(
            got.iter().map(|b| b.outcome).collect::<Vec<_>>(),
            vec![
                TestOutcome::Inert,
                TestOutcome::Timeout,
                TestOutcome::Timeout
            ]
        );
        let got = outcomes(&ids, &[], Some(0), false);
        assert!(got.iter().all(|b| b.outcome == TestOutcome::Absent));
        // Another test failing in the same run says nothing about a selected test that is missing.
        let got = outcomes(
            &ids,
            &[
                r("a", TestStatus::Pass),
                r("pkg::TestOther", TestStatus::Fail),
            ],
            Some(1),
            false,
        );
        assert_eq!(got[1].outcome, TestOutcome::Absent);
    }

    #[test]
    fn the_reverted_run_timeout_follows_the_head_run_unless_the_profile_sets_it() {
        let p = BitePolicy::default();
        let step = Duration::from_secs(1800);
        assert_eq!(
            timeout(&p, step, Duration::from_secs(2)),
            Duration::from_secs(60)
        );
        assert_eq!(
            timeout(&p, step, Duration::from_secs(100)),
            Duration::from_secs(500)
        );
        assert_eq!(timeout(&p, step, Duration::from_secs(1000)), step);
        let set = BitePolicy {
            timeout: Some(Duration::from_secs(4)),
            ..BitePolicy::default()
        };
        assert_eq!(
            timeout(&set, step, Duration::from_secs(100)),
            Duration::from_secs(4)
        );
    }

    #[test]
    fn tests_failing_or_skipped_at_head_are_settled_before_the_run() {
        let ids: BTreeSet<String> = ["a", "b", "c"].iter().map(|s| s.to_string()).collect();
        let (run, settled) = at_head(
            &ids,
            &[
                r("a", TestStatus::Fail),
                r("b", TestStatus::Skip),
                r("c", TestStatus::Pass),
            ],
        );
        assert_eq!(run, vec!["c".to_string()]);
        assert_eq!(
            settled.iter().map(|b| b.outcome).collect::<Vec<_>>(),
            vec![TestOutcome::FailsAtHead, TestOutcome::Skipped]
        );
    }
}
