//! The shapes a call takes when it is written as JSON, shared by every JSON-based format.
//!
//! `{"name", "arguments"}` (Hermes, constrained replies), `{"name", "parameters"}` (Llama 3),
//! `{"tool_name", "parameters"}` (Command R), OpenAI's `{"type": "function", "function": {…}}`, llama.cpp's
//! generic `{"tool_call": {…}}` and `{"tool_calls": […]}`, and a list of any of them.

use serde_json::{Map, Value};

use super::Args;

/// A call read from JSON.
#[derive(Debug)]
pub(crate) struct JsonCall {
    pub name: String,
    pub args: Args,
    /// The object had an arguments key; without one it is only a call if every other key is a parameter.
    pub explicit: bool,
    /// The arguments key was `parameters` (Llama 3's spelling).
    pub parameters_key: bool,
}

/// The calls a JSON value holds, in order.
pub(crate) fn calls(v: &Value) -> Vec<JsonCall> {
    let mut out = Vec::new();
    collect(v, &mut out, 0);
    out
}

fn collect(v: &Value, out: &mut Vec<JsonCall>, depth: u8) {
    if depth > 2 {
        return;
    }
    match v {
        Value::Array(items) => {
            for item in items {
                if item.is_object() {
                    collect(item, out, depth + 1);
                }
            }
        }
        Value::Object(m) => {
            if let Some(inner) = m.get("tool_calls") {
                if inner.is_array() {
                    collect(inner, out, depth + 1);
                }
                return;
            }
            if let Some(inner @ Value::Object(_)) = m.get("tool_call") {
                collect(inner, out, depth + 1);
                return;
            }
            let body = match m.get("function") {
                Some(Value::Object(f)) => f,
                _ => m,
            };
            out.extend(one(body));
        }
        _ => {}
    }
}

fn one(m: &Map<String, Value>) -> Option<JsonCall> {
    let name = ["name", "tool_name", "function"]
        .iter()
        .find_map(|k| m.get(*k).and_then(Value::as_str))?
        .to_string();
    for key in ["arguments", "parameters", "args", "input"] {
        if let Some(a) = m.get(key) {
            return Some(JsonCall {
                name,
                args: Args::Json(a.clone()),
                explicit: true,
                parameters_key: key == "parameters",
            });
        }
    }
    let rest: Map<String, Value> = m
        .iter()
        .filter(|(k, _)| {
            !matches!(
                k.as_str(),
                "name" | "tool_name" | "function" | "type" | "id" | "tool_call_id" | "index"
            )
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    Some(JsonCall {
        name,
        args: Args::Flat(rest),
        explicit: false,
        parameters_key: false,
    })
}
