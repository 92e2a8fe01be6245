//! Command-line definitions (clap). Every flag has help text; `tests/` checks that.

use std::path::PathBuf;

use crate::gate::outcome::Claim;
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
    /// Hand a task to a local model in its own worktree, then gate its change: verified, rejected, no-go or incomplete.
    #[command(after_help = RUN_EXAMPLES)]
    Run(Box<RunArgs>),
    /// Remove vouch's workspaces (worktree, directory, branch vouch/<task-id>), keeping any with unmerged work.
    #[command(after_help = CLEAN_EXAMPLES)]
    Clean(CleanArgs),
}

const CLEAN_EXAMPLES: &str = "\
Examples:
  vouch clean                         remove every workspace whose work is merged (or that has none)
  vouch clean add-subtracts           only the workspace of task add-subtracts
  vouch clean --repo ../calc --force  also remove unmerged branches and uncommitted changes

A workspace is kept without --force when its branch vouch/<task-id> has commits that neither the default branch
nor your HEAD contains, or when its worktree has uncommitted changes; vouch says which it kept and why.
Exit codes: 0 done (some may be kept), 2 usage error (a named task has no workspace), 3 infrastructure error.";

/// `vouch clean`.
#[derive(Debug, Clone, Args)]
pub struct CleanArgs {
    /// The repository whose workspaces to remove (any directory inside it) [default: .].
    #[arg(long, value_name = "DIR")]
    pub repo: Option<PathBuf>,

    /// Remove the workspaces with unmerged commits or uncommitted changes too (that work is lost).
    #[arg(long)]
    pub force: bool,

    /// The tasks whose workspaces to remove [default: every vouch/* branch and its worktree].
    #[arg(value_name = "TASK_ID")]
    pub ids: Vec<String>,
}

const RUN_EXAMPLES: &str = "\
Examples:
  vouch run --task tasks/example.md                        the task's repo, base and profile from its front matter
  vouch run --prompt 'add() ignores negative numbers' --repo ../calc --base main
  vouch run --task tasks/bug.md --endpoint http://127.0.0.1:8080 --max-turns 30 --json run.json
  vouch run --task tasks/bug.md --fresh                    remove the task's worktree and branch first
  vouch run --task tasks/bug.md --resume --max-turns 80    continue a run that stopped before a verdict
  VOUCH_ENDPOINT=http://gpu:8000 VOUCH_MODEL=qwen3-coder vouch run --task tasks/bug.md --tool-mode constrained

The work happens in workspaces/<task-id>/, a git worktree on branch vouch/<task-id>; your checkout is not touched.
Records: workspaces/<task-id>/.vouch/{transcript.jsonl,report.json,report.md}.
Settings, strongest first: flags, VOUCH_* variables, <repo>/vouch.toml, ~/.config/vouch/vouch.toml, defaults.
Exit codes: 0 verified, 1 rejected, no-go or incomplete, 2 usage error, 3 infrastructure or model error, 130 interrupted.";

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

/// How tool calls are requested from the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolModeArg {
    /// Send `tools`; recover calls leaked into the reply text.
    Native,
    /// Describe the tools in the prompt; a JSON-schema response format makes each reply a call.
    Constrained,
    /// Native, switching to constrained when the server or the model cannot do native calls.
    Auto,
}

impl From<ToolModeArg> for crate::model::ToolMode {
    fn from(m: ToolModeArg) -> Self {
        match m {
            ToolModeArg::Native => crate::model::ToolMode::Native,
            ToolModeArg::Constrained => crate::model::ToolMode::Constrained,
            ToolModeArg::Auto => crate::model::ToolMode::Auto,
        }
    }
}

#[derive(Debug, Clone, Args)]
#[command(group(clap::ArgGroup::new("what").required(true).args(["task", "prompt", "issue"])))]
pub struct RunArgs {
    /// A task file: Markdown with front matter (title, repo, base, profile, scope, max_turns) and the issue as body.
    #[arg(long, value_name = "FILE")]
    pub task: Option<PathBuf>,

    /// The task as text instead of a file (its first line is the title; the task id is a slug of it).
    #[arg(long, value_name = "TEXT")]
    pub prompt: Option<String>,

