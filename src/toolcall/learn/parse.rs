//! Reading calls with learned delimiters. Whitespace inside a delimiter matches any whitespace (or none),
//! since models and templates disagree about newlines around tags far more often than about the tags.

use serde_json::Value;

use super::{Learned, Shape};

/// Where `delim` matches at or after `from`: `(start, end)`. A delimiter of only whitespace matches the
/// whitespace at `from`.
pub fn find(text: &str, from: usize, delim: &str) -> Option<(usize, usize)> {
    let tokens: Vec<&str> = delim.split_whitespace().collect();
    let Some(first) = tokens.first() else {
        return Some((from, skip_ws(text, from)));
    };
    let mut at = from;
    while let Some(k) = text.get(at..)?.find(first) {
        let start = at + k;
        if let Some(end) = match_rest(text, start + first.len(), &tokens[1..]) {
            return Some((start, end));
        }
        at = start + first.len();
    }
    None
}

/// `delim` matches exactly at `at` (after optional whitespace): its end.
pub fn at(text: &str, at: usize, delim: &str) -> Option<usize> {
    let tokens: Vec<&str> = delim.split_whitespace().collect();
    let end = match_rest(text, at, &tokens)?;
    Some(if tokens.is_empty() {
        skip_ws(text, at)
    } else {
        end
    })
}

fn match_rest(text: &str, mut pos: usize, tokens: &[&str]) -> Option<usize> {
    for t in tokens {
        pos = skip_ws(text, pos);
        if !text.get(pos..)?.starts_with(t) {
            return None;
        }
        pos += t.len();
    }
    Some(pos)
}

fn skip_ws(text: &str, pos: usize) -> usize {
    let rest = text.get(pos..).unwrap_or("");
    pos + (rest.len() - rest.trim_start().len())
}

fn name_end(text: &str, from: usize) -> usize {
    let rest = text.get(from..).unwrap_or("");
    from + rest
        .find(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | ':')))
        .unwrap_or(rest.len())
}

/// One JSON value starting at `pos` (after whitespace), and where it ends.
fn json_at(text: &str, pos: usize) -> Option<(Value, usize)> {
    let start = skip_ws(text, pos);
    let mut stream = serde_json::Deserializer::from_str(text.get(start..)?).into_iter::<Value>();
    let v = stream.next()?.ok()?;
    Some((v, start + stream.byte_offset()))
}

fn pointer<'a>(v: &'a Value, path: &[String]) -> Option<&'a Value> {
    path.iter().try_fold(v, |v, k| v.get(k))
}

fn args_value(v: Value) -> Value {
    match v {
        Value::String(s) => serde_json::from_str(&s).unwrap_or(Value::String(s)),
        v => v,
    }
}

/// A raw value: JSON when it reads as JSON (numbers, booleans, objects), else the text.
fn typed(raw: &str) -> Value {
    let t = raw.trim();
    match serde_json::from_str::<Value>(t) {
        Ok(v) if !v.is_string() => v,
        _ => Value::String(t.to_string()),
    }
}

/// A call's arguments as the learned syntax wrote them.
#[derive(Clone, Debug, PartialEq)]
pub enum RawArgs {
    /// One JSON value (a string holding JSON already decoded).
    Json(Value),
    /// Tagged keys and their values' raw text, trimmed.
    Pairs(Vec<(String, String)>),
}

/// One call found in a text: its name, its arguments and the bytes it spans (the closing delimiter
/// included when it follows).
#[derive(Clone, Debug, PartialEq)]
pub struct Spanned {
    pub name: String,
    pub args: RawArgs,
    pub span: std::ops::Range<usize>,
    /// The learned closing delimiter did not follow the call.
    pub unclosed: bool,
}

/// The calls in `text`, as `(name, arguments)`.
pub fn parse(l: &Learned, text: &str) -> Vec<(String, Value)> {
    spans(l, text)
        .into_iter()
        .map(|c| {
            let args = match c.args {
                RawArgs::Json(v) => v,
                RawArgs::Pairs(p) => {
                    Value::Object(p.into_iter().map(|(k, v)| (k, typed(&v))).collect())
                }
            };
            (c.name, args)
        })
        .collect()
}

/// Where the closing delimiter `close` follows `end`: the end of the call.
fn closed_at(text: &str, end: usize, close: &str) -> (usize, bool) {
    if close.trim().is_empty() {
        return (end, true);
    }
    match at(text, end, close) {
        Some(e) => (e, true),
        None => (end, false),
    }
}

