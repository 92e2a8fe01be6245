//! The HTTP side: one request per turn (streamed or not), retries with backoff, server detection via
//! `GET /props`, and turning a raw reply into a [`ChatTurn`] through tool-call recovery.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use futures::StreamExt as _;
use reqwest::header::{HeaderMap, CONTENT_TYPE, RETRY_AFTER};
use serde::Serialize;
use serde_json::{json, Map, Value};

use super::error::{classify, ModelError};
use super::wire::{parse_response, Accumulator, RawReply, SseLines};
use super::{constrained, wire};
use super::{ChatRequest, ChatTurn, Mode, ModelConfig, ServerKind, ToolCall, ToolMode};
use crate::secret::{Redactor, Secret};
use crate::toolcall::{recover, recover_with, Format, Message, NativeCall, ToolSpec};

/// A request body: the fields as JSON, and the constrained mode's schema typed to keep its key order.
#[derive(Debug, Serialize)]
struct RequestBody {
    #[serde(flatten)]
    fields: Map<String, Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_format: Option<constrained::ResponseFormat>,
}

/// What `GET /props` told about the server.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ServerInfo {
    /// The server is llama.cpp's `llama-server` (it answers `/props`), so `cache_prompt` applies.
    pub llama_server: bool,
    /// `chat_template_caps.supports_tools`: whether the chat template renders `tools` at all.
    pub supports_tools: Option<bool>,
    /// The context size per slot, when the server says.
    pub n_ctx: Option<u64>,
}

/// Replies in a row without a readable call after which `auto` leaves the native mode for the constrained
/// one. One reply without a call is a model thinking aloud, not tool calling failing.
pub const AUTO_SWITCH_AFTER: u32 = 3;

#[derive(Debug)]
struct State {
    mode: Mode,
    /// Native-mode replies in a row without a readable call (for `auto`).
    failed: u32,
    /// `None` until `/props` was asked (or never, when the configuration says which server it is).
    server: Option<ServerInfo>,
    /// When the caller's time runs out: a `Retry-After` beyond it ends the request at once.
    deadline: Option<Instant>,
}

/// A failed attempt, with the server's `Retry-After`.
struct Failure {
    error: ModelError,
    retry_after: Option<Duration>,
}

impl From<ModelError> for Failure {
    fn from(error: ModelError) -> Failure {
        Failure {
            error,
            retry_after: None,
        }
    }
}

/// The Chat Completions client. One per session: it remembers the tool mode it settled on.
pub struct Client {
    http: reqwest::Client,
    cfg: ModelConfig,
    key: Option<Secret>,
    /// Removes the key from everything that comes back.
    redactor: Redactor,
    chat_url: String,
    props_url: String,
    /// `host:port`, for messages.
    address: String,
    state: Mutex<State>,
    next_id: AtomicU64,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("chat_url", &self.chat_url)
            .field("model", &self.cfg.model)
            .field("tool_mode", &self.cfg.tool_mode)
            .field("mode", &self.mode())
            .field("api_key_env", &self.cfg.api_key_env)
            .field("api_key", &self.key)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// A client for `cfg`; reads the API key from the environment variable `cfg.api_key_env` names.
    pub fn new(cfg: ModelConfig) -> Result<Client, ModelError> {
        Client::with_env(cfg, |name| std::env::var(name).ok())
    }

