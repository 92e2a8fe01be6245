//! Python projects that need installing: a virtual environment per room, so that what the project's build
//! generates (a `_version.py` written by setuptools_scm, compiled extensions) exists when its tests import it.
//!
//! Two layers, because the head, base and bite rooms are different checkouts of one repository:
//! - a **shared** venv per repository and dependency set (`<cache>/rooms/<repo key>/python/<hash>`), holding
//!   the build backend, the profile's `requires` (pytest) and the project's declared dependencies and test
//!   dependencies, but never the project itself: it is built once from a copy of the room (with the network,
//!   like any download) and the project is uninstalled again afterwards. The hash covers the files that
//!   declare dependencies (pyproject.toml, setup.cfg, setup.py, requirements files), the `[python]` settings
//!   and the interpreter's version, so a second run with the same set reuses the venv without pip resolving
//!   anything, and a changed set gets a new one (`vouch clean` removes the old ones).
//! - a **room** layer per room (under the role's cache): a venv without pip whose `.pth` adds the
//!   shared site-packages, into which the project is installed editable with `--no-deps --no-build-isolation
//!   --no-index`, offline, from that room. An editable install points at one checkout, so each room has its
//!   own and a room never imports another room's code. The next opening of the same room reuses the layer
//!   while what the install read is unchanged ([`layer`]).
//!
//! Steps that build or test (not format, vet or lint) then run with the layer's `bin` first on PATH. A project
//! without a build system (no `[build-system]` in pyproject.toml, no setup.py) keeps the profile's plain
//! PYTHONPATH behaviour. An install that fails is the step's `error`, with pip's first error line: the
//! environment could not be made, which says nothing about the change.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

mod declared;
mod layer;

use declared::{dependency_files, dependency_hash, requirement_files, wanted};
pub use declared::{has_build_system, DEV_GROUP, TEST_GROUPS};
use tokio_util::sync::CancellationToken;

use crate::gate::profile::{Step, StepKind};
use crate::gate::steps::StepEnv;
use crate::process::{self, Spec};
use crate::sandbox::{self, Policy};

/// The profile's `[python]` table.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PythonSettings {
    /// `auto`: install projects that declare a build system; `never`: PYTHONPATH only.
    #[serde(default)]
    pub install: Install,
    /// The interpreter the venvs are made from.
    #[serde(default = "python3")]
    pub python: String,
    /// Requirements the profile's own steps need in the venv (the test runner).
    #[serde(default)]
    pub requires: Vec<String>,
    /// Whether the venvs see the interpreter's site-packages (tools installed there need no download).
    #[serde(default = "yes")]
    pub system_site_packages: bool,
}

fn python3() -> String {
    "python3".into()
}

fn yes() -> bool {
    true
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Install {
    #[default]
    Auto,
    Never,
}

/// What a room's steps run with once the project is installed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Activation {
    /// The room's layer (`VIRTUAL_ENV`); its `bin` goes first on PATH.
    pub layer: PathBuf,
    /// The shared venv, readable inside the sandbox.
    pub shared: PathBuf,
}

impl Activation {
    /// `PATH` and `VIRTUAL_ENV` over `vars` (the step's environment).
    pub fn apply(&self, vars: &mut BTreeMap<String, String>) {
        let rest = vars
            .get("PATH")
            .cloned()
            .unwrap_or_else(|| std::env::var("PATH").unwrap_or_default());
        let bin = self.layer.join("bin");
        vars.insert("PATH".into(), format!("{}:{rest}", bin.to_string_lossy()));
        vars.insert("VIRTUAL_ENV".into(), self.layer.to_string_lossy().into());
        vars.remove("PYTHONHOME");
    }
}

/// A room's Python environment, made at most once per room opening (the first step that needs it).
#[derive(Clone, Debug, Default)]
pub struct RoomPython {
    settings: Option<PythonSettings>,
    state: Arc<tokio::sync::OnceCell<State>>,
}

/// How preparing a room's environment ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum State {
    /// Not wanted here (no `[python]` table, `install = "never"`, or no build system).
    Plain,
    Ready(Activation),
    /// Installing failed: the reason, with pip's first error line.
    Failed(String),
}

impl RoomPython {
    pub fn new(settings: Option<PythonSettings>) -> RoomPython {
        RoomPython {
            settings,
            state: Arc::default(),
        }
    }

