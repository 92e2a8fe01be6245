//! The bite check: revert the production part of the change, keep its tests, and prove they fail without it.
//!
//! The reverted tree is base plus the test part of the change: test files as at head, production files as at
//! base (files the change added are absent), Rust files holding both keep only their test hunks
//! ([`split`](crate::gate::split)), generated files follow their production source ([`plan`]). It is written as
//! a real tree and commit into a room of its own (never into the user's repository) and checked out there, so
//! nothing built at head (a binary that integration tests execute) can leak into the verdict. The tests the
//! change touches ([`testmap`](crate::gate::testmap)) are selected by id ([`select`]) and run ([`run`]); each
//! gets an outcome, and the policy decides ([`decide`]). This file holds the report the check leaves.

pub mod decide;
pub mod plan;
mod run;
pub mod select;

use serde::{Deserialize, Serialize};

use crate::gate::outcome::{BiteStatus, Finding, Rule, TestOutcome};
use crate::gate::profile::{BitePolicy, BiteRequire, BuildFailure};

pub use decide::{at_head, decide, decide_touched, outcomes, timeout};
pub use plan::{plan, Input, Plan};
pub use select::commands;

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

#[cfg(test)]
mod tests {
    use super::*;

    fn t(id: &str, outcome: TestOutcome) -> BiteTest {
        BiteTest {
            id: id.into(),
            outcome,
        }
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
