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
