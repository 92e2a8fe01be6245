//! Calls in Python syntax: `[f(a=1), g(b='x')]` (Llama 3.2's pythonic template, Llama 4 inside
//! `<|python_start|>`…`<|python_end|>`, ToolACE), LFM2 inside `<|tool_call_start|>`…`<|tool_call_end|>` (or a
//! JSON list there), Olmo 3 with one call per line inside `<function_calls>`, and Llama 3.1's built-in
//! tools, `<|python_tag|>brave_search.call(query="…")`.
//!
//! Values are Python literals (Olmo 3 also writes `true`/`false`/`null`); an apostrophe inside a
//! single-quoted string (`'It's'`, Liquid4All/docs #130) is kept when a letter follows it. Only keyword
//! arguments are read: a positional argument would need a guess. LFM2.5 may write the bare list without
//! markers; a bare list is taken only when it names an offered tool.

use serde_json::{Map, Value};

use super::literal::{self, Syntax};
use super::scan::{self, Ctx, Finder};
use super::tagged_json;
use super::{Args, Format, Found, Parsed};

const WRAPPERS: [(&str, Option<&str>); 4] = [
    ("<|python_start|>", Some("<|python_end|>")),
    ("<|tool_call_start|>", Some("<|tool_call_end|>")),
    ("<function_calls>", Some("</function_calls>")),
    ("<|python_tag|>", None),
];

pub(crate) fn parse(text: &str, ctx: &mut Ctx) -> Parsed {
    let mut out = Parsed::new(Format::Pythonic);
    for (open, close) in WRAPPERS {
        wrapped(text, open, close, ctx, &mut out);
    }
    if out.found.is_empty() {
        bare(text, ctx, &mut out);
    }
    out
}

fn wrapped(
    text: &str,
    open: &'static str,
    close: Option<&'static str>,
    ctx: &mut Ctx,
    out: &mut Parsed,
) {
    let mut opens = Finder::new(open);
    let mut closes = close.map(Finder::new);
    let mut pos = 0;
    while let Some(start) = opens.next(text, pos, ctx) {
        let body = start + open.len();
        let next_open = opens.next(text, body, ctx);
        let close_at = closes
            .as_mut()
            .and_then(|c| c.next(text, body, ctx))
            .filter(|c| next_open.is_none_or(|n| *c < n));
        let region_end = close_at.or(next_open).unwrap_or(text.len());
        pos = region_end;
        let span_end = |end: usize| match (close_at, close) {
            (Some(c), Some(marker)) => c + marker.len(),
            _ => end,
        };
        let unclosed = close.is_some() && close_at.is_none();
        let i = scan::skip_ws(text, body, ctx);
        let json = match text.as_bytes().get(i) {
            Some(b'{') => true,
            Some(b'[') => text.as_bytes().get(scan::skip_ws(text, i + 1, ctx)) == Some(&b'{'),
            _ => false,
        };
        if json {
            if open == "<|python_tag|>" {
                continue; // Llama 3 JSON, not Python.
            }
            let block = tagged_json::read_calls(text, i, region_end, ctx);
            let span = start..span_end(block.end);
            for call in block.calls {
                out.call(call.name, call.args, span.clone(), unclosed);
            }
            continue;
        }
        match read_calls(text, i, region_end, ctx) {
            Ok((calls, end)) => {
                let span = start..span_end(end);
                for (name, args) in calls {
                    out.call(
                        name,
                        Args::Json(Value::Object(args)),
                        span.clone(),
                        unclosed,
                    );
                }
            }
            Err(PyError::Eof) => out
                .warnings
                .push(format!("a Python call after {open} is cut off")),
            Err(PyError::Syntax(why)) => out
                .warnings
                .push(format!("a Python call after {open}: {why}")),
        }
    }
}

