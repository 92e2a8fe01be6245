//! Tests of tool-call recovery: one file per format family, plus the recovery order (native calls,
//! reasoning, names, schemas) and robustness (no panics, linear work). Every test compares whole results.

mod families;
mod leaks;
mod learned;
mod literal;
mod order;
mod robustness;

use serde_json::{json, Value};

use super::{recover, Format, Message, NativeCall, ToolSpec};
use crate::tools::definitions as agent_tools;

/// vouch's agent tools.
fn agent() -> Vec<ToolSpec> {
    match ToolSpec::from_openai(&agent_tools()) {
        Ok(tools) => tools,
        Err(e) => panic!("agent tools: {e:#}"),
    }
}

/// What recovery makes of a reply whose content is `content`, as JSON.
fn content(content: &str) -> Value {
    recovered(Message {
        content: Some(content),
        ..Message::default()
    })
}

/// The same with a forced format.
fn forced(content: &str, format: Format) -> Value {
    let msg = Message {
        content: Some(content),
        ..Message::default()
    };
    to_json(&recover(&msg, &agent(), Some(format)))
}

fn recovered(msg: Message<'_>) -> Value {
    to_json(&recover(&msg, &agent(), None))
}

fn to_json(r: &super::Recovered) -> Value {
    match serde_json::to_value(r) {
        Ok(v) => v,
        Err(e) => panic!("serialize: {e}"),
    }
}

fn native(name: &str, arguments: &str) -> NativeCall {
    NativeCall {
        name: name.to_string(),
        arguments: arguments.to_string(),
    }
}

/// `{"format": format, "calls": calls, "content": content}`.
fn expect(format: &str, calls: Value, content: &str) -> Value {
    json!({"format": format, "calls": calls, "content": content})
}

/// `expected` with the names of the tools called that are not offered.
fn with_unknown(mut expected: Value, names: &[&str]) -> Value {
    expected["unknown"] = json!(names);
    expected
}

/// [`expect`] with warnings.
fn expect_warned(format: &str, calls: Value, content: &str, warnings: &[&str]) -> Value {
    json!({"format": format, "calls": calls, "content": content, "warnings": warnings})
}
