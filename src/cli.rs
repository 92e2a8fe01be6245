//! Command-line definitions (clap). Every flag has help text and every command's help has examples; the
//! tests below check both over the whole command tree.
//!
//! Defaults live as named constants in the modules that use them ([`crate::agent`], [`crate::gate`],
//! [`crate::model`]); the help text shows them through `default_value_t` or by formatting the constant.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::agent::{
    DEFAULT_CONTEXT, DEFAULT_FORCING_TURNS, DEFAULT_MAX_TURNS, DEFAULT_REPAIR_CYCLES,
    DEFAULT_SHELL_TIMEOUT, DEFAULT_STALL_TURNS, ELIDE_AT,
};
use crate::forge::Forge;
use crate::gate::outcome::Claim;
use crate::gate::profile::{BiteRequire, BuildFailure, HunkPolicy};
use crate::gate::DEFAULT_RERUNS;
use crate::llama::serve::{DEFAULT_CONTEXT as SERVE_CONTEXT, DEFAULT_PORT};
use crate::llama::{FlashAttn, DEFAULT_MODEL_ID};
use crate::model::{ToolMode, DEFAULT_ENDPOINT, DEFAULT_MAX_TOKENS, DEFAULT_MODEL};
use crate::sandbox::SandboxMode;

mod backlog;
pub use backlog::{BacklogArgs, Emit, K8sArgs};

/// Hand backlog issues to a local coding model; merge only what an independent gate has proven.
#[derive(Debug, Parser)]
#[command(name = "vouch", version, about, long_about = None, propagate_version = true)]
#[command(after_help = VOUCH_EXAMPLES)]
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
    #[command(after_help = TOOLCALLS_EXAMPLES)]
    Toolcalls(ToolcallsArgs),
    /// Show the gate profile that would judge a repository, or a named preset.
    #[command(after_help = PROFILE_EXAMPLES)]
    Profile(ProfileArgs),
    /// Hand a task to a local model in its own worktree, then gate its change: verified, rejected, no-go or incomplete.
    #[command(after_help = RUN_EXAMPLES)]
    Run(Box<RunArgs>),
    /// Remove vouch's workspaces (worktree, directory, branch vouch/<task-id>), keeping any with unmerged work.
    #[command(after_help = CLEAN_EXAMPLES)]
    Clean(CleanArgs),
    /// The local model vouch runs itself: build llama-server and assemble models from PyPI, list them, serve one.
    #[command(after_help = MODEL_EXAMPLES)]
    Model(ModelArgs),
    /// Push a run's branch and open its pull request with the gate's evidence, or update the open one.
    #[command(after_help = PR_EXAMPLES)]
    Pr(Box<PrArgs>),
    /// Check a model endpoint for agent work: tool calls, context, needles, speed, prompt cache, serving traps.
    #[command(after_help = PROBE_EXAMPLES)]
    Probe(ProbeArgs),
    /// Run a backlog of tasks (a folder or a forge label): a local pool, claims, attempts, shards, one summary.
    #[command(after_help = backlog::BACKLOG_EXAMPLES)]
    Backlog(Box<BacklogArgs>),
}

impl Command {
    /// Whether the command runs the gate (which mounts layers in a namespace of vouch's own).
    pub fn runs_the_gate(&self) -> bool {
        matches!(
            self,
            Command::Gate(_) | Command::Run(_) | Command::Backlog(_)
        )
    }
}

impl Cli {
    /// Whether the command was given `-q` (warnings are then not logged either).
    pub fn quiet(&self) -> bool {
        match &self.command {
            Command::Run(a) => a.quiet,
            Command::Gate(a) => a.quiet,
            Command::Backlog(a) => a.quiet,
            _ => false,
        }
    }
}

const PROBE_EXAMPLES: &str = "\
Examples:
  vouch probe --endpoint http://127.0.0.1:8080            every check, with warnings, on the console
  vouch probe --endpoint http://127.0.0.1:8080 --quick    fewer depths and a short needle document (~1 min)
  vouch probe --endpoint http://gpu:8000/v1 --model qwen3 --json probe.json   also write the JSON report

Exit status: 0 when the endpoint works for agent work (warnings included), 3 when it cannot be reached.";

