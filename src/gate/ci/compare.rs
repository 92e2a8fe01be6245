//! Each CI command compared with the profile's steps: what CI runs that the gate does not.
//!
//! A command is first given its family (a cargo test, a cargo build, clippy, `go test`, pytest, an npm
//! script, ...) and matched with the profile's steps of the same family; then the flags that widen what is
//! checked (features, workspace, release, `-D warnings`, `-race`, pytest paths) are looked up in the gate's
//! step. A command of a known family with no step at all is a missing check; a command vouch cannot see
//! into (`make test`, `ci/test.sh`, `$BUILD_CMD build`) is reported as not compared; everything else
//! (installs, echo, git) is not a check and is ignored.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::shell::{self, ShellCommand};
use super::workflow::{Job, JobStep};
use super::{Difference, Kind, Runtime};
use crate::gate::profile::Profile;

/// What the comparison needs to know of the repository besides its CI.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RepoFacts {
    /// The root `Cargo.toml` has `[workspace]` and no `[package]`: plain `cargo test` covers every member.
    pub virtual_workspace: bool,
    /// The root package's name, if the root manifest has one.
    pub root_package: Option<String>,
    /// `rust-toolchain(.toml)`: the file and its channel.
    pub toolchain_file: Option<(String, String)>,
}

impl RepoFacts {
    pub fn read(root: &Path) -> RepoFacts {
        let manifest = std::fs::read_to_string(root.join("Cargo.toml"))
            .ok()
            .and_then(|t| t.parse::<toml::Table>().ok());
        let root_package = manifest
            .as_ref()
            .and_then(|m| m.get("package")?.get("name")?.as_str().map(str::to_owned));
        let virtual_workspace = manifest
            .as_ref()
            .is_some_and(|m| m.contains_key("workspace") && !m.contains_key("package"));
        let toolchain_file = ["rust-toolchain.toml", "rust-toolchain"]
            .iter()
            .find_map(|f| {
                let text = std::fs::read_to_string(root.join(f)).ok()?;
                let channel = match text.parse::<toml::Table>() {
                    Ok(t) => t.get("toolchain")?.get("channel")?.as_str()?.to_owned(),
                    Err(_) => text.trim().to_owned(),
                };
                Some(((*f).to_owned(), channel))
            });
        RepoFacts {
            virtual_workspace,
            root_package,
            toolchain_file,
        }
    }
}

/// The comparison's result.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    pub commands: usize,
    pub compared: usize,
    pub differences: Vec<Difference>,
}

/// A profile step as the comparison sees it: its first command's words and what fails it.
struct GateStep {
    name: String,
    argv: Vec<String>,
    env: BTreeMap<String, String>,
    fail_on_warnings: bool,
}

fn gate_steps(profile: &Profile) -> Vec<GateStep> {
    profile
        .steps
        .iter()
        .filter_map(|s| {
            let argv = match (&s.argv, &s.shell) {
                (Some(a), _) => a.clone(),
                (None, Some(sh)) => {
                    shell::commands(sh, &BTreeMap::new())
                        .into_iter()
                        .next()?
                        .argv
                }
                (None, None) => return None,
            };
            let mut env = profile.env.clone();
            env.extend(s.env.clone());
            Some(GateStep {
                name: s.name.clone(),
                argv: unwrap_runner(&argv).to_vec(),
                env,
                fail_on_warnings: s.fail_on_warnings,
            })
        })
        .collect()
}

/// `python -m X ...`, `uv run X ...`, `npx X ...` and the like as `X ...`.
fn unwrap_runner(argv: &[String]) -> &[String] {
    let Some(first) = argv.first() else {
        return argv;
    };
    let prog = program(first);
    let is_python = prog == "py" || prog.starts_with("python");
    if is_python && argv.get(1).is_some_and(|a| a == "-m") {
        return unwrap_runner(&argv[2..]);
    }
    let runs = ["uv", "poetry", "pipenv", "hatch", "pdm", "rye"].contains(&prog.as_str())
        && argv.get(1).is_some_and(|a| a == "run");
    if runs || prog == "npx" || prog == "uvx" || prog == "pipx" {
        let skip = if runs { 2 } else { 1 };
        let rest = &argv[skip.min(argv.len())..];
        let start = rest
            .iter()
            .position(|a| !a.starts_with('-'))
            .unwrap_or(rest.len());
        let rest = &rest[start..];
        if prog == "pipx" {
            return rest.get(1..).map(unwrap_runner).unwrap_or(rest);
        }
        return rest;
    }
    argv
}