    /// Whether the profile asks for projects to be installed.
    pub fn installs(&self) -> bool {
        self.settings
            .as_ref()
            .is_some_and(|s| s.install == Install::Auto)
    }

    /// The environment, if it was prepared already.
    pub fn activation(&self) -> Option<&Activation> {
        match self.state.get() {
            Some(State::Ready(a)) => Some(a),
            _ => None,
        }
    }

    /// Prepares the room's environment for `step` if it needs one, once; None for steps that do not.
    pub async fn ensure(
        &self,
        step: &Step,
        env: &StepEnv,
        cancel: &CancellationToken,
    ) -> Option<&State> {
        let settings = self.settings.as_ref()?;
        if settings.install == Install::Never
            || matches!(step.kind, StepKind::Format | StepKind::Vet | StepKind::Lint)
        {
            return None;
        }
        Some(
            self.state
                .get_or_init(|| async { prepare(settings, env, cancel).await })
                .await,
        )
    }
}

/// pip's first real error line in `output`: the first `ERROR:` line, else the first line naming an error,
/// else the last non-empty line.
pub fn first_error_line(output: &str) -> String {
    let lines: Vec<&str> = output
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    // pip's own summaries of a failed build (`error: subprocess-exited-with-error`) name no cause.
    let summary = |l: &str| {
        l.strip_prefix("error: ")
            .is_some_and(|rest| rest.chars().all(|c| c.is_ascii_lowercase() || c == '-'))
    };
    let stated = |l: &&&str| l.to_lowercase().starts_with("error") && !summary(l);
    let named = |l: &&&str| l.contains("Error") && !summary(l);
    lines
        .iter()
        .find(|l| l.starts_with("ERROR:"))
        .or_else(|| {
            // A build's own output ends in its exception, just before pip's `[end of output]`.
            let end = lines.iter().position(|l| *l == "[end of output]")?;
            lines[..end].last()
        })
        .or_else(|| lines.iter().find(stated))
        .or_else(|| lines.iter().find(named))
        .or(lines.last())
        .map(|l| l.to_string())
        .unwrap_or_else(|| "no output".into())
}

/// The name of the project pip installed from `source`, from its `--report` JSON.
fn project_name(report: &str, source: &Path) -> Option<String> {
    let json: serde_json::Value = serde_json::from_str(report).ok()?;
    let url = format!("file://{}", source.to_string_lossy());
    json.get("install")?.as_array()?.iter().find_map(|item| {
        let from = item.get("download_info")?.get("url")?.as_str()?;
        (from.trim_end_matches('/') == url.trim_end_matches('/'))
            .then(|| {
                item.get("metadata")?
                    .get("name")?
                    .as_str()
                    .map(str::to_owned)
            })
            .flatten()
    })
}

/// The one process-wide lock around building shared venvs (two rooms of one run may want the same one).
fn build_lock() -> &'static tokio::sync::Mutex<()> {
    static LOCK: OnceLock<tokio::sync::Mutex<()>> = OnceLock::new();
    LOCK.get_or_init(|| tokio::sync::Mutex::new(()))
}

/// The marker a complete shared venv has; its modification time is when it was last used.
const READY: &str = ".vouch-ready";
/// Where shared venvs live, under a repository's room directory.
pub const SHARED_DIR: &str = "python";
const INSTALL_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// Runs commands for one room's environment, sandboxed, logged under the step logs.
struct Runner<'a> {
    env: &'a StepEnv,
    cancel: &'a CancellationToken,
    count: usize,
    /// Variables for the builds (the project's version for setuptools_scm).
    vars: Vec<(String, String)>,
}

