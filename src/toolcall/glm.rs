//! The `arg_key`/`arg_value` family: `<tool_call>NAME`, then `<arg_key>K</arg_key><arg_value>V</arg_value>`
//! per argument, then `</tool_call>`.
//!
//! GLM-4.5/4.6 put newlines between the tags; GLM-4.7, GLM-5 and Poolside's Laguna do not, and write a
//! zero-argument call as `<tool_call>NAME</tool_call>`; Ling-3 puts a newline only between key and value
//! (llama.cpp learned its value suffix from the last argument and swallowed the rest, #26608); Hunyuan V3
//! wraps the calls in `<tool_calls>` and writes `<tool_sep>` after the name. All of them are one grammar
//! here: whitespace between tags is ignored, and values are kept exactly as written (Poolside keeps string
//! whitespace exactly). A value without `</arg_value>` ends at the next tag; one that runs into the end of
//! the reply means the call was cut off.

use super::scan::{self, Ctx, Finder};
use super::{Arg, Args, Format, Parsed};

const OPEN: &str = "<tool_call>";
const CLOSE: &str = "</tool_call>";
const KEY: &str = "<arg_key>";
const END_KEY: &str = "</arg_key>";
const VALUE: &str = "<arg_value>";
const END_VALUE: &str = "</arg_value>";
const SEP: &str = "<tool_sep>";

pub(crate) fn parse(text: &str, ctx: &mut Ctx) -> Parsed {
    let mut out = Parsed::new(Format::Glm);
    let mut opens = Finder::new(OPEN);
    let mut key_ends = Finder::new(END_KEY);
    // Where a value ends: its closer (index 0), or the next key, call or call end.
    let mut value_ends = [END_VALUE, KEY, CLOSE, OPEN].map(Finder::new);
    let mut pos = 0;
    while let Some(start) = opens.next(text, pos, ctx) {
        pos = start + OPEN.len();
        // The name runs to the first tag or line break.
        let Some(name_end) = scan::find_byte(text, pos, 256, ctx, |c| c == b'<' || c == b'\n')
            .or_else(|| (text.len() - pos <= 256).then_some(text.len()))
        else {
            continue;
        };
        let name = text[pos..name_end].trim();
        if name.is_empty() || !name.bytes().all(scan::is_name_byte) {
            continue; // Hermes JSON or Qwen3-Coder XML, not this family.
        }
        let name = name.to_string();
        let mut i = scan::skip_ws(text, name_end, ctx);
        if scan::at(text, i, SEP) {
            i += SEP.len();
        }
        let mut args = Vec::new();
        let mut cut_off = false;
        let mut closed = false;
        loop {
            i = scan::skip_ws(text, i, ctx);
            if scan::at(text, i, KEY) {
                let key_start = i + KEY.len();
                let Some(key_end) = key_ends.next(text, key_start, ctx) else {
                    cut_off = true;
                    break;
                };
                if key_end - key_start > 256 {
                    break;
                }
                let key = text[key_start..key_end].trim();
                if key.is_empty() || key.contains('<') {
                    break;
                }
                let key = key.to_string();
                i = scan::skip_ws(text, key_end + END_KEY.len(), ctx);
                if !scan::at(text, i, VALUE) {
                    out.warnings.push(format!(
                        "the argument {key} of the call to {name} has no value"
                    ));
                    break;
                }
                let value_start = i + VALUE.len();
                let Some((which, value_end)) =
                    scan::first_of(&mut value_ends, text, value_start, ctx)
                else {
                    cut_off = true;
                    break;
                };
                args.push((key, Arg::Raw(text[value_start..value_end].to_string())));
                i = if which == 0 {
                    value_end + END_VALUE.len()
                } else {
                    out.warnings.push(format!(
                        "an argument of the call to {name} has no </arg_value>; it ends where the next tag starts"
                    ));
                    value_end
                };
            } else if scan::at(text, i, CLOSE) {
                closed = true;
                i += CLOSE.len();
                break;
            } else {
                break;
            }
        }
        pos = pos.max(i);
        if cut_off {
            out.cut_off(&name);
            continue;
        }
        if !closed && args.is_empty() && i >= text.len() {
            out.cut_off(&name); // `<tool_call>NAME` and nothing else: the arguments never came.
            continue;
        }
        let span = scan::widen(text, start..i, &["<tool_calls>"], &["</tool_calls>"], ctx);
        out.call(name, Args::Pairs(args), span, !closed);
    }
    out
}
