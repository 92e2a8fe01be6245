//! The agent loop: a local model works on one task in its own worktree, and the gate, not the model,
//! decides whether the result is any good.
//!
//! The conversation only grows: each turn appends the model's reply and then one tool result per call, in
//! call order, so the server's prompt cache stays valid and the transcript is the exact history. A failing
//! tool is an answer, not an error: it goes back to the model as the call's result. Only the model client
//! failing, a budget, a rail or Ctrl-C end the loop early.
//!
//! Rails ([`Rails`]) keep a weak model from looping forever: replies without a tool call get a reminder and
//! after three a last warning; the same call three times in a row gets a warning; a long run without a
//! successful edit gets a forcing phase that offers only `edit`, `write_file` and `submit`. Each warning is
//! a user message; ignoring it stops the run.
//!
//! `submit GO` commits the worktree on the branch (`Agent-Verdict: GO` trailer) and runs the gate on
//! `base..branch`. A failing gate goes back to the model once per repair cycle as one user message (failing
//! steps, reasons, log tails); then it is gated again. `task.rs` reads tasks, `prompt.rs` holds the fixed
//! texts, `testrun.rs` runs `run_tests`, `transcript.rs` and `report.rs` write the records.

pub mod prompt;
pub mod report;
pub mod task;
pub mod transcript;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::error::VouchError;
use crate::gate::outcome::{BiteStatus, Claim, Rule, Verdict};
use crate::gate::profile::Profile;
use crate::gate::report::Report;
use crate::model::{ChatMessage, ChatRequest, ChatTurn, Client, ModelConfig};
use crate::tools::{
    cap, Context as ToolContext, Registry, Settings, ShellRunner, Submission, TestRunner,
    ToolError, Workspace,
};
use crate::ui::Ui;
use crate::workspace::{signature, Worktree};

pub use report::{RunReport, Status, StopReason, Tokens};
pub use task::Task;

use transcript::{ElidedMessage, Event, NudgeKind, Transcript};

/// Characters of a gate failure sent back to the model.
const REPAIR_CAP: usize = 8000;
/// Characters of output per failing step in the repair message.
const REPAIR_STEP_CAP: usize = 3000;
/// The context size assumed when the server does not say and `--context` is not given.
pub const DEFAULT_CONTEXT: u64 = 32768;
/// Percent of the context a prompt may fill before old tool outputs are elided.
pub const ELIDE_AT: u64 = 80;
/// Model turns before a run stops as incomplete, unless the task, `vouch.toml` or `--max-turns` says.
pub const DEFAULT_MAX_TURNS: u32 = 50;
/// Turns without a successful edit before the forcing phase, unless configured.
pub const DEFAULT_STALL_TURNS: u32 = 15;
/// Turns of the forcing phase before the run stops as stalled.
pub const DEFAULT_FORCING_TURNS: u32 = 3;
/// Gate rejections sent back to the model for repair, unless configured.
pub const DEFAULT_REPAIR_CYCLES: u32 = 2;
/// Timeout of each `shell` command, unless `--shell-timeout` says.
pub const DEFAULT_SHELL_TIMEOUT: Duration = Duration::from_secs(120);
/// Percent of the context one elision step aims to get the prompt under.
const ELIDE_TO: u64 = 50;
/// Tool outputs at most this long are never elided.
const ELIDE_MIN_BYTES: usize = 2048;

/// Limits that stop a run.
#[derive(Clone, Debug)]
pub struct Rails {
    pub max_turns: u32,
    /// Turns without a successful `edit` or `write_file` before the forcing phase.
    pub stall_turns: u32,
    /// Turns of the forcing phase before the run stops as stalled.
    pub forcing_turns: u32,
    /// The same call this many times in a row earns a warning; once more stops the run.
    pub repeat_limit: u32,
    /// Replies without a tool call in a row that earn a warning; once more stops the run.
    pub malformed_limit: u32,
    pub wall_time: Option<Duration>,
    /// Prompt plus completion tokens over the run.
    pub tokens: Option<u64>,
    /// Gate failures sent back to the model before the change counts as rejected.
    pub repair_cycles: u32,
}

