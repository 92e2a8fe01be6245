//! `vouch gate`: the clean-room verification of a change, base..head.
//!
//! The flow, top to bottom in [`run`]: resolve the revisions and the profile ([`prepare`]); classify the changed
//! paths and apply the scope and test-presence rules; check every tool before running anything; run the
//! profile's steps in a clean room at head (format, vet and lint side by side, the rest in order); for a test
//! step, compare exit status with parsed per-test results, and only when tests fail, get the baseline at base
//! (cached by base tree) and rerun the failures alone to spot flaky ones. The verdict and its reasons are
//! assembled at the end; [`judge`] holds the pure rules.

pub mod baseline;
pub mod bite;
pub mod judge;
pub mod outcome;
pub mod profile;
pub mod report;
pub mod results;
pub mod split;
pub mod steps;
pub mod testmap;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;

use crate::error::VouchError;
use crate::gate::outcome::Claim;
use crate::gate::outcome::{
    Baseline, BiteStatus, ClaimOutcome, Finding, Rule, StepStatus, TestOutcome,
};
use crate::gate::profile::{Classifier, PathClass, Profile, Step, StepKind, REPO_PROFILE};
use crate::gate::report::{ChangedFile, ProfileInfo, Report, Rev, Tests};
use crate::gate::results::{Runner, TestResult};
use crate::gate::steps::{human, plural, StepEnv, StepRun};
use crate::git::ChangeKind;
use crate::room::{Placement, Room, Target};
use crate::ui::Ui;

/// How many times a test failing at head is rerun alone before it is blamed, unless `--reruns` says.
pub const DEFAULT_RERUNS: u32 = 1;

/// What the user asked of the gate.
#[derive(Clone, Debug)]
pub struct Options {
    pub repo: PathBuf,
    pub base: Option<String>,
    pub head: String,
    pub profile: Option<String>,
    pub claimed: Option<Claim>,
    pub keep: bool,
    pub strict_baseline: bool,
    pub no_flaky: bool,
    pub reruns: u32,
    pub allow_no_tests: bool,
    pub allow: Vec<String>,
    pub deny: Vec<String>,
    pub no_baseline: bool,
    pub refresh_baseline: bool,
    pub no_bite: bool,
    /// Overrides of the profile's bite policy.
    pub bite_require: Option<profile::BiteRequire>,
    pub bite_build_failure: Option<profile::BuildFailure>,
    pub allow_removed_tests: bool,
    pub fresh_rooms: bool,
    /// Where `--keep` puts rooms (`workspaces/` of the current directory by default).
    pub workspaces: PathBuf,
    /// The cache root (`$VOUCH_CACHE`, else the user cache dir).
    pub cache: PathBuf,
}

impl Options {
    /// Options with defaults for a repository (used by tests and by `vouch run`).
    pub fn for_repo(repo: &Path) -> Options {
        Options {
            repo: repo.to_path_buf(),
            base: None,
            head: "HEAD".into(),
            profile: None,
            claimed: None,
            keep: false,
            strict_baseline: false,
            no_flaky: false,
            reruns: DEFAULT_RERUNS,
            allow_no_tests: false,
            allow: Vec::new(),
            deny: Vec::new(),
            no_baseline: false,
            refresh_baseline: false,
            no_bite: false,
            bite_require: None,
            bite_build_failure: None,
            allow_removed_tests: false,
            fresh_rooms: false,
            workspaces: PathBuf::from("workspaces"),
            cache: default_cache_dir(),
        }
    }
}

/// `$VOUCH_CACHE`, else `<user cache dir>/vouch`, else a directory under the system temp dir.
pub fn default_cache_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("VOUCH_CACHE").filter(|v| !v.is_empty()) {
        return PathBuf::from(dir);
    }
    dirs::cache_dir()
        .map(|d| d.join("vouch"))
        .unwrap_or_else(|| std::env::temp_dir().join("vouch-cache"))
}

/// Everything decided before any step runs.
pub struct Prepared {
    pub objects: PathBuf,
    pub repo_key: String,
    pub base: Rev,
    pub head: Rev,
    pub base_tree: String,
    pub profile: Profile,
    pub profile_source: String,
    pub changes: Vec<ChangedFile>,
    pub claimed: Option<Claim>,
    pub notes: Vec<String>,
    /// The head tree has files the profile calls tests.
    pub tree_has_tests: bool,
    /// Files with both test and production changes (Rust inline tests): base plus only the test hunks.
    pub mixed: BTreeMap<String, String>,
}

