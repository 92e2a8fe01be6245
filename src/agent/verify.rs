//! What a submission leads to. NO-GO ends the run. GO commits the worktree on the branch (`Agent-Verdict:
//! GO` trailer, `Signed-off-by:` when asked) and runs the gate on `base..branch`; a failing gate goes back to
//! the model as one user message ([`repair_message`]: failing steps, reasons, bite outcomes, log tails) once
//! per repair cycle, and then it is gated again.

use anyhow::{Context as _, Result};

use super::report::{Status, StopReason};
use super::transcript::{Event, NudgeKind};
use super::{short, Agent, Flow};
use crate::gate::outcome::{BiteStatus, Claim, Rule, Verdict};
use crate::gate::report::Report;
use crate::gate::steps::StepReport;
use crate::tools::{cap, Submission};
use crate::workspace::signature;

/// Characters of a gate failure sent back to the model.
const REPAIR_CAP: usize = 8000;
/// Characters of output per failing step in the repair message.
const REPAIR_STEP_CAP: usize = 3000;

/// What a submit GO led to.
enum Gated {
    Pass,
    /// The gate failed: the message for the model.
    Fail(String),
    /// The gate could not judge (error verdict or infrastructure).
    Error(String),
}

impl Agent<'_> {
    /// After the turn's calls: where `submit` leads.
    pub(super) async fn settle(&mut self, submission: Submission) -> Flow {
        let Submission { claim, summary } = submission;
        self.claimed = Some(claim);
        self.summary = Some(summary.clone());
        if claim == Claim::NoGo {
            return Flow::Stop(Status::NoGo, StopReason::Submitted);
        }
        match self.verify(&summary).await {
            Gated::Pass => Flow::Stop(Status::Verified, StopReason::Submitted),
            Gated::Error(_) if self.cancel.is_cancelled() => {
                Flow::Stop(self.unfinished(), StopReason::Cancelled)
            }
            Gated::Error(_) if self.limit.is_cancelled() => {
                Flow::Stop(self.unfinished(), StopReason::WallTime)
            }
            Gated::Error(e) => {
                self.error = Some(e);
                Flow::Stop(Status::Error, StopReason::Submitted)
            }
            Gated::Fail(message) => {
                if self.repairs >= self.rails.limits().repair_cycles {
                    return Flow::Stop(Status::Rejected, StopReason::Submitted);
                }
                self.repairs += 1;
                self.rails.repair();
                self.nudge(NudgeKind::Repair, &message);
                Flow::Repair
            }
        }
    }

    /// Commits the worktree and gates `base..branch`.
    async fn verify(&mut self, summary: &str) -> Gated {
        match self.commit_and_gate(summary).await {
            Ok(g) => g,
            Err(e) => {
                let message = format!("{e:#}");
                self.transcript.event(&Event::GateError {
                    error: message.clone(),
                });
                Gated::Error(message)
            }
        }
    }

    /// The project's formatter over the run's files, before the commit ([`super::format`]). A formatter
    /// that cannot run changes nothing: the gate's format step judges the files as they are.
    async fn format(&mut self) {
        let Some(formatter) = &self.formatter else {
            return;
        };
        let changed = self.workspace.changed();
        match formatter.apply(&changed.paths, &self.limit).await {
            Ok(done) => {
                if !done.files.is_empty() {
                    self.ui.line(&format!(
                        "  formatted {} ({})",
                        done.files.join(", "),
                        done.ran.join(", ")
                    ));
                }
                if !done.files.is_empty() || !done.restored.is_empty() {
                    self.transcript.event(&Event::Formatted {
                        files: done.files,
                        steps: done.ran,
                        restored: done.restored,
                    });
                }
            }
            Err(e) => tracing::warn!("formatting before the commit: {e:#}"),
        }
    }

    async fn commit_and_gate(&mut self, summary: &str) -> Result<Gated> {
        let author = signature(&self.wt.repo, self.cfg.author.as_deref())?;
        let mut message = format!("{}\n\n", self.cfg.task.title);
        if !summary.trim().is_empty() {
            message.push_str(summary.trim());
            message.push_str("\n\n");
        }
        message.push_str("Agent-Verdict: GO\n");
        if self.cfg.signoff {
            message.push_str(&format!(
                "Signed-off-by: {} <{}>\n",
                String::from_utf8_lossy(author.name_bytes()),
                String::from_utf8_lossy(author.email_bytes())
            ));
        }
        self.format().await;
        let Some(oid) = self
            .wt
            .commit(&message, &author, &self.workspace.changed())?
        else {
            self.transcript.event(&Event::Commit {
                commit: None,
                branch: None,
                note: Some("nothing changed".to_string()),
            });
            return Ok(Gated::Fail(
                "You submitted GO, but nothing in the repository differs from the base commit: there is no \
                 change to verify. Make the fix and add a test, then submit again."
                    .to_string(),
            ));
        };
        self.commit = Some(oid.to_string());
        self.transcript.event(&Event::Commit {
            commit: Some(oid.to_string()),
            branch: Some(self.wt.branch.clone()),
            note: None,
        });
        self.ui.line(&format!(
            "  committed {} on {}; gating {}..{}",
            short(&oid.to_string()),
            self.wt.branch,
            short(&self.wt.base.to_string()),
            short(&oid.to_string())
        ));
        let mut opts = self.cfg.gate.clone();
        opts.repo = self.wt.repo.clone();
        opts.base = Some(self.wt.base.to_string());
        opts.head = oid.to_string();
        opts.profile = self.cfg.profile.clone();
        opts.claimed = Some(Claim::Go);
        opts.allow.extend(self.cfg.task.scope.iter().cloned());
        opts.cache = self.cfg.cache.clone();
        opts.workspaces = self.cfg.workspaces.clone();
        // The gate stops with the run's wall time, like any tool.
        let report = crate::gate::run(&opts, self.ui, &self.limit)
            .await
            .context("run the gate")?;
        self.transcript.event(&Event::Gate {
            commit: oid.to_string(),
            report: Box::new(report.clone()),
        });
        self.ui.line(&format!(
            "  gate: {}{}",
            report.verdict.name(),
            if report.reasons.is_empty() {
                String::new()
            } else {
                format!(" ({})", report.reasons.join("; "))
            }
        ));
        let gated = match report.verdict {
            Verdict::Pass => Gated::Pass,
            Verdict::Error => Gated::Error(format!(
                "the gate could not judge the change: {}",
                report.reasons.join("; ")
            )),
            Verdict::Fail => Gated::Fail(repair_message(&report)),
        };
        self.gate = Some(report);
        Ok(gated)
    }
}

