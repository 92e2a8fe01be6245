//! Kimi-K2: `<|tool_call_begin|>functions.NAME:IDX<|tool_call_argument_begin|>{…}<|tool_call_end|>` inside a
//! `<|tool_calls_section_begin|>` … `<|tool_calls_section_end|>` section.
//!
//! The call id carries the name. The section tokens also occur in the singular (`tool_call_section_*`), and
//! K2-Thinking emits calls inside its reasoning; the recovery order takes those when the reply has no
//! answer text.

use super::literal::{self, Syntax};
use super::scan::{self, Ctx, Finder};
use super::{Args, Format, Parsed};

const BEGIN: &str = "<|tool_call_begin|>";
const ARGUMENT: &str = "<|tool_call_argument_begin|>";
const END: &str = "<|tool_call_end|>";
const SECTION_BEGINS: [&str; 2] = [
    "<|tool_calls_section_begin|>",
    "<|tool_call_section_begin|>",
];
const SECTION_ENDS: [&str; 2] = ["<|tool_calls_section_end|>", "<|tool_call_section_end|>"];

pub(crate) fn parse(text: &str, ctx: &mut Ctx) -> Parsed {
    let mut out = Parsed::new(Format::KimiK2);
    let mut begins = Finder::new(BEGIN);
    let mut arguments = Finder::new(ARGUMENT);
    let mut ends = Finder::new(END);
    let mut section_ends = SECTION_ENDS.map(Finder::new);
    let mut pos = 0;
    while let Some(start) = begins.next(text, pos, ctx) {
        let id_start = start + BEGIN.len();
        let next = begins.next(text, id_start, ctx);
        let section_end = scan::first_of(&mut section_ends, text, id_start, ctx).map(|(_, at)| at);
        let end = ends.next(text, id_start, ctx);
        let limit = [next, section_end, end]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(text.len());
        pos = next.unwrap_or(text.len());
        let Some(arg) = arguments.next(text, id_start, ctx).filter(|a| *a < limit) else {
            continue;
        };
        let id = text[id_start..arg].trim();
        let name = id.strip_prefix("functions.").unwrap_or(id);
        let name = match name.rsplit_once(':') {
            Some((base, index)) if index.bytes().all(|b| b.is_ascii_digit()) => base,
            _ => name,
        };
        if name.is_empty() {
            continue;
        }
        let closed = end.filter(|e| *e == limit);
        let region = &text[..limit];
        match literal::read(region, arg + ARGUMENT.len(), Syntax::JSON, ctx) {
            Ok(lit) => {
                let span_end = closed.map_or(lit.end, |e| e + END.len());
                let span = scan::widen(text, start..span_end, &SECTION_BEGINS, &SECTION_ENDS, ctx);
                out.call(
                    name.to_string(),
                    Args::Json(lit.value),
                    span,
                    closed.is_none(),
                );
            }
            Err(f) if f.eof && closed.is_none() => out.cut_off(name),
            Err(_) => out
                .warnings
                .push(format!("the arguments of the call to {name} are not JSON")),
        }
    }
    out
}
