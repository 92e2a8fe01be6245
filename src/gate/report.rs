//! The gate's report: the JSON shape (stable names), Markdown for a pull-request body, JUnit XML, and the
//! console summary.

use std::fmt::Write as _;
use std::path::PathBuf;

use serde::Serialize;

use crate::cli::Claim;
use crate::gate::profile::PathClass;
use crate::gate::steps::{human, StepReport, StepStatus};
use crate::git::ChangeKind;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Pass,
    Fail,
    Error,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ClaimOutcome {
    Confirmed,
    Overturned,
}

#[derive(Clone, Debug, Serialize)]
pub struct Rev {
    /// What the user asked for (or how it was chosen).
    pub rev: String,
    pub sha: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct ProfileInfo {
    pub name: String,
    /// `--profile`, `.vouch/gate.toml at base`, or `detected (Cargo.toml)`.
    pub source: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct ChangedFile {
    pub path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old_path: Option<String>,
    pub class: PathClass,
    pub change: ChangeKind,
    /// Both test and production code changed in this file (inline tests).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub mixed: bool,
    /// For files holding both (Rust inline tests): which parts changed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct Tests {
    pub new_failures: Vec<String>,
    pub preexisting_failures: Vec<String>,
    pub flaky: Vec<String>,
    /// How the baseline was had: ran, cached, not-needed, disabled, base-broken, unavailable.
    pub baseline: String,
}

#[derive(Clone, Debug, Serialize)]
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
    pub bite: serde_json::Value,
    pub reasons: Vec<String>,
    pub notes: Vec<String>,
    pub duration_ms: u64,
    /// Where full step logs are.
    pub logs: PathBuf,
}

impl Report {
    pub fn claim_outcome(claimed: Option<Claim>, verdict: Verdict) -> Option<ClaimOutcome> {
        match (claimed?, verdict) {
            (_, Verdict::Error) => None,
            (Claim::Go, Verdict::Pass) | (Claim::NoGo, Verdict::Fail) => {
                Some(ClaimOutcome::Confirmed)
            }
            _ => Some(ClaimOutcome::Overturned),
        }
    }

    fn short(sha: &str) -> &str {
        &sha[..sha.len().min(12)]
    }

