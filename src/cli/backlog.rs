//! `vouch backlog`'s flags (in their own file: cli.rs holds the other commands').

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use super::{ForgeArgs, OpenPr};

pub(super) const BACKLOG_EXAMPLES: &str = "\
Examples:
  vouch backlog                                   every tasks/*.md of the repository in ., a few at a time
  vouch backlog tasks/ --jobs 3 --json out.json --markdown out.md
  vouch backlog --label vouch --open-pr           the open issues labelled `vouch`; a pull request for each verified one
  vouch backlog --shard 2/4 --plan --json plan.json   the ids shard 2 of 4 would run, without running them
  vouch backlog --index 3 --task-ids a,b,c,d      run task d only (one pod of an Indexed Job)
  vouch backlog --attempts 2 --escalate http://gpu:8000#qwen3-coder-30b
  vouch backlog --resume                          after Ctrl-C: only the unfinished tasks
  vouch backlog -- --max-turns 20 --no-bite       the arguments after -- go to every `vouch run`
  vouch backlog --label ready --open-pr --emit k8s --image ghcr.io/acme/vouch-rust:1 \
      --clone https://github.com/acme/calc --endpoint http://llm:8080 > job.yaml
                                                  the backlog as a Kubernetes Indexed Job, run nothing

Each task runs as its own `vouch run` (its worktree and branch vouch/<task-id>, its records), claimed first with a
lock file under $VOUCH_DATA/backlogs/<repo-key>/<backlog-key>/claims/ (and the claim label, for issues) so that a
second runner on the same backlog skips it. The state there (one JSON record per task, every attempt) is what
--resume reads. A task's id is its file stem, or OWNER/REPO#N for an issue; --shard K/N keeps the tasks whose id
hashes to K (sha256, so adding a task never moves another).
Exit codes: 0 every task verified, 1 a task rejected or failed, 2 usage error, 3 infrastructure error, 130 interrupted.
With --index: the task's own (0 verified, 1 rejected or failed, 3 infrastructure or held by another runner, 130).";

/// `vouch backlog`.
#[derive(Debug, Clone, Args)]
pub struct BacklogArgs {
    /// The folder of task files (`*.md`, each as `vouch run --task` reads it) [default: <repo>/tasks].
    #[arg(value_name = "DIR", conflicts_with = "label")]
    pub dir: Option<PathBuf>,

    /// Take the open forge issues with this label as the tasks instead of a folder.
    #[arg(long, value_name = "L")]
    pub label: Option<String>,

    /// The label that marks an issue as claimed while a runner works on it.
    #[arg(long, value_name = "L", default_value = "vouch:claimed")]
    pub claim_label: String,

    /// The repository the tasks change (any directory inside it) [default: .].
    #[arg(long, value_name = "DIR")]
    pub repo: Option<PathBuf>,

    /// Tasks run at once [default: the CPU cores, at most the model server's slots (llama-server's /props); 1 with the managed server].
    #[arg(long, short, value_name = "N")]
    pub jobs: Option<usize>,

    /// Only the K-th of N shards of the plan (1-based), e.g. 2/4, so N machines split the backlog.
    #[arg(long, value_name = "K/N")]
    pub shard: Option<String>,

    /// Print the task ids this invocation would run (and write them with --json), run nothing.
    #[arg(long)]
    pub plan: bool,

    /// Write the summary (with --plan: `{"tasks": [ids]}`) as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,

    /// Write the summary as Markdown to FILE.
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,

    /// Run only the I-th task (0-based) of --task-ids, else of the plan, and exit with its outcome.
    #[arg(long, value_name = "I")]
    pub index: Option<usize>,

    /// With --index: the task ids the index counts in (each must be in the backlog).
    #[arg(long, value_name = "A,B,C", value_delimiter = ',', requires = "index")]
    pub task_ids: Option<Vec<String>>,

    /// Attempts per task: a rejected attempt is retried with the gate's findings in the prompt.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub attempts: u32,

    /// A task that failed its attempts runs once more against this endpoint (and model, after #).
    #[arg(long, value_name = "URL[#MODEL]")]
    pub escalate: Option<String>,

    /// Run only the tasks without a finished record (interrupted or never started), from fresh worktrees.
    #[arg(long)]
    pub resume: bool,

    /// The model server's OpenAI-compatible base URL for every task [env: VOUCH_ENDPOINT] [default: vouch.toml's endpoint, else vouch serves its model once for the backlog].
    #[arg(long, value_name = "URL")]
    pub endpoint: Option<String>,

    /// The model name for every task [env: VOUCH_MODEL] [default: vouch.toml's model].
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,

    /// No task lines and no summary on stderr (the files and the state are still written).
    #[arg(long, short)]
    pub quiet: bool,

    /// Each task's `vouch run --open-pr`: a pull request for each verified task (=always: a draft for any finished one).
    #[arg(long, value_enum, value_name = "WHEN", num_args = 0..=1, require_equals = true,
          default_missing_value = "verified")]
    pub open_pr: Option<OpenPr>,

    /// With --open-pr: open the pull requests as drafts.
    #[arg(long, requires = "open_pr")]
    pub draft: bool,

    #[command(flatten)]
    pub forge: ForgeArgs,

    /// Write the backlog as a job of this engine (YAML on stdout, the plan's task ids frozen in it) and run nothing.
    #[arg(long, value_enum, value_name = "ENGINE", conflicts_with_all = ["index", "plan", "resume"])]
    pub emit: Option<Emit>,

    #[command(flatten)]
    pub k8s: K8sArgs,

    /// More arguments for every `vouch run`, after `--` (budgets, gate checks, --author...).
    #[arg(last = true, value_name = "RUN_ARGS")]
    pub run_args: Vec<String>,
}

/// Where `--emit` writes the backlog.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Emit {
    /// A Kubernetes Indexed Job: one index per task, each pod running `vouch backlog --index I`.
    K8s,
}

/// The Job's settings for `--emit k8s`.
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "Kubernetes Job (--emit k8s)")]
pub struct K8sArgs {
    /// The container image: vouch, git and the toolchains the gate's profile needs (required with --emit k8s).
    #[arg(long, value_name = "IMAGE", requires = "emit")]
    pub image: Option<String>,

    /// The Job's name [default: backlog-<label or folder name>].
    #[arg(long, value_name = "NAME", requires = "emit")]
    pub job_name: Option<String>,

    /// The Job's namespace [default: kubectl's current one].
    #[arg(long, value_name = "NS", requires = "emit")]
    pub namespace: Option<String>,

    /// Pods at once [default: --jobs, else the cluster's].
    #[arg(long, value_name = "N", requires = "emit")]
    pub parallelism: Option<i32>,

    /// Retries of one task after an infrastructure failure (exit 3) or a crash.
    #[arg(long, value_name = "N", requires = "emit", default_value_t = crate::backlog::k8s::DEFAULT_BACKOFF_LIMIT_PER_INDEX)]
    pub backoff_limit_per_index: i32,

    /// CPU request per pod, e.g. 2 or 500m [default: 1].
    #[arg(long, value_name = "Q", requires = "emit")]
    pub cpu: Option<String>,

    /// Memory request per pod, e.g. 4Gi [default: 2Gi].
    #[arg(long, value_name = "Q", requires = "emit")]
    pub memory: Option<String>,

    /// Memory limit per pod [default: 4Gi].
    #[arg(long, value_name = "Q", requires = "emit")]
    pub memory_limit: Option<String>,

    /// An init container clones this URL into the pod [default: the image's working directory is the repository].
    #[arg(long, value_name = "URL", requires = "emit")]
    pub clone: Option<String>,

    /// The revision the pod clones [default: the repository's HEAD commit].
    #[arg(long, value_name = "REV", requires = "clone")]
    pub revision: Option<String>,

    /// The Secret key holding the clone's token, for a private repository.
    #[arg(long, value_name = "SECRET/KEY", requires = "clone")]
    pub clone_token_secret: Option<String>,

    /// A variable of the pod set from a Secret's key (repeatable), e.g. MODEL_KEY=vouch-model/api-key.
    #[arg(long = "secret", value_name = "ENV=SECRET/KEY", requires = "emit")]
    pub secrets: Vec<String>,

    /// The variable holding the model server's API key [default secret: vouch-model/api-key].
    #[arg(long, value_name = "VAR", requires = "emit")]
    pub api_key_env: Option<String>,
}
