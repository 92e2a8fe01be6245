//! The detector: which formats' markers occur in a text, in order of first appearance.
//!
//! One pass over the bytes, stopping only at `<`, `[`, `{` and `=`, where a short table of markers is
//! checked (llama.cpp's old template routing did the same with substrings of the chat template). Markers
//! that several families share are told apart by what follows: after `<tool_call>` a `{` means Hermes,
//! `<function=` Qwen3-Coder, a bare name GLM; after `<function=NAME>` a `{` means Functionary. Formats found
//! only by a speculative shape (a bare JSON call, a bare Python list of calls) come after every format with
//! a marker. The parsers decide; the detector only orders them.

use super::deepseek;
use super::scan::{self, Ctx};
use super::Format;

/// What a marker means.
#[derive(Clone, Copy)]
enum Mark {
    Is(Format),
    /// `<tool_call>`: Hermes, Qwen3-Coder or GLM, by what follows.
    ToolCall,
    /// `<tool_calls>`: HY-V3 (GLM syntax) or a JSON list.
    ToolCalls,
    /// `<function=`: Qwen3-Coder without its wrapper, or Functionary.
    FunctionEq,
    /// `<|python_tag|>`: Llama 3 JSON, or a built-in tool call in Python syntax.
    PythonTag,
    /// `<|tool_call_begin|>`: Kimi-K2, or DeepSeek spelled with ASCII bars.
    KimiOrDeepseek,
}

const ANGLE: [(&str, Mark); 30] = [
    ("<tool_call>", Mark::ToolCall),
    ("<tool_calls>", Mark::ToolCalls),
    ("<function=", Mark::FunctionEq),
    ("<function_calls>", Mark::Is(Format::Pythonic)),
    ("<seed:tool_call>", Mark::Is(Format::SeedOss)),
    ("<minimax:tool_call>", Mark::Is(Format::MinimaxM2)),
    ("<invoke name=", Mark::Is(Format::MinimaxM2)),
    ("<function name=", Mark::Is(Format::FunctionTag)),
    ("<steptml:invoke", Mark::Is(Format::Step3)),
    ("<longcat_tool_call>", Mark::Is(Format::Hermes)),
    ("<TOOLCALL>", Mark::Is(Format::Nemotron)),
    ("<start_function_call>", Mark::Is(Format::FunctionGemma)),
    ("<|python_tag|>", Mark::PythonTag),
    ("<|python_start|>", Mark::Is(Format::Pythonic)),
    ("<|tool_call_start|>", Mark::Is(Format::Pythonic)),
    ("<|tool_calls_section_begin|>", Mark::Is(Format::KimiK2)),
    ("<|tool_call_section_begin|>", Mark::Is(Format::KimiK2)),
    ("<|tool_call_begin|>", Mark::KimiOrDeepseek),
    ("<|tool_call|>", Mark::Is(Format::Granite)),
    ("<|tool_call>", Mark::Is(Format::Gemma4)),
    ("<|START_ACTION|>", Mark::Is(Format::CommandR7b)),
    ("<|action_start|>", Mark::Is(Format::InternLm)),
    ("<|channel|>", Mark::Is(Format::Harmony)),
    ("<|start|>", Mark::Is(Format::Harmony)),
    ("<|constrain|>", Mark::Is(Format::Harmony)),
    ("<｜DSML｜", Mark::Is(Format::DeepseekDsml)),
    ("<|DSML|", Mark::Is(Format::DeepseekDsml)),
    ("<|tools_prefix|>", Mark::Is(Format::Apertus)),
    ("<|open|>", Mark::Is(Format::KimiK3)),
    ("<|tool_call:begin|>", Mark::Is(Format::SolarOpen)),
];

/// How far ahead a marker's neighbourhood is looked at.
const PEEK: usize = 256;

/// Where each format was first seen.
struct Seen {
    strong: Vec<(usize, Format)>,
    weak: Vec<(usize, Format)>,
}

impl Seen {
    fn strong(&mut self, at: usize, f: Format) {
        if !self.strong.iter().any(|(_, g)| *g == f) {
            self.strong.push((at, f));
        }
    }

    fn weak(&mut self, at: usize, f: Format) {
        if !self.weak.iter().any(|(_, g)| *g == f) {
            self.weak.push((at, f));
        }
    }
}

