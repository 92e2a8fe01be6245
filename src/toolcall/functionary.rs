//! Functionary v3.1: `<function=NAME>{…}</function>`, the same opening tag as Qwen3-Coder's but with JSON
//! arguments instead of `<parameter=…>` tags; the detector tells them apart by the `{`.

use super::literal::{self, Syntax};
use super::scan::{self, Ctx, Finder};
use super::{Args, Format, Parsed};

const OPEN: &str = "<function=";
const CLOSE: &str = "</function>";

pub(crate) fn parse(text: &str, ctx: &mut Ctx) -> Parsed {
    let mut out = Parsed::new(Format::FunctionaryV31);
    let mut opens = Finder::new(OPEN);
    let mut pos = 0;
    while let Some(start) = opens.next(text, pos, ctx) {
        let name_start = start + OPEN.len();
        pos = name_start;
        let Some(name_end) = scan::name_end(text, name_start, 128, ctx) else {
            continue;
        };
        if text.as_bytes().get(name_end) != Some(&b'>') {
            continue;
        }
        let name = &text[name_start..name_end];
        let i = scan::skip_ws(text, name_end + 1, ctx);
        if text.as_bytes().get(i) != Some(&b'{') {
            continue;
        }
        let region_end = opens.next(text, i, ctx).unwrap_or(text.len());
        match literal::read(&text[..region_end], i, Syntax::JSON, ctx) {
            Ok(lit) => {
                let after = scan::skip_ws(text, lit.end, ctx);
                let closed = scan::at(text, after, CLOSE);
                let end = if closed { after + CLOSE.len() } else { lit.end };
                pos = end;
                out.call(name.to_string(), Args::Json(lit.value), start..end, !closed);
            }
            Err(f) if f.eof => out.cut_off(name),
            Err(_) => out
                .warnings
                .push(format!("the arguments of the call to {name} are not JSON")),
        }
    }
    out
}