/// A bare `[name(…), …]` that names an offered tool.
fn bare(text: &str, ctx: &mut Ctx, out: &mut Parsed) {
    let b = text.as_bytes();
    let mut i = 0;
    while let Some(k) = b.get(i..).and_then(|r| r.iter().position(|&c| c == b'[')) {
        let p = i + k;
        ctx.charge(k + 1);
        i = p + 1;
        let q = scan::skip_ws(text, p + 1, ctx);
        let plausible = b
            .get(q)
            .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_')
            && scan::name_end(text, q, 128, ctx).is_some_and(|e| b.get(e) == Some(&b'('));
        if !plausible {
            continue;
        }
        if !ctx.may_speculate() {
            break;
        }
        if let Ok((calls, end)) = read_calls(text, p, text.len(), ctx) {
            i = end;
            for (name, args) in calls {
                out.found.push(Found {
                    name,
                    args: Args::Json(Value::Object(args)),
                    span: p..end,
                    unclosed: false,
                    weak: true,
                    bare: true,
                });
            }
        }
    }
}

enum PyError {
    Eof,
    Syntax(String),
}

type PyCall = (String, Map<String, Value>);

/// A list `[f(…), …]`, or calls separated by whitespace, commas or `;`, in `text[i..end]`.
fn read_calls(
    text: &str,
    i: usize,
    end: usize,
    ctx: &mut Ctx,
) -> Result<(Vec<PyCall>, usize), PyError> {
    let region = text.get(..end).unwrap_or(text);
    let b = region.as_bytes();
    let mut j = scan::skip_ws(region, i, ctx);
    let list = b.get(j) == Some(&b'[');
    if list {
        j += 1;
    }
    let mut calls = Vec::new();
    let mut last = j;
    loop {
        let from = j;
        while j < b.len() && (b[j].is_ascii_whitespace() || b[j] == b',' || b[j] == b';') {
            j += 1;
        }
        ctx.charge(j - from + 1);
        if list && b.get(j) == Some(&b']') {
            return Ok((calls, j + 1));
        }
        if j >= b.len() {
            if list {
                return Err(PyError::Eof);
            }
            break;
        }
        if !b[j].is_ascii_alphabetic() && b[j] != b'_' {
            if list || calls.is_empty() {
                return Err(PyError::Syntax("not a call".to_string()));
            }
            break;
        }
        let (call, after) = read_call(region, j, ctx)?;
        calls.push(call);
        j = after;
        last = after;
    }
    Ok((calls, last))
}

/// `name(k=v, …)` at `i`.
fn read_call(region: &str, i: usize, ctx: &mut Ctx) -> Result<(PyCall, usize), PyError> {
    let b = region.as_bytes();
    let eof_or = |j: usize, why: &str| {
        if j >= b.len() {
            PyError::Eof
        } else {
            PyError::Syntax(why.to_string())
        }
    };
    let name_end =
        scan::name_end(region, i, 128, ctx).ok_or_else(|| eof_or(i, "no function name"))?;
    let mut name = &region[i..name_end];
    if let Some(base) = name.strip_suffix(".call") {
        name = base;
    }
    let mut j = scan::skip_ws(region, name_end, ctx);
    if b.get(j) != Some(&b'(') {
        return Err(eof_or(j, "no ( after the function name"));
    }
    j += 1;
    let mut args = Map::new();
    loop {
        j = scan::skip_ws(region, j, ctx);
        if b.get(j) == Some(&b')') {
            return Ok(((name.to_string(), args), j + 1));
        }
        let key_end = {
            let mut k = j;
            while k < b.len() && (b[k].is_ascii_alphanumeric() || b[k] == b'_') {
                k += 1;
            }
            k
        };
        let eq = scan::skip_ws(region, key_end, ctx);
        if key_end == j || b.get(eq) != Some(&b'=') || b.get(eq + 1) == Some(&b'=') {
            return Err(eof_or(
                eq,
                "a positional argument (only keyword arguments are read)",
            ));
        }
        let lit = literal::read(region, eq + 1, Syntax::PYTHON, ctx).map_err(|f| {
            if f.eof {
                PyError::Eof
            } else {
                PyError::Syntax(format!(
                    "the value of {} is not a Python literal",
                    &region[j..key_end]
                ))
            }
        })?;
        args.insert(region[j..key_end].to_string(), lit.value);
        j = scan::skip_ws(region, lit.end, ctx);
        match b.get(j) {
            Some(b',') => j += 1,
            Some(b')') => return Ok(((name.to_string(), args), j + 1)),
            _ => return Err(eof_or(j, "no , or ) after an argument")),
        }
    }
}
