//! The run's report: `report.json` (stable names), `report.md`, and the console summary. It keeps the
//! model's claim and the gate's verdict side by side: the claim is what the model said, the status is what
//! the gate proved.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::error::{EXIT_FAIL, EXIT_INFRA, EXIT_INTERRUPTED, EXIT_PASS};
use crate::gate::outcome::Claim;
use crate::gate::report::Report;

/// How a run ended, as decided by the gate (not the model).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// The model submitted GO and the gate passed the change.
    Verified,
    /// The model submitted GO and the gate still failed the change after the repair cycles.
    Rejected,
    /// The model submitted NO-GO.
    NoGo,
    /// A budget or a rail stopped the run before a verdict.
    Incomplete,
    /// The model (or the gate's infrastructure) failed.
    Error,
}

impl Status {
    pub fn name(self) -> &'static str {
        match self {
            Status::Verified => "verified",
            Status::Rejected => "rejected",
            Status::NoGo => "no-go",
            Status::Incomplete => "incomplete",
            Status::Error => "error",
        }
    }
}

/// Why the loop stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StopReason {
    Submitted,
    MaxTurns,
    WallTime,
    Tokens,
    /// No successful edit for the stall limit, then none in the forcing phase either.
    Stalled,
    /// The same call (name and arguments) again after the nudge.
    RepeatedCall,
    /// Replies without any tool call, again after the nudge.
    NoToolCalls,
    /// The same turns (calls and results) in a cycle of one to three turns, again after the nudge.
    Cycle,
    ModelError,
    /// The server asked to retry later than the wall time left.
    RetryAfter,
    /// A tool failed in a way no call can fix (infrastructure).
    ToolError,
    Cancelled,
}

impl StopReason {
    pub fn name(self) -> &'static str {
        match self {
            StopReason::Submitted => "submitted",
            StopReason::MaxTurns => "max-turns",
            StopReason::WallTime => "wall-time",
            StopReason::Tokens => "tokens",
            StopReason::Stalled => "stalled",
            StopReason::RepeatedCall => "repeated-call",
            StopReason::NoToolCalls => "no-tool-calls",
            StopReason::Cycle => "cycle",
            StopReason::ModelError => "model-error",
            StopReason::RetryAfter => "retry-after",
            StopReason::ToolError => "tool-error",
            StopReason::Cancelled => "cancelled",
        }
    }
}

/// Tokens over the whole run, as the server counted them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tokens {
    pub prompt: u64,
    /// The part of `prompt` the server reused from its cache.
    pub cached: u64,
    pub completion: u64,
}

/// `report.json`: one shape whether the run was resumed or not.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunReport {
    pub task: String,
    pub title: String,
    /// The task's text as the model got it (the pull request quotes it).
    #[serde(default)]
    pub task_text: String,
    /// The `model` the requests named (the pull request says which model made the change).
    #[serde(default)]
    pub model: String,
    pub status: Status,
    pub stop_reason: StopReason,
    /// What the model claimed with `submit`, if it did.
    pub claimed: Option<Claim>,
    /// The model's summary from its last `submit`.
    pub summary: Option<String>,
    /// The last gate report (as `vouch gate --json` writes it), or null when the gate did not run.
    pub gate: Option<Report>,
    pub branch: String,
    /// Full sha of the base commit.
    pub base: String,
    /// Full sha of the branch's commit, when one was made.
    pub commit: Option<String>,
    pub workspace: String,
    /// Where the transcript, the reports and the logs are (outside the worktree).
    #[serde(default)]
    pub records: String,
    pub turns: u32,
    pub max_turns: u32,
    pub tokens: Tokens,
    /// Gate failures sent back to the model for repair.
    pub repairs: u32,
    /// The model or infrastructure error, for status `error`.
    pub error: Option<String>,
    pub duration_ms: u64,
}

impl RunReport {
    /// 0 verified; 1 rejected, no-go, incomplete; 3 error; 130 cancelled.
    pub fn exit_code(&self) -> i32 {
        match (self.status, self.stop_reason) {
            (_, StopReason::Cancelled) => EXIT_INTERRUPTED,
            (Status::Verified, _) => EXIT_PASS,
            (Status::Error, _) => EXIT_INFRA,
            _ => EXIT_FAIL,
        }
    }

    fn claim_word(&self) -> &'static str {
        match self.claimed {
            Some(Claim::Go) => "GO",
            Some(Claim::NoGo) => "NO-GO",
            None => "none",
        }
    }

    fn gate_word(&self) -> &'static str {
        self.gate.as_ref().map_or("not run", |g| g.verdict.name())
    }

    /// The last lines on the console: the claim and the verdict side by side.
    pub fn console_summary(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "vouch run {}: {} (stop: {}; claimed: {}; gate: {}) on branch {}",
            self.task,
            self.status.name(),
            self.stop_reason.name(),
            self.claim_word(),
            self.gate_word(),
            self.branch
        );
        let _ = writeln!(
            s,
            "  {} turns, {} repairs, tokens: {} prompt ({} cached), {} completion",
            self.turns,
            self.repairs,
            self.tokens.prompt,
            self.tokens.cached,
            self.tokens.completion
        );
        if let Some(e) = &self.error {
            let _ = writeln!(s, "  error: {e}");
        }
        let _ = writeln!(s, "  records: {}/", self.records);
        s
    }

    pub fn markdown(&self) -> String {
        let mut s = format!("# {}\n\n", self.title);
        let _ = writeln!(s, "| | |\n|---|---|");
        let _ = writeln!(s, "| status | **{}** |", self.status.name());
        let _ = writeln!(s, "| stop reason | {} |", self.stop_reason.name());
        let _ = writeln!(s, "| claimed | {} |", self.claim_word());
        let _ = writeln!(s, "| gate | {} |", self.gate_word());
        let _ = writeln!(s, "| branch | `{}` |", self.branch);
        let _ = writeln!(s, "| base | `{}` |", self.base);
        if let Some(c) = &self.commit {
            let _ = writeln!(s, "| commit | `{c}` |");
        }
        let _ = writeln!(s, "| turns | {} of {} |", self.turns, self.max_turns);
        let _ = writeln!(s, "| repairs | {} |", self.repairs);
        let _ = writeln!(
            s,
            "| tokens | {} prompt ({} cached), {} completion |",
            self.tokens.prompt, self.tokens.cached, self.tokens.completion
        );
        if let Some(summary) = &self.summary {
            let _ = write!(s, "\n## The model's summary\n\n{summary}\n");
        }
        let reasons = self.gate.as_ref().map_or(&[][..], |g| &g.reasons[..]);
        if !reasons.is_empty() {
            s.push_str("\n## Why the gate failed\n\n");
            for r in reasons {
                let _ = writeln!(s, "- {r}");
            }
        }
        if let Some(e) = &self.error {
            let _ = write!(s, "\n## Error\n\n{e}\n");
        }
        s
    }
}
