//! Running the bite check in the bite room: the plan, the changed tests selected by id and run without the
//! production change, or, for a test step without per-test results, the whole test command (which must then
//! pass at base for its failure to prove anything).
//!
//! Each selection is built first and then run, with a timeout each: the build the build step's, the tests the
//! bite timeout. A slow build is then never mistaken for tests that prove nothing: a timeout in either phase
//! is `timeout`, and a check that only timed out is `inconclusive`. Tests that only fail to compile without
//! the change are run again against head with the change's functions stubbed ([`stub`](super::stub)), and a
//! biting change is checked hunk by hunk ([`hunks`](super::hunks)).
//!
//! Runs once per gate run, after the first test step that ran to completion; it fills the gate's bite report.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use anyhow::Result;

use crate::error::VouchError;
use crate::gate::baseline;
use crate::gate::bite::plan::Overlay;
use crate::gate::bite::{self, cache, BiteReport, BiteTest, Plan};
use crate::gate::cargo::{self, Layout};
use crate::gate::layered::Phase;
use crate::gate::outcome::{BiteMethod, BiteStatus, TestOutcome};
use crate::gate::places::open_overlay_room_at;
use crate::gate::profile::{BitePolicy, Step, StepKind};
use crate::gate::results::{Runner, TestResult};
use crate::gate::steps::{self, human, plural, StepEnv};
use crate::gate::testmap::{self, TestChange, Touched};
use crate::gate::GateRun;

/// The timeouts of one selection in a tree: its build, then its tests.
#[derive(Clone, Copy, Debug)]
pub(super) struct Limits {
    pub build: Duration,
    pub tests: Duration,
}

