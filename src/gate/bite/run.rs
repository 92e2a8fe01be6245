//! Running the bite check in the bite room: the plan, the changed tests selected by id and run without the
//! production change, or, for a test step without per-test results, the whole test command (which must then
//! pass at base for its failure to prove anything).
//!
//! Runs once per gate run, after the first test step that ran to completion; it fills the gate's bite report.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use anyhow::Result;

use crate::error::VouchError;
use crate::gate::bite::{self, BiteReport, BiteTest, Plan};
use crate::gate::outcome::{BiteStatus, TestOutcome};
use crate::gate::places::{open_bite_room, open_room, places, step_env};
use crate::gate::profile::{BitePolicy, Step};
use crate::gate::results::{Runner, TestResult};
use crate::gate::steps::{self, human, plural};
use crate::gate::testmap;
use crate::gate::GateRun;

impl GateRun<'_> {
    /// The effective bite policy: the profile's, with command-line overrides.
    pub(in crate::gate) fn bite_policy(&self) -> BitePolicy {
        let mut p = self.prep.profile.bite.clone();
        if let Some(r) = self.opts.bite_require {
            p.require = r;
        }
        if let Some(b) = self.opts.bite_build_failure {
            p.build_failure = b;
        }
        p
    }

    /// The bite check (see [`bite`]) after test step `step` ran at head: fills `self.bite`.
    pub(in crate::gate) async fn run_bite(
        &mut self,
        step: &Step,
        head_results: &[TestResult],
        head_duration: Duration,
    ) -> Result<()> {
        let policy = self.bite_policy();
        let mut report = BiteReport::new(&policy);
        let started = Instant::now();
        if self.opts.no_bite || !policy.enabled {
            report.status = BiteStatus::Skipped;
            report.reasons.push("the bite check was turned off".into());
            self.bite = Some(report);
            return Ok(());
        }
        let runner = step.runner();
        let input = bite::Input {
            prep: self.prep,
            runner,
            argv: step.raw_argv(),
            head_results,
        };
        let plan = tokio::task::block_in_place(|| bite::plan(&input, &mut report))?;
        let w = testmap::weakened(&plan.test_changes);
        report.removed_tests = w.removed;
        report.weakened_tests = w.weakened;
        if report.production_files.is_empty() {
            report
                .reasons
                .push("test-only change: there is no production change to revert".into());
        } else if report.test_files.is_empty() {
            report
                .reasons
                .push("no test changed: nothing to check without the production change (the test-presence rule decides)".into());
        } else if runner == Runner::Generic {
            self.bite_whole_run(step, &policy, head_duration, &plan, &mut report)
                .await?;
        } else {
            // The tree at head: which tests import a changed helper, and pytest's settings.
            let touched = {
                let repo = crate::git::open_objects(&self.prep.objects)?;
                let tree = testmap::GitTree::new(&repo, &self.prep.head.sha)?;
                testmap::touched_in(
                    runner,
                    plan.go_module.as_deref(),
                    &plan.test_changes,
                    head_results,
                    &tree,
                )
            };
            report.warnings.extend(touched.notes);
            let (run_ids, mut tests) = bite::at_head(&touched.ids, head_results);
            if !run_ids.is_empty() {
                let limit = bite::timeout(&policy, step.timeout(), head_duration);
                let selected = self
                    .bite_selected(step, &plan, &run_ids, limit, started)
                    .await?;
                tests.extend(selected);
            }
            tests.sort_by(|a, b| a.id.cmp(&b.id));
            let (status, reasons, warnings) =
                bite::decide_touched(&tests, &policy, &touched.changed);
            report.status = status;
            report.reasons.extend(reasons);
            report.warnings.extend(warnings);
            report.tests = tests;
        }
        report.duration_ms = ms(started);
        self.ui.line(&format!(
            "  {:<8} {:<16} {:>7}  {}",
            report.status.name(),
            "bite",
            human(started.elapsed()),
            report.reasons.join("; ")
        ));
        self.bite = Some(report);
        Ok(())
    }

    /// Runs the selected tests `run_ids` in the reverted tree, command by command: their outcomes, with
    /// `absent` for ids no command covered. `started` is when the bite check began (for its console line).
    async fn bite_selected(
        &mut self,
        step: &Step,
        plan: &Plan,
        run_ids: &[String],
        limit: Duration,
        started: Instant,
    ) -> Result<Vec<BiteTest>> {
        let pb = self.ui.start(&format!(
            "bite check: {} without the production change",
            plural(run_ids.len(), "changed test")
        ));
        let (room, places) = open_bite_room(self.opts, self.prep, plan).await?;
        let env = step_env(self.prep, &room, &places);
        let mut tests = Vec::new();
        let mut covered = BTreeSet::new();
        for (i, (cmd, ids)) in bite::commands(step.runner(), &step.raw_argv(), run_ids)
            .into_iter()
            .enumerate()
        {
            let (results, outcomes) =
                steps::run_selection(step, &env, &[cmd], &format!("bite{i}-"), limit, self.cancel)
                    .await?;
            if self.cancel.is_cancelled() {
                return Err(VouchError::Interrupted.into());
            }
            let outcome = outcomes.first().cloned().unwrap_or_default();
            covered.extend(ids.iter().cloned());
            tests.extend(bite::outcomes(
                &ids,
                &results,
                outcome.exit_code,
                outcome.timed_out,
            ));
        }
        for id in run_ids.iter().filter(|id| !covered.contains(*id)) {
            tests.push(BiteTest {
                id: id.clone(),
                outcome: TestOutcome::Absent,
            });
        }
        drop(room);
        self.ui.done(
            pb,
            &format!(
                "  {:<8} {:<16} {:>7}",
                "ran",
                "bite check",
                human(started.elapsed())
            ),
        );
        Ok(tests)
    }

    /// The bite check for a test step without per-test results: the whole test command runs in the reverted
    /// tree and must fail there, while it passes at base (else a failure proves nothing).
    async fn bite_whole_run(
        &mut self,
        step: &Step,
        policy: &BitePolicy,
        head_duration: Duration,
        plan: &Plan,
        report: &mut BiteReport,
    ) -> Result<()> {
        let id = format!("{} (whole run)", step.name);
        if self.head_test_failed {
            report.reasons.push(format!(
                "step `{}` fails at head; a whole-run bite check proves nothing",
                step.name
            ));
            return Ok(());
        }
        report.warnings.push(format!(
            "step `{}` has no per-test results (runner generic): the whole test command was run without the production change",
            step.name
        ));
        let limit = bite::timeout(policy, step.timeout(), head_duration);
        let pb = self
            .ui
            .start("bite check: the whole test command without the production change");
        let (room, bite_places) = open_bite_room(self.opts, self.prep, plan).await?;
        let env = step_env(self.prep, &room, &bite_places);
        let (_, outcomes) = steps::run_selection(
            step,
            &env,
            &[step.raw_argv()],
            "bite-whole-",
            limit,
            self.cancel,
        )
        .await?;
        drop(room);
        if self.cancel.is_cancelled() {
            return Err(VouchError::Interrupted.into());
        }
        let reverted = outcomes.into_iter().next().unwrap_or_default();
        let outcome = if reverted.timed_out {
            TestOutcome::Timeout
        } else if reverted.success() {
            TestOutcome::Inert
        } else {
            // It fails without the change: that counts only if the same command passes at base.
            let base_places = places(self.opts, self.prep, "base")?;
            let base_room =
                open_room(self.prep, &self.prep.base.sha, base_places.room.clone()).await?;
            let env = step_env(self.prep, &base_room, &base_places);
            let (_, at_base) = steps::run_selection(
                step,
                &env,
                &[step.raw_argv()],
                "base-whole-",
                limit,
                self.cancel,
            )
            .await?;
            if at_base.first().is_some_and(|o| o.success()) {
                TestOutcome::Bites
            } else {
                self.ui.done(pb, "  ran      bite check (whole run)");
                report.reasons.push(format!(
                    "step `{}` fails at base as well, so its failure without the production change proves nothing",
                    step.name
                ));
                return Ok(());
            }
        };
        self.ui.done(pb, "  ran      bite check (whole run)");
        let tests = vec![BiteTest { id, outcome }];
        let (status, reasons, warnings) = bite::decide(&tests, policy);
        report.status = status;
        report.reasons.extend(reasons);
        report.warnings.extend(warnings);
        report.tests = tests;
        Ok(())
    }
}

/// Elapsed milliseconds since `t`.
fn ms(t: Instant) -> u64 {
    t.elapsed().as_millis() as u64
}
