//! The bite check: revert the production part of the change, keep its tests, and prove they fail without it.
//!
//! The reverted tree is base plus the test part of the change: test files as at head, production files as at
//! base (files the change added are absent), Rust files holding both keep only their test hunks
//! ([`split`](crate::gate::split)), generated files follow their production source ([`plan`]). It is written as
//! a real tree and commit into a room of its own (never into the user's repository) and checked out there, so
//! nothing built at head (a binary that integration tests execute) can leak into the verdict. The tests the
//! change touches ([`testmap`](crate::gate::testmap)) are selected by id ([`select`]) and run ([`run`]); each
//! gets an outcome, and the policy decides ([`decide`]). This file holds the report the check leaves.

pub mod cache;
pub mod decide;
pub mod hunks;
pub mod modules;
pub mod plan;
mod run;
pub mod select;
pub mod stub;

use serde::{Deserialize, Serialize};

use crate::gate::outcome::{BiteMethod, BiteStatus, Finding, HunkStatus, Rule, TestOutcome};
use crate::gate::profile::{BitePolicy, BiteRequire, BuildFailure, HunkPolicy};

pub use decide::{at_head, decide, decide_touched, outcomes, timeout};
pub use plan::{plan, Input, Plan};
pub use select::commands;

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BiteTest {
    pub id: String,
    pub outcome: TestOutcome,
    /// How the outcome was had: the change reverted, or its functions stubbed (after a compile-only bite).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<BiteMethod>,
}

impl BiteTest {
    pub fn new(id: impl Into<String>, outcome: TestOutcome) -> BiteTest {
        BiteTest {
            id: id.into(),
            outcome,
            method: None,
        }
    }
}

/// One production hunk of the change, reverted alone with the others kept.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BiteHunk {
    pub file: String,
    /// The hunk's lines at head (`12-18`; a pure deletion names the line after it).
    pub lines: String,
    pub status: HunkStatus,
    /// Why a hunk was skipped, or which test noticed it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Policy {
    pub require: BiteRequire,
    pub build_failure: BuildFailure,
    #[serde(default)]
    pub hunks: HunkPolicy,
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
    /// The per-hunk check: each production hunk reverted alone.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hunks: Vec<BiteHunk>,
    /// Why the status is what it is; for no-bite, why the gate fails.
    pub reasons: Vec<String>,
    pub warnings: Vec<String>,
    pub duration_ms: u64,
    /// Taken from the cache: an earlier gate run decided it for the same trees, profile, tools and head
    /// results ([`cache`]); `duration_ms` is that run's.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cached: bool,
}

