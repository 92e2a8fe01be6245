//! Functionary v3.1.

use pretty_assertions::assert_eq;

use super::*;

#[test]
fn functionary_calls_hold_json_arguments() {
    let text = "Reading both.\n<function=read_file>{\"path\": \"main.go\"}</function>\n<function=read_file>{\"path\": \"go.mod\", \"end_line\": 5}</function>";
    assert_eq!(
        content(text),
        expect(
            "functionary-v3.1",
            json!([
                {"name": "read_file", "arguments": {"path": "main.go"}},
                {"name": "read_file", "arguments": {"path": "go.mod", "end_line": 5}},
            ]),
            "Reading both."
        )
    );
}

#[test]
fn an_unclosed_functionary_call_with_complete_json_is_flagged() {
    let text = "<function=list_files>{\"path\": \"src\"}";
    assert_eq!(
        content(text),
        expect_warned(
            "functionary-v3.1",
            json!([{"name": "list_files", "arguments": {"path": "src"}, "unclosed": true}]),
            "",
            &["the call to list_files is not closed; its arguments are complete, so it was taken"]
        )
    );
}

// ---- Functionary v3.2 (recipient-based) ----

#[test]
fn functionary_v32_first_recipient_comes_without_its_marker() {
    let text = "read_file\n{\"path\": \"main.go\"}>>>all\nReading main.go.";
    assert_eq!(
        content(text),
        expect(
            "functionary-v3.2",
            json!([{"name": "read_file", "arguments": {"path": "main.go"}}]),
            "Reading main.go."
        )
    );
}

#[test]
fn functionary_v32_blocks_each_name_their_recipient() {
    let text = "I will look first.>>>list_files\n{\"path\": \"src\"}>>>read_file\n{\"path\": \"src/lib.rs\"}";
    assert_eq!(
        content(text),
        expect(
            "functionary-v3.2",
            json!([
                {"name": "list_files", "arguments": {"path": "src"}},
                {"name": "read_file", "arguments": {"path": "src/lib.rs"}},
            ]),
            "I will look first."
        )
    );
}

#[test]
fn functionary_v32_python_blocks_are_raw_code() {
    let tools = ToolSpec::from_openai(&json!([{
        "type": "function",
        "function": {"name": "python", "parameters": {"type": "object",
            "properties": {"code": {"type": "string"}}, "required": ["code"]}}
    }]))
    .unwrap();
    let text = ">>>python\nimport os\nprint(os.listdir(\"{}\"))\n";
    let msg = Message {
        content: Some(text),
        ..Message::default()
    };
    assert_eq!(
        to_json(&recover(&msg, &tools, None)),
        expect(
            "functionary-v3.2",
            json!([{"name": "python", "arguments": {"code": "import os\nprint(os.listdir(\"{}\"))"}}]),
            ""
        )
    );
}

#[test]
fn a_line_that_starts_like_a_recipient_but_names_no_tool_is_prose() {
    let text = "summary\n{\"path\": \"src\"} is the argument I would pass.";
    assert_eq!(content(text)["format"], json!("none"));
    // `>>> ` with a space is a Python prompt, not a recipient.
    let repl = "Try it:\n>>> read_file\n{\"path\": \"a\"} and so on.";
    assert_eq!(content(repl)["format"], json!("none"));
}