/// The program's name without its directory.
fn program(word: &str) -> String {
    word.rsplit('/').next().unwrap_or(word).to_owned()
}

/// One CI command in its place.
struct Seen<'a> {
    job: &'a Job,
    cmd: &'a ShellCommand,
    toolchain: Option<&'a str>,
}

/// What the command is, for the counting: a check compared, or not a check.
enum Family {
    Compared,
    Ignored,
}

struct Collector<'a> {
    steps: &'a [GateStep],
    facts: &'a RepoFacts,
    found: BTreeMap<(String, String, Kind, Option<String>), Difference>,
    /// Rust toolchains per (file, job) of the jobs that run compared cargo commands.
    toolchains: BTreeMap<(String, String), BTreeSet<String>>,
}

/// Compares every command of `jobs` with `profile`.
pub fn compare(jobs: &[Job], profile: &Profile, facts: &RepoFacts) -> Outcome {
    let steps = gate_steps(profile);
    let mut c = Collector {
        steps: &steps,
        facts,
        found: BTreeMap::new(),
        toolchains: BTreeMap::new(),
    };
    let mut commands = BTreeSet::new();
    let mut compared = BTreeSet::new();
    let mut versions: BTreeMap<(String, String, Runtime), BTreeSet<String>> = BTreeMap::new();
    let mut checking_jobs = BTreeSet::new();
    for job in jobs {
        let mut toolchain: Option<String> = None;
        for step in &job.steps {
            let cmds: Vec<ShellCommand> = match step {
                JobStep::Run { script, env, dir } => shell::commands(script, env)
                    .into_iter()
                    .map(|mut cmd| {
                        let mut all = env.clone();
                        all.extend(cmd.env);
                        cmd.env = all;
                        cmd.dir = join_dir(dir.as_deref(), cmd.dir.as_deref());
                        cmd
                    })
                    .collect(),
                JobStep::Action { uses, with } => {
                    let (name, reference) = uses.split_once('@').unwrap_or((uses, ""));
                    let setup =
                        |runtime, key: &str, versions: &mut BTreeMap<_, BTreeSet<String>>| {
                            if let Some(v) = with.get(key) {
                                versions
                                    .entry((job.file.clone(), job.name.clone(), runtime))
                                    .or_default()
                                    .extend(v.split_whitespace().map(str::to_owned));
                            }
                        };
                    match name {
                        "dtolnay/rust-toolchain" => {
                            toolchain = with.get("toolchain").cloned().or_else(|| {
                                (!["master", "v1", ""].contains(&reference))
                                    .then(|| reference.to_owned())
                            });
                        }
                        "actions-rs/toolchain" => toolchain = with.get("toolchain").cloned(),
                        "actions/setup-python" => {
                            setup(Runtime::Python, "python-version", &mut versions)
                        }
                        "actions/setup-go" => setup(Runtime::Go, "go-version", &mut versions),
                        "actions/setup-node" => setup(Runtime::Node, "node-version", &mut versions),
                        _ => {}
                    }
                    action_commands(name, with)
                }
            };
            for cmd in &cmds {
                if cmd.argv.first().map(String::as_str) == Some("rustup") {
                    if let Some(t) = rustup_default(&cmd.argv) {
                        toolchain = Some(t);
                    }
                }
                let text = cmd.text();
                commands.insert((job.file.clone(), job.name.clone(), text.clone()));
                let seen = Seen {
                    job,
                    cmd,
                    toolchain: toolchain.as_deref(),
                };
                if let Family::Compared = c.command(&seen) {
                    compared.insert((job.file.clone(), job.name.clone(), text));
                    checking_jobs.insert((job.file.clone(), job.name.clone()));
                }
            }
        }
    }
    for ((file, job, runtime), vs) in versions {
        if vs.len() >= 2 && checking_jobs.contains(&(file.clone(), job.clone())) {
            let kind = Kind::Versions {
                runtime,
                versions: vs.into_iter().collect(),
            };
            c.add(&file, &job, None, None, kind);
        }
    }
    for ((file, job), ts) in std::mem::take(&mut c.toolchains) {
        let kind = Kind::Toolchains {
            toolchains: ts.into_iter().collect(),
        };
        c.add(&file, &job, None, None, kind);
    }
    if let Some((file, channel)) = &facts.toolchain_file {
        if !is_stable(channel) && !jobs.is_empty() {
            let kind = Kind::ToolchainFile {
                channel: channel.clone(),
            };
            c.add(file, "-", None, None, kind);
        }
    }
    Outcome {
        commands: commands.len(),
        compared: compared.len(),
        differences: c.found.into_values().collect(),
    }
}