/// `vouch probe`.
#[derive(Debug, Clone, Args)]
pub struct ProbeArgs {
    /// The OpenAI-compatible server to check, with or without a trailing /v1.
    #[arg(long, value_name = "URL")]
    pub endpoint: String,

    /// The model to ask for [default: the first one the server lists].
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,

    /// Also write the report as JSON to this file.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,

    /// Fewer depths and a shorter needle document: a first look in about a minute.
    #[arg(long)]
    pub quick: bool,

    /// Repetitions per speed depth (at least 3).
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub reps: usize,

    /// The name of the environment variable holding the API key, if the server wants one.
    #[arg(long, value_name = "VAR")]
    pub api_key_env: Option<String>,
}

const VOUCH_EXAMPLES: &str = "\
Examples:
  vouch run --task tasks/example.md   hand a task to the local model; the gate judges its change
  vouch gate --base main              judge your branch against main in a clean room
  vouch profile                       the gate profile that would judge the repository here
  vouch clean                         remove the workspaces whose work is merged
  vouch model setup                   build llama-server and the default local model (once)
  vouch help run                      the flags and examples of one command";

const PR_EXAMPLES: &str = "\
Examples:
  vouch pr add-subtracts                        push vouch/add-subtracts, open its pull request on origin's forge
  vouch pr add-subtracts --draft                a draft (Gitea/Forgejo: a `WIP:` title), also for a rejected run
  vouch pr --branch fix/login --body-file pr.md push a branch of the repository here, with your own body
  vouch pr x --forge gitea --forge-repo team/app --api-url https://git.example --remote origin
  vouch pr x --api-url https://git.corp/api/v3 --ca-file /etc/ssl/corp-ca.pem   a GitHub Enterprise behind a company CA

