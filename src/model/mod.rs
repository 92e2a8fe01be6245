//! One client for every OpenAI-compatible Chat Completions server vouch can drive: llama.cpp's
//! `llama-server`, vLLM, Ollama and LM Studio.
//!
//! The wire format is read with `serde_json` rather than a typed SDK, because real local servers disagree
//! with the spec in small ways that typed clients reject: `content: ""` beside tool calls, `reasoning_content`,
//! llama-server's `timings`, errors as HTTP 500 for a malformed request. Everything a caller branches on is
//! typed here ([`ChatTurn`], [`ModelError`]); everything else is kept as JSON.
//!
//! Tool calls go through one of two modes ([`Mode`]). *Native* sends `tools` and trusts `tool_calls`, but
//! still recovers calls the server left in the text ([`crate::toolcall::recover`]). *Constrained* sends no
//! `tools`: the tools are described in the system prompt and a JSON-schema `response_format` makes the reply
//! itself a call; this drives weak models and servers whose chat template cannot do tools. [`ToolMode::Auto`]
//! starts native and switches to constrained for the rest of the session when the server says its template
//! has no tool support (`GET /props`) or when a turn offered tools and got neither a call nor a recoverable one.
//!
//! Failures are classified ([`ModelError`]) with what to do about them. Connection errors, 5xx and 429 are
//! retried with exponential backoff (429 honours `Retry-After`); other 4xx are not. The API key is read from
//! an environment variable whose *name* is configured and never appears in errors or `Debug` output.
//!
//! A turn is cancelled by dropping its future (the connection closes with it); a stream that stays silent for
//! the idle timeout, or has not finished by the overall stream deadline, fails with [`ModelError::Timeout`],
//! a stream cut mid-reply with [`ModelError::StreamCut`]; neither is retried (an error event inside a stream
//! is classified like a status and may be). Everything that comes back is scrubbed of the key
//! ([`Redactor`]) before anyone sees it: errors, retry log lines, the joined text and calls of a reply.
//!
//! `client.rs` holds HTTP, retries and server detection; `wire.rs` reads responses and accumulates streamed
//! chunks; `constrained.rs` builds the constrained mode's schema, prompt and history; `error.rs` classifies.

mod client;
mod constrained;
mod error;
mod runaway;
mod wire;

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

pub use crate::secret::Redactor;
pub use client::{Client, ServerInfo};
pub use constrained::{response_format, ResponseFormat};
pub use error::ModelError;

/// The endpoint when neither a flag, `VOUCH_ENDPOINT` nor `vouch.toml` names one: a local llama-server.
pub const DEFAULT_ENDPOINT: &str = "http://127.0.0.1:8080";
/// The `model` field sent when none is configured (llama-server ignores it).
pub const DEFAULT_MODEL: &str = "local";
/// Tokens one reply may generate when neither `--max-tokens` nor `vouch.toml` says. Tool-call replies of
/// small local coders measured 18 to 200 tokens; 1536 still fits a whole-file `write_file` of about 150
/// lines, and caps a runaway reply at about 4 minutes at 6 tokens/s (8192 took over 20).
pub const DEFAULT_MAX_TOKENS: u32 = 1536;

/// How tool calls are requested, as configured (`--tool-mode`, `tool_mode` in `vouch.toml`). The variants'
/// doc comments are the flag's help.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, serde::Deserialize, clap::ValueEnum,
)]
#[serde(rename_all = "lowercase")]
pub enum ToolMode {
    /// Send `tools`; recover calls leaked into the reply text.
    Native,
    /// Describe the tools in the prompt; a JSON-schema response format makes each reply a call.
    Constrained,
    /// Native, switching to constrained when the server or the model cannot do native calls.
    #[default]
    Auto,
}

impl ToolMode {
    /// Reads `native`, `constrained` or `auto`.
    pub fn parse(s: &str) -> Option<ToolMode> {
        match s {
            "native" => Some(ToolMode::Native),
            "constrained" => Some(ToolMode::Constrained),
            "auto" => Some(ToolMode::Auto),
            _ => None,
        }
    }
}

/// The mode a turn actually used.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    Native,
    Constrained,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Native => "native",
            Mode::Constrained => "constrained",
        }
    }
}

/// Which server is on the other end; it decides llama-server-only fields such as `cache_prompt`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ServerKind {
    /// Ask `GET /props` once: llama-server answers it, the others do not.
    #[default]
    Detect,
    LlamaServer,
    /// vLLM, Ollama, LM Studio or anything else OpenAI-compatible.
    Other,
}

/// Everything the client needs to know. [`ModelConfig::new`] gives the defaults.
#[derive(Clone, Debug)]
pub struct ModelConfig {
    /// Base URL, with or without a trailing `/v1`: `http://127.0.0.1:8080`.
    pub endpoint: String,
    /// The `model` field of each request (llama-server ignores it; vLLM and Ollama need it).
    pub model: String,
    /// The *name* of the environment variable that holds the API key, if the server wants one.
    pub api_key_env: Option<String>,
    pub tool_mode: ToolMode,
    pub server: ServerKind,
    /// Stream replies (SSE). Streaming lets the idle timeout catch a stalled server early.
    pub stream: bool,
    /// Time to connect to the server.
    pub connect_timeout: Duration,
    /// Time for a whole non-streamed request, or until a streamed reply starts.
    pub request_timeout: Duration,
    /// Time for a whole streamed reply: a server that drips a chunk just inside the idle timeout, forever,
    /// ends here.
    pub stream_deadline: Duration,
    /// Longest silence between two chunks of a streamed reply.
    pub idle_timeout: Duration,
    /// Retries after the first attempt, on connection errors, 5xx and 429.
    pub max_retries: u32,
    /// The first backoff; each retry doubles it, up to `backoff_max`.
    pub backoff_base: Duration,
    pub backoff_max: Duration,
    /// The longest `Retry-After` honoured; longer ones are cut to this.
    pub retry_after_max: Duration,
    pub temperature: Option<f64>,
    pub max_tokens: Option<u32>,
    /// llama-server's `cache_prompt`; `None` sends `true` to llama-server and nothing to other servers.
    pub cache_prompt: Option<bool>,
    /// The call syntax learned from the server's chat template (by `vouch probe`), used in recovery.
    pub learned: Option<crate::toolcall::learn::Learned>,
}

