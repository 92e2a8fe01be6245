//! Solar Open: `<|tool_calls|>` then, per call, `<|tool_call:begin|>ID<|tool_call:name|>NAME<|tool_call:args|>
//! {…}<|tool_call:end|>`, the block closed by `<|calls|>`. The id is whatever the model wrote (the template
//! renders the caller's id there), so it is skipped, not matched. Reasoning (`<|think|>…<|end|>`) is split
//! off before, with the other reasoning blocks.

use super::literal::{self, Syntax};
use super::scan::{self, Ctx, Finder};
use super::{Args, Format, Parsed};

const BEGIN: &str = "<|tool_call:begin|>";
const NAME: &str = "<|tool_call:name|>";
const ARGS: &str = "<|tool_call:args|>";
const END: &str = "<|tool_call:end|>";
/// What opens and closes the block of calls, taken into the first and last call's span.
const BLOCK_OPENS: [&str; 2] = ["<|begin|>assistant<|tool_calls|>", "<|tool_calls|>"];
const BLOCK_CLOSE: &str = "<|calls|>";

/// `start` moved back over a block opening right before it.
fn with_opening(text: &str, start: usize) -> usize {
    let before = text[..start].trim_end();
    BLOCK_OPENS
        .iter()
        .find(|o| before.ends_with(*o))
        .map_or(start, |o| before.len() - o.len())
}

/// `stop` moved on over a block close right after it.
fn with_close(text: &str, stop: usize) -> usize {
    let after = &text[stop..];
    let ws = after.len() - after.trim_start().len();
    if after[ws..].starts_with(BLOCK_CLOSE) {
        stop + ws + BLOCK_CLOSE.len()
    } else {
        stop
    }
}

pub(crate) fn parse(text: &str, ctx: &mut Ctx) -> Parsed {
    let mut out = Parsed::new(Format::SolarOpen);
    let mut begins = Finder::new(BEGIN);
    let mut names = Finder::new(NAME);
    let mut argss = Finder::new(ARGS);
    let mut ends = Finder::new(END);
    let mut pos = 0;
    while let Some(start) = begins.next(text, pos, ctx) {
        let head = start + BEGIN.len();
        pos = head;
        let next = begins.next(text, head, ctx);
        let region_end = next.unwrap_or(text.len());
        let within = |at: Option<usize>| at.filter(|a| *a < region_end);
        let Some(name_at) = within(names.next(text, head, ctx)) else {
            continue;
        };
        let name_from = name_at + NAME.len();
        let Some(args_at) = within(argss.next(text, name_from, ctx)) else {
            continue;
        };
        let name = text[name_from..args_at].trim();
        if name.is_empty() {
            continue;
        }
        let body = args_at + ARGS.len();
        let end = within(ends.next(text, body, ctx));
        let args_end = end.unwrap_or(region_end);
        let i = scan::skip_ws(text, body, ctx);
        let lit = match literal::read(&text[..args_end], i, Syntax::JSON, ctx) {
            Ok(lit) => lit,
            Err(f) if f.eof && end.is_none() => {
                out.warnings
                    .push("a Solar Open tool call is cut off".to_string());
                continue;
            }
            Err(_) => {
                out.warnings
                    .push("the arguments of a Solar Open tool call are not JSON".to_string());
                continue;
            }
        };
        let stop = with_close(text, end.map_or(lit.end, |e| e + END.len()));
        pos = stop;
        out.call(
            name.to_string(),
            Args::Json(lit.value),
            with_opening(text, start)..stop,
            end.is_none(),
        );
    }
    out
}
