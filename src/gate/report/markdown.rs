//! The report as Markdown, fit for a pull-request body: the verdict, why it fails, the steps, the tests
//! blamed and not blamed, the bite check, and the output of failed steps folded away. It always fits under
//! GitHub's limit ([`limits`](super::limits)).

use std::fmt::Write as _;

use crate::gate::bite::BiteReport;
use crate::gate::outcome::{BiteStatus, ClaimOutcome, Verdict};
use crate::gate::report::limits::{
    clip, first_n, fit_markdown, summarise, tail, DIFFS, DIFF_CHARS, LOG_TAIL_CHARS,
    LOG_TAIL_LINES, MARKDOWN_ID, MARKDOWN_ITEMS, MARKDOWN_LIMIT, MARKDOWN_NOTE, MARKDOWN_REASON,
    MARKDOWN_REASONS, MARKDOWN_ROWS,
};
use crate::gate::report::Report;
use crate::gate::steps::{human, StepReport};

impl Report {
    /// Markdown fit for a pull-request body: never over [`MARKDOWN_LIMIT`] characters. Long lists show their
    /// first items and how many more, failed steps' output gets what room is left (the JSON has everything).
    pub fn markdown(&self) -> String {
        let mut s = String::new();
        let icon = match self.verdict {
            Verdict::Pass => "✅ pass",
            Verdict::Fail => "❌ fail",
            Verdict::Error => "⚠️ error",
        };
        let _ = writeln!(s, "## vouch gate: {icon}\n");
        let profile = if self.profile.name.is_empty() {
            "before a profile was chosen".to_owned()
        } else {
            format!(
                "with the **{}** profile ({})",
                self.profile.name, self.profile.source
            )
        };
        let _ = writeln!(
            s,
            "Judged `{}..{}` (base `{}`, head `{}`) {profile}.\n",
            Self::short_rev(&self.base),
            Self::short_rev(&self.head),
            self.base.rev,
            self.head.rev,
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
            let why = match self.verdict {
                Verdict::Error => "Why the gate could not judge",
                _ => "Why it fails",
            };
            let _ = writeln!(s, "### {why}\n");
            for (r, subjects) in self.reasons_with_subjects().take(MARKDOWN_REASONS) {
                let _ = writeln!(
                    s,
                    "- {}",
                    summarise(&r.replace('\n', " "), subjects, MARKDOWN_REASON)
                );
            }
            more_line(&mut s, self.reasons.len(), MARKDOWN_REASONS, "reasons");
            s.push('\n');
        }
        if !self.steps.is_empty() {
            let _ = writeln!(
                s,
                "### Steps\n\n| step | kind | status | time | note |\n|---|---|---|---|---|"
            );
            for st in self.steps.iter().take(MARKDOWN_ROWS) {
                let _ = writeln!(
                    s,
                    "| {} | {:?} | {} | {} | {} |",
                    clip(&st.name, MARKDOWN_ID),
                    st.kind,
                    st.status.name(),
                    human(std::time::Duration::from_millis(st.duration_ms)),
                    clip(
                        &st.note
                            .as_deref()
                            .unwrap_or("")
                            .replace('|', "\\|")
                            .replace('\n', " "),
                        MARKDOWN_NOTE
                    )
                );
            }
            if self.steps.len() > MARKDOWN_ROWS {
                let _ = writeln!(
                    s,
                    "| … and {} more steps |  |  |  |  |",
                    self.steps.len() - MARKDOWN_ROWS
                );
            }
            s.push('\n');
        }
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
                        first_n(ids, MARKDOWN_ITEMS, ", ", |i| format!(
                            "`{}`",
                            clip(i, MARKDOWN_ID)
                        ))
                    );
                }
            }
        }
        if let Some(table) = bite_markdown(&self.bite) {
            s.push_str(&table);
        }
        let notes = self.notes_markdown();
        // What is left under the limit goes to the output of failed steps, one after the other.
        let mut room =
            MARKDOWN_LIMIT.saturating_sub(s.chars().count() + notes.chars().count() + 200);
        for st in self.steps.iter().filter(|st| st.status.is_bad()) {
            let section = output_markdown(st, room.saturating_sub(100));
            let size = section.chars().count();
            if size <= room {
                s.push_str(&section);
                room -= size;
            } else {
                let line = format!(
                    "*The output of {} was left out to fit; it is in the JSON report and the step's log.*\n\n",
                    clip(&st.name, MARKDOWN_ID)
                );
                room = room.saturating_sub(line.chars().count());
                s.push_str(&line);
            }
        }
        s.push_str(&notes);
        fit_markdown(s, MARKDOWN_LIMIT)
    }

    /// The notes section: the first notes, each clipped.
    fn notes_markdown(&self) -> String {
        let mut s = String::new();
        if !self.notes.is_empty() {
            let _ = writeln!(s, "### Notes\n");
            for n in self.notes.iter().take(MARKDOWN_REASONS) {
                let _ = writeln!(s, "- {}", clip(n, MARKDOWN_REASON));
            }
            more_line(&mut s, self.notes.len(), MARKDOWN_REASONS, "notes");
            s.push('\n');
        }
        s
    }
}

/// A list item saying how many of `total` items were left out after the first `shown`.
fn more_line(s: &mut String, total: usize, shown: usize, what: &str) {
    if total > shown {
        let _ = writeln!(
            s,
            "- … and {} more {what} (the JSON report has them all)",
            total - shown
        );
    }
}