impl Runner<'_> {
    /// Runs `argv` in `cwd`; Err is the failure as a sentence with the first error line.
    async fn run(
        &mut self,
        what: &str,
        argv: Vec<String>,
        cwd: &Path,
        policy: Policy,
    ) -> Result<String, String> {
        self.count += 1;
        let stem = format!("python-env.{}", self.count);
        let home = self.env.home();
        let _ = std::fs::create_dir_all(&home);
        let mut vars = vec![
            ("PIP_DISABLE_PIP_VERSION_CHECK".to_string(), "1".to_string()),
            ("PYTHONDONTWRITEBYTECODE".to_string(), "1".to_string()),
        ];
        vars.extend(self.vars.iter().cloned());
        // Setting up the environment is the room's build phase: what it writes is kept for the steps.
        tracing::info!("python env: {}", process::quote_argv(&argv));
        let (argv, env, hold) = self.env.wrap(
            &argv,
            cwd,
            sandbox::child_env(&home, &vars),
            policy,
            crate::gate::layered::Phase::Build,
        );
        let spec = Spec {
            argv,
            cwd: cwd.to_path_buf(),
            env,
            timeout: INSTALL_TIMEOUT,
            log_path: self.env.logs.join(format!("{stem}.log")),
            stdout_path: self.env.logs.join(format!("{stem}.stdout")),
            merge_output: true,
            hold,
            caps: self.env.sandbox.caps(),
        };
        match process::run_clean_env(&spec, self.cancel).await {
            Ok(o) if o.success() => Ok(std::fs::read_to_string(&spec.log_path).unwrap_or_default()),
            Ok(o) if o.timed_out => Err(format!("{what} timed out")),
            Ok(_) => {
                let log = std::fs::read_to_string(&spec.log_path).unwrap_or_default();
                Err(format!("{what} failed: {}", first_error_line(&log)))
            }
            Err(e) => Err(format!("{what} could not start: {e:#}")),
        }
    }
}

/// Makes (or reuses) the shared venv and the room's layer; the room's state.
async fn prepare(settings: &PythonSettings, env: &StepEnv, cancel: &CancellationToken) -> State {
    if !has_build_system(&env.room) {
        return State::Plain;
    }
    match prepare_layers(settings, env, cancel).await {
        Ok(a) => State::Ready(a),
        Err(why) => State::Failed(why),
    }
}

async fn prepare_layers(
    settings: &PythonSettings,
    env: &StepEnv,
    cancel: &CancellationToken,
) -> Result<Activation, String> {
    let mut run = Runner {
        env,
        cancel,
        count: 0,
        vars: scm_version(env).into_iter().collect(),
    };
    let offline = |writable: Vec<PathBuf>, readable: Vec<PathBuf>| Policy {
        writable,
        readable,
        network: false,
        ..Policy::default()
    };
    let mut readable = env.readable.clone();
    readable.push(env.room.clone());
    let python = settings.python.clone();
    let asked = run
        .run(
            "asking the interpreter its version and environment",
            vec![python.clone(), "-c".into(), ASK_INTERPRETER.into()],
            &env.room,
            offline(vec![env.cache.clone()], readable.clone()),
        )
        .await?;
    let (version, active) = interpreter_facts(&asked);
    let files = dependency_files(&env.room);
    // The active environment is part of what the shared venv holds: another one makes another venv.
    let key = format!("{version}\n{}", active.join("\n"));
    let hash = dependency_hash(&env.room, &files, settings, &key);
    let repo_dir = env.shared.clone();
    let shared = repo_dir.join(SHARED_DIR).join(&hash);
    let built = {
        let _guard = build_lock().lock().await;
        let missing = !shared.join(READY).is_file();
        if missing {
            build_shared(&mut run, settings, &shared, &files, &active).await?;
        }
        missing
    };
    touch(&shared.join(READY));
    // Named by the room as steps see it, the same for every gate of the repository.
    let layer = env
        .cache
        .join("python-room")
        .join(short_hash(env.inside_room()));
    let layer_key = layer::key(&env.room, &shared, run.vars.first());
    if !built && layer::reuse(&layer, &layer_key, &env.room) {
        tracing::info!("python env: reusing {}", layer.display());
        return Ok(Activation { layer, shared });
    }
    let _ = std::fs::remove_dir_all(&layer);
    let mut venv = vec![
        python.clone(),
        "-m".into(),
        "venv".into(),
        "--without-pip".into(),
    ];
    if settings.system_site_packages {
        venv.push("--system-site-packages".into());
    }
    venv.push(layer.to_string_lossy().into());
    run.run(
        "making the room's virtual environment",
        venv,
        &env.room,
        offline(vec![env.cache.clone()], readable.clone()),
    )
    .await?;
    let (Some(layer_sp), Some(shared_sp)) = (site_packages(&layer), site_packages(&shared)) else {
        return Err("a virtual environment has no lib/python*/site-packages".into());
    };
    let pth = format!(
        "import site; site.addsitedir({:?})\n",
        shared_sp.to_string_lossy()
    );
    std::fs::write(layer_sp.join("_vouch_shared.pth"), pth)
        .map_err(|e| format!("write the room's .pth: {e}"))?;
    readable.push(shared.clone());
    let before = layer::files(&env.room);
    run.run(
        "installing the project (editable, from this room)",
        vec![
            layer.join("bin/python").to_string_lossy().into(),
            "-m".into(),
            "pip".into(),
            "install".into(),
            "--no-deps".into(),
            "--no-build-isolation".into(),
            "--no-index".into(),
            "-e".into(),
            env.room.to_string_lossy().into(),
        ],
        &env.room,
        offline(vec![env.room.clone(), env.cache.clone()], readable),
    )
    .await?;
    layer::mark(&layer, &layer_key, &env.room, &before);
    Ok(Activation { layer, shared })
}