Tokens: GITHUB_TOKEN or GH_TOKEN (GitHub), GITEA_TOKEN (Gitea/Forgejo), GITLAB_TOKEN (GitLab), or --token-env VAR; sent through git's
credential callback and the API's auth header only, never printed or written into a URL or config.
The push never overwrites a remote branch holding commits the local branch does not contain.
A second run updates the open pull request's body instead of opening another.
Exit codes: 0 pushed and opened or updated, 2 usage error (no token, unknown forge, a refused lease),
3 infrastructure error (the forge's answer or the network).";

const TOOLCALLS_EXAMPLES: &str = "\
Examples:
  vouch toolcalls parse < reply.txt              the calls vouch would run for a saved model reply
  vouch toolcalls parse --format hermes < r.txt  read the reply with one parser only";

const CLEAN_EXAMPLES: &str = "\
Examples:
  vouch clean                         remove every workspace whose work is merged (or that has none)
  vouch clean add-subtracts           only the workspace of task add-subtracts
  vouch clean --repo ../calc --force  also remove unmerged branches and uncommitted changes

A workspace is kept without --force when its branch vouch/<task-id> has commits that neither the default branch
nor your HEAD contains, or when its worktree has uncommitted changes; vouch says which it kept and why.
Exit codes: 0 done (some may be kept), 2 usage error (a named task has no workspace), 3 infrastructure error.";

const MODEL_EXAMPLES: &str = "\
Examples:
  vouch model setup                   build llama-server, assemble the default model (Qwen2.5-Coder 1.5B)
  vouch model list                    the known models, which are set up, and the server binary
  vouch model serve --model qwen-0.5b serve a model on http://127.0.0.1:8080 until Ctrl-C

Everything lives in $VOUCH_LLAMA_CACHE (default ~/.cache/vouch-llama). With no endpoint configured,
`vouch run` sets up and serves the default model itself and stops it afterwards.";

const MODEL_SETUP_EXAMPLES: &str = "\
Examples:
  vouch model setup                         llama-server and the default model, qwen-1.5b (about 1.1 GB)
  vouch model setup --model smollm2         the 98 MB SmolLM2 (for tests: it cannot code)
  vouch model setup --install-tools         as root: apt-get install cmake, g++, make, pip when missing
  vouch model setup --verify                hash the model file again instead of trusting its marker

Idempotent: a second run checks the binary (`--version`) and the model's size and sha256 marker.
Exit codes: 0 ready, 2 usage error, 3 a missing tool, a failed download, build or checksum, 130 interrupted.";

const MODEL_LIST_EXAMPLES: &str = "\
Examples:
  vouch model list                          what is set up in the default cache
  vouch model list --cache /srv/llama       what is set up in another cache";

const MODEL_SERVE_EXAMPLES: &str = "\
Examples:
  vouch model serve                         the default model on http://127.0.0.1:8080 (vouch run's default)
  vouch model serve --model smollm2 --port 8081 --context 8192
  vouch model serve --model ./my-model.gguf your own GGUF file

Sets the model up first if needed. Prints the endpoint once `/health` answers; Ctrl-C stops the server.
Exit codes: 0 stopped by Ctrl-C, 2 usage error (a port in use), 3 the server failed.";

/// `vouch model`.
#[derive(Debug, Clone, Args)]
pub struct ModelArgs {
    #[command(subcommand)]
    pub command: ModelCommand,
}

#[derive(Debug, Clone, Subcommand)]
pub enum ModelCommand {
    /// Build llama-server and assemble a model into the cache; a second run only checks.
    #[command(after_help = MODEL_SETUP_EXAMPLES)]
    Setup(ModelSetupArgs),
    /// The known models (set up or not, size, path) and the server binary.
    #[command(after_help = MODEL_LIST_EXAMPLES)]
    List(ModelListArgs),
    /// Serve a model for agents (OpenAI-compatible, tools on, one slot) until Ctrl-C.
    #[command(after_help = MODEL_SERVE_EXAMPLES)]
    Serve(ModelServeArgs),
}

/// The flags every `vouch model` command shares.
#[derive(Debug, Clone, Args)]
pub struct ModelCacheArgs {
    /// The cache directory [env: VOUCH_LLAMA_CACHE] [default: ~/.cache/vouch-llama].
    #[arg(long, value_name = "DIR")]
    pub cache: Option<PathBuf>,
}

#[derive(Debug, Clone, Args)]
pub struct ModelSetupArgs {
    /// A known model (qwen-1.5b, qwen-0.5b, smollm2) or the path of a GGUF file.
    #[arg(long, value_name = "NAME|PATH", default_value = DEFAULT_MODEL_ID)]
    pub model: String,

    /// Install missing build tools with apt-get without asking (needs root).
    #[arg(long)]
    pub install_tools: bool,

    /// Hash the model file again even when its marker says it is verified.
    #[arg(long)]
    pub verify: bool,

    /// No progress on stderr; only errors and the final paths.
    #[arg(long, short)]
    pub quiet: bool,

    #[command(flatten)]
    pub cache: ModelCacheArgs,
}

#[derive(Debug, Clone, Args)]
pub struct ModelListArgs {
    #[command(flatten)]
    pub cache: ModelCacheArgs,
}

#[derive(Debug, Clone, Args)]
pub struct ModelServeArgs {
    /// A known model (qwen-1.5b, qwen-0.5b, smollm2) or the path of a GGUF file.
    #[arg(long, value_name = "NAME|PATH", default_value = DEFAULT_MODEL_ID)]
    pub model: String,

    /// The port to listen on.
    #[arg(long, value_name = "PORT", default_value_t = DEFAULT_PORT)]
    pub port: u16,

    /// The address to listen on (anything but loopback exposes the model to the network).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1")]
    pub host: String,

    /// Tokens of context, all in the one slot.
    #[arg(long, value_name = "N", default_value_t = SERVE_CONTEXT)]
    pub context: u64,

    /// Generation threads [default: 1 on two cores or fewer, else all cores but one].
    #[arg(long, value_name = "N")]
    pub threads: Option<u32>,

    /// Flash attention.
    #[arg(long, value_name = "on|off|auto", value_enum, default_value_t = FlashAttn::DEFAULT)]
    pub flash_attn: FlashAttn,

    /// Install missing build tools with apt-get without asking (needs root).
    #[arg(long)]
    pub install_tools: bool,

    #[command(flatten)]
    pub cache: ModelCacheArgs,
}

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

/// `vouch pr`.
#[derive(Debug, Clone, Args)]
pub struct PrArgs {
    /// The run's workspace (the worktree `vouch run` printed, or its task id): its branch and its records' evidence.
    #[arg(
        value_name = "WORKSPACE",
        conflicts_with = "branch",
        required_unless_present = "branch"
    )]
    pub workspace: Option<PathBuf>,

    /// The run's task id, whose records hold the evidence [default: the workspace directory's name].
    #[arg(long, value_name = "ID", requires = "workspace")]
    pub task: Option<String>,

    /// Push this branch instead of a workspace's (no run records: the body names the branch, or --body-file).
    #[arg(long, value_name = "B")]
    pub branch: Option<String>,

    /// The repository of --branch [default: .].
    #[arg(long, value_name = "DIR", requires = "branch")]
    pub repo: Option<PathBuf>,

    #[command(flatten)]
    pub forge: ForgeArgs,

    /// The pull request's base branch [default: the repository's default branch].
    #[arg(long, value_name = "BRANCH")]
    pub base: Option<String>,

    /// Open a draft (GitHub's draft; a `WIP:` title on Gitea/Forgejo); needed for a run that is not verified.
    #[arg(long)]
    pub draft: bool,

    /// The title [default: the task's title].
    #[arg(long, value_name = "T")]
    pub title: Option<String>,

    /// The body from a file instead of the run's evidence.
    #[arg(long, value_name = "F")]
    pub body_file: Option<PathBuf>,

    /// The issue the change fixes: the body says `Fixes #N`.
    #[arg(long, value_name = "N")]
    pub issue: Option<u64>,
}

