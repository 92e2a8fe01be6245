//! Running one profile step in a room: placeholders, tool checks, the process, and the step's own status.
//!
//! A red step is an outcome, not an error: this module returns `Err` only when the step could not be judged at
//! all (a log file could not be written). Test steps also return the runner's parsed per-test results; the
//! verdict on them (new, pre-existing, flaky) is made in `gate::judge`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::error::VouchError;
use crate::gate::clippy;
use crate::gate::fetch::{Fetched, RoomDeps};
use crate::gate::layered::{Phase, Views};
use crate::gate::outcome::StepStatus;
use crate::gate::places;
use crate::gate::profile::{Step, StepKind};
use crate::gate::pyenv::{self, RoomPython, State};
use crate::gate::results::{self, RunOutput, TestResult, TestStatus};
use crate::process::{self, Outcome, Spec};
use crate::room::{DriftKind, Room};
use crate::sandbox::{self, Policy, Sandbox};

/// Lines of output kept in a report's `log_tail`.
pub const LOG_TAIL_LINES: usize = 40;
/// Lines of diff shown per drifted file.
const DRIFT_DIFF_LINES: usize = 40;

/// Per-test counts of a test step.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct TestCounts {
    pub passed: usize,
    pub failed: usize,
    pub skipped: usize,
}

/// A drifted file after a code generator ran.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Drift {
    pub path: String,
    pub change: DriftKind,
    pub diff: String,
}

/// One step as the report shows it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct StepReport {
    pub name: String,
    pub kind: StepKind,
    pub status: StepStatus,
    pub duration_ms: u64,
    pub command: String,
    pub exit_code: Option<i32>,
    pub log_tail: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log: Option<PathBuf>,
    /// Why the step has its status, in a sentence (skips, missing tools, output, drift, test judgement).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tests: Option<TestCounts>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub drift: Vec<Drift>,
}

/// A step that ran (or was skipped), with what the judge needs.
#[derive(Debug)]
pub struct StepRun {
    pub report: StepReport,
    pub outcome: Option<Outcome>,
    pub results: Vec<TestResult>,
}

/// How a command is confined beyond the room and the cache ([`StepEnv::confined_spec`]).
pub struct Confined<'a> {
    /// Its environment variables (besides the sandbox's allowlist).
    pub vars: &'a [(String, String)],
    /// Directories it may write besides the room and the cache.
    pub writable: Vec<PathBuf>,
    pub network: bool,
    /// Whether its writes are kept for the role's later commands ([`Phase`]).
    pub phase: Phase,
    /// Directories it may write, bound at another path inside (outside, inside).
    pub binds: Vec<(PathBuf, PathBuf)>,
}

/// Everything a step needs to know about where it runs.
#[derive(Clone, Debug)]
pub struct StepEnv {
    /// The room as vouch reads it (with layers, vouch's own view of the role; see [`layered`]).
    pub room: PathBuf,
    /// Per repository and role (head, base, bite): build caches like CARGO_TARGET_DIR, and the step's home;
    /// as vouch reads it.
    pub cache: PathBuf,
    /// The repository's own directory of shared environments (Python's shared venvs), outside any role.
    pub shared: PathBuf,
    pub logs: PathBuf,
    pub profile_env: BTreeMap<String, String>,
    /// Confines the step's command; its environment is built from the allowlist either way.
    pub sandbox: Sandbox,
    /// Directories the command may read although they are in the hidden home (the repository's objects).
    pub readable: Vec<PathBuf>,
    /// Directories hidden inside the sandbox (vouch's cache, with every other gate's state).
    pub hidden: Vec<PathBuf>,
    /// The room's Python environment, made by the first step that needs it ([`pyenv`]).
    pub python: RoomPython,
    /// The room's dependencies, fetched before the first step that needs them ([`fetch`](crate::gate::fetch)).
    pub deps: RoomDeps,
    /// The role's copy-on-write views, where the gate has them: steps then see the room and the cache at the
    /// paths every role shares, and what they write is kept or thrown away by phase.
    pub views: Option<Arc<Views>>,
}

