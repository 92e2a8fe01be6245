//! The gate against the project's CI: where the gate profile checks less than the repository's CI does.
//!
//! A gate that passes what CI then fails is switched off, so `vouch profile --ci` shows the user, before
//! trusting a verdict, which test, build, lint and format commands their CI runs that the profile judging the
//! repository does not: features, workspace and package flags, toolchains, `-D warnings`, `RUSTFLAGS`, pytest
//! arguments, `go test -race`, npm scripts. The CI files are read ([`workflow`]), their `run:` blocks split
//! into commands ([`shell`]) and each command compared with the profile's steps ([`compare`]). What cannot be
//! read (`make test`, a script) is reported as not compared, never guessed at. Advisory only: nothing here
//! changes a verdict.

pub mod compare;
pub mod shell;
pub mod workflow;

use std::fmt;
use std::path::Path;

use serde::Serialize;

use crate::gate::profile::Profile;

pub use compare::RepoFacts;
pub use workflow::Unreadable;

/// What `vouch profile --ci` reports (also its `--json`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CiReport {
    /// The profile compared with CI.
    pub profile: String,
    /// The CI files read, relative to the repository root.
    pub files: Vec<String>,
    pub unreadable: Vec<Unreadable>,
    /// Workflows that run only on tags, schedules or by hand: not compared.
    pub skipped: Vec<String>,
    /// Commands found in CI (after matrix expansion, counted once per distinct file, job and command).
    pub commands: usize,
    /// Of those, the ones that are tests, builds, lints or format checks vouch compared with the profile.
    pub compared: usize,
    /// What CI runs that the gate does not, one per file, job and kind.
    pub differences: Vec<Difference>,
}

/// One thing CI runs that the gate does not.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Difference {
    pub file: String,
    pub job: String,
    /// The CI command it was seen in (`None` for what a job or the repository sets as a whole).
    pub command: Option<String>,
    /// The profile step it was compared with, if any.
    pub gate_step: Option<String>,
    #[serde(flatten)]
    pub kind: Kind,
}

/// The runtimes whose versions a CI matrix may range over.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Runtime {
    Python,
    Go,
    Node,
}

/// The kinds of difference.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Kind {
    /// `cargo ... --all-features`.
    AllFeatures,
    /// `cargo ... --features X` (the features the gate's step does not enable).
    Features {
        features: Vec<String>,
    },
    NoDefaultFeatures,
    /// `--workspace`/`--all` on a root package that is not a virtual workspace.
    Workspace,
    /// `-p X`/`--manifest-path P`: a package the gate's step does not cover.
    Package {
        package: String,
    },
    Release,
    /// `cargo test --doc` where the gate's test step runs no doc tests (nextest, `--lib`, ...).
    DocTests,
    /// `-- --ignored`/`--include-ignored`.
    IgnoredTests,
    /// Rust toolchains other than stable (`+nightly`, `dtolnay/rust-toolchain@beta`, `toolchain:` inputs,
    /// `rustup default`), over the job's matrix.
    Toolchains {
        toolchains: Vec<String>,
    },
    /// `rust-toolchain(.toml)` pins a channel.
    ToolchainFile {
        channel: String,
    },
    /// `cargo hack --feature-powerset`/`--each-feature`.
    FeatureCombinations,
    /// clippy with `-D warnings` where the gate's lint step does not fail on warnings.
    ClippyDenyWarnings,
    /// clippy with lints set on its command line (`-W clippy::pedantic`).
    ClippyLints {
        lints: Vec<String>,
    },
    /// A build-affecting variable (`RUSTFLAGS`, `RUSTDOCFLAGS`, `GOARCH`, `GOFLAGS`, ...) the gate does not set.
    Env {
        var: String,
        value: String,
    },
    /// A matrix over several versions of a runtime; the gate runs the one on PATH.
    Versions {
        runtime: Runtime,
        versions: Vec<String>,
    },
    /// pytest arguments (paths, markers, options) the gate's pytest step does not pass.
    PytestArgs {
        args: Vec<String>,
    },
    /// `tox -e`/`nox -s`: sessions, not parsed further.
    Sessions {
        tool: String,
        sessions: Vec<String>,
    },
    GoRace,
    GoTags {
        tags: String,
    },
    /// An npm/pnpm/yarn script the gate does not run.
    Script {
        runner: String,
        script: String,
    },
    /// A check the profile has no step for at all (`cargo doc`, `mypy`, `go vet`, `golangci-lint`, ...).
    MissingCheck {
        tool: String,
    },
    /// A command vouch cannot see into (`make test`, a script, an unknown program).
    NotCompared,
}

impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let cmd = self.command.as_deref().unwrap_or_default();
        let step = match &self.gate_step {
            Some(s) => format!("the gate's `{s}` step"),
            None => "the gate".to_owned(),
        };
        let what = match &self.kind {
            Kind::AllFeatures => format!("`{cmd}` enables all features; {step} does not"),
            Kind::Features { features } => {
                // The features of all the job's commands, merged: `cmd` is the first that names one.
                format!("CI enables features {} (first in `{cmd}`); {step} does not", features.join(", "))
            }
            Kind::NoDefaultFeatures => format!("`{cmd}` builds without default features; {step} does not"),
            Kind::Workspace => format!("`{cmd}` covers the whole workspace; {step} only the root package"),
            Kind::Package { package } => format!("`{cmd}` covers package `{package}`; {step} does not"),
            Kind::Release => format!("`{cmd}` builds in release mode; {step} does not"),
            Kind::DocTests => format!("`{cmd}` runs doc tests; {step} does not"),
            Kind::IgnoredTests => format!("`{cmd}` runs ignored tests; {step} does not"),
            Kind::Toolchains { toolchains } => {
                format!("CI builds with Rust {}; the gate uses the cargo on PATH", toolchains.join(", "))
            }
            Kind::ToolchainFile { channel } => format!(
                "the repository pins Rust `{channel}`; the gate follows it only if its cargo is rustup's"
            ),
            Kind::FeatureCombinations => format!("`{cmd}` checks feature combinations; {step} does not"),
            Kind::ClippyDenyWarnings => format!("`{cmd}` denies warnings; {step} does not"),
            Kind::ClippyLints { lints } => format!("`{cmd}` sets lints {}; {step} does not", lints.join(" ")),
            Kind::Env { var, value } => format!("CI sets {var}={value} for `{cmd}`; the gate does not"),
            Kind::Versions { runtime, versions } => format!(
                "CI runs on {} {}; the gate uses the one on PATH",
                match runtime {
                    Runtime::Python => "Python",
                    Runtime::Go => "Go",
                    Runtime::Node => "Node",
                },
                versions.join(", ")
            ),
            Kind::PytestArgs { args } => format!("`{cmd}` passes {}; {step} does not", args.join(" ")),
            Kind::Sessions { tool, sessions } if sessions.is_empty() => {
                format!("CI runs `{cmd}` (its default {tool} sessions), not compared")
            }
            Kind::Sessions { tool, sessions } => {
                format!("CI runs {tool} sessions {} (`{cmd}`), not compared", sessions.join(", "))
            }
            Kind::GoRace => format!("`{cmd}` runs with the race detector; {step} does not"),
            Kind::GoTags { tags } => format!("`{cmd}` builds with tags {tags}; {step} does not"),
            Kind::Script { runner, script } => format!("CI runs the {runner} script `{script}`; the gate does not"),
            Kind::MissingCheck { tool } => format!("CI runs {tool} (`{cmd}`); the profile has no such step"),
            Kind::NotCompared => format!("CI runs `{cmd}`, not compared"),
        };
        write!(f, "{} ({}): {what}", self.file, self.job)
    }
}

/// Reads the CI definitions under `root` and compares them with `profile`.
pub fn check(root: &Path, profile: &Profile) -> CiReport {
    let read = workflow::read_all(root);
    let facts = RepoFacts::read(root);
    let outcome = compare::compare(&read.jobs, profile, &facts);
    CiReport {
        profile: profile.name.clone(),
        files: read.files,
        unreadable: read.unreadable,
        skipped: read.skipped,
        commands: outcome.commands,
        compared: outcome.compared,
        differences: outcome.differences,
    }
}