    /// [`Client::new`] with the environment read through `env` (tests pass a map instead of mutating the
    /// process environment).
    pub fn with_env(
        cfg: ModelConfig,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Client, ModelError> {
        let url = reqwest::Url::parse(cfg.endpoint.trim()).map_err(|e| ModelError::Config {
            message: format!("the endpoint `{}` is not a URL: {e}", cfg.endpoint),
        })?;
        if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
            return Err(ModelError::Config {
                message: format!(
                    "the endpoint `{}` must be an http:// or https:// URL",
                    cfg.endpoint
                ),
            });
        }
        let address = format!(
            "{}:{}",
            url.host_str().unwrap_or_default(),
            url.port_or_known_default().unwrap_or(80)
        );
        let base = url.as_str().trim_end_matches('/').to_string();
        let (root, v1) = match base.strip_suffix("/v1") {
            Some(root) => (root.to_string(), base.clone()),
            None => (base.clone(), format!("{base}/v1")),
        };
        let key = match &cfg.api_key_env {
            None => None,
            Some(name) => match env(name) {
                Some(v) if !v.trim().is_empty() => Some(Secret::new(v.trim())),
                _ => {
                    return Err(ModelError::Config {
                        message: format!(
                        "the environment variable `{name}` should hold the API key but is not set"
                    ),
                    })
                }
            },
        };
        let http = reqwest::Client::builder()
            .connect_timeout(cfg.connect_timeout)
            .build()
            .map_err(|e| ModelError::Config {
                message: format!("cannot set up the HTTP client: {e}"),
            })?;
        let mode = match cfg.tool_mode {
            ToolMode::Constrained => Mode::Constrained,
            ToolMode::Native | ToolMode::Auto => Mode::Native,
        };
        let server = match cfg.server {
            ServerKind::Detect => None,
            ServerKind::LlamaServer if cfg.tool_mode == ToolMode::Auto => None,
            ServerKind::LlamaServer => Some(ServerInfo {
                llama_server: true,
                ..ServerInfo::default()
            }),
            ServerKind::Other => Some(ServerInfo::default()),
        };
        let redactor = crate::secret::known();
        Ok(Client {
            http,
            redactor,
            chat_url: format!("{v1}/chat/completions"),
            props_url: format!("{root}/props"),
            address,
            key,
            cfg,
            state: Mutex::new(State {
                mode,
                failed: 0,
                server,
                deadline: None,
            }),
            next_id: AtomicU64::new(1),
        })
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The tool mode the next turn will use.
    pub fn mode(&self) -> Mode {
        self.state().mode
    }

    /// What is known about the server (after the first turn or [`Client::probe`]).
    pub fn server(&self) -> Option<ServerInfo> {
        self.state().server.clone()
    }

    pub fn config(&self) -> &ModelConfig {
        &self.cfg
    }

    /// What removes the API key from text: for everything the caller records or sends on.
    pub fn redactor(&self) -> &Redactor {
        &self.redactor
    }

    /// The moment the caller's time runs out (`--wall-time`): a server asking to retry after it ends the
    /// request with [`ModelError::RetryPastDeadline`] instead of a wait that cannot pay off.
    pub fn set_deadline(&self, deadline: Option<Instant>) {
        self.state().deadline = deadline;
    }

    fn authorized(&self, rb: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match &self.key {
            Some(k) => rb.bearer_auth(k.reveal()),
            None => rb,
        }
    }

    /// Asks `GET /props` which server this is and whether its template supports tools; settles the mode
    /// when it is `auto`. A server that does not answer `/props` is not llama-server. When the server
    /// cannot be reached at all the answer is not remembered (the chat request reports that properly).
    pub async fn probe(&self) -> Option<ServerInfo> {
        self.probe_once().await.ok().flatten()
    }

    /// One `GET /props`: `Err` when nothing answered, `Ok(None)` when the answer says to ask again later.
    async fn probe_once(&self) -> Result<Option<ServerInfo>, reqwest::Error> {
        let rb = self.authorized(self.http.get(&self.props_url));
        let limit = self.cfg.request_timeout.min(Duration::from_secs(30));
        let resp = match tokio::time::timeout(limit, rb.send()).await {
            Ok(Ok(resp)) => resp,
            // Unreachable: the chat request reports that, with its retries.
            Ok(Err(e)) => return Err(e),
            // A server that takes this long over `/props` is not answering it: asking every turn would
            // cost the same wait again each time.
            Err(_) => {
                tracing::info!("GET /props did not answer within {limit:?}; not asking again");
                return Ok(Some(self.remember(ServerInfo {
                    llama_server: self.cfg.server == ServerKind::LlamaServer,
                    ..ServerInfo::default()
                })));
            }
        };
        if resp.status().is_server_error() {
            // llama-server answers 503 while it loads the model: ask again next turn.
            return Ok(None);
        }
        let props = if resp.status().is_success() {
            tokio::time::timeout(limit, resp.json::<Value>())
                .await
                .ok()
                .and_then(Result::ok)
        } else {
            None
        };
        let props = props.filter(|p| {
            [
                "default_generation_settings",
                "chat_template",
                "build_info",
                "total_slots",
            ]
            .iter()
            .any(|k| p.get(k).is_some())
        });
        let info = ServerInfo {
            llama_server: props.is_some() || self.cfg.server == ServerKind::LlamaServer,
            supports_tools: props
                .as_ref()
                .and_then(|p| p.pointer("/chat_template_caps/supports_tools"))
                .and_then(Value::as_bool),
            n_ctx: props
                .as_ref()
                .and_then(|p| p.pointer("/default_generation_settings/n_ctx"))
                .and_then(Value::as_u64),
        };
        Ok(Some(self.remember(info)))
    }

    /// Keeps what the probe learnt; settles an `auto` mode on a template without tools.
    fn remember(&self, info: ServerInfo) -> ServerInfo {
        let mut state = self.state();
        if self.cfg.tool_mode == ToolMode::Auto
            && info.supports_tools == Some(false)
            && state.mode == Mode::Native
        {
            tracing::info!(
                "the server's chat template does not support tools: using the constrained tool mode"
            );
            state.mode = Mode::Constrained;
        }
        state.server = Some(info.clone());
        info
    }

    /// Whether anything answers at the endpoint: `GET /props` until an HTTP answer comes back (any status),
    /// retried like a chat request. `Err` when nothing answered: nothing should be set up for a run then.
    pub async fn ping(&self) -> Result<(), ModelError> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            match self.probe_once().await {
                // Something answered (a timeout too: something listens and is busy).
                Ok(_) => return Ok(()),
                Err(e) if attempt > self.cfg.max_retries => {
                    return Err(self.scrub(self.transport_error(&e)))
                }
                Err(_) => tokio::time::sleep(backoff(&self.cfg, attempt)).await,
            }
        }
    }

    /// Sends one turn and reads the reply, its tool calls included.
    pub async fn chat(&self, req: &ChatRequest) -> Result<ChatTurn, ModelError> {
        let known = self.state().server.clone();
        let server = match known {
            Some(info) => info,
            None => self.probe().await.unwrap_or(ServerInfo {
                llama_server: self.cfg.server == ServerKind::LlamaServer,
                ..ServerInfo::default()
            }),
        };
        let specs = ToolSpec::from_openai(&Value::Array(req.tools.clone())).map_err(|e| {
            ModelError::Config {
                message: format!("bad tool definitions: {e:#}"),
            }
        })?;
        let mode = self.mode();
        let body = self.body(req, mode, &specs, server.llama_server);
        let raw = self.send(&body).await?;
        let turn = self.interpret(raw, mode, &specs);
        if self.cfg.tool_mode == ToolMode::Auto && mode == Mode::Native && !specs.is_empty() {
            self.count_failure(turn.calls.is_empty());
        }
        Ok(turn)
    }

    /// `auto`: after [`AUTO_SWITCH_AFTER`] native replies in a row without a readable call (native or
    /// recovered from the text), the next turns use the constrained mode. The switch happens once and for
    /// the turns after it only: the turns already sent are not sent again. The constrained mode renders
    /// the history its own way, so the server's prompt cache is lost once, at the switch; that is why one
    /// reply without a call, or a model that calls tools in its text, never switches.
    fn count_failure(&self, failed: bool) {
        let mut state = self.state();
        state.failed = if failed { state.failed + 1 } else { 0 };
        if state.failed >= AUTO_SWITCH_AFTER {
            tracing::info!(
                "{AUTO_SWITCH_AFTER} replies in a row had no readable tool call: using the constrained tool mode from now on"
            );
            state.mode = Mode::Constrained;
        }
    }

    /// The request body for one turn.
    fn body(&self, req: &ChatRequest, mode: Mode, specs: &[ToolSpec], llama: bool) -> RequestBody {
        let constrained = mode == Mode::Constrained && !specs.is_empty();
        let messages = if constrained {
            constrained::messages(&req.messages, &req.tools)
        } else {
            req.messages.iter().map(|m| m.to_openai()).collect()
        };
        let mut obj = Map::new();
        obj.insert("model".into(), json!(self.cfg.model));
        obj.insert("messages".into(), Value::Array(messages));
        obj.insert("stream".into(), json!(self.cfg.stream));
        let mut response_format = None;
        if self.cfg.stream {
            obj.insert("stream_options".into(), json!({"include_usage": true}));
        }
        if let Some(t) = req.temperature.or(self.cfg.temperature) {
            obj.insert("temperature".into(), json!(t));
        }
        if let Some(n) = self.cfg.max_tokens {
            obj.insert("max_tokens".into(), json!(n));
        }
        if constrained {
            response_format = Some(constrained::response_format(specs));
        } else if !req.tools.is_empty() {
            obj.insert("tools".into(), Value::Array(req.tools.clone()));
        }
        if llama {
            obj.insert(
                "cache_prompt".into(),
                json!(self.cfg.cache_prompt.unwrap_or(true)),
            );
        } else if let Some(c) = self.cfg.cache_prompt {
            obj.insert("cache_prompt".into(), json!(c));
        }
        RequestBody {
            fields: obj,
            response_format,
        }
    }

    /// Sends `body`, retrying connection errors, 5xx and 429 with exponential backoff.
    async fn send(&self, body: &RequestBody) -> Result<RawReply, ModelError> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let result = if self.cfg.stream {
                self.once_streamed(body, attempt).await
            } else {
                self.once(body, attempt).await
            };
            let f = match result {
                Ok(reply) => return Ok(self.redact_reply(reply)),
                Err(f) => Failure {
                    error: self.scrub(f.error),
                    retry_after: f.retry_after,
                },
            };
            if !f.error.retryable() || attempt > self.cfg.max_retries {
                return Err(f.error);
            }
            if let (Some(asked), Some(deadline)) = (f.retry_after, self.state().deadline) {
                let remaining = deadline.saturating_duration_since(Instant::now());
                if asked > remaining {
                    return Err(ModelError::RetryPastDeadline {
                        retry_after: asked,
                        remaining,
                        message: f.error.to_string(),
                    });
                }
            }
            let delay = match f.retry_after {
                Some(d) => d.min(self.cfg.retry_after_max),
                None => backoff(&self.cfg, attempt),
            };
            tracing::warn!("model request failed ({}); retrying in {delay:?}", f.error);
            tokio::time::sleep(delay).await;
        }
    }

    fn post(&self, body: &RequestBody) -> reqwest::RequestBuilder {
        self.authorized(self.http.post(&self.chat_url).json(body))
    }

    fn transport_error(&self, e: &reqwest::Error) -> ModelError {
        if e.is_timeout() {
            return ModelError::Timeout {
                what: "waiting for the reply",
                after: self.cfg.request_timeout,
            };
        }
        ModelError::Unreachable {
            address: self.address.clone(),
            detail: self.redact(error_chain(e)),
        }
    }

    /// The error for a non-success status, with the body read.
    async fn status_error(&self, resp: reqwest::Response, attempt: u32) -> Failure {
        let status = resp.status().as_u16();
        let retry_after = retry_after(resp.headers());
        let body = resp.text().await.unwrap_or_default();
        Failure {
            error: classify(status, &self.redact(body), &self.cfg.model, attempt),
            retry_after,
        }
    }

    async fn once(&self, body: &RequestBody, attempt: u32) -> Result<RawReply, Failure> {
        let timeout = self.cfg.request_timeout;
        let exchange = async {
            let resp = self
                .post(body)
                .send()
                .await
                .map_err(|e| self.transport_error(&e))?;
            if !resp.status().is_success() {
                return Err(self.status_error(resp, attempt).await);
            }
            let text = resp.text().await.map_err(|e| ModelError::StreamCut {
                detail: self.redact(error_chain(&e)),
            })?;
            parse_response(&self.redact(text)).map_err(Failure::from)
        };
        match tokio::time::timeout(timeout, exchange).await {
            Ok(r) => r,
            Err(_) => Err(ModelError::Timeout {
                what: "waiting for the whole reply",
                after: timeout,
            }
            .into()),
        }
    }

    async fn once_streamed(&self, body: &RequestBody, attempt: u32) -> Result<RawReply, Failure> {
        let timeout = self.cfg.request_timeout;
        let resp = match tokio::time::timeout(timeout, self.post(body).send()).await {
            Err(_) => {
                return Err(ModelError::Timeout {
                    what: "waiting for the reply to start",
                    after: timeout,
                }
                .into())
            }
            Ok(Err(e)) => return Err(self.transport_error(&e).into()),
            Ok(Ok(resp)) => resp,
        };
        if !resp.status().is_success() {
            return Err(self.status_error(resp, attempt).await);
        }
        let is_sse = resp
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.contains("text/event-stream"));
        if !is_sse {
            // The server ignored `stream`: read the whole answer.
            let text = tokio::time::timeout(timeout, resp.text())
                .await
                .map_err(|_| ModelError::Timeout {
                    what: "waiting for the whole reply",
                    after: timeout,
                })?
                .map_err(|e| ModelError::StreamCut {
                    detail: self.redact(error_chain(&e)),
                })?;
            return parse_response(&self.redact(text)).map_err(Failure::from);
        }
        let deadline = self.cfg.stream_deadline;
        match tokio::time::timeout(deadline, self.read_stream(resp)).await {
            Ok(r) => r,
            Err(_) => Err(ModelError::Timeout {
                what: "the streamed reply did not finish (overall deadline)",
                after: deadline,
            }
            .into()),
        }
    }

    /// The events of a streamed reply, joined, until `[DONE]`, a finish reason or the end.
    async fn read_stream(&self, resp: reqwest::Response) -> Result<RawReply, Failure> {
        let idle = self.cfg.idle_timeout;
        let mut stream = resp.bytes_stream();
        let mut sse = SseLines::default();
        let mut acc = Accumulator::default();
        while !acc.done {
            let bytes = match tokio::time::timeout(idle, stream.next()).await {
                Err(_) => {
                    return Err(ModelError::Timeout {
                        what: "the reply stream went silent",
                        after: idle,
                    }
                    .into())
                }
                Ok(None) => break,
                Ok(Some(Err(e))) => {
                    return Err(ModelError::StreamCut {
                        detail: self.redact(error_chain(&e)),
                    }
                    .into())
                }
                Ok(Some(Ok(bytes))) => bytes,
            };
            for event in sse.push(&bytes) {
                acc.push(&self.redact(event))?;
            }
        }
        if let Some(event) = sse.finish() {
            acc.push(&self.redact(event))?;
        }
        if !acc.finished() {
            return Err(ModelError::StreamCut {
                detail: "the connection closed before a finish_reason or [DONE]".into(),
            }
            .into());
        }
        Ok(acc.into_reply())
    }

    /// Removes the API key from text that came from the server or the network stack.
    fn redact(&self, s: String) -> String {
        self.redactor.text(&s)
    }

    /// The error without the key in any of its texts.
    fn scrub(&self, error: ModelError) -> ModelError {
        match &self.key {
            Some(k) => error.redacted(k.reveal()),
            None => error,
        }
    }

    /// A whole reply without the key: its text, reasoning and every call's name and arguments, joined, so a
    /// key split across two deltas is found too.
    fn redact_reply(&self, mut reply: RawReply) -> RawReply {
        if self.redactor.is_empty() {
            return reply;
        }
        self.redactor.in_place(&mut reply.content);
        self.redactor.in_place(&mut reply.reasoning);
        for call in &mut reply.calls {
            self.redactor.in_place(&mut call.id);
            self.redactor.in_place(&mut call.name);
            self.redactor.in_place(&mut call.arguments);
        }
        if let Some(t) = reply.timings.as_mut() {
            self.redactor.value(t);
        }
        reply
    }

    fn fresh_id(&self) -> String {
        format!("vouch_{}", self.next_id.fetch_add(1, Ordering::Relaxed))
    }

    /// Reads the calls out of a reply: native `tool_calls` first, else recovered from the text.
    fn interpret(&self, raw: RawReply, mode: Mode, specs: &[ToolSpec]) -> ChatTurn {
        let mut turn = ChatTurn {
            content: raw.content.clone(),
            raw: raw.content.clone(),
            reasoning: raw.reasoning.clone(),
            calls: Vec::new(),
            finish_reason: raw.finish_reason.clone(),
            usage: raw.usage,
            timings: raw.timings.clone(),
            mode,
            recovered: false,
            warnings: Vec::new(),
            unknown_tools: Vec::new(),
        };
        if raw.finish_reason.as_deref() == Some(wire::REPETITION) {
            turn.warnings.push(
                "the reply repeated one text over and over, so vouch stopped it and kept the text up to the first copy"
                    .into(),
            );
        }
        if specs.is_empty() {
            return turn;
        }
        let natives: Vec<NativeCall> = raw
            .calls
            .iter()
            .map(|c| NativeCall {
                name: c.name.clone(),
                arguments: c.arguments.clone(),
            })
            .collect();
        let msg = Message {
            content: Some(&raw.content),
            reasoning_content: (!raw.reasoning.is_empty()).then_some(raw.reasoning.as_str()),
            tool_calls: &natives,
        };
        if mode == Mode::Constrained && raw.calls.is_empty() {
            if let Some((name, arguments)) = constrained::parse_call(&raw.content, specs) {
                turn.recovered = true;
                turn.content = String::new();
                turn.calls.push(ToolCall {
                    id: self.fresh_id(),
                    name,
                    arguments,
                });
                return turn;
            }
        }
        // Native calls one by one, so that each keeps its own id: a call whose arguments cannot be read is
        // kept (its arguments the raw text) and gets an error result of its own, instead of vanishing and
        // shifting the ids of the calls after it.
        let mut ordered: Vec<ToolCall> = Vec::new();
        let mut readable = 0;
        if !natives.is_empty() {
            for (raw_call, native) in raw.calls.iter().zip(&natives) {
                let one = Message {
                    content: None,
                    reasoning_content: None,
                    tool_calls: std::slice::from_ref(native),
                };
                let rec = recover(&one, specs, None);
                turn.warnings.extend(rec.warnings);
                let id = Some(raw_call.id.clone())
                    .filter(|id| !id.is_empty())
                    .unwrap_or_else(|| self.fresh_id());
                match rec.calls.into_iter().next() {
                    Some(call) if rec.format == Format::Native => {
                        readable += 1;
                        ordered.push(ToolCall {
                            id,
                            name: call.name,
                            arguments: call.arguments,
                        });
                    }
                    _ => {
                        // Kept to be answered, so the model learns what was wrong: an offered tool with
                        // arguments that are not JSON, or a tool that is not offered (often a function
                        // of the code called as if it were a tool).
                        let name = specs
                            .iter()
                            .find(|s| s.name.eq_ignore_ascii_case(native.name.trim()))
                            .map_or_else(|| native.name.trim().to_string(), |s| s.name.clone());
                        if !name.is_empty() {
                            ordered.push(ToolCall {
                                id,
                                name,
                                arguments: Value::String(native.arguments.clone()),
                            });
                        }
                    }
                }
            }
            if readable > 0 {
                turn.calls = ordered;
                return turn;
            }
        }
        let rec = recover_with(&msg, specs, None, self.cfg.learned.as_ref());
        turn.warnings.extend(rec.warnings);
        turn.unknown_tools = rec.unknown;
        if rec.calls.is_empty() {
            // Only unreadable native calls: each still gets its answer.
            turn.calls = ordered;
            return turn;
        }
        turn.recovered = rec.format != Format::Native;
        if turn.recovered {
            turn.content = rec.content;
            turn.reasoning = rec.reasoning;
        }
        let mut unused: Vec<bool> = vec![true; raw.calls.len()];
        for call in rec.calls {
            let id = if turn.recovered {
                None
            } else {
                raw.calls
                    .iter()
                    .enumerate()
                    .find(|(i, c)| unused[*i] && c.name.eq_ignore_ascii_case(&call.name))
                    .or_else(|| raw.calls.iter().enumerate().find(|(i, _)| unused[*i]))
                    .map(|(i, c)| {
                        unused[i] = false;
                        c.id.clone()
                    })
            };
            let id = id
                .filter(|id| !id.is_empty())
                .unwrap_or_else(|| self.fresh_id());
            turn.calls.push(ToolCall {
                id,
                name: call.name,
                arguments: call.arguments,
            });
        }
        turn
    }
}