/// Builds the shared venv at `dir`: the build backend and the profile's requirements, then the project with
/// its test dependencies from a copy of the room (pip writes build output into a local source tree), then
/// the project is uninstalled again. With the network; marked ready last.
async fn build_shared(
    run: &mut Runner<'_>,
    settings: &PythonSettings,
    dir: &Path,
    files: &[String],
    active: &[String],
) -> Result<(), String> {
    let env = run.env;
    let _ = std::fs::remove_dir_all(dir);
    let parent = dir.parent().unwrap_or(dir).to_path_buf();
    std::fs::create_dir_all(&parent).map_err(|e| format!("create {}: {e}", parent.display()))?;
    let source = parent.join(format!(
        "{}.src",
        dir.file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default()
    ));
    let _ = std::fs::remove_dir_all(&source);
    copy_tree(&env.room, &source).map_err(|e| format!("copy the room to build it: {e}"))?;
    let mut readable = env.readable.clone();
    readable.push(env.room.clone());
    let online = Policy {
        writable: vec![parent.clone(), env.cache.clone()],
        readable,
        network: true,
        ..Policy::default()
    };
    let result = async {
        let mut venv = vec![settings.python.clone(), "-m".into(), "venv".into()];
        if settings.system_site_packages {
            venv.push("--system-site-packages".into());
        }
        venv.push(dir.to_string_lossy().into());
        run.run(
            "making the shared virtual environment",
            venv,
            &source,
            online.clone(),
        )
        .await?;
        if settings.system_site_packages && !active.is_empty() {
            // `--system-site-packages` from inside a venv means the base interpreter's packages, not the
            // venv's: the venv the user's `python3` belongs to is added by hand, so that what is installed
            // there (a pinned pytest) is used, and pip installs only what is missing.
            let sp = site_packages(dir)
                .ok_or_else(|| "the shared virtual environment has no site-packages".to_string())?;
            std::fs::write(sp.join(ACTIVE_PTH), format!("{}\n", active.join("\n")))
                .map_err(|e| format!("write {ACTIVE_PTH}: {e}"))?;
        }
        let py = dir.join("bin/python").to_string_lossy().into_owned();
        let pip = |args: &[&str]| -> Vec<String> {
            let mut v = vec![py.clone(), "-m".into(), "pip".into()];
            v.extend(args.iter().map(|a| a.to_string()));
            v
        };
        let pyproject = std::fs::read_to_string(source.join("pyproject.toml")).ok();
        let wanted = wanted(pyproject.as_deref());
        let mut first = wanted.build.clone();
        if first.is_empty() {
            first.push("setuptools".into());
        }
        // setuptools before 70.1 builds wheels (editable ones too) only with the `wheel` package.
        let named = |name: &str| first.iter().any(|r| r.trim_start().starts_with(name));
        if named("setuptools") && !named("wheel") {
            first.push("wheel".into());
        }
        first.extend(settings.requires.iter().cloned());
        let mut argv = pip(&["install"]);
        argv.extend(first);
        run.run(
            "installing the build backend",
            argv,
            &source,
            online.clone(),
        )
        .await?;
        let report = parent.join(format!(
            "{}.report.json",
            dir.file_name()
                .map(|n| n.to_string_lossy())
                .unwrap_or_default()
        ));
        let mut argv = pip(&["install", "--no-build-isolation", "--report"]);
        argv.push(report.to_string_lossy().into());
        let project = if wanted.extras.is_empty() {
            source.to_string_lossy().into_owned()
        } else {
            format!("{}[{}]", source.to_string_lossy(), wanted.extras.join(","))
        };
        argv.push(project);
        for f in requirement_files(files) {
            argv.push("-r".into());
            argv.push(source.join(f).to_string_lossy().into());
        }
        argv.extend(wanted.groups.iter().cloned());
        run.run(
            "installing the project's dependencies",
            argv,
            &source,
            online.clone(),
        )
        .await?;
        let text = std::fs::read_to_string(&report).unwrap_or_default();
        if let Some(name) = project_name(&text, &source) {
            run.run(
                "removing the project from the shared environment",
                pip(&["uninstall", "-y", &name]),
                &source,
                online.clone(),
            )
            .await?;
        }
        let _ = std::fs::remove_file(&report);
        std::fs::write(dir.join(READY), "").map_err(|e| format!("mark the venv ready: {e}"))
    }
    .await;
    let _ = std::fs::remove_dir_all(&source);
    if result.is_err() {
        let _ = std::fs::remove_dir_all(dir);
    }
    result
}

