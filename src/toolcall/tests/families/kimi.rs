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

// ---- Kimi-K3 XTML ----

#[test]
fn kimi_k3_arguments_are_raw_strings_or_json_by_their_type() {
    let text = "Looking.<|open|>tools<|sep|><|open|>call tool=\"read_file\" index=\"1\"<|sep|><|open|>argument key=\"path\" type=\"string\"<|sep|>src/a&b.rs<|close|>argument<|sep|><|open|>argument key=\"end_line\" type=\"integer\"<|sep|>5<|close|>argument<|sep|><|close|>call<|sep|><|open|>call tool=\"list_files\" index=\"2\"<|sep|><|close|>call<|sep|><|close|>tools<|sep|>";
    assert_eq!(
        content(text),
        expect(
            "kimi-k3",
            json!([
                {"name": "read_file", "arguments": {"path": "src/a&b.rs", "end_line": 5}},
                {"name": "list_files", "arguments": {}},
            ]),
            "Looking."
        )
    );
}

#[test]
fn kimi_k3_attribute_values_are_unescaped() {
    let text = "<|open|>tools<|sep|><|open|>call tool=\"search\" index=\"1\"<|sep|><|open|>argument key=\"pattern\" type=\"string\"<|sep|>a<b && \"c\"<|close|>argument<|sep|><|close|>call<|sep|><|close|>tools<|sep|>";
    assert_eq!(
        content(text)["calls"],
        json!([{"name": "search", "arguments": {"pattern": "a<b && \"c\""}}])
    );
    let escaped_name = "<|open|>call tool=\"read&#95;file\" index=\"1\"<|sep|><|close|>call<|sep|>";
    // An escape vouch does not know stays as written, and names no tool.
    assert_eq!(content(escaped_name)["calls"], json!([]));
}
