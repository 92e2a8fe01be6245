//! The gate's outcomes as types: the verdict, the claim it is compared with, each step's status, how the
//! baseline was had, the bite check's status and per-test outcomes, and the findings that say why a change
//! fails.
//!
//! Every decision crosses module boundaries (gate to report, gate to agent, report file to `--resume`) as one
//! of these, never as a string to match: the serde names are the report's stable JSON names, so the JSON keeps
//! its shape and code branches on variants the compiler checks.

use serde::{Deserialize, Serialize};

/// The gate's verdict on a change.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Pass,
    Fail,
    /// The gate could not judge (a step could not run).
    Error,
}

impl Verdict {
    /// The JSON name: `pass`, `fail`, `error`.
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
            Verdict::Error => "error",
        }
    }
}

/// The verdict an agent (or a person) claims for a change.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
pub enum Claim {
    #[value(name = "GO", alias = "go")]
    #[serde(rename = "GO")]
    Go,
    #[value(name = "NO-GO", alias = "no-go")]
    #[serde(rename = "NO-GO")]
    NoGo,
}

impl Claim {
    /// `GO` or `NO-GO`, as the report and the commit trailer write it.
    pub fn name(self) -> &'static str {
        match self {
            Claim::Go => "GO",
            Claim::NoGo => "NO-GO",
        }
    }

    /// The claim of an `Agent-Verdict:` trailer value, if it is one.
    pub fn from_trailer(value: &str) -> Option<Claim> {
        let v = value.trim();
        if v.eq_ignore_ascii_case("GO") {
            Some(Claim::Go)
        } else if v.eq_ignore_ascii_case("NO-GO") || v.eq_ignore_ascii_case("NOGO") {
            Some(Claim::NoGo)
        } else {
            None
        }
    }
}

/// A claim compared with the verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ClaimOutcome {
    Confirmed,
    Overturned,
}

impl ClaimOutcome {
    /// None without a claim, or when the gate could not judge.
    pub fn of(claimed: Option<Claim>, verdict: Verdict) -> Option<ClaimOutcome> {
        match (claimed?, verdict) {
            (_, Verdict::Error) => None,
            (Claim::Go, Verdict::Pass) | (Claim::NoGo, Verdict::Fail) => {
                Some(ClaimOutcome::Confirmed)
            }
            _ => Some(ClaimOutcome::Overturned),
        }
    }
}

/// One step's status.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StepStatus {
    Pass,
    Fail,
    /// Fails at head as it fails at base (the same findings, or only tests failing at base too): reported,
    /// not blamed on the change (`--strict-baseline` blames it).
    Preexisting,
    Skipped,
    Error,
    Timeout,
}

impl StepStatus {
    pub fn is_bad(self) -> bool {
        matches!(
            self,
            StepStatus::Fail | StepStatus::Error | StepStatus::Timeout
        )
    }

    /// The word the console, the Markdown and the JUnit use.
    pub fn name(self) -> &'static str {
        match self {
            StepStatus::Pass => "pass",
            StepStatus::Fail => "fail",
            StepStatus::Preexisting => "preexisting",
            StepStatus::Skipped => "skipped",
            StepStatus::Error => "error",
            StepStatus::Timeout => "timeout",
        }
    }
}

/// How the baseline (the tests at base) was had.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Baseline {
    /// Run in this gate run.
    Ran,
    /// Loaded from the cache (same base tree, steps and toolchain).
    Cached,
    /// No test failed at head, so base was not needed.
    #[default]
    NotNeeded,
    /// `--no-baseline`.
    Disabled,
    /// Base does not build: head was judged on its own.
    BaseBroken,
    /// A base step timed out.
    Unavailable,
}

/// The bite check's status.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BiteStatus {
    /// At least one changed test (or every one, under `require = "all"`) fails without the production change.
    Bites,
    /// The changed tests prove nothing: the gate fails.
    NoBite,
    /// A test-only change, or a change without tests.
    NotApplicable,
    /// Turned off (`--no-bite`, or the profile).
    Skipped,
    /// No test step ran to completion.
    NotRun,
    /// The check could not finish (the reverted build or the selected tests timed out) and no other test
    /// bites: not evidence either way, and the gate does not pass on it.
    Inconclusive,
}

impl BiteStatus {
    pub fn name(self) -> &'static str {
        match self {
            BiteStatus::Bites => "bites",
            BiteStatus::NoBite => "no-bite",
            BiteStatus::NotApplicable => "not-applicable",
            BiteStatus::Skipped => "skipped",
            BiteStatus::NotRun => "not-run",
            BiteStatus::Inconclusive => "inconclusive",
        }
    }
}

