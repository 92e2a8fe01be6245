//! DeepSeek R1 / V3-0324 and V3.1: calls between `<｜tool▁call▁begin｜>` and `<｜tool▁call▁end｜>`.
//!
//! R1 writes `function<｜tool▁sep｜>NAME`, a newline and the arguments in a ```` ```json ```` fence; V3.1
//! writes `NAME<｜tool▁sep｜>{…}`. The tokens are long and models (and servers that decode them) misspell
//! them: ASCII `|` for the full-width bar, `_` or a space for `▁`. So tokens are matched by shape, once,
//! in a single pass over the text, and the calls are read from that token list.

use super::literal::{self, Syntax};
use super::scan::{self, Ctx};
use super::{Args, Format, Parsed};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Tok {
    CallsBegin,
    CallsEnd,
    CallBegin,
    CallEnd,
    Sep,
}

/// The DeepSeek token at byte `i`, in any of its spellings, and the byte after it.
pub(crate) fn token_at(text: &str, i: usize) -> Option<(Tok, usize)> {
    let b = text.as_bytes();
    if b.get(i) != Some(&b'<') {
        return None;
    }
    let mut j = i + 1;
    j += bar_at(b, j)?;
    // The words, up to the closing bar; separators are normalised to `_`.
    let mut word = [0u8; 24];
    let mut n = 0;
    loop {
        if let Some(len) = bar_at(b, j) {
            j += len;
            break;
        }
        let c = *b.get(j)?;
        let (ch, len) = if c.is_ascii_lowercase() {
            (c, 1)
        } else if c == b'_' || c == b' ' {
            (b'_', 1)
        } else if b[j..].starts_with("▁".as_bytes()) {
            (b'_', "▁".len())
        } else {
            return None;
        };
        if n == word.len() {
            return None;
        }
        word[n] = ch;
        n += 1;
        j += len;
    }
    if b.get(j) != Some(&b'>') {
        return None;
    }
    let tok = match &word[..n] {
        b"tool_calls_begin" => Tok::CallsBegin,
        b"tool_calls_end" => Tok::CallsEnd,
        b"tool_call_begin" => Tok::CallBegin,
        b"tool_call_end" => Tok::CallEnd,
        b"tool_sep" => Tok::Sep,
        _ => return None,
    };
    Some((tok, j + 1))
}

fn bar_at(b: &[u8], j: usize) -> Option<usize> {
    let rest = b.get(j..)?;
    if rest.starts_with("｜".as_bytes()) {
        Some("｜".len())
    } else if rest.starts_with(b"|") {
        Some(1)
    } else {
        None
    }
}

/// Every DeepSeek token in the text: `(kind, start, end)`.
fn tokens(text: &str, ctx: &mut Ctx) -> Vec<(Tok, usize, usize)> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(k) = b.get(i..).and_then(|r| r.iter().position(|&c| c == b'<')) {
        let p = i + k;
        match token_at(text, p) {
            Some((tok, end)) => {
                out.push((tok, p, end));
                i = end;
            }
            None => i = p + 1,
        }
    }
    ctx.charge(b.len() + 1);
    out
}

pub(crate) fn parse(text: &str, ctx: &mut Ctx) -> Parsed {
    let mut out = Parsed::new(Format::DeepseekV31);
    let toks = tokens(text, ctx);
    let mut r1 = false;
    for (k, &(tok, begin, after_begin)) in toks.iter().enumerate() {
        if tok != Tok::CallBegin {
            continue;
        }
        // The call runs to its end token, or to whatever structure comes next.
        let next = toks[k + 1..]
            .iter()
            .position(|t| t.0 != Tok::Sep)
            .map(|p| k + 1 + p);
        let (region_end, closed_by) = match next {
            Some(n) => (toks[n].1, (toks[n].0 == Tok::CallEnd).then_some(toks[n].2)),
            None => (text.len(), None),
        };
        let Some(&(_, sep, after_sep)) = toks[k + 1..]
            .iter()
            .take_while(|t| t.0 == Tok::Sep)
            .find(|t| t.1 < region_end)
        else {
            continue;
        };
        let head = text[after_begin..sep].trim();
        let (name, args_from) = if head == "function" {
            // R1: the name runs to the end of the line, the arguments sit in a fence.
            r1 = true;
            let line_end = text[after_sep..region_end]
                .find('\n')
                .map_or(region_end, |n| after_sep + n);
            (text[after_sep..line_end].trim(), line_end)
        } else {
            (head, after_sep)
        };
        if name.is_empty() || !name.bytes().all(scan::is_name_byte) {
            continue;
        }
        let region = &text[..region_end];
        let mut i = scan::skip_ws(region, args_from, ctx);
        if scan::at(region, i, "```") {
            i = region[i..].find('\n').map_or(region_end, |n| i + n + 1);
        }
        match literal::read(region, i, Syntax::JSON, ctx) {
            Ok(lit) => {
                let mut span_start = begin;
                if let Some(&(Tok::CallsBegin, s, e)) = k.checked_sub(1).map(|p| &toks[p]) {
                    if text[e..begin].trim().is_empty() {
                        span_start = s;
                    }
                }
                let mut span_end = closed_by.unwrap_or(lit.end);
                if let Some(&(Tok::CallsEnd, s, e)) = next.and_then(|n| toks.get(n + 1)) {
                    if closed_by.is_some() && text[span_end..s].trim().is_empty() {
                        span_end = e;
                    }
                }
                out.call(
                    name.to_string(),
                    Args::Json(lit.value),
                    span_start..span_end,
                    closed_by.is_none(),
                );
            }
            Err(f) if f.eof && closed_by.is_none() => out.cut_off(name),
            Err(_) => out
                .warnings
                .push(format!("the arguments of the call to {name} are not JSON")),
        }
    }
    if r1 {
        out.format = Format::DeepseekR1;
    }
    out
}
