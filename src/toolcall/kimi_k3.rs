//! Kimi-K3 XTML: blocks opened by `<|open|>HEADER<|sep|>` and closed by `<|close|>KIND<|sep|>`. A `tools`
//! block holds `call tool="NAME" index="1"` blocks, which hold `argument key="K" type="T"` blocks:
//! `type="string"` is raw text, any other type JSON. Attribute values are XML-escaped.

use super::scan::{Ctx, Finder};
use super::{Arg, Args, Format, Parsed};

const OPEN: &str = "<|open|>";
const CLOSE: &str = "<|close|>";
const SEP: &str = "<|sep|>";

/// `name="value"` in a block header, unescaped.
fn attr(header: &str, name: &str) -> Option<String> {
    let key = format!("{name}=\"");
    let start = header
        .match_indices(&key)
        .find(|(i, _)| *i == 0 || header.as_bytes()[i - 1].is_ascii_whitespace())?
        .0
        + key.len();
    let len = header[start..].find('"')?;
    Some(unescape(&header[start..start + len]))
}

fn unescape(s: &str) -> String {
    s.replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

/// The call being read: its name, where it opened, its arguments.
type Open = (String, usize, Vec<(String, Arg)>);

pub(crate) fn parse(text: &str, ctx: &mut Ctx) -> Parsed {
    let mut out = Parsed::new(Format::KimiK3);
    let mut opens = Finder::new(OPEN);
    let mut seps = Finder::new(SEP);
    let mut closes = Finder::new(CLOSE);
    let mut call: Option<Open> = None;
    let mut tools_start: Option<usize> = None;
    let mut pos = 0;
    loop {
        let open = opens.next(text, pos, ctx);
        let close = closes.next(text, pos, ctx);
        let (at, is_open) = match (open, close) {
            (Some(o), Some(c)) if o < c => (o, true),
            (_, Some(c)) => (c, false),
            (Some(o), None) => (o, true),
            (None, None) => break,
        };
        let head = at + if is_open { OPEN.len() } else { CLOSE.len() };
        let Some(sep) = seps.next(text, head, ctx) else {
            break;
        };
        let header = text[head..sep].trim();
        let after = sep + SEP.len();
        pos = after;
        if !is_open {
            if header == "call" {
                if let Some((name, start, args)) = call.take() {
                    out.call(name, Args::Pairs(args), start..after, false);
                }
            } else if header == "tools" {
                if let (Some(s), Some(last)) = (tools_start.take(), out.found.last_mut()) {
                    last.span.end = after;
                    if let Some(first) = out.found.iter_mut().find(|f| f.span.start >= s) {
                        first.span.start = s;
                    }
                }
            }
            continue;
        }
        if header == "tools" {
            tools_start = Some(at);
        } else if header.starts_with("call ") {
            if let Some((name, start, args)) = call.take() {
                out.call(name, Args::Pairs(args), start..at, true);
            }
            if let Some(name) = attr(header, "tool") {
                call = Some((name, at, Vec::new()));
            }
        } else if header.starts_with("argument ") {
            let Some(key) = attr(header, "key") else {
                continue;
            };
            let ty = attr(header, "type").unwrap_or_else(|| "string".to_string());
            // The value runs to the argument's `<|close|>`.
            let Some(end) = closes.next(text, after, ctx) else {
                if let Some((name, ..)) = &call {
                    out.cut_off(&name.clone());
                }
                call = None;
                break;
            };
            let raw = text[after..end].to_string();
            let value = if ty == "string" {
                Arg::Str(raw)
            } else {
                Arg::Json(raw)
            };
            if let Some((_, _, args)) = &mut call {
                args.push((key, value));
            }
            pos = end;
        }
    }
    if let Some((name, start, args)) = call {
        out.call(name, Args::Pairs(args), start..text.len(), true);
    }
    out
}
