//! Functionary v3.2: each message after `>>>RECIPIENT\n`; the generation prompt already ends with `>>>`,
//! so the first recipient of a reply comes without it. `all` is plain text for the user; `python` holds
//! raw code (a call to a `python` tool with `{"code": …}`); any other recipient is a tool with JSON
//! arguments: `read_file\n{"path": "a"}>>>all\nDone.`.
//!
//! A reply that starts with `NAME\n{` is read as such only when NAME is an offered tool (or `python`); after
//! a `>>>`, any name is a recipient.

use serde_json::json;

use super::literal::{self, Syntax};
use super::scan::{self, Ctx, Finder};
use super::{schema, Args, Format, Parsed};

const MARK: &str = ">>>";

/// The recipient at `i`: a name ending at a newline. Its end and the start of the message.
fn recipient(text: &str, i: usize, ctx: &mut Ctx) -> Option<(usize, usize)> {
    let end = scan::name_end(text, i, 128, ctx)?;
    if end == i {
        return None;
    }
    let b = text.as_bytes();
    let mut j = end;
    while j < b.len() && (b[j] == b' ' || b[j] == b'\t' || b[j] == b'\r') {
        j += 1;
    }
    (b.get(j) == Some(&b'\n')).then_some((end, j + 1))
}

/// Whether the reply starts with a recipient line that names a tool (the `>>>` was in the prompt).
pub(crate) fn starts_with_call(text: &str, ctx: &mut Ctx) -> bool {
    let i = scan::skip_ws(text, 0, ctx);
    let Some((end, body)) = recipient(text, i, ctx) else {
        return false;
    };
    let name = &text[i..end];
    let json = text.as_bytes().get(scan::skip_ws(text, body, ctx)) == Some(&b'{');
    name == "python" || (json && schema::resolve(ctx.tools, name).is_some())
}

pub(crate) fn parse(text: &str, ctx: &mut Ctx) -> Parsed {
    let mut out = Parsed::new(Format::FunctionaryV32);
    let mut marks = Finder::new(MARK);
    // Message starts: (where its header starts, where the recipient name starts).
    let mut heads: Vec<(usize, usize)> = Vec::new();
    if starts_with_call(text, ctx) {
        let i = scan::skip_ws(text, 0, ctx);
        heads.push((i, i));
    }
    let mut pos = 0;
    while let Some(m) = marks.next(text, pos, ctx) {
        heads.push((m, m + MARK.len()));
        pos = m + MARK.len();
    }
    for (k, &(head, name_start)) in heads.iter().enumerate() {
        let region_end = heads.get(k + 1).map_or(text.len(), |h| h.0);
        let Some((name_end, body)) = recipient(&text[..region_end], name_start, ctx) else {
            continue;
        };
        let name = &text[name_start..name_end];
        if name == "all" {
            // Plain text: only its header goes.
            out.remove.push(head..body);
            continue;
        }
        if name == "python" {
            let code = text[body..region_end].trim_end();
            out.call(
                name.to_string(),
                Args::Json(json!({ "code": code })),
                head..region_end,
                false,
            );
            continue;
        }
        let i = scan::skip_ws(text, body, ctx);
        if text.as_bytes().get(i) != Some(&b'{') {
            continue;
        }
        match literal::read(&text[..region_end], i, Syntax::JSON, ctx) {
            Ok(lit) => out.call(
                name.to_string(),
                Args::Json(lit.value),
                head..lit.end,
                false,
            ),
            Err(f) if f.eof => out.cut_off(name),
            Err(_) => out
                .warnings
                .push(format!("the arguments of the call to {name} are not JSON")),
        }
    }
    out
}
