//! The constrained mode: no `tools` in the request; the tools are described in the system prompt and a
//! JSON-schema `response_format` (one object schema per tool) makes the whole reply one call. Even a 135M
//! model emits a well-formed call this way, and servers whose chat template cannot render tools need it.
//!
//! The history is rewritten to match: earlier calls become the assistant's JSON text, tool results become user
//! messages, so a template without tool support still renders every turn.

use serde::Serialize;
use serde_json::{json, Value};

use super::ChatMessage;
use crate::toolcall::ToolSpec;

/// The `response_format` that makes a reply exactly one call of one of `tools`: a JSON schema whose `oneOf`
/// holds one `{"name": {"const": TOOL}, "arguments": PARAMETERS}` object per tool.
///
/// Typed rather than a `serde_json::Value` so that `name` is sent before `arguments`: llama.cpp turns the
/// schema into a grammar in the order the properties arrive, and a model should pick the tool first.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ResponseFormat {
    #[serde(rename = "type")]
    kind: &'static str,
    json_schema: JsonSchema,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
struct JsonSchema {
    name: &'static str,
    schema: OneOf,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
struct OneOf {
    #[serde(rename = "oneOf")]
    one_of: Vec<CallSchema>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
struct CallSchema {
    #[serde(rename = "type")]
    kind: &'static str,
    properties: CallProperties,
    required: [&'static str; 2],
}

#[derive(Clone, Debug, PartialEq, Serialize)]
struct CallProperties {
    name: Const,
    arguments: Value,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
struct Const {
    #[serde(rename = "const")]
    value: String,
}

pub fn response_format(tools: &[ToolSpec]) -> ResponseFormat {
    ResponseFormat {
        kind: "json_schema",
        json_schema: JsonSchema {
            name: "tool_call",
            schema: OneOf {
                one_of: tools
                    .iter()
                    .map(|t| CallSchema {
                        kind: "object",
                        properties: CallProperties {
                            name: Const {
                                value: t.name.clone(),
                            },
                            arguments: t.parameters.clone(),
                        },
                        required: ["name", "arguments"],
                    })
                    .collect(),
            },
        },
    }
}

/// Reads a constrained reply: one JSON object `{"name", "arguments"}` naming an offered tool, in either
/// key order. `None` when the reply is anything else (the caller then tries general recovery).
pub(crate) fn parse_call(content: &str, tools: &[ToolSpec]) -> Option<(String, Value)> {
    let v: Value = serde_json::from_str(content.trim()).ok()?;
    let name = v.get("name")?.as_str()?;
    let tool = tools.iter().find(|t| t.name == name)?;
    let arguments = match v.get("arguments")? {
        Value::String(s) => serde_json::from_str(s).ok()?,
        other => other.clone(),
    };
    arguments
        .is_object()
        .then(|| (tool.name.clone(), arguments))
}

/// The system prompt's tool section: each tool's name, description and parameters, and the reply shape.
pub(crate) fn tools_prompt(defs: &[Value]) -> String {
    let mut s = String::from(
        "You act by calling tools. Reply with exactly one JSON object and nothing else: \
         {\"name\": <tool name>, \"arguments\": {<the tool's arguments>}}. \
         The result comes back in the next message. The tools:\n",
    );
    for def in defs {
        let f = def.get("function").unwrap_or(def);
        let name = f.get("name").and_then(Value::as_str).unwrap_or_default();
        let description = f
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let parameters = f.get("parameters").cloned().unwrap_or(json!({}));
        s.push_str(&format!(
            "- {name}: {description} Arguments (JSON schema): {parameters}\n"
        ));
    }
    s
}

/// The conversation in wire form for the constrained mode.
pub(crate) fn messages(history: &[ChatMessage], defs: &[Value]) -> Vec<Value> {
    let prompt = tools_prompt(defs);
    let mut out = Vec::with_capacity(history.len() + 1);
    let mut has_system = false;
    for m in history {
        out.push(match m {
            ChatMessage::System { content } if !has_system => {
                has_system = true;
                json!({"role": "system", "content": format!("{content}\n\n{prompt}")})
            }
            ChatMessage::Assistant {
                content,
                tool_calls,
            } if !tool_calls.is_empty() => {
                let calls: Vec<String> = tool_calls
                    .iter()
                    .map(|c| {
                        format!(
                            r#"{{"name": {}, "arguments": {}}}"#,
                            json!(c.name),
                            c.arguments
                        )
                    })
                    .collect();
                let text = if content.trim().is_empty() {
                    calls.join("\n")
                } else {
                    format!("{content}\n{}", calls.join("\n"))
                };
                json!({"role": "assistant", "content": text})
            }
            ChatMessage::Tool { name, content, .. } => {
                json!({"role": "user", "content": format!("Result of {name}:\n{content}")})
            }
            other => other.to_openai(),
        });
    }
    if !has_system {
        out.insert(0, json!({"role": "system", "content": prompt}));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ToolCall;

    #[test]
    fn the_schema_names_the_tool_before_its_arguments() {
        let tools = vec![ToolSpec {
            name: "ls".into(),
            parameters: json!({"type": "object"}),
        }];
        assert_eq!(
            serde_json::to_string(&response_format(&tools)).unwrap(),
            r#"{"type":"json_schema","json_schema":{"name":"tool_call","schema":{"oneOf":[{"type":"object","properties":{"name":{"const":"ls"},"arguments":{"type":"object"}},"required":["name","arguments"]}]}}}"#
        );
        assert_eq!(
            parse_call(
                "{\n \"arguments\": {\"a\": 1},\n \"name\": \"ls\"\n}",
                &tools
            ),
            Some(("ls".into(), json!({"a": 1})))
        );
        assert_eq!(
            parse_call(r#"{"name": "rm", "arguments": {}}"#, &tools),
            None
        );
    }

    #[test]
    fn history_renders_without_tool_roles() {
        let defs = vec![
            json!({"type": "function", "function": {"name": "ls", "description": "List.", "parameters": {"type": "object"}}}),
        ];
        let out = messages(
            &[
                ChatMessage::user("go"),
                ChatMessage::assistant(
                    "",
                    vec![ToolCall {
                        id: "1".into(),
                        name: "ls".into(),
                        arguments: json!({}),
                    }],
                ),
                ChatMessage::tool("1", "ls", "a.go"),
            ],
            &defs,
        );
        assert_eq!(out.len(), 4);
        assert_eq!(out[0]["role"], "system");
        assert!(out[0]["content"].as_str().unwrap().contains("- ls: List."));
        assert_eq!(out[2]["content"], r#"{"name": "ls", "arguments": {}}"#);
        assert_eq!(out[3]["role"], "user");
        assert!(out.iter().all(|m| m.get("tool_calls").is_none()));
    }
}
