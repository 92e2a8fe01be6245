//! The report's console summary, printed after the per-step lines: what was not blamed, notes, the reasons
//! the change fails, and the verdict line.

use std::fmt::Write as _;

use crate::gate::outcome::{ClaimOutcome, Verdict};
use crate::gate::report::Report;
use crate::gate::steps::human;

impl Report {
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