impl BiteReport {
    pub fn new(policy: &BitePolicy) -> BiteReport {
        BiteReport {
            status: BiteStatus::NotApplicable,
            policy: Policy {
                require: policy.require,
                build_failure: policy.build_failure,
                hunks: policy.hunks,
            },
            production_files: Vec::new(),
            test_files: Vec::new(),
            reverted: Vec::new(),
            tests: Vec::new(),
            removed_tests: Vec::new(),
            weakened_tests: Vec::new(),
            hunks: Vec::new(),
            reasons: Vec::new(),
            warnings: Vec::new(),
            duration_ms: 0,
            cached: false,
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
        if self.status == BiteStatus::Inconclusive {
            let ids = self
                .tests
                .iter()
                .filter(|t| t.outcome == TestOutcome::Timeout)
                .map(|t| t.id.clone())
                .collect::<Vec<_>>();
            out.push(
                Finding::new(
                    Rule::BiteInconclusive,
                    format!("bite check inconclusive: {}", self.reasons.join("; ")),
                )
                .subjects(ids),
            );
        }
        if self.policy.hunks == HunkPolicy::Require {
            let unguarded: Vec<String> = self
                .hunks
                .iter()
                .filter(|h| h.status == HunkStatus::Unguarded)
                .map(|h| format!("{}:{}", h.file, h.lines))
                .collect();
            if !unguarded.is_empty() {
                out.push(
                    Finding::new(
                        Rule::UnguardedHunk,
                        format!(
                            "unguarded hunks (no selected test fails with the hunk reverted alone): {}",
                            unguarded.join(", ")
                        ),
                    )
                    .subjects(unguarded),
                );
            }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn t(id: &str, outcome: TestOutcome) -> BiteTest {
        BiteTest::new(id, outcome)
    }

    fn report(status: BiteStatus, tests: &[&str]) -> BiteReport {
        let mut r = BiteReport::new(&BitePolicy::default());
        r.status = status;
        r.tests = tests.iter().map(|id| t(id, TestOutcome::Inert)).collect();
        r
    }

    #[test]
    fn a_no_bite_fails_the_gate_naming_its_tests_and_other_statuses_do_not() {
        let mut r = report(BiteStatus::NoBite, &["a", "b"]);
        r.reasons.push("none of the 2 changed tests fails".into());
        assert_eq!(
            r.findings(false),
            vec![
                Finding::new(Rule::NoBite, "no-bite: none of the 2 changed tests fails")
                    .subjects(["a", "b"])
            ]
        );
        for status in [
            BiteStatus::Bites,
            BiteStatus::NotApplicable,
            BiteStatus::Skipped,
            BiteStatus::NotRun,
        ] {
            assert_eq!(report(status, &["a"]).findings(false), vec![]);
        }
    }

    #[test]
    fn an_inconclusive_check_fails_the_gate_naming_what_timed_out_and_how_to_give_it_time() {
        let mut r = report(BiteStatus::Inconclusive, &[]);
        r.tests = vec![t("a", TestOutcome::Timeout), t("b", TestOutcome::Inert)];
        r.reasons.push("the reverted build timed out".into());
        assert_eq!(
            r.findings(false),
            vec![Finding::new(
                Rule::BiteInconclusive,
                "bite check inconclusive: the reverted build timed out"
            )
            .subjects(["a"])]
        );
    }

    #[test]
    fn unguarded_hunks_fail_the_gate_only_when_the_policy_requires_it() {
        let mut r = report(BiteStatus::Bites, &[]);
        r.hunks = vec![
            BiteHunk {
                file: "src/lib.rs".into(),
                lines: "3-5".into(),
                status: HunkStatus::Unguarded,
                note: None,
            },
            BiteHunk {
                file: "src/lib.rs".into(),
                lines: "9".into(),
                status: HunkStatus::Guarded,
                note: None,
            },
        ];
        assert_eq!(r.findings(false), vec![]);
        r.policy.hunks = HunkPolicy::Require;
        let found = r.findings(false);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].rule, Rule::UnguardedHunk);
        assert_eq!(found[0].subjects, vec!["src/lib.rs:3-5".to_string()]);
    }

    #[test]
    fn removed_and_weakened_tests_fail_the_gate_unless_allowed() {
        let mut r = report(BiteStatus::Bites, &[]);
        r.removed_tests = vec!["t::gone".into()];
        r.weakened_tests = vec!["t::a: 2 assertions fewer".into()];
        let found = r.findings(false);
        assert_eq!(
            found.iter().map(|f| f.rule).collect::<Vec<_>>(),
            vec![Rule::RemovedTests, Rule::WeakenedTests]
        );
        assert_eq!(
            found[0].message,
            "removed tests: t::gone (pass --allow-removed-tests if that is intended)"
        );
        assert_eq!(r.findings(true), vec![]);
    }

    #[test]
    fn a_check_that_did_not_run_says_so_and_keeps_the_policy() {
        let policy = BitePolicy {
            require: BiteRequire::All,
            build_failure: BuildFailure::Reject,
            ..BitePolicy::default()
        };
        let r = BiteReport::not_run(&policy);
        assert_eq!(r.status, BiteStatus::NotRun);
        assert_eq!(
            r.reasons,
            vec!["no test step ran to completion".to_string()]
        );
        assert_eq!(r.policy.require, BiteRequire::All);
        assert_eq!(r.policy.build_failure, BuildFailure::Reject);
    }
}
