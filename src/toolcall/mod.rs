//! Recovering tool calls that a local server left in the text of a reply.
//!
//! Local servers (llama-server, vLLM, Ollama, LM Studio) turn a model's native tool-call syntax into
//! `tool_calls` with one parser per model, chosen from the chat template. When that fails, the call arrives
//! as plain text in `content` or `reasoning_content` with `finish_reason: "stop"`, and an agent that trusts
//! the server sees a model that talks about working instead of working. So vouch recovers calls itself.
//!
//! [`recover`] takes native `tool_calls` first, repairing argument JSON only where a repair has one reading.
//! Otherwise a one-pass detector (`detect.rs`) lists the format families whose markers occur in the text, in
//! order of appearance, and the parser of each family (one file per family) is tried until one yields a call.
//! Reasoning (`<think>…</think>` and its relatives, `reasoning_content`) is split off first: a call mentioned
//! there before a final answer is not a call; calls are taken from the reasoning only when there is no answer
//! text at all and they close the reasoning. Names are resolved against the offered tools only (case, a
//! `functions.` prefix, `-` for `_`), so no call can name a tool that was not offered, and arguments are typed
//! with the tool's JSON schema (`schema.rs`). Raw string values keep their text exactly.
//!
//! Everything is linear in the length of the reply: marker searches never rescan (`scan::Finder`), each call
//! is parsed inside the region between its markers, and speculative scans (a `{` that might start a call)
//! draw on a work budget. The work counter is what the linearity tests measure.

mod apertus;
mod bare_json;
mod deepseek;
mod detect;
mod function_tag;
mod functionary;
mod functionary_v32;
mod gemma;
mod glm;
mod harmony;
mod invoke;
mod jsoncall;
mod kimi;
mod kimi_k3;
pub mod learn;
mod learned;
mod literal;
mod mistral;
mod native;
mod pythonic;
mod qwen_xml;
mod reasoning;
mod recover;
mod scan;
mod schema;
mod solar;
mod tagged_json;

#[cfg(test)]
mod tests;

use std::fmt;
use std::ops::Range;

use serde::{Serialize, Serializer};
use serde_json::{Map, Value};

pub use recover::{recover, recover_with};
pub(crate) use scan::markup_tag;
pub use schema::ToolSpec;

/// A call as the server returned it in `tool_calls`: a name and the arguments as a JSON string.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NativeCall {
    pub name: String,
    pub arguments: String,
}

/// The parts of an assistant message that can hold tool calls.
#[derive(Clone, Copy, Debug, Default)]
pub struct Message<'a> {
    pub content: Option<&'a str>,
    pub reasoning_content: Option<&'a str>,
    pub tool_calls: &'a [NativeCall],
}

/// A recovered call: an offered tool's exact name and its arguments as a JSON object.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Call {
    pub name: String,
    pub arguments: Value,
    /// The call's closing marker was missing, but every argument was complete.
    #[serde(skip_serializing_if = "is_false")]
    pub unclosed: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// What [`recover`] found in a message.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Recovered {
    /// The format the calls were read in; [`Format::None`] when there are none.
    pub format: Format,
    pub calls: Vec<Call>,
    /// The answer text without the calls, the reasoning and trailing end-of-turn tokens, trimmed.
    pub content: String,
    /// `reasoning_content` plus reasoning found inline in `content` (`<think>` blocks, Harmony's analysis).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub reasoning: String,
    /// What was repaired, resolved or dropped (unknown tools, calls cut off, arguments of the wrong type).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// The names of tools that were called but are not offered (their calls are dropped): small models call
    /// a function of the code (`median`) as if it were a tool.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unknown: Vec<String>,
}