    /// A forge issue as OWNER/REPO#N; not built yet, so save the issue as a task file instead.
    #[arg(long, value_name = "OWNER/REPO#N")]
    pub issue: Option<String>,

    /// The repository to work on (any directory inside it); only a branch and a worktree are added [default: the task's repo, else .].
    #[arg(long, value_name = "DIR")]
    pub repo: Option<PathBuf>,

    /// The revision the agent's branch starts from [default: the task's base, else HEAD].
    #[arg(long, value_name = "REV")]
    pub base: Option<String>,

    /// The model server's OpenAI-compatible base URL [env: VOUCH_ENDPOINT] [default: vouch.toml's endpoint, else http://127.0.0.1:8080].
    #[arg(long, value_name = "URL")]
    pub endpoint: Option<String>,

    /// The model name sent with each request (llama-server ignores it; vLLM and Ollama need it) [env: VOUCH_MODEL] [default: vouch.toml's model, else local].
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,

    /// The name of the environment variable holding the server's API key (the key itself is never a flag) [env: VOUCH_API_KEY_ENV].
    #[arg(long, value_name = "NAME")]
    pub api_key_env: Option<String>,

    /// How tool calls are requested: native tool calls, constrained JSON replies, or auto [default: vouch.toml's tool_mode, else auto].
    #[arg(long, value_name = "MODE", value_enum)]
    pub tool_mode: Option<ToolModeArg>,

    /// Stop after this many model turns [default: the task's max_turns, else vouch.toml's, else 50].
    #[arg(long, value_name = "N")]
    pub max_turns: Option<u32>,

    /// Turns without a successful edit before only edit, write_file and submit are offered (3 more turns, then the run stops as stalled).
    /// [default: vouch.toml's stall_turns, else 15]
    #[arg(long, value_name = "N")]
    pub stall_turns: Option<u32>,

    /// Stop the run after this much wall time (e.g. 30m, 2h).
    #[arg(long, value_name = "DURATION")]
    pub wall_time: Option<String>,

    /// Stop the run once prompt plus completion tokens reach this many.
    #[arg(long, value_name = "N")]
    pub token_budget: Option<u64>,

    /// How many times a change the gate rejects goes back to the model for repair.
    /// [default: vouch.toml's repair_cycles, else 2]
    #[arg(long, value_name = "N")]
    pub repair_cycles: Option<u32>,

    /// A preset name (rust, go, python, node) or a profile TOML file for run_tests and the gate [default: the task's, else detected].
    #[arg(long, value_name = "NAME|FILE")]
    pub profile: Option<String>,

    /// Author of the agent's commit, as `Name <email>` [default: vouch.toml's author, else the repository's git config, else vouch <vouch@localhost>].
    #[arg(long, value_name = "NAME <EMAIL>")]
    pub author: Option<String>,

    /// Add a `Signed-off-by:` trailer with the author to the agent's commit (also `signoff = true` in vouch.toml).
    #[arg(long)]
    pub signoff: bool,

    /// Offer the model a `shell` tool (sh -c in the worktree, secrets scrubbed from its environment).
    #[arg(long)]
    pub allow_shell: bool,

    /// Timeout of each `shell` command (e.g. 30s, 5m); the command's process group is killed.
    #[arg(long, value_name = "DURATION", default_value = "120s")]
    pub shell_timeout: String,

    /// Also write the run's JSON report to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,

    /// The model's context size in tokens, used when the server does not tell (llama-server's /props does); old tool outputs are elided past 80% of it.
    /// [default: vouch.toml's context, else 32768]
    #[arg(long, value_name = "N")]
    pub context: Option<u64>,

    /// Remove the task's existing worktree and branch vouch/<task-id> first.
    #[arg(long, conflicts_with = "resume")]
    pub fresh: bool,

    /// Continue the unfinished run in the task's workspace (crashed, model error, budget, Ctrl-C): the same conversation from its transcript, turns and tokens counted on.
    #[arg(long)]
    pub resume: bool,

    /// No per-turn lines and no summary on stderr (the records are still written).
    #[arg(long, short)]
    pub quiet: bool,
}
