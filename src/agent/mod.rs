//! The agent loop: a local model works on one task in its own worktree, and the gate, not the model,
//! decides whether the result is any good.
//!
//! The conversation only grows: each turn appends the model's reply and then one tool result per call, in
//! call order, so the server's prompt cache stays valid and the transcript is the exact history. A failing
//! tool is an answer, not an error: it goes back to the model as the call's result. Only the model client
//! failing, a tool's infrastructure failing, a budget, a rail or Ctrl-C end the loop early.
//!
//! This file starts a run (worktree, records, tools, first message) and ends it (the report); `turns.rs` is
//! the tool loop itself: requests, calls in order through the tool [`Registry`], and the records of each
//! turn; `guided/` is the guided strategy's loop. `rails.rs` decides when to warn and when to stop
//! (replies without a call, repeated calls, the forcing phase, budgets); `elide.rs` which old tool outputs
//! to drop when the context fills; `verify.rs` what a submission leads to (commit, gate, repair cycles).
//! `task.rs` reads tasks, `prompt.rs` holds the fixed texts, `transcript.rs` and `report.rs` write the
//! records.

pub mod elide;
mod format;
mod guided;
pub mod limits;
mod next_step;
pub mod prompt;
pub mod rails;
pub mod records;
pub mod report;
pub mod task;
pub mod transcript;
mod turns;
mod verify;

use std::collections::HashSet;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use tokio_util::sync::CancellationToken;

use crate::error::VouchError;
use crate::gate::outcome::Claim;
use crate::gate::paths::Classifier;
use crate::gate::profile::{Profile, REPO_PROFILE};
use crate::gate::report::Report;
use crate::model::{ChatMessage, Client, ModelConfig, ModelError, Redactor};
use crate::sandbox::Sandbox;
use crate::tools::{Registry, Settings, ShellRunner, TestRunner, Workspace};
use crate::ui::Ui;
use crate::workspace::Worktree;

pub use elide::ELIDE_AT;
pub use rails::{
    Rails, DEFAULT_FORCING_TURNS, DEFAULT_MAX_TURNS, DEFAULT_REPAIR_CYCLES, DEFAULT_STALL_TURNS,
};
pub use report::{RunReport, Status, StopReason, Tokens};
pub use task::Task;
pub use verify::repair_message;

use limits::WallClock;
use rails::{Nudge, RailState, Step};
use records::{Records, RunState};
use transcript::{Event, NudgeKind, Transcript};

/// The context size assumed when the server does not say and `--context` is not given.
pub const DEFAULT_CONTEXT: u64 = 32768;
/// Timeout of each `shell` command, unless `--shell-timeout` says.
pub const DEFAULT_SHELL_TIMEOUT: Duration = Duration::from_secs(120);

/// Everything one run needs.
#[derive(Clone, Debug)]
pub struct Config {
    pub task: Task,
    /// The user's repository (any directory inside it).
    pub repo: PathBuf,
    /// The revision the branch starts from.
    pub base: String,
    /// `--profile` or the task's: a preset name or a file [default: detected].
    pub profile: Option<String>,
    /// Where worktrees go (by default [`records::workspaces`], outside the user's checkout).
    pub workspaces: PathBuf,
    pub fresh: bool,
    /// Continue the run whose workspace exists, from its transcript.
    pub resume: bool,
    /// The server's context size in tokens when `/props` does not say [default: [`DEFAULT_CONTEXT`]].
    pub context: Option<u64>,
    /// Bytes of file text the first message shows (the files the task is about); 0 shows nothing.
    pub preload: usize,
    pub model: ModelConfig,
    pub rails: Rails,
    /// `Name <email>` for the commit [default: the repository's git config, else vouch's].
    pub author: Option<String>,
    /// Add a `Signed-off-by:` trailer with the author to the commit.
    pub signoff: bool,
    /// Offer the `shell` tool, with this timeout per command (`--allow-shell`, `--shell-timeout`).
    pub shell: Option<Duration>,
    /// The gate's cache root.
    pub cache: PathBuf,
    /// How the model works: through tools, or guided (asked for code, the harness does the rest).
    pub strategy: Strategy,
    /// The gate's checks (`--strict-baseline`, `--no-bite`, `--deny`, ...). Each gating sets the repository,
    /// revisions, profile, claim, cache and workspaces itself, and adds the task's scope to `allow`.
    pub gate: crate::gate::Options,
}

