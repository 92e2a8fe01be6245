//! The tool-call round trip: one tool offered with `tool_choice` `auto`, then `required`; the call is read
//! from `tool_calls` (structured) or recovered from the text (leaked), and the format it leaked in is named.

use serde_json::{json, Value};

use super::http::{Endpoint, Reply};
use super::report::{CallOutcome, ToolCalls, ToolRun};
use crate::toolcall::{self, learn::Learned, Format, Message, NativeCall, ToolSpec};

/// The one tool offered.
pub fn tool() -> Value {
    json!({
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a text file of the repository and return its contents.",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string", "description": "Path from the repository root."}},
                "required": ["path"]
            }
        }
    })
}

const ASK: &str = "Use the read_file tool to read the file src/main.rs. Call the tool now.";

/// Both round trips.
pub async fn round_trips(ep: &Endpoint, learned: Option<&Learned>) -> ToolCalls {
    let mut runs = Vec::new();
    for choice in ["auto", "required"] {
        let fields = json!({
            "messages": [
                {"role": "system", "content": "You are a coding agent. You act only through tool calls."},
                {"role": "user", "content": ASK}
            ],
            "tools": [tool()],
            "tool_choice": choice,
            "temperature": 0,
            "max_tokens": 128,
        });
        let run = match ep.chat(fields).await {
            Ok(reply) => judge(choice, &reply, learned),
            Err(e) => ToolRun {
                tool_choice: choice.to_string(),
                outcome: CallOutcome::Error,
                leaked_format: None,
                name: None,
                error: Some(format!("{e:#}")),
            },
        };
        runs.push(run);
    }
    summarize(runs)
}

/// The summary over the runs.
pub fn summarize(runs: Vec<ToolRun>) -> ToolCalls {
    let leaked = runs.iter().find(|r| r.outcome == CallOutcome::Leaked);
    ToolCalls {
        structured: runs.iter().any(|r| r.outcome == CallOutcome::Structured),
        leaked_format: leaked.and_then(|r| r.leaked_format.clone()),
        recovered: leaked.is_some(),
        runs,
    }
}

/// How one reply's call came back.
pub fn judge(choice: &str, reply: &Reply, learned: Option<&Learned>) -> ToolRun {
    let msg = reply.message();
    let native: Vec<NativeCall> = msg
        .get("tool_calls")
        .and_then(Value::as_array)
        .map(|calls| {
            calls
                .iter()
                .filter_map(|c| {
                    let f = c.get("function").unwrap_or(c);
                    let name = f.get("name")?.as_str()?.to_string();
                    let arguments = match f.get("arguments") {
                        Some(Value::String(s)) => s.clone(),
                        Some(v) => v.to_string(),
                        None => "{}".to_string(),
                    };
                    Some(NativeCall { name, arguments })
                })
                .collect()
        })
        .unwrap_or_default();
    let mut run = ToolRun {
        tool_choice: choice.to_string(),
        outcome: CallOutcome::NoCall,
        leaked_format: None,
        name: None,
        error: None,
    };
    if let Some(call) = native.first() {
        run.outcome = CallOutcome::Structured;
        run.name = Some(call.name.clone());
        return run;
    }
    let tools = ToolSpec::from_openai(&json!([tool()])).unwrap_or_default();
    let content = reply.content();
    let reasoning = msg
        .get("reasoning_content")
        .or_else(|| msg.get("reasoning"))
        .and_then(Value::as_str);
    let rec = toolcall::recover_with(
        &Message {
            content: Some(content),
            reasoning_content: reasoning,
            tool_calls: &[],
        },
        &tools,
        None,
        learned,
    );
    if let Some(call) = rec.calls.first().filter(|_| rec.format != Format::None) {
        run.outcome = CallOutcome::Leaked;
        run.leaked_format = Some(rec.format.name().to_string());
        run.name = Some(call.name.clone());
        return run;
    }
    run
}
