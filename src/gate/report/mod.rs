//! The gate's report: the JSON shape, whose names are stable (`--json`, and what `vouch run` keeps and reads
//! back), and the views of it: Markdown for a pull-request body ([`markdown`]), JUnit XML for CI
//! ([`junit`]) and the console summary ([`console`]). The JSON keeps everything; the Markdown and the console
//! summarise long lists and texts to fit where they go ([`limits`]).

mod console;
mod junit;
pub mod limits;
mod markdown;

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::gate::bite::BiteReport;
use crate::gate::outcome::{Baseline, Claim, ClaimOutcome, Finding, Verdict};
use crate::gate::paths::PathClass;
use crate::gate::profile::BitePolicy;
use crate::gate::steps::StepReport;
use crate::git::ChangeKind;
use crate::sandbox::{Sandbox, SandboxMode};

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Rev {
    /// What the user asked for (or how it was chosen).
    pub rev: String,
    pub sha: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ProfileInfo {
    pub name: String,
    /// `--profile`, `.vouch/gate.toml at base`, or `detected (Cargo.toml)`.
    pub source: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ChangedFile {
    pub path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_path: Option<String>,
    pub class: PathClass,
    pub change: ChangeKind,
    /// Both test and production code changed in this file (inline tests).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub mixed: bool,
    /// For files holding both (Rust inline tests): which parts changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// For a new test file: whether the project's test command collects it (false: its tests never run,
    /// so it is no test change). Absent where it cannot be told.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collected: Option<bool>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Tests {
    pub new_failures: Vec<String>,
    pub preexisting_failures: Vec<String>,
    pub flaky: Vec<String>,
    pub baseline: Baseline,
}

/// How the code under test was confined.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct SandboxInfo {
    pub mode: SandboxMode,
    /// Steps ran under bubblewrap.
    pub active: bool,
    /// Why they did not, in mode `auto`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
}

impl SandboxInfo {
    pub fn of(sandbox: &Sandbox) -> SandboxInfo {
        SandboxInfo {
            mode: sandbox.mode(),
            active: sandbox.active(),
            warning: sandbox.warning().map(str::to_owned),
        }
    }
}

/// The gate's report: what `--json` writes and `vouch run` keeps (its names are stable).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Report {
    pub verdict: Verdict,
    pub base: Rev,
    pub head: Rev,
    /// The range judged, `base..head` in full shas.
    pub range: String,
    pub profile: ProfileInfo,
    pub claimed: Option<Claim>,
    pub claim: Option<ClaimOutcome>,
    pub changes: Vec<ChangedFile>,
    pub steps: Vec<StepReport>,
    pub tests: Tests,
    pub bite: BiteReport,
    /// Why the change fails, one finding per broken rule (empty when it passes).
    pub findings: Vec<Finding>,
    /// The findings' messages: the sentences the console, Markdown and PR bodies show.
    pub reasons: Vec<String>,
    pub notes: Vec<String>,
    /// Whether the steps ran confined.
    #[serde(default)]
    pub sandbox: SandboxInfo,
    pub duration_ms: u64,
    /// Where full step logs are.
    pub logs: PathBuf,
}

impl Report {
    /// The report of a gate that could not judge (exit 2, 3 or 130): verdict `error` and the finding that says
    /// why. The caller adds what it knows (the profile, the change); a revision that did not resolve has an
    /// empty sha, and then the range is empty too.
    pub fn error(base: Rev, head: Rev, finding: Finding) -> Report {
        let range = if base.sha.is_empty() || head.sha.is_empty() {
            String::new()
        } else {
            format!("{}..{}", base.sha, head.sha)
        };
        let mut report = Report {
            verdict: Verdict::Error,
            base,
            head,
            range,
            profile: ProfileInfo {
                name: String::new(),
                source: String::new(),
            },
            claimed: None,
            claim: None,
            changes: Vec::new(),
            steps: Vec::new(),
            tests: Tests::default(),
            bite: BiteReport::not_run(&BitePolicy::default()),
            findings: Vec::new(),
            reasons: Vec::new(),
            notes: Vec::new(),
            sandbox: SandboxInfo::default(),
            duration_ms: 0,
            logs: PathBuf::new(),
        };
        report.set_findings(vec![finding]);
        report
    }