/// The version setuptools_scm would compute in the user's repository, for the room's commit: a room is a
/// repository of its own without tags, where setuptools_scm would say `0.1.dev<N>` (and a project that checks
/// its own version, like pytest's `minversion`, breaks). From the nearest tag: `1.2.3` on it, else
/// `1.2.3+<N>.g<sha>` (a local version: valid after any tag, `9.2.0.dev0` too). Set for the project only (`SETUPTOOLS_SCM_PRETEND_VERSION_FOR_<NAME>`) when its
/// name is static, else for every build of the step.
fn scm_version(env: &StepEnv) -> Option<(String, String)> {
    let room = git2::Repository::open(&env.room).ok()?;
    let commit = room.head().ok()?.peel_to_commit().ok()?.id();
    let user = env.readable.iter().find_map(|objects| {
        objects
            .parent()
            .and_then(|git_dir| git2::Repository::open(git_dir).ok())
    })?;
    let described = user
        .find_commit(commit)
        .ok()?
        .as_object()
        .describe(git2::DescribeOptions::new().describe_tags())
        .ok()?
        .format(Some(git2::DescribeFormatOptions::new().abbreviated_size(7)))
        .ok()?;
    let version = pep440(&described)?;
    let name = std::fs::read_to_string(env.room.join("pyproject.toml"))
        .ok()
        .and_then(|t| t.parse::<toml::Table>().ok())
        .and_then(|t| t.get("project")?.get("name")?.as_str().map(str::to_owned));
    let var = match name {
        Some(n) => format!(
            "SETUPTOOLS_SCM_PRETEND_VERSION_FOR_{}",
            n.to_uppercase().replace(['-', '.'], "_")
        ),
        None => "SETUPTOOLS_SCM_PRETEND_VERSION".into(),
    };
    Some((var, version))
}

/// `git describe --tags` output as a PEP 440 version: `v1.2.3` is `1.2.3`, `1.2.3-4-gabcdef0` is
/// `1.2.3+4.gabcdef0`; None when the tag is no version.
fn pep440(described: &str) -> Option<String> {
    let text = described.trim().trim_start_matches('v');
    let (tag, suffix) = match text.rsplitn(3, '-').collect::<Vec<_>>()[..] {
        [sha, n, tag] if sha.starts_with('g') && n.chars().all(|c| c.is_ascii_digit()) => {
            (tag, Some((n, sha)))
        }
        _ => (text, None),
    };
    let ok = tag.chars().next().is_some_and(|c| c.is_ascii_digit())
        && tag.chars().all(|c| c.is_ascii_alphanumeric() || c == '.');
    if !ok {
        return None;
    }
    Some(match suffix {
        Some((n, sha)) => format!("{tag}+{n}.{sha}"),
        None => tag.to_owned(),
    })
}

fn short_hash(path: &Path) -> String {
    let h = Sha256::digest(path.to_string_lossy().as_bytes());
    hex::encode(&h[..6])
}

fn touch(path: &Path) {
    if let Ok(f) = std::fs::OpenOptions::new().append(true).open(path) {
        let _ = f.set_modified(std::time::SystemTime::now());
    }
}

