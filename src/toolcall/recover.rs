//! The order of recovery, and the last step every parser shares.
//!
//! Order: native `tool_calls`; then the answer text (content without its reasoning), trying each detected
//! format until one yields a call; then, only when the answer is empty, the reasoning, where only calls
//! that close the reasoning count (vLLM and llama.cpp put a real call there when the reasoning parser runs
//! first or thinking is off; a call quoted mid-thought is not one). The last step resolves names against the
//! offered tools, types the arguments and cuts the calls out of the text.

use std::ops::Range;

use super::learn::Learned;
use super::scan::{self, Ctx};
use super::{
    detect, native, reasoning, schema, Call, Format, Found, Message, Parsed, Recovered, ToolSpec,
};

/// Recovers the tool calls in an assistant message. `format` forces one text parser (see
/// [`Format::PARSERS`]); native `tool_calls` are taken first either way.
pub fn recover(msg: &Message<'_>, tools: &[ToolSpec], format: Option<Format>) -> Recovered {
    recover_counted(msg, tools, format, None).0
}

/// [`recover`] with the syntax learned from the server's chat template: where its opening delimiter
/// occurs, [`Format::Learned`] is tried before the formats detected at the same place or later
/// (it is the template's own syntax). A learned syntax that one of vouch's parsers already reads
/// (`known_format`) adds nothing. `Some(Format::Learned)` forces it.
pub fn recover_with(
    msg: &Message<'_>,
    tools: &[ToolSpec],
    format: Option<Format>,
    learned: Option<&Learned>,
) -> Recovered {
    recover_counted(msg, tools, format, learned).0
}

/// [`recover`], and the work it took (bytes looked at), for the linearity tests.
pub(crate) fn recover_counted(
    msg: &Message<'_>,
    tools: &[ToolSpec],
    format: Option<Format>,
    learned: Option<&Learned>,
) -> (Recovered, u64) {
    let content = msg.content.unwrap_or("");
    let native_len: usize = msg
        .tool_calls
        .iter()
        .map(|c| c.name.len() + c.arguments.len())
        .sum();
    let input_len = content.len() + msg.reasoning_content.map_or(0, str::len) + native_len;
    let mut ctx = Ctx::new(tools, input_len);
    ctx.learned = learned;
    let split = reasoning::split(content, &mut ctx);
    let mut thoughts: Vec<String> = msg
        .reasoning_content
        .filter(|r| !r.trim().is_empty())
        .map(|r| r.trim().to_string())
        .into_iter()
        .chain(split.reasoning)
        .collect();
    let mut warnings = Vec::new();

    if !msg.tool_calls.is_empty() {
        let parsed = native::parse(msg.tool_calls, &mut ctx);
        let out = finish(parsed, "", false, &mut ctx);
        warnings.extend(out.warnings);
        if !out.calls.is_empty() {
            let recovered = Recovered {
                format: Format::Native,
                calls: out.calls,
                content: scan::clean(&split.answer).to_string(),
                reasoning: thoughts.join("\n\n"),
                warnings,
                unknown: out.unknown,
            };
            return (recovered, ctx.steps());
        }
        warnings.push("no usable native tool call; looked for calls in the text".to_string());
    }

    let answer = parse_text(&split.answer, format, false, &mut ctx);
    if answer.calls.is_empty() && answer.content.is_empty() && !thoughts.is_empty() {
        let joined = thoughts.join("\n\n");
        let found = parse_text(&joined, format, true, &mut ctx);
        if !found.calls.is_empty() {
            warnings.extend(found.warnings);
            warnings.push(format!(
                "took {} call(s) from the reasoning: the reply has no answer text and the reasoning ends with them",
                found.calls.len()
            ));
            budget_warning(&ctx, &mut warnings);
            let recovered = Recovered {
                format: found.format,
                calls: found.calls,
                content: String::new(),
                reasoning: found.content,
                warnings,
                unknown: found.unknown,
            };
            return (recovered, ctx.steps());
        }
    }
    warnings.extend(answer.warnings);
    budget_warning(&ctx, &mut warnings);
    thoughts.extend(answer.reasoning);
    let recovered = Recovered {
        format: answer.format,
        calls: answer.calls,
        content: answer.content,
        reasoning: thoughts.join("\n\n"),
        warnings,
        unknown: answer.unknown,
    };
    (recovered, ctx.steps())
}