impl ModelConfig {
    pub fn new(endpoint: impl Into<String>, model: impl Into<String>) -> ModelConfig {
        ModelConfig {
            endpoint: endpoint.into(),
            model: model.into(),
            api_key_env: None,
            tool_mode: ToolMode::Auto,
            server: ServerKind::Detect,
            stream: true,
            connect_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(600),
            stream_deadline: Duration::from_secs(1800),
            idle_timeout: Duration::from_secs(120),
            max_retries: 4,
            backoff_base: Duration::from_millis(500),
            backoff_max: Duration::from_secs(30),
            retry_after_max: Duration::from_secs(120),
            temperature: None,
            max_tokens: None,
            cache_prompt: None,
            learned: None,
        }
    }
}

/// A call the model made: the offered tool's name, its arguments as a JSON object, and the call id that the
/// tool result must carry (the server's, or `vouch_N` for a call read from text).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: Value,
}

/// One message of the conversation.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "role", rename_all = "lowercase")]
pub enum ChatMessage {
    System {
        content: String,
    },
    User {
        content: String,
    },
    Assistant {
        content: String,
        tool_calls: Vec<ToolCall>,
    },
    Tool {
        tool_call_id: String,
        name: String,
        content: String,
    },
}

impl ChatMessage {
    pub fn system(content: impl Into<String>) -> ChatMessage {
        ChatMessage::System {
            content: content.into(),
        }
    }

    pub fn user(content: impl Into<String>) -> ChatMessage {
        ChatMessage::User {
            content: content.into(),
        }
    }

    pub fn assistant(content: impl Into<String>, tool_calls: Vec<ToolCall>) -> ChatMessage {
        ChatMessage::Assistant {
            content: content.into(),
            tool_calls,
        }
    }

    pub fn tool(
        tool_call_id: impl Into<String>,
        name: impl Into<String>,
        content: impl Into<String>,
    ) -> ChatMessage {
        ChatMessage::Tool {
            tool_call_id: tool_call_id.into(),
            name: name.into(),
            content: content.into(),
        }
    }

    /// The OpenAI wire form. An assistant message's `content` is `""`, never `null`, beside tool calls
    /// (llama-cpp-python rejects `null`), and call arguments are sent as a JSON string.
    pub fn to_openai(&self) -> Value {
        match self {
            ChatMessage::System { content } => json!({"role": "system", "content": content}),
            ChatMessage::User { content } => json!({"role": "user", "content": content}),
            ChatMessage::Assistant {
                content,
                tool_calls,
            } if tool_calls.is_empty() => json!({"role": "assistant", "content": content}),
            ChatMessage::Assistant {
                content,
                tool_calls,
            } => json!({
                "role": "assistant",
                "content": content,
                "tool_calls": tool_calls.iter().map(|c| json!({
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments.to_string()},
                })).collect::<Vec<_>>(),
            }),
            ChatMessage::Tool {
                tool_call_id,
                name,
                content,
            } => {
                json!({"role": "tool", "tool_call_id": tool_call_id, "name": name, "content": content})
            }
        }
    }
}

/// One request: the conversation so far and the offered tools (an OpenAI `tools` array; empty for none).
#[derive(Clone, Debug, Default)]
pub struct ChatRequest {
    pub messages: Vec<ChatMessage>,
    pub tools: Vec<Value>,
    /// This request's sampling temperature, over the configured one (a retry after a repeated reply).
    pub temperature: Option<f64>,
}

/// Token counts. `cached` is the part of the prompt the server reused from its cache, when it says.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub prompt: u64,
    pub completion: u64,
    pub cached: Option<u64>,
}

/// What one turn produced.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ChatTurn {
    /// The answer text; without the calls when they were read from it.
    pub content: String,
    /// The answer text as the server sent it, calls and all (the transcript keeps it when it differs
    /// from `content`).
    pub raw: String,
    /// `reasoning_content` (or `reasoning`), plus reasoning found inline when calls were read from text.
    pub reasoning: String,
    pub calls: Vec<ToolCall>,
    /// `stop`, `length`, `tool_calls`, ...; `None` when the server did not say.
    pub finish_reason: Option<String>,
    pub usage: Option<Usage>,
    /// llama-server's `timings` object, as sent.
    pub timings: Option<Value>,
    pub mode: Mode,
    /// The calls were read from the reply text rather than from `tool_calls` (always so in constrained mode).
    pub recovered: bool,
    /// What recovery repaired or dropped.
    pub warnings: Vec<String>,
    /// Tools the reply called that are not offered; their calls are dropped (see [`crate::toolcall::Recovered::unknown`]).
    pub unknown_tools: Vec<String>,
}