fn join_dir(step: Option<&str>, cd: Option<&str>) -> Option<String> {
    let parts: Vec<&str> = [step, cd]
        .into_iter()
        .flatten()
        .filter(|d| !d.is_empty() && *d != ".")
        .collect();
    (!parts.is_empty()).then(|| parts.join("/"))
}

/// `rustup default X`, `rustup override set X`: the toolchain later commands use.
fn rustup_default(argv: &[String]) -> Option<String> {
    match argv.get(1).map(String::as_str) {
        Some("default") => argv.get(2).cloned(),
        Some("override") if argv.get(2).is_some_and(|a| a == "set") => argv.get(3).cloned(),
        _ => None,
    }
}

fn is_stable(toolchain: &str) -> bool {
    toolchain.is_empty() || toolchain == "stable" || toolchain.starts_with("stable-")
}

/// The commands an action runs, where the action is a thin wrapper around one.
fn action_commands(name: &str, with: &BTreeMap<String, String>) -> Vec<ShellCommand> {
    let args = |key: &str| {
        shell_words::split(with.get(key).map(String::as_str).unwrap_or_default())
            .unwrap_or_default()
    };
    let argv: Vec<String> = match name {
        "actions-rs/clippy-check" => ["cargo".to_owned(), "clippy".to_owned()]
            .into_iter()
            .chain(args("args"))
            .collect(),
        "actions-rs/cargo" => match with.get("command") {
            Some(c) => ["cargo".to_owned(), c.clone()]
                .into_iter()
                .chain(args("args"))
                .collect(),
            None => return Vec::new(),
        },
        "golangci/golangci-lint-action" => ["golangci-lint".to_owned(), "run".to_owned()]
            .into_iter()
            .chain(args("args"))
            .collect(),
        _ => return Vec::new(),
    };
    vec![ShellCommand {
        env: BTreeMap::new(),
        argv,
        dir: with.get("working-directory").cloned(),
    }]
}

/// pytest options that change how results look, not which tests run.
const PYTEST_NOISE: &[&str] = &[
    "-v",
    "-vv",
    "-vvv",
    "-q",
    "-qq",
    "-s",
    "-x",
    "-l",
    "--verbose",
    "--quiet",
    "--showlocals",
    "--cov",
    "--cov-report",
    "--cov-append",
    "--cov-branch",
    "--cov-config",
    "--color",
    "--tb",
    "--junitxml",
    "--junit-xml",
    "--durations",
    "--maxfail",
    "--numprocesses",
    "--exitfirst",
    "--no-header",
    "-ra",
    "-rA",
    "-rs",
    "-rxXs",
    "--strict-markers",
];
/// Options among those that take their value as the next word.
const PYTEST_NOISE_VALUE: &[&str] = &[
    "-n",
    "-p",
    "--maxfail",
    "--durations",
    "--tb",
    "--color",
    "--cov-report",
];

fn pytest_noise(word: &str) -> bool {
    PYTEST_NOISE
        .iter()
        .any(|n| word == *n || (n.starts_with("--") && word.starts_with(&format!("{n}="))))
        || (word.starts_with("-n") && word.len() > 2 && !word.starts_with("--"))
        || word.starts_with("--cov=")
}