/// What happened to one changed test without the production change.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TestOutcome {
    /// Passes at head, fails without the change.
    Bites,
    /// Cannot build or import without the change: a real but weaker signal.
    BitesBuild,
    /// Passes without the change.
    Inert,
    /// Skipped (counts as inert).
    Skipped,
    /// Did not finish in time without the change.
    Timeout,
    /// Selected but not found in the run.
    Absent,
    /// Fails at head already: a broken test, never a bite.
    FailsAtHead,
}

impl TestOutcome {
    pub fn name(self) -> &'static str {
        match self {
            TestOutcome::Bites => "bites",
            TestOutcome::BitesBuild => "bites-build",
            TestOutcome::Inert => "inert",
            TestOutcome::Skipped => "skipped",
            TestOutcome::Timeout => "timeout",
            TestOutcome::Absent => "absent",
            TestOutcome::FailsAtHead => "fails-at-head",
        }
    }
}

/// How a bite was proven: the production change reverted, or (when the reverted tests only failed to
/// compile) the bodies of the change's new or changed functions replaced by a failing stub.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BiteMethod {
    Revert,
    Stub,
}

impl BiteMethod {
    pub fn name(self) -> &'static str {
        match self {
            BiteMethod::Revert => "revert",
            BiteMethod::Stub => "stub",
        }
    }
}

/// Whether one production hunk of the change is noticed by the selected tests when it alone is reverted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HunkStatus {
    /// A selected test fails with this hunk reverted.
    Guarded,
    /// With this hunk reverted alone the tree does not build: the rest of the change (or a test) needs it to
    /// compile, so no test run can judge it alone. Not a proof either way; never counted as unguarded.
    NeededToBuild,
    /// Every selected test passes with this hunk reverted.
    Unguarded,
    /// Not checked: comments or docs only, out of the time budget, or the run could not finish.
    Skipped,
}

impl HunkStatus {
    pub fn name(self) -> &'static str {
        match self {
            HunkStatus::Guarded => "guarded",
            HunkStatus::NeededToBuild => "needed-to-build",
            HunkStatus::Unguarded => "unguarded",
            HunkStatus::Skipped => "skipped",
        }
    }
}

/// Which rule a finding comes from: what code branches on (the message is for people).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Rule {
    /// The change touches files outside `paths.allow`.
    OutOfScope,
    /// The change touches files under `paths.deny`.
    DeniedPath,
    /// Production code changed and no test did.
    NoTestsChanged,
    /// A format, vet, lint, build, codegen or custom step failed, timed out or could not run.
    StepFailed,
    /// A test step failed without per-test results to say which tests (generic runner, or before any test ran).
    TestStepFailed,
    /// A test step timed out.
    TestTimeout,
    /// A test step's exit status and its parsed results disagree.
    ExitMismatch,
    /// Tests that fail at head and passed (or did not exist) at base.
    NewTestFailures,
    /// The changed tests do not fail without the production change.
    NoBite,
    /// The change deletes tests.
    RemovedTests,
    /// The change removes assertions from tests, or newly skips them.
    WeakenedTests,
    /// The gate could not judge: a missing tool, a revision that does not resolve, a room that cannot be
    /// made, the whole gate's timeout (exit 3).
    Infrastructure,
    /// The gate could not judge because of how it was asked: a bad profile, a flag value, no change (exit 2).
    Usage,
    /// The gate was interrupted (Ctrl-C) before it could judge (exit 130).
    Interrupted,
    /// The bite check could not finish (timeouts) and no test bites.
    BiteInconclusive,
    /// A production hunk no selected test notices (`--bite-hunks require`).
    UnguardedHunk,
}

impl Rule {
    pub fn name(self) -> &'static str {
        match self {
            Rule::OutOfScope => "out-of-scope",
            Rule::DeniedPath => "denied-path",
            Rule::NoTestsChanged => "no-tests-changed",
            Rule::StepFailed => "step-failed",
            Rule::TestStepFailed => "test-step-failed",
            Rule::TestTimeout => "test-timeout",
            Rule::ExitMismatch => "exit-mismatch",
            Rule::NewTestFailures => "new-test-failures",
            Rule::NoBite => "no-bite",
            Rule::RemovedTests => "removed-tests",
            Rule::WeakenedTests => "weakened-tests",
            Rule::Infrastructure => "infrastructure",
            Rule::Usage => "usage",
            Rule::Interrupted => "interrupted",
            Rule::BiteInconclusive => "bite-inconclusive",
            Rule::UnguardedHunk => "unguarded-hunk",
        }
    }
}