/// When `vouch run --open-pr` opens a pull request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OpenPr {
    /// Only for a verified run.
    Verified,
    /// For any finished run: a draft with the report when the run is not verified.
    Always,
}

/// Where a forge is: the flags `vouch pr`, `vouch gate --pr` and `vouch run --open-pr` share; each one given
/// wins over `[forge]` in vouch.toml.
#[derive(Debug, Clone, Default, Args)]
pub struct ForgeArgs {
    /// The forge [default: from the remote's URL: github.com is GitHub, codeberg.org and gitea/forgejo hosts Gitea, gitlab hosts GitLab].
    #[arg(long, value_enum)]
    pub forge: Option<Forge>,

    /// The repository on the forge [default: from the remote's URL].
    #[arg(long, value_name = "OWNER/REPO")]
    pub forge_repo: Option<String>,

    /// The API: GitHub's base (https://ghe.example/api/v3), or the Gitea server (/api/v1 is added) or GitLab's (/api/v4).
    #[arg(long, value_name = "URL")]
    pub api_url: Option<String>,

    /// The remote to push to and fetch from, by name or URL [default: origin].
    #[arg(long, value_name = "NAME|URL")]
    pub remote: Option<String>,

    /// The environment variable that holds the token [default: GITHUB_TOKEN, GH_TOKEN; GITEA_TOKEN; GITLAB_TOKEN].
    #[arg(long, value_name = "VAR")]
    pub token_env: Option<String>,

    /// A CA bundle (PEM) to trust besides the built-in roots, for a forge behind a company or self-signed CA
    /// (SSL_CERT_FILE is trusted too).
    #[arg(long, value_name = "FILE")]
    pub ca_file: Option<std::path::PathBuf>,
}

const RUN_EXAMPLES: &str = "\
Examples:
  vouch run --task tasks/example.md                        the task's repo, base and profile from its front matter
  vouch run --prompt 'add() ignores negative numbers' --repo ../calc --base main
  vouch run --task tasks/bug.md --endpoint http://127.0.0.1:8080 --max-turns 30 --json run.json
  vouch run --task tasks/bug.md --fresh                    remove the task's worktree and branch first
  vouch run --task tasks/bug.md --resume --max-turns 80    continue a run that stopped before a verdict
  VOUCH_ENDPOINT=http://gpu:8000 VOUCH_MODEL=qwen3-coder vouch run --task tasks/bug.md --tool-mode constrained
  vouch run --task tasks/bug.md --model qwen-0.5b          no endpoint: vouch serves the 0.5B coder itself
  vouch run --task tasks/bug.md --strategy guided          a small model writes code, vouch tests it

Without --endpoint, VOUCH_ENDPOINT or an endpoint in your vouch.toml, vouch sets up its local model (`vouch model setup`,
with progress; cached after) and serves it on a free port for the run only.
The work happens in a git worktree on branch vouch/<task-id> under $VOUCH_DATA (default: your data dir, e.g.
~/.local/share/vouch)/workspaces/<repo-key>/<task-id>/; your checkout is not touched.
Records, out of the model's reach: $VOUCH_DATA/runs/<repo-key>/<task-id>/{transcript.jsonl,report.json,report.md,logs/}.
Settings, strongest first: flags, VOUCH_* variables, <repo>/vouch.toml, ~/.config/vouch/vouch.toml, defaults
(endpoint and api_key_env never from <repo>/vouch.toml).
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
  vouch profile --list          the shipped presets
  vouch profile --ci            where the gate is narrower than the repository's CI
  vouch profile --ci --name rust --json ci.json   the Rust preset against CI, also as JSON";