impl StepEnv {
    /// The steps of `profile` run in a worktree of `vouch run` (the tests, the formatter): build caches
    /// under `cache`, logs in `logs`, confined by `sandbox` with `readable` open.
    pub fn for_worktree(
        profile: &crate::gate::profile::Profile,
        dir: &Path,
        logs: PathBuf,
        cache: PathBuf,
        sandbox: Sandbox,
        readable: Vec<PathBuf>,
    ) -> StepEnv {
        StepEnv {
            room: dir.to_path_buf(),
            shared: cache.parent().unwrap_or(&cache).to_path_buf(),
            cache,
            logs,
            profile_env: profile.env.clone(),
            sandbox,
            hidden: readable.iter().flat_map(|o| repository_of(o)).collect(),
            readable,
            python: Default::default(),
            deps: crate::gate::fetch::RoomDeps::new(profile.room.fetch),
            views: None,
        }
    }

    /// The room as steps see it.
    pub fn inside_room(&self) -> &Path {
        self.views
            .as_ref()
            .map_or(self.room.as_path(), |v| v.inside().room.as_path())
    }

    /// The cache as steps see it.
    pub fn inside_cache(&self) -> &Path {
        self.views
            .as_ref()
            .map_or(self.cache.as_path(), |v| v.inside().cache.as_path())
    }

    /// Fills `{room}`, `{cache}`, `{junit}` and `${VAR}` (from vouch's own environment), as steps see them.
    pub fn expand(&self, text: &str, junit: &Path) -> String {
        expand_with(
            text,
            self.inside_room(),
            self.inside_cache(),
            &self.inside_junit(junit),
        )
    }

    /// [`StepEnv::expand`] with the room and the cache as vouch reads them.
    pub fn expand_for_vouch(&self, text: &str, junit: &Path) -> String {
        expand_with(text, &self.room, &self.cache, junit)
    }

    /// The environment of a step: profile env, then the step's, expanded.
    pub fn env_for(&self, step: &Step, junit: &Path) -> Vec<(String, String)> {
        let mut env: BTreeMap<String, String> = BTreeMap::new();
        for (k, v) in self.profile_env.iter().chain(step.env.iter()) {
            env.insert(k.clone(), self.expand(v, junit));
        }
        if let Some(python) = self.python.activation() {
            python.apply(&mut env);
        }
        env.into_iter().collect()
    }

    pub fn argv_for(&self, argv: &[String], junit: &Path) -> Vec<String> {
        argv.iter().map(|a| self.expand(a, junit)).collect()
    }

    /// Where a runner writes its JUnit XML: a directory of its own, the only part of the logs a step may write.
    /// With views, one directory per command, which steps see at the one path every role's steps see, under
    /// one name ([`StepEnv::expand`]): a test cannot tell a rerun or the bite check by where it reports.
    /// Without views too the directory is the command's own, made empty here: what an earlier command (or the
    /// code it ran) left in the logs is neither seen nor read back.
    pub fn junit_path(&self, step: &str, suffix: &str) -> PathBuf {
        let stem = file_stem(step);
        // With views, the directory's real path shows in the mounts a test can read: a name of no meaning.
        let dir = match &self.views {
            Some(v) => v.scratch().join("junit").join(crate::layers::random_name()),
            None => self.logs.join("junit").join(format!("{stem}{suffix}")),
        };
        fresh_dir(&dir);
        dir.join(format!("{stem}.junit.xml"))
    }

    /// A JUnit path as steps see it.
    fn inside_junit(&self, junit: &Path) -> PathBuf {
        match (&self.views, junit.file_name()) {
            (Some(v), Some(name)) => v.inside().junit.join(name),
            _ => junit.to_path_buf(),
        }
    }

    /// The step's own home directory (`HOME` inside the sandbox), kept with the build caches.
    pub fn home(&self) -> PathBuf {
        self.cache.join("home")
    }

    /// The phase of a step's own command: a build (and a lint that builds, like clippy reusing the build) keeps
    /// what it writes; everything else runs in a layer of its own.
    pub fn phase_of(step: &Step) -> Phase {
        if step.kind == StepKind::Build
            || (step.kind == StepKind::Lint && step.reuse_build.is_some())
        {
            Phase::Build
        } else {
            Phase::Run
        }
    }