/// A tool-call format. [`Format::PARSERS`] are the ones a caller can force; the name strings are stable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// The server's own `tool_calls`.
    Native,
    /// `<tool_call>{"name":…, "arguments":…}</tool_call>` (Hermes, Qwen2.5/3, SmolLM2's list form, LongCat).
    Hermes,
    /// `<tool_call><function=NAME><parameter=K>…` (Qwen3-Coder, Qwen3.5/3.6, Nemotron 3 Nano, Step-3.5).
    Qwen3Coder,
    /// Qwen3-Coder's syntax inside `<seed:tool_call>` (Seed-OSS).
    SeedOss,
    /// `<tool_call>NAME<arg_key>K</arg_key><arg_value>V</arg_value>` (GLM-4.5 to GLM-5, Laguna, Ling-3, HY-V3).
    Glm,
    /// `<minimax:tool_call><invoke name=…><parameter name=…>` (MiniMax-M2).
    MinimaxM2,
    /// `<steptml:invoke name=…>` (Step-3).
    Step3,
    /// `[TOOL_CALLS][…]` and `[TOOL_CALLS]NAME[ARGS]{…}` (Mistral, Devstral, Magistral, Ministral).
    Mistral,
    /// `{"name":…, "parameters":…}`, optionally after `<|python_tag|>` (Llama 3.x, Llama 4 JSON).
    Llama3Json,
    /// A bare or fenced JSON object or list naming an offered tool (constrained replies, llama.cpp's
    /// generic format, xLAM, a Mistral list whose `[TOOL_CALLS]` was stripped).
    Json,
    /// `[f(a=1), g(b='x')]` (Llama 3.2/4 pythonic, LFM2, Olmo 3, Llama 3.1 built-in tools).
    Pythonic,
    /// `<｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME` + fenced JSON (DeepSeek R1, V3-0324).
    DeepseekR1,
    /// `<｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{…}` (DeepSeek V3.1, V3.2-Exp).
    DeepseekV31,
    /// `<｜DSML｜invoke name=…>` (DeepSeek V3.2, V4).
    DeepseekDsml,
    /// `<|tool_call_begin|>functions.NAME:0<|tool_call_argument_begin|>{…}` (Kimi-K2).
    KimiK2,
    /// `<|channel|>commentary to=functions.NAME<|message|>{…}<|call|>` (gpt-oss).
    Harmony,
    /// `<function=NAME>{…}</function>` (Functionary v3.1).
    FunctionaryV31,
    /// `>>>NAME\n{…}` messages, `>>>python\n` raw code, `>>>all\n` text (Functionary v3.2).
    FunctionaryV32,
    /// `<|tools_prefix|>[{"NAME": {…}}]<|tools_suffix|>` (Apertus).
    Apertus,
    /// `<|open|>call tool="NAME"<|sep|><|open|>argument key=… type=…<|sep|>…` (Kimi-K3 XTML).
    KimiK3,
    /// `<|tool_call:begin|>ID<|tool_call:name|>NAME<|tool_call:args|>{…}<|tool_call:end|>` (Solar Open).
    SolarOpen,
    /// `<|tool_call|>[…]` (Granite 3.x).
    Granite,
    /// `<TOOLCALL>[…]</TOOLCALL>` (Nemotron Nano v2, Llama-Nemotron).
    Nemotron,
    /// `<|START_ACTION|>[{"tool_name":…, "parameters":…}]<|END_ACTION|>` (Command R7B, Command A).
    CommandR7b,
    /// `functools[…]` (Phi-4-mini, Firefunction v2).
    Phi4,
    /// `<tool_calls>` holding JSON lines or a JSON list (MiniMax-M1, Hunyuan-A13B, Apriel, Jamba).
    ToolCallsJson,
    /// `<|action_start|><|plugin|>{…}<|action_end|>` (InternLM2).
    InternLm,
    /// `<|tool_call>call:NAME{k:<|"|>v<|"|>}<tool_call|>` (Gemma 4).
    Gemma4,
    /// `<start_function_call>call:NAME{k:<escape>v<escape>}<end_function_call>` (FunctionGemma).
    FunctionGemma,
    /// `<function name="NAME" parameters={…} />`, often in `<tools>` (no template's: Qwen2.5-Coder 1.5B's
    /// plans of several calls).
    FunctionTag,
    /// The syntax learned from the server's chat template (`learn`), when no parser of vouch's reads it:
    /// tried only when recovery is given a [`learn::Learned`].
    Learned,
    /// No call found.
    None,
}

