//! The gate's report: the JSON shape (stable names), Markdown for a pull-request body, JUnit XML, and the
//! console summary.

use std::fmt::Write as _;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::gate::bite::BiteReport;
use crate::gate::outcome::{
    Baseline, BiteStatus, Claim, ClaimOutcome, Finding, StepStatus, Verdict,
};
use crate::gate::paths::PathClass;
use crate::gate::steps::{human, StepReport};
use crate::git::ChangeKind;

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
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Tests {
    pub new_failures: Vec<String>,
    pub preexisting_failures: Vec<String>,
    pub flaky: Vec<String>,
    pub baseline: Baseline,
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
    pub duration_ms: u64,
    /// Where full step logs are.
    pub logs: PathBuf,
}

impl Report {
    /// The findings and the reasons they give, kept together.
    pub fn set_findings(&mut self, findings: Vec<Finding>) {
        self.reasons = findings.iter().map(|f| f.message.clone()).collect();
        self.findings = findings;
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
            let _ = writeln!(
                s,
                "Claimed verdict: **{}**, {}.\n",
                claimed.name(),
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
                st.status.name(),
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
                            st.status.name(),
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
                c.name(),
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

fn bite_markdown(bite: &BiteReport) -> Option<String> {
    if bite.status == BiteStatus::NotRun {
        return None;
    }
    let mut s = format!("### Bite check: {}\n\n", bite.status.name());
    if !bite.tests.is_empty() {
        s.push_str("| test | outcome |\n|---|---|\n");
        for t in &bite.tests {
            let _ = writeln!(s, "| `{}` | {} |", t.id, t.outcome.name());
        }
        s.push('\n');
    }
    if !bite.reasons.is_empty() {
        for r in &bite.reasons {
            let _ = writeln!(s, "- {r}");
        }
        s.push('\n');
    }
    Some(s)
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
    fn xml_text_is_escaped_and_control_characters_dropped() {
        assert_eq!(xml("a<b & \"c\"\u{1b}[0m"), "a&lt;b &amp; &quot;c&quot;[0m");
    }
}