    /// A process spec for a step's command in the room, logs named after `stem`, in the step's own phase.
    pub fn spec(
        &self,
        step: &Step,
        argv: Vec<String>,
        junit: &Path,
        stem: &str,
        timeout: Duration,
        merge_output: bool,
    ) -> Spec {
        self.spec_in(
            step,
            argv,
            junit,
            stem,
            timeout,
            merge_output,
            Self::phase_of(step),
        )
    }

    /// [`StepEnv::spec`] in `phase`.
    #[allow(clippy::too_many_arguments)]
    pub fn spec_in(
        &self,
        step: &Step,
        argv: Vec<String>,
        junit: &Path,
        stem: &str,
        timeout: Duration,
        merge_output: bool,
        phase: Phase,
    ) -> Spec {
        let junit_dir = junit
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| self.logs.clone());
        let vars = self.env_for(step, junit);
        // With views, the JUnit directory is bound where every command's steps see theirs.
        let (writable, binds) = match &self.views {
            Some(v) => (Vec::new(), vec![(junit_dir, v.inside().junit.clone())]),
            None => (vec![junit_dir], Vec::new()),
        };
        let confined = Confined {
            vars: &vars,
            writable,
            network: step.network,
            phase,
            binds,
        };
        self.confined_spec(argv, confined, stem, timeout, merge_output)
    }

    /// A process spec for `argv` in the room, confined: the room, the cache and `how.writable` writable
    /// (created if missing), the step's home as `HOME`, logs named after `stem`. Where the places cannot be
    /// mounted, the spec runs a command that says so and fails.
    pub fn confined_spec(
        &self,
        argv: Vec<String>,
        how: Confined<'_>,
        stem: &str,
        timeout: Duration,
        merge_output: bool,
    ) -> Spec {
        let home = self.home();
        let bound = how.binds.iter().map(|(outside, _)| outside);
        // With views, the home is made where the command sees it ([`layered`]).
        let own_home = self.views.is_none().then_some(&home);
        for dir in own_home.into_iter().chain(&how.writable).chain(bound) {
            if let Err(e) = std::fs::create_dir_all(dir) {
                tracing::warn!("create {}: {e}", dir.display());
            }
        }
        let policy = Policy {
            writable: [self.room.clone(), self.cache.clone()]
                .into_iter()
                .chain(how.writable)
                .collect(),
            readable: self
                .readable
                .iter()
                .cloned()
                .chain(self.python.activation().map(|a| a.shared.clone()))
                .collect(),
            network: how.network,
            binds: how.binds,
            ..Policy::default()
        };
        let env = sandbox::child_env(&home, how.vars);
        let (argv, env, hold) = self.wrap(&argv, &self.room, env, policy, how.phase);
        Spec {
            argv,
            cwd: self.room.clone(),
            env,
            timeout,
            log_path: self.logs.join(format!("{stem}.log")),
            stdout_path: self.logs.join(format!("{stem}.stdout")),
            merge_output,
            hold,
            caps: self.sandbox.caps(),
        }
    }

    /// `argv` in `cwd` confined by `policy`, in `phase`: with views, the role's places mounted for the phase
    /// and bound where steps see them, every path of vouch's in the command line, the environment and the
    /// policy turned into the steps' own. The command line, the environment, and what keeps the mounts.
    pub fn wrap(
        &self,
        argv: &[String],
        cwd: &Path,
        env: Vec<(String, String)>,
        mut policy: Policy,
        phase: Phase,
    ) -> (Vec<String>, Vec<(String, String)>, crate::process::Hold) {
        policy.hidden.extend(self.hidden.iter().cloned());
        let Some(views) = &self.views else {
            // The room's git metadata is vouch's: what a step writes there, vouch would read later.
            let git = self.room.join(".git");
            policy.read_only.push((git.clone(), git));
            return (
                self.sandbox.wrap(argv, cwd, &policy),
                env,
                crate::process::Hold::default(),
            );
        };
        let bound = match views.bind(phase) {
            Ok(b) => b,
            Err(e) => {
                let why = format!("vouch could not mount this step's places: {e:#}");
                let argv = vec![
                    "sh".into(),
                    "-c".into(),
                    "echo \"$0\" >&2; exit 125".into(),
                    why,
                ];
                return (argv, env, crate::process::Hold::default());
            }
        };
        let own = |p: &PathBuf| {
            [&self.room, &self.cache, &bound.room, &bound.cache]
                .iter()
                .any(|d| p.starts_with(d))
        };
        policy.writable.retain(|p| !own(p));
        policy.readable.retain(|p| !own(p));
        let inside = views.inside();
        policy.binds.push((bound.room.clone(), inside.room.clone()));
        policy
            .binds
            .push((bound.cache.clone(), inside.cache.clone()));
        policy
            .read_only
            .push((bound.room.join(".git"), inside.room.join(".git")));
        let argv: Vec<String> = argv
            .iter()
            .map(|a| views.text_to_inside(a, Some(&bound)))
            .collect();
        let env = env
            .into_iter()
            .map(|(k, v)| {
                let v = views.text_to_inside(&v, Some(&bound));
                (k, v)
            })
            .collect();
        let cwd = views.to_inside(cwd, Some(&bound));
        (self.sandbox.wrap(&argv, &cwd, &policy), env, bound.hold)
    }

    /// Output paths inside the room (absolute) shown relative to the room, so reports read like a checkout.
    pub fn relativize(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for room in [self.inside_room(), self.room.as_path()] {
            let mut prefix = room.to_string_lossy().into_owned();
            prefix.push('/');
            out = out.replace(&prefix, "");
        }
        out
    }
}