impl Format {
    /// The formats a caller can force, in the order their names are listed to users.
    pub const PARSERS: [Format; 29] = [
        Format::Hermes,
        Format::Qwen3Coder,
        Format::SeedOss,
        Format::Glm,
        Format::MinimaxM2,
        Format::Step3,
        Format::Mistral,
        Format::Llama3Json,
        Format::Json,
        Format::Pythonic,
        Format::DeepseekR1,
        Format::DeepseekV31,
        Format::DeepseekDsml,
        Format::KimiK2,
        Format::Harmony,
        Format::FunctionaryV31,
        Format::FunctionaryV32,
        Format::Apertus,
        Format::KimiK3,
        Format::SolarOpen,
        Format::Granite,
        Format::Nemotron,
        Format::CommandR7b,
        Format::Phi4,
        Format::ToolCallsJson,
        Format::InternLm,
        Format::Gemma4,
        Format::FunctionGemma,
        Format::FunctionTag,
    ];

    /// The stable name, as printed by `vouch toolcalls parse` and accepted by `--format`.
    pub fn name(self) -> &'static str {
        match self {
            Format::Native => "native",
            Format::Hermes => "hermes",
            Format::Qwen3Coder => "qwen3-coder",
            Format::SeedOss => "seed-oss",
            Format::Glm => "glm",
            Format::MinimaxM2 => "minimax-m2",
            Format::Step3 => "step3",
            Format::Mistral => "mistral",
            Format::Llama3Json => "llama3-json",
            Format::Json => "json",
            Format::Pythonic => "pythonic",
            Format::DeepseekR1 => "deepseek-r1",
            Format::DeepseekV31 => "deepseek-v3.1",
            Format::DeepseekDsml => "deepseek-dsml",
            Format::KimiK2 => "kimi-k2",
            Format::Harmony => "harmony",
            Format::FunctionaryV31 => "functionary-v3.1",
            Format::FunctionaryV32 => "functionary-v3.2",
            Format::Apertus => "apertus",
            Format::KimiK3 => "kimi-k3",
            Format::SolarOpen => "solar-open",
            Format::Granite => "granite",
            Format::Nemotron => "nemotron",
            Format::CommandR7b => "command-r7b",
            Format::Phi4 => "phi4",
            Format::ToolCallsJson => "tool-calls-json",
            Format::InternLm => "internlm",
            Format::Gemma4 => "gemma4",
            Format::FunctionGemma => "functiongemma",
            Format::FunctionTag => "function-tag",
            Format::Learned => "learned",
            Format::None => "none",
        }
    }

    /// A parser by its name or a common alias (llama.cpp's and vLLM's parser names, model names);
    /// case, `_` and `-` do not matter. Only [`Format::PARSERS`] are found.
    pub fn from_name(name: &str) -> Option<Format> {
        let key: String = name
            .trim()
            .chars()
            .map(|c| {
                if c == '_' {
                    '-'
                } else {
                    c.to_ascii_lowercase()
                }
            })
            .collect();
        if let Some(f) = Format::PARSERS.iter().find(|f| f.name() == key) {
            return Some(*f);
        }
        let alias = match key.as_str() {
            "qwen3-xml" | "qwen3coder" | "step3p5" => Format::Qwen3Coder,
            "glm45" | "glm47" | "glm-4.5" | "glm-4.7" | "laguna" | "poolside" | "poolside-v1" => {
                Format::Glm
            }
            "minimax" | "minimax-m1" | "hunyuan-a13b" | "apriel" | "jamba" => Format::ToolCallsJson,
            "llama3" | "llama4-json" => Format::Llama3Json,
            "llama4-pythonic" | "lfm2" | "olmo3" => Format::Pythonic,
            "deepseek-v3" | "deepseek" => Format::DeepseekR1,
            "deepseek-v31" => Format::DeepseekV31,
            "deepseek-v32" | "deepseek-v4" | "dsml" => Format::DeepseekDsml,
            "kimi" => Format::KimiK2,
            "gpt-oss" | "openai" => Format::Harmony,
            "functionary" => Format::FunctionaryV31,
            "functionary-v32" | "recipient-based" => Format::FunctionaryV32,
            "xtml" | "kimi-k3-xtml" => Format::KimiK3,
            "solar" | "solar-open2" | "solar-open-100b" => Format::SolarOpen,
            "phi4-mini-json" | "firefunction" => Format::Phi4,
            "nemotron-deci" => Format::Nemotron,
            "cohere" | "command-r" => Format::CommandR7b,
            "gemma" => Format::Gemma4,
            "seed" => Format::SeedOss,
            "generic" | "xlam" => Format::Json,
            _ => return None,
        };
        Some(alias)
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for Format {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

// ---- What parsers hand to the shared last step (recover.rs) ----

/// A call as a parser found it: the name as written, arguments not yet typed.
#[derive(Clone, Debug)]
pub(crate) struct Found {
    pub name: String,
    pub args: Args,
    /// The bytes to cut from the text when the call is taken (markers and wrappers included).
    pub span: Range<usize>,
    pub unclosed: bool,
    /// Found by a speculative scan (a bare JSON object or Python list): dropped silently unless the name is
    /// an offered tool, because it may be an example in prose rather than a call.
    pub weak: bool,
    /// Stands on no marker (a bare or fenced JSON call, a bare Python list): taken only where a call
    /// stands, at the end of the text (see `recover.rs`).
    pub bare: bool,
}

/// Arguments as written.
#[derive(Clone, Debug)]
pub(crate) enum Args {
    /// One JSON value meant to be the arguments object (a string holding JSON is decoded).
    Json(Value),
    /// A call object without an arguments key: its other keys (taken only if all are parameters).
    Flat(Map<String, Value>),
    /// Key and value pairs from tag formats.
    Pairs(Vec<(String, Arg)>),
}

/// One argument value of a tag format.
#[derive(Clone, Debug)]
pub(crate) enum Arg {
    /// Raw text, typed with the schema.
    Raw(String),
    /// Declared a string by the format (DSML `string="true"`).
    Str(String),
    /// Declared JSON by the format (DSML `string="false"`).
    Json(String),
}

/// One parser's reading of a text.
#[derive(Debug)]
pub(crate) struct Parsed {
    pub format: Format,
    pub found: Vec<Found>,
    /// Further ranges to cut when a call is taken (Harmony's headers and analysis messages).
    pub remove: Vec<Range<usize>>,
    /// Ranges of reasoning the parser recognised (Harmony's analysis channel).
    pub reasoning: Vec<Range<usize>>,
    pub warnings: Vec<String>,
}

impl Parsed {
    pub(crate) fn new(format: Format) -> Self {
        Parsed {
            format,
            found: Vec::new(),
            remove: Vec::new(),
            reasoning: Vec::new(),
            warnings: Vec::new(),
        }
    }

    pub(crate) fn call(&mut self, name: String, args: Args, span: Range<usize>, unclosed: bool) {
        self.found.push(Found {
            name,
            args,
            span,
            unclosed,
            weak: false,
            bare: false,
        });
    }

    pub(crate) fn cut_off(&mut self, name: &str) {
        self.warnings.push(format!(
            "the call to {name} is cut off: its arguments run to the end of the reply"
        ));
    }
}

/// Runs one format's parser over a text.
pub(crate) fn parse_with(format: Format, text: &str, ctx: &mut scan::Ctx) -> Parsed {
    match format {
        Format::Hermes
        | Format::Granite
        | Format::Nemotron
        | Format::CommandR7b
        | Format::Phi4
        | Format::ToolCallsJson
        | Format::InternLm => tagged_json::parse(format, text, ctx),
        Format::Qwen3Coder | Format::SeedOss => qwen_xml::parse(text, ctx),
        Format::Glm => glm::parse(text, ctx),
        Format::MinimaxM2 | Format::Step3 | Format::DeepseekDsml => {
            invoke::parse(format, text, ctx)
        }
        Format::Mistral => mistral::parse(text, ctx),
        Format::Llama3Json | Format::Json => bare_json::parse(text, ctx),
        Format::Pythonic => pythonic::parse(text, ctx),
        Format::DeepseekR1 | Format::DeepseekV31 => deepseek::parse(text, ctx),
        Format::KimiK2 => kimi::parse(text, ctx),
        Format::Harmony => harmony::parse(text, ctx),
        Format::FunctionaryV31 => functionary::parse(text, ctx),
        Format::FunctionaryV32 => functionary_v32::parse(text, ctx),
        Format::Apertus => apertus::parse(text, ctx),
        Format::KimiK3 => kimi_k3::parse(text, ctx),
        Format::SolarOpen => solar::parse(text, ctx),
        Format::Gemma4 | Format::FunctionGemma => gemma::parse(format, text, ctx),
        Format::FunctionTag => function_tag::parse(text, ctx),
        Format::Learned => learned::parse(text, ctx),
        Format::Native | Format::None => Parsed::new(Format::None),
    }
}
