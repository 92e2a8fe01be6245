//! What a probe found, as types: the JSON report (`--json`) is their serde form, and the console summary is
//! written from them too.

use serde::Serialize;

use crate::model::ToolMode;

/// The whole probe report. Field names are the stable JSON names.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub endpoint: String,
    /// The model asked for (`--model`), else the first one the server lists.
    pub model: String,
    /// The ids `GET /v1/models` listed.
    pub models: Vec<String>,
    /// The server answered llama-server's `GET /props`.
    pub llama_server: bool,
    pub tool_calls: ToolCalls,
    pub context: Context,
    pub template: Option<Template>,
    pub needle: Vec<Needle>,
    pub speed: Vec<Speed>,
    pub cache: Cache,
    /// The tool mode vouch should use with this endpoint.
    pub tool_mode: ToolMode,
    pub warnings: Vec<Warning>,
    /// Wall time of the whole probe, in seconds.
    pub elapsed_s: f64,
}

/// The tool-call round trips.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ToolCalls {
    /// At least one round trip came back as structured `tool_calls`.
    pub structured: bool,
    /// The format of calls that came back as text instead, if any did.
    pub leaked_format: Option<String>,
    /// Calls leaked as text and vouch read them back from it.
    pub recovered: bool,
    pub runs: Vec<ToolRun>,
}

/// One round trip with one `tool_choice`.
#[derive(Clone, Debug, Serialize)]
pub struct ToolRun {
    /// `auto` or `required`.
    pub tool_choice: String,
    pub outcome: CallOutcome,
    /// The leaked format, for [`CallOutcome::Leaked`].
    pub leaked_format: Option<String>,
    /// The called tool's name, when there was a call.
    pub name: Option<String>,
    /// The request failed: the server's message.
    pub error: Option<String>,
}

/// How a round trip's call came back.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CallOutcome {
    /// In `tool_calls`.
    Structured,
    /// As text in `content`, and vouch recovered it.
    Leaked,
    /// As text vouch could not read as a call, or no call at all.
    NoCall,
    /// The request failed.
    Error,
}

/// The context size, as the server says and as measured.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Context {
    /// Tokens one request can use, as the server advertises (`/props` per-slot `n_ctx`, else `/v1/models`).
    pub advertised: Option<u64>,
    /// `n_ctx` per slot (`/props` `default_generation_settings.n_ctx`).
    pub n_ctx_slot: Option<u64>,
    /// The context the model was trained for (`/v1/models` `meta.n_ctx_train`).
    pub n_ctx_train: Option<u64>,
    /// llama-server's slots (`/props` `total_slots`).
    pub slots: Option<u64>,
    /// `chat_template_caps.supports_tools`.
    pub supports_tools: Option<bool>,
    /// The deepest needle retrieved verbatim, in tokens.
    pub measured: Option<u64>,
}

/// The chat template the server uses and what vouch made of it.
#[derive(Clone, Debug, Serialize)]
pub struct Template {
    /// SHA-256 of the template text, hex (the learned format's cache key).
    pub hash: String,
    /// The recovery format it was learned to be, when known.
    pub format: Option<String>,
    /// The delimiters learned from renders, if learning succeeded.
    pub learned: Option<crate::toolcall::learn::Learned>,
    /// Rendered tool calls lose their arguments.
    pub drops_arguments: bool,
    /// Why learning did not give a format.
    pub error: Option<String>,
}

/// One needle test.
#[derive(Clone, Debug, Serialize)]
pub struct Needle {
    pub depth_tokens: u64,
    /// The whole document, in tokens (as the server counted them, when it said).
    pub prompt_tokens: Option<u64>,
    /// The needle came back verbatim.
    pub found: bool,
    /// The request failed: the server's message (a context overflow says so).
    pub error: Option<String>,
}

/// Speed at one depth, from the server's own `timings` (or wall time when there are none).
#[derive(Clone, Debug, Serialize)]
pub struct Speed {
    pub depth_tokens: u64,
    pub reps: usize,
    /// Mean prompt tokens the server processed per request.
    pub prompt_tokens: f64,
    pub prefill_tps_mean: f64,
    pub prefill_tps_stdev: f64,
    pub decode_tps_mean: f64,
    pub decode_tps_stdev: f64,
    /// Each repetition's numbers as the server reported them.
    pub samples: Vec<SpeedSample>,
    /// `timings` (the server's own) or `wall` (usage over request time).
    pub source: TimingSource,
}

/// One measured request.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct SpeedSample {
    pub prompt_n: u64,
    pub prefill_tps: f64,
    pub predicted_n: u64,
    pub decode_tps: f64,
    /// Prompt tokens the server took from its cache (should be about 0: the prompts are cold).
    pub cache_n: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TimingSource {
    Timings,
    Wall,
}

/// Prompt-cache reuse: the same prefix sent twice.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Cache {
    /// Of the second request's prompt, the part the server took from its cache; `None` when it did not say.
    pub reused_fraction: Option<f64>,
    /// The shared prefix's share of the second prompt (what reuse could reach).
    pub shared_fraction: f64,
    pub cached_tokens: Option<u64>,
    pub prompt_tokens: Option<u64>,
}

/// A serving trap, with its number.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Warning {
    pub kind: WarningKind,
    pub message: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WarningKind {
    /// The context loaded is smaller than the model's.
    SmallContext,
    /// llama-server runs several slots; each request gets a share of `n_ctx`.
    Slots,
    /// The prompt cache does not survive from one turn to the next.
    NoCacheReuse,
    /// The chat template drops tool-call arguments.
    TemplateDropsArguments,
    /// The template renders no tools (`supports_tools: false`).
    ToolsDropped,
    /// Tool calls came back as text.
    LeakedCalls,
    /// No tool call came back at all.
    NoToolCalls,
    /// Decode speed spread points at speculative decoding.
    SpeculativeDecoding,
    /// A needle was not retrieved.
    NeedleLost,
    /// A check could not run.
    CheckFailed,
}
