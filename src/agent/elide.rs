//! Context elision: which old tool outputs to replace with a one-line placeholder when the prompt fills the
//! context.
//!
//! When the last prompt filled more than [`ELIDE_AT`] percent of the context, the oldest large tool outputs the
//! model has already seen are replaced, in one step that frees enough to get under [`ELIDE_TO`] percent
//! (estimated from the last prompt's tokens per byte). Doing it rarely and in one go keeps the server's cached
//! prefix valid between elisions. This module only decides; the loop applies the plan and records it.

use serde_json::Value;

use crate::model::ChatMessage;
use crate::tools::cap;

/// Percent of the context a prompt may fill before old tool outputs are elided.
pub const ELIDE_AT: u64 = 80;
/// Percent of the context one elision step aims to get the prompt under.
pub const ELIDE_TO: u64 = 50;
/// Tool outputs at most this long are never elided.
pub const ELIDE_MIN_BYTES: usize = 2048;

/// One tool output to replace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Elided {
    /// Its index in the conversation.
    pub index: usize,
    /// The tool's name.
    pub name: String,
    /// The output's length now.
    pub bytes: usize,
    /// What it becomes.
    pub placeholder: String,
}

/// What one elision step replaces, oldest first; empty when nothing needs to go.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Plan {
    pub outputs: Vec<Elided>,
    /// The prompt tokens the step frees, as estimated.
    pub estimated_tokens: u64,
}

/// The plan for `messages`, of which the first `seen` were sent in the last request, whose prompt was
/// `prompt_tokens` of a `context`-token window.
pub fn plan(messages: &[ChatMessage], seen: usize, prompt_tokens: u64, context: u64) -> Plan {
    plan_from(messages, seen, prompt_tokens, context, ELIDE_MIN_BYTES)
}

/// The plan after the server refused a request as too long for its context: [`plan`], and when that finds
/// nothing, the oldest outputs of any size that are longer than their placeholders. Empty when no output
/// is left to elide: resending would overflow again.
pub fn plan_overflow(
    messages: &[ChatMessage],
    seen: usize,
    prompt_tokens: u64,
    context: u64,
) -> Plan {
    let plan = plan(messages, seen, prompt_tokens, context);
    if !plan.outputs.is_empty() {
        return plan;
    }
    plan_from(messages, seen, prompt_tokens, context, 0)
}

fn plan_from(
    messages: &[ChatMessage],
    seen: usize,
    prompt_tokens: u64,
    context: u64,
    min_bytes: usize,
) -> Plan {
    if prompt_tokens.saturating_mul(100) <= context.saturating_mul(ELIDE_AT) {
        return Plan::default();
    }
    let seen = seen.min(messages.len());
    let bytes: usize = messages[..seen]
        .iter()
        .map(|m| m.to_openai().to_string().len())
        .sum();
    if bytes == 0 {
        return Plan::default();
    }
    let per_byte = prompt_tokens as f64 / bytes as f64;
    let need = prompt_tokens.saturating_sub(context.saturating_mul(ELIDE_TO) / 100) as f64;
    let mut freed = 0.0;
    let mut outputs = Vec::new();
    for (i, message) in messages[..seen].iter().enumerate() {
        if freed >= need {
            break;
        }
        let ChatMessage::Tool {
            tool_call_id,
            name,
            content,
        } = message
        else {
            continue;
        };
        if content.len() <= min_bytes || content.starts_with("[output of ") {
            continue;
        }
        let detail = call_detail(&messages[..i], tool_call_id);
        let placeholder = format!(
            "[output of {name}{detail} elided to save context; call it again if you need it]"
        );
        if content.len() <= placeholder.len() {
            continue;
        }
        freed += content.len().saturating_sub(placeholder.len()) as f64 * per_byte;
        outputs.push(Elided {
            index: i,
            name: name.clone(),
            bytes: content.len(),
            placeholder,
        });
    }
    Plan {
        outputs,
        estimated_tokens: freed as u64,
    }
}

