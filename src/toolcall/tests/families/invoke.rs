//! MiniMax-M2, DeepSeek DSML and Step-3: `invoke` and `parameter` tags.

use pretty_assertions::assert_eq;

use super::*;

#[test]
fn minimax_m2_invokes_in_one_block_are_separate_calls() {
    assert_eq!(
        content(include_str!(
            "../../../../tests/data/toolcall/minimax_m2_two_invokes.txt"
        )),
        expect(
            "minimax-m2",
            json!([
                {"name": "read_file", "arguments": {"path": "src/lib.rs", "end_line": 80}},
                {"name": "write_file", "arguments": {
                    "path": "src/greet.rs",
                    "content": "pub fn greet(name: &str) -> String {\n    format!(\"Hello, {name} <3\")\n}",
                }},
            ]),
            "Checking the library, then adding the module."
        )
    );
}

#[test]
fn minimax_m2_entity_escaped_values_are_kept_as_written() {
    let text = "<minimax:tool_call>\n<invoke name=\"search\">\n<parameter name=\"pattern\">a &lt; b</parameter>\n</invoke>\n</minimax:tool_call>";
    assert_eq!(
        content(text),
        expect(
            "minimax-m2",
            json!([{"name": "search", "arguments": {"pattern": "a &lt; b"}}]),
            ""
        )
    );
}

#[test]
fn dsml_string_parameters_stay_raw_and_the_others_are_json() {
    assert_eq!(
        content(include_str!(
            "../../../../tests/data/toolcall/deepseek_dsml_edit.txt"
        )),
        expect(
            "deepseek-dsml",
            json!([{"name": "edit", "arguments": {
                "path": "src/config.rs",
                "old_string": "let retries = 3;",
                "new_string": "let retries = 5; // was \"3\"",
                "replace_all": true,
            }}]),
            ""
        )
    );
}

#[test]
fn dsml_with_the_v4_tool_calls_block_and_ascii_bars_is_read() {
    let text = "<|DSML|tool_calls>\n<|DSML|invoke name=\"read_file\">\n<|DSML|parameter name=\"path\" string=\"true\">a.rs</|DSML|parameter>\n<|DSML|parameter name=\"end_line\" string=\"false\">12</|DSML|parameter>\n</|DSML|invoke>\n</|DSML|tool_calls>";
    assert_eq!(
        content(text),
        expect(
            "deepseek-dsml",
            json!([{"name": "read_file", "arguments": {"path": "a.rs", "end_line": 12}}]),
            ""
        )
    );
}

#[test]
fn step3_steptml_invokes_inside_deepseek_style_tokens_are_read() {
    let text = "<｜tool_calls_begin｜><｜tool_call_begin｜>function<｜tool_sep｜><steptml:invoke name=\"read_file\"><steptml:parameter name=\"path\">src/main.rs</steptml:parameter></steptml:invoke><｜tool_call_end｜><｜tool_calls_end｜>";
    assert_eq!(
        content(text),
        expect(
            "step3",
            json!([{"name": "read_file", "arguments": {"path": "src/main.rs"}}]),
            ""
        )
    );
}

#[test]
fn an_invoke_cut_off_inside_a_value_is_not_taken() {
    let text = "<minimax:tool_call>\n<invoke name=\"write_file\">\n<parameter name=\"path\">a.md</parameter>\n<parameter name=\"content\">Once upon";
    assert_eq!(
        content(text),
        expect_warned(
            "none",
            json!([]),
            text,
            &["the call to write_file is cut off: its arguments run to the end of the reply"]
        )
    );
}