/// How a run has the model work.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    clap::ValueEnum,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum Strategy {
    /// The model drives: it calls read_file, edit, run_tests, submit and the rest.
    #[default]
    Tools,
    /// The harness drives: it shows the code, asks for the fixed function and then a test as code
    /// blocks, writes them into their files, runs the tests and the gate, and sends back what failed.
    /// For small models that cannot drive tools.
    Guided,
}

/// Runs the task to a status. `Err` means the run could not start (bad repository, existing workspace,
/// bad model configuration); everything after that ends in a report.
pub async fn run(cfg: &Config, ui: &Ui, cancel: &CancellationToken) -> Result<RunReport> {
    let client = Client::new(cfg.model.clone())
        .map_err(|e| VouchError::usage(format!("model configuration: {e}")))?;
    let redactor = client.redactor().clone();
    let sandbox = Sandbox::new(cfg.gate.sandbox).map_err(|e| {
        VouchError::infra_hint(
            e.to_string(),
            "install bubblewrap (Debian: apt-get install bubblewrap) and allow unprivileged user namespaces, or pass --sandbox auto",
        )
    })?;
    // Before anything is made or run: a sandbox that lets a write or a connect through runs nothing.
    sandbox.prove()?;
    let profile = match &cfg.profile {
        Some(p) => Some(Profile::from_arg(p)?),
        None => None,
    };
    let records = Records::of(&cfg.repo, &cfg.task.id)?;
    let started = Instant::now();
    let clock = WallClock::start(cancel, cfg.rails.wall_time);
    client.set_deadline(clock.deadline);
    let resumed = if cfg.resume {
        Some(resumable(cfg, &records)?)
    } else {
        None
    };
    let wt = match &resumed {
        Some((state, _)) => Worktree::open(&cfg.repo, &cfg.workspaces, &cfg.task.id, &state.base)?,
        None => {
            Worktree::check_free(&cfg.repo, &cfg.workspaces, &cfg.task.id, cfg.fresh)?;
            // Nothing is made for a server that does not answer: a dead endpoint leaves no worktree and
            // no branch behind.
            let answered = tokio::select! {
                _ = clock.token.cancelled() => None,
                r = client.ping() => Some(r),
            };
            match answered {
                Some(Ok(())) => {}
                Some(Err(e)) => return unstarted(cfg, &records, &redactor, ui, started, e),
                None if cancel.is_cancelled() => return Err(VouchError::Interrupted.into()),
                None => {
                    let e = ModelError::Timeout {
                        what: "waiting for the server to answer at all",
                        after: cfg.rails.wall_time.unwrap_or_default(),
                    };
                    return unstarted(cfg, &records, &redactor, ui, started, e);
                }
            }
            records.remove()?;
            Worktree::create(
                &cfg.repo,
                &cfg.base,
                &cfg.workspaces,
                &cfg.task.id,
                cfg.fresh,
            )?
        }
    };
    records.create()?;
    records.write_state(&RunState {
        task: cfg.task.id.clone(),
        base: wt.base.to_string(),
        branch: wt.branch.clone(),
        workspace: wt.dir.clone(),
    })?;
    // As the gate chooses: the flag, else the repository's own profile as committed at base, else
    // detection at base. Never a file in the worktree: the model can write those.
    let profile = match profile {
        Some(p) => Some(p),
        None => profile_at(&wt)?,
    };
    if let Some(p) = &profile {
        if let Ok(text) = toml::to_string(p) {
            write(&records.profile(), &text)?;
        }
    }
    let mut transcript = match &resumed {
        Some(_) => Transcript::append(&records.transcript())?,
        None => Transcript::create(&records.transcript())?,
    }
    .redacting(redactor.clone());
    let resumed = resumed.map(|(_, r)| r).unwrap_or_default();
    if cfg.resume {
        transcript.event(&Event::Resume {
            turns: resumed.turns,
            messages: resumed.messages.len(),
            sent: resumed.sent,
            tokens: resumed.tokens,
            base: wt.base.to_string(),
        });
    } else {
        transcript.event(&Event::Start {
            task: cfg.task.id.clone(),
            base: wt.base.to_string(),
            branch: wt.branch.clone(),
        });
    }
    // Code the model wrote runs confined: of the user's repository it may read only the objects (read-only),
    // never its config, hooks, index, refs or the checkout's files; it writes only the worktree and its
    // caches.
    let readable = vec![crate::git::objects_dir(&crate::git::open(&wt.repo)?)];
    let settings = Settings {
        tests: profile.as_ref().map(|p| {
            TestRunner::new(
                p,
                &wt.dir,
                records.logs(),
                cfg.cache.join("agent").join(&cfg.task.id),
                sandbox.clone(),
                readable.clone(),
            )
        }),
        shell: cfg.shell.map(|timeout| {
            ShellRunner::new(
                wt.dir.clone(),
                records.logs(),
                timeout,
                cfg.model.api_key_env.as_deref(),
                sandbox.clone(),
                cfg.cache
                    .join("agent")
                    .join(&cfg.task.id)
                    .join("shell-home"),
                readable.clone(),
            )
        }),
    };
    // The project's formatter, applied to the run's files before each commit.
    let formatter = profile.as_ref().and_then(|p| {
        format::Formatter::new(
            p,
            &wt.dir,
            &wt.git_dir,
            records.logs(),
            cfg.cache.join("agent").join(&cfg.task.id),
            sandbox.clone(),
            readable.clone(),
        )
    });
    if let Some(warning) = sandbox.warning() {
        ui.line(&format!("  WARNING  {warning}"));
    }
    let registry = Registry::for_run(&settings);
    let classifier = match &profile {
        Some(p) => Some(Classifier::new(&p.paths, &[], &[])?),
        None => None,
    };
    let test_watch = next_step::TestWatch::new(classifier, cfg.resume);
    let workspace = Workspace::new(&wt.dir)?;
    ui.line(&format!(
        "vouch run {}: {}worktree {} on branch {} from {}",
        cfg.task.id,
        if cfg.resume {
            format!("resuming after turn {}, ", resumed.turns)
        } else {
            String::new()
        },
        wt.dir.display(),
        wt.branch,
        short(&wt.base.to_string())
    ));
    if let Some(rel) = unignored_inside(&wt) {
        ui.line(&format!(
            "  note: the workspace is inside your checkout and not ignored: `git status` there lists {}; \
             run vouch from another directory, or let it use its default place",
            rel
        ));
    }
    let guided = (cfg.strategy == Strategy::Guided && resumed.messages.is_empty())
        .then(|| guided_start(cfg, &workspace, classifier_for(&profile)))
        .flatten();
    if cfg.strategy == Strategy::Guided && guided.is_none() {
        ui.line(
            "  guided: no source file of a known language to show; the model drives tools instead",
        );
    }
    let messages = if let Some((first, files)) = &guided {
        ui.line(&format!(
            "  guided: the model is asked for code; sources {}, tests {}",
            files.sources.join(", "),
            if files.tests.is_empty() {
                "in the sources".to_string()
            } else {
                files.tests.join(", ")
            }
        ));
        vec![
            ChatMessage::system(prompt::GUIDED_SYSTEM),
            ChatMessage::user(first.clone()),
        ]
    } else if resumed.messages.is_empty() {
        let mut first = cfg.task.message();
        // The code the task is about, shown at once: a small model edits on its first turn instead of
        // spending turns finding and reading it.
        if let Some(view) = crate::tools::overview(&workspace, &first, cfg.preload) {
            first.push_str(&view.text);
            ui.line(&format!(
                "  first message: the {} file names{}",
                view.files,
                if view.shown.is_empty() {
                    String::new()
                } else {
                    format!(
                        " and the text of {} ({:.1} KB)",
                        view.shown.join(", "),
                        view.bytes as f64 / 1024.0
                    )
                }
            ));
        }
        vec![
            ChatMessage::system(prompt::SYSTEM),
            ChatMessage::user(first),
        ]
    } else {
        resumed.messages
    };
    if cfg.resume {
        // What the earlier run's tools changed is not known: the commit takes every change but artefacts.
        workspace.record_unknown();
    }
    let mut agent = Agent {
        cfg,
        ui,
        cancel,
        limit: clock.token.clone(),
        client,
        redactor,
        registry,
        workspace,
        settings,
        formatter,
        wt,
        transcript,
        messages,
        sent: resumed.sent,
        started,
        turns: resumed.turns,
        tokens: resumed.tokens,
        last_prompt: resumed.last_prompt,
        rails: RailState::new(cfg.rails.clone()),
        repairs: resumed.repairs,
        claimed: None,
        summary: None,
        gate: resumed.gate,
        commit: resumed.commit,
        error: None,
        oversized: HashSet::new(),
        tests_seen: None,
        asked_again: false,
        test_watch,
        plain: guided.is_some(),
        temperature: None,
    };
    if matches!(agent.messages.last(), Some(ChatMessage::Assistant { .. })) {
        // The earlier run stopped on a reply without a call: the conversation goes on with a reminder.
        agent.rail_nudge(&Nudge::NoToolCall { last: false });
    }
    let mut stopped = None;
    if resumed.overflowed {
        // The same request would overflow again: old tool outputs go before it is sent. With none left to
        // elide it would only overflow again, resume after resume, so the run stops and says why.
        agent.client.probe().await;
        ui.line("  the last request overflowed the context: eliding old tool outputs before resending it");
        if !agent.elide_after_overflow() {
            let message = format!(
                "the last request overflowed the model's context ({} tokens) and no tool output is left \
                 to elide, so resending it would overflow again; give the server a larger context or the \
                 model a shorter task",
                agent.context_size()
            );
            ui.line(&format!("  {message}"));
            agent.transcript.event(&Event::ModelError {
                turn: agent.turns,
                error: message.clone(),
                overflow: true,
            });
            agent.error = Some(message);
            stopped = Some((Status::Error, StopReason::ModelError));
        }
    }
    let (status, stop) = match (stopped, guided) {
        (Some(stopped), _) => stopped,
        (None, Some((_, files))) => agent.run_guided(files).await,
        (None, None) => agent.run_loop().await,
    };
    // The messages added since the last request, so that a resumed run goes on from here.
    agent.log_messages();
    agent.transcript.event(&Event::Stop {
        status,
        stop_reason: stop,
        turns: agent.turns,
    });
    let report = RunReport {
        task: cfg.task.id.clone(),
        title: cfg.task.title.clone(),
        task_text: cfg.task.body.clone(),
        model: cfg.model.model.clone(),
        status,
        stop_reason: stop,
        claimed: agent.claimed,
        summary: agent.summary.clone(),
        gate: agent.gate.clone(),
        branch: agent.wt.branch.clone(),
        base: agent.wt.base.to_string(),
        commit: agent.commit.clone(),
        workspace: agent.wt.dir.display().to_string(),
        records: records.dir().display().to_string(),
        turns: agent.turns,
        max_turns: cfg.rails.max_turns,
        tokens: agent.tokens,
        repairs: agent.repairs,
        error: agent.error.clone(),
        duration_ms: agent.started.elapsed().as_millis() as u64,
    };
    write_report(&records, &agent.redactor, &report)?;
    Ok(report)
}