impl Default for Rails {
    fn default() -> Rails {
        Rails {
            max_turns: DEFAULT_MAX_TURNS,
            stall_turns: DEFAULT_STALL_TURNS,
            forcing_turns: DEFAULT_FORCING_TURNS,
            repeat_limit: 3,
            malformed_limit: 3,
            wall_time: None,
            tokens: None,
            repair_cycles: DEFAULT_REPAIR_CYCLES,
        }
    }
}

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
    /// Where worktrees go (`workspaces/`).
    pub workspaces: PathBuf,
    pub fresh: bool,
    /// Continue the run whose workspace exists, from its transcript.
    pub resume: bool,
    /// The server's context size in tokens when `/props` does not say [default: [`DEFAULT_CONTEXT`]].
    pub context: Option<u64>,
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
    /// The gate's checks (`--strict-baseline`, `--no-bite`, `--deny`, ...). Each gating sets the repository,
    /// revisions, profile, claim, cache and workspaces itself, and adds the task's scope to `allow`.
    pub gate: crate::gate::Options,
}

/// Runs the task to a status. `Err` means the run could not start (bad repository, existing workspace,
/// bad model configuration); everything after that ends in a report.
pub async fn run(cfg: &Config, ui: &Ui, cancel: &CancellationToken) -> Result<RunReport> {
    let client = Client::new(cfg.model.clone())
        .map_err(|e| VouchError::usage(format!("model configuration: {e}")))?;
    let profile = match &cfg.profile {
        Some(p) => Some(Profile::from_arg(p)?),
        None => None,
    };
    let resumed = if cfg.resume {
        Some(resumable(cfg)?)
    } else {
        None
    };
    let wt = match &resumed {
        Some(r) => Worktree::open(&cfg.repo, &cfg.workspaces, &cfg.task.id, r.base.as_deref())?,
        None => Worktree::create(
            &cfg.repo,
            &cfg.base,
            &cfg.workspaces,
            &cfg.task.id,
            cfg.fresh,
        )?,
    };
    // As the gate chooses: the flag, else the repository's own profile as committed at base (the worktree
    // is still at base here), else detection.
    let committed = wt.dir.join(".vouch").join("gate.toml");
    let profile = match profile {
        Some(p) => Some(p),
        None if committed.is_file() => Some(Profile::from_arg(&committed.to_string_lossy())?),
        None => Profile::detect(&root_files(&wt.dir)?),
    };
    let records = wt.records();
    let mut transcript = match &resumed {
        Some(_) => Transcript::append(&records.join("transcript.jsonl"))?,
        None => Transcript::create(&records.join("transcript.jsonl"))?,
    };
    let resumed = resumed.unwrap_or_default();
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
    let messages = if resumed.messages.is_empty() {
        vec![
            ChatMessage::system(prompt::SYSTEM),
            ChatMessage::user(cfg.task.message()),
        ]
    } else {
        resumed.messages
    };
    let settings = Settings {
        tests: profile.as_ref().map(|p| {
            TestRunner::new(
                p,
                &wt.dir,
                records.join("logs"),
                cfg.cache.join("agent").join(&cfg.task.id),
            )
        }),
        shell: cfg.shell.map(|timeout| {
            ShellRunner::new(
                wt.dir.clone(),
                records.join("logs"),
                timeout,
                cfg.model.api_key_env.as_deref(),
            )
        }),
    };
    let registry = Registry::for_run(&settings);
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
             add `workspaces/` to .gitignore, or run vouch from another directory",
            rel
        ));
    }
    let mut agent = Agent {
        cfg,
        ui,
        cancel,
        client,
        registry,
        workspace,
        settings,
        wt,
        transcript,
        messages,
        sent: resumed.sent,
        started: Instant::now(),
        turns: resumed.turns,
        tokens: resumed.tokens,
        last_prompt: resumed.last_prompt,
        malformed: 0,
        last_call: None,
        repeats: 0,
        since_change: 0,
        forcing: None,
        repairs: resumed.repairs,
        claimed: None,
        summary: None,
        gate: resumed.gate,
        commit: resumed.commit,
        error: None,
    };
    if matches!(agent.messages.last(), Some(ChatMessage::Assistant { .. })) {
        // The earlier run stopped on a reply without a call: the conversation goes on with a reminder.
        agent.nudge(NudgeKind::NoToolCall, prompt::NO_CALL);
    }
    let (status, stop) = agent.run_loop().await;
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
        status,
        stop_reason: stop,
        claimed: agent.claimed,
        summary: agent.summary.clone(),
        gate: agent.gate.clone(),
        branch: agent.wt.branch.clone(),
        base: agent.wt.base.to_string(),
        commit: agent.commit.clone(),
        workspace: agent.wt.dir.display().to_string(),
        turns: agent.turns,
        max_turns: cfg.rails.max_turns,
        tokens: agent.tokens,
        repairs: agent.repairs,
        error: agent.error.clone(),
        duration_ms: agent.started.elapsed().as_millis() as u64,
    };
    write(
        &records.join("report.json"),
        &serde_json::to_string_pretty(&report)?,
    )?;
    write(&records.join("report.md"), &report.markdown())?;
    Ok(report)
}

