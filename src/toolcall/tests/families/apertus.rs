//! Apertus: the tool's name as the JSON key.

use pretty_assertions::assert_eq;

use super::*;

#[test]
fn apertus_calls_are_keyed_by_the_tool_name() {
    let text = "<|inner_prefix|>Two files.<|inner_suffix|>Reading.<|tools_prefix|>[{\"read_file\": {\"path\": \"a.rs\"}}, {\"list_files\": {\"path\": \"src\"}}]<|tools_suffix|>";
    let mut want = expect(
        "apertus",
        json!([
            {"name": "read_file", "arguments": {"path": "a.rs"}},
            {"name": "list_files", "arguments": {"path": "src"}},
        ]),
        "Reading.",
    );
    want["reasoning"] = json!("Two files.");
    assert_eq!(content(text), want);
}

#[test]
fn an_unclosed_apertus_list_with_complete_json_is_taken_and_flagged() {
    let text = "<|tools_prefix|>[{\"list_files\": {}}]";
    assert_eq!(
        content(text),
        expect_warned(
            "apertus",
            json!([{"name": "list_files", "arguments": {}, "unclosed": true}]),
            "",
            &["the call to list_files is not closed; its arguments are complete, so it was taken"]
        )
    );
}