/// The report of a run whose server never answered: nothing was made but the records.
fn unstarted(
    cfg: &Config,
    records: &Records,
    redactor: &Redactor,
    ui: &Ui,
    started: Instant,
    e: crate::model::ModelError,
) -> Result<RunReport> {
    let message = e.to_string();
    ui.line(&format!(
        "vouch run {}: the model server did not answer: {message}; no worktree or branch was made",
        cfg.task.id
    ));
    let base = crate::git::open(&cfg.repo)
        .and_then(|r| crate::git::resolve(&r, &cfg.base))
        .map(|o| o.to_string())
        .unwrap_or_default();
    records.remove()?;
    records.create()?;
    let mut transcript = Transcript::create(&records.transcript())?.redacting(redactor.clone());
    transcript.event(&Event::ModelError {
        turn: 0,
        error: message.clone(),
        overflow: false,
    });
    let report = RunReport {
        task: cfg.task.id.clone(),
        title: cfg.task.title.clone(),
        task_text: cfg.task.body.clone(),
        model: cfg.model.model.clone(),
        status: Status::Error,
        stop_reason: StopReason::ModelError,
        claimed: None,
        summary: None,
        gate: None,
        branch: String::new(),
        base,
        commit: None,
        workspace: String::new(),
        records: records.dir().display().to_string(),
        turns: 0,
        max_turns: cfg.rails.max_turns,
        tokens: Tokens::default(),
        repairs: 0,
        error: Some(message),
        duration_ms: started.elapsed().as_millis() as u64,
    };
    write_report(records, redactor, &report)?;
    Ok(report)
}