/// The user's repository around its `objects` directory: the git directory and, when that is a checkout's
/// `.git`, the checkout. Hidden from steps wherever the sandbox would show them; the objects alone are put back.
pub fn repository_of(objects: &Path) -> Vec<PathBuf> {
    let Some(git_dir) = objects.parent() else {
        return Vec::new();
    };
    let mut out = vec![git_dir.to_path_buf()];
    if git_dir.file_name().is_some_and(|n| n == ".git") {
        out.extend(git_dir.parent().map(Path::to_path_buf));
    }
    out
}

/// Makes `dir` an empty directory: whatever was there (files, a symbolic link planted in its place) goes.
fn fresh_dir(dir: &Path) {
    match std::fs::symlink_metadata(dir) {
        Ok(m) if m.is_dir() => {
            let _ = std::fs::remove_dir_all(dir);
        }
        Ok(_) => {
            let _ = std::fs::remove_file(dir);
        }
        Err(_) => {}
    }
    if let Err(e) = std::fs::create_dir_all(dir) {
        tracing::warn!("create {}: {e}", dir.display());
    }
}

/// The build of a test step without running its tests (`cargo test --no-run`, `go test -run '^$'`), in the
/// build phase, so that its run and every rerun start from binaries no test has touched. Its failure is
/// left to the run, which builds again and says why.
///
/// Call it before [`run_step`] of a test step; without layers there is nothing to keep apart, and it does
/// nothing. The build layer is sealed after it.
pub async fn build_tests(step: &Step, env: &StepEnv, cancel: &CancellationToken) -> Result<()> {
    if env.views.is_none()
        || step.kind != StepKind::Test
        || not_applicable(step, &env.room).is_some()
    {
        return Ok(());
    }
    let junit = env.junit_path(&step.name, ".build");
    let stem = file_stem(&step.name);
    test_build(step, env, &junit, &stem, cancel).await?;
    seal(env);
    Ok(())
}

async fn test_build(
    step: &Step,
    env: &StepEnv,
    junit: &Path,
    stem: &str,
    cancel: &CancellationToken,
) -> Result<()> {
    let Some(build) = crate::gate::bite::select::build_command(step.runner(), &step.raw_argv())
    else {
        return Ok(());
    };
    if let Some(State::Failed(_)) = env.python.ensure(step, env, cancel).await {
        return Ok(());
    }
    if let Some(Fetched::Failed(_)) = env.deps.ensure(step, env, cancel).await {
        return Ok(());
    }
    let spec = env.spec_in(
        step,
        env.argv_for(&build, junit),
        junit,
        &format!("{stem}.build"),
        step.timeout(),
        true,
        Phase::Build,
    );
    let outcome = process::run_clean_env(&spec, cancel).await?;
    tracing::debug!("{}: test build {:?}", step.name, outcome.exit_code);
    Ok(())
}

