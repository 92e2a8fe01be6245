//! What the next attempt is told about the last one: the gate's verdict and reasons, the failing steps with
//! the tail of their logs, the bite check's outcome, and how the run stopped. `vouch run --prior-findings
//! FILE` adds this text to the task the model reads.

use std::fmt::Write as _;

use crate::agent::RunReport;
use crate::gate::report::limits::clip_lines;

/// Lines of a failing step's log the findings keep.
const LOG_LINES: usize = 20;

/// The findings of attempt `n` from its report.
pub fn of_report(n: u32, report: &RunReport) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Attempt {n} ended {} (stop: {}).",
        report.status.name(),
        report.stop_reason.name()
    );
    if let Some(summary) = &report.summary {
        let _ = writeln!(s, "Its summary: {summary}");
    }
    if let Some(gate) = &report.gate {
        let _ = writeln!(s, "\nThe gate's verdict: {}.", gate.verdict.name());
        for reason in &gate.reasons {
            let _ = writeln!(s, "- {reason}");
        }
        for step in gate.steps.iter().filter(|st| st.status.is_bad()) {
            let _ = writeln!(
                s,
                "\nStep `{}` {} (`{}`{}):",
                step.name,
                step.status.name(),
                step.command,
                step.exit_code
                    .map(|c| format!(", exit {c}"))
                    .unwrap_or_default()
            );
            let tail = clip_lines(&last_lines(&step.log_tail, LOG_LINES), 200, LOG_LINES);
            if !tail.trim().is_empty() {
                let _ = writeln!(s, "```\n{}\n```", tail.trim_end());
            }
        }
        let _ = writeln!(s, "\nThe bite check: {}.", gate.bite.status.name());
        for reason in &gate.bite.reasons {
            let _ = writeln!(s, "- {reason}");
        }
    }
    if let Some(e) = &report.error {
        let _ = writeln!(s, "\nError: {e}");
    }
    s
}

fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_findings_name_the_status_and_the_summary_without_a_gate() {
        let report: RunReport = serde_json::from_value(serde_json::json!({
            "task": "t", "title": "T", "status": "no-go", "stop_reason": "submitted",
            "claimed": "NO-GO", "summary": "calc.py is missing", "gate": null, "branch": "vouch/t",
            "base": "abc", "commit": null, "workspace": "w", "turns": 1, "max_turns": 10,
            "tokens": {"prompt": 1, "cached": 0, "completion": 1}, "repairs": 0, "error": null,
            "duration_ms": 5
        }))
        .unwrap();
        let text = of_report(1, &report);
        assert!(
            text.starts_with("Attempt 1 ended no-go (stop: submitted)."),
            "{text}"
        );
        assert!(text.contains("Its summary: calc.py is missing"), "{text}");
        assert!(!text.contains("gate's verdict"), "{text}");
    }
}