fn budget_warning(ctx: &Ctx, warnings: &mut Vec<String>) {
    if ctx.exhausted() {
        warnings.push(
            "stopped looking for bare JSON or Python calls: the reply is too irregular to scan further"
                .to_string(),
        );
    }
}

/// The result of reading one text.
struct Outcome {
    format: Format,
    calls: Vec<Call>,
    /// The text without the calls (and what the parser marked for removal), cleaned.
    content: String,
    reasoning: Vec<String>,
    warnings: Vec<String>,
    /// Something was recognised as a call (perhaps of an unknown tool) and cut.
    cut_any: bool,
    /// The names of tools called that are not offered.
    unknown: Vec<String>,
}

/// Tries the forced format, or each detected one, until one yields a call. When none does, the first that
/// recognised a call attempt (an unknown tool, say) is kept for its warnings.
fn parse_text(text: &str, forced: Option<Format>, trailing_only: bool, ctx: &mut Ctx) -> Outcome {
    let candidates = match forced {
        Some(f) => vec![f],
        None => detect::candidates(text, ctx),
    };
    let mut kept: Option<Outcome> = None;
    let mut structure: Option<Parsed> = None;
    let mut stray = Vec::new();
    for f in candidates {
        let mut parsed = super::parse_with(f, text, ctx);
        if parsed.found.is_empty() {
            stray.append(&mut parsed.warnings);
            if structure.is_none() && !parsed.remove.is_empty() {
                structure = Some(parsed);
            }
            continue;
        }
        let out = finish(parsed, text, trailing_only, ctx);
        if !out.calls.is_empty() {
            return out;
        }
        if kept.is_none() && out.cut_any {
            kept = Some(out);
        }
    }
    if let Some(out) = kept {
        return out;
    }
    // No call, but a parser that understood the text's structure (Harmony's channels) cleans it up.
    let mut out = match structure {
        Some(parsed) => finish(parsed, text, trailing_only, ctx),
        None => Outcome {
            format: Format::None,
            calls: Vec::new(),
            content: scan::clean(text).to_string(),
            reasoning: Vec::new(),
            warnings: Vec::new(),
            cut_any: false,
            unknown: Vec::new(),
        },
    };
    out.format = Format::None;
    out.warnings.splice(0..0, stray);
    out
}

/// Resolves, types and cuts out what a parser found.
fn finish(parsed: Parsed, text: &str, trailing_only: bool, ctx: &mut Ctx) -> Outcome {
    let Parsed {
        format,
        mut found,
        remove,
        reasoning,
        mut warnings,
    } = parsed;
    found.sort_by_key(|f| f.span.start);
    if trailing_only {
        keep_trailing(&mut found, text, ctx);
    } else {
        keep_standing_bare(&mut found, text, ctx, &mut warnings);
    }
    let tools: &[ToolSpec] = ctx.tools;
    let mut calls = Vec::new();
    let mut unknown = Vec::new();
    let mut cuts: Vec<Range<usize>> = Vec::new();
    for f in found {
        let Found {
            name,
            args,
            span,
            unclosed,
            weak,
            ..
        } = f;
        let Some((index, exact)) = schema::resolve(tools, &name) else {
            if !weak {
                warnings.push(format!(
                    "dropped a call to {name:?}: no such tool is offered ({})",
                    offered(tools)
                ));
                unknown.push(name);
                cuts.push(span);
            }
            continue;
        };
        let tool = &tools[index];
        if weak && !schema::all_parameters(tool, &args) {
            continue;
        }
        if !exact {
            warnings.push(format!("read the tool name {name:?} as {}", tool.name));
        }
        match schema::type_args(tool, args, ctx, &mut warnings) {
            Ok(arguments) => {
                if unclosed {
                    warnings.push(format!(
                        "the call to {} is not closed; its arguments are complete, so it was taken",
                        tool.name
                    ));
                }
                calls.push(Call {
                    name: tool.name.clone(),
                    arguments,
                    unclosed,
                });
            }
            Err(why) => warnings.push(format!("dropped the call to {}: {why}", tool.name)),
        }
        cuts.push(span);
    }
    let cut_any = !cuts.is_empty();
    cuts.extend(remove);
    let rest = scan::cut(text, &cuts, ctx);
    let reasoning = reasoning
        .into_iter()
        .filter_map(|r| text.get(r))
        .map(|r| r.trim().to_string())
        .filter(|r| !r.is_empty())
        .collect();
    Outcome {
        format,
        calls,
        content: scan::clean(&rest).to_string(),
        reasoning,
        warnings,
        cut_any,
        unknown,
    }
}

