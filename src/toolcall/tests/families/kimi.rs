//! Kimi-K2.

use pretty_assertions::assert_eq;

use super::*;

#[test]
fn kimi_k2_calls_take_their_name_from_the_call_id() {
    assert_eq!(
        content(include_str!(
            "../../../../tests/data/toolcall/kimi_k2_two_calls.txt"
        )),
        expect(
            "kimi-k2",
            json!([
                {"name": "read_file", "arguments": {"path": "go.mod"}},
                {"name": "search", "arguments": {"pattern": "require \\(", "path": "."}},
            ]),
            "Let me check the module file and search for the dependency."
        )
    );
}

#[test]
fn kimi_k2_singular_section_tokens_are_read() {
    let text = "<|tool_call_section_begin|><|tool_call_begin|>functions.list_files:0<|tool_call_argument_begin|>{}<|tool_call_end|><|tool_call_section_end|>";
    assert_eq!(
        content(text),
        expect(
            "kimi-k2",
            json!([{"name": "list_files", "arguments": {}}]),
            ""
        )
    );
}

/// Kimi-K2 calls inside reasoning.
#[test]
fn kimi_k2_calls_at_the_end_of_the_reasoning_are_taken_when_there_is_no_answer() {
    let reasoning = "I need the manifest first.<|tool_calls_section_begin|><|tool_call_begin|>functions.read_file:0<|tool_call_argument_begin|>{\"path\": \"Cargo.toml\"}<|tool_call_end|><|tool_calls_section_end|>";
    assert_eq!(
        recovered(Message {
            content: Some(""),
            reasoning_content: Some(reasoning),
            tool_calls: &[],
        }),
        json!({
            "format": "kimi-k2",
            "calls": [{"name": "read_file", "arguments": {"path": "Cargo.toml"}}],
            "content": "",
            "reasoning": "I need the manifest first.",
            "warnings": ["took 1 call(s) from the reasoning: the reply has no answer text and the reasoning ends with them"],
        })
    );
}
