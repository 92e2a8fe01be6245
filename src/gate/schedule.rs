//! The order in which the profile's steps run at head: every tool is checked before anything runs, then the
//! steps go in profile order, except that a run of checks (format, vet, lint) goes side by side with the build
//! and test steps that follow it: checks only read the tree, and on a warm cache they overlap well. Code
//! generators and custom steps write to the tree, so they run alone.
//!
//! A test step is judged as soon as it finishes ([`test_step`](crate::gate::test_step)), and the first one
//! that runs to completion is followed by the bite check ([`bite`](crate::gate::bite)).

use std::path::Path;

use anyhow::Result;
use tokio_util::sync::CancellationToken;

use crate::error::VouchError;
use crate::gate::outcome::StepStatus;
use crate::gate::profile::{Step, StepKind};
use crate::gate::steps::{self, human, StepEnv, StepReport, StepRun};
use crate::gate::{checks, GateRun};
use crate::room::Room;

/// One round of the schedule: checks that run side by side with a chain of steps run one after another.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Round {
    pub checks: Vec<usize>,
    pub chain: Vec<usize>,
}

/// The rounds for steps of these kinds, by index: each leading run of checks with the build and test steps
/// after it; any other step alone.
pub(super) fn rounds(kinds: &[StepKind]) -> Vec<Round> {
    let n = kinds.len();
    let mut out = Vec::new();
    let mut i = 0;
    while i < n {
        let mut round = Round::default();
        while i < n && kinds[i].parallel() {
            round.checks.push(i);
            i += 1;
        }
        while i < n && matches!(kinds[i], StepKind::Build | StepKind::Test) {
            round.chain.push(i);
            i += 1;
        }
        if round.checks.is_empty() && round.chain.is_empty() {
            round.chain.push(i);
            i += 1;
        }
        out.push(round);
    }
    out
}

/// Checks every step's tool before anything runs: a missing required tool is an error; a missing optional
/// one gives its step's skip note. One entry per step, None for steps that will run (or do not apply here).
pub(super) async fn check_tools(
    steps: &[Step],
    env: &StepEnv,
    room: &Path,
    cancel: &CancellationToken,
) -> Result<Vec<Option<String>>> {
    let mut skip_notes = Vec::with_capacity(steps.len());
    for step in steps {
        if steps::not_applicable(step, room).is_some() {
            skip_notes.push(None);
            continue;
        }
        match steps::missing_tool(step, env, cancel).await {
            None => skip_notes.push(None),
            Some(why) if step.required => {
                return Err(VouchError::infra_hint(
                    format!("step `{}` cannot run: {why}", step.name),
                    steps::install_hint(step, &why, env).unwrap_or_else(|| {
                        "install the tool, or mark the step `required = false` in the profile"
                            .into()
                    }),
                )
                .into())
            }
            Some(why) => {
                let hint = steps::install_hint(step, &why, env)
                    .map(|h| format!(" (to run it: {h})"))
                    .unwrap_or_default();
                skip_notes.push(Some(format!("skipped: {why}{hint}")));
            }
        }
    }
    Ok(skip_notes)
}

