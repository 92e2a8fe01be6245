//! The `invoke` family: `<invoke name="NAME">` holding `<parameter name="K">V</parameter>` per argument.
//!
//! MiniMax-M2 wraps invokes in `<minimax:tool_call>`; DeepSeek V3.2/V4 (DSML) prefixes every tag with
//! `｜DSML｜` and says per parameter whether the value is a string (`string="true"`, kept raw) or JSON
//! (`string="false"`); Step-3 prefixes `steptml:` and wraps the invoke in DeepSeek-style tokens. Values are
//! raw text but for the one newline on each side; entity-escaped text in values is kept as written (a
//! value may legitimately contain `&lt;`), only attribute values are unescaped. A value without its closer
//! ends at the next tag; one that runs into the end of the reply means the call was cut off.

use super::scan::{self, Ctx, Finder};
use super::{Arg, Args, Format, Parsed};

struct Dialect {
    format: Format,
    invoke: &'static str,
    end_invoke: &'static str,
    parameter: &'static str,
    end_parameter: &'static str,
    before: &'static [&'static str],
    after: &'static [&'static str],
}

const DIALECTS: [Dialect; 4] = [
    Dialect {
        format: Format::MinimaxM2,
        invoke: "<invoke",
        end_invoke: "</invoke>",
        parameter: "<parameter",
        end_parameter: "</parameter>",
        before: &["<minimax:tool_call>"],
        after: &["</minimax:tool_call>"],
    },
    Dialect {
        format: Format::DeepseekDsml,
        invoke: "<｜DSML｜invoke",
        end_invoke: "</｜DSML｜invoke>",
        parameter: "<｜DSML｜parameter",
        end_parameter: "</｜DSML｜parameter>",
        before: &["<｜DSML｜function_calls>", "<｜DSML｜tool_calls>"],
        after: &["</｜DSML｜function_calls>", "</｜DSML｜tool_calls>"],
    },
    Dialect {
        format: Format::DeepseekDsml,
        invoke: "<|DSML|invoke",
        end_invoke: "</|DSML|invoke>",
        parameter: "<|DSML|parameter",
        end_parameter: "</|DSML|parameter>",
        before: &["<|DSML|function_calls>", "<|DSML|tool_calls>"],
        after: &["</|DSML|function_calls>", "</|DSML|tool_calls>"],
    },
    Dialect {
        format: Format::Step3,
        invoke: "<steptml:invoke",
        end_invoke: "</steptml:invoke>",
        parameter: "<steptml:parameter",
        end_parameter: "</steptml:parameter>",
        before: &[
            "<｜tool_calls_begin｜>",
            "<｜tool_call_begin｜>function<｜tool_sep｜>",
        ],
        after: &["<｜tool_call_end｜>", "<｜tool_calls_end｜>"],
    },
];

pub(crate) fn parse(format: Format, text: &str, ctx: &mut Ctx) -> Parsed {
    let mut out = Parsed::new(format);
    for d in DIALECTS.iter().filter(|d| d.format == format) {
        parse_dialect(d, text, ctx, &mut out);
    }
    out
}

fn parse_dialect(d: &Dialect, text: &str, ctx: &mut Ctx, out: &mut Parsed) {
    let mut invokes = Finder::new(d.invoke);
    let mut value_ends = [d.end_parameter, d.parameter, d.end_invoke, d.invoke].map(Finder::new);
    let mut pos = 0;
    while let Some(start) = invokes.next(text, pos, ctx) {
        pos = start + d.invoke.len();
        let Some((attrs, after_tag)) = tag_attrs(text, pos, ctx) else {
            continue;
        };
        let Some(name) = attr(&attrs, "name") else {
            continue;
        };
        let mut i = after_tag;
        let mut args = Vec::new();
        let mut cut_off = false;
        let mut closed = false;
        loop {
            i = scan::skip_ws(text, i, ctx);
            if scan::at(text, i, d.parameter) {
                let Some((attrs, value_start)) = tag_attrs(text, i + d.parameter.len(), ctx) else {
                    break;
                };
                let Some(key) = attr(&attrs, "name") else {
                    break;
                };
                let Some((which, value_end)) =
                    scan::first_of(&mut value_ends, text, value_start, ctx)
                else {
                    cut_off = true;
                    break;
                };
                let value = scan::strip_newlines(&text[value_start..value_end]).to_string();
                let arg = match attr(&attrs, "string").as_deref() {
                    Some("true") => Arg::Str(value),
                    Some("false") => Arg::Json(value),
                    _ => Arg::Raw(value),
                };
                args.push((key, arg));
                i = if which == 0 {
                    value_end + d.end_parameter.len()
                } else {
                    out.warnings.push(format!(
                        "a parameter of the call to {name} has no closing tag; it ends where the next tag starts"
                    ));
                    value_end
                };
            } else if scan::at(text, i, d.end_invoke) {
                closed = true;
                i += d.end_invoke.len();
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
        let span = scan::widen(text, start..i, d.before, d.after, ctx);
        out.call(name, Args::Pairs(args), span, !closed);
    }
}

/// The attributes of a tag whose name ends at `i`, and the byte after its `>`.
fn tag_attrs(text: &str, i: usize, ctx: &mut Ctx) -> Option<(Vec<(String, String)>, usize)> {
    if !text.as_bytes().get(i).is_some_and(u8::is_ascii_whitespace) {
        return None;
    }
    let gt = scan::find_byte(text, i, 512, ctx, |c| c == b'>' || c == b'<')?;
    if text.as_bytes()[gt] != b'>' {
        return None;
    }
    Some((parse_attrs(&text[i..gt]), gt + 1))
}

fn attr(attrs: &[(String, String)], key: &str) -> Option<String> {
    attrs
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.clone())
        .filter(|v| !v.is_empty())
}

/// `k="v" k2='v2' k3=v3`, values unescaped.
fn parse_attrs(s: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = s.trim_start();
    while let Some(eq) = rest.find('=') {
        let key = rest[..eq].trim().to_string();
        let after = rest[eq + 1..].trim_start();
        let (value, next) = match after.chars().next() {
            Some(q @ ('"' | '\'')) => match after[1..].find(q) {
                Some(end) => (&after[1..1 + end], &after[end + 2..]),
                None => (&after[1..], ""),
            },
            _ => {
                let end = after.find(char::is_whitespace).unwrap_or(after.len());
                (after[..end].trim_end_matches('/'), &after[end..])
            }
        };
        out.push((key, unescape(value)));
        rest = next.trim_start();
    }
    out
}

fn unescape(s: &str) -> String {
    if !s.contains('&') {
        return s.to_string();
    }
    s.replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}
