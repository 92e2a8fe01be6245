//! Apertus: `<|tools_prefix|>[{"NAME": {…}}, …]<|tools_suffix|>`, the tool's name as the JSON key.
//! Reasoning (`<|inner_prefix|>…<|inner_suffix|>`) is split off before, with the other reasoning blocks.

use serde_json::Value;

use super::literal::{self, Syntax};
use super::scan::{self, Ctx, Finder};
use super::{Args, Format, Parsed};

const PREFIX: &str = "<|tools_prefix|>";
const SUFFIX: &str = "<|tools_suffix|>";

pub(crate) fn parse(text: &str, ctx: &mut Ctx) -> Parsed {
    let mut out = Parsed::new(Format::Apertus);
    let mut opens = Finder::new(PREFIX);
    let mut closes = Finder::new(SUFFIX);
    let mut pos = 0;
    while let Some(start) = opens.next(text, pos, ctx) {
        let body = start + PREFIX.len();
        pos = body;
        let next = opens.next(text, body, ctx);
        let close = closes
            .next(text, body, ctx)
            .filter(|c| next.is_none_or(|n| *c < n));
        let region_end = close.or(next).unwrap_or(text.len());
        let i = scan::skip_ws(text, body, ctx);
        let lit = match literal::read(&text[..region_end], i, Syntax::JSON, ctx) {
            Ok(lit) => lit,
            Err(f) if f.eof && close.is_none() => {
                out.warnings
                    .push("an Apertus tool call is cut off".to_string());
                continue;
            }
            Err(_) => {
                out.warnings
                    .push("the Apertus tool calls are not JSON".to_string());
                continue;
            }
        };
        let end = close.map_or(lit.end, |c| c + SUFFIX.len());
        pos = end;
        let items: Vec<&Value> = match &lit.value {
            Value::Array(a) => a.iter().collect(),
            v @ Value::Object(_) => vec![v],
            _ => Vec::new(),
        };
        for item in items {
            // One key per call: the name; its value the arguments.
            let Some(obj) = item.as_object().filter(|o| o.len() == 1) else {
                continue;
            };
            for (name, args) in obj {
                out.call(
                    name.clone(),
                    Args::Json(args.clone()),
                    start..end,
                    close.is_none(),
                );
            }
        }
    }
    out
}