/// `report.json` and `report.md`, scrubbed of the key.
fn write_report(records: &Records, redactor: &Redactor, report: &RunReport) -> Result<()> {
    write(
        &records.report_json(),
        &redactor.text(&serde_json::to_string_pretty(report)?),
    )?;
    write(&records.report_md(), &redactor.text(&report.markdown()))
}

fn classifier_for(profile: &Option<Profile>) -> Option<Classifier> {
    profile
        .as_ref()
        .and_then(|p| Classifier::new(&p.paths, &[], &[]).ok())
}

/// The guided strategy's first message and files: the files the task is about that are code, split into
/// sources and tests by the profile. None when none is code of a language vouch parses.
fn guided_start(
    cfg: &Config,
    workspace: &Workspace,
    classifier: Option<Classifier>,
) -> Option<(String, guided::Files)> {
    let task = cfg.task.message();
    let view = crate::tools::overview(workspace, &task, cfg.preload.max(1))?;
    let mut texts = Vec::new();
    let mut files = guided::Files {
        sources: Vec::new(),
        tests: Vec::new(),
        focus: String::new(),
        focus_defs: Vec::new(),
        symptom: guided::symptom(&task),
    };
    for rel in &view.shown {
        if !guided::is_code(rel) {
            continue;
        }
        let Ok(path) = workspace.resolve(rel) else {
            continue;
        };
        let Ok(text) = std::fs::read_to_string(&path.abs) else {
            continue;
        };
        let test = classifier.as_ref().is_some_and(|c| c.is_test(rel))
            || (!rel.ends_with(".rs") && next_step::has_test_mark(&text));
        if test {
            files.tests.push(rel.clone());
        } else {
            files.sources.push(rel.clone());
        }
        texts.push((rel.clone(), text));
    }
    if files.sources.is_empty() {
        return None;
    }
    let sources: Vec<(String, String)> = texts
        .iter()
        .filter(|(rel, _)| files.sources.contains(rel))
        .cloned()
        .collect();
    files.focus_defs = guided::focus_defs(&task, &sources);
    files.focus = guided::focus(&files.focus_defs);
    // The tests first and the sources last, nearest the ask: a small model answers with the last code it saw.
    texts.sort_by_key(|(rel, _)| files.sources.contains(rel));
    Some((guided::first_message(&task, &texts), files))
}