/// One reason a change fails: the rule it breaks and a sentence saying how.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    pub rule: Rule,
    pub message: String,
    /// The step it concerns, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
    /// The tests or files it names.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subjects: Vec<String>,
}

impl Finding {
    pub fn new(rule: Rule, message: impl Into<String>) -> Finding {
        Finding {
            rule,
            message: message.into(),
            step: None,
            subjects: Vec::new(),
        }
    }

    pub fn step(mut self, step: impl Into<String>) -> Finding {
        self.step = Some(step.into());
        self
    }

    pub fn subjects(mut self, subjects: impl IntoIterator<Item = impl Into<String>>) -> Finding {
        self.subjects = subjects.into_iter().map(Into::into).collect();
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The serde names are the report's stable JSON names: each `name()` must say the same.
    fn same_name<T: Serialize>(value: T, name: &str) {
        assert_eq!(serde_json::to_value(value).unwrap(), name);
    }

    #[test]
    fn every_outcome_serializes_under_its_report_name() {
        for v in [Verdict::Pass, Verdict::Fail, Verdict::Error] {
            same_name(v, v.name());
        }
        for c in [Claim::Go, Claim::NoGo] {
            same_name(c, c.name());
        }
        for s in [
            StepStatus::Pass,
            StepStatus::Fail,
            StepStatus::Preexisting,
            StepStatus::Skipped,
            StepStatus::Error,
            StepStatus::Timeout,
        ] {
            same_name(s, s.name());
        }
        for b in [
            BiteStatus::Bites,
            BiteStatus::NoBite,
            BiteStatus::NotApplicable,
            BiteStatus::Skipped,
            BiteStatus::NotRun,
            BiteStatus::Inconclusive,
        ] {
            same_name(b, b.name());
        }
        for m in [BiteMethod::Revert, BiteMethod::Stub] {
            same_name(m, m.name());
        }
        for h in [
            HunkStatus::Guarded,
            HunkStatus::NeededToBuild,
            HunkStatus::Unguarded,
            HunkStatus::Skipped,
        ] {
            same_name(h, h.name());
        }
        for o in [
            TestOutcome::Bites,
            TestOutcome::BitesBuild,
            TestOutcome::Inert,
            TestOutcome::Skipped,
            TestOutcome::Timeout,
            TestOutcome::Absent,
            TestOutcome::FailsAtHead,
        ] {
            same_name(o, o.name());
        }
        for r in [
            Rule::OutOfScope,
            Rule::DeniedPath,
            Rule::NoTestsChanged,
            Rule::StepFailed,
            Rule::TestStepFailed,
            Rule::TestTimeout,
            Rule::ExitMismatch,
            Rule::NewTestFailures,
            Rule::NoBite,
            Rule::RemovedTests,
            Rule::WeakenedTests,
            Rule::Infrastructure,
            Rule::Usage,
            Rule::Interrupted,
            Rule::BiteInconclusive,
            Rule::UnguardedHunk,
        ] {
            same_name(r, r.name());
        }
        same_name(Baseline::BaseBroken, "base-broken");
        same_name(Baseline::NotNeeded, "not-needed");
    }

    #[test]
    fn a_claim_is_confirmed_when_it_matches_the_verdict() {
        use ClaimOutcome::*;
        assert_eq!(
            ClaimOutcome::of(Some(Claim::Go), Verdict::Pass),
            Some(Confirmed)
        );
        assert_eq!(
            ClaimOutcome::of(Some(Claim::Go), Verdict::Fail),
            Some(Overturned)
        );
        assert_eq!(
            ClaimOutcome::of(Some(Claim::NoGo), Verdict::Fail),
            Some(Confirmed)
        );
        assert_eq!(
            ClaimOutcome::of(Some(Claim::NoGo), Verdict::Pass),
            Some(Overturned)
        );
        assert_eq!(ClaimOutcome::of(Some(Claim::Go), Verdict::Error), None);
        assert_eq!(ClaimOutcome::of(None, Verdict::Pass), None);
    }

    #[test]
    fn trailer_values_are_read_case_blind() {
        assert_eq!(Claim::from_trailer(" go "), Some(Claim::Go));
        assert_eq!(Claim::from_trailer("No-Go"), Some(Claim::NoGo));
        assert_eq!(Claim::from_trailer("NOGO"), Some(Claim::NoGo));
        assert_eq!(Claim::from_trailer("maybe"), None);
    }
}