/// What the calls of a turn lead to.
enum Flow {
    Continue {
        changed: bool,
    },
    /// The gate failed a GO and the repair message was sent.
    Repair,
    Stop(Status, StopReason),
}

/// What a submit GO led to.
enum Gated {
    Pass,
    /// The gate failed: the message for the model.
    Fail(String),
    /// The gate could not judge (error verdict or infrastructure).
    Error(String),
}

struct Agent<'a> {
    cfg: &'a Config,
    ui: &'a Ui,
    cancel: &'a CancellationToken,
    client: Client,
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
    malformed: u32,
    last_call: Option<String>,
    repeats: u32,
    since_change: u32,
    /// Turns left in the forcing phase.
    forcing: Option<u32>,
    repairs: u32,
    claimed: Option<Claim>,
    summary: Option<String>,
    gate: Option<Report>,
    commit: Option<String>,
    error: Option<String>,
}

impl Agent<'_> {
    async fn run_loop(&mut self) -> (Status, StopReason) {
        let rails = self.cfg.rails.clone();
        loop {
            if let Some(stop) = self.budget_exceeded(&rails) {
                return (self.unfinished(), stop);
            }
            self.turns += 1;
            let turn = match self.turn(&rails).await {
                Ok(turn) => turn,
                Err(stop) => return (self.unfinished_or_error(stop), stop),
            };
            self.messages.push(ChatMessage::assistant(
                turn.content.clone(),
                turn.calls.clone(),
            ));
            let mut changed = false;
            if turn.calls.is_empty() {
                self.malformed += 1;
                if self.malformed > rails.malformed_limit {
                    return (self.unfinished(), StopReason::NoToolCalls);
                }
                let mut text = if self.malformed == rails.malformed_limit {
                    prompt::NO_CALL_LAST.to_string()
                } else {
                    prompt::NO_CALL.to_string()
                };
                if !turn.warnings.is_empty() {
                    text.push_str(&format!(
                        " (What vouch found: {}.)",
                        turn.warnings.join("; ")
                    ));
                }
                self.nudge(NudgeKind::NoToolCall, &text);
            } else {
                self.malformed = 0;
                match self.calls(&turn, &rails).await {
                    Flow::Continue { changed: c } => changed = c,
                    Flow::Repair => continue,
                    Flow::Stop(status, stop) => return (status, stop),
                }
            }
            if changed {
                self.since_change = 0;
                self.forcing = None;
            } else {
                self.since_change += 1;
                match self.forcing {
                    Some(left) if left <= 1 => return (self.unfinished(), StopReason::Stalled),
                    Some(left) => self.forcing = Some(left - 1),
                    None if self.since_change >= rails.stall_turns => {
                        self.forcing = Some(rails.forcing_turns);
                        self.nudge(
                            NudgeKind::Forcing,
                            &prompt::forcing(self.since_change, rails.forcing_turns),
                        );
                    }
                    None => {}
                }
            }
        }
    }

    /// Runs the calls of one turn in order, one tool result each, then the rails and `submit`.
    async fn calls(&mut self, turn: &ChatTurn, rails: &Rails) -> Flow {
        let mut changed = false;
        let mut submitted: Option<Submission> = None;
        let mut broken: Option<String> = None;
        let mut repeated_stop = false;
        let mut warn_repeat = false;
        for call in &turn.calls {
            let (ok, text) = if repeated_stop || broken.is_some() {
                (false, "Not run: the run stopped.".to_string())
            } else if submitted.is_some() {
                (false, "Not run: submit ended the task.".to_string())
            } else {
                let sig = format!("{}{}", call.name, call.arguments);
                if self.last_call.as_deref() == Some(sig.as_str()) {
                    self.repeats += 1;
                } else {
                    self.last_call = Some(sig);
                    self.repeats = 1;
                }
                if self.repeats > rails.repeat_limit {
                    repeated_stop = true;
                    (
                        false,
                        "Not run: the same call again after the warning; the run stops."
                            .to_string(),
                    )
                } else {
                    if self.repeats == rails.repeat_limit {
                        warn_repeat = true;
                    }
                    match self.call(&call.name, &call.arguments, &mut submitted).await {
                        Ok(text) => {
                            if self.mutates(&call.name) {
                                changed = true;
                            }
                            (true, text)
                        }
                        Err(ToolError::Failed(text)) => (false, text),
                        Err(ToolError::Infrastructure(e)) => {
                            let message = format!("{} failed: {e:#}", call.name);
                            broken = Some(message.clone());
                            (false, format!("{message}; the run stops."))
                        }
                    }
                }
            };
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
        if let Some(message) = broken {
            self.error = Some(message);
            return Flow::Stop(Status::Error, StopReason::ToolError);
        }
        if repeated_stop {
            return Flow::Stop(self.unfinished(), StopReason::RepeatedCall);
        }
        if warn_repeat {
            self.nudge(NudgeKind::RepeatedCall, prompt::REPEATED);
        }
        if let Some(Submission { claim, summary }) = submitted {
            self.claimed = Some(claim);
            self.summary = Some(summary.clone());
            if claim == Claim::NoGo {
                return Flow::Stop(Status::NoGo, StopReason::Submitted);
            }
            match self.verify(&summary).await {
                Gated::Pass => return Flow::Stop(Status::Verified, StopReason::Submitted),
                Gated::Error(_) if self.cancel.is_cancelled() => {
                    return Flow::Stop(self.unfinished(), StopReason::Cancelled);
                }
                Gated::Error(e) => {
                    self.error = Some(e);
                    return Flow::Stop(Status::Error, StopReason::Submitted);
                }
                Gated::Fail(message) => {
                    if self.repairs >= rails.repair_cycles {
                        return Flow::Stop(Status::Rejected, StopReason::Submitted);
                    }
                    self.repairs += 1;
                    self.since_change = 0;
                    self.forcing = None;
                    self.nudge(NudgeKind::Repair, &message);
                    return Flow::Repair;
                }
            }
        }
        Flow::Continue { changed }
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

    fn budget_exceeded(&self, rails: &Rails) -> Option<StopReason> {
        if self.cancel.is_cancelled() {
            return Some(StopReason::Cancelled);
        }
        if self.turns >= rails.max_turns {
            return Some(StopReason::MaxTurns);
        }
        if rails.wall_time.is_some_and(|w| self.started.elapsed() >= w) {
            return Some(StopReason::WallTime);
        }
        if rails
            .tokens
            .is_some_and(|t| self.tokens.prompt + self.tokens.completion >= t)
        {
            return Some(StopReason::Tokens);
        }
        None
    }

    /// One request to the model; `Err` is the reason to stop.
    async fn turn(&mut self, rails: &Rails) -> Result<ChatTurn, StopReason> {
        let offered: Vec<Value> = self
            .registry
            .definitions()
            .into_iter()
            .filter(|t| {
                self.forcing.is_none()
                    || t.pointer("/function/name")
                        .and_then(Value::as_str)
                        .is_some_and(|n| prompt::FORCING_TOOLS.contains(&n))
            })
            .collect();
        self.elide();
        self.log_messages();
        self.sent = self.messages.len();
        let req = ChatRequest {
            messages: self.messages.clone(),
            tools: offered,
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
            tools: req
                .tools
                .iter()
                .filter_map(|t| t.pointer("/function/name").and_then(Value::as_str))
                .map(String::from)
                .collect(),
        });
        let asked = Instant::now();
        let remaining = rails
            .wall_time
            .map(|w| w.saturating_sub(self.started.elapsed()))
            .unwrap_or(Duration::MAX);
        let reply = tokio::select! {
            _ = self.cancel.cancelled() => return Err(StopReason::Cancelled),
            r = tokio::time::timeout(remaining, self.client.chat(&req)) => r,
        };
        let turn = match reply {
            Err(_) => return Err(StopReason::WallTime),
            Ok(Err(e)) => {
                let message = e.to_string();
                self.transcript.event(&Event::ModelError {
                    turn: self.turns,
                    error: message.clone(),
                });
                self.ui
                    .line(&format!("  turn {}: model error: {message}", self.turns));
                self.error = Some(message);
                return Err(StopReason::ModelError);
            }
            Ok(Ok(turn)) => turn,
        };
        let usage = turn.usage.unwrap_or_default();
        self.last_prompt = usage.prompt;
        self.tokens.prompt += usage.prompt;
        self.tokens.completion += usage.completion;
        self.tokens.cached += usage.cached.unwrap_or(0);
        self.transcript.event(&Event::Response {
            turn: self.turns,
            duration_ms: asked.elapsed().as_millis() as u64,
            content: turn.content.clone(),
            reasoning: turn.reasoning.clone(),
            calls: turn.calls.clone(),
            finish_reason: turn.finish_reason.clone(),
            usage: turn.usage,
            timings: turn.timings.clone(),
            mode: turn.mode,
            recovered: turn.recovered,
            warnings: turn.warnings.clone(),
        });
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
            rails.max_turns,
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
        if self.forcing.is_some() && !prompt::FORCING_TOOLS.contains(&name) {
            return Err(ToolError::failed(format!(
                "{name} is not available now: only edit, write_file and submit are. Change a file or submit."
            )));
        }
        let mut ctx = ToolContext::new(&self.workspace, self.cancel, &self.settings);
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

    /// When the last prompt filled more than [`ELIDE_AT`] percent of the context, replaces the oldest large
    /// tool outputs the model has already seen with a short placeholder, in one step that frees enough to get
    /// under [`ELIDE_TO`] percent (estimated from the last prompt's tokens per byte). Doing it rarely and in
    /// one go keeps the server's cached prefix valid between elisions.
    fn elide(&mut self) {
        let context = self.context_size();
        if self.last_prompt.saturating_mul(100) <= context.saturating_mul(ELIDE_AT) {
            return;
        }
        let seen = self.sent.min(self.messages.len());
        let bytes: usize = self.messages[..seen]
            .iter()
            .map(|m| m.to_openai().to_string().len())
            .sum();
        if bytes == 0 {
            return;
        }
        let per_byte = self.last_prompt as f64 / bytes as f64;
        let need = self
            .last_prompt
            .saturating_sub(context.saturating_mul(ELIDE_TO) / 100) as f64;
        let mut freed = 0.0;
        let mut elided = Vec::new();
        for i in 0..seen {
            if freed >= need {
                break;
            }
            let placeholder = match &self.messages[i] {
                ChatMessage::Tool {
                    tool_call_id,
                    name,
                    content,
                } if content.len() > ELIDE_MIN_BYTES && !content.starts_with("[output of ") => {
                    let detail = call_detail(&self.messages[..i], tool_call_id);
                    format!(
                        "[output of {name}{detail} elided to save context; call it again if you need it]"
                    )
                }
                _ => continue,
            };
            if let ChatMessage::Tool { name, content, .. } = &mut self.messages[i] {
                freed += content.len().saturating_sub(placeholder.len()) as f64 * per_byte;
                elided.push(ElidedMessage {
                    index: i,
                    name: name.clone(),
                    bytes: content.len(),
                });
                *content = placeholder;
            }
        }
        if elided.is_empty() {
            return;
        }
        let count = elided.len();
        let indices: Vec<usize> = elided.iter().map(|e| e.index).collect();
        self.transcript.event(&Event::Elided {
            turn: self.turns,
            prompt_tokens: self.last_prompt,
            context,
            estimated_tokens: freed as u64,
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
            freed as u64
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

    /// Commits the worktree and gates `base..branch`.
    async fn verify(&mut self, summary: &str) -> Gated {
        match self.commit_and_gate(summary).await {
            Ok(g) => g,
            Err(e) => {
                let message = format!("{e:#}");
                self.transcript.event(&Event::GateError {
                    error: message.clone(),
                });
                Gated::Error(message)
            }
        }
    }

    async fn commit_and_gate(&mut self, summary: &str) -> Result<Gated> {
        let author = signature(&self.wt.repo, self.cfg.author.as_deref())?;
        let mut message = format!("{}\n\n", self.cfg.task.title);
        if !summary.trim().is_empty() {
            message.push_str(summary.trim());
            message.push_str("\n\n");
        }
        message.push_str("Agent-Verdict: GO\n");
        if self.cfg.signoff {
            message.push_str(&format!(
                "Signed-off-by: {} <{}>\n",
                String::from_utf8_lossy(author.name_bytes()),
                String::from_utf8_lossy(author.email_bytes())
            ));
        }
        let Some(oid) = self.wt.commit(&message, &author)? else {
            self.transcript.event(&Event::Commit {
                commit: None,
                branch: None,
                note: Some("nothing changed".to_string()),
            });
            return Ok(Gated::Fail(
                "You submitted GO, but nothing in the repository differs from the base commit: there is no \
                 change to verify. Make the fix and add a test, then submit again."
                    .to_string(),
            ));
        };
        self.commit = Some(oid.to_string());
        self.transcript.event(&Event::Commit {
            commit: Some(oid.to_string()),
            branch: Some(self.wt.branch.clone()),
            note: None,
        });
        self.ui.line(&format!(
            "  committed {} on {}; gating {}..{}",
            short(&oid.to_string()),
            self.wt.branch,
            short(&self.wt.base.to_string()),
            short(&oid.to_string())
        ));
        let mut opts = self.cfg.gate.clone();
        opts.repo = self.wt.repo.clone();
        opts.base = Some(self.wt.base.to_string());
        opts.head = oid.to_string();
        opts.profile = self.cfg.profile.clone();
        opts.claimed = Some(Claim::Go);
        opts.allow.extend(self.cfg.task.scope.iter().cloned());
        opts.cache = self.cfg.cache.clone();
        opts.workspaces = self.cfg.workspaces.clone();
        let report = crate::gate::run(&opts, self.ui, self.cancel)
            .await
            .context("run the gate")?;
        self.transcript.event(&Event::Gate {
            commit: oid.to_string(),
            report: Box::new(report.clone()),
        });
        self.ui.line(&format!(
            "  gate: {}{}",
            report.verdict.name(),
            if report.reasons.is_empty() {
                String::new()
            } else {
                format!(" ({})", report.reasons.join("; "))
            }
        ));
        let gated = match report.verdict {
            Verdict::Pass => Gated::Pass,
            Verdict::Error => Gated::Error(format!(
                "the gate could not judge the change: {}",
                report.reasons.join("; ")
            )),
            Verdict::Fail => Gated::Fail(repair_message(&report)),
        };
        self.gate = Some(report);
        Ok(gated)
    }
}

/// ` <path>` (or pattern, selector) of the call `id` in the assistant message before it, for placeholders.
fn call_detail(before: &[ChatMessage], id: &str) -> String {
    let call = before.iter().rev().find_map(|m| match m {
        ChatMessage::Assistant { tool_calls, .. } => tool_calls.iter().find(|c| c.id == id),
        _ => None,
    });
    call.and_then(|c| {
        ["path", "pattern", "selector"]
            .iter()
            .find_map(|k| c.arguments.get(*k).and_then(Value::as_str))
    })
    .map(|d| format!(" {}", cap(d, 80)))
    .unwrap_or_default()
}

/// What `--resume` starts from: the earlier run's transcript, unless that run finished.
fn resumable(cfg: &Config) -> Result<transcript::Resumed> {
    let records = cfg.workspaces.join(&cfg.task.id).join(".vouch");
    if let Ok(text) = std::fs::read_to_string(records.join("report.json")) {
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
                    records.join("report.md").display()
                ),
            )
            .into());
        }
    }
    let path = records.join("transcript.jsonl");
    if path.is_file() {
        transcript::resume(&path)
    } else {
        Ok(transcript::Resumed::default())
    }
}