/// Drops the bare calls (no marker: a JSON object, fenced or not, or a Python list) that do not stand
/// where a call stands. A bare call stands where a call does when either
/// - it ends the reply: nothing but whitespace, end-of-turn tokens or further calls follows it (fenced or
///   not, with any prose before it: a model says what it will do, then calls); or
/// - it is a block of its own, unfenced: nothing but whitespace between it and the line breaks before and
///   after it (servers leak calls this way with a sentence after them).
///
/// So a call in a Markdown code fence with more text after it, or one inside a sentence that goes on, is an
/// example in an explanation, not a call.
fn keep_standing_bare(
    found: &mut Vec<Found>,
    text: &str,
    ctx: &mut Ctx,
    warnings: &mut Vec<String>,
) {
    if !found.iter().any(|f| f.bare) {
        return;
    }
    let first_trailing = first_trailing(found, text, ctx);
    let leading = leading_fenced(found, text);
    let mut lines = Lines::new(text, ctx);
    let mut i = 0;
    found.retain(|f| {
        let keep =
            !f.bare || i < leading || i >= first_trailing || own_block(&mut lines, &f.span, ctx);
        i += 1;
        if !keep && !f.weak && schema::resolve(ctx.tools, &f.name).is_some() {
            warnings.push(format!(
                "not taken: a JSON call to {} with text after it reads as an example, not a call",
                f.name
            ));
        }
        keep
    });
}

/// How many calls open the text as a run of fenced blocks: before the first, and between each and the next,
/// nothing but whitespace and Markdown headings. Qwen2.5-Coder 1.5B answers with a plan this way (up to six
/// fenced calls, then a sentence about what they will do); the sentence after them is no explanation the
/// calls are examples in, which needs prose before a call. (The loop runs a plan's calls only up to the
/// first that changes files.)
fn leading_fenced(found: &[Found], text: &str) -> usize {
    let mut from = 0;
    let mut n = 0;
    for f in found {
        let gap = text.get(from..f.span.start).unwrap_or("x");
        if !f.bare || !scan::at(text, f.span.start, "```") || !only_headings(gap) {
            break;
        }
        n += 1;
        from = f.span.end;
    }
    n
}

/// The most bytes of markup and whitespace looked at around a call on its line: more than this is no
/// call standing on its own line, and a bound keeps a line of many calls linear.
const AROUND_MAX: usize = 4096;

/// The lines of a text, found once: a call's line is looked up rather than searched for, so ten thousand
/// calls on one 4 MB line cost no more than calls on lines of their own.
struct Lines<'t> {
    text: &'t str,
    /// The positions of the line breaks, in order.
    breaks: Vec<usize>,
    /// The last line whose last byte other than spaces, tabs and `\r` was looked up: `(its end, that byte)`.
    last_solid: Option<(usize, Option<u8>)>,
}

impl<'t> Lines<'t> {
    fn new(text: &'t str, ctx: &mut Ctx) -> Self {
        ctx.charge(text.len());
        Lines {
            text,
            breaks: text
                .bytes()
                .enumerate()
                .filter_map(|(i, b)| (b == b'\n').then_some(i))
                .collect(),
            last_solid: None,
        }
    }

    /// The start of the line that holds byte `i`.
    fn start_of(&self, i: usize) -> usize {
        match self.breaks.partition_point(|&b| b < i) {
            0 => 0,
            k => self.breaks[k - 1] + 1,
        }
    }

    /// The end of the line that holds byte `i` (its line break, or the end of the text).
    fn end_of(&self, i: usize) -> usize {
        let k = self.breaks.partition_point(|&b| b < i);
        self.breaks.get(k).copied().unwrap_or(self.text.len())
    }

