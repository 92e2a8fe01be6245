//! The syntax learned from the server's chat template (`learn`), as one more recovery format: where
//! vouch has no parser of its own for a template's calls, the delimiters learned from renders read them.

use super::learn::parse::{self as learned_parse, RawArgs};
use super::scan::Ctx;
use super::{Arg, Args, Format, Parsed};

/// The calls written in the learned syntax, if recovery was given one.
pub(crate) fn parse(text: &str, ctx: &mut Ctx) -> Parsed {
    let mut out = Parsed::new(Format::Learned);
    let Some(learned) = ctx.learned else {
        return out;
    };
    // The learned parser walks forward through the text once per delimiter.
    ctx.charge(text.len());
    for call in learned_parse::spans(learned, text) {
        let args = match call.args {
            RawArgs::Json(v) => Args::Json(v),
            RawArgs::Pairs(pairs) => {
                Args::Pairs(pairs.into_iter().map(|(k, v)| (k, Arg::Raw(v))).collect())
            }
        };
        out.call(call.name, args, call.span, call.unclosed);
    }
    out
}

/// Where the learned syntax's opening delimiter first occurs in `text`, when recovery was given a syntax
/// that none of vouch's own parsers reads.
pub(crate) fn first_open(text: &str, ctx: &mut Ctx) -> Option<usize> {
    let learned = ctx.learned.filter(|l| l.known_format.is_none())?;
    if learned.open.trim().is_empty() {
        return None;
    }
    ctx.charge(text.len());
    learned_parse::find(text, 0, &learned.open).map(|(start, _)| start)
}