impl GateRun<'_> {
    /// Runs every step of the profile in `room` by [`rounds`], judging test steps and running the bite check
    /// on the way; the step reports in profile order. `skip_notes` comes from [`check_tools`].
    pub(super) async fn run_steps(
        &mut self,
        env: &StepEnv,
        room: &Room,
        skip_notes: &[Option<String>],
    ) -> Result<Vec<StepReport>> {
        let (prep, ui, cancel) = (self.prep, self.ui, self.cancel);
        let all = &prep.profile.steps;
        let kinds: Vec<StepKind> = all.iter().map(|s| s.kind).collect();
        let mut slots: Vec<Option<StepReport>> = vec![None; all.len()];
        // A step's console line shows its final status: a failing check or build compared at base gets its
        // line from `judge_checks`, a test step once it is judged.
        let compare = !self.opts.strict_baseline && !self.opts.no_baseline;
        let run_one = |idx: usize| {
            let step = &all[idx];
            let skip = skip_notes[idx].clone();
            async move {
                if let Some(note) = skip {
                    let run = steps::run_step_skipped(step, env, note);
                    ui.line(&step_line(&run));
                    return Ok::<_, anyhow::Error>(run);
                }
                let pb = ui.start(&format!("{} ({:?})", step.name, step.kind).to_lowercase());
                let mut run = steps::run_step(step, env, room, &prep.objects, cancel).await?;
                checks::digest(step, &mut run.report, env);
                let status = run.report.status;
                let later = (step.kind == StepKind::Test && status != StepStatus::Skipped)
                    || (compare && checks::compared_at_base(step.kind, status));
                if later {
                    pb.finish_and_clear();
                } else if status == StepStatus::Skipped {
                    pb.finish_and_clear();
                    ui.line(&step_line(&run));
                } else {
                    ui.done(pb, &step_line(&run));
                }
                Ok(run)
            }
        };
        for round in rounds(&kinds) {
            // A check that reuses the build's output starts once the round's build step is done (or the
            // chain has ended, whichever way: the sender is dropped with it).
            let builds = round.chain.iter().any(|&i| all[i].kind == StepKind::Build);
            let (built, built_rx) = tokio::sync::watch::channel(false);
            let checks_fut = futures::future::join_all(round.checks.iter().map(|&idx| {
                let mut built_rx = built_rx.clone();
                let waits = builds && all[idx].reuse_build.is_some();
                async move {
                    if waits {
                        let _ = built_rx.wait_for(|done| *done).await;
                    }
                    run_one(idx).await
                }
            }));
            let chain_fut = async {
                let built = built;
                let mut out = Vec::new();
                for &idx in &round.chain {
                    let step = &all[idx];
                    // With layers, a lint that reuses the build waits for the tests' build too: it writes a
                    // layer of its own, which the tests' run must not start on while it is being written.
                    if step.kind == StepKind::Test && skip_notes[idx].is_none() {
                        steps::build_tests(step, env, cancel).await?;
                        if env.views.is_some() {
                            built.send_replace(true);
                        }
                    }
                    let mut run = run_one(idx).await?;
                    if step.kind == StepKind::Build && env.views.is_none() {
                        built.send_replace(true);
                    }
                    if cancel.is_cancelled() {
                        return Err(VouchError::Interrupted.into());
                    }
                    if step.kind == StepKind::Test && run.report.status != StepStatus::Skipped {
                        self.judge_tests(step, env, &mut run).await?;
                        if cancel.is_cancelled() {
                            return Err(VouchError::Interrupted.into());
                        }
                        ui.line(&step_line(&run));
                        let judged =
                            !matches!(run.report.status, StepStatus::Timeout | StepStatus::Error);
                        if judged && self.bite.is_none() {
                            let took = run.outcome.as_ref().map(|o| o.duration).unwrap_or_default();
                            self.run_bite(step, env, &run.results, took).await?;
                        }
                    }
                    out.push((idx, run.report));
                }
                Ok::<_, anyhow::Error>(out)
            };
            let (check_runs, chain_runs) = futures::future::join(checks_fut, chain_fut).await;
            if cancel.is_cancelled() {
                return Err(VouchError::Interrupted.into());
            }
            for (&idx, run) in round.checks.iter().zip(check_runs) {
                slots[idx] = Some(run?.report);
            }
            for (idx, report) in chain_runs? {
                slots[idx] = Some(report);
            }
        }
        Ok(slots.into_iter().flatten().collect())
    }
}

/// A step's console line: status, name, time, test counts and note.
pub(super) fn step_line(run: &StepRun) -> String {
    report_line(&run.report)
}

/// The console line of a step's run in the base room: the step named `NAME at base`, so that a long note cut
/// at the terminal's width does not make it read as the step's own status.
pub(super) fn base_step_line(run: &StepRun) -> String {
    let mut report = run.report.clone();
    report.name = format!("{} at base", report.name);
    report_line(&report)
}

/// The console line of a step's report (see [`step_line`]).
pub(super) fn report_line(r: &StepReport) -> String {
    let mut line = format!(
        "  {:<8} {:<16} {:>7}",
        r.status.name(),
        r.name,
        human(std::time::Duration::from_millis(r.duration_ms))
    );
    if let Some(t) = &r.tests {
        line.push_str(&format!(
            "  {} passed, {} failed, {} skipped",
            t.passed, t.failed, t.skipped
        ));
    }
    if let Some(note) = &r.note {
        line.push_str(&format!("  ({note})"));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use StepKind::*;

    fn round(checks: &[usize], chain: &[usize]) -> Round {
        Round {
            checks: checks.to_vec(),
            chain: chain.to_vec(),
        }
    }

    #[test]
    fn checks_run_beside_the_build_and_test_chain_after_them() {
        assert_eq!(
            rounds(&[Format, Lint, Build, Test]),
            vec![round(&[0, 1], &[2, 3])]
        );
    }

    #[test]
    fn code_generators_and_custom_steps_run_alone_in_profile_order() {
        assert_eq!(
            rounds(&[Format, Codegen, Custom, Vet, Test, Lint]),
            vec![
                round(&[0], &[]),
                round(&[], &[1]),
                round(&[], &[2]),
                round(&[3], &[4]),
                round(&[5], &[]),
            ]
        );
        assert_eq!(
            rounds(&[Build, Format]),
            vec![round(&[], &[0]), round(&[1], &[])]
        );
        assert_eq!(rounds(&[]), vec![]);
    }

    #[test]
    fn a_step_line_shows_counts_and_note() {
        let run = StepRun {
            report: StepReport {
                name: "pytest".into(),
                kind: Test,
                status: StepStatus::Pass,
                duration_ms: 1500,
                command: "pytest".into(),
                exit_code: Some(0),
                log_tail: String::new(),
                log: None,
                note: Some("1 test passed when rerun alone (flaky, not blamed)".into()),
                tests: Some(steps::TestCounts {
                    passed: 3,
                    failed: 1,
                    skipped: 0,
                }),
                drift: Vec::new(),
            },
            outcome: None,
            results: Vec::new(),
        };
        assert_eq!(
            step_line(&run),
            "  pass     pytest              1.5s  3 passed, 1 failed, 0 skipped  (1 test passed when rerun alone (flaky, not blamed))"
        );
    }
}