/// The delay before retry number `attempt` (1-based): `base * 2^(attempt-1)`, at most `backoff_max`.
fn backoff(cfg: &ModelConfig, attempt: u32) -> Duration {
    let factor = 2u32.saturating_pow(attempt.saturating_sub(1));
    cfg.backoff_base.saturating_mul(factor).min(cfg.backoff_max)
}

/// `Retry-After` in seconds (the HTTP-date form is rare from model servers and is ignored).
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let v = headers.get(RETRY_AFTER)?.to_str().ok()?.trim();
    v.parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map(Duration::from_secs_f64)
}

/// An error and its causes on one line: reqwest's own message only names the URL.
fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut s = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        let c = cause.to_string();
        if !s.contains(&c) {
            s.push_str(": ");
            s.push_str(&c);
        }
        source = cause.source();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_the_cap() {
        let mut cfg = ModelConfig::new("http://127.0.0.1:1", "m");
        cfg.backoff_base = Duration::from_millis(100);
        cfg.backoff_max = Duration::from_millis(350);
        let got: Vec<u128> = (1..=4).map(|a| backoff(&cfg, a).as_millis()).collect();
        assert_eq!(got, vec![100, 200, 350, 350]);
    }

    #[test]
    fn endpoints_with_and_without_v1_reach_the_same_urls() {
        for e in [
            "http://h:8080",
            "http://h:8080/",
            "http://h:8080/v1",
            "http://h:8080/v1/",
        ] {
            let mut cfg = ModelConfig::new(e, "m");
            cfg.server = ServerKind::Other;
            let c = Client::new(cfg).unwrap();
            assert_eq!(c.chat_url, "http://h:8080/v1/chat/completions", "{e}");
            assert_eq!(c.props_url, "http://h:8080/props", "{e}");
            assert_eq!(c.address, "h:8080");
        }
        assert!(matches!(
            Client::new(ModelConfig::new("localhost:8080", "m")),
            Err(ModelError::Config { .. })
        ));
    }
}