/// A failed step's output, folded away: the last lines of its log (in at most about `room` characters,
/// [`LOG_TAIL_CHARS`] at most) and its drift diffs.
fn output_markdown(st: &StepReport, room: usize) -> String {
    let mut s = String::new();
    let log = st.log_tail.replace("```", "ʼʼʼ");
    let _ = writeln!(
        s,
        "<details><summary>{} output (last lines)</summary>\n\n```\n{}\n```\n</details>\n",
        clip(&st.name, MARKDOWN_ID),
        tail(&log, LOG_TAIL_LINES, room.min(LOG_TAIL_CHARS))
    );
    for d in st.drift.iter().take(DIFFS) {
        let _ = writeln!(
            s,
            "```diff\n{}\n```\n",
            clip(&d.diff.replace("```", "ʼʼʼ"), DIFF_CHARS)
        );
    }
    if st.drift.len() > DIFFS {
        let _ = writeln!(
            s,
            "… and {} more files drifted (the JSON report has every diff)\n",
            st.drift.len() - DIFFS
        );
    }
    s
}

fn bite_markdown(bite: &BiteReport) -> Option<String> {
    if bite.status == BiteStatus::NotRun {
        return None;
    }
    let mut s = format!("### Bite check: {}\n\n", bite.status.name());
    if bite.cached {
        s.push_str("Decided by an earlier gate run of the same change (same trees, profile and tools).\n\n");
    }
    if !bite.tests.is_empty() {
        s.push_str("| test | outcome |\n|---|---|\n");
        for t in bite.tests.iter().take(MARKDOWN_ROWS) {
            let _ = writeln!(
                s,
                "| `{}` | {} |",
                clip(&t.id, MARKDOWN_ID),
                t.outcome.name()
            );
        }
        if bite.tests.len() > MARKDOWN_ROWS {
            let _ = writeln!(
                s,
                "| … and {} more tests |  |",
                bite.tests.len() - MARKDOWN_ROWS
            );
        }
        s.push('\n');
    }
    if !bite.reasons.is_empty() {
        for r in bite.reasons.iter().take(MARKDOWN_REASONS) {
            let _ = writeln!(s, "- {}", clip(r, MARKDOWN_REASON));
        }
        more_line(&mut s, bite.reasons.len(), MARKDOWN_REASONS, "reasons");
        s.push('\n');
    }
    Some(s)
}

#[cfg(test)]
mod tests {
    use crate::gate::outcome::{Finding, Rule, StepStatus};
    use crate::gate::report::limits::{CONSOLE_LINE, MARKDOWN_LIMIT};
    use crate::gate::report::tests::sample;
    use crate::gate::report::Report;

    /// The sample with 3,000 new failures named in its reason, a 1 MB log tail and 200 failed steps.
    fn huge() -> Report {
        let mut r = sample();
        let ids: Vec<String> = (0..3000)
            .map(|i| format!("tests/test_many.py::test_case_number_{i}"))
            .collect();
        r.tests.new_failures = ids.clone();
        r.tests.preexisting_failures = ids.iter().map(|i| format!("{i}_old")).collect();
        r.tests.flaky = ids.iter().map(|i| format!("{i}_flaky")).collect();
        r.steps[2].log_tail = format!("{}\nEND", "x".repeat(1 << 20));
        let failed = r.steps[2].clone();
        r.steps.extend((0..200).map(|i| {
            let mut st = failed.clone();
            st.name = format!("step {i}");
            st.status = StepStatus::Fail;
            st
        }));
        r.notes = (0..100)
            .map(|i| format!("note {i}: {}", "n".repeat(5000)))
            .collect();
        r.set_findings(vec![Finding::new(
            Rule::NewTestFailures,
            format!(
                "new test failures (passing or absent at base): {}",
                ids.join("; ")
            ),
        )
        .subjects(ids)]);
        r
    }

    #[test]
    fn a_report_of_3000_failing_tests_and_a_megabyte_log_fits_a_pull_request_body() {
        let r = huge();
        let md = r.markdown();
        assert!(
            md.chars().count() <= MARKDOWN_LIMIT,
            "{}",
            md.chars().count()
        );
        assert!(
            md.contains("`tests/test_many.py::test_case_number_0`"),
            "{md}"
        );
        assert!(md.contains(" and 2980 more"), "{md}");
        assert!(md.contains("… and 2"), "{md}");
        assert!(md.contains("END\n```"), "the end of the log tail is kept");
        assert_eq!(
            md.matches("```").count() % 2,
            0,
            "every code block is closed"
        );
        assert_eq!(
            md.matches("<details>").count(),
            md.matches("</details>").count()
        );
        // The JSON keeps everything.
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(
            json["tests"]["new_failures"].as_array().unwrap().len(),
            3000
        );
        assert!(json["steps"][2]["log_tail"].as_str().unwrap().len() > 1 << 20);
    }

    #[test]
    fn the_console_summary_of_3000_failing_tests_has_short_lines() {
        let summary = huge().console_summary();
        for line in summary.lines() {
            assert!(line.chars().count() <= CONSOLE_LINE, "{line}");
        }
        assert!(
            summary.contains("tests/test_many.py::test_case_number_0"),
            "{summary}"
        );
        assert!(summary.contains("more"), "{summary}");
        assert!(
            summary.chars().count() < 100 * CONSOLE_LINE,
            "{}",
            summary.len()
        );
    }

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