/// The one message that sends a gate failure back to the model.
pub fn repair_message(report: &crate::gate::report::Report) -> String {
    let failing: Vec<&crate::gate::steps::StepReport> =
        report.steps.iter().filter(|s| s.status.is_bad()).collect();
    let mut text = String::from(
        "The gate rejected your change. It reran every check in a clean checkout of your commit. Fix the \
         problems below (the code or the test), run the tests, then submit again.\n",
    );
    if !failing.is_empty() {
        let names: Vec<&str> = failing.iter().map(|s| s.name.as_str()).collect();
        text.push_str(&format!("\nFailing steps: {}\n", names.join(", ")));
    }
    if !report.reasons.is_empty() {
        text.push_str("\nReasons:\n");
        for r in &report.reasons {
            text.push_str(&format!("- {r}\n"));
        }
    }
    let bite = &report.bite;
    let bite_failed = report.findings.iter().any(|f| {
        matches!(
            f.rule,
            Rule::NoBite | Rule::RemovedTests | Rule::WeakenedTests
        )
    });
    if bite_failed || (bite.status != BiteStatus::NotRun && !bite.reasons.is_empty()) {
        text.push_str(&format!(
            "\nBite check: {}. The gate put back the base version of your production files, \
             kept your tests, and ran the tests you changed: a test that still passes there (inert) cannot \
             catch the bug. Make your new test fail on the old code and pass on the fixed code.\n",
            bite.status.name()
        ));
        for t in &bite.tests {
            text.push_str(&format!("- {}: {}\n", t.id, t.outcome.name()));
        }
    }
    for step in failing {
        let tail = step.log_tail.trim();
        if !tail.is_empty() {
            text.push_str(&format!(
                "\nOutput of {} (`{}`), last part:\n{}\n",
                step.name,
                step.command,
                cap(tail, REPAIR_STEP_CAP)
            ));
        }
    }
    if text.chars().count() > REPAIR_CAP {
        text = text.chars().take(REPAIR_CAP).collect();
        text.push_str("\n[... cut ...]\n");
    }
    text
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

/// File names at the worktree's root (for profile detection).
fn root_files(dir: &std::path::Path) -> Result<Vec<String>> {
    Ok(std::fs::read_dir(dir)
        .with_context(|| format!("list {}", dir.display()))?
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect())
}

fn short(sha: &str) -> &str {
    &sha[..sha.len().min(12)]
}

fn write(path: &std::path::Path, text: &str) -> Result<()> {
    std::fs::write(path, text).with_context(|| format!("write {}", path.display()))
}