/// Seals the role's open build layer before a command that runs on top of it (see [`layered`]); a failure
/// only costs the reuse: the command then builds again in its own layer.
pub fn seal(env: &StepEnv) {
    if let Some(views) = &env.views {
        if let Err(e) = views.seal() {
            tracing::warn!("seal the build layer: {e:#}");
        }
    }
}

/// `text` with `{room}`, `{cache}` and `{junit}` filled in, and `${VAR}` from vouch's own environment.
fn expand_with(text: &str, room: &Path, cache: &Path, junit: &Path) -> String {
    let mut out = text
        .replace("{room}", &room.to_string_lossy())
        .replace("{cache}", &cache.to_string_lossy())
        .replace("{junit}", &junit.to_string_lossy());
    while let Some(start) = out.find("${") {
        let Some(len) = out[start..].find('}') else {
            break;
        };
        let var = &out[start + 2..start + len];
        // A secret of vouch's own never reaches a step (a profile naming one is refused at load).
        let value = if crate::secret::looks_secret(var) {
            String::new()
        } else {
            std::env::var(var).unwrap_or_default()
        };
        out.replace_range(start..start + len + 1, &value);
    }
    out
}

fn file_stem(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// A `cargo clippy` step with `reuse_build` as it runs: a build with clippy-driver as the workspace wrapper,
/// its own target directory given the build's dependency artifacts first (see [`clippy`]). None (the step
/// runs as written) for every other step, and where the reuse would not be safe or possible: the step has no
/// target directory of its own, a workspace wrapper of its own, or no clippy-driver to run.
/// The step comes with the environment it adds, as the report shows it.
fn clippy_on_build(step: &Step, env: &StepEnv, junit: &Path) -> Option<(Step, String)> {
    let from = step.reuse_build.as_ref()?;
    let build = clippy::as_build(&step.raw_argv())?;
    let vars: BTreeMap<String, String> = env.env_for(step, junit).into_iter().collect();
    if vars.contains_key("RUSTC_WORKSPACE_WRAPPER")
        || process::find_program("clippy-driver", None, &env.room).is_none()
    {
        return None;
    }
    // Where vouch sees both target directories (steps may see them elsewhere).
    let in_room = |p: &str| env.room.join(p);
    let target = step
        .env
        .get("CARGO_TARGET_DIR")
        .or_else(|| env.profile_env.get("CARGO_TARGET_DIR"));
    let to = in_room(&target.map_or_else(|| "target".into(), |t| env.expand_for_vouch(t, junit)));
    let from = in_room(&env.expand_for_vouch(from, junit));
    if to == from {
        return None;
    }
    // With layers, the lint's target directory comes from the trusted cache, which base's build (this build
    // among it) seeded: a gate's own view is not written outside a build phase.
    let linked = if env.views.as_ref().is_some_and(|v| !v.is_trusted()) {
        0
    } else {
        places::seed_target(&from, &to)
    };
    tracing::debug!(
        "{}: {linked} dependency artifacts linked from {}",
        step.name,
        from.display()
    );
    let shown_env = build.shown_env();
    let mut step = step.clone();
    step.argv = Some(build.argv);
    step.shell = None;
    step.env.extend(build.env);
    Some((step, shown_env))
}

/// Why a tool is unusable, or None if it is there.
pub async fn missing_tool(
    step: &Step,
    env: &StepEnv,
    cancel: &CancellationToken,
) -> Option<String> {
    if let Some(State::Failed(_)) = env.python.ensure(step, env, cancel).await {
        // The step itself reports it, as its error.
        return None;
    }
    let junit = env.junit_path(&step.name, ".probe");
    let vars = env.env_for(step, &junit);
    let path = vars
        .iter()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.as_str());
    let argv = env.argv_for(&step.raw_argv(), &junit);
    let program = argv.first()?;
    if process::find_program(program, path, &env.room).is_none() {
        return Some(format!("`{program}` is not installed (not on PATH)"));
    }
    if let Some(probe) = &step.probe {
        let argv = env.argv_for(probe, &junit);
        let stem = format!("{}.probe", file_stem(&step.name));
        let spec = env.spec_in(
            step,
            argv.clone(),
            &junit,
            &stem,
            Duration::from_secs(60),
            true,
            Phase::Run,
        );
        match process::run_clean_env(&spec, cancel).await {
            Ok(o) if o.success() => {}
            Ok(o) => {
                return Some(format!(
                    "`{}` does not work here (exit {}): {}",
                    process::quote_argv(&argv),
                    o.exit_code.map_or("signal".into(), |c| c.to_string()),
                    o.tail_lines(3)
                ))
            }
            Err(e) => {
                return Some(format!(
                    "`{}` cannot start: {e:#}",
                    process::quote_argv(&argv)
                ))
            }
        }
    }
    None
}

