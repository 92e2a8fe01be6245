//! gpt-oss Harmony.

use pretty_assertions::assert_eq;

use super::*;

/// F-15 (vLLM #32587).
#[test]
fn a_harmony_commentary_call_is_taken_and_a_call_mentioned_in_analysis_is_not() {
    assert_eq!(
        content(include_str!(
            "../../../../tests/data/toolcall/harmony_analysis_then_call.txt"
        )),
        json!({
            "format": "harmony",
            "calls": [{"name": "read_file", "arguments": {"path": "Cargo.toml"}}],
            "content": "",
            "reasoning": "The user wants the tests run. I could write to=functions.run_tests {\"selector\": \"all\"} right away, but first I need the manifest.",
        })
    );
}

#[test]
fn a_harmony_recipient_in_the_role_header_is_read() {
    let text = "<|start|>assistant to=functions.list_files<|channel|>commentary json<|message|>{\"path\": \"src\"}<|call|>";
    assert_eq!(
        content(text),
        expect(
            "harmony",
            json!([{"name": "list_files", "arguments": {"path": "src"}}]),
            ""
        )
    );
}

#[test]
fn a_harmony_final_answer_is_content_and_analysis_is_reasoning() {
    let text = "<|channel|>analysis<|message|>Easy: 2 + 2.<|end|><|start|>assistant<|channel|>final<|message|>It is 4.<|return|>";
    assert_eq!(
        content(text),
        json!({"format": "none", "calls": [], "content": "It is 4.", "reasoning": "Easy: 2 + 2."})
    );
}

/// F-18 (lablup/mlxcel #654).
#[test]
fn a_harmony_call_whose_special_tokens_were_stripped_is_read() {
    let text = "analysisNeed the manifest.assistantcommentary to=functions.read_file json{\"path\": \"Cargo.toml\"}";
    assert_eq!(
        content(text),
        expect(
            "harmony",
            json!([{"name": "read_file", "arguments": {"path": "Cargo.toml"}}]),
            "analysisNeed the manifest."
        )
    );
}

/// F-17 (TensorRT-LLM #9256).
#[test]
fn a_leaked_commentary_message_holding_a_call_object_is_a_call() {
    let text = "<|channel|>commentary<|message|>{\"name\": \"list_files\", \"arguments\": {\"path\": \".\"}}<|end|>";
    assert_eq!(
        content(text),
        expect(
            "harmony",
            json!([{"name": "list_files", "arguments": {"path": "."}}]),
            ""
        )
    );
}

#[test]
fn a_harmony_recipient_in_the_role_header_with_a_constrain_token_is_read() {
    let text = "<|channel|>analysis<|message|>Need the file.<|end|><|start|>assistant to=functions.read_file<|channel|>commentary <|constrain|>json<|message|>{\"path\": \"a.rs\"}<|call|>";
    let out = content(text);
    assert_eq!(out["format"], json!("harmony"));
    assert_eq!(
        out["calls"],
        json!([{"name": "read_file", "arguments": {"path": "a.rs"}}])
    );
    assert_eq!(out["content"], json!(""));
}