/// The profile as the gate would choose it without `--profile`: the repository's own as committed at
/// base, else the preset detected from base's root files.
fn profile_at(wt: &Worktree) -> Result<Option<Profile>> {
    let repo = crate::git::open(&wt.repo)?;
    if let Some(text) = crate::git::file_text(&repo, wt.base, REPO_PROFILE) {
        let origin = format!("{REPO_PROFILE} at base");
        return Ok(Some(Profile::from_toml(&text, &origin)?));
    }
    let roots: Vec<String> = crate::git::tree_paths(&repo, wt.base)?
        .into_iter()
        .filter(|p| !p.contains('/'))
        .collect();
    Ok(Profile::detect(&roots))
}

/// How often a line says that a turn is still running (the spinner shows it on a terminal).
pub const TURN_PROGRESS_EVERY: Duration = Duration::from_secs(30);

/// What the calls of a turn lead to.
enum Flow {
    /// The calls as the cycle detector sees them.
    Continue(Vec<Step>),
    /// The gate failed a GO and the repair message was sent.
    Repair,
    Stop(Status, StopReason),
}

struct Agent<'a> {
    cfg: &'a Config,
    ui: &'a Ui,
    /// The user's Ctrl-C.
    cancel: &'a CancellationToken,
    /// Ctrl-C or the wall time: what tools and the gate stop on.
    limit: CancellationToken,
    client: Client,
    /// Removes the API key from tool results and records.
    redactor: Redactor,
    /// The tools offered to the model.
    registry: Registry,
    workspace: Workspace,
    settings: Settings,
    /// The project's formatter, run on the run's files before each commit.
    formatter: Option<format::Formatter>,
    wt: Worktree,
    transcript: Transcript,
    messages: Vec<ChatMessage>,
    /// How many of `messages` the last request sent (those are in the transcript already).
    sent: usize,
    started: Instant,
    turns: u32,
    tokens: Tokens,
    /// Prompt tokens of the last answered request.
    last_prompt: u64,
    rails: RailState,
    repairs: u32,
    claimed: Option<Claim>,
    summary: Option<String>,
    gate: Option<Report>,
    commit: Option<String>,
    error: Option<String>,
    /// Calls of the current turn too large to run (their arguments were replaced by size and hash).
    oversized: HashSet<String>,
    /// The tests' result the stall rail last saw: progress is this changing.
    tests_seen: Option<crate::tools::TestResult>,
    /// The last reply was empty and the same request was sent again (once per request).
    asked_again: bool,
    /// Whether the run's changes hold a test, for the reminder to write one.
    test_watch: next_step::TestWatch,
    /// Requests offer no tools (the guided strategy asks for code).
    plain: bool,
    /// The next request's temperature, when the loop wants another sample than the last.
    temperature: Option<f64>,
}