/// The calls in `text`, with their spans.
pub fn spans(l: &Learned, text: &str) -> Vec<Spanned> {
    let mut out = Vec::new();
    if l.open.trim().is_empty() {
        // A bare name or bare JSON is too weak a marker to read text by.
        return out;
    }
    let mut pos = 0;
    while let Some((open_start, after_open)) = find(text, pos, &l.open) {
        pos = after_open;
        match &l.shape {
            Shape::Json {
                name_field,
                args_field,
            } => {
                let mut p = after_open;
                let mut calls = Vec::new();
                while let Some((v, end)) = json_at(text, p) {
                    let call = match (name_field, args_field) {
                        (Some(nf), Some(af)) => pointer(&v, nf)
                            .and_then(Value::as_str)
                            .map(|n| (n.to_string(), pointer(&v, af).cloned().map(args_value))),
                        // The name is the key (Apertus).
                        _ => v
                            .as_object()
                            .and_then(|o| o.iter().next())
                            .map(|(k, a)| (k.clone(), Some(a.clone()))),
                    };
                    if let Some((name, args)) = call {
                        calls.push((
                            name,
                            args.unwrap_or_else(|| Value::Object(Default::default())),
                            skip_ws(text, p)..end,
                        ));
                    }
                    p = end;
                    let next = skip_ws(text, p);
                    if text.get(next..).is_some_and(|r| r.starts_with(',')) {
                        p = next + 1;
                    } else {
                        break;
                    }
                }
                // A list of calls closes once, after its last call; the first call's span takes the opening.
                let (end, closed) = closed_at(text, p, &l.close);
                let n = calls.len();
                for (i, (name, args, mut span)) in calls.into_iter().enumerate() {
                    if i == 0 {
                        span.start = open_start;
                    }
                    if i + 1 == n {
                        span.end = end;
                    }
                    out.push(Spanned {
                        name,
                        args: RawArgs::Json(args),
                        span,
                        unclosed: !closed,
                    });
                }
                pos = end.max(pos);
            }
            Shape::TagJson { name_to_args, .. } => {
                let start = skip_ws(text, after_open);
                let end = name_end(text, start);
                if end == start {
                    continue;
                }
                let Some(j) = at(text, end, name_to_args) else {
                    continue;
                };
                if let Some((v, e)) = json_at(text, j) {
                    let (e, closed) = closed_at(text, e, &l.close);
                    out.push(Spanned {
                        name: text[start..end].to_string(),
                        args: RawArgs::Json(args_value(v)),
                        span: open_start..e,
                        unclosed: !closed,
                    });
                    pos = e;
                }
            }
            Shape::Tagged {
                name_to_first_key,
                key_to_value,
                value_to_key,
                value_to_end,
                name_to_end,
            } => {
                let start = skip_ws(text, after_open);
                let end = name_end(text, start);
                if end == start {
                    continue;
                }
                let name = text[start..end].to_string();
                let mut args = Vec::new();
                let mut p = end;
                let mut sep = name_to_first_key.as_str();
                let mut closed = false;
                while let Some(key_start) = at(text, p, sep) {
                    let Some((key_end, value_start)) = find(text, key_start, key_to_value) else {
                        break;
                    };
                    let next_key = find(text, value_start, value_to_key);
                    let end = find(text, value_start, value_to_end);
                    let (value_end, after, more) = match (next_key, end) {
                        (Some(k), Some(e)) if k.0 < e.0 => (k.0, k.1, true),
                        (_, Some(e)) => {
                            closed = true;
                            (e.0, e.1, false)
                        }
                        (Some(k), None) => (k.0, k.1, true),
                        (None, None) => (text.len(), text.len(), false),
                    };
                    args.push((
                        text[key_start..key_end].trim().to_string(),
                        text[value_start..value_end].trim().to_string(),
                    ));
                    if !more {
                        p = after;
                        break;
                    }
                    // `value_to_key` ended at the next key: step back onto it.
                    p = after;
                    sep = "";
                }
                if args.is_empty() {
                    if let Some(e) = at(text, end, name_to_end) {
                        p = e;
                        closed = true;
                    }
                }
                out.push(Spanned {
                    name,
                    args: RawArgs::Pairs(args),
                    span: open_start..p,
                    unclosed: !closed,
                });
                pos = p.max(pos);
            }
        }
    }
    out
}