/// Resolves revisions and the profile, and classifies the change. Reads the repository only.
pub fn prepare(opts: &Options) -> Result<Prepared> {
    let repo = crate::git::open(&opts.repo)?;
    let head = crate::git::resolve(&repo, &opts.head)?;
    let (base, base_label) = match &opts.base {
        Some(rev) => (crate::git::resolve(&repo, rev)?, rev.clone()),
        None => {
            let (base, branch) = crate::git::default_base(&repo, head)?;
            (base, format!("merge-base with {branch}"))
        }
    };
    if base == head {
        return Err(VouchError::usage_hint(
            format!("base and head are the same commit ({head}): there is no change to judge"),
            "pass --base REV for the commit the change starts from, or --head for the change",
        )
        .into());
    }
    let mut notes = Vec::new();
    let base_paths = crate::git::tree_paths(&repo, base)?;
    let head_paths = crate::git::tree_paths(&repo, head)?;
    let (profile, profile_source) = match &opts.profile {
        Some(arg) => (Profile::from_arg(arg)?, format!("--profile {arg}")),
        None => match crate::git::file_text(&repo, base, REPO_PROFILE) {
            Some(text) => (
                Profile::from_toml(&text, &format!("{REPO_PROFILE} at base"))?,
                format!("{REPO_PROFILE} at base"),
            ),
            None => {
                let roots = |paths: &[String]| -> Vec<String> {
                    paths.iter().filter(|p| !p.contains('/')).cloned().collect()
                };
                let detected = Profile::detect(&roots(&base_paths))
                    .or_else(|| Profile::detect(&roots(&head_paths)))
                    .ok_or_else(|| {
                        VouchError::usage_hint(
                            "cannot tell what kind of project this is (no Cargo.toml, go.mod, pyproject.toml, setup.cfg, setup.py or package.json at the root)",
                            format!("pass --profile with a preset (rust, go, python, node) or a profile file, or commit one as {REPO_PROFILE}"),
                        )
                    })?;
                let marker = detected.detect.join(" / ");
                let source = format!("detected from {marker}");
                (detected, source)
            }
        },
    };
    let changes = crate::git::changes(&repo, base, head)?;
    if changes.iter().any(|c| c.path == REPO_PROFILE) && opts.profile.is_none() {
        notes.push(format!(
            "the change edits {REPO_PROFILE}; it was judged with the profile as of base"
        ));
    }
    let classifier = Classifier::new(&profile.paths, &opts.allow, &opts.deny)?;
    let mut files = Vec::new();
    let mut mixed = BTreeMap::new();
    for c in &changes {
        let mut class = classifier.classify(&c.path);
        let mut detail = None;
        let splittable = class == PathClass::Production
            && matches!(c.kind, ChangeKind::Modified | ChangeKind::Added);
        if let Some(finder) = split::regions_for(&c.path).filter(|_| splittable) {
            let old = match c.kind {
                ChangeKind::Added => Some(String::new()),
                _ => crate::git::file_text(&repo, base, &c.path),
            };
            let new = crate::git::file_text(&repo, head, &c.path);
            if let (Some(old), Some(new)) = (old, new) {
                match split::split(finder, &old, &new) {
                    Some(s) if s.test_changed && !s.production_changed => {
                        class = PathClass::Test;
                        detail = Some(s.summary);
                    }
                    Some(s) if s.test_changed => {
                        detail = Some(s.summary);
                        mixed.insert(c.path.clone(), s.test_only);
                    }
                    Some(_) => {}
                    None => detail = Some("could not be parsed: treated as production".into()),
                }
            }
        }
        files.push(ChangedFile {
            path: c.path.clone(),
            old_path: c.old_path.clone(),
            class,
            change: c.kind.clone(),
            mixed: mixed.contains_key(&c.path),
            detail,
        });
    }
    let tree_has_tests = head_paths.iter().any(|p| classifier.is_test(p));
    let claimed = match opts.claimed {
        Some(c) => Some(c),
        None => {
            let msg = crate::git::message(&repo, head)?;
            match crate::git::trailer(&msg, "Agent-Verdict") {
                Some(v) if Claim::from_trailer(&v).is_some() => Claim::from_trailer(&v),
                Some(v) => {
                    notes.push(format!(
                        "ignored Agent-Verdict trailer `{v}` (expected GO or NO-GO)"
                    ));
                    None
                }
                None => None,
            }
        }
    };
    let objects = crate::git::objects_dir(&repo);
    let repo_key = {
        let canon = repo
            .commondir()
            .canonicalize()
            .unwrap_or_else(|_| repo.commondir().to_path_buf());
        let mut h = Sha256::new();
        h.update(canon.to_string_lossy().as_bytes());
        hex::encode(&h.finalize()[..8])
    };
    Ok(Prepared {
        objects,
        repo_key,
        base: Rev {
            rev: base_label,
            sha: base.to_string(),
        },
        head: Rev {
            rev: opts.head.clone(),
            sha: head.to_string(),
        },
        base_tree: crate::git::tree_id(&repo, base)?.to_string(),
        profile,
        profile_source,
        changes: files,
        claimed,
        notes,
        tree_has_tests,
        mixed,
    })
}

/// The places a gate run uses for one role (head, base, bite).
struct Places {
    room: Placement,
    cache: PathBuf,
    logs: PathBuf,
}

fn places(opts: &Options, prep: &Prepared, role: &str) -> Result<Places> {
    places_logged(opts, prep, role, role)
}