/// How the gate judges a change: the checks `vouch gate` and `vouch run` share.
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "Gate checks")]
pub struct GateCheckArgs {
    /// Blame failures that already happen at base, too.
    #[arg(long)]
    pub strict_baseline: bool,

    /// Blame tests that fail at head and pass when rerun (they are reported as flaky either way).
    #[arg(long)]
    pub no_flaky: bool,

    /// How many times a test failing at head is rerun alone before it is blamed.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_RERUNS)]
    pub reruns: u32,

    /// Pass a change to production files that changes no tests.
    #[arg(long)]
    pub allow_no_tests: bool,

    /// Only these paths may change (glob, repeatable; adds to the profile's `allow` and to a task's scope).
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
    pub bite_require: Option<BiteRequire>,

    /// Bite check: does a test that cannot build without the change count as biting?
    #[arg(long, value_name = "accept|reject")]
    pub bite_build_failure: Option<BuildFailure>,

    /// Bite check, per hunk: report production hunks no selected test notices (`advisory`), fail the gate on
    /// them (`require`), or do not check (`off`).
    #[arg(long, value_name = "advisory|require|off")]
    pub bite_hunks: Option<HunkPolicy>,

    /// Pass a change that deletes tests or weakens their assertions.
    #[arg(long)]
    pub allow_removed_tests: bool,

    /// Use fresh temporary rooms instead of the reusable ones in the cache (slower: builds start cold).
    #[arg(long)]
    pub fresh_rooms: bool,

    /// Confine the code under test (tests, build scripts, the shell tool): `auto` uses bubblewrap where the
    /// kernel allows it and warns where it does not, `require` refuses to run unconfined, `off` does not confine.
    #[arg(long, value_name = "MODE", value_enum, default_value_t = SandboxMode::Auto)]
    pub sandbox: SandboxMode,
}

impl GateCheckArgs {
    /// Sets these checks in `opts`; `allow` and `deny` add to what `opts` has.
    pub fn apply(&self, opts: &mut crate::gate::Options) {
        opts.strict_baseline = self.strict_baseline;
        opts.no_flaky = self.no_flaky;
        opts.reruns = self.reruns;
        opts.allow_no_tests = self.allow_no_tests;
        opts.allow.extend(self.allow.iter().cloned());
        opts.deny.extend(self.deny.iter().cloned());
        opts.no_baseline = self.no_baseline;
        opts.refresh_baseline = self.refresh_baseline;
        opts.no_bite = self.no_bite;
        opts.bite_require = self.bite_require;
        opts.bite_build_failure = self.bite_build_failure;
        opts.bite_hunks = self.bite_hunks;
        opts.allow_removed_tests = self.allow_removed_tests;
        opts.fresh_rooms = self.fresh_rooms;
        opts.sandbox = self.sandbox;
    }
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

    /// Give up on the whole gate after this long (e.g. 30m, 2h); exit 3.
    #[arg(long, value_name = "DURATION")]
    pub timeout: Option<String>,

    /// No spinner, no summary and no warnings on stderr, only errors (the reports are still written).
    #[arg(long, short)]
    pub quiet: bool,

    /// Re-verify a pull request, OWNER/REPO#N or N: its base and head are fetched under refs/vouch/pr/N/
    /// (the checkout is not touched) and judged instead of --base/--head.
    #[arg(long, value_name = "OWNER/REPO#N", conflicts_with_all = ["base", "head"])]
    pub pr: Option<String>,

    /// With --pr: post the commit status vouch/gate and the report as one sticky comment (edited on the
    /// next run; nothing is posted when the head has not changed since the last report).
    #[arg(long, requires = "pr")]
    pub post: bool,

    #[command(flatten)]
    pub forge: ForgeArgs,

    #[command(flatten)]
    pub checks: GateCheckArgs,
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

