//! Command-line definitions (clap). Every flag has help text; `tests/` checks that.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Hand backlog issues to a local coding model; merge only what an independent gate has proven.
#[derive(Debug, Parser)]
#[command(name = "vouch", version, about, long_about = None, propagate_version = true)]
pub struct Cli {
    /// More log output on stderr (-v info, -vv debug). RUST_LOG overrides.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Re-verify a change in a clean room: format, vet, lint, build, tests, codegen drift, against a baseline.
    #[command(after_help = GATE_EXAMPLES)]
    Gate(Box<GateArgs>),
    /// Inspect tool-call recovery: read raw model output, print the calls vouch would run.
    Toolcalls(crate::commands::toolcalls::ToolcallsArgs),
    /// Show the gate profile that would judge a repository, or a named preset.
    #[command(after_help = PROFILE_EXAMPLES)]
    Profile(ProfileArgs),
}

const GATE_EXAMPLES: &str = "\
Examples:
  vouch gate                                  judge HEAD against its merge-base with the default branch
  vouch gate --repo ../svc --head fix/login   judge a branch of another repository
  vouch gate --base HEAD~1 --json gate.json   judge the last commit only, write the JSON report
  vouch gate --claimed GO --markdown pr.md    compare an agent's claim, write a pull-request body
  vouch gate --profile gates/go.toml --keep   use a profile file, keep the clean rooms under workspaces/

Exit codes: 0 pass, 1 fail, 2 usage or config error, 3 infrastructure error, 130 interrupted.";

const PROFILE_EXAMPLES: &str = "\
Examples:
  vouch profile                 the profile `vouch gate` would use for the repository here
  vouch profile --name rust     the shipped Rust preset
  vouch profile --list          the shipped presets";

/// The verdict an agent (or a person) claims for a change.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, serde::Serialize, serde::Deserialize)]
pub enum Claim {
    #[value(name = "GO", alias = "go")]
    #[serde(rename = "GO")]
    Go,
    #[value(name = "NO-GO", alias = "no-go")]
    #[serde(rename = "NO-GO")]
    NoGo,
}

#[derive(Debug, Clone, Args)]
pub struct GateArgs {
    /// The repository to judge (any directory inside it). Never modified.
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub repo: PathBuf,

    /// The revision the change starts from [default: merge-base of head with the default branch].
    #[arg(long, value_name = "REV")]
    pub base: Option<String>,

    /// The revision to judge: a branch, tag, sha or expression like HEAD~1.
    #[arg(long, value_name = "REV", default_value = "HEAD")]
    pub head: String,

    /// A preset name (rust, go, python, node) or a profile TOML file [default: the repo's .vouch/gate.toml, else detected].
    #[arg(long, value_name = "NAME|FILE")]
    pub profile: Option<String>,

    /// Write the JSON report to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,

    /// Write a Markdown report (fit for a pull-request body) to FILE.
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,

    /// Write a JUnit XML report (one case per step and per blamed test) to FILE.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,

    /// The verdict claimed for the change; compared with the gate's [default: the head commit's Agent-Verdict: trailer].
    #[arg(long, value_name = "GO|NO-GO")]
    pub claimed: Option<Claim>,

    /// Keep the clean rooms under workspaces/ instead of removing them.
    #[arg(long)]
    pub keep: bool,

    /// Blame failures that already happen at base, too.
    #[arg(long)]
    pub strict_baseline: bool,

    /// Blame tests that fail at head and pass when rerun (they are reported as flaky either way).
    #[arg(long)]
    pub no_flaky: bool,

    /// How many times a test failing at head is rerun alone before it is blamed.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub reruns: u32,

    /// Pass a change to production files that changes no tests.
    #[arg(long)]
    pub allow_no_tests: bool,

    /// Only these paths may change (glob, repeatable; adds to the profile's `allow`).
    #[arg(long, value_name = "GLOB")]
    pub allow: Vec<String>,

    /// These paths must not change (glob, repeatable; adds to the profile's `deny`).
    #[arg(long, value_name = "GLOB")]
    pub deny: Vec<String>,

    /// Do not run the test step at base; every failure at head is blamed.
    #[arg(long)]
    pub no_baseline: bool,

    /// Run the baseline again even if results for the base tree are cached.
    #[arg(long)]
    pub refresh_baseline: bool,

    /// Skip the bite check (proving new tests fail without the production change).
    #[arg(long)]
    pub no_bite: bool,

    /// Bite check: must any changed test fail without the production change, or all of them?
    #[arg(long, value_name = "any|all")]
    pub bite_require: Option<crate::gate::profile::BiteRequire>,

    /// Bite check: does a test that cannot build without the change count as biting?
    #[arg(long, value_name = "accept|reject")]
    pub bite_build_failure: Option<crate::gate::profile::BuildFailure>,

    /// Pass a change that deletes tests or weakens their assertions.
    #[arg(long)]
    pub allow_removed_tests: bool,

    /// Give up on the whole gate after this long (e.g. 30m, 2h); exit 3.
    #[arg(long, value_name = "DURATION")]
    pub timeout: Option<String>,

    /// Use fresh temporary rooms instead of the reusable ones in the cache (slower: builds start cold).
    #[arg(long)]
    pub fresh_rooms: bool,

    /// No spinner and no summary on stderr (the reports are still written).
    #[arg(long, short)]
    pub quiet: bool,
}

#[derive(Debug, Clone, Args)]
pub struct ProfileArgs {
    /// The repository whose profile to show.
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub repo: PathBuf,

    /// Show this preset or profile file instead of detecting one.
    #[arg(long, value_name = "NAME|FILE")]
    pub name: Option<String>,

    /// List the shipped presets.
    #[arg(long)]
    pub list: bool,
}
