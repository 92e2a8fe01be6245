//! DeepSeek R1 / V3-0324 and V3.1.

use pretty_assertions::assert_eq;

use super::*;

#[test]
fn deepseek_r1_calls_with_fenced_arguments_are_read() {
    assert_eq!(
        content(include_str!(
            "../../../../tests/data/toolcall/deepseek_r1_two_calls.txt"
        )),
        expect(
            "deepseek-r1",
            json!([
                {"name": "read_file", "arguments": {"path": "src/main.rs", "start_line": 1}},
                {"name": "list_files", "arguments": {"path": "src", "glob": "*.rs"}},
            ]),
            "I need the entry point and the module list."
        )
    );
}

#[test]
fn deepseek_v31_calls_with_inline_arguments_are_read() {
    let text = "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>read_file<｜tool▁sep｜>{\"path\": \"a.rs\"}<｜tool▁call▁end｜><｜tool▁call▁begin｜>search<｜tool▁sep｜>{\"pattern\": \"unsafe\"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>";
    assert_eq!(
        content(text),
        expect(
            "deepseek-v3.1",
            json!([
                {"name": "read_file", "arguments": {"path": "a.rs"}},
                {"name": "search", "arguments": {"pattern": "unsafe"}},
            ]),
            ""
        )
    );
}

/// DeepSeek token misspellings.
#[test]
fn misspelled_deepseek_tokens_with_ascii_bars_underscores_or_spaces_are_read() {
    for text in [
        "<|tool_calls_begin|><|tool_call_begin|>list_files<|tool_sep|>{\"path\": \"src\"}<|tool_call_end|><|tool_calls_end|>",
        "<｜tool calls begin｜><｜tool call begin｜>list_files<｜tool sep｜>{\"path\": \"src\"}<｜tool call end｜><｜tool calls end｜>",
    ] {
        assert_eq!(
            content(text),
            expect("deepseek-v3.1", json!([{"name": "list_files", "arguments": {"path": "src"}}]), ""),
            "{text}"
        );
    }
}

#[test]
fn an_unclosed_deepseek_call_with_complete_arguments_is_flagged() {
    let text = "<｜tool▁call▁begin｜>read_file<｜tool▁sep｜>{\"path\": \"a.rs\"}";
    assert_eq!(
        content(text),
        expect_warned(
            "deepseek-v3.1",
            json!([{"name": "read_file", "arguments": {"path": "a.rs"}, "unclosed": true}]),
            "",
            &["the call to read_file is not closed; its arguments are complete, so it was taken"]
        )
    );
}
