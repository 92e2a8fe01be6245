//! Splitting reasoning off the answer text before looking for calls.
//!
//! A call quoted inside `<think>…</think>` is the model thinking about a call, not making one (verl #4757),
//! so parsers see only the answer. Reasoning blocks come in several spellings; a close tag with no open tag
//! before it means the template opened the block in the prompt (Qwen3 and others with forced thinking), so
//! everything before it is reasoning. An open tag that is never closed runs to the end (a reply cut off
//! mid-thought). Harmony's analysis channel is handled by its parser, because channels are its structure.

use super::scan::Ctx;

/// Open and close tags of reasoning blocks.
const BLOCKS: [(&str, &str); 8] = [
    ("<think>", "</think>"),
    ("<seed:think>", "</seed:think>"),
    ("<thinking>", "</thinking>"),
    ("[THINK]", "[/THINK]"),
    ("<|START_THINKING|>", "<|END_THINKING|>"),
    ("<|channel>thought", "<channel|>"),
    ("<|inner_prefix|>", "<|inner_suffix|>"),
    // Solar Open. `<|end|>` closes every message of its template (and Phi's answers): alone, it is not
    // the end of a reasoning block.
    ("<|think|>", "<|end|>"),
];

/// Close tags that end a reasoning block only after its open tag.
const CLOSE_NEEDS_OPEN: [&str; 1] = ["<|end|>"];

/// The answer text (reasoning cut out) and the reasoning blocks, trimmed, in order.
#[derive(Debug, Default)]
pub(crate) struct Split {
    pub answer: String,
    pub reasoning: Vec<String>,
}

enum Tag {
    Open(usize),
    Close(usize),
}

fn tag_at(text: &str, i: usize) -> Option<Tag> {
    let rest = text.as_bytes().get(i..)?;
    BLOCKS.iter().enumerate().find_map(|(k, (open, close))| {
        if rest.starts_with(open.as_bytes()) {
            Some(Tag::Open(k))
        } else if rest.starts_with(close.as_bytes()) && !CLOSE_NEEDS_OPEN.contains(close) {
            Some(Tag::Close(k))
        } else {
            None
        }
    })
}

pub(crate) fn split(text: &str, ctx: &mut Ctx) -> Split {
    let b = text.as_bytes();
    let mut out = Split::default();
    let mut keep_from = 0;
    let mut i = 0;
    let mut seen_tag = false;
    let push = |out: &mut Split, s: &str| {
        let s = s.trim();
        if !s.is_empty() {
            out.reasoning.push(s.to_string());
        }
    };
    while i < b.len() {
        let Some(k) = b[i..].iter().position(|&c| c == b'<' || c == b'[') else {
            break;
        };
        let p = i + k;
        match tag_at(text, p) {
            Some(Tag::Open(t)) => {
                out.answer.push_str(&text[keep_from..p]);
                let (open, close) = BLOCKS[t];
                let body = p + open.len();
                match text[body..].find(close) {
                    Some(c) => {
                        push(&mut out, &text[body..body + c]);
                        i = body + c + close.len();
                    }
                    None => {
                        push(&mut out, &text[body..]);
                        i = b.len();
                    }
                }
                keep_from = i;
                seen_tag = true;
            }
            Some(Tag::Close(t)) => {
                if seen_tag {
                    // A stray close tag: drop the tag, keep the text.
                    out.answer.push_str(&text[keep_from..p]);
                } else {
                    push(&mut out, &text[..p]);
                }
                i = p + BLOCKS[t].1.len();
                keep_from = i;
                seen_tag = true;
            }
            None => i = p + 1,
        }
    }
    out.answer.push_str(&text[keep_from.min(b.len())..]);
    ctx.charge(b.len() + 1);
    out
}