fn skipped(step: &Step, env: &StepEnv, junit: &Path, note: String) -> StepRun {
    StepRun {
        report: StepReport {
            name: step.name.clone(),
            kind: step.kind,
            status: StepStatus::Skipped,
            duration_ms: 0,
            command: process::quote_argv(&env.argv_for(&step.raw_argv(), junit)),
            exit_code: None,
            log_tail: String::new(),
            log: None,
            note: Some(note),
            tests: None,
            drift: Vec::new(),
        },
        outcome: None,
        results: Vec::new(),
    }
}

/// Whether a step applies to this tree (`if_configured`, `if_exists`, `if_contains`, `unless_contains`), else
/// the skip note.
pub fn not_applicable(step: &Step, room: &Path) -> Option<String> {
    let contains = |[file, text]: &[String; 2]| {
        std::fs::read_to_string(room.join(file)).is_ok_and(|t| t.contains(text.as_str()))
    };
    if let Some(note) = crate::gate::lint::config::not_configured(&step.if_configured, room) {
        return Some(note);
    }
    if !step.if_exists.is_empty() && !step.if_exists.iter().any(|f| room.join(f).exists()) {
        return Some(format!(
            "not configured in this repository (none of {} exists)",
            step.if_exists.join(", ")
        ));
    }
    if !step.if_contains.is_empty() && !step.if_contains.iter().any(contains) {
        let what: Vec<String> = step
            .if_contains
            .iter()
            .map(|[f, t]| format!("{t} in {f}"))
            .collect();
        return Some(format!(
            "not configured in this repository (no {})",
            what.join(", no ")
        ));
    }
    if let Some([f, t]) = step.unless_contains.iter().find(|c| contains(c)) {
        return Some(format!("not used here ({f} names {t})"));
    }
    None
}

