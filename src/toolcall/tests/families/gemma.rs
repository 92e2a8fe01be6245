//! Gemma 4 and FunctionGemma.

use pretty_assertions::assert_eq;

use super::*;

/// F-29 (mlx-lm #1096).
#[test]
fn gemma4_calls_have_bare_keys_delimited_strings_and_numbers() {
    let text = "<|tool_call>call:read_file{path:<|\"|>src/main.rs<|\"|>,start_line:5,end_line:25}<tool_call|>";
    assert_eq!(
        content(text),
        expect(
            "gemma4",
            json!([{"name": "read_file", "arguments": {"path": "src/main.rs", "start_line": 5, "end_line": 25}}]),
            ""
        )
    );
}

#[test]
fn gemma4_delimited_strings_keep_quotes_braces_and_commas() {
    let text = "<|channel>thought\nWrite the JSON file.<channel|><|tool_call>call:write_file{path:<|\"|>a.json<|\"|>,content:<|\"|>{\"k\": \"v, w\"}\n<|\"|>}<tool_call|>";
    assert_eq!(
        content(text),
        json!({
            "format": "gemma4",
            "calls": [{"name": "write_file", "arguments": {"path": "a.json", "content": "{\"k\": \"v, w\"}\n"}}],
            "content": "",
            "reasoning": "Write the JSON file.",
        })
    );
}

#[test]
fn functiongemma_escape_tokens_delimit_raw_strings() {
    let text = "<start_function_call>call:search{pattern:<escape>fn \\w+<escape>,path:<escape>src<escape>}<end_function_call>";
    assert_eq!(
        content(text),
        expect(
            "functiongemma",
            json!([{"name": "search", "arguments": {"pattern": "fn \\w+", "path": "src"}}]),
            ""
        )
    );
}
