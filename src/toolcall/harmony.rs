//! gpt-oss Harmony: messages of the form `<|start|>assistant<|channel|>CHANNEL to=functions.NAME
//! <|constrain|>json<|message|>{…}<|call|>`; the recipient may sit in the role part instead
//! (`<|start|>assistant to=functions.NAME<|channel|>commentary …`).
//!
//! A message with a `functions.` recipient is a call, whatever its channel. The `analysis` channel is
//! reasoning: its text is never searched for calls, so a call the model only thinks about is not taken.
//! `final` and recipient-less `commentary` messages are answer text, unless such a message holds nothing
//! but a call object (TensorRT-LLM #9256). When a server stripped the special
//! tokens (lablup/mlxcel #654), what is left is `… to=functions.NAME … json{…}`, which is read as well.

use super::jsoncall::JsonCall;
use super::literal::{self, Syntax};
use super::scan::{self, Ctx, Finder};
use super::tagged_json;
use super::{Args, Format, Parsed};

const START: &str = "<|start|>";
const CHANNEL: &str = "<|channel|>";
const MESSAGE: &str = "<|message|>";
const TERMINATORS: [&str; 3] = ["<|end|>", "<|call|>", "<|return|>"];
const RECIPIENT: &str = "to=functions.";

pub(crate) fn parse(text: &str, ctx: &mut Ctx) -> Parsed {
    let mut out = Parsed::new(Format::Harmony);
    let mut messages = Finder::new(MESSAGE);
    let mut heads = [START, CHANNEL].map(Finder::new);
    let mut body_ends = [
        TERMINATORS[0],
        TERMINATORS[1],
        TERMINATORS[2],
        START,
        CHANNEL,
    ]
    .map(Finder::new);
    let mut pos = 0;
    let mut structured = false;
    while let Some(m) = messages.next(text, pos, ctx) {
        structured = true;
        let head = scan::first_of(&mut heads, text, pos, ctx)
            .map(|(_, at)| at)
            .filter(|at| *at < m)
            .unwrap_or(pos);
        let header = &text[head..m];
        let body = m + MESSAGE.len();
        let (body_end, next, terminated) = match scan::first_of(&mut body_ends, text, body, ctx) {
            Some((k, at)) if k < TERMINATORS.len() => (at, at + body_ends[k].len(), true),
            Some((_, at)) => (at, at, false),
            None => (text.len(), text.len(), false),
        };
        pos = next;
        ctx.charge(header.len());
        if let Some(name) = recipient(header) {
            let region = &text[..body_end];
            match literal::read(region, body, Syntax::JSON, ctx) {
                Ok(lit) => out.call(
                    name.to_string(),
                    Args::Json(lit.value),
                    head..next,
                    !terminated,
                ),
                Err(f) if f.eof && !terminated => out.cut_off(name),
                Err(_) => out
                    .warnings
                    .push(format!("the arguments of the call to {name} are not JSON")),
            }
        } else if channel(header) == Some("analysis") {
            out.reasoning.push(body..body_end);
            out.remove.push(head..next);
        } else if let Some(calls) = json_calls(text, body, body_end, ctx) {
            // A leaked message that holds a call object but no recipient (TensorRT-LLM #9256).
            for call in calls {
                out.call(call.name, call.args, head..next, !terminated);
            }
        } else {
            out.remove.push(head..body);
            out.remove.push(body_end..next);
        }
    }
    if !structured {
        stripped(text, ctx, &mut out);
    }
    out
}

/// The explicit call objects (`{"name":…, "arguments":…}`) a recipient-less commentary body holds.
fn json_calls(text: &str, body: usize, body_end: usize, ctx: &mut Ctx) -> Option<Vec<JsonCall>> {
    let start = scan::skip_ws(text, body, ctx);
    if text.as_bytes().get(start) != Some(&b'{') {
        return None;
    }
    let block = tagged_json::read_calls(text, start, body_end, ctx);
    let trailing = scan::skip_ws(text, block.end, ctx);
    let calls: Vec<JsonCall> = block.calls.into_iter().filter(|c| c.explicit).collect();
    (!calls.is_empty() && trailing >= body_end).then_some(calls)
}

/// The function a header addresses.
fn recipient(header: &str) -> Option<&str> {
    let at = header.find(RECIPIENT)? + RECIPIENT.len();
    let rest = &header[at..];
    let end = rest
        .find(|c: char| c.is_whitespace() || c == '<')
        .unwrap_or(rest.len());
    let name = &rest[..end];
    (!name.is_empty()).then_some(name)
}

fn channel(header: &str) -> Option<&str> {
    let at = header.find(CHANNEL)? + CHANNEL.len();
    let rest = &header[at..];
    let end = rest
        .find(|c: char| c.is_whitespace() || c == '<')
        .unwrap_or(rest.len());
    Some(&rest[..end])
}

/// `to=functions.NAME` followed, after optional `<|constrain|>`, `json` and whitespace, by a JSON object.
fn stripped(text: &str, ctx: &mut Ctx, out: &mut Parsed) {
    let mut recipients = Finder::new(RECIPIENT);
    let mut pos = 0;
    while let Some(at) = recipients.next(text, pos, ctx) {
        let name_start = at + RECIPIENT.len();
        pos = name_start;
        let Some(name_end) = scan::name_end(text, name_start, 128, ctx) else {
            continue;
        };
        let mut i = name_end;
        loop {
            let j = scan::skip_ws(text, i, ctx);
            match ["<|constrain|>", "json", MESSAGE]
                .iter()
                .find(|t| scan::at(text, j, t))
            {
                Some(t) => i = j + t.len(),
                None => {
                    i = j;
                    break;
                }
            }
        }
        if text.as_bytes().get(i) != Some(&b'{') {
            continue;
        }
        let name = &text[name_start..name_end];
        match literal::read(text, i, Syntax::JSON, ctx) {
            Ok(lit) => {
                pos = lit.end;
                let span = scan::widen(
                    text,
                    at..lit.end,
                    &["commentary", "analysis", "assistant", CHANNEL, START],
                    &TERMINATORS,
                    ctx,
                );
                out.call(name.to_string(), Args::Json(lit.value), span, false);
            }
            Err(f) if f.eof => out.cut_off(name),
            Err(_) => {}
        }
    }
}