/// `lib/python*/site-packages` of a venv.
/// Prints the interpreter's version, then, when it runs inside a virtual environment, that environment's
/// site-packages directories, one per line after `site:`.
const ASK_INTERPRETER: &str = "import site, sys\nprint(sys.version)\nif sys.prefix != sys.base_prefix:\n    for p in site.getsitepackages():\n        print('site:' + p)\n";

/// The `.pth` file of the shared venv that adds the active environment's site-packages.
const ACTIVE_PTH: &str = "_vouch_active_env.pth";

/// The version line and the active environment's site-packages from [`ASK_INTERPRETER`]'s output.
fn interpreter_facts(out: &str) -> (String, Vec<String>) {
    let mut version = Vec::new();
    let mut active = Vec::new();
    for line in out.lines().map(str::trim).filter(|l| !l.is_empty()) {
        match line.strip_prefix("site:") {
            Some(dir) if Path::new(dir).is_absolute() => active.push(dir.to_string()),
            Some(_) => {}
            None => version.push(line),
        }
    }
    (version.join(" "), active)
}

fn site_packages(venv: &Path) -> Option<PathBuf> {
    std::fs::read_dir(venv.join("lib"))
        .ok()?
        .flatten()
        .map(|e| e.path().join("site-packages"))
        .find(|p| p.is_dir())
}

/// Copies a directory tree (symbolic links as links).
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        let kind = entry.file_type()?;
        if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(&src)?, &dst)?;
        } else if kind.is_dir() {
            copy_tree(&src, &dst)?;
        } else {
            std::fs::copy(&src, &dst)?;
        }
    }
    Ok(())
}

/// The shared venvs `vouch clean` removes under `rooms` (`<cache>/rooms`): in each repository's directory,
/// every one but the most recently used, and any left half-built.
pub fn stale_envs(rooms: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(repos) = std::fs::read_dir(rooms) else {
        return out;
    };
    for repo in repos.flatten() {
        let Ok(envs) = std::fs::read_dir(repo.path().join(SHARED_DIR)) else {
            continue;
        };
        let mut ready: Vec<(std::time::SystemTime, PathBuf)> = Vec::new();
        for e in envs.flatten() {
            let p = e.path();
            match std::fs::metadata(p.join(READY)).and_then(|m| m.modified()) {
                Ok(t) => ready.push((t, p)),
                Err(_) => out.push(p),
            }
        }
        ready.sort();
        ready.pop();
        out.extend(ready.into_iter().map(|(_, p)| p));
    }
    out.sort();
    out
}

/// The module a Python traceback says is missing: `ModuleNotFoundError: No module named 'X'` (or pytest's
/// `E   ModuleNotFoundError: ...`, or the bare `No module named X` of `python -m`).
pub fn missing_module(output: &str) -> Option<String> {
    let at = output.find("No module named ")?;
    let rest = &output[at + "No module named ".len()..];
    let rest = rest.trim_start_matches(['\'', '"']);
    let name: String = rest
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '.')
        .collect();
    (!name.is_empty()).then_some(name)
}