/// Tools that are checks of their own, with the words that name them in a profile step.
fn tool_key(argv: &[String]) -> Option<(&'static str, &'static [&'static str])> {
    let prog = program(argv.first()?);
    let has = |w: &str| argv.iter().any(|a| a == w);
    let sub = argv.get(1).map(String::as_str);
    Some(match prog.as_str() {
        "mypy" | "dmypy" => ("mypy", &["mypy"]),
        "pyright" => ("pyright", &["pyright"]),
        "flake8" => ("flake8", &["flake8"]),
        "pylint" => ("pylint", &["pylint"]),
        "black" if has("--check") || has("--diff") => ("black", &["black"]),
        "isort" if has("--check") || has("--check-only") || has("--diff") => ("isort", &["isort"]),
        "ruff" if sub == Some("format") && (has("--check") || has("--diff")) => {
            ("ruff format", &["ruff", "format"])
        }
        "ruff" if sub != Some("format") => ("ruff check", &["ruff", "check"]),
        "staticcheck" => ("staticcheck", &["staticcheck"]),
        "golangci-lint" => ("golangci-lint", &["golangci-lint"]),
        "gosec" => ("gosec", &["gosec"]),
        "govulncheck" => ("govulncheck", &["govulncheck"]),
        "eslint" => ("eslint", &["eslint"]),
        "prettier" if has("--check") || has("-c") => ("prettier", &["prettier"]),
        "tsc" => ("tsc", &["tsc"]),
        "gofmt" if has("-l") || has("-d") => ("gofmt", &["gofmt"]),
        _ => return None,
    })
}

/// Programs whose work vouch cannot see into.
const OPAQUE: &[&str] = &[
    "make",
    "gmake",
    "just",
    "task",
    "mage",
    "pre-commit",
    "nix",
    "bazel",
    "earthly",
];

impl<'a> Collector<'a> {
    fn add(
        &mut self,
        file: &str,
        job: &str,
        command: Option<String>,
        gate_step: Option<String>,
        kind: Kind,
    ) {
        // Each opaque command is its own difference; one run by a variable (`$BUILD_CMD build ...`) is one
        // per program and subcommand, whatever the matrix passes it.
        let own = matches!(kind, Kind::NotCompared)
            .then(|| command.clone())
            .flatten()
            .map(|c| match c.starts_with('$') {
                true => c.split(' ').take(2).collect::<Vec<_>>().join(" "),
                false => c,
            });
        // Features seen in several commands of a job are one difference: their union.
        if let Kind::Features { features } = &kind {
            let key = (
                file.to_owned(),
                job.to_owned(),
                Kind::Features {
                    features: Vec::new(),
                },
                None,
            );
            let entry = self.found.entry(key).or_insert(Difference {
                file: file.to_owned(),
                job: job.to_owned(),
                command: command.clone(),
                gate_step: gate_step.clone(),
                kind: Kind::Features {
                    features: Vec::new(),
                },
            });
            if let Kind::Features { features: all } = &mut entry.kind {
                let merged: BTreeSet<String> = all.iter().chain(features).cloned().collect();
                *all = merged.into_iter().collect();
            }
            return;
        }
        self.found
            .entry((file.to_owned(), job.to_owned(), kind.clone(), own))
            .or_insert(Difference {
                file: file.to_owned(),
                job: job.to_owned(),
                command,
                gate_step,
                kind,
            });
    }

    fn report(&mut self, seen: &Seen, step: Option<&GateStep>, kind: Kind) {
        let text = seen.cmd.text();
        self.add(
            &seen.job.file,
            &seen.job.name,
            Some(text),
            step.map(|s| s.name.clone()),
            kind,
        );
    }

    /// The profile steps running `prog` with a subcommand among `subs` (any subcommand when empty).
    fn steps_for(&self, prog: &str, subs: &[&str]) -> Vec<&'a GateStep> {
        self.steps
            .iter()
            .filter(|s| s.argv.first().is_some_and(|p| program(p) == prog))
            .filter(|s| {
                let sub = s
                    .argv
                    .iter()
                    .skip(1)
                    .find(|a| !a.starts_with('+') && !a.starts_with('-'));
                subs.is_empty() || sub.is_some_and(|a| subs.contains(&a.as_str()))
            })
            .collect()
    }

    fn command(&mut self, seen: &Seen) -> Family {
        let argv = unwrap_runner(&seen.cmd.argv);
        let Some(first) = argv.first() else {
            return Family::Ignored;
        };
        let prog = program(first);
        match prog.as_str() {
            "cargo" | "cross" => self.cargo(seen, argv),
            "go" => self.go(seen, argv),
            "pytest" | "py.test" => self.pytest(seen, argv),
            "tox" | "nox" => {
                let sessions = sessions(
                    &argv[1..],
                    if prog == "tox" {
                        &["-e", "--env"]
                    } else {
                        &["-s", "-e", "--session", "--sessions"]
                    },
                );
                self.report(
                    seen,
                    None,
                    Kind::Sessions {
                        tool: prog.clone(),
                        sessions,
                    },
                );
                Family::Compared
            }
            "npm" | "pnpm" | "yarn" | "bun" => self.script(seen, argv),
            _ => {
                if let Some((tool, words)) = tool_key(argv) {
                    let covered = self.steps.iter().any(|s| {
                        words
                            .iter()
                            .all(|w| s.argv.iter().any(|a| program(a) == *w))
                    });
                    if !covered {
                        self.report(
                            seen,
                            None,
                            Kind::MissingCheck {
                                tool: tool.to_owned(),
                            },
                        );
                    }
                    return Family::Compared;
                }
                if opaque(argv) {
                    self.report(seen, None, Kind::NotCompared);
                    return Family::Compared;
                }
                Family::Ignored
            }
        }
    }

    /// Build-affecting variables CI sets for a command that the gate's step does not.
    fn env(&mut self, seen: &Seen, step: Option<&GateStep>, vars: &[&str]) {
        for var in vars {
            let Some(value) = seen.cmd.env.get(*var).filter(|v| !v.trim().is_empty()) else {
                continue;
            };
            if step.is_some_and(|s| s.env.get(*var) == Some(value)) {
                continue;
            }
            let kind = Kind::Env {
                var: (*var).to_owned(),
                value: value.clone(),
            };
            self.report(seen, step, kind);
        }
    }

    fn go(&mut self, seen: &Seen, argv: &[String]) -> Family {
        let Some(sub) = argv.get(1).map(String::as_str) else {
            return Family::Ignored;
        };
        if !["test", "vet", "build"].contains(&sub) {
            return Family::Ignored;
        }
        let steps = self.steps_for("go", &[sub]);
        let Some(&step) = steps.first() else {
            if sub != "build" || self.steps_for("go", &["test"]).is_empty() {
                self.report(
                    seen,
                    None,
                    Kind::MissingCheck {
                        tool: format!("go {sub}"),
                    },
                );
            }
            return Family::Compared;
        };
        let args = &argv[2..];
        let tags = |a: &[String]| -> Option<String> {
            let i = a.iter().position(|w| w == "-tags" || w == "--tags")?;
            a.get(i + 1).cloned()
        };
        let tags_eq = |a: &[String]| {
            tags(a).or_else(|| {
                a.iter()
                    .find_map(|w| w.strip_prefix("-tags=").map(str::to_owned))
            })
        };
        let mut kinds = Vec::new();
        if sub == "test"
            && args.iter().any(|a| a == "-race")
            && !step.argv.iter().any(|a| a == "-race")
        {
            kinds.push(Kind::GoRace);
        }
        if let Some(t) = tags_eq(args) {
            if tags_eq(&step.argv) != Some(t.clone()) {
                kinds.push(Kind::GoTags { tags: t });
            }
        }
        for kind in kinds {
            self.report(seen, Some(step), kind);
        }
        self.env(
            seen,
            Some(step),
            &["GOFLAGS", "GOARCH", "GOOS", "CGO_ENABLED", "GOEXPERIMENT"],
        );
        Family::Compared
    }

    fn pytest(&mut self, seen: &Seen, argv: &[String]) -> Family {
        let steps: Vec<&'a GateStep> = self
            .steps
            .iter()
            .filter(|s| {
                s.argv
                    .first()
                    .is_some_and(|p| program(p) == "pytest" || program(p) == "py.test")
            })
            .collect();
        let Some(&step) = steps.first() else {
            self.report(
                seen,
                None,
                Kind::MissingCheck {
                    tool: "pytest".to_owned(),
                },
            );
            return Family::Compared;
        };
        let mut args = Vec::new();
        let mut it = argv[1..].iter();
        while let Some(a) = it.next() {
            if PYTEST_NOISE_VALUE.contains(&a.as_str()) {
                it.next();
                continue;
            }
            if pytest_noise(a) || step.argv.contains(a) {
                continue;
            }
            args.push(a.clone());
        }
        if !args.is_empty() {
            self.report(seen, Some(step), Kind::PytestArgs { args });
        }
        Family::Compared
    }

    fn script(&mut self, seen: &Seen, argv: &[String]) -> Family {
        let runner = program(&argv[0]);
        let Some(script) = npm_script(argv) else {
            return Family::Ignored;
        };
        let checks = [
            "test", "lint", "check", "fmt", "format", "type", "build", "e2e",
        ];
        if !checks.iter().any(|c| script.contains(c)) {
            return Family::Ignored;
        }
        let covered = self.steps.iter().any(|s| {
            ["npm", "pnpm", "yarn", "bun"]
                .contains(&program(s.argv.first().map(String::as_str).unwrap_or_default()).as_str())
                && npm_script(&s.argv).as_deref() == Some(script.as_str())
        });
        if !covered {
            self.report(seen, None, Kind::Script { runner, script });
        }
        Family::Compared
    }
}

