//! The report's console summary, printed after the per-step lines: what was not blamed, the bite check's
//! tests, notes, the reasons the change fails, and the verdict line; long lists show their first items and
//! no line is longer than [`CONSOLE_LINE`].

use std::fmt::Write as _;

use crate::gate::outcome::{ClaimOutcome, Verdict};
use crate::gate::report::limits::{
    clip, clip_lines, first_n, summarise, CONSOLE_ID, CONSOLE_ITEMS, CONSOLE_LINE, CONSOLE_NOTES,
    CONSOLE_REASON_LINES,
};
use crate::gate::report::Report;
use crate::gate::steps::human;

impl Report {
    /// The console summary (after the per-step lines).
    pub fn console_summary(&self) -> String {
        let mut s = String::new();
        let t = &self.tests;
        let list = |ids: &[String]| {
            first_n(ids, CONSOLE_ITEMS, ", ", |i| {
                clip(i, CONSOLE_ID).into_owned()
            })
        };
        if !t.preexisting_failures.is_empty() {
            let _ = writeln!(
                s,
                "  pre-existing failures (not blamed): {}",
                list(&t.preexisting_failures)
            );
        }
        if !t.flaky.is_empty() {
            let _ = writeln!(s, "  flaky: {}", list(&t.flaky));
        }
        if !self.bite.tests.is_empty() {
            let _ = writeln!(
                s,
                "  bite check ({}): {}",
                self.bite.status.name(),
                first_n(&self.bite.tests, CONSOLE_ITEMS, ", ", |b| format!(
                    "{} ({})",
                    clip(&b.id, CONSOLE_ID),
                    b.outcome.name()
                ))
            );
        }
        for n in self.notes.iter().take(CONSOLE_NOTES) {
            let _ = writeln!(
                s,
                "  note: {}",
                clip_lines(n, CONSOLE_LINE - 8, CONSOLE_REASON_LINES).replace('\n', "\n    ")
            );
        }
        if self.notes.len() > CONSOLE_NOTES {
            let _ = writeln!(
                s,
                "  note: … and {} more notes (the JSON report has them all)",
                self.notes.len() - CONSOLE_NOTES
            );
        }
        for (r, subjects) in self.reasons_with_subjects().take(CONSOLE_NOTES) {
            let text = if r.contains('\n') {
                clip_lines(r, CONSOLE_LINE - 4, CONSOLE_REASON_LINES)
            } else {
                summarise(r, subjects, CONSOLE_LINE - 4)
            };
            let _ = writeln!(s, "  ✗ {}", text.replace('\n', "\n    "));
        }
        if self.reasons.len() > CONSOLE_NOTES {
            let _ = writeln!(
                s,
                "  ✗ … and {} more reasons (the JSON report has them all)",
                self.reasons.len() - CONSOLE_NOTES
            );
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
            Self::short_rev(&self.base),
            Self::short_rev(&self.head),
            human(std::time::Duration::from_millis(self.duration_ms))
        );
        clip_lines(&s, CONSOLE_LINE, usize::MAX)
    }
}

#[cfg(test)]
mod tests {
    use crate::gate::report::tests::sample;

    #[test]
    fn the_summary_lists_what_was_not_blamed_notes_reasons_and_the_verdict() {
        assert_eq!(
            sample().console_summary(),
            "  pre-existing failures (not blamed): tests/test_b.py::test_old\n  note: a note\n  ✗ new test failures (passing or absent at base): tests/test_a.py::test_x[<'a'>]\nverdict: FAIL (111111111111..222222222222, 1m01s); claimed GO: OVERTURNED\n"
        );
    }
}
