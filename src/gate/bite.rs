//! The bite check: revert the production part of the change, keep its tests, and prove they fail without it.
//!
//! The reverted tree is base plus the test part of the change: test files as at head, production files as at
//! base (files the change added are absent), Rust files holding both keep only their test hunks
//! ([`split`](crate::gate::split)), generated files follow their production source. It is written as a real
//! tree and commit into a room of its own (never into the user's repository) and checked out there, so nothing
//! built at head (a binary that integration tests execute) can leak into the verdict. The tests the change
//! touches ([`testmap`]) are selected by id and run; each gets an outcome, and the policy decides.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::gate::outcome::{BiteStatus, Finding, Rule, TestOutcome};
use crate::gate::profile::{BitePolicy, BiteRequire, BuildFailure, PathClass};
use crate::gate::results::{self, Runner, TestResult, TestStatus};
use crate::gate::testmap::TestChange;
use crate::git::ChangeKind;
use crate::room::OverlayFile;

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BiteTest {
    pub id: String,
    pub outcome: TestOutcome,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Policy {
    pub require: BiteRequire,
    pub build_failure: BuildFailure,
}

/// The `bite` object of the gate report.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BiteReport {
    pub status: BiteStatus,
    pub policy: Policy,
    pub production_files: Vec<String>,
    pub test_files: Vec<String>,
    /// What the reverted tree is, file by file.
    pub reverted: Vec<String>,
    pub tests: Vec<BiteTest>,
    pub removed_tests: Vec<String>,
    pub weakened_tests: Vec<String>,
    /// Why the status is what it is; for no-bite, why the gate fails.
    pub reasons: Vec<String>,
    pub warnings: Vec<String>,
    pub duration_ms: u64,
}

impl BiteReport {
    pub fn new(policy: &BitePolicy) -> BiteReport {
        BiteReport {
            status: BiteStatus::NotApplicable,
            policy: Policy {
                require: policy.require,
                build_failure: policy.build_failure,
            },
            production_files: Vec::new(),
            test_files: Vec::new(),
            reverted: Vec::new(),
            tests: Vec::new(),
            removed_tests: Vec::new(),
            weakened_tests: Vec::new(),
            reasons: Vec::new(),
            warnings: Vec::new(),
            duration_ms: 0,
        }
    }

    /// The report of a gate run in which no test step ran to completion.
    pub fn not_run(policy: &BitePolicy) -> BiteReport {
        let mut report = BiteReport::new(policy);
        report.status = BiteStatus::NotRun;
        report.reasons.push("no test step ran to completion".into());
        report
    }

    /// The findings by which the bite check makes the gate fail.
    pub fn findings(&self, allow_removed_tests: bool) -> Vec<Finding> {
        let mut out = Vec::new();
        if self.status == BiteStatus::NoBite {
            let ids = self.tests.iter().map(|t| t.id.clone()).collect::<Vec<_>>();
            out.push(
                Finding::new(
                    Rule::NoBite,
                    format!("no-bite: {}", self.reasons.join("; ")),
                )
                .subjects(ids),
            );
        }
        if !allow_removed_tests {
            if !self.removed_tests.is_empty() {
                out.push(
                    Finding::new(
                        Rule::RemovedTests,
                        format!(
                            "removed tests: {} (pass --allow-removed-tests if that is intended)",
                            self.removed_tests.join(", ")
                        ),
                    )
                    .subjects(self.removed_tests.iter().cloned()),
                );
            }
            if !self.weakened_tests.is_empty() {
                out.push(
                    Finding::new(
                        Rule::WeakenedTests,
                        format!(
                            "weakened tests: {} (pass --allow-removed-tests if that is intended)",
                            self.weakened_tests.join("; ")
                        ),
                    )
                    .subjects(self.weakened_tests.iter().cloned()),
                );
            }
        }
        out
    }
}

/// The decision from the outcomes, per policy. Returns (status, reasons, warnings).
pub fn decide(tests: &[BiteTest], policy: &BitePolicy) -> (BiteStatus, Vec<String>, Vec<String>) {
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
            format!("{strong} of {n} changed tests fail without the production change")
        } else {
            format!(
                "{} of {n} changed tests bite without the production change ({strong} fail, {weak} do not build)",
                strong + weak
            )
        });
        (BiteStatus::Bites, reasons, warnings)
    } else {
        if n == 0 {
            reasons
                .push("the changed tests were not found among the tests that ran at head".into());
        } else if policy.require == BiteRequire::All && biters > 0 {
            reasons.push(format!(
                "require = \"all\": only {biters} of {n} changed tests fail without the production change"
            ));
        } else if counts(TestOutcome::FailsAtHead) == n {
            reasons.push(format!(
                "{} already at head, so {} prove nothing without the production change",
                if n == 1 {
                    "the changed test fails".to_owned()
                } else {
                    format!("all {n} changed tests fail")
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
                "none of the {n} changed tests fails without the production change ({})",
                kinds.join(", ")
            ));
        }
        (BiteStatus::NoBite, reasons, warnings)
    }
}

