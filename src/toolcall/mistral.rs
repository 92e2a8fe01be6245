//! Mistral, both generations: `[TOOL_CALLS][{"name":…, "arguments":…, "id":…}]` (Mistral 7B v0.3, Nemo,
//! Magistral) and `[TOOL_CALLS]NAME[ARGS]{…}` once per call, with an optional `[CALL_ID]id` (Mistral Small
//! 3.1/3.2, Devstral, Ministral 3, Mistral Large 3).
//!
//! `[TOOL_CALLS]` has no closer, so a call runs to the next `[TOOL_CALLS]` or the end. When a server strips
//! the special token, only the bare list is left; that is the bare-JSON parser's business.

use serde_json::Value;

use super::literal::{self, Syntax};
use super::scan::{self, Ctx, Finder};
use super::tagged_json;
use super::{Args, Format, Parsed};

const MARK: &str = "[TOOL_CALLS]";
const ARGS: &str = "[ARGS]";
const CALL_ID: &str = "[CALL_ID]";

pub(crate) fn parse(text: &str, ctx: &mut Ctx) -> Parsed {
    let mut out = Parsed::new(Format::Mistral);
    let mut marks = Finder::new(MARK);
    let mut pos = 0;
    while let Some(start) = marks.next(text, pos, ctx) {
        let after = start + MARK.len();
        let region_end = marks.next(text, after, ctx).unwrap_or(text.len());
        pos = region_end;
        let i = scan::skip_ws(text, after, ctx);
        if matches!(text.as_bytes().get(i), Some(b'[' | b'{')) {
            let block = tagged_json::read_calls(text, i, region_end, ctx);
            if block.calls.is_empty() && block.cut_off {
                out.warnings.push(
                    "a [TOOL_CALLS] list is cut off: its JSON runs to the end of the reply"
                        .to_string(),
                );
            }
            let span = scan::widen(text, start..block.end, &[], &["</s>"], ctx);
            for call in block.calls {
                out.call(call.name, call.args, span.clone(), false);
            }
            continue;
        }
        let Some(name_end) = scan::name_end(text, i, 128, ctx) else {
            continue;
        };
        let name = &text[i..name_end];
        let mut j = name_end;
        loop {
            if scan::at(text, j, CALL_ID) {
                j = scan::name_end(text, j + CALL_ID.len(), 128, ctx).unwrap_or(j + CALL_ID.len());
            } else if scan::at(text, j, ARGS) {
                j += ARGS.len();
            } else {
                break;
            }
        }
        let region = &text[..region_end];
        match literal::read(region, j, Syntax::JSON, ctx) {
            Ok(lit)
                if lit.value.is_object() || lit.value.is_string() || lit.value == Value::Null =>
            {
                let span = scan::widen(text, start..lit.end, &[], &["</s>"], ctx);
                out.call(name.to_string(), Args::Json(lit.value), span, false);
            }
            Ok(_) => out.warnings.push(format!(
                "the arguments of the call to {name} are not a JSON object"
            )),
            Err(f) if f.eof => out.cut_off(name),
            Err(_) => out
                .warnings
                .push(format!("the arguments of the call to {name} are not JSON")),
        }
    }
    out
}
