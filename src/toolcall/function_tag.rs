//! A function tag: `<function name="NAME" parameters={…} />`, with `arguments=` for `parameters=` and the
//! value a JSON object, a quoted string holding one or holding `key: value` pairs, or the arguments as
//! the tag's body (`<function name="NAME">{…}</function>`); several are often wrapped in `<tools>` … `</tools>`. No chat
//! template defines it: Qwen2.5-Coder 1.5B writes it when it plans several calls in one reply (seen in
//! `vouch run` transcripts of the agent benchmark).

use std::sync::LazyLock;

use regex::Regex;
use serde_json::{Map, Value};

use super::literal::{self, Syntax};
use super::scan::{self, Ctx, Finder};
use super::{Args, Format, Parsed};

const OPEN: &str = "<function name=";
const CLOSE: &str = "</function>";
const KEYS: [&str; 2] = ["parameters=", "arguments="];
const WRAPPERS: [&str; 2] = ["<tools>", "</tools>"];
/// A key of `key: value` text and the separator after it, at the start or after a comma.
static PAIR: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"(?:^|,)\s*([A-Za-z_][A-Za-z0-9_]*)\s*[:=]\s*").ok());

pub(crate) fn parse(text: &str, ctx: &mut Ctx) -> Parsed {
    let mut out = Parsed::new(Format::FunctionTag);
    let mut opens = Finder::new(OPEN);
    let mut pos = 0;
    let last_close = text.rfind('>');
    while let Some(start) = opens.next(text, pos, ctx) {
        pos = start + OPEN.len();
        let Some((name, after_name)) = quoted_name(text, pos) else {
            continue;
        };
        pos = after_name;
        match arguments(text, after_name, ctx) {
            Some((args, end)) => {
                out.call(name, Args::Json(args), start..end, false);
                pos = end;
            }
            None if last_close.is_none_or(|c| c < after_name) => out.cut_off(&name),
            None => out.warnings.push(format!(
                "the function tag of {name} has no readable arguments"
            )),
        }
    }
    if !out.found.is_empty() {
        for wrapper in WRAPPERS {
            let mut finder = Finder::new(wrapper);
            let mut at = 0;
            while let Some(p) = finder.next(text, at, ctx) {
                out.remove.push(p..p + wrapper.len());
                at = p + wrapper.len();
            }
        }
    }
    out
}

/// `"NAME"` or `'NAME'` at `i`: the name and the index after its closing quote.
fn quoted_name(text: &str, i: usize) -> Option<(String, usize)> {
    let quote = *text
        .as_bytes()
        .get(i)
        .filter(|q| **q == b'"' || **q == b'\'')?;
    let body = i + 1;
    let len = text.as_bytes()[body..]
        .iter()
        .take(128)
        .position(|&c| c == quote)?;
    let name = &text[body..body + len];
    let ok = !name.is_empty() && name.bytes().all(scan::is_name_byte);
    ok.then(|| (name.to_string(), body + len + 1))
}

/// The arguments after the name, and where the call ends (after `/>`, or after `</function>`).
fn arguments(text: &str, i: usize, ctx: &mut Ctx) -> Option<(Value, usize)> {
    let b = text.as_bytes();
    let i = scan::skip_ws(text, i, ctx);
    if scan::at(text, i, "/>") {
        return Some((Value::Object(Map::new()), i + 2));
    }
    if scan::at(text, i, ">") {
        // The arguments as the body: `<function name="x">{…}</function>`.
        let body = scan::skip_ws(text, i + 1, ctx);
        if scan::at(text, body, CLOSE) {
            return Some((Value::Object(Map::new()), body + CLOSE.len()));
        }
        let lit = literal::read(text, body, Syntax::JSON, ctx).ok()?;
        let after = scan::skip_ws(text, lit.end, ctx);
        let end = if scan::at(text, after, CLOSE) {
            after + CLOSE.len()
        } else {
            lit.end
        };
        return Some((lit.value, end));
    }
    let key = KEYS.iter().find(|k| scan::at(text, i, k))?;
    let mut v = i + key.len();
    // A quoted value holds the JSON: read the object itself (its strings may hold the quote character),
    // then the closing quote.
    let quote = b.get(v).copied().filter(|q| *q == b'"' || *q == b'\'');
    if quote.is_some() {
        v += 1;
    }
    // `arguments={null}` (written for a tool without arguments): no arguments.
    for none in ["{null}", "null", "{None}", "None", "{}"] {
        let after = scan::skip_ws(text, v + none.len(), ctx);
        let after = after + usize::from(quote.is_some_and(|q| b.get(after) == Some(&q)));
        let after = scan::skip_ws(text, after, ctx);
        if scan::at(text, v, none) && scan::at(text, after, "/>") {
            return Some((Value::Object(Map::new()), after + 2));
        }
    }
    let lit = match literal::read(text, v, Syntax::JSON, ctx) {
        Ok(lit) => lit,
        // `parameters="glob: **/*.rs, path: src/lib.rs"`: the pairs as text.
        Err(_) => return quote.and_then(|q| key_values(text, v, q, ctx)),
    };
    let mut j = lit.end;
    if let Some(q) = quote {
        if b.get(j) != Some(&q) {
            return None;
        }
        j += 1;
    }
    Some((lit.value, tag_end(text, j, ctx)))
}

/// Where a call whose arguments end at `j` ends: after `/>`, after `>` and a `</function>` that follows it,
/// after a lone `>`, or at `j`.
fn tag_end(text: &str, j: usize, ctx: &mut Ctx) -> usize {
    let j = scan::skip_ws(text, j, ctx);
    if scan::at(text, j, "/>") {
        j + 2
    } else if scan::at(text, j, ">") {
        let k = scan::skip_ws(text, j + 1, ctx);
        if scan::at(text, k, CLOSE) {
            k + CLOSE.len()
        } else {
            j + 1
        }
    } else {
        j
    }
}

/// A quoted value of `key: value` pairs split by commas (`"glob: **/*.rs, path: src/lib.rs"`), from `v` to
/// the quote `q` that closes the tag (`"/>` or `">`): the pairs as strings and where the call ends. A comma
/// splits only where a `key:` follows it, so a value may hold commas (`{a,b}`).
fn key_values(text: &str, v: usize, q: u8, ctx: &mut Ctx) -> Option<(Value, usize)> {
    let b = text.as_bytes();
    let close = (v..b.len()).find(|&k| {
        b[k] == q && {
            let after = scan::skip_ws(text, k + 1, ctx);
            scan::at(text, after, "/>") || scan::at(text, after, ">")
        }
    })?;
    let end = tag_end(text, close + 1, ctx);
    let body = &text[v..close];
    let keys: Vec<_> = PAIR.as_ref()?.captures_iter(body).collect();
    if keys.is_empty() || keys[0].get(0)?.start() != 0 {
        return None;
    }
    let mut args = Map::new();
    for (n, c) in keys.iter().enumerate() {
        let from = c.get(0)?.end();
        let to = keys.get(n + 1).map_or(body.len(), |next| {
            next.get(0).map_or(body.len(), |m| m.start())
        });
        let value = body[from..to].trim();
        args.insert(c[1].to_string(), Value::String(value.to_string()));
    }
    Some((Value::Object(args), end))
}