/// What the bite step needs from the gate.
pub struct Input<'a> {
    pub prep: &'a crate::gate::Prepared,
    pub runner: Runner,
    /// The test step's argv (placeholders unfilled).
    pub argv: Vec<String>,
    pub head_results: &'a [TestResult],
}

/// The reverted tree's overlay and the test changes, read from the user's repository (read-only).
pub struct Plan {
    pub overlay: Vec<(String, Option<OverlayFile>)>,
    pub test_changes: Vec<TestChange>,
    pub go_module: Option<String>,
}

/// Classifies the change into its parts and builds the overlay. Fills the report's file lists.
pub fn plan(input: &Input, report: &mut BiteReport) -> Result<Plan> {
    let prep = input.prep;
    let repo = crate::git::open_objects(&prep.objects)?;
    let base = git2::Oid::from_str(&prep.base.sha)?;
    let head = git2::Oid::from_str(&prep.head.sha)?;
    let head_tree = repo.find_commit(head)?.tree()?;
    let file_at = |commit: git2::Oid, path: &str| crate::git::file_text(&repo, commit, path);
    let mut overlay = Vec::new();
    let mut test_changes = Vec::new();
    let mut generated = Vec::new();
    let mut other = Vec::new();
    for c in &prep.changes {
        let old_path = c.old_path.as_deref().unwrap_or(&c.path);
        match (c.class, c.mixed) {
            (PathClass::Test, _) => {
                report.test_files.push(c.path.clone());
                let file = match c.change {
                    ChangeKind::Deleted => None,
                    _ => {
                        let entry = head_tree
                            .get_path(Path::new(&c.path))
                            .with_context(|| format!("{} at head", c.path))?;
                        let blob = repo.find_blob(entry.id())?;
                        Some(OverlayFile {
                            content: blob.content().to_vec(),
                            executable: entry.filemode() == 0o100755,
                        })
                    }
                };
                overlay.push((c.path.clone(), file));
                if c.change == ChangeKind::Renamed && old_path != c.path {
                    overlay.push((old_path.to_owned(), None));
                }
                test_changes.push(TestChange {
                    path: c.path.clone(),
                    old: match c.change {
                        ChangeKind::Added => None,
                        _ => file_at(base, old_path),
                    },
                    new: match c.change {
                        ChangeKind::Deleted => None,
                        _ => file_at(head, &c.path),
                    },
                });
            }
            (PathClass::Production, true) => {
                report.production_files.push(c.path.clone());
                report.test_files.push(c.path.clone());
                let test_only = prep.mixed.get(&c.path).cloned().unwrap_or_default();
                report.reverted.push(format!(
                    "{}: kept the test hunks, reverted the rest ({})",
                    c.path,
                    c.detail.as_deref().unwrap_or("split by test regions")
                ));
                let executable = head_tree
                    .get_path(Path::new(&c.path))
                    .is_ok_and(|e| e.filemode() == 0o100755);
                overlay.push((
                    c.path.clone(),
                    Some(OverlayFile {
                        content: test_only.clone().into_bytes(),
                        executable,
                    }),
                ));
                test_changes.push(TestChange {
                    path: c.path.clone(),
                    old: file_at(base, old_path),
                    new: Some(test_only),
                });
            }
            (PathClass::Production, false) => {
                report.production_files.push(c.path.clone());
                report.reverted.push(match c.change {
                    ChangeKind::Added => format!("{}: removed (the change added it)", c.path),
                    ChangeKind::Deleted => format!("{}: restored (the change deleted it)", c.path),
                    _ => format!("{}: reverted to base", c.path),
                });
            }
            (PathClass::Generated, _) => generated.push(c.path.clone()),
            (PathClass::Docs | PathClass::Other, _) => other.push(c.path.clone()),
        }
    }
    if !generated.is_empty() {
        report.reverted.push(format!(
            "generated files follow their production source, reverted to base: {}",
            generated.join(", ")
        ));
    }
    if !other.is_empty() {
        report.reverted.push(format!(
            "docs and other files, neither production nor tests, reverted to base: {}",
            other.join(", ")
        ));
    }
    let go_module = if input.runner == Runner::Go {
        file_at(head, "go.mod").and_then(|m| {
            m.lines().find_map(|l| {
                l.trim()
                    .strip_prefix("module ")
                    .map(|s| s.trim().trim_matches('"').to_owned())
            })
        })
    } else {
        None
    };
    Ok(Plan {
        overlay,
        test_changes,
        go_module,
    })
}