/// The hint for a missing module `module`: generated or installed by the project's build when its top-level
/// package is the project's own (a directory or module at the root or under `src/`), else `pip install` it.
pub fn missing_module_hint(module: &str, room: &Path, installs: bool) -> String {
    let top = module.split('.').next().unwrap_or(module);
    let own = ["", "src/"].iter().any(|base| {
        room.join(format!("{base}{top}")).is_dir() || room.join(format!("{base}{top}.py")).is_file()
    });
    if own {
        let how = if installs {
            "the gate installs projects that declare a build system; this one declares none, so add a [build-system] table to pyproject.toml"
        } else {
            "set `install = \"auto\"` in the profile's [python] table so the gate installs the project"
        };
        format!("{module} is missing: it is generated or installed by the project's build; {how}")
    } else {
        format!("{module} is missing: pip install {top}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_active_environment_is_read_from_the_interpreters_answer() {
        let out = "3.11.7 (main, Jan 1 2026) [GCC 12.2.0]\nsite:/venvs/a/lib/python3.11/site-packages\nsite:relative\n";
        let (version, active) = interpreter_facts(out);
        assert_eq!(version, "3.11.7 (main, Jan 1 2026) [GCC 12.2.0]");
        assert_eq!(
            active,
            vec!["/venvs/a/lib/python3.11/site-packages".to_string()]
        );
        assert_eq!(
            interpreter_facts("3.12.1\n"),
            ("3.12.1".to_string(), Vec::new())
        );
    }

    #[test]
    fn a_described_commit_is_a_pep440_version() {
        assert_eq!(pep440("9.0.2").as_deref(), Some("9.0.2"));
        assert_eq!(pep440("v1.2.3").as_deref(), Some("1.2.3"));
        assert_eq!(
            pep440("9.0.2-12-gabcdef0").as_deref(),
            Some("9.0.2+12.gabcdef0")
        );
        assert_eq!(pep440("release-candidate"), None);
    }

    #[test]
    fn pips_first_error_line_is_its_error_not_the_noise_before() {
        let log = "Collecting nosuchpkg\n  WARNING: Retrying (error)\nERROR: Could not find a version that satisfies the requirement nosuchpkg (from versions: none)\nERROR: No matching distribution found for nosuchpkg\n";
        assert_eq!(
            first_error_line(log),
            "ERROR: Could not find a version that satisfies the requirement nosuchpkg (from versions: none)"
        );
        let build = "Preparing metadata (pyproject.toml): finished with status 'error'\n  error: subprocess-exited-with-error\n  \u{d7} Preparing metadata did not run successfully.\n      running dist_info\n      error: invalid command 'bdist_wheel'\n      [end of output]\nerror: metadata-generation-failed\n";
        assert_eq!(
            first_error_line(build),
            "error: invalid command 'bdist_wheel'"
        );
        assert_eq!(first_error_line("a\nb\n"), "b");
        let raised = "  \u{2570}\u{2500}> [3 lines of output]\n      File \"x.py\"\n      packaging.version.InvalidVersion: Invalid version: '1.0.dev0.post3'\n      [end of output]\nerror: metadata-generation-failed\nhint: See above for details.\n";
        assert_eq!(
            first_error_line(raised),
            "packaging.version.InvalidVersion: Invalid version: '1.0.dev0.post3'"
        );
    }

    #[test]
    fn the_project_is_found_in_pips_report_by_its_source() {
        let report = r#"{"install": [
            {"download_info": {"url": "https://x/pluggy.whl"}, "metadata": {"name": "pluggy"}},
            {"download_info": {"url": "file:///c/python/abc.src"}, "metadata": {"name": "verlib"}}]}"#;
        assert_eq!(
            project_name(report, Path::new("/c/python/abc.src")).as_deref(),
            Some("verlib")
        );
        assert_eq!(project_name(report, Path::new("/elsewhere")), None);
    }

    #[test]
    fn the_missing_module_is_read_from_a_traceback_and_named_in_the_hint() {
        let out = "ImportError while loading conftest\nE   ModuleNotFoundError: No module named '_pytest._version'\n";
        assert_eq!(missing_module(out).as_deref(), Some("_pytest._version"));
        assert_eq!(missing_module("nothing").as_deref(), None);
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src/_pytest")).unwrap();
        assert_eq!(
            missing_module_hint("_pytest._version", dir.path(), false),
            "_pytest._version is missing: it is generated or installed by the project's build; set `install = \"auto\"` in the profile's [python] table so the gate installs the project"
        );
        assert_eq!(
            missing_module_hint("yaml.loader", dir.path(), true),
            "yaml.loader is missing: pip install yaml"
        );
    }

    #[test]
    fn clean_keeps_the_most_recently_used_shared_env_of_each_repository() {
        let rooms = tempfile::tempdir().unwrap();
        let envs = rooms.path().join("key").join(SHARED_DIR);
        for (name, age) in [("old", 100), ("new", 1)] {
            std::fs::create_dir_all(envs.join(name)).unwrap();
            let f = std::fs::File::create(envs.join(name).join(READY)).unwrap();
            f.set_modified(std::time::SystemTime::now() - Duration::from_secs(age))
                .unwrap();
        }
        std::fs::create_dir_all(envs.join("half-built")).unwrap();
        assert_eq!(
            stale_envs(rooms.path()),
            vec![envs.join("half-built"), envs.join("old")]
        );
    }
}
