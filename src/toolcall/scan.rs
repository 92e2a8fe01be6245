//! Scanning primitives shared by the parsers, and the work counter that keeps recovery linear.
//!
//! A reply can be long and hostile (a model looping on `<tool_call>` ten thousand times), and recovery
//! runs on every turn, so every parser must stay linear. Two rules make that hold: marker searches go
//! through [`Finder`], which remembers its last hit so a parser walking forward never searches the same
//! bytes twice; and speculative scans (a `{` that might start a call) stop once the budget, a fixed
//! multiple of the input length, is spent. Every byte looked at is charged to [`Ctx`]; the tests assert on
//! that count rather than on time, so they are not flaky on a busy machine.

use std::ops::Range;

use super::learn::Learned;
use super::schema::ToolSpec;

/// The tools on offer and the work done so far.
pub(crate) struct Ctx<'a> {
    pub tools: &'a [ToolSpec],
    /// The syntax learned from the chat template, when recovery was given one.
    pub learned: Option<&'a Learned>,
    steps: u64,
    budget: u64,
    exhausted: bool,
}

impl<'a> Ctx<'a> {
    pub(crate) fn new(tools: &'a [ToolSpec], input_len: usize) -> Self {
        Ctx {
            tools,
            learned: None,
            steps: 0,
            budget: 16 * input_len as u64 + 65_536,
            exhausted: false,
        }
    }

    pub(crate) fn charge(&mut self, bytes: usize) {
        self.steps += bytes as u64;
    }

    pub(crate) fn steps(&self) -> u64 {
        self.steps
    }

    /// Whether a speculative scan may start; false for good once the budget is spent.
    pub(crate) fn may_speculate(&mut self) -> bool {
        if self.steps > self.budget {
            self.exhausted = true;
        }
        !self.exhausted
    }

    pub(crate) fn exhausted(&self) -> bool {
        self.exhausted
    }
}

/// Finds one marker in one text, front to back, without searching any byte twice.
pub(crate) struct Finder {
    needle: &'static str,
    /// The last search started at `from` and found `hit`.
    from: usize,
    hit: Option<usize>,
    searched: bool,
}

impl Finder {
    pub(crate) fn new(needle: &'static str) -> Self {
        Finder {
            needle,
            from: 0,
            hit: None,
            searched: false,
        }
    }

    /// The first occurrence at or after `pos`.
    pub(crate) fn next(&mut self, text: &str, pos: usize, ctx: &mut Ctx) -> Option<usize> {
        if self.searched && pos >= self.from {
            match self.hit {
                None => return None,
                Some(h) if h >= pos => return Some(h),
                Some(_) => {}
            }
        }
        let found = text
            .get(pos..)
            .and_then(|rest| rest.find(self.needle))
            .map(|i| i + pos);
        ctx.charge(match found {
            Some(h) => h - pos + self.needle.len(),
            None => text.len().saturating_sub(pos),
        });
        self.from = pos;
        self.hit = found;
        self.searched = true;
        found
    }

    pub(crate) fn len(&self) -> usize {
        self.needle.len()
    }
}

/// Which of several markers comes first at or after `pos`, and where: `(index, position)`.
pub(crate) fn first_of(
    finders: &mut [Finder],
    text: &str,
    pos: usize,
    ctx: &mut Ctx,
) -> Option<(usize, usize)> {
    let mut best: Option<(usize, usize)> = None;
    for (k, f) in finders.iter_mut().enumerate() {
        if let Some(at) = f.next(text, pos, ctx) {
            if best.is_none_or(|(_, b)| at < b) {
                best = Some((k, at));
            }
        }
    }
    best
}

/// Whether `s` occurs at byte `i`.
pub(crate) fn at(text: &str, i: usize, s: &str) -> bool {
    text.as_bytes()
        .get(i..)
        .is_some_and(|rest| rest.starts_with(s.as_bytes()))
}

/// Whether the text before byte `i` ends with `s`.
pub(crate) fn ends_at(text: &str, i: usize, s: &str) -> bool {
    text.as_bytes()
        .get(..i)
        .is_some_and(|head| head.ends_with(s.as_bytes()))
}

/// The first byte at or after `i` that is not ASCII whitespace.
pub(crate) fn skip_ws(text: &str, i: usize, ctx: &mut Ctx) -> usize {
    let b = text.as_bytes();
    let mut j = i;
    while j < b.len() && b[j].is_ascii_whitespace() {
        j += 1;
    }
    ctx.charge(j.saturating_sub(i) + 1);
    j
}

/// The start of the run of ASCII whitespace that ends at byte `i`.
pub(crate) fn rskip_ws(text: &str, i: usize, ctx: &mut Ctx) -> usize {
    let b = text.as_bytes();
    let mut j = i.min(b.len());
    while j > 0 && b[j - 1].is_ascii_whitespace() {
        j -= 1;
    }
    ctx.charge(i.saturating_sub(j) + 1);
    j
}

