//! Gemma 4 and FunctionGemma: `call:NAME{key:value,…}` between `<|tool_call>` and `<tool_call|>` (Gemma 4)
//! or `<start_function_call>` and `<end_function_call>` (FunctionGemma).
//!
//! Not JSON: keys are bare words and strings are delimited by a token, `<|"|>` or `<escape>`, with no
//! escapes inside, so a string value is exactly the text between its delimiters. Numbers, booleans, lists
//! and nested objects are written as in JSON. Gemma 4's reasoning (`<|channel>thought…<channel|>`) is
//! split off before parsing.

use super::literal::{self, Syntax};
use super::scan::{self, Ctx, Finder};
use super::{Args, Format, Parsed};

struct Dialect {
    open: &'static str,
    close: &'static str,
    delim: &'static str,
}

const GEMMA4: Dialect = Dialect {
    open: "<|tool_call>",
    close: "<tool_call|>",
    delim: "<|\"|>",
};

const FUNCTION_GEMMA: Dialect = Dialect {
    open: "<start_function_call>",
    close: "<end_function_call>",
    delim: "<escape>",
};

pub(crate) fn parse(format: Format, text: &str, ctx: &mut Ctx) -> Parsed {
    let d = if format == Format::FunctionGemma {
        &FUNCTION_GEMMA
    } else {
        &GEMMA4
    };
    let syntax = Syntax {
        python: false,
        bare_keys: true,
        delim: Some(d.delim),
    };
    let mut out = Parsed::new(format);
    let mut opens = Finder::new(d.open);
    let mut closes = Finder::new(d.close);
    let mut pos = 0;
    while let Some(start) = opens.next(text, pos, ctx) {
        let body = start + d.open.len();
        let next_open = opens.next(text, body, ctx);
        let close = closes
            .next(text, body, ctx)
            .filter(|c| next_open.is_none_or(|n| *c < n));
        let region_end = close.or(next_open).unwrap_or(text.len());
        pos = region_end;
        let region = &text[..region_end];
        let mut i = body;
        let mut calls = Vec::new();
        loop {
            i = scan::skip_ws(region, i, ctx);
            if !scan::at(region, i, "call:") {
                break;
            }
            let name_start = i + "call:".len();
            let Some(name_end) = scan::name_end(region, name_start, 128, ctx) else {
                break;
            };
            let name = &region[name_start..name_end];
            if region.as_bytes().get(name_end) != Some(&b'{') {
                out.warnings
                    .push(format!("the call to {name} has no {{ after its name"));
                break;
            }
            match literal::read(region, name_end, syntax, ctx) {
                Ok(lit) => {
                    calls.push((name.to_string(), lit.value));
                    i = lit.end;
                }
                Err(f) if f.eof && close.is_none() => {
                    out.cut_off(name);
                    break;
                }
                Err(_) => {
                    out.warnings.push(format!(
                        "the arguments of the call to {name} cannot be read"
                    ));
                    break;
                }
            }
        }
        let end = close.map_or(i, |c| c + d.close.len());
        for (name, args) in calls {
            out.call(name, Args::Json(args), start..end, close.is_none());
        }
    }
    out
}