    /// The findings and the reasons they give, kept together.
    pub fn set_findings(&mut self, findings: Vec<Finding>) {
        self.reasons = findings.iter().map(|f| f.message.clone()).collect();
        self.findings = findings;
    }

    /// Each reason with the subjects (tests, files) of its finding, when the reasons are the findings'.
    fn reasons_with_subjects(&self) -> impl Iterator<Item = (&str, &[String])> {
        let paired = self.findings.len() == self.reasons.len();
        self.reasons.iter().enumerate().map(move |(i, r)| {
            let subjects = match self.findings.get(i) {
                Some(f) if paired && f.message == *r => f.subjects.as_slice(),
                _ => &[],
            };
            (r.as_str(), subjects)
        })
    }

    fn short(sha: &str) -> &str {
        &sha[..sha.len().min(12)]
    }

    /// A revision as the views name it: its short sha, or what the user asked for when it did not resolve.
    fn short_rev(rev: &Rev) -> &str {
        if rev.sha.is_empty() {
            &rev.rev
        } else {
            Self::short(&rev.sha)
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::gate::outcome::{Rule, StepStatus};
    use crate::gate::profile::StepKind;

    fn step(name: &str, kind: StepKind, status: StepStatus, ms: u64) -> StepReport {
        StepReport {
            name: name.into(),
            kind,
            status,
            duration_ms: ms,
            command: name.into(),
            exit_code: None,
            log_tail: String::new(),
            log: None,
            note: None,
            tests: None,
            drift: Vec::new(),
        }
    }

    /// A failing report: a passing format step, a skipped lint step, a failed test step with a new failure
    /// and a pre-existing one, names and messages full of characters to escape.
    pub(crate) fn sample() -> Report {
        let mut lint = step("lint", StepKind::Lint, StepStatus::Skipped, 0);
        lint.note = Some("skipped: `ruff` is not installed (not on PATH)".into());
        let mut test = step("pytest <all>", StepKind::Test, StepStatus::Fail, 12_345);
        test.exit_code = Some(1);
        test.note = Some("1 test also failing at base (not blamed) & \"more\"".into());
        test.log_tail = "FAILED tests/test_a.py::test_x - assert 1 == 2 <&>\u{1b}[0m".into();
        let new = "tests/test_a.py::test_x[<'a'>]".to_string();
        let mut report = Report {
            verdict: Verdict::Fail,
            base: Rev {
                rev: "HEAD~1".into(),
                sha: "1111111111111111111111111111111111111111".into(),
            },
            head: Rev {
                rev: "HEAD".into(),
                sha: "2222222222222222222222222222222222222222".into(),
            },
            range:
                "1111111111111111111111111111111111111111..2222222222222222222222222222222222222222"
                    .into(),
            profile: ProfileInfo {
                name: "python".into(),
                source: "detected from pyproject.toml".into(),
            },
            claimed: Some(Claim::Go),
            claim: Some(ClaimOutcome::Overturned),
            changes: Vec::new(),
            steps: vec![
                step("fmt", StepKind::Format, StepStatus::Pass, 250),
                lint,
                test,
            ],
            tests: Tests {
                new_failures: vec![new.clone()],
                preexisting_failures: vec!["tests/test_b.py::test_old".into()],
                flaky: Vec::new(),
                baseline: Baseline::Ran,
            },
            bite: BiteReport::new(&BitePolicy::default()),
            findings: Vec::new(),
            reasons: Vec::new(),
            notes: vec!["a note".into()],
            sandbox: SandboxInfo::default(),
            duration_ms: 61_000,
            logs: PathBuf::from("/logs"),
        };
        report.set_findings(vec![Finding::new(
            Rule::NewTestFailures,
            format!("new test failures (passing or absent at base): {new}"),
        )
        .subjects([new])]);
        report
    }

    #[test]
    fn the_reasons_are_the_messages_of_the_findings() {
        let r = sample();
        assert_eq!(
            r.reasons,
            vec!["new test failures (passing or absent at base): tests/test_a.py::test_x[<'a'>]"]
        );
        assert_eq!(r.findings[0].rule, Rule::NewTestFailures);
    }

    #[test]
    fn a_report_reads_back_from_its_json() {
        let r = sample();
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["verdict"], "fail");
        assert_eq!(json["bite"]["status"], "not-applicable");
        let back: Report = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(serde_json::to_value(&back).unwrap(), json);
    }
}