    /// Markdown fit for a pull-request body.
    pub fn markdown(&self) -> String {
        let mut s = String::new();
        let icon = match self.verdict {
            Verdict::Pass => "✅ pass",
            Verdict::Fail => "❌ fail",
            Verdict::Error => "⚠️ error",
        };
        let _ = writeln!(s, "## vouch gate: {icon}\n");
        let _ = writeln!(
            s,
            "Judged `{}..{}` (base `{}`, head `{}`) with the **{}** profile ({}).\n",
            Self::short(&self.base.sha),
            Self::short(&self.head.sha),
            self.base.rev,
            self.head.rev,
            self.profile.name,
            self.profile.source
        );
        if let (Some(claimed), Some(outcome)) = (self.claimed, self.claim) {
            let c = serde_json::to_value(claimed).unwrap_or_default();
            let _ = writeln!(
                s,
                "Claimed verdict: **{}**, {}.\n",
                c.as_str().unwrap_or_default(),
                match outcome {
                    ClaimOutcome::Confirmed => "confirmed",
                    ClaimOutcome::Overturned => "**overturned**",
                }
            );
        }
        if !self.reasons.is_empty() {
            let _ = writeln!(s, "### Why it fails\n");
            for r in &self.reasons {
                let _ = writeln!(s, "- {}", r.replace('\n', " "));
            }
            s.push('\n');
        }
        let _ = writeln!(
            s,
            "### Steps\n\n| step | kind | status | time | note |\n|---|---|---|---|---|"
        );
        for st in &self.steps {
            let _ = writeln!(
                s,
                "| {} | {:?} | {} | {} | {} |",
                st.name,
                st.kind,
                status_word(st.status),
                human(std::time::Duration::from_millis(st.duration_ms)),
                st.note
                    .as_deref()
                    .unwrap_or("")
                    .replace('|', "\\|")
                    .replace('\n', " ")
            );
        }
        s.push('\n');
        let t = &self.tests;
        if !t.new_failures.is_empty() || !t.preexisting_failures.is_empty() || !t.flaky.is_empty() {
            let _ = writeln!(s, "### Tests\n");
            for (title, ids) in [
                ("New failures", &t.new_failures),
                (
                    "Pre-existing failures (also fail at base, not blamed)",
                    &t.preexisting_failures,
                ),
                ("Flaky (failed, then passed alone)", &t.flaky),
            ] {
                if !ids.is_empty() {
                    let _ = writeln!(
                        s,
                        "**{title}**: {}\n",
                        ids.iter()
                            .map(|i| format!("`{i}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    );
                }
            }
        }
        if let Some(table) = bite_markdown(&self.bite) {
            s.push_str(&table);
        }
        for st in self.steps.iter().filter(|st| st.status.is_bad()) {
            let _ = writeln!(
                s,
                "<details><summary>{} output (last lines)</summary>\n\n```\n{}\n```\n</details>\n",
                st.name,
                st.log_tail.replace("```", "ʼʼʼ")
            );
            for d in &st.drift {
                let _ = writeln!(s, "```diff\n{}\n```\n", d.diff);
            }
        }
        if !self.notes.is_empty() {
            let _ = writeln!(s, "### Notes\n");
            for n in &self.notes {
                let _ = writeln!(s, "- {n}");
            }
            s.push('\n');
        }
        s
    }

    /// JUnit XML: one test case per step, and one per new failure.
    pub fn junit(&self) -> String {
        let mut s = String::from(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"vouch gate\">\n",
        );
        let failures = self.steps.iter().filter(|st| st.status.is_bad()).count();
        let _ = writeln!(
            s,
            "  <testsuite name=\"steps\" tests=\"{}\" failures=\"{}\">",
            self.steps.len(),
            failures
        );
        for st in &self.steps {
            let _ = write!(
                s,
                "    <testcase classname=\"vouch.gate\" name=\"{}\" time=\"{:.3}\"",
                xml(&st.name),
                st.duration_ms as f64 / 1000.0
            );
            match st.status {
                StepStatus::Pass => s.push_str("/>\n"),
                StepStatus::Skipped => {
                    let _ = writeln!(
                        s,
                        "><skipped message=\"{}\"/></testcase>",
                        xml(st.note.as_deref().unwrap_or(""))
                    );
                }
                _ => {
                    let _ = writeln!(
                        s,
                        "><failure message=\"{}\">{}</failure></testcase>",
                        xml(&format!(
                            "{} {}",
                            status_word(st.status),
                            st.note.as_deref().unwrap_or("")
                        )),
                        xml(&st.log_tail)
                    );
                }
            }
        }
        s.push_str("  </testsuite>\n");
        let _ = writeln!(
            s,
            "  <testsuite name=\"new test failures\" tests=\"{}\" failures=\"{}\">",
            self.tests.new_failures.len(),
            self.tests.new_failures.len()
        );
        for id in &self.tests.new_failures {
            let _ = writeln!(
                s,
                "    <testcase classname=\"vouch.tests\" name=\"{}\"><failure message=\"new failure\"/></testcase>",
                xml(id)
            );
        }
        s.push_str("  </testsuite>\n</testsuites>\n");
        s
    }

    /// The console summary (after the per-step lines).
    pub fn console_summary(&self) -> String {
        let mut s = String::new();
        let t = &self.tests;
        if !t.preexisting_failures.is_empty() {
            let _ = writeln!(
                s,
                "  pre-existing failures (not blamed): {}",
                t.preexisting_failures.join(", ")
            );
        }
        if !t.flaky.is_empty() {
            let _ = writeln!(s, "  flaky: {}", t.flaky.join(", "));
        }
        for n in &self.notes {
            let _ = writeln!(s, "  note: {n}");
        }
        for r in &self.reasons {
            let _ = writeln!(s, "  ✗ {}", r.replace('\n', "\n    "));
        }
        let claim = match (self.claimed, self.claim) {
            (Some(c), Some(o)) => format!(
                "; claimed {}: {}",
                serde_json::to_value(c)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default(),
                match o {
                    ClaimOutcome::Confirmed => "confirmed",
                    ClaimOutcome::Overturned => "OVERTURNED",
                }
            ),
            _ => String::new(),
        };
        let _ = writeln!(
            s,
            "verdict: {} ({}..{}, {}){claim}",
            match self.verdict {
                Verdict::Pass => "PASS",
                Verdict::Fail => "FAIL",
                Verdict::Error => "ERROR",
            },
            Self::short(&self.base.sha),
            Self::short(&self.head.sha),
            human(std::time::Duration::from_millis(self.duration_ms))
        );
        s
    }
}

fn bite_markdown(bite: &serde_json::Value) -> Option<String> {
    let status = bite.get("status")?.as_str()?;
    if status == "not-run" {
        return None;
    }
    let mut s = format!("### Bite check: {status}\n\n");
    if let Some(tests) = bite.get("tests").and_then(|t| t.as_array()) {
        if !tests.is_empty() {
            s.push_str("| test | outcome |\n|---|---|\n");
            for t in tests {
                let _ = writeln!(
                    s,
                    "| `{}` | {} |",
                    t.get("id").and_then(|v| v.as_str()).unwrap_or(""),
                    t.get("outcome").and_then(|v| v.as_str()).unwrap_or("")
                );
            }
            s.push('\n');
        }
    }
    if let Some(reasons) = bite.get("reasons").and_then(|r| r.as_array()) {
        for r in reasons.iter().filter_map(|r| r.as_str()) {
            let _ = writeln!(s, "- {r}");
        }
        s.push('\n');
    }
    Some(s)
}

pub fn status_word(status: StepStatus) -> &'static str {
    match status {
        StepStatus::Pass => "pass",
        StepStatus::Fail => "fail",
        StepStatus::Skipped => "skipped",
        StepStatus::Error => "error",
        StepStatus::Timeout => "timeout",
    }
}

fn xml(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if (c as u32) < 0x20 && c != '\n' && c != '\t' && c != '\r' => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claim_is_confirmed_when_it_matches_the_verdict() {
        assert_eq!(
            Report::claim_outcome(Some(Claim::Go), Verdict::Pass),
            Some(ClaimOutcome::Confirmed)
        );
        assert_eq!(
            Report::claim_outcome(Some(Claim::Go), Verdict::Fail),
            Some(ClaimOutcome::Overturned)
        );
        assert_eq!(
            Report::claim_outcome(Some(Claim::NoGo), Verdict::Fail),
            Some(ClaimOutcome::Confirmed)
        );
        assert_eq!(
            Report::claim_outcome(Some(Claim::NoGo), Verdict::Pass),
            Some(ClaimOutcome::Overturned)
        );
        assert_eq!(Report::claim_outcome(None, Verdict::Pass), None);
    }

    #[test]
    fn xml_text_is_escaped_and_control_characters_dropped() {
        assert_eq!(xml("a<b & \"c\"\u{1b}[0m"), "a&lt;b &amp; &quot;c&quot;[0m");
    }
}