/// The one message that sends a gate failure back to the model.
pub fn repair_message(report: &Report) -> String {
    let failing: Vec<&StepReport> = report.steps.iter().filter(|s| s.status.is_bad()).collect();
    let mut text = String::from(
        "The gate rejected your change. It reran every check in a clean checkout of your commit. Fix the \
         problems below (the code or the test), run the tests, then submit again.\n",
    );
    if !failing.is_empty() {
        let names: Vec<&str> = failing.iter().map(|s| s.name.as_str()).collect();
        text.push_str(&format!("\nFailing steps: {}\n", names.join(", ")));
    }
    if !report.reasons.is_empty() {
        text.push_str("\nReasons:\n");
        for r in &report.reasons {
            text.push_str(&format!("- {r}\n"));
        }
    }
    let bite = &report.bite;
    let bite_failed = report.findings.iter().any(|f| {
        matches!(
            f.rule,
            Rule::NoBite | Rule::RemovedTests | Rule::WeakenedTests
        )
    });
    if bite_failed || (bite.status != BiteStatus::NotRun && !bite.reasons.is_empty()) {
        text.push_str(&format!(
            "\nBite check: {}. The gate put back the base version of your production files, \
             kept your tests, and ran the tests you changed: a test that still passes there (inert) cannot \
             catch the bug. Make your new test fail on the old code and pass on the fixed code.\n",
            bite.status.name()
        ));
        for t in &bite.tests {
            text.push_str(&format!("- {}: {}\n", t.id, t.outcome.name()));
        }
    }
    for step in failing {
        let tail = step.log_tail.trim();
        if !tail.is_empty() {
            text.push_str(&format!(
                "\nOutput of {} (`{}`), last part:\n{}\n",
                step.name,
                step.command,
                cap(tail, REPAIR_STEP_CAP)
            ));
        }
    }
    if text.chars().count() > REPAIR_CAP {
        text = text.chars().take(REPAIR_CAP).collect();
        text.push_str("\n[... cut ...]\n");
    }
    text
}
