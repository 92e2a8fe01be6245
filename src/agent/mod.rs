//! The agent loop: a local model works on one task in its own worktree, and the gate, not the model,
//! decides whether the result is any good.
//!
//! The conversation only grows: each turn appends the model's reply and then one tool result per call, in
//! call order, so the server's prompt cache stays valid and the transcript is the exact history. A failing
//! tool is an answer, not an error: it goes back to the model as the call's result. Only the model client
//! failing, a tool's infrastructure failing, a budget, a rail or Ctrl-C end the loop early.
//!
//! This file is the loop itself: requests, calls in order through the tool [`Registry`], and the records.
//! `rails.rs` decides when to warn and when to stop (replies without a call, repeated calls, the forcing
//! phase, budgets); `elide.rs` which old tool outputs to drop when the context fills; `verify.rs` what a
//! submission leads to (commit, gate, repair cycles). `task.rs` reads tasks, `prompt.rs` holds the fixed
//! texts, `transcript.rs` and `report.rs` write the records.

pub mod elide;
mod guided;
pub mod limits;
mod next_step;
pub mod prompt;
pub mod rails;
pub mod records;
pub mod report;
pub mod task;
pub mod transcript;
mod verify;

use std::collections::HashSet;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::error::VouchError;
use crate::gate::outcome::{Claim, Verdict};
use crate::gate::paths::Classifier;
use crate::gate::profile::{Profile, REPO_PROFILE};
use crate::gate::report::Report;
use crate::model::{
    ChatMessage, ChatRequest, ChatTurn, Client, ModelConfig, ModelError, Redactor, ToolCall,
};
use crate::sandbox::Sandbox;
use crate::tools::{
    Context as ToolContext, Registry, Settings, ShellRunner, Submission, TestRunner, ToolError,
    Workspace,
};
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
use rails::{Answer, Nudge, RailState, Step, Used};
use records::{Records, RunState};
use transcript::{ElidedMessage, Event, NudgeKind, Transcript};

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
    // Code the model wrote runs confined: it may read the user's repository (the worktree's git data lives
    // there) and write only the worktree and its caches.
    let readable = vec![crate::git::open(&wt.repo)?.commondir().to_path_buf()];
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
    if resumed.overflowed {
        // The same request would overflow again: old tool outputs go before it is sent.
        agent.client.probe().await;
        let context = agent.context_size();
        agent.last_prompt = agent.last_prompt.max(context + context / 4);
        ui.line("  the last request overflowed the context: eliding old tool outputs before resending it");
    }
    let (status, stop) = match guided {
        Some((_, files)) => agent.run_guided(files).await,
        None => agent.run_loop().await,
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
    files.focus = guided::focus(&task, &sources);
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

impl Agent<'_> {
    async fn run_loop(&mut self) -> (Status, StopReason) {
        loop {
            let turn = match self.next_turn().await {
                Ok(turn) => turn,
                Err(end) => return end,
            };
            // An empty reply (the model ended its turn at once, as small models do after a tool result) is
            // asked for again once, with the same messages: the server has them cached, and a sampled
            // second reply usually says something. An empty message in the history would be copied.
            let empty = turn.calls.is_empty()
                && turn.content.trim().is_empty()
                && turn.unknown_tools.is_empty();
            if empty && !self.asked_again {
                self.asked_again = true;
                self.ui.line(&format!(
                    "  turn {}: an empty reply; asking again with the same messages",
                    self.turns
                ));
                // The same turn sampled again: it does not use up one of the run's turns.
                self.turns -= 1;
                continue;
            }
            self.asked_again = false;
            self.messages.push(ChatMessage::assistant(
                turn.content.clone(),
                turn.calls.clone(),
            ));
            let unknown = self.unknown_tools(&turn.unknown_tools);
            let steps = if turn.calls.is_empty() {
                match self.rails.no_call() {
                    Answer::Stop(stop) => return (self.unfinished(), stop),
                    // A call of a tool that does not exist: what the tools are says more than "no call".
                    Answer::Nudge(nudge)
                        if !unknown.is_empty() && nudge.kind() == NudgeKind::NoToolCall =>
                    {
                        self.nudge(NudgeKind::UnknownTool, &unknown);
                    }
                    Answer::Nudge(nudge) => {
                        let mut text = nudge.text();
                        if !unknown.is_empty() {
                            text = format!("{unknown}\n\n{text}");
                        } else if !turn.warnings.is_empty() {
                            text.push_str(&format!(
                                " (What vouch found: {}.)",
                                turn.warnings.join("; ")
                            ));
                        }
                        self.nudge(nudge.kind(), &text);
                    }
                    Answer::Continue => {}
                }
                Vec::new()
            } else {
                match self.calls(&turn.calls, turn.recovered).await {
                    Flow::Continue(steps) => {
                        // Calls the text recovery dropped get no result of their own: say why here.
                        if !unknown.is_empty() {
                            self.nudge(NudgeKind::UnknownTool, &unknown);
                        }
                        steps
                    }
                    Flow::Repair => continue,
                    Flow::Stop(status, stop) => return (status, stop),
                }
            };
            let progress = self.tests_changed();
            match self.rails.end_turn(progress, steps) {
                Answer::Stop(stop) => return (self.unfinished(), stop),
                Answer::Nudge(nudge) => self.rail_nudge(&nudge),
                Answer::Continue => {}
            }
        }
    }

    fn used(&self) -> Used {
        Used {
            turns: self.turns,
            elapsed: self.started.elapsed(),
            tokens: self.tokens.prompt + self.tokens.completion,
        }
    }

    /// Whether the tests' result (pass/fail set of the last `run_tests`) differs from the one seen before.
    fn tests_changed(&mut self) -> bool {
        let now = self.settings.tests.as_ref().and_then(|t| t.last());
        if now.is_none() || now == self.tests_seen {
            return false;
        }
        self.tests_seen = now;
        true
    }

    /// Runs the calls of one turn in order, one tool result each, then the rails and `submit`.
    ///
    /// Calls recovered from a reply's text were all planned before any result came back: they run in
    /// order up to and including the first one that changes files, submits or fails (a failing test run
    /// included), and a `submit` after other calls does not run; the rest are answered
    /// [`prompt::HELD`] (each with its own result, so that results still pair with calls). A plan does not
    /// get to write over a file it never read, nor to submit a change whose tests it never saw. Structured
    /// (native) calls all run, as the model asked.
    async fn calls(&mut self, calls: &[ToolCall], recovered: bool) -> Flow {
        let mut steps = Vec::new();
        let mut held = false;
        let mut submitted: Option<Submission> = None;
        let mut broken: Option<String> = None;
        let mut repeated_stop = false;
        let mut warn_repeat = false;
        // Calls of this reply by name and arguments: a planned call written twice runs once.
        let mut this_reply: Vec<String> = Vec::new();
        for (index, call) in calls.iter().enumerate() {
            let key = format!("{}{}", call.name, call.arguments);
            let twice = this_reply.iter().position(|k| *k == key);
            this_reply.push(key);
            // Whether the tool itself declined the call; a failing test run is a result, not a refusal.
            let mut refused = false;
            // A planned submit after other calls claims results the model has not seen.
            held |= recovered && index > 0 && call.name == "submit";
            let (ok, text) = if repeated_stop || broken.is_some() {
                (false, "Not run: the run stopped.".to_string())
            } else if submitted.is_some() {
                (false, "Not run: submit ended the task.".to_string())
            } else if held {
                (false, prompt::HELD.to_string())
            } else if let Some(earlier) = twice.filter(|_| recovered) {
                (false, prompt::same_in_reply(earlier + 1))
            } else if self.limit.is_cancelled() {
                (false, "Not run: the run's time is up.".to_string())
            } else if self.oversized.contains(&call.id) {
                (false, limits::oversized_message(&call.name))
            } else {
                let answer = self.rails.call(format!("{}{}", call.name, call.arguments));
                if let Answer::Stop(_) = answer {
                    repeated_stop = true;
                    (
                        false,
                        "Not run: the same call again after the warning; the run stops."
                            .to_string(),
                    )
                } else {
                    warn_repeat |= matches!(answer, Answer::Nudge(_));
                    held = recovered && (self.mutates(&call.name) || call.name == "submit");
                    let writes = self.workspace.changed().writes;
                    match self.call(&call.name, &call.arguments, &mut submitted).await {
                        Ok(text) if self.workspace.changed().writes > writes => {
                            match self.test_watch.after_change(&call.name, &call.arguments) {
                                Some(next) => (true, format!("{}\n\n{next}", text.trim_end())),
                                None => (true, text),
                            }
                        }
                        Ok(text) => (true, text),
                        Err(ToolError::Failed(text)) => {
                            refused = !self.runs_tests(&call.name);
                            // The rest of a plan assumed this call would succeed.
                            held |= recovered;
                            (false, text)
                        }
                        Err(ToolError::Infrastructure(e)) => {
                            let message = format!("{} failed: {e:#}", call.name);
                            broken = Some(message.clone());
                            (false, format!("{message}; the run stops."))
                        }
                    }
                }
            };
            // Whatever a tool printed, the key does not go back to the server or into the records.
            let text = self.redactor.text(&text);
            let step = Step::new(
                &call.name,
                format!("{}{}", call.name, call.arguments),
                ok,
                &text,
            );
            steps.push(if refused { step.refused() } else { step });
            self.transcript.event(&Event::Tool {
                turn: self.turns,
                id: call.id.clone(),
                name: call.name.clone(),
                arguments: call.arguments.clone(),
                ok,
                result: text.clone(),
            });
            self.messages
                .push(ChatMessage::tool(call.id.clone(), call.name.clone(), text));
        }
        if self.limit.is_cancelled() && !self.cancel.is_cancelled() {
            return Flow::Stop(self.unfinished(), StopReason::WallTime);
        }
        if let Some(message) = broken {
            self.error = Some(message);
            return Flow::Stop(Status::Error, StopReason::ToolError);
        }
        if repeated_stop {
            return Flow::Stop(self.unfinished(), StopReason::RepeatedCall);
        }
        if warn_repeat {
            self.rail_nudge(&Nudge::RepeatedCall);
        }
        match submitted {
            Some(submission) => self.settle(submission).await,
            None => Flow::Continue(steps),
        }
    }

    /// A stopped run: rejected when a gate already failed it, else incomplete.
    fn unfinished(&self) -> Status {
        match self.gate.as_ref().map(|g| g.verdict) {
            Some(Verdict::Fail) => Status::Rejected,
            _ => Status::Incomplete,
        }
    }

    fn unfinished_or_error(&self, stop: StopReason) -> Status {
        if stop == StopReason::ModelError {
            Status::Error
        } else {
            self.unfinished()
        }
    }

    /// The next turn, unless Ctrl-C, the wall time or a budget ends the run first: then `Err` holds the
    /// run's status and why it stopped. Both strategies' loops start each turn here.
    async fn next_turn(&mut self) -> Result<ChatTurn, (Status, StopReason)> {
        if self.cancel.is_cancelled() {
            return Err((self.unfinished(), StopReason::Cancelled));
        }
        if self.limit.is_cancelled() {
            return Err((self.unfinished(), StopReason::WallTime));
        }
        if let Some(stop) = self.rails.budget(self.used()) {
            return Err((self.unfinished(), stop));
        }
        self.turns += 1;
        self.turn()
            .await
            .map_err(|stop| (self.unfinished_or_error(stop), stop))
    }

    /// One request to the model; `Err` is the reason to stop.
    async fn turn(&mut self) -> Result<ChatTurn, StopReason> {
        // Every turn offers the same tools, the forcing phase included: a chat template renders them at the
        // top of the prompt, so another list would make the server's prompt cache useless from the first
        // token on, twice (into the phase and out of it). The phase is enforced when a call is run.
        let (names, offered): (Vec<&str>, Vec<Value>) = if self.plain {
            (Vec::new(), Vec::new())
        } else {
            self.registry
                .names()
                .into_iter()
                .zip(self.registry.definitions())
                .unzip()
        };
        self.elide();
        self.log_messages();
        self.sent = self.messages.len();
        let req = ChatRequest {
            messages: self.messages.clone(),
            tools: offered,
            temperature: self.temperature.take(),
        };
        let bytes: usize = req
            .messages
            .iter()
            .map(|m| m.to_openai().to_string().len())
            .sum();
        self.transcript.event(&Event::Request {
            turn: self.turns,
            messages: req.messages.len(),
            bytes,
            tools: names.into_iter().map(String::from).collect(),
        });
        let asked = Instant::now();
        let remaining = self
            .rails
            .limits()
            .wall_time
            .map(|w| w.saturating_sub(self.started.elapsed()))
            .unwrap_or(Duration::MAX);
        let spinner = self.ui.start(&format!(
            "turn {}/{}: the model is replying",
            self.turns,
            self.rails.limits().max_turns
        ));
        let every = self.progress_every();
        let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        let chat = tokio::time::timeout(remaining, self.client.chat(&req));
        tokio::pin!(chat);
        let reply = loop {
            tokio::select! {
                // Ctrl-C cancels the wall clock too (it is a child token): check it first, so an
                // interrupted run is never reported as out of time.
                biased;
                _ = self.cancel.cancelled() => {
                    spinner.finish_and_clear();
                    return Err(StopReason::Cancelled);
                }
                _ = self.limit.cancelled() => {
                    spinner.finish_and_clear();
                    return Err(if self.cancel.is_cancelled() {
                        StopReason::Cancelled
                    } else {
                        StopReason::WallTime
                    });
                }
                r = &mut chat => break r,
                _ = ticks.tick() => self.ui.line(&format!(
                    "  turn {}/{}: the model is still replying ({}s; prompt {} tokens last turn, at most {} new)",
                    self.turns,
                    self.rails.limits().max_turns,
                    asked.elapsed().as_secs(),
                    self.last_prompt,
                    self.cfg.model.max_tokens.map_or("any".to_string(), |n| n.to_string()),
                )),
            }
        };
        spinner.finish_and_clear();
        let mut turn = match reply {
            Err(_) => return Err(StopReason::WallTime),
            Ok(Err(e)) => {
                let message = e.to_string();
                self.transcript.event(&Event::ModelError {
                    turn: self.turns,
                    error: message.clone(),
                    overflow: matches!(e, ModelError::ContextOverflow { .. }),
                });
                self.ui
                    .line(&format!("  turn {}: model error: {message}", self.turns));
                self.error = Some(message);
                if matches!(e, ModelError::RetryPastDeadline { .. }) {
                    return Err(StopReason::RetryAfter);
                }
                return Err(StopReason::ModelError);
            }
            Ok(Ok(turn)) => turn,
        };
        // A call too big to run or to keep: its size and hash stand in for it, here and in the records.
        self.oversized = limits::cap_turn(&mut turn);
        let usage = turn.usage.unwrap_or_default();
        self.last_prompt = usage.prompt;
        self.tokens.prompt += usage.prompt;
        self.tokens.completion += usage.completion;
        self.tokens.cached += usage.cached.unwrap_or(0);
        self.transcript.event(&Event::response(
            self.turns,
            asked.elapsed().as_millis() as u64,
            &turn,
        ));
        let names: Vec<&str> = turn.calls.iter().map(|c| c.name.as_str()).collect();
        let cache = match usage.cached {
            Some(c) if usage.prompt > 0 => {
                format!(" (cached {c}, {}%)", c * 100 / usage.prompt)
            }
            _ => String::new(),
        };
        self.ui.line(&format!(
            "  turn {}/{}  {:<24} prompt {}{cache}  completion {}{}",
            self.turns,
            self.rails.limits().max_turns,
            if names.is_empty() {
                "(no tool call)".to_string()
            } else {
                names.join(", ")
            },
            usage.prompt,
            usage.completion,
            if turn.recovered {
                format!("  [{} recovered]", turn.mode.name())
            } else {
                String::new()
            }
        ));
        Ok(turn)
    }

    /// [`TURN_PROGRESS_EVERY`], or `VOUCH_TURN_PROGRESS_MS` (for tests that cannot wait half a minute).
    fn progress_every(&self) -> Duration {
        std::env::var("VOUCH_TURN_PROGRESS_MS")
            .ok()
            .and_then(|v| v.parse::<u64>().ok())
            .filter(|ms| *ms > 0)
            .map_or(TURN_PROGRESS_EVERY, Duration::from_millis)
    }

    /// The tools whose failure is the tests' (or a command's) result rather than a refusal of the call.
    fn runs_tests(&self, name: &str) -> bool {
        matches!(name, "run_tests" | "shell")
    }

    fn mutates(&self, name: &str) -> bool {
        self.registry.get(name).is_some_and(|t| t.mutates())
    }

    /// Runs one call; `submit` fills `submitted`.
    async fn call(
        &mut self,
        name: &str,
        args: &Value,
        submitted: &mut Option<Submission>,
    ) -> Result<String, ToolError> {
        if !self.rails.offers(name) {
            return Err(ToolError::failed(prompt::not_available(name)));
        }
        if let Value::String(raw) = args {
            if serde_json::from_str::<Value>(raw).is_err() {
                return Err(ToolError::failed(prompt::unreadable_arguments(name, raw)));
            }
        }
        let mut ctx = ToolContext::new(&self.workspace, &self.limit, &self.settings);
        let result = self.registry.dispatch(&mut ctx, name, args).await;
        if let Some(s) = ctx.submission {
            *submitted = Some(s);
        }
        result
    }

    /// The server's context size: `/props` (llama-server), else `--context`, else [`DEFAULT_CONTEXT`].
    fn context_size(&self) -> u64 {
        self.client
            .server()
            .and_then(|s| s.n_ctx)
            .filter(|n| *n > 0)
            .or(self.cfg.context)
            .unwrap_or(DEFAULT_CONTEXT)
    }

    /// Applies the elision [`elide::plan`] for the last prompt, and records it.
    fn elide(&mut self) {
        let context = self.context_size();
        let plan = elide::plan(&self.messages, self.sent, self.last_prompt, context);
        if plan.outputs.is_empty() {
            return;
        }
        let mut elided = Vec::new();
        for e in plan.outputs {
            if let Some(ChatMessage::Tool { content, .. }) = self.messages.get_mut(e.index) {
                *content = e.placeholder;
                elided.push(ElidedMessage {
                    index: e.index,
                    name: e.name,
                    bytes: e.bytes,
                });
            }
        }
        let count = elided.len();
        let indices: Vec<usize> = elided.iter().map(|e| e.index).collect();
        self.transcript.event(&Event::Elided {
            turn: self.turns,
            prompt_tokens: self.last_prompt,
            context,
            estimated_tokens: plan.estimated_tokens,
            messages: elided,
        });
        // The new text of those messages, so that a resumed run sends the same prefix.
        for i in indices {
            self.transcript.event(&Event::Message {
                index: i,
                message: self.messages[i].clone(),
            });
        }
        self.ui.line(&format!(
            "  context: prompt {} of {context} tokens; elided {} old tool output{} (~{} tokens)",
            self.last_prompt,
            count,
            if count == 1 { "" } else { "s" },
            plan.estimated_tokens
        ));
    }

    /// Writes the messages from the last request's end on as `message` events: the exact conversation, which
    /// `--resume` rebuilds. A message written again (a loop message extended before it was sent) replaces the
    /// earlier one with the same index.
    fn log_messages(&mut self) {
        for (i, m) in self.messages.iter().enumerate().skip(self.sent) {
            self.transcript.event(&Event::Message {
                index: i,
                message: m.clone(),
            });
        }
    }

    /// What to tell the model about calls of tools that do not exist, one paragraph each; empty for none.
    fn unknown_tools(&self, names: &[String]) -> String {
        let tools: Vec<&str> = self
            .registry
            .names()
            .into_iter()
            .filter(|name| self.rails.offers(name))
            .collect();
        let mut seen = HashSet::new();
        names
            .iter()
            .filter(|name| seen.insert(name.as_str()))
            .map(|name| format!("Not run: {}", crate::tools::no_such_tool(name, &tools)))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// A warning from the rails.
    fn rail_nudge(&mut self, nudge: &Nudge) {
        self.nudge(nudge.kind(), &nudge.text());
    }

    /// A user message from the loop itself.
    fn nudge(&mut self, kind: NudgeKind, text: &str) {
        self.transcript.event(&Event::Nudge {
            turn: self.turns,
            kind,
            text: text.to_string(),
        });
        // Two loop messages in one turn become one user message: some chat templates insist that roles
        // alternate. The previous one has not been sent yet, so this rewrites no history.
        if let Some(ChatMessage::User { content }) = self.messages.last_mut() {
            content.push_str("\n\n");
            content.push_str(text);
        } else {
            self.messages.push(ChatMessage::user(text));
        }
    }
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