/// What `--resume` starts from: the state and transcript vouch wrote for the earlier run (outside the
/// worktree), unless that run finished.
fn resumable(cfg: &Config, records: &Records) -> Result<(RunState, transcript::Resumed)> {
    if let Ok(text) = std::fs::read_to_string(records.report_json()) {
        let status = serde_json::from_str::<RunReport>(&text)
            .ok()
            .map(|r| r.status);
        if let Some(status @ (Status::Verified | Status::Rejected | Status::NoGo)) = status {
            return Err(VouchError::usage_hint(
                format!(
                    "the run of task `{}` finished ({}); there is nothing to resume",
                    cfg.task.id,
                    status.name()
                ),
                format!(
                    "see {}; pass --fresh instead of --resume to start the task over",
                    records.report_md().display()
                ),
            )
            .into());
        }
    }
    let Some(state) = records.state()? else {
        return Err(VouchError::usage_hint(
            format!(
                "there is no workspace for task `{}` to resume (no records in {})",
                cfg.task.id,
                records.dir().display()
            ),
            "run without --resume to start the task",
        )
        .into());
    };
    let path = records.transcript();
    let resumed = if path.is_file() {
        transcript::resume(&path)?
    } else {
        transcript::Resumed::default()
    };
    Ok((state, resumed))
}

/// The worktree's path relative to the user's working tree when it lies inside it and git does not ignore it.
fn unignored_inside(wt: &Worktree) -> Option<String> {
    let user = crate::git::open(&wt.repo).ok()?;
    let workdir = std::fs::canonicalize(user.workdir()?).ok()?;
    let dir = std::fs::canonicalize(&wt.dir).ok()?;
    let rel = dir.strip_prefix(&workdir).ok()?;
    let ignored = user.is_path_ignored(rel).unwrap_or(true);
    (!ignored).then(|| format!("{}/", rel.display()))
}

fn short(sha: &str) -> &str {
    &sha[..sha.len().min(12)]
}

fn write(path: &std::path::Path, text: &str) -> Result<()> {
    std::fs::write(path, text).with_context(|| format!("write {}", path.display()))
}
