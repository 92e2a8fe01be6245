//! Llama 3 JSON and bare or fenced JSON calls.

use pretty_assertions::assert_eq;

use super::*;

#[test]
fn a_llama3_call_after_python_tag_is_read_with_parameters() {
    let text = r#"<|python_tag|>{"name": "run_tests", "parameters": {"selector": "tests::parser"}}<|eom_id|>"#;
    assert_eq!(
        content(text),
        expect(
            "llama3-json",
            json!([{"name": "run_tests", "arguments": {"selector": "tests::parser"}}]),
            ""
        )
    );
}

/// F-19 (ollama #13519).
#[test]
fn a_llama3_call_in_a_json_fence_is_taken_with_its_fence() {
    let text = "I'll open it.\n```json\n{\"name\": \"read_file\", \"parameters\": {\"path\": \"main.go\"}}\n```";
    assert_eq!(
        content(text),
        expect(
            "llama3-json",
            json!([{"name": "read_file", "arguments": {"path": "main.go"}}]),
            "I'll open it."
        )
    );
}

/// F-37 (omlx PR #1153) and F-2 (llama.cpp PR #20806).
#[test]
fn a_llama4_bare_call_with_a_type_field_is_read() {
    let text = r#"{"type": "function", "name": "search", "parameters": {"pattern": "TODO"}}"#;
    assert_eq!(
        content(text),
        expect(
            "llama3-json",
            json!([{"name": "search", "arguments": {"pattern": "TODO"}}]),
            ""
        )
    );
}

/// F-20 (ollama #11185), F-34 (omlx #2565).
#[test]
fn a_bare_call_with_prose_before_and_after_keeps_the_prose() {
    let text = "Sure, reading it now.\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"x\"}}\nThen I'll summarise.";
    assert_eq!(
        content(text),
        expect(
            "json",
            json!([{"name": "read_file", "arguments": {"path": "x"}}]),
            "Sure, reading it now.\n\nThen I'll summarise."
        )
    );
}

#[test]
fn llama_cpp_generic_tool_call_and_tool_calls_objects_are_read() {
    let one = r#"{"tool_call": {"name": "read_file", "arguments": {"path": "a"}}}"#;
    assert_eq!(
        content(one),
        expect(
            "json",
            json!([{"name": "read_file", "arguments": {"path": "a"}}]),
            ""
        )
    );
    let many = r#"{"tool_calls": [{"name": "read_file", "arguments": {"path": "a"}}, {"name": "list_files", "arguments": {}}]}"#;
    assert_eq!(
        content(many),
        expect(
            "json",
            json!([
                {"name": "read_file", "arguments": {"path": "a"}},
                {"name": "list_files", "arguments": {}},
            ]),
            ""
        )
    );
}

#[test]
fn a_python_literal_list_left_by_a_stripped_token_is_read() {
    let text = "[{'name': 'read_file', 'arguments': {'path': 'a.py', 'end_line': None}}]";
    assert_eq!(
        content(text),
        expect(
            "json",
            json!([{"name": "read_file", "arguments": {"path": "a.py", "end_line": null}}]),
            ""
        )
    );
}

#[test]
fn an_openai_style_call_with_string_arguments_is_decoded() {
    let text = r#"{"id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\": \"a.rs\"}"}}"#;
    assert_eq!(
        content(text),
        expect_warned(
            "json",
            json!([{"name": "read_file", "arguments": {"path": "a.rs"}}]),
            "",
            &["the arguments of read_file were a JSON string holding an object; decoded it"]
        )
    );
}

#[test]
fn a_call_object_without_an_arguments_key_is_taken_when_its_keys_are_parameters() {
    let text = r#"{"name": "read_file", "path": "src/lib.rs", "start_line": 3}"#;
    assert_eq!(
        content(text),
        expect(
            "json",
            json!([{"name": "read_file", "arguments": {"path": "src/lib.rs", "start_line": 3}}]),
            ""
        )
    );
}

