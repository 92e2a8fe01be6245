//! JSON calls between markers: Hermes `<tool_call>`, Granite `<|tool_call|>`, Nemotron `<TOOLCALL>`,
//! Command R7B `<|START_ACTION|>`, Phi-4 `functools[`, `<tool_calls>` (MiniMax-M1, Hunyuan-A13B, Apriel,
//! Jamba) and InternLM2 `<|action_start|><|plugin|>`.
//!
//! Each block is read inside its region: from its open marker to its close marker, or, when the close is
//! missing, to the next open marker or the end. So ten thousand unclosed `<tool_call>` cost one pass, and a
//! block whose JSON is complete but whose close marker is missing is still a call (flagged unclosed). A
//! block may hold one object, a list (SmolLM2's template writes `<tool_call>[{…}]</tool_call>`), or several
//! objects separated by newlines, commas or `;` (seen from Qwen3.5 GGUFs, llama.cpp #20260).

use super::jsoncall::{self, JsonCall};
use super::literal::{self, Repairs, Syntax};
use super::scan::{self, Ctx, Finder};
use super::{Format, Parsed};

struct Spec {
    format: Format,
    open: &'static str,
    close: Option<&'static str>,
    /// The block must be a list (`functools` is also a Python module name in prose).
    list_only: bool,
}

const SPECS: [Spec; 8] = [
    Spec {
        format: Format::Hermes,
        open: "<tool_call>",
        close: Some("</tool_call>"),
        list_only: false,
    },
    Spec {
        format: Format::Hermes,
        open: "<longcat_tool_call>",
        close: Some("</longcat_tool_call>"),
        list_only: false,
    },
    Spec {
        format: Format::Granite,
        open: "<|tool_call|>",
        close: None,
        list_only: false,
    },
    Spec {
        format: Format::Nemotron,
        open: "<TOOLCALL>",
        close: Some("</TOOLCALL>"),
        list_only: false,
    },
    Spec {
        format: Format::CommandR7b,
        open: "<|START_ACTION|>",
        close: Some("<|END_ACTION|>"),
        list_only: false,
    },
    Spec {
        format: Format::Phi4,
        open: "functools",
        close: None,
        list_only: true,
    },
    Spec {
        format: Format::ToolCallsJson,
        open: "<tool_calls>",
        close: Some("</tool_calls>"),
        list_only: false,
    },
    Spec {
        format: Format::InternLm,
        open: "<|action_start|><|plugin|>",
        close: Some("<|action_end|>"),
        list_only: false,
    },
];

pub(crate) fn parse(format: Format, text: &str, ctx: &mut Ctx) -> Parsed {
    let mut out = Parsed::new(format);
    for spec in SPECS.iter().filter(|s| s.format == format) {
        parse_spec(spec, text, ctx, &mut out);
    }
    out
}

fn parse_spec(spec: &Spec, text: &str, ctx: &mut Ctx, out: &mut Parsed) {
    let mut opens = Finder::new(spec.open);
    let mut closes = spec.close.map(Finder::new);
    let mut pos = 0;
    while let Some(open) = opens.next(text, pos, ctx) {
        let body = open + spec.open.len();
        let next_open = opens.next(text, body, ctx);
        let mut close = closes
            .as_mut()
            .and_then(|c| c.next(text, body, ctx))
            .filter(|c| next_open.is_none_or(|n| *c < n));
        let region_end = close.or(next_open).unwrap_or(text.len());
        pos = region_end;
        let start = scan::skip_ws(text, body, ctx);
        if spec.list_only && !scan::at(text, start, "[") {
            continue;
        }
        let mut block = read_calls(text, start, region_end, ctx);
        if let (true, Some(marker)) = (block.cut_off && region_end < text.len(), spec.close) {
            // A string in the JSON may hold the close marker (a file about tool calls): read on.
            if ctx.may_speculate() {
                let wider = read_calls(text, start, text.len(), ctx);
                let after = scan::skip_ws(text, wider.end, ctx);
                if !wider.calls.is_empty() && scan::at(text, after, marker) {
                    block = wider;
                    close = Some(after);
                    pos = after;
                }
            }
        }
        if !block.repairs.is_empty() {
            out.warnings.push(format!(
                "repaired the JSON of a {} block: {}",
                spec.format,
                block.repairs.describe()
            ));
        }
        if block.calls.is_empty() {
            if block.cut_off {
                out.warnings.push(format!(
                    "a {} block is cut off: its JSON runs to the end of the reply",
                    spec.format
                ));
            }
            continue;
        }
        let span_end = match (close, spec.close) {
            (Some(c), Some(marker)) => c + marker.len(),
            _ => block.end,
        };
        let unclosed = spec.close.is_some() && close.is_none();
        for call in block.calls {
            out.call(call.name, call.args, open..span_end, unclosed);
        }
    }
}

/// The JSON calls in `text[start..end]`.
pub(crate) struct Block {
    pub calls: Vec<JsonCall>,
    /// The byte after the last value read.
    pub end: usize,
    /// The last value ran into the end of the region.
    pub cut_off: bool,
    pub repairs: Repairs,
    /// At least one call object used the key `parameters`.
    pub parameters_key: bool,
}

/// Reads JSON values (objects or lists of calls) separated by whitespace, `,` or `;`, until something
/// that is not JSON.
pub(crate) fn read_calls(text: &str, start: usize, end: usize, ctx: &mut Ctx) -> Block {
    let region = text.get(..end).unwrap_or(text);
    let b = region.as_bytes();
    let mut block = Block {
        calls: Vec::new(),
        end: start,
        cut_off: false,
        repairs: Repairs::default(),
        parameters_key: false,
    };
    let mut i = start;
    loop {
        while i < b.len() && (b[i].is_ascii_whitespace() || b[i] == b',' || b[i] == b';') {
            i += 1;
        }
        ctx.charge(i.saturating_sub(block.end) + 1);
        if !matches!(b.get(i), Some(b'{' | b'[')) {
            break;
        }
        match literal::read(region, i, Syntax::JSON, ctx) {
            Ok(lit) => {
                let calls = jsoncall::calls(&lit.value);
                if calls.is_empty() {
                    break;
                }
                block.parameters_key |= calls.iter().any(|c| c.parameters_key);
                block.calls.extend(calls);
                block.repairs = block.repairs.union(lit.repairs);
                block.end = lit.end;
                i = lit.end;
            }
            Err(f) => {
                block.cut_off = f.eof;
                break;
            }
        }
    }
    block
}
