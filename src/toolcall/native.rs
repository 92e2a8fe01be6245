//! Native `tool_calls`: the server parsed the call, but its arguments string may still be broken.
//!
//! Arguments are repaired only when the repair has one reading: single quotes, trailing commas, raw
//! newlines in strings, Python constants, and an object double-encoded as a JSON string. Anything else
//! drops the call with a warning, so the agent can tell the model instead of guessing.

use serde_json::Value;

use super::literal::{self, Syntax};
use super::scan::Ctx;
use super::{Args, Format, NativeCall, Parsed};

pub(crate) fn parse(calls: &[NativeCall], ctx: &mut Ctx) -> Parsed {
    let mut out = Parsed::new(Format::Native);
    for call in calls {
        let raw = call.arguments.trim();
        ctx.charge(raw.len() + call.name.len());
        let value = if raw.is_empty() {
            Value::Object(Default::default())
        } else if let Ok(v) = serde_json::from_str::<Value>(raw) {
            v
        } else {
            match literal::read_all(raw, Syntax::JSON, ctx) {
                Ok(lit) => {
                    let what = if lit.repairs.is_empty() {
                        "non-standard JSON".to_string()
                    } else {
                        lit.repairs.describe()
                    };
                    out.warnings.push(format!(
                        "repaired the arguments of the call to {}: {what}",
                        call.name
                    ));
                    lit.value
                }
                Err(_) => {
                    out.warnings.push(format!(
                        "dropped the call to {}: its arguments are not JSON: {}",
                        call.name,
                        shorten(raw)
                    ));
                    continue;
                }
            }
        };
        out.call(call.name.clone(), Args::Json(value), 0..0, false);
    }
    out
}

fn shorten(s: &str) -> String {
    match s.char_indices().nth(60) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}