/// ` <path>` (or pattern, selector) of the call `id` in the assistant message before it, for placeholders.
fn call_detail(before: &[ChatMessage], id: &str) -> String {
    let call = before.iter().rev().find_map(|m| match m {
        ChatMessage::Assistant { tool_calls, .. } => tool_calls.iter().find(|c| c.id == id),
        _ => None,
    });
    call.and_then(|c| {
        ["path", "pattern", "selector"]
            .iter()
            .find_map(|k| c.arguments.get(*k).and_then(Value::as_str))
    })
    .map(|d| format!(" {}", cap(d, 80)))
    .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::model::ToolCall;

    /// System and user, then one read_file call and its output per size, ids `c0`, `c1`, ...
    fn conversation(sizes: &[usize]) -> Vec<ChatMessage> {
        let mut messages = vec![ChatMessage::system("s"), ChatMessage::user("u")];
        for (i, size) in sizes.iter().enumerate() {
            let id = format!("c{i}");
            messages.push(ChatMessage::assistant(
                "",
                vec![ToolCall {
                    id: id.clone(),
                    name: "read_file".into(),
                    arguments: json!({"path": format!("f{i}.py")}),
                }],
            ));
            messages.push(ChatMessage::tool(id, "read_file", "x".repeat(*size)));
        }
        messages
    }

    fn indices(plan: &Plan) -> Vec<usize> {
        plan.outputs.iter().map(|e| e.index).collect()
    }

    #[test]
    fn nothing_is_elided_up_to_eighty_percent_of_the_context() {
        let messages = conversation(&[10_000, 10_000, 10_000]);
        assert_eq!(plan(&messages, messages.len(), 800, 1000), Plan::default());
        assert_eq!(plan(&messages, messages.len(), 0, 1000), Plan::default());
    }

    #[test]
    fn over_eighty_percent_the_oldest_outputs_go_in_one_step_to_under_half_and_the_newest_stay() {
        let messages = conversation(&[10_000, 10_000, 10_000, 10_000]);
        let p = plan(&messages, messages.len(), 900, 1000);
        // 900 tokens over ~40 KB: each output is ~220 tokens, and 400 must go.
        assert_eq!(indices(&p), [3, 5]);
        assert!(900 - p.estimated_tokens <= 500, "{p:?}");
        // One output fewer would not have been enough: the step is as small as it can be.
        let bytes: usize = messages
            .iter()
            .map(|m| m.to_openai().to_string().len())
            .sum();
        let first = p.outputs[0].bytes - p.outputs[0].placeholder.len();
        assert!((first as f64) * 900.0 / (bytes as f64) < 400.0);
        assert_eq!(
            p.outputs[0],
            Elided {
                index: 3,
                name: "read_file".into(),
                bytes: 10_000,
                placeholder:
                    "[output of read_file f0.py elided to save context; call it again if you need it]"
                        .into(),
            }
        );
    }

    #[test]
    fn outputs_of_two_kilobytes_or_less_are_never_elided() {
        let messages = conversation(&[2048, 100, 2048]);
        assert_eq!(plan(&messages, messages.len(), 990, 1000), Plan::default());
        let messages = conversation(&[2048, 2049]);
        assert_eq!(indices(&plan(&messages, messages.len(), 990, 1000)), [5]);
    }

    #[test]
    fn after_an_overflow_small_outputs_go_too_but_none_shorter_than_its_placeholder() {
        let messages = conversation(&[2048, 60, 1500]);
        let p = plan_overflow(&messages, messages.len(), 1250, 1000);
        assert_eq!(indices(&p), [3, 7]);
        // A fresh turn's plan would elide none of them; the overflow's takes the big ones first.
        let messages = conversation(&[1000, 5000]);
        assert_eq!(
            indices(&plan_overflow(&messages, messages.len(), 1250, 1000)),
            [5]
        );
        let messages = conversation(&[50, 60]);
        assert_eq!(
            plan_overflow(&messages, messages.len(), 1250, 1000),
            Plan::default()
        );
    }

    #[test]
    fn only_outputs_the_model_has_seen_and_not_yet_elided_are_candidates() {
        let mut messages = conversation(&[10_000, 10_000, 10_000]);
        // The last output was not sent yet.
        let seen = messages.len() - 1;
        if let ChatMessage::Tool { content, .. } = &mut messages[3] {
            *content = format!("[output of read_file f0.py elided {}", "y".repeat(5000));
        }
        let p = plan(&messages, seen, 999, 1000);
        assert_eq!(indices(&p), [5]);
    }

    #[test]
    fn a_placeholder_names_the_calls_path_pattern_or_selector() {
        let messages = vec![
            ChatMessage::assistant(
                "",
                vec![
                    ToolCall {
                        id: "a".into(),
                        name: "search".into(),
                        arguments: json!({"pattern": "fn main"}),
                    },
                    ToolCall {
                        id: "b".into(),
                        name: "run_tests".into(),
                        arguments: json!({}),
                    },
                ],
            ),
            ChatMessage::tool("a", "search", "x".repeat(5000)),
            ChatMessage::tool("b", "run_tests", "x".repeat(5000)),
        ];
        let p = plan(&messages, 3, 1000, 1000);
        let placeholders: Vec<&str> = p.outputs.iter().map(|e| e.placeholder.as_str()).collect();
        assert_eq!(
            placeholders,
            [
                "[output of search fn main elided to save context; call it again if you need it]",
                "[output of run_tests elided to save context; call it again if you need it]",
            ]
        );
    }
}