/// A byte that may appear in a tool name as models write it.
pub(crate) fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b':' | b'/')
}

/// The length of the markup tag `s` starts with (`<tools>`, `</tool_response>`, `<|im_end|>`), if it
/// starts with one: a name of ASCII letters, digits, `_`, `-`, `:` and `|` between `<` or `</` and `>`.
pub(crate) fn markup_tag(s: &str) -> Option<usize> {
    let open = if s.starts_with("</") { 2 } else { 1 };
    if !s.starts_with('<') {
        return None;
    }
    let rest = &s[open..];
    let close = rest.find('>')?;
    let tag = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | ':' | '|');
    (close > 0 && rest[..close].chars().all(tag)).then_some(open + close + 1)
}

/// The end of the run of name bytes starting at `i`, if it is 1 to `max` bytes long.
pub(crate) fn name_end(text: &str, i: usize, max: usize, ctx: &mut Ctx) -> Option<usize> {
    let b = text.as_bytes();
    let mut j = i;
    while j < b.len() && j - i <= max && is_name_byte(b[j]) {
        j += 1;
    }
    ctx.charge(j - i + 1);
    (j > i && j - i <= max).then_some(j)
}

/// The position of the first byte in `text[i..limit]` (at most `max` bytes) that satisfies `pred`.
pub(crate) fn find_byte(
    text: &str,
    i: usize,
    max: usize,
    ctx: &mut Ctx,
    pred: impl Fn(u8) -> bool,
) -> Option<usize> {
    let b = text.as_bytes();
    let end = b.len().min(i.saturating_add(max));
    let found = b.get(i..end)?.iter().position(|&c| pred(c));
    ctx.charge(found.map_or(end - i, |k| k + 1));
    found.map(|k| i + k)
}

/// Widens `span` over whitespace and any of the tokens, on each side, as long as one follows.
/// Whitespace alone is not taken, so the text around a call keeps its line breaks.
pub(crate) fn widen(
    text: &str,
    span: Range<usize>,
    before: &[&str],
    after: &[&str],
    ctx: &mut Ctx,
) -> Range<usize> {
    let mut start = span.start;
    loop {
        let j = rskip_ws(text, start, ctx);
        match before.iter().find(|t| ends_at(text, j, t)) {
            Some(t) => start = j - t.len(),
            None => break,
        }
    }
    let mut end = span.end;
    loop {
        let j = skip_ws(text, end, ctx);
        match after.iter().find(|t| at(text, j, t)) {
            Some(t) => end = j + t.len(),
            None => break,
        }
    }
    start..end
}

/// A value without the one newline that XML-style formats put after the opening and before the closing tag.
pub(crate) fn strip_newlines(value: &str) -> &str {
    let v = value
        .strip_prefix("\r\n")
        .or_else(|| value.strip_prefix('\n'))
        .unwrap_or(value);
    v.strip_suffix("\r\n")
        .or_else(|| v.strip_suffix('\n'))
        .unwrap_or(v)
}

/// Tokens that end a turn and mean nothing once the calls are taken out.
const END_TOKENS: [&str; 12] = [
    "<|im_end|>",
    "<|eot_id|>",
    "<|eom_id|>",
    "<|end|>",
    "<|return|>",
    "<|call|>",
    "<|endoftext|>",
    "</s>",
    "<end_of_turn>",
    "<｜end▁of▁sentence｜>",
    "<|END_RESPONSE|>",
    "<|python_end|>",
];

/// The text trimmed, without end-of-turn tokens at its end.
pub(crate) fn clean(text: &str) -> &str {
    let mut t = text.trim();
    while let Some(token) = END_TOKENS.iter().find(|tok| t.ends_with(*tok)) {
        t = t[..t.len() - token.len()].trim_end();
    }
    t
}

/// Whether a text is empty once whitespace and end-of-turn tokens are gone.
pub(crate) fn is_blank(text: &str, ctx: &mut Ctx) -> bool {
    ctx.charge(text.len());
    clean(text).is_empty()
}

/// `text` without the given ranges (which may overlap and come in any order).
pub(crate) fn cut(text: &str, ranges: &[Range<usize>], ctx: &mut Ctx) -> String {
    let mut sorted: Vec<Range<usize>> =
        ranges.iter().filter(|r| r.start < r.end).cloned().collect();
    sorted.sort_by_key(|r| r.start);
    let mut out = String::with_capacity(text.len());
    let mut pos = 0;
    for r in sorted {
        if r.start > pos {
            out.push_str(text.get(pos..r.start).unwrap_or_default());
        }
        pos = pos.max(r.end.min(text.len()));
    }
    out.push_str(text.get(pos..).unwrap_or_default());
    ctx.charge(text.len());
    out
}