    /// Compare the profile with the repository's CI (GitHub/Forgejo workflows, GitLab, Woodpecker): what CI runs that the gate does not.
    #[arg(long)]
    pub ci: bool,

    /// Write the CI comparison as JSON to FILE (implies --ci).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

/// `vouch toolcalls`.
#[derive(Debug, Clone, Args)]
pub struct ToolcallsArgs {
    #[command(subcommand)]
    pub command: ToolcallsCommand,
}

#[derive(Debug, Clone, Subcommand)]
pub enum ToolcallsCommand {
    /// Recover the tool calls in raw model output read from stdin; print them as JSON.
    #[command(after_help = PARSE_EXAMPLES)]
    Parse(ParseArgs),
}

#[derive(Debug, Clone, Args)]
pub struct ParseArgs {
    /// A JSON array of OpenAI tool definitions to resolve names and type arguments with [default: vouch's agent tools].
    #[arg(long, value_name = "FILE")]
    pub tools: Option<PathBuf>,

    /// Use this parser instead of detecting the format (a name from the list below).
    #[arg(long, value_name = "NAME")]
    pub format: Option<String>,

    /// A chat template (Jinja) whose call syntax is learned and used in recovery, as `vouch run` does with the server's.
    #[arg(long, value_name = "FILE")]
    pub template: Option<PathBuf>,
}

/// The help of `vouch toolcalls parse`; it lists every parser (a test checks it).
pub const PARSE_EXAMPLES: &str = "\
Examples:
  vouch toolcalls parse < reply.txt                detect the format, use vouch's agent tools
  vouch toolcalls parse --tools t.json < r.txt     resolve names against your tool definitions
  vouch toolcalls parse --format glm < r.txt       read the reply as GLM / Laguna only
  vouch toolcalls parse --template t.jinja < r.txt also read the syntax learned from a chat template
  echo '<tool_call>{\"name\":\"list_files\",\"arguments\":{}}</tool_call>' | vouch toolcalls parse

Prints {\"format\", \"calls\": [{\"name\", \"arguments\"}], \"content\"}, plus \"reasoning\" and
\"warnings\" when there are any. A call inside <think>…</think> before an answer is not a call.

Formats: hermes, qwen3-coder, seed-oss, glm, minimax-m2, step3, mistral, llama3-json,
  json, pythonic, deepseek-r1, deepseek-v3.1, deepseek-dsml, kimi-k2, harmony,
  functionary-v3.1, functionary-v3.2, apertus, kimi-k3, solar-open, granite, nemotron, command-r7b,
  phi4, tool-calls-json, internlm, gemma4, functiongemma, function-tag";

/// What `vouch run` does without an endpoint (the help of `--endpoint` says it).
pub const MANAGED_ENDPOINT: &str =
    "vouch sets up and serves its local model (qwen-1.5b) itself, stopped after the run";

/// The name `--tool-mode` takes for the default mode.
fn default_tool_mode() -> String {
    ToolMode::default()
        .to_possible_value()
        .map(|v| v.get_name().to_string())
        .unwrap_or_default()
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

    /// A forge issue as OWNER/REPO#N: its title, body and labels become the task (the pull request says Fixes #N).
    #[arg(long, value_name = "OWNER/REPO#N")]
    pub issue: Option<String>,

    /// The repository to work on (any directory inside it); only a branch and a worktree are added [default: the task's repo, else .].
    #[arg(long, value_name = "DIR")]
    pub repo: Option<PathBuf>,

    /// The revision the agent's branch starts from [default: the task's base, else HEAD].
    #[arg(long, value_name = "REV")]
    pub base: Option<String>,

    #[arg(long, value_name = "URL", help = format!(
        "The model server's OpenAI-compatible base URL, e.g. {DEFAULT_ENDPOINT} [env: VOUCH_ENDPOINT] \
         [default: vouch.toml's endpoint, else none: {MANAGED_ENDPOINT}]"
    ))]
    pub endpoint: Option<String>,

    #[arg(long, value_name = "NAME", help = format!(
        "The model name sent with each request (llama-server ignores it; vLLM and Ollama need it); \
         without an endpoint, the model vouch serves (qwen-1.5b, qwen-0.5b, smollm2 or a GGUF file) \
         [env: VOUCH_MODEL] [default: vouch.toml's model, else {DEFAULT_MODEL}]"
    ))]
    pub model: Option<String>,

    /// The name of the environment variable holding the server's API key (the key itself is never a flag) [env: VOUCH_API_KEY_ENV].
    #[arg(long, value_name = "NAME")]
    pub api_key_env: Option<String>,

    #[arg(long, value_name = "MODE", value_enum, help = format!(
        "How tool calls are requested: native tool calls, constrained JSON replies, or auto \
         [default: vouch.toml's tool_mode, else {}]",
        default_tool_mode()
    ))]
    pub tool_mode: Option<ToolMode>,

    /// Do not probe the endpoint before the run, nor use what an earlier probe of it found (the tool mode, the call syntax learned from its chat template).
    #[arg(long)]
    pub no_probe: bool,

    #[arg(long, value_name = "N", help = format!(
        "Stop after this many model turns [default: the task's max_turns, else vouch.toml's, else {DEFAULT_MAX_TURNS}]"
    ))]
    pub max_turns: Option<u32>,

    #[arg(long, value_name = "N", help = format!(
        "Turns without a successful edit before only edit, write_file and submit are offered \
         ({DEFAULT_FORCING_TURNS} more turns, then the run stops as stalled). \
         [default: vouch.toml's stall_turns, else {DEFAULT_STALL_TURNS}]"
    ))]
    pub stall_turns: Option<u32>,

    /// Stop the run after this much wall time (e.g. 30m, 2h).
    #[arg(long, value_name = "DURATION")]
    pub wall_time: Option<String>,

    /// Stop the run once prompt plus completion tokens reach this many.
    #[arg(long, value_name = "N")]
    pub token_budget: Option<u64>,

    #[arg(long, value_name = "N", help = format!(
        "How many times a change the gate rejects goes back to the model for repair. \
         [default: vouch.toml's repair_cycles, else {DEFAULT_REPAIR_CYCLES}]"
    ))]
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

    #[arg(long, value_name = "DURATION", help = format!(
        "Timeout of each `shell` command (e.g. 30s, 5m); the command's process group is killed \
         [default: {}s]",
        DEFAULT_SHELL_TIMEOUT.as_secs()
    ))]
    pub shell_timeout: Option<String>,

    /// Also write the run's JSON report to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,

    #[arg(long, value_name = "N", help = format!(
        "The model's context size in tokens, used when the server does not tell (llama-server's /props does); \
         old tool outputs are elided past {ELIDE_AT}% of it. [default: vouch.toml's context, else {DEFAULT_CONTEXT}]"
    ))]
    pub context: Option<u64>,

    #[arg(long, value_name = "N", help = format!(
        "Tokens one reply may generate (the request's max_tokens), so that no turn runs without end. \
         [default: vouch.toml's max_tokens, else {DEFAULT_MAX_TOKENS}]"
    ))]
    pub max_tokens: Option<u32>,

    #[arg(long, value_name = "BYTES", help = format!(
        "The first message shows the repository's file names and the text of the files the task is about \
         (named in it, defining a name it mentions, or using one), up to BYTES of text, so that the model \
         can change the code on its first turn; 0 shows nothing. \
         [default: vouch.toml's preload, else {}]",
        crate::tools::DEFAULT_OVERVIEW_BYTES
    ))]
    pub preload: Option<usize>,

    /// How the model works. `tools`: it drives read_file, edit, run_tests and submit itself. `guided`: vouch
    /// shows the code, asks for the corrected function and then a regression test as code blocks, puts
    /// them into their files, runs the tests and the gate, and sends back what failed; for small models
    /// (0.5B-3B) that cannot drive tools. The gate decides either way. [default: guided when vouch serves
    /// one of its own models (no endpoint configured), else tools]
    #[arg(long, value_enum, value_name = "HOW")]
    pub strategy: Option<crate::agent::Strategy>,

    /// Remove the task's existing worktree and branch vouch/<task-id> first.
    #[arg(long, conflicts_with = "resume")]
    pub fresh: bool,

    /// Continue the unfinished run in the task's workspace (crashed, model error, budget, Ctrl-C): the same conversation from its transcript, turns and tokens counted on.
    #[arg(long)]
    pub resume: bool,

    /// No per-turn lines, no summary and no warnings on stderr, only errors (the records are still written).
    #[arg(long, short)]
    pub quiet: bool,

    /// After the run, push its branch and open (or update) its pull request as `vouch pr` does: for a
    /// verified run; `--open-pr=always` opens a draft with the report for any other finished run too.
    #[arg(long, value_enum, value_name = "WHEN", num_args = 0..=1, require_equals = true,
          default_missing_value = "verified")]
    pub open_pr: Option<OpenPr>,

    /// With --open-pr: open the pull request as a draft.
    #[arg(long, requires = "open_pr")]
    pub draft: bool,

    /// With --issue: post the run's final verdict as a comment on the issue.
    #[arg(long, requires = "issue")]
    pub comment: bool,

    #[command(flatten)]
    pub forge: ForgeArgs,

    #[command(flatten)]
    pub checks: GateCheckArgs,

    /// What the gate found in a previous attempt (a text file): added to the task the model reads (`vouch backlog --attempts`).
    #[arg(long, value_name = "FILE", hide = true)]
    pub prior_findings: Option<PathBuf>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    /// Every command of the tree with its path (`vouch toolcalls parse`), the root first.
    fn commands() -> Vec<(String, clap::Command)> {
        fn walk(path: String, cmd: &clap::Command, out: &mut Vec<(String, clap::Command)>) {
            out.push((path.clone(), cmd.clone()));
            for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
                walk(format!("{path} {}", sub.get_name()), sub, out);
            }
        }
        let mut root = Cli::command();
        root.build();
        let mut out = Vec::new();
        walk("vouch".into(), &root, &mut out);
        out
    }

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn the_tree_has_every_command() {
        let names: Vec<String> = commands().into_iter().map(|(path, _)| path).collect();
        assert_eq!(
            names,
            [
                "vouch",
                "vouch gate",
                "vouch toolcalls",
                "vouch toolcalls parse",
                "vouch profile",
                "vouch run",
                "vouch clean",
                "vouch model",
                "vouch model setup",
                "vouch model list",
                "vouch model serve",
                "vouch pr",
                "vouch probe",
                "vouch backlog",
            ]
        );
    }

    #[test]
    fn every_flag_of_every_command_has_help_text() {
        for (path, cmd) in commands() {
            for arg in cmd.get_arguments() {
                let help = arg.get_help().map(|h| h.to_string()).unwrap_or_default();
                assert!(
                    !help.trim().is_empty(),
                    "`{path}`: {} has no help text",
                    arg.get_long()
                        .map(|l| format!("--{l}"))
                        .unwrap_or_else(|| arg.get_id().to_string())
                );
            }
        }
    }

    #[test]
    fn every_command_help_has_examples() {
        for (path, mut cmd) in commands() {
            let help = cmd.render_long_help().to_string();
            let examples = help
                .split_once("\nExamples:\n")
                .map(|(_, rest)| rest)
                .unwrap_or_else(|| panic!("`{path} --help` has no Examples section:\n{help}"));
            let first = examples.lines().next().unwrap_or_default();
            assert!(
                first.trim_start().starts_with(&path),
                "`{path} --help`: the first example does not run `{path}`: {first}"
            );
        }
    }

    #[test]
    fn the_help_shows_the_named_defaults() {
        let run = commands()
            .into_iter()
            .find(|(path, _)| path == "vouch run")
            .map(|(_, mut cmd)| cmd.render_long_help().to_string())
            .unwrap();
        // Wrapping depends on the terminal; compare with single spaces.
        let run = run.split_whitespace().collect::<Vec<_>>().join(" ");
        for default in [
            format!("else {DEFAULT_MAX_TURNS}]"),
            format!("else {DEFAULT_STALL_TURNS}]"),
            format!("({DEFAULT_FORCING_TURNS} more turns"),
            format!("else {DEFAULT_REPAIR_CYCLES}]"),
            format!("else {DEFAULT_CONTEXT}]"),
            format!("past {ELIDE_AT}% of it"),
            format!("[default: {}s]", DEFAULT_SHELL_TIMEOUT.as_secs()),
            format!("else none: {MANAGED_ENDPOINT}]"),
            format!("else {DEFAULT_MODEL}]"),
            "else auto]".to_string(),
            format!("[default: {DEFAULT_RERUNS}]"),
        ] {
            assert!(
                run.contains(&default),
                "`vouch run --help` lacks {default:?}:\n{run}"
            );
        }
    }
}