    /// The last byte of the line ending at `line_end` that is not a space, a tab or `\r`; looked up once
    /// per line, since the calls come in order.
    fn last_solid(&mut self, line_end: usize, ctx: &mut Ctx) -> Option<u8> {
        if let Some((end, last)) = self.last_solid {
            if end == line_end {
                return last;
            }
        }
        let line = &self.text.as_bytes()[self.start_of(line_end)..line_end];
        let last = line
            .iter()
            .rev()
            .position(|b| !matches!(b, b' ' | b'\t' | b'\r'))
            .map(|k| line[line.len() - 1 - k]);
        ctx.charge(line.len().min(AROUND_MAX) + 1);
        self.last_solid = Some((line_end, last));
        last
    }
}

/// Whether `span` is unfenced and alone on its lines: around it on its lines only spaces, tabs and markup
/// tags (`<tool_response>{…}</tool_response>`, which a small model writes for a call). Each look is charged
/// and bounded, so a text of many calls on one line stays linear.
fn own_block(lines: &mut Lines<'_>, span: &Range<usize>, ctx: &mut Ctx) -> bool {
    let text = lines.text;
    if scan::at(text, span.start, "```") {
        return false;
    }
    let start = span.start.min(text.len());
    let end = span.end.clamp(start, text.len());
    if !text.is_char_boundary(start) || !text.is_char_boundary(end) {
        return false;
    }
    let line_start = lines.start_of(start);
    let line_end = lines.end_of(end);
    // `{{"name": …}}}}`: Qwen2.5-Coder 1.5B doubles the braces around a bare call (a format string's
    // escape); the extra braces are no prose either.
    let before = text[line_start..start].trim_end().trim_end_matches('{');
    let after = &text[end..line_end];
    ctx.charge(before.len().min(AROUND_MAX) + after.len().min(AROUND_MAX) + 2);
    // `{"name": …, "arguments": {…}}, "required": []}}`: a brace closed too early leaves the rest of the
    // object behind the call. That is no prose around an example, so the call still stands on its line.
    // (When `after` holds a byte that is not blank, the line's last such byte is in it.)
    let first = after.bytes().find(|b| !matches!(b, b' ' | b'\t' | b'\r'));
    let junk = matches!(first, Some(b',' | b'}' | b']'))
        && matches!(lines.last_solid(line_end, ctx), Some(b'}' | b']'));
    let tags = |s: &str| s.len() <= AROUND_MAX && only_tags(s);
    tags(before) && (junk || tags(after))
}

/// Whether every line of `s` is blank or a Markdown heading.
fn only_headings(s: &str) -> bool {
    s.lines().all(|l| {
        let l = l.trim();
        l.is_empty() || l.starts_with('#')
    })
}

/// Whether `s` holds nothing but whitespace and markup tags (`<tools>`, `</tool_response>`).
fn only_tags(s: &str) -> bool {
    let mut rest = s.trim();
    while !rest.is_empty() {
        let Some(len) = scan::markup_tag(rest) else {
            return false;
        };
        rest = rest[len..].trim_start();
    }
    true
}

/// The index of the first call of the run that ends the text: after each call of it, nothing but whitespace,
/// end-of-turn tokens or further calls of the run (`found.len()` when the text does not end with a call).
fn first_trailing(found: &[Found], text: &str, ctx: &mut Ctx) -> usize {
    let mut boundary = text.len();
    let mut first = found.len();
    for i in (0..found.len()).rev() {
        let span = &found[i].span;
        let gap = text
            .get(span.end.min(boundary)..boundary)
            .unwrap_or_default();
        let gap = gap.trim_matches(|c: char| c == '{' || c == '}' || c.is_whitespace());
        // Markdown headings between two calls of the run (`### Tools Call`, written by Qwen2.5-Coder 1.5B
        // above each of its planned calls) label the calls; they are no prose that makes them examples.
        let between = boundary < text.len();
        if span.end >= boundary || scan::is_blank(gap, ctx) || (between && only_headings(gap)) {
            first = i;
            boundary = boundary.min(span.start);
        } else {
            break;
        }
    }
    first
}

/// Keeps only the calls that end the text: after each, nothing but whitespace, end-of-turn tokens or
/// further kept calls.
fn keep_trailing(found: &mut Vec<Found>, text: &str, ctx: &mut Ctx) {
    let first_kept = first_trailing(found, text, ctx);
    found.drain(..first_kept);
}

fn offered(tools: &[ToolSpec]) -> String {
    if tools.is_empty() {
        return "no tools are offered".to_string();
    }
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    format!("offered: {}", names.join(", "))
}