/// The package script an npm/pnpm/yarn/bun command runs, if any.
fn npm_script(argv: &[String]) -> Option<String> {
    let words: Vec<&String> = argv[1..].iter().filter(|a| !a.starts_with('-')).collect();
    let first = words.first()?.as_str();
    match first {
        "test" | "t" | "tst" => Some("test".to_owned()),
        "run" | "run-script" => words.get(1).map(|s| s.to_string()),
        "install" | "i" | "ci" | "add" | "remove" | "publish" | "pack" | "audit" | "exec"
        | "dlx" | "x" | "config" | "cache" | "version" | "set" | "link" | "outdated" | "update"
        | "upgrade" | "global" | "why" => None,
        other if program(&argv[0]) != "npm" => Some(other.to_owned()),
        _ => None,
    }
}

/// `tox -e a,b` / `nox -s a b`: the sessions named.
fn sessions(args: &[String], flags: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    let mut it = args.iter().peekable();
    while let Some(a) = it.next() {
        if let Some((flag, v)) = a.split_once('=') {
            if flags.contains(&flag) {
                out.extend(v.split(',').map(str::to_owned));
            }
            continue;
        }
        if flags.contains(&a.as_str()) {
            while let Some(v) = it.next_if(|v| !v.starts_with('-')) {
                out.extend(v.split(',').filter(|s| !s.is_empty()).map(str::to_owned));
            }
        }
    }
    out
}

/// `make test`, `ci/test.sh`, `bash scripts/x.sh`, `$BUILD_CMD build`: commands vouch cannot read.
fn opaque(argv: &[String]) -> bool {
    let first = argv[0].as_str();
    let prog = program(first);
    if OPAQUE.contains(&prog.as_str()) || first.starts_with('$') {
        return true;
    }
    let script = |w: &str| {
        (w.contains('/') && !w.starts_with("/usr/") && !w.starts_with("/bin/"))
            || [".sh", ".bash", ".py", ".ps1"]
                .iter()
                .any(|e| w.ends_with(e))
    };
    if ["bash", "sh", "zsh", "pwsh", "python", "python3"].contains(&prog.as_str()) {
        return argv[1..]
            .iter()
            .find(|a| !a.starts_with('-'))
            .is_some_and(|a| script(a))
            && !argv.iter().any(|a| a == "-c" || a == "-m");
    }
    script(first)
}

mod cargo;
#[cfg(test)]
mod tests;
