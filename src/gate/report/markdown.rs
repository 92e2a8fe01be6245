//! The report as Markdown, fit for a pull-request body: the verdict, why it fails, the steps, the tests
//! blamed and not blamed, the bite check, and the output of failed steps folded away.

use std::fmt::Write as _;

use crate::gate::bite::BiteReport;
use crate::gate::outcome::{BiteStatus, ClaimOutcome, Verdict};
use crate::gate::report::Report;
use crate::gate::steps::human;

impl Report {
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

#[cfg(test)]
mod tests {
    use crate::gate::report::tests::sample;

    #[test]
    fn the_markdown_has_the_verdict_reasons_steps_tests_and_failed_output() {
        let md = sample().markdown();
        assert_eq!(
            md,
            "## vouch gate: ❌ fail\n\n\
             Judged `111111111111..222222222222` (base `HEAD~1`, head `HEAD`) with the **python** profile (detected from pyproject.toml).\n\n\
             Claimed verdict: **GO**, **overturned**.\n\n\
             ### Why it fails\n\n\
             - new test failures (passing or absent at base): tests/test_a.py::test_x[<'a'>]\n\n\
             ### Steps\n\n\
             | step | kind | status | time | note |\n|---|---|---|---|---|\n\
             | fmt | Format | pass | 250ms |  |\n\
             | lint | Lint | skipped | 0ms | skipped: `ruff` is not installed (not on PATH) |\n\
             | pytest <all> | Test | fail | 12.3s | 1 test also failing at base (not blamed) & \"more\" |\n\n\
             ### Tests\n\n\
             **New failures**: `tests/test_a.py::test_x[<'a'>]`\n\n\
             **Pre-existing failures (also fail at base, not blamed)**: `tests/test_b.py::test_old`\n\n\
             ### Bite check: not-applicable\n\n\
             <details><summary>pytest <all> output (last lines)</summary>\n\n\
             ```\nFAILED tests/test_a.py::test_x - assert 1 == 2 <&>\u{1b}[0m\n```\n</details>\n\n\
             ### Notes\n\n\
             - a note\n\n"
        );
    }
}
