//! Bare or fenced JSON calls: Llama 3.x (`{"name":…, "parameters":…}`, optionally after
//! `<|python_tag|>`), constrained replies (`{"name": TOOL, "arguments": {…}}`), llama.cpp's generic
//! `{"tool_call": {…}}`, and lists of calls whose marker a server stripped (Mistral's `[TOOL_CALLS]`,
//! Sarashina's `<|tool_calls|>`).
//!
//! There is no marker to anchor on, so any `{` whose first key is one a call has is a candidate, and a
//! candidate is read in full: one that turns out not to be a call is skipped as a whole. A call found this
//! way is "weak" (it may be an example in prose) unless it has an explicit arguments key or follows
//! `<|python_tag|>`: a weak call naming no offered tool is ignored rather than reported. Scans draw on the
//! work budget, so a reply made of ten thousand `{"name":` stays linear.

use super::detect;
use super::jsoncall;
use super::literal::{self, Syntax};
use super::scan::{self, Ctx};
use super::{Format, Found, Parsed};

const PYTHON_TAG: &str = "<|python_tag|>";
const HERMES_CLOSE: &str = "</tool_call>";

pub(crate) fn parse(text: &str, ctx: &mut Ctx) -> Parsed {
    let mut out = Parsed::new(Format::Json);
    let b = text.as_bytes();
    let mut llama = false;
    let mut eaten_open = false;
    let mut i = 0;
    while let Some(k) = b
        .get(i..)
        .and_then(|r| r.iter().position(|&c| c == b'{' || c == b'['))
    {
        let p = i + k;
        ctx.charge(k + 1);
        i = p + 1;
        let tagged = scan::ends_at(text, scan::rskip_ws(text, p, ctx), PYTHON_TAG);
        let plausible = match b[p] {
            b'{' => detect::json_call_start(text, p),
            _ => {
                let q = scan::skip_ws(text, p + 1, ctx);
                b.get(q) == Some(&b'{') && detect::json_call_start(text, q)
            }
        };
        if !plausible && !tagged {
            continue;
        }
        if !ctx.may_speculate() {
            break;
        }
        let lit = match literal::read(text, p, Syntax::JSON, ctx) {
            Ok(lit) => lit,
            Err(f) => {
                if tagged && f.eof {
                    out.warnings
                        .push("a JSON call after <|python_tag|> is cut off".to_string());
                }
                continue;
            }
        };
        let calls = jsoncall::calls(&lit.value);
        i = lit.end;
        if calls.is_empty() {
            continue;
        }
        llama |= tagged || calls.iter().any(|c| c.parameters_key);
        let span = scan::widen(
            text,
            p..lit.end,
            &[PYTHON_TAG],
            &["<|eom_id|>", "<|eot_id|>"],
            ctx,
        );
        let span = fenced(text, span, ctx);
        // A Hermes call whose opening `<tool_call>` the server ate: the JSON and the closing tag.
        let after = scan::skip_ws(text, span.end, ctx);
        let span = if !tagged && scan::at(text, after, HERMES_CLOSE) {
            eaten_open = true;
            span.start..after + HERMES_CLOSE.len()
        } else {
            span
        };
        for c in calls {
            out.found.push(Found {
                name: c.name,
                args: c.args,
                span: span.clone(),
                unclosed: false,
                weak: !(tagged || c.explicit),
                bare: !tagged,
            });
        }
    }
    if llama {
        out.format = Format::Llama3Json;
    } else if eaten_open {
        out.format = Format::Hermes;
    }
    out
}

/// The span widened to the Markdown fence around it, if the value is all the fence holds.
fn fenced(text: &str, span: std::ops::Range<usize>, ctx: &mut Ctx) -> std::ops::Range<usize> {
    let b = text.as_bytes();
    let before = scan::rskip_ws(text, span.start, ctx);
    let mut word = before;
    while word > 0
        && before - word < 16
        && (b[word - 1].is_ascii_alphanumeric() || b[word - 1] == b'_')
    {
        word -= 1;
    }
    if !scan::ends_at(text, word, "```") {
        return span;
    }
    let after = scan::skip_ws(text, span.end, ctx);
    if scan::at(text, after, "```") {
        word - 3..after + 3
    } else {
        span
    }
}
