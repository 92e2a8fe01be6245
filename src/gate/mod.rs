//! `vouch gate`: the clean-room verification of a change, base..head.
//!
//! The flow, top to bottom in [`run`]: resolve the revisions and the profile and classify the change
//! ([`prepare`]); apply the scope and test-presence rules ([`rules`]); check every tool, then run the
//! profile's steps in a clean room at head ([`schedule`]: format, vet and lint side by side, the rest in
//! order); judge each test step against its parsed per-test results ([`test_step`]), getting the baseline at
//! base only when tests fail ([`baseline`]) and rerunning failures alone to spot flaky ones; run the bite check
//! once ([`bite`]); rerun failing checks at base ([`checks`]); turn failed steps into findings ([`findings`]).
//! The verdict is [`judge::verdict`] of the findings; [`report`] writes it out. Where rooms, caches and logs
//! go is [`places`].

pub mod baseline;
pub mod bite;
pub mod cargo;
mod checks;
pub mod ci;
pub mod clippy;
pub mod fetch;
pub mod findings;
pub mod judge;
pub mod layered;
pub mod lint;
pub mod outcome;
pub mod paths;
mod places;
pub mod prepare;
pub mod profile;
pub mod pyenv;
pub mod report;
pub mod results;
mod roles;
pub mod rules;
mod schedule;
pub mod split;
pub mod steps;
pub mod syntax;
mod test_step;
pub mod testmap;
pub mod trusted;

use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result};
use tokio_util::sync::CancellationToken;

use crate::error::VouchError;
use crate::gate::outcome::{ClaimOutcome, Finding};
use crate::gate::report::{ProfileInfo, Report, SandboxInfo, Tests};
use crate::gate::results::TestResult;
use crate::ui::Ui;

pub use prepare::{default_cache_dir, prepare, Options, Prepared, DEFAULT_RERUNS};

/// Runs the gate. `Err` is for usage and infrastructure errors (exit 2 and 3); a failing change is `Ok` with
/// verdict `fail`.
pub async fn run(opts: &Options, ui: &Ui, cancel: &CancellationToken) -> Result<Report> {
    let started = Instant::now();
    let prep = {
        let opts = opts.clone();
        tokio::task::spawn_blocking(move || prepare(&opts))
            .await
            .context("prepare task")??
    };
    ui.line(&format!(
        "vouch gate: {}..{} ({} profile, {})",
        &prep.base.sha[..12],
        &prep.head.sha[..12],
        prep.profile.name,
        prep.profile_source
    ));
    let mut findings = rules::check(&prep.changes, &prep.classifier, opts.allow_no_tests);
    let mut notes = prep.notes.clone();
    if let Some(warning) = prep.sandbox.warning() {
        ui.line(&format!("  WARNING  {warning}"));
        notes.push(warning.to_owned());
    }

    let roles = roles::Roles::open(opts, &prep, ui, cancel).await?;
    if let Some(note) = roles.note() {
        ui.line(&format!("  note     {note}"));
        notes.push(note);
    }
    let head_places = roles.places(opts, &prep, "head", "head")?;
    let pb = ui.start("preparing the clean room at head");
    let head_room = places::open_head_room(&prep, head_places.room.clone()).await?;
    ui.done(
        pb,
        &format!("  room     head at {}", head_room.dir().display()),
    );
    let env = roles.env(&prep, &head_room, &head_places, "head")?;
    // Every tool first: a missing required tool is an error before anything runs.
    let skip_notes =
        schedule::check_tools(&prep.profile.steps, &env, head_room.dir(), cancel).await?;

    let mut gate = GateRun {
        opts,
        prep: &prep,
        roles: &roles,
        ui,
        cancel,
        baseline: None,
        tests: Tests::default(),
        bite: None,
        head_test_failed: false,
        findings: Vec::new(),
        notes: Vec::new(),
    };
    let mut reports = gate.run_steps(&env, &head_room, &skip_notes).await?;
    // A check that fails at head is run at base too: findings already there are not the change's.
    if !opts.strict_baseline && !opts.no_baseline {
        gate.judge_checks(&env, &mut reports).await?;
        if cancel.is_cancelled() {
            return Err(VouchError::Interrupted.into());
        }
    }
    findings.append(&mut gate.findings);
    notes.append(&mut gate.notes);
    findings.extend(findings::step_findings(
        &reports,
        head_room.dir(),
        env.inside_room(),
    ));
    let bite = match gate.bite.take() {
        Some(b) => {
            findings.extend(b.findings(opts.allow_removed_tests));
            b
        }
        None => bite::BiteReport::not_run(&gate.bite_policy()),
    };
    let tests = gate.tests;
    let verdict = judge::verdict(&reports, &findings);
    let logs = head_places
        .logs
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    drop(head_room);
    // Head's build layers are kept for its next gate; nothing else this run wrote stays.
    roles.finish(Some(env), true);
    Ok(Report {
        verdict,
        range: format!("{}..{}", prep.base.sha, prep.head.sha),
        base: prep.base.clone(),
        head: prep.head.clone(),
        profile: ProfileInfo {
            name: prep.profile.name.clone(),
            source: prep.profile_source.clone(),
        },
        claimed: prep.claimed,
        claim: ClaimOutcome::of(prep.claimed, verdict),
        changes: prep.changes.clone(),
        steps: reports,
        tests,
        bite,
        reasons: findings.iter().map(|f| f.message.clone()).collect(),
        findings,
        notes,
        sandbox: SandboxInfo::of(&prep.sandbox),
        duration_ms: started.elapsed().as_millis() as u64,
        logs,
    })
}

/// The directory of the logs of a gate on `opts` ([`places::run_logs`]): for redacting them after a gate
/// that ended in an error, which has no report to say where they are.
pub fn run_logs(opts: &Options, prep: &Prepared) -> std::path::PathBuf {
    places::run_logs(opts, prep)
}

/// The state of one gate run while its steps are judged, shared by the modules that judge them: test steps
/// ([`test_step`]), the baseline ([`baseline`]), checks at base ([`checks`]) and the bite check ([`bite`]).
struct GateRun<'a> {
    opts: &'a Options,
    prep: &'a Prepared,
    /// Where each role's room and cache are (layered over the trusted cache, or this run's own).
    roles: &'a roles::Roles,
    ui: &'a Ui,
    cancel: &'a CancellationToken,
    /// The baseline, fetched at most once: None until needed; Some(None) when there is no usable one.
    baseline: Option<Option<Vec<TestResult>>>,
    tests: Tests,
    bite: Option<bite::BiteReport>,
    /// The test step failed at head (set by `judge_tests`).
    head_test_failed: bool,
    findings: Vec<Finding>,
    notes: Vec<String>,
}