/// The formats worth trying on `text`, best first.
pub(crate) fn candidates(text: &str, ctx: &mut Ctx) -> Vec<Format> {
    let b = text.as_bytes();
    let mut seen = Seen {
        strong: Vec::new(),
        weak: Vec::new(),
    };
    // The template's own syntax first: at a tie in position it comes before the families detected there.
    if let Some(at) = super::learned::first_open(text, ctx) {
        seen.strong(at, Format::Learned);
    }
    // Functionary v3.2's first recipient comes without its `>>>` (the prompt ends with it).
    if super::functionary_v32::starts_with_call(text, ctx) {
        seen.strong(0, Format::FunctionaryV32);
    }
    let mut i = 0;
    while let Some(k) = b.get(i..).and_then(|r| {
        r.iter()
            .position(|&c| matches!(c, b'<' | b'[' | b'{' | b'=' | b'>'))
    }) {
        let p = i + k;
        match b[p] {
            b'<' => angle(text, p, &mut seen, ctx),
            b'[' => square(text, p, &mut seen, ctx),
            b'{' => {
                if json_call_start(text, p) {
                    seen.weak(p, Format::Json);
                }
            }
            b'>' => {
                if scan::at(text, p, ">>>")
                    && text
                        .as_bytes()
                        .get(p + 3)
                        .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_')
                {
                    seen.strong(p, Format::FunctionaryV32);
                }
            }
            _ => {
                if scan::ends_at(text, p, "to") && scan::at(text, p + 1, "functions.") {
                    seen.strong(p, Format::Harmony);
                }
            }
        }
        i = p + 1;
    }
    ctx.charge(b.len() + 1);
    seen.strong.sort_by_key(|(at, _)| *at);
    seen.weak.sort_by_key(|(at, _)| *at);
    let mut out: Vec<Format> = seen.strong.into_iter().map(|(_, f)| f).collect();
    for (_, f) in seen.weak {
        if !out.contains(&f) {
            out.push(f);
        }
    }
    out
}

fn angle(text: &str, p: usize, seen: &mut Seen, ctx: &mut Ctx) {
    for (marker, mark) in ANGLE {
        if !scan::at(text, p, marker) {
            continue;
        }
        let after = p + marker.len();
        match mark {
            Mark::Is(f) => seen.strong(p, f),
            Mark::ToolCall => match first_byte_after_ws(text, after) {
                Some(b'{' | b'[') => seen.strong(p, Format::Hermes),
                Some(b'<') if scan::at(text, skip_ws_bounded(text, after), "<function=") => {
                    seen.strong(p, Format::Qwen3Coder)
                }
                Some(c) if scan::is_name_byte(c) => seen.strong(p, Format::Glm),
                _ => {}
            },
            Mark::ToolCalls => match first_byte_after_ws(text, after) {
                Some(b'{' | b'[') => seen.strong(p, Format::ToolCallsJson),
                Some(b'<') => seen.strong(p, Format::Glm),
                _ => {}
            },
            Mark::FunctionEq => {
                let json = scan::find_byte(text, after, PEEK, ctx, |c| c == b'>' || c == b'\n')
                    .filter(|&gt| text.as_bytes()[gt] == b'>')
                    .is_some_and(|gt| first_byte_after_ws(text, gt + 1) == Some(b'{'));
                let f = if json {
                    Format::FunctionaryV31
                } else {
                    Format::Qwen3Coder
                };
                seen.strong(p, f);
            }
            Mark::PythonTag => match first_byte_after_ws(text, after) {
                Some(c) if c.is_ascii_alphabetic() => seen.strong(p, Format::Pythonic),
                _ => seen.strong(p, Format::Llama3Json),
            },
            Mark::KimiOrDeepseek => {
                let window = text.get(after..).map_or("", |r| prefix(r, PEEK));
                ctx.charge(window.len());
                if window.contains("<|tool_call_argument_begin|>") {
                    seen.strong(p, Format::KimiK2);
                } else {
                    seen.strong(p, Format::DeepseekV31);
                }
            }
        }
    }
    if deepseek::token_at(text, p).is_some() {
        seen.strong(p, Format::DeepseekV31);
    }
}

fn square(text: &str, p: usize, seen: &mut Seen, ctx: &mut Ctx) {
    if scan::at(text, p, "[TOOL_CALLS]") {
        seen.strong(p, Format::Mistral);
        return;
    }
    if scan::ends_at(text, p, "functools") {
        seen.strong(p, Format::Phi4);
        return;
    }
    let q = skip_ws_bounded(text, p + 1);
    match text.as_bytes().get(q) {
        Some(b'{') if json_call_start(text, q) => seen.weak(p, Format::Json),
        Some(c) if c.is_ascii_alphabetic() || *c == b'_' => {
            if let Some(end) = scan::name_end(text, q, 128, ctx) {
                if text.as_bytes().get(end) == Some(&b'(') {
                    seen.weak(p, Format::Pythonic);
                }
            }
        }
        _ => {}
    }
}

/// Whether a `{` at `p` looks like the start of a JSON call: its first key is one a call object has
/// (`arguments` first too, as a serializer that sorts keys writes it; not `parameters`, which opens a
/// tool's definition as often as a call).
pub(crate) fn json_call_start(text: &str, p: usize) -> bool {
    let q = skip_ws_bounded(text, p + 1);
    let b = text.as_bytes();
    let Some(&quote) = b.get(q).filter(|c| **c == b'"' || **c == b'\'') else {
        return false;
    };
    [
        "name",
        "tool_name",
        "tool_call",
        "tool_calls",
        "function",
        "type",
        "id",
        "arguments",
    ]
    .iter()
    .any(|key| scan::at(text, q + 1, key) && b.get(q + 1 + key.len()) == Some(&quote))
}

fn skip_ws_bounded(text: &str, i: usize) -> usize {
    let b = text.as_bytes();
    let mut j = i;
    while j < b.len() && j - i < 64 && b[j].is_ascii_whitespace() {
        j += 1;
    }
    j
}

fn first_byte_after_ws(text: &str, i: usize) -> Option<u8> {
    text.as_bytes().get(skip_ws_bounded(text, i)).copied()
}

fn prefix(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}