/// F-38 (Rapid-MLX #700): only calls are taken, never data.
#[test]
fn json_data_in_an_answer_is_not_a_call() {
    for text in [
        "The config is {\"name\": \"vouch\", \"version\": 2}.",
        "Set {\"name\": \"read_file\", \"mode\": \"fast\"} in the file.",
        "你好！有什么可以帮你的吗？",
    ] {
        assert_eq!(content(text), expect("none", json!([]), text));
    }
}

/// Qwen2.5-Coder-0.5B in `vouch run`: a brace closed too early leaves the rest of the object after the call.
#[test]
fn a_bare_call_with_the_rest_of_its_object_left_behind_it_is_taken() {
    let text = "<tools>\n\n</tools>\n{\"name\": \"list_files\", \"arguments\": {\"path\": \"src\"}}, \"required\": [], \"type\": \"object\"}}";
    let got = content(text);
    assert_eq!(
        got["calls"],
        json!([{"name": "list_files", "arguments": {"path": "src"}}])
    );
    // Inside tags on its line, as a small model writes a call it has seen answered.
    let tagged = "<tool_response>{\"name\": \"list_files\", \"arguments\": {}}</tool_response>";
    assert_eq!(
        content(tagged)["calls"],
        json!([{"name": "list_files", "arguments": {}}])
    );
    // Prose after a call still makes it an example.
    let example = "Call {\"name\": \"list_files\", \"arguments\": {}}, then read the file.";
    assert_eq!(content(example)["calls"], json!([]));
}

#[test]
fn bare_calls_in_doubled_braces_are_taken() {
    // Qwen2.5-Coder 1.5B on js-sort-numbers and py-csv-quotes: `{{…}}}}`, five replies that ran nothing.
    let one = "{{\"name\": \"list_files\", \"arguments\": {}}}}";
    assert_eq!(
        content(one)["calls"],
        json!([{"name": "list_files", "arguments": {}}])
    );
    let two = "{{\"name\": \"read_file\", \"arguments\": {\"path\": \"scores.js\", \"start_line\": 1}}}}\n{{\"name\": \"list_files\", \"arguments\": {}}}}";
    assert_eq!(
        content(two)["calls"],
        json!([
            {"name": "read_file", "arguments": {"path": "scores.js", "start_line": 1}},
            {"name": "list_files", "arguments": {}},
        ])
    );
    // Prose after the braces still makes it an example.
    let prose = "{{\"name\": \"list_files\", \"arguments\": {}}}} is how files are listed.";
    assert_eq!(content(prose)["calls"], json!([]));
}

#[test]
fn a_bare_call_with_arguments_naming_an_unknown_tool_is_reported() {
    let text = r#"{"name": "browse", "arguments": {"url": "https://example.com"}}"#;
    let mut want = expect_warned(
        "json",
        json!([]),
        "",
        &[&format!(
            "dropped a call to \"browse\": no such tool is offered ({OFFERED})"
        )],
    );
    want["unknown"] = json!(["browse"]);
    assert_eq!(content(text), want);
}

#[test]
fn a_constrained_reply_is_one_call() {
    let text = r#"{"name": "submit", "arguments": {"verdict": "GO", "summary": "Fixed the off-by-one; tests pass."}}"#;
    assert_eq!(
        content(text),
        expect(
            "json",
            json!([{"name": "submit", "arguments": {"verdict": "GO", "summary": "Fixed the off-by-one; tests pass."}}]),
            ""
        )
    );
}

#[test]
fn a_call_with_its_arguments_first_is_taken() {
    // A serializer that sorts keys (serde_json, Python's sort_keys) writes `arguments` before `name`.
    let text = "```json\n{\n  \"arguments\": {\n    \"path\": \"a.rs\"\n  },\n  \"name\": \"read_file\"\n}\n```";
    assert_eq!(
        content(text)["calls"],
        json!([{"name": "read_file", "arguments": {"path": "a.rs"}}])
    );
    // An object whose `arguments` names no tool is no call.
    let other = "{\"arguments\": {\"path\": \"a.rs\"}, \"kind\": \"read\"}";
    assert_eq!(content(other)["calls"], json!([]));
}