/// Like [`places`], with step logs under `logs_name` (two runs in one room keep their logs apart).
fn places_logged(opts: &Options, prep: &Prepared, role: &str, logs_name: &str) -> Result<Places> {
    let short = &prep.head.sha[..12];
    let repo_dir = opts.cache.join("rooms").join(&prep.repo_key);
    let (room, logs) = if opts.keep {
        let dir = opts.workspaces.join(format!("gate-{short}"));
        (
            Placement::Kept(dir.join(role)),
            dir.join("logs").join(logs_name),
        )
    } else if opts.fresh_rooms {
        (
            Placement::Temp,
            opts.cache
                .join("logs")
                .join(&prep.repo_key)
                .join(short)
                .join(logs_name),
        )
    } else {
        (
            Placement::Cached(repo_dir.join(role)),
            opts.cache
                .join("logs")
                .join(&prep.repo_key)
                .join(short)
                .join(logs_name),
        )
    };
    // Steps run inside the room: every path handed to them must be absolute.
    let absolute = |p: PathBuf| std::path::absolute(&p).unwrap_or(p);
    let room = match room {
        Placement::Cached(d) => Placement::Cached(absolute(d)),
        Placement::Kept(d) => Placement::Kept(absolute(d)),
        Placement::Temp => Placement::Temp,
    };
    let logs = absolute(logs);
    let cache = absolute(repo_dir.join(format!("{role}.cache")));
    std::fs::create_dir_all(&cache).with_context(|| format!("create {}", cache.display()))?;
    if logs.exists() {
        let _ = std::fs::remove_dir_all(&logs);
    }
    std::fs::create_dir_all(&logs).with_context(|| format!("create {}", logs.display()))?;
    Ok(Places { room, cache, logs })
}

async fn open_room(prep: &Prepared, sha: &str, placement: Placement) -> Result<Room> {
    let objects = prep.objects.clone();
    let oid = git2::Oid::from_str(sha)?;
    let preserve = prep.profile.room.preserve.clone();
    tokio::task::spawn_blocking(move || {
        Room::open(&objects, Target::Commit(oid), placement, &preserve)
    })
    .await
    .context("room task")?
}

/// The bite room, holding the reverted tree of `plan`, and its places.
async fn open_bite_room(
    opts: &Options,
    prep: &Prepared,
    plan: &bite::Plan,
) -> Result<(Room, Places)> {
    let places = places(opts, prep, "bite")?;
    let objects = prep.objects.clone();
    let base = git2::Oid::from_str(&prep.base.sha)?;
    let preserve = prep.profile.room.preserve.clone();
    let files = plan.overlay.clone();
    let placement = places.room.clone();
    let room = tokio::task::spawn_blocking(move || {
        Room::open(
            &objects,
            Target::Overlay { base, files },
            placement,
            &preserve,
        )
    })
    .await
    .context("room task")??;
    Ok((room, places))
}