/// Groups cargo ids by their test target and narrows each selection to that target, so a target that does
/// not build without the change does not hide the others.
fn cargo_commands(argv: &[String], ids: &[String]) -> Vec<(Vec<String>, Vec<String>)> {
    let mut by_target: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for id in ids {
        let target = id.split_once("::").map_or("", |(t, _)| t).to_owned();
        by_target.entry(target).or_default().push(id.clone());
    }
    let mut out = Vec::new();
    for (target, ids) in by_target {
        let Some(mut cmds) = results::select_argv(Runner::Cargo, argv, &ids) else {
            continue;
        };
        let (stem, path) = target.split_once('@').unwrap_or((&target, ""));
        let selector: Vec<String> = if path.starts_with("tests/") {
            vec!["--test".into(), stem.to_owned()]
        } else if path == "src/lib.rs" {
            vec!["--lib".into()]
        } else if path == "src/main.rs" || path.starts_with("src/bin/") {
            vec!["--bin".into(), stem.replace('_', "-")]
        } else {
            Vec::new()
        };
        for cmd in cmds.iter_mut() {
            let at = cmd.iter().position(|a| a == "--").unwrap_or(cmd.len());
            for (k, s) in selector.iter().enumerate() {
                cmd.insert(at + k, s.clone());
            }
        }
        for cmd in cmds {
            out.push((cmd, ids.clone()));
        }
    }
    out
}

/// The selection commands with the ids each is meant to run.
pub fn commands(
    runner: Runner,
    argv: &[String],
    ids: &[String],
) -> Vec<(Vec<String>, Vec<String>)> {
    if runner == Runner::Cargo {
        return cargo_commands(argv, ids);
    }
    // One call per id group the runner splits by (package, file): ask with all ids, then attribute each
    // command to the ids whose scope it names.
    let Some(cmds) = results::select_argv(runner, argv, ids) else {
        return Vec::new();
    };
    if cmds.len() == 1 {
        return vec![(cmds[0].clone(), ids.to_vec())];
    }
    cmds.into_iter()
        .map(|cmd| {
            let mine: Vec<String> = ids
                .iter()
                .filter(|id| {
                    let scope = id.split_once("::").map_or(id.as_str(), |(s, _)| s);
                    cmd.iter().any(|a| a == scope)
                })
                .cloned()
                .collect();
            (cmd, mine)
        })
        .collect()
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
            BiteTest {
                id: id.clone(),
                outcome,
            }
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
            Some(TestStatus::Fail) => settled.push(BiteTest {
                id: id.clone(),
                outcome: TestOutcome::FailsAtHead,
            }),
            Some(TestStatus::Skip) => settled.push(BiteTest {
                id: id.clone(),
                outcome: TestOutcome::Skipped,
            }),
            _ => run.push(id.clone()),
        }
    }
    (run, settled)
}

/// The timeout of one reverted run: the profile's `bite.timeout`, else derived from how long the whole test
/// step took at head (five times that, at least a minute, at most the step's own timeout). A test that loops
/// without the fix then costs minutes, not the half hour a full test step may take.
pub fn timeout(policy: &BitePolicy, step_timeout: Duration, head_duration: Duration) -> Duration {
    if let Some(t) = policy
        .timeout
        .as_deref()
        .and_then(|t| crate::gate::profile::parse_duration(t).ok())
    {
        return t;
    }
    (head_duration * 5)
        .max(Duration::from_secs(60))
        .min(step_timeout)
}

/// Elapsed milliseconds since `t`.
pub fn ms(t: Instant) -> u64 {
    t.elapsed().as_millis() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(id: &str, outcome: TestOutcome) -> BiteTest {
        BiteTest {
            id: id.into(),
            outcome,
        }
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
        assert_eq!(status, BiteStatus::NoBite);
        assert_eq!(warnings.len(), 4);
    }

    #[test]
    fn no_bite_reasons_say_what_the_changed_tests_did() {
        let (_, reasons, _) = decide(&[t("a", TestOutcome::FailsAtHead)], &BitePolicy::default());
        assert_eq!(
            reasons,
            vec!["the changed test fails already at head, so it can prove nothing without the production change".to_string()]
        );
        let (_, reasons, _) = decide(
            &[t("a", TestOutcome::Inert), t("b", TestOutcome::Timeout)],
            &BitePolicy::default(),
        );
        assert_eq!(
            reasons,
            vec!["none of the 2 changed tests fails without the production change (1 inert, 1 timed out)".to_string()]
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
            timeout: Some("4s".into()),
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
