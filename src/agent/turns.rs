//! The tool loop, one turn at a time: a request, the model's calls run in order through the tool
//! [`Registry`](crate::tools::Registry), the rails, and the records of each turn. The guided strategy's
//! loop is in `guided/`, what a submission leads to in `verify.rs`.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::rails::{Answer, Nudge, Step, Used};
use super::transcript::{ElidedMessage, Event, NudgeKind};
use super::{elide, limits, prompt};
use super::{Agent, Flow, Status, StopReason, DEFAULT_CONTEXT, TURN_PROGRESS_EVERY};
use crate::gate::outcome::Verdict;
use crate::model::{ChatMessage, ChatRequest, ChatTurn, ModelError, ToolCall};
use crate::tools::{Context as ToolContext, Submission, ToolError};

impl Agent<'_> {
    pub(super) async fn run_loop(&mut self) -> (Status, StopReason) {
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

    pub(super) fn used(&self) -> Used {
        Used {
            turns: self.turns,
            elapsed: self.started.elapsed(),
            tokens: self.tokens.prompt + self.tokens.completion,
        }
    }

    /// Whether the tests' result (pass/fail set of the last `run_tests`) differs from the one seen before.
    pub(super) fn tests_changed(&mut self) -> bool {
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
    pub(super) async fn calls(&mut self, calls: &[ToolCall], recovered: bool) -> Flow {
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
    pub(super) fn unfinished(&self) -> Status {
        match self.gate.as_ref().map(|g| g.verdict) {
            Some(Verdict::Fail) => Status::Rejected,
            _ => Status::Incomplete,
        }
    }

    pub(super) fn unfinished_or_error(&self, stop: StopReason) -> Status {
        if stop == StopReason::ModelError {
            Status::Error
        } else {
            self.unfinished()
        }
    }

    /// The next turn, unless Ctrl-C, the wall time or a budget ends the run first: then `Err` holds the
    /// run's status and why it stopped. Both strategies' loops start each turn here.
    pub(super) async fn next_turn(&mut self) -> Result<ChatTurn, (Status, StopReason)> {
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
    pub(super) async fn turn(&mut self) -> Result<ChatTurn, StopReason> {
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
            if names.is_empty() && self.plain {
                // The guided strategy asks for code, not calls.
                "(code reply)".to_string()
            } else if names.is_empty() {
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
    pub(super) fn progress_every(&self) -> Duration {
        std::env::var("VOUCH_TURN_PROGRESS_MS")
            .ok()
            .and_then(|v| v.parse::<u64>().ok())
            .filter(|ms| *ms > 0)
            .map_or(TURN_PROGRESS_EVERY, Duration::from_millis)
    }

    /// The tools whose failure is the tests' (or a command's) result rather than a refusal of the call.
    pub(super) fn runs_tests(&self, name: &str) -> bool {
        matches!(name, "run_tests" | "shell")
    }

    pub(super) fn mutates(&self, name: &str) -> bool {
        self.registry.get(name).is_some_and(|t| t.mutates())
    }

    /// Runs one call; `submit` fills `submitted`.
    pub(super) async fn call(
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
    pub(super) fn context_size(&self) -> u64 {
        self.client
            .server()
            .and_then(|s| s.n_ctx)
            .filter(|n| *n > 0)
            .or(self.cfg.context)
            .unwrap_or(DEFAULT_CONTEXT)
    }

    /// Applies the elision [`elide::plan`] for the last prompt, and records it.
    pub(super) fn elide(&mut self) {
        let context = self.context_size();
        let plan = elide::plan(&self.messages, self.sent, self.last_prompt, context);
        self.apply_elision(plan, context);
    }

    /// After the server refused the last request as too long for its context (a resumed run): elides old
    /// tool outputs, of any size if need be, so that the request resent is smaller than the one refused.
    /// False when no output is left to elide.
    pub(super) fn elide_after_overflow(&mut self) -> bool {
        let context = self.context_size();
        self.last_prompt = self.last_prompt.max(context + context / 4);
        let plan = elide::plan_overflow(&self.messages, self.sent, self.last_prompt, context);
        if plan.outputs.is_empty() {
            return false;
        }
        // The prompt as estimated after the step, so that the next turn does not elide again before it asks.
        let after = self.last_prompt.saturating_sub(plan.estimated_tokens);
        self.apply_elision(plan, context);
        self.last_prompt = after;
        true
    }

    fn apply_elision(&mut self, plan: elide::Plan, context: u64) {
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
    pub(super) fn log_messages(&mut self) {
        for (i, m) in self.messages.iter().enumerate().skip(self.sent) {
            self.transcript.event(&Event::Message {
                index: i,
                message: m.clone(),
            });
        }
    }

    /// What to tell the model about calls of tools that do not exist, one paragraph each; empty for none.
    pub(super) fn unknown_tools(&self, names: &[String]) -> String {
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
    pub(super) fn rail_nudge(&mut self, nudge: &Nudge) {
        self.nudge(nudge.kind(), &nudge.text());
    }

    /// A user message from the loop itself.
    pub(super) fn nudge(&mut self, kind: NudgeKind, text: &str) {
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