/// What running selections in one tree gave: the outcomes, and which phase timed out (for the hint).
#[derive(Debug, Default)]
pub(super) struct TreeRun {
    pub tests: Vec<BiteTest>,
    pub build_timed_out: bool,
    pub tests_timed_out: bool,
}

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
        if let Some(h) = self.opts.bite_hunks {
            p.hunks = h;
        }
        p
    }

    /// The bite check (see [`bite`]) after test step `step` ran at head in `head_env`: fills `self.bite`.
    pub(in crate::gate) async fn run_bite(
        &mut self,
        step: &Step,
        head_env: &StepEnv,
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
        let key = self.bite_cache_key(&policy, head_results);
        if !(self.opts.refresh_baseline || self.opts.fresh_rooms) {
            if let Some(cached) = cache::load(&self.opts.cache, &key) {
                self.ui.line(&format!(
                    "  {:<8} {:<16} {:>7}  {} (cached: this change was checked before; --refresh-baseline checks again)",
                    cached.status.name(),
                    "bite",
                    human(Duration::from_millis(cached.duration_ms)),
                    cached.reasons.join("; ")
                ));
                self.bite = Some(cached);
                return Ok(());
            }
        }
        self.bite_uncached(
            step,
            head_env,
            head_results,
            head_duration,
            &policy,
            &mut report,
        )
        .await?;
        report.duration_ms = ms(started);
        self.ui.line(&format!(
            "  {:<8} {:<16} {:>7}  {}",
            report.status.name(),
            "bite",
            human(started.elapsed()),
            report.reasons.join("; ")
        ));
        if let Err(e) = cache::store(&self.opts.cache, &key, &report) {
            tracing::warn!("could not cache the bite check: {e}");
        }
        self.bite = Some(report);
        Ok(())
    }

    /// The cache key of this gate run's bite check (see [`cache`]).
    fn bite_cache_key(&self, policy: &BitePolicy, head_results: &[TestResult]) -> String {
        let prep = self.prep;
        let programs = baseline::programs(prep.profile.steps.iter());
        let tools = baseline::tool_fingerprint(&programs);
        cache::key(&cache::KeyParts {
            base: &prep.base.sha,
            head: &prep.head.sha,
            profile: &prep.profile,
            policy,
            tools: &tools,
            head_results,
        })
    }

    /// The bite check itself, into `report`.
    async fn bite_uncached(
        &mut self,
        step: &Step,
        head_env: &StepEnv,
        head_results: &[TestResult],
        head_duration: Duration,
        policy: &BitePolicy,
        report: &mut BiteReport,
    ) -> Result<()> {
        let started = Instant::now();
        let policy = policy.clone();
        let runner = step.runner();
        let input = bite::Input {
            prep: self.prep,
            runner,
            argv: step.raw_argv(),
            head_results,
        };
        let plan = tokio::task::block_in_place(|| bite::plan(&input, &mut *report))?;
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
            self.bite_whole_run(step, &policy, head_duration, &plan, &mut *report)
                .await?;
        } else {
            let layout = if runner == Runner::Cargo {
                self.cargo_layout(step, head_env, &mut *report).await
            } else {
                None
            };
            // The tree at head: which tests import a changed helper, and pytest's settings.
            let touched = {
                let repo = crate::git::open_objects(&self.prep.objects)?;
                let tree = testmap::GitTree::new(&repo, &self.prep.head.sha)?;
                touched_tests(
                    runner,
                    plan.go_module.as_deref(),
                    &plan.test_changes,
                    head_results,
                    layout.as_ref(),
                    &tree,
                )
            };
            report.warnings.extend(touched.notes);
            let (run_ids, mut tests) = bite::at_head(&touched.ids, head_results);
            let limits = Limits {
                build: self.build_timeout(step),
                tests: bite::timeout(&policy, step.timeout(), head_duration),
            };
            let mut timed_out = (false, false);
            if !run_ids.is_empty() {
                let pb = self.ui.start(&format!(
                    "bite check: {} without the production change",
                    plural(run_ids.len(), "changed test")
                ));
                let run = self
                    .run_in_tree(
                        step,
                        plan.overlay.clone(),
                        "bite",
                        &run_ids,
                        limits,
                        layout.as_ref(),
                    )
                    .await?;
                self.ui.done(
                    pb,
                    &format!(
                        "  {:<8} {:<16} {:>7}",
                        "ran",
                        "bite check",
                        human(started.elapsed())
                    ),
                );
                timed_out = (run.build_timed_out, run.tests_timed_out);
                let mut selected = run.tests;
                for t in &mut selected {
                    if matches!(t.outcome, TestOutcome::Bites | TestOutcome::BitesBuild) {
                        t.method = Some(BiteMethod::Revert);
                    }
                }
                self.stub_build_only(step, &mut selected, limits, layout.as_ref(), &mut *report)
                    .await?;
                tests.extend(selected);
            }
            tests.sort_by(|a, b| a.id.cmp(&b.id));
            let (status, reasons, warnings) =
                bite::decide_touched(&tests, &policy, &touched.changed);
            report.status = status;
            report.reasons.extend(reasons);
            if status == BiteStatus::Inconclusive {
                report.reasons.push(more_time_hint(step, limits, timed_out));
            }
            report.warnings.extend(warnings);
            report.tests = tests;
            if status == BiteStatus::Bites {
                let took = started.elapsed();
                self.check_hunks(
                    step,
                    &plan,
                    &run_ids,
                    limits,
                    layout.as_ref(),
                    took,
                    &mut *report,
                )
                .await?;
            }
        }
        Ok(())
    }

    /// The repository's cargo targets and their module trees at head, or None (with a warning) when
    /// `cargo metadata` cannot tell: test files are then mapped by their paths alone.
    async fn cargo_layout(
        &self,
        step: &Step,
        head_env: &StepEnv,
        report: &mut BiteReport,
    ) -> Option<Layout> {
        let targets = match cargo::read_targets(step, head_env, self.cancel).await {
            Ok(t) => t,
            Err(e) => {
                report.warnings.push(format!(
                    "cargo metadata: {e:#}; test files were mapped to targets by their paths"
                ));
                return None;
            }
        };
        let prep = self.prep;
        tokio::task::block_in_place(|| {
            let repo = crate::git::open_objects(&prep.objects).ok()?;
            let head = git2::Oid::from_str(&prep.head.sha).ok()?;
            Some(Layout::new(targets, &|p: &str| {
                crate::git::file_text(&repo, head, p)
            }))
        })
    }

    /// The build step's timeout (the profile's first build step), else the test step's own.
    pub(super) fn build_timeout(&self, step: &Step) -> Duration {
        self.prep
            .profile
            .steps
            .iter()
            .find(|s| s.kind == StepKind::Build)
            .map_or_else(|| step.timeout(), Step::timeout)
    }

    /// Runs the selected tests `run_ids` in the bite room holding base with `files` laid over it: each
    /// selection command built, then run. Ids no command covered are `absent`.
    pub(super) async fn run_in_tree(
        &mut self,
        step: &Step,
        files: Overlay,
        logs_name: &str,
        run_ids: &[String],
        limits: Limits,
        layout: Option<&Layout>,
    ) -> Result<TreeRun> {
        let places = self.roles.places(self.opts, self.prep, "bite", logs_name)?;
        let room = open_overlay_room_at(self.prep, files, places.room.clone()).await?;
        let env = self.roles.env(self.prep, &room, &places, "bite")?;
        let runner = step.runner();
        let mut out = TreeRun::default();
        let mut covered = BTreeSet::new();
        for (i, (cmd, ids)) in bite::commands(runner, &step.raw_argv(), run_ids, layout)
            .into_iter()
            .enumerate()
        {
            covered.extend(ids.iter().cloned());
            if let Some(build) = bite::select::build_command(runner, &cmd) {
                let (_, built) = self
                    .select_one(
                        step,
                        &env,
                        build,
                        &format!("{logs_name}{i}-build-"),
                        limits.build,
                        Phase::Build,
                    )
                    .await?;
                if built.timed_out {
                    out.build_timed_out = true;
                    out.tests.extend(
                        ids.iter()
                            .map(|id| BiteTest::new(id.clone(), TestOutcome::Timeout)),
                    );
                    continue;
                }
                if !built.success() {
                    out.tests.extend(
                        ids.iter()
                            .map(|id| BiteTest::new(id.clone(), TestOutcome::BitesBuild)),
                    );
                    continue;
                }
            }
            let (mut results, mut outcome) = self
                .select_one(
                    step,
                    &env,
                    cmd,
                    &format!("{logs_name}{i}-"),
                    limits.tests,
                    Phase::Run,
                )
                .await?;
            // Ids pytest no longer finds (they embed the time, say) make it run none of the selection: their
            // functions run whole with the others, and each instance is matched back to head's id in order
            // (an id that cannot be matched is absent).
            let missing = if runner == Runner::Pytest && results.is_empty() {
                let output = format!("{}\n{}", outcome.head, outcome.tail);
                bite::select::pytest_not_found(&output, env.inside_room(), &ids)
            } else {
                Vec::new()
            };
            if !missing.is_empty() {
                let rerun = bite::select::pytest_reselection(&ids, &missing);
                if let Some((again, _)) = bite::commands(runner, &step.raw_argv(), &rerun, layout)
                    .into_iter()
                    .next()
                {
                    let ran;
                    (ran, outcome) = self
                        .select_one(
                            step,
                            &env,
                            again,
                            &format!("{logs_name}{i}-found-"),
                            limits.tests,
                            Phase::Run,
                        )
                        .await?;
                    results = bite::select::pytest_renamed(&ids, &missing, ran);
                }
            }
            out.tests_timed_out |= outcome.timed_out;
            out.tests.extend(bite::outcomes(
                &ids,
                &results,
                outcome.exit_code,
                outcome.timed_out,
            ));
        }
        for id in run_ids.iter().filter(|id| !covered.contains(*id)) {
            out.tests
                .push(BiteTest::new(id.clone(), TestOutcome::Absent));
        }
        drop(room);
        Ok(out)
    }

    /// Runs one selection command in `env`: its results and outcome; Ctrl-C during it interrupts the gate.
    async fn select_one(
        &self,
        step: &Step,
        env: &StepEnv,
        cmd: Vec<String>,
        label: &str,
        timeout: Duration,
        phase: Phase,
    ) -> Result<(Vec<TestResult>, crate::process::Outcome)> {
        let (results, outcomes) =
            steps::run_selection(step, env, &[cmd], label, timeout, phase, self.cancel).await?;
        if self.cancel.is_cancelled() {
            return Err(VouchError::Interrupted.into());
        }
        Ok((results, outcomes.into_iter().next().unwrap_or_default()))
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
        let bite_places = self.roles.places(self.opts, self.prep, "bite", "bite")?;
        let room =
            open_overlay_room_at(self.prep, plan.overlay.clone(), bite_places.room.clone()).await?;
        let env = self.roles.env(self.prep, &room, &bite_places, "bite")?;
        let (_, reverted) = self
            .select_one(
                step,
                &env,
                step.raw_argv(),
                "bite-whole-",
                limit,
                Phase::Run,
            )
            .await?;
        drop(room);
        let outcome = if reverted.timed_out {
            TestOutcome::Timeout
        } else if reverted.success() {
            TestOutcome::Inert
        } else {
            // It fails without the change: that counts only if the same command passes at base.
            let base_places = self.roles.places(self.opts, self.prep, "base", "base")?;
            let base_room = self
                .roles
                .base_room(self.opts, self.prep, &base_places)
                .await?;
            let env = self
                .roles
                .env(self.prep, &base_room, &base_places, "base")?;
            let (_, at_base) = steps::run_selection(
                step,
                &env,
                &[step.raw_argv()],
                "base-whole-",
                limit,
                Phase::Run,
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
        let mut test = BiteTest::new(id, outcome);
        if outcome == TestOutcome::Bites {
            test.method = Some(BiteMethod::Revert);
        }
        let tests = vec![test];
        let (status, reasons, warnings) = bite::decide(&tests, policy);
        report.status = status;
        report.reasons.extend(reasons);
        if status == BiteStatus::Inconclusive {
            let limits = Limits {
                build: limit,
                tests: limit,
            };
            report
                .reasons
                .push(more_time_hint(step, limits, (false, true)));
        }
        report.warnings.extend(warnings);
        report.tests = tests;
        Ok(())
    }
}

/// The tests at head the change touches: files of a cargo test binary's module tree by the [`Layout`]
/// ([`modules`](super::modules)), every other file by [`testmap`].
fn touched_tests(
    runner: Runner,
    go_module: Option<&str>,
    changes: &[TestChange],
    head: &[TestResult],
    layout: Option<&Layout>,
    tree: &dyn testmap::Sources,
) -> Touched {
    let mut out = Touched::default();
    for change in changes {
        let mapped = layout.and_then(|l| super::modules::touched(l, change, head));
        let t = match mapped {
            // A test found in cargo's module tree is a changed test unless its whole file was selected.
            Some(mut t) => {
                if t.notes.is_empty() && t.changed.is_empty() {
                    t.changed = t.ids.clone();
                }
                t
            }
            None => match layout.and_then(|l| l.in_member(&change.path)) {
                // A workspace member's file: cargo names its results by the path inside the package, and
                // every member has a `src/lib.rs`, so only the member's own results are looked at.
                Some((inner, stems)) => {
                    let own: Vec<TestResult> = head
                        .iter()
                        .filter(|r| stems.iter().any(|s| r.id.starts_with(s.as_str())))
                        .cloned()
                        .collect();
                    let inner = TestChange {
                        path: inner,
                        ..change.clone()
                    };
                    testmap::touched_in(runner, go_module, &[inner], &own, tree)
                }
                None => {
                    testmap::touched_in(runner, go_module, std::slice::from_ref(change), head, tree)
                }
            },
        };
        out.ids.extend(t.ids);
        out.changed.extend(t.changed);
        out.notes.extend(t.notes);
    }
    out
}

/// How to give an inconclusive check more time, by the phase that ran out of it.
fn more_time_hint(step: &Step, limits: Limits, (build, tests): (bool, bool)) -> String {
    let mut parts = Vec::new();
    if build {
        parts.push(format!(
            "the reverted build did not finish within {} (the build step's timeout; raise that step's `timeout` in the profile)",
            human(limits.build)
        ));
    }
    if tests || !build {
        parts.push(format!(
            "the selected tests of step `{}` did not finish within {} without the production change (raise `timeout` under `[bite]` in the profile)",
            step.name,
            human(limits.tests)
        ));
    }
    parts.join("; ")
}

/// Elapsed milliseconds since `t`.
fn ms(t: Instant) -> u64 {
    t.elapsed().as_millis() as u64
}
