//! Qwen3-Coder XML and Seed-OSS: `<function=NAME>`, one `<parameter=K>` … `</parameter>` per argument,
//! `</function>`, inside `<tool_call>` (Qwen3-Coder, Qwen3.5/3.6, Nemotron 3 Nano, Step-3.5-Flash) or
//! `<seed:tool_call>` (Seed-OSS).
//!
//! Models skip the wrapper (llama.cpp PR #16932) and drop closers (continue #13057), so the wrapper is
//! optional and a value also ends where the next parameter, function or wrapper starts; only a value that
//! runs into the end of the reply means the call was cut off. Values are raw text but for the one newline
//! the format puts on each side; the schema types the rest.

use super::scan::{self, Ctx, Finder};
use super::{Arg, Args, Format, Parsed};

const FUNCTION: &str = "<function=";
const PARAMETER: &str = "<parameter=";
const END_PARAMETER: &str = "</parameter>";
const END_FUNCTION: &str = "</function>";
const OPENS: [&str; 2] = ["<tool_call>", "<seed:tool_call>"];
const CLOSES: [&str; 2] = ["</tool_call>", "</seed:tool_call>"];

pub(crate) fn parse(text: &str, ctx: &mut Ctx) -> Parsed {
    let mut out = Parsed::new(Format::Qwen3Coder);
    let mut functions = Finder::new(FUNCTION);
    // Where a value ends: its own closer (index 0), or the start of whatever comes next.
    let mut ends = [
        END_PARAMETER,
        PARAMETER,
        END_FUNCTION,
        FUNCTION,
        OPENS[0],
        CLOSES[0],
        OPENS[1],
        CLOSES[1],
    ]
    .map(Finder::new);
    let mut seed = false;
    let mut pos = 0;
    while let Some(start) = functions.next(text, pos, ctx) {
        pos = start + FUNCTION.len();
        let Some((name, after_name)) = tag_word(text, pos, ctx) else {
            continue;
        };
        if scan::at(text, scan::skip_ws(text, after_name, ctx), "{") {
            continue; // Functionary v3.1: JSON arguments.
        }
        let mut i = after_name;
        let mut args = Vec::new();
        let mut cut_off = false;
        let mut closed = false;
        loop {
            i = scan::skip_ws(text, i, ctx);
            if scan::at(text, i, PARAMETER) {
                let Some((key, value_start)) = tag_word(text, i + PARAMETER.len(), ctx) else {
                    break;
                };
                let Some((which, value_end)) = scan::first_of(&mut ends, text, value_start, ctx)
                else {
                    cut_off = true;
                    break;
                };
                let value = scan::strip_newlines(&text[value_start..value_end]);
                args.push((key, Arg::Raw(value.to_string())));
                i = if which == 0 {
                    value_end + END_PARAMETER.len()
                } else {
                    out.warnings.push(format!(
                        "a parameter of the call to {name} has no </parameter>; it ends where the next tag starts"
                    ));
                    value_end
                };
            } else if scan::at(text, i, END_PARAMETER) {
                i += END_PARAMETER.len(); // a stray closer
            } else if scan::at(text, i, END_FUNCTION) {
                closed = true;
                i += END_FUNCTION.len();
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
        let span = scan::widen(text, start..i, &OPENS, &CLOSES, ctx);
        seed |= text[span.clone()].starts_with(OPENS[1]);
        out.call(name, Args::Pairs(args), span, !closed);
    }
    if seed {
        out.format = Format::SeedOss;
    }
    out
}

/// The word of a `<tag=WORD>` (from `i`, just after the `=`) and the byte after the `>`.
fn tag_word(text: &str, i: usize, ctx: &mut Ctx) -> Option<(String, usize)> {
    let gt = scan::find_byte(text, i, 256, ctx, |c| c == b'>' || c == b'<' || c == b'\n')?;
    if text.as_bytes()[gt] != b'>' {
        return None;
    }
    let word = text[i..gt]
        .trim()
        .trim_matches(|c| c == '"' || c == '\'')
        .trim();
    (!word.is_empty()).then(|| (word.to_string(), gt + 1))
}