fn step_env(prep: &Prepared, room: &Room, places: &Places) -> StepEnv {
    StepEnv {
        room: room.dir().to_path_buf(),
        cache: places.cache.clone(),
        logs: places.logs.clone(),
        profile_env: prep.profile.env.clone(),
    }
}

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
    let mut findings = rule_checks(opts, &prep);
    let mut notes = prep.notes.clone();

    let head_places = places(opts, &prep, "head")?;
    let pb = ui.start("preparing the clean room at head");
    let head_room = open_room(&prep, &prep.head.sha, head_places.room.clone()).await?;
    ui.done(
        pb,
        &format!("  room     head at {}", head_room.dir().display()),
    );
    let env = step_env(&prep, &head_room, &head_places);

    // Every tool first: a missing required tool is an error before anything runs.
    let mut skip_notes: Vec<Option<String>> = Vec::new();
    for step in &prep.profile.steps {
        if steps::not_applicable(step, head_room.dir()).is_some() {
            skip_notes.push(None);
            continue;
        }
        match steps::missing_tool(step, &env, cancel).await {
            None => skip_notes.push(None),
            Some(why) if step.required => {
                return Err(VouchError::infra_hint(
                    format!("step `{}` cannot run: {why}", step.name),
                    step.install.clone().unwrap_or_else(|| {
                        "install the tool, or mark the step `required = false` in the profile"
                            .into()
                    }),
                )
                .into())
            }
            Some(why) => {
                let hint = step
                    .install
                    .as_deref()
                    .map(|h| format!(" (to run it: {h})"))
                    .unwrap_or_default();
                skip_notes.push(Some(format!("skipped: {why}{hint}")));
            }
        }
    }

    let mut gate = GateRun {
        opts,
        prep: &prep,
        ui,
        cancel,
        baseline: None,
        tests: Tests::default(),
        bite: None,
        head_test_failed: false,
        findings: Vec::new(),
        notes: Vec::new(),
    };
    // Steps run in profile order, except that a run of checks (format, vet, lint) goes side by side with the
    // build and test steps that follow it: they only read the tree, and on a warm cache they overlap well.
    let n = prep.profile.steps.len();
    let mut slots: Vec<Option<steps::StepReport>> = vec![None; n];
    let mut i = 0;
    while i < n {
        let kinds = |j: usize| prep.profile.steps[j].kind;
        let mut checks = Vec::new();
        while i < n && kinds(i).parallel() {
            checks.push(i);
            i += 1;
        }
        let mut chain = Vec::new();
        while i < n && matches!(kinds(i), StepKind::Build | StepKind::Test) {
            chain.push(i);
            i += 1;
        }
        if checks.is_empty() && chain.is_empty() {
            // Custom and codegen steps write to the tree: they run alone.
            chain.push(i);
            i += 1;
        }
        let run_one = |idx: usize| {
            let step = &prep.profile.steps[idx];
            let skip = skip_notes[idx].clone();
            let env = &env;
            let room = &head_room;
            let objects = &prep.objects;
            async move {
                if let Some(note) = skip {
                    let run = steps::run_step_skipped(step, env, note);
                    ui.line(&step_line(&run));
                    return Ok::<_, anyhow::Error>(run);
                }
                let pb = ui.start(&format!("{} ({:?})", step.name, step.kind).to_lowercase());
                let run = steps::run_step(step, env, room, objects, cancel).await?;
                if run.report.status == StepStatus::Skipped {
                    pb.finish_and_clear();
                    ui.line(&step_line(&run));
                } else {
                    ui.done(pb, &step_line(&run));
                }
                Ok(run)
            }
        };
        let checks_fut = futures::future::join_all(checks.iter().map(|&idx| run_one(idx)));
        let gate_ref = &mut gate;
        let env_ref = &env;
        let chain_fut = async {
            let mut out = Vec::new();
            for &idx in &chain {
                let step = &prep.profile.steps[idx];
                let mut run = run_one(idx).await?;
                if cancel.is_cancelled() {
                    return Err(VouchError::Interrupted.into());
                }
                if step.kind == StepKind::Test && run.report.status != StepStatus::Skipped {
                    gate_ref.judge_tests(step, env_ref, &mut run).await?;
                    if cancel.is_cancelled() {
                        return Err(VouchError::Interrupted.into());
                    }
                    if run.report.status != StepStatus::Timeout && gate_ref.bite.is_none() {
                        let took = run.outcome.as_ref().map(|o| o.duration).unwrap_or_default();
                        gate_ref.run_bite(step, &run.results, took).await?;
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
        for (&idx, run) in checks.iter().zip(check_runs) {
            slots[idx] = Some(run?.report);
        }
        for (idx, report) in chain_runs? {
            slots[idx] = Some(report);
        }
    }
    let mut reports: Vec<steps::StepReport> = slots.into_iter().flatten().collect();
    // A check that fails at head is run at base too: findings already there are not the change's.
    if !opts.strict_baseline && !opts.no_baseline {
        gate.judge_checks(&mut reports).await?;
        if cancel.is_cancelled() {
            return Err(VouchError::Interrupted.into());
        }
    }
    findings.append(&mut gate.findings);
    notes.append(&mut gate.notes);
    for st in &reports {
        if st.status.is_bad() && st.kind != StepKind::Test {
            let mut r = format!(
                "step `{}` ({}) {}",
                st.name,
                format!("{:?}", st.kind).to_lowercase(),
                match st.status {
                    StepStatus::Timeout => "timed out".to_owned(),
                    StepStatus::Error => "could not run".to_owned(),
                    _ => match st.exit_code {
                        Some(c) => format!("failed (exit {c})"),
                        None => "failed".to_owned(),
                    },
                }
            );
            if let Some(note) = &st.note {
                r.push_str(": ");
                r.push_str(note);
            } else if let Some(detail) = failure_detail(st, head_room.dir()) {
                r.push_str(": ");
                r.push_str(&detail);
            }
            findings.push(Finding::new(Rule::StepFailed, r).step(st.name.clone()));
        }
    }
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
        duration_ms: started.elapsed().as_millis() as u64,
        logs,
    })
}

/// Scope (allow/deny) and test presence.
fn rule_checks(opts: &Options, prep: &Prepared) -> Vec<Finding> {
    let mut findings = Vec::new();
    let classifier = match Classifier::new(&prep.profile.paths, &opts.allow, &opts.deny) {
        Ok(c) => c,
        Err(_) => return findings,
    };
    let outside: Vec<&str> = prep
        .changes
        .iter()
        .filter(|c| !classifier.allow.is_empty() && !classifier.allow.is_match(&c.path))
        .map(|c| c.path.as_str())
        .collect();
    if !outside.is_empty() {
        findings.push(
            Finding::new(
                Rule::OutOfScope,
                format!(
                    "out of scope: the change touches {} outside the allowed paths: {}",
                    plural(outside.len(), "file"),
                    outside.join(", ")
                ),
            )
            .subjects(outside.iter().copied()),
        );
    }
    let denied: Vec<&str> = prep
        .changes
        .iter()
        .filter(|c| classifier.deny.is_match(&c.path))
        .map(|c| c.path.as_str())
        .collect();
    if !denied.is_empty() {
        findings.push(
            Finding::new(
                Rule::DeniedPath,
                format!(
                    "out of scope: the change touches denied paths: {}",
                    denied.join(", ")
                ),
            )
            .subjects(denied.iter().copied()),
        );
    }
    let production: Vec<&str> = prep
        .changes
        .iter()
        .filter(|c| c.class == PathClass::Production)
        .map(|c| c.path.as_str())
        .collect();
    let tests_changed = prep
        .changes
        .iter()
        .any(|c| c.class == PathClass::Test || c.mixed);
    if !production.is_empty() && !tests_changed && !opts.allow_no_tests {
        findings.push(
            Finding::new(
                Rule::NoTestsChanged,
                format!(
                    "no tests changed: the change touches production code ({}) but no tests (pass --allow-no-tests if that is intended)",
                    production.join(", ")
                ),
            )
            .subjects(production.iter().copied()),
        );
    }
    findings
}

fn step_line(run: &StepRun) -> String {
    let r = &run.report;
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

/// A failure message in one line: its first few lines joined, without libtest's `thread 'x' (id)` prefix.
fn summarize_failure(message: &str) -> String {
    let mut parts: Vec<String> = Vec::new();
    for line in message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .take(4)
    {
        let line = match line.strip_prefix("thread '") {
            Some(rest) => rest
                .find(" panicked at ")
                .map(|i| rest[i + 1..].to_owned())
                .unwrap_or_else(|| line.to_owned()),
            None => line.to_owned(),
        };
        parts.push(line);
    }
    let joined = parts.join(" ");
    let mut out: String = joined.chars().take(240).collect();
    if joined.chars().count() > 240 {
        out.push('…');
    }
    out
}

/// A step's full log as written (relative to its room), or its tail when the file is gone.
fn read_log(report: &steps::StepReport) -> String {
    report
        .log
        .as_ref()
        .and_then(|p| std::fs::read_to_string(p).ok())
        .unwrap_or_else(|| report.log_tail.clone())
}

/// Files of the room that a step's output names, in order of first mention.
fn mentioned_files(tail: &str, room: &Path) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for token in tail.split(|c: char| {
        c.is_whitespace() || matches!(c, ':' | '(' | ')' | '[' | ']' | ',' | '"' | '\'' | '`')
    }) {
        let t = token.trim_start_matches("./").trim_end_matches('.');
        if t.is_empty() || t.len() > 300 || !t.contains('.') {
            continue;
        }
        if room.join(t).is_file() && !out.iter().any(|o| o == t) {
            out.push(t.to_owned());
        }
    }
    out
}

/// A short, specific account of a failed step: the files a formatter names, or the first finding of a linter
/// or compiler with its location, else the first line that looks like an error.
fn failure_detail(st: &steps::StepReport, room: &Path) -> Option<String> {
    let files = mentioned_files(&st.log_tail, room);
    if st.kind == StepKind::Format && !files.is_empty() {
        return Some(format!("not formatted: {}", files.join(", ")));
    }
    if let Some(first) = files.first() {
        let lines: Vec<&str> = st
            .log_tail
            .lines()
            .filter(|l| !l.trim().is_empty())
            .collect();
        if let Some(i) = lines.iter().position(|l| l.contains(first.as_str())) {
            let line = lines[i].trim();
            let text = if (line.starts_with("-->") || line.starts_with("at ")) && i > 0 {
                format!(
                    "{} ({})",
                    lines[i - 1].trim(),
                    line.trim_start_matches("-->").trim()
                )
            } else {
                line.to_owned()
            };
            let more = if files.len() > 1 {
                format!(" (files named: {})", files.join(", "))
            } else {
                String::new()
            };
            return Some(format!(
                "{}{more}",
                text.chars().take(300).collect::<String>()
            ));
        }
    }
    first_error_line(&st.log_tail)
}

fn first_error_line(tail: &str) -> Option<String> {
    let lines: Vec<&str> = tail.lines().filter(|l| !l.trim().is_empty()).collect();
    lines
        .iter()
        .find(|l| {
            let l = l.to_lowercase();
            l.contains("error")
                || l.contains("diff in")
                || l.contains("would reformat")
                || l.contains("fail")
        })
        .or(lines.last())
        .map(|l| l.trim().chars().take(300).collect())
}

/// State of one gate run while test steps are judged.
struct GateRun<'a> {
    opts: &'a Options,
    prep: &'a Prepared,
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

impl GateRun<'_> {
    /// Decides a test step's status from its exit code, its parsed results, the baseline and reruns.
    async fn judge_tests(&mut self, step: &Step, env: &StepEnv, run: &mut StepRun) -> Result<()> {
        let Some(outcome) = run.outcome.clone() else {
            return Ok(());
        };
        let runner = step.runner();
        self.head_test_failed = !outcome.success();
        if runner == Runner::Generic {
            if !outcome.success() {
                self.findings.push(
                    Finding::new(
                        Rule::TestStepFailed,
                        format!(
                            "step `{}` (test) failed{}; it has no per-test results, so it cannot be compared with base",
                            step.name,
                            outcome.exit_code.map(|c| format!(" (exit {c})")).unwrap_or_default()
                        ),
                    )
                    .step(step.name.clone()),
                );
            }
            return Ok(());
        }
        if outcome.timed_out {
            self.findings.push(
                Finding::new(
                    Rule::TestTimeout,
                    format!(
                        "step `{}` (test) timed out after {}; its process group was killed{}",
                        step.name,
                        human(step.timeout()?),
                        running_at_timeout(&run.results)
                    ),
                )
                .step(step.name.clone()),
            );
            run.report.status = StepStatus::Timeout;
            return Ok(());
        }
        let tests_exist = self.prep.tree_has_tests
            || (runner == Runner::Cargo && has_inline_rust_tests(&env.room));
        if let Some(m) = judge::exit_mismatch(outcome.exit_code, &run.results, tests_exist) {
            self.findings.push(
                Finding::new(Rule::ExitMismatch, format!("step `{}`: {m}", step.name))
                    .step(step.name.clone()),
            );
            run.report.status = StepStatus::Fail;
            run.report.note = Some(m);
            return Ok(());
        }
        let failing = judge::failing(&run.results);
        if failing.is_empty() {
            if !outcome.success() {
                // Nothing parsed and a non-zero exit: the run broke before any test (build or collection).
                let tail = first_error_line(&run.report.log_tail).unwrap_or_default();
                self.findings.push(
                    Finding::new(
                        Rule::TestStepFailed,
                        format!(
                            "step `{}` (test) failed with exit {} before any test ran: {tail}",
                            step.name,
                            outcome.exit_code.map_or("signal".into(), |c| c.to_string())
                        ),
                    )
                    .step(step.name.clone()),
                );
                run.report.status = StepStatus::Fail;
            }
            return Ok(());
        }
        let base = self.baseline(step).await?;
        let split = judge::split_by_baseline(&failing, base.as_deref());
        let mut flaky = BTreeSet::new();
        if !split.candidates.is_empty() && self.opts.reruns > 0 {
            let ids: Vec<String> = split.candidates.iter().cloned().collect();
            if let Some(cmds) = results::select_argv(runner, &step.raw_argv(), &ids) {
                let pb = self.ui.start(&format!(
                    "rerunning {} alone",
                    plural(ids.len(), "failed test")
                ));
                let mut wanted = split.candidates.clone();
                for attempt in 0..self.opts.reruns {
                    let (results, _) = steps::run_selection(
                        step,
                        env,
                        &cmds,
                        &format!("rerun{attempt}-"),
                        step.timeout()?,
                        self.cancel,
                    )
                    .await?;
                    let passed = judge::passed_on_rerun(&wanted, &results);
                    wanted.retain(|id| !passed.contains(id));
                    flaky.extend(passed);
                    if wanted.is_empty() {
                        break;
                    }
                }
                self.ui.done(
                    pb,
                    &format!(
                        "  rerun    {} flaky of {}",
                        flaky.len(),
                        plural(ids.len(), "failed test")
                    ),
                );
            }
        }
        let j = judge::judge(
            &split,
            &flaky,
            self.opts.strict_baseline,
            self.opts.no_flaky,
        );
        let messages = |ids: &[String]| -> String {
            ids.iter()
                .map(|id| {
                    let msg = run
                        .results
                        .iter()
                        .find(|r| &r.id == id)
                        .and_then(|r| r.message.as_deref())
                        .map(summarize_failure)
                        .filter(|m| !m.is_empty())
                        .map(|m| format!(" ({m})"))
                        .unwrap_or_default();
                    format!("{id}{msg}")
                })
                .collect::<Vec<_>>()
                .join("; ")
        };
        if !j.new_failures.is_empty() {
            let was = if base.is_some() {
                " (passing or absent at base)"
            } else {
                ""
            };
            self.findings.push(
                Finding::new(
                    Rule::NewTestFailures,
                    format!("new test failures{was}: {}", messages(&j.new_failures)),
                )
                .step(step.name.clone())
                .subjects(j.new_failures.iter().cloned()),
            );
            run.report.status = StepStatus::Fail;
        } else {
            run.report.status = StepStatus::Pass;
        }
        let mut parts = Vec::new();
        if !j.preexisting_failures.is_empty() {
            parts.push(format!(
                "{} also failing at base{}",
                plural(j.preexisting_failures.len(), "test"),
                if self.opts.strict_baseline {
                    " (blamed: --strict-baseline)"
                } else {
                    " (not blamed)"
                }
            ));
        }
        if !j.flaky.is_empty() {
            parts.push(format!(
                "{} passed when rerun alone{}",
                plural(j.flaky.len(), "test"),
                if self.opts.no_flaky {
                    " (blamed: --no-flaky)"
                } else {
                    " (flaky, not blamed)"
                }
            ));
        }
        if !parts.is_empty() {
            run.report.note = Some(parts.join("; "));
        }
        self.tests.new_failures.extend(j.new_failures);
        self.tests
            .preexisting_failures
            .extend(j.preexisting_failures);
        self.tests.flaky.extend(j.flaky);
        Ok(())
    }

    /// Runs the failing format, vet and lint steps at base and compares findings: a step whose findings at head
    /// all occur at base too (line numbers aside) passes with a note; otherwise the new findings are named.
    async fn judge_checks(&mut self, reports: &mut [steps::StepReport]) -> Result<()> {
        let failing: Vec<usize> = reports
            .iter()
            .enumerate()
            .filter(|(_, r)| r.status == StepStatus::Fail && r.kind.parallel())
            .map(|(i, _)| i)
            .collect();
        if failing.is_empty() {
            return Ok(());
        }
        let prep = self.prep;
        let places = places_logged(self.opts, prep, "base", "base-checks")?;
        let pb = self.ui.start("running the failing checks at base");
        let room = open_room(prep, &prep.base.sha, places.room.clone()).await?;
        let env = step_env(prep, &room, &places);
        self.ui
            .done(pb, &format!("  room     base at {}", room.dir().display()));
        for i in failing {
            let Some(step) = prep
                .profile
                .steps
                .iter()
                .find(|s| s.name == reports[i].name)
            else {
                continue;
            };
            if steps::not_applicable(step, room.dir()).is_some()
                || steps::missing_tool(step, &env, self.cancel).await.is_some()
            {
                continue;
            }
            let pb = self.ui.start(&format!("{} at base", step.name));
            let base_run = steps::run_step(step, &env, &room, &prep.objects, self.cancel).await?;
            self.ui
                .done(pb, &format!("{} (at base)", step_line(&base_run)));
            if base_run.report.status != StepStatus::Fail {
                continue;
            }
            let head_log = read_log(&reports[i]);
            let base_log = read_log(&base_run.report);
            let new = judge::new_findings(&head_log, &base_log);
            let r = &mut reports[i];
            if new.is_empty() {
                r.status = StepStatus::Pass;
                r.note = Some(format!(
                    "fails at base too, with the same findings: pre-existing, not blamed (--strict-baseline blames them){}",
                    r.note.as_deref().map(|n| format!("; {n}")).unwrap_or_default()
                ));
                self.notes.push(format!(
                    "step `{}` fails at base with the same findings; not blamed",
                    r.name
                ));
            } else {
                let shown: Vec<&str> = new.iter().take(5).map(String::as_str).collect();
                r.note = Some(format!(
                    "fails at base too, but with {} not there: {}",
                    plural(new.len(), "new finding"),
                    shown.join(" | ")
                ));
            }
        }
        Ok(())
    }

    /// The effective bite policy: the profile's, with command-line overrides.
    fn bite_policy(&self) -> profile::BitePolicy {
        let mut p = self.prep.profile.bite.clone();
        if let Some(r) = self.opts.bite_require {
            p.require = r;
        }
        if let Some(b) = self.opts.bite_build_failure {
            p.build_failure = b;
        }
        p
    }

    /// The bite check (see [`bite`]): fills `self.bite`.
    async fn run_bite(
        &mut self,
        step: &Step,
        head_results: &[TestResult],
        head_duration: std::time::Duration,
    ) -> Result<()> {
        let policy = self.bite_policy();
        let mut report = bite::BiteReport::new(&policy);
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
            let touched = testmap::touched(
                runner,
                plan.go_module.as_deref(),
                &plan.test_changes,
                head_results,
            );
            report.warnings.extend(touched.notes);
            let (run_ids, mut tests) = bite::at_head(&touched.ids, head_results);
            if !run_ids.is_empty() {
                let pb = self.ui.start(&format!(
                    "bite check: {} without the production change",
                    plural(run_ids.len(), "changed test")
                ));
                let (room, places) = open_bite_room(self.opts, self.prep, &plan).await?;
                let env = step_env(self.prep, &room, &places);
                let limit = bite::timeout(&policy, step.timeout()?, head_duration);
                let mut covered = BTreeSet::new();
                for (i, (cmd, ids)) in bite::commands(runner, &step.raw_argv(), &run_ids)
                    .into_iter()
                    .enumerate()
                {
                    let (results, outcomes) = steps::run_selection(
                        step,
                        &env,
                        &[cmd],
                        &format!("bite{i}-"),
                        limit,
                        self.cancel,
                    )
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
                    tests.push(bite::BiteTest {
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
            }
            tests.sort_by(|a, b| a.id.cmp(&b.id));
            let (status, reasons, warnings) = bite::decide(&tests, &policy);
            report.status = status;
            report.reasons.extend(reasons);
            report.warnings.extend(warnings);
            report.tests = tests;
        }
        report.duration_ms = bite::ms(started);
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

    /// The bite check for a test step without per-test results: the whole test command runs in the reverted
    /// tree and must fail there, while it passes at base (else a failure proves nothing).
    async fn bite_whole_run(
        &mut self,
        step: &Step,
        policy: &profile::BitePolicy,
        head_duration: std::time::Duration,
        plan: &bite::Plan,
        report: &mut bite::BiteReport,
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
        let limit = bite::timeout(policy, step.timeout()?, head_duration);
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
        let tests = vec![bite::BiteTest { id, outcome }];
        let (status, reasons, warnings) = bite::decide(&tests, policy);
        report.status = status;
        report.reasons.extend(reasons);
        report.warnings.extend(warnings);
        report.tests = tests;
        Ok(())
    }

    /// The base results, run or loaded from the cache once per gate run.
    async fn baseline(&mut self, _step: &Step) -> Result<Option<Vec<TestResult>>> {
        if let Some(b) = &self.baseline {
            return Ok(b.clone());
        }
        let result = self.fetch_baseline().await?;
        self.baseline = Some(result.clone());
        Ok(result)
    }

    async fn fetch_baseline(&mut self) -> Result<Option<Vec<TestResult>>> {
        if self.opts.no_baseline {
            self.tests.baseline = Baseline::Disabled;
            self.notes
                .push("no baseline (--no-baseline): every failing test is blamed".into());
            return Ok(None);
        }
        let prep = self.prep;
        let base_steps: Vec<&Step> = prep
            .profile
            .steps
            .iter()
            .filter(|s| matches!(s.kind, StepKind::Build | StepKind::Custom | StepKind::Test))
            .collect();
        let programs: Vec<PathBuf> = base_steps
            .iter()
            .filter_map(|s| s.raw_argv().first().cloned())
            .filter_map(|p| crate::process::find_program(&p, None, Path::new(".")))
            .collect();
        let fingerprint = format!(
            "{}\n{}\n{}",
            serde_json::to_string(&base_steps).unwrap_or_default(),
            serde_json::to_string(&prep.profile.env).unwrap_or_default(),
            baseline::tool_fingerprint(&programs)
        );
        let key = baseline::key(&prep.base_tree, &fingerprint);
        if !self.opts.refresh_baseline {
            if let Some(cached) = baseline::load(&self.opts.cache, &key) {
                self.tests.baseline = Baseline::Cached;
                return Ok(self.use_base_run(cached));
            }
        }
        let places = places(self.opts, prep, "base")?;
        let pb = self.ui.start("preparing the clean room at base");
        let room = open_room(prep, &prep.base.sha, places.room.clone()).await?;
        self.ui
            .done(pb, &format!("  room     base at {}", room.dir().display()));
        let env = step_env(prep, &room, &places);
        let mut results = Vec::new();
        let mut broken = None;
        let mut exit_code = None;
        for step in base_steps {
            if steps::not_applicable(step, room.dir()).is_some()
                || steps::missing_tool(step, &env, self.cancel).await.is_some()
            {
                continue;
            }
            let pb = self.ui.start(&format!("{} at base", step.name));
            let run = steps::run_step(step, &env, &room, &prep.objects, self.cancel).await?;
            self.ui.done(pb, &format!("{} (at base)", step_line(&run)));
            let Some(outcome) = run.outcome else { continue };
            if outcome.cancelled {
                return Err(VouchError::Interrupted.into());
            }
            if outcome.timed_out {
                self.tests.baseline = Baseline::Unavailable;
                self.notes.push(format!(
                    "the baseline could not be had: `{}` timed out at base; every failing test is blamed",
                    step.name
                ));
                return Ok(None);
            }
            if step.kind == StepKind::Test {
                if run.results.is_empty() && !outcome.success() {
                    broken = Some(step.name.clone());
                    break;
                }
                exit_code = outcome.exit_code;
                results.extend(run.results);
            } else if !outcome.success() {
                broken = Some(step.name.clone());
                break;
            }
        }
        let base_run = baseline::BaseRun {
            base_tree: prep.base_tree.clone(),
            broken,
            exit_code,
            results,
        };
        if let Err(e) = baseline::store(&self.opts.cache, &key, &base_run) {
            tracing::warn!("could not cache the baseline: {e}");
        }
        self.tests.baseline = Baseline::Ran;
        Ok(self.use_base_run(base_run))
    }

    fn use_base_run(&mut self, run: baseline::BaseRun) -> Option<Vec<TestResult>> {
        match run.broken {
            Some(step) => {
                self.tests.baseline = Baseline::BaseBroken;
                self.notes.push(format!(
                    "base does not build (step `{step}` fails there before any test runs); head was judged on its own"
                ));
                None
            }
            None => Some(run.results),
        }
    }
}

fn running_at_timeout(results: &[TestResult]) -> String {
    let passed = results.len();
    if passed == 0 {
        String::new()
    } else {
        format!(" ({} had finished)", plural(passed, "test"))
    }
}

/// Whether a Rust tree has unit tests (for the "ran no tests" rule), looking at `src/` only.
fn has_inline_rust_tests(root: &Path) -> bool {
    fn walk(dir: &Path, depth: usize) -> bool {
        if depth > 8 {
            return false;
        }
        let Ok(entries) = std::fs::read_dir(dir) else {
            return false;
        };
        entries.flatten().any(|e| {
            let p = e.path();
            if p.is_dir() {
                let name = e.file_name();
                name != "target" && name != ".git" && walk(&p, depth + 1)
            } else {
                p.extension().is_some_and(|x| x == "rs")
                    && std::fs::read_to_string(&p).is_ok_and(|t| t.contains("#[test]"))
            }
        })
    }
    walk(root, 0)
}