/// Runs a step whose tool was already checked. `room` is needed for code generators (drift and restore).
pub async fn run_step(
    step: &Step,
    env: &StepEnv,
    room: &Room,
    objects: &Path,
    cancel: &CancellationToken,
) -> Result<StepRun> {
    let junit = env.junit_path(&step.name, "");
    if let Some(note) = not_applicable(step, &env.room) {
        return Ok(skipped(step, env, &junit, note));
    }
    if let Some(State::Failed(why)) = env.python.ensure(step, env, cancel).await {
        let mut run = skipped(
            step,
            env,
            &junit,
            format!("the environment could not be made, nothing was judged: {why}"),
        );
        run.report.status = StepStatus::Error;
        return Ok(run);
    }
    if let Some(Fetched::Failed(why)) = env.deps.ensure(step, env, cancel).await {
        let mut run = skipped(
            step,
            env,
            &junit,
            format!(
                "the dependencies could not be fetched, nothing was judged: {why} (the steps run offline; \
                 fetch them in a checkout with `cargo fetch`, or fix the network, and gate again)"
            ),
        );
        run.report.status = StepStatus::Error;
        return Ok(run);
    }
    let _ = std::fs::remove_file(&junit);
    let on_build = clippy_on_build(step, env, &junit);
    let step = on_build.as_ref().map_or(step, |(s, _)| s);
    let argv = env.argv_for(&step.raw_argv(), &junit);
    let stem = file_stem(&step.name);
    let mut phase = StepEnv::phase_of(step);
    // A generator writes a layer that is read for drift and thrown away.
    if env.views.is_some() && step.kind == StepKind::Codegen {
        seal(env);
        phase = Phase::Build;
    }
    let mut spec = env.spec_in(
        step,
        argv.clone(),
        &junit,
        &stem,
        step.timeout(),
        merge(step),
        phase,
    );
    let command = match &on_build {
        Some((_, shown_env)) => format!("{shown_env} {}", process::quote_argv(&argv)),
        None => process::quote_argv(&argv),
    };
    let outcome = match process::run_clean_env(&spec, cancel).await {
        Ok(o) => o,
        Err(e) => {
            let mut run = skipped(step, env, &junit, format!("could not start: {e:#}"));
            run.report.status = StepStatus::Error;
            return Ok(run);
        }
    };
    let mut status = if outcome.timed_out {
        StepStatus::Timeout
    } else if outcome.cancelled {
        StepStatus::Error
    } else if outcome.success() {
        StepStatus::Pass
    } else {
        StepStatus::Fail
    };
    let mut note = None;
    if outcome.timed_out {
        note = Some(format!(
            "timed out after {}; its process group was killed",
            human(spec.timeout)
        ));
    }
    if step.fail_if_output && status == StepStatus::Pass {
        let stdout = std::fs::read_to_string(&spec.stdout_path).unwrap_or_default();
        let listed: Vec<&str> = stdout.lines().filter(|l| !l.trim().is_empty()).collect();
        if !listed.is_empty() {
            status = StepStatus::Fail;
            note = Some(format!(
                "it lists {}: {}",
                plural(listed.len(), "file"),
                listed.join(", ")
            ));
        }
    }
    let mut drift = Vec::new();
    if step.kind == StepKind::Codegen && !outcome.timed_out && !outcome.cancelled {
        drift = drift_of(room, &env.room)?;
        if !drift.is_empty() {
            if status == StepStatus::Pass {
                status = StepStatus::Fail;
            }
            note = Some(format!(
                "generated files differ from the commit: {}",
                drift
                    .iter()
                    .map(|d| d.path.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        // The generator's command has ended; its layer can go.
        spec.hold = process::Hold::default();
        match &env.views {
            Some(views) => views.discard()?,
            None => room.restore(objects)?,
        }
    }
    let mut results = Vec::new();
    let mut tests = None;
    if step.kind == StepKind::Test {
        results = parse_results(step, env, &spec, &junit);
        tests = Some(counts(&results));
        if status != StepStatus::Pass && note.is_none() {
            note = missing_module_note(env, &spec, &junit);
        }
    }
    // A cap the command reached is named, whatever else the note says.
    if !outcome.hit.is_empty() {
        let caps = outcome.hit.join("; ");
        note = Some(match note {
            Some(n) => format!("{n}; {caps}"),
            None => caps,
        });
    }
    let report = StepReport {
        name: step.name.clone(),
        kind: step.kind,
        status,
        duration_ms: outcome.duration.as_millis() as u64,
        command,
        exit_code: outcome.exit_code,
        log_tail: env.relativize(&outcome.tail_lines(LOG_TAIL_LINES)),
        log: Some(spec.log_path.clone()),
        note,
        tests,
        drift,
    };
    Ok(StepRun {
        report,
        outcome: Some(outcome),
        results,
    })
}

/// Runs test selections (for reruns and the bite check): each command in turn, results merged. `phase` is
/// Build for a selection's build (its writes kept for its run), Run for the tests themselves.
pub async fn run_selection(
    step: &Step,
    env: &StepEnv,
    commands: &[Vec<String>],
    label: &str,
    timeout: Duration,
    phase: Phase,
    cancel: &CancellationToken,
) -> Result<(Vec<TestResult>, Vec<Outcome>)> {
    if let Some(State::Failed(why)) = env.python.ensure(step, env, cancel).await {
        return Err(VouchError::infra(format!(
            "step `{}` cannot run in the {label} room: {why}",
            step.name
        ))
        .into());
    }
    let mut results = Vec::new();
    let mut outcomes = Vec::new();
    for (i, raw) in commands.iter().enumerate() {
        let suffix = format!(".{label}{i}");
        let junit = env.junit_path(&step.name, &suffix);
        let _ = std::fs::remove_file(&junit);
        let stem = format!("{}{suffix}", file_stem(&step.name));
        if phase == Phase::Run {
            seal(env);
        }
        let spec = env.spec_in(
            step,
            env.argv_for(raw, &junit),
            &junit,
            &stem,
            timeout,
            merge(step),
            phase,
        );
        let outcome = process::run_clean_env(&spec, cancel).await?;
        results.extend(parse_results(step, env, &spec, &junit));
        outcomes.push(outcome);
        if cancel.is_cancelled() {
            break;
        }
    }
    Ok((results, outcomes))
}

/// A test run's hint when its output (stdout, or the collection errors in its JUnit XML) says a module is
/// missing: which module, and whether the project's build makes it or pip installs it.
fn missing_module_note(env: &StepEnv, spec: &Spec, junit: &Path) -> Option<String> {
    let stdout = results::read_output(&spec.stdout_path);
    let junit_text = results::read_lossy(junit).unwrap_or_default();
    let module = pyenv::missing_module(&stdout).or_else(|| pyenv::missing_module(&junit_text))?;
    Some(install_hint_for(&module, env))
}

fn install_hint_for(module: &str, env: &StepEnv) -> String {
    pyenv::missing_module_hint(module, &env.room, env.python.installs())
}

/// The hint for a step whose tool is unusable (`why`, from [`missing_tool`]): the missing Python module when
/// the probe's output names one, else the step's `install` text.
pub fn install_hint(step: &Step, why: &str, env: &StepEnv) -> Option<String> {
    match pyenv::missing_module(why) {
        Some(module) => Some(install_hint_for(&module, env)),
        None => step.install.clone(),
    }
}

/// The per-test results a run of a test step left behind (its output and its JUnit file).
fn parse_results(step: &Step, env: &StepEnv, spec: &Spec, junit: &Path) -> Vec<TestResult> {
    let stdout = parser_input(step, spec);
    let junit_text = results::read_lossy(junit);
    results::parse(
        step.runner(),
        &RunOutput {
            stdout: &stdout,
            junit: junit_text.as_deref(),
            root: &env.room,
        },
    )
}

/// What a runner's parser reads: cargo prints its `Running ...` target lines and build errors on stderr, and go
/// its build errors, so those get the combined log (interleaved line by line); the others get stdout alone.
fn parser_input(step: &Step, spec: &Spec) -> String {
    let path = match step.runner() {
        results::Runner::Go => &spec.log_path,
        _ => &spec.stdout_path,
    };
    results::read_output(path)
}

/// Whether a step's output streams must share one pipe (see [`Spec::merge_output`]).
fn merge(step: &Step) -> bool {
    use results::Runner;
    let parser_wants_stdout = step.kind == StepKind::Test
        && matches!(step.runner(), Runner::Go | Runner::Pytest | Runner::Node);
    !step.fail_if_output && !parser_wants_stdout
}

pub fn counts(results: &[TestResult]) -> TestCounts {
    let mut c = TestCounts::default();
    for r in results {
        match r.status {
            TestStatus::Pass => c.passed += 1,
            TestStatus::Fail => c.failed += 1,
            TestStatus::Skip => c.skipped += 1,
        }
    }
    c
}

/// What a code generator changed in the room, as vouch sees it at `seen` (the room itself, or its view).
fn drift_of(room: &Room, seen: &Path) -> Result<Vec<Drift>> {
    let mut out = Vec::new();
    for (path, change) in room.drift_at(seen)? {
        let old = room.committed_text(&path).unwrap_or_default();
        let new = std::fs::read_to_string(seen.join(&path)).unwrap_or_default();
        let diff = similar::TextDiff::from_lines(&old, &new)
            .unified_diff()
            .context_radius(2)
            .header(&format!("a/{path}"), &format!("b/{path}"))
            .to_string();
        let mut lines: Vec<&str> = diff.lines().collect();
        let cut = lines.len() > DRIFT_DIFF_LINES;
        lines.truncate(DRIFT_DIFF_LINES);
        let mut diff = lines.join("\n");
        if cut {
            diff.push_str("\n[... diff cut ...]");
        }
        out.push(Drift { path, change, diff });
    }
    Ok(out)
}

pub fn human(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 {
        format!("{ms}ms")
    } else if ms < 60_000 {
        format!("{:.1}s", ms as f64 / 1000.0)
    } else {
        format!("{}m{:02}s", ms / 60_000, (ms / 1000) % 60)
    }
}

pub fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}

/// A step that is not run, with the reason.
pub fn run_step_skipped(step: &Step, env: &StepEnv, note: String) -> StepRun {
    let junit = env.junit_path(&step.name, "");
    skipped(step, env, &junit, note)
}
