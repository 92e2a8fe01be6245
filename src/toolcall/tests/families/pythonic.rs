//! Python-syntax calls: Llama 4, LFM2, Olmo 3, Llama 3.1 built-in tools and bare lists.

use pretty_assertions::assert_eq;

use super::*;

/// F-31 (Liquid4All/docs #130).
#[test]
fn a_llama4_python_list_is_read_and_an_apostrophe_in_a_quoted_value_is_kept() {
    let text = r#"<|python_start|>[read_file(path="src/a.py", start_line=3), search(pattern='It's here', glob="*.md")]<|python_end|>"#;
    assert_eq!(
        content(text),
        expect(
            "pythonic",
            json!([
                {"name": "read_file", "arguments": {"path": "src/a.py", "start_line": 3}},
                {"name": "search", "arguments": {"pattern": "It's here", "glob": "*.md"}},
            ]),
            ""
        )
    );
}

#[test]
fn lfm2_markers_hold_a_python_list_and_prose_follows() {
    let text =
        r#"<|tool_call_start|>[list_files(path="src")]<|tool_call_end|>Listing the sources."#;
    assert_eq!(
        content(text),
        expect(
            "pythonic",
            json!([{"name": "list_files", "arguments": {"path": "src"}}]),
            "Listing the sources."
        )
    );
}

#[test]
fn lfm2_markers_may_hold_a_json_list_instead() {
    let text = r#"<|tool_call_start|>[{"name": "list_files", "arguments": {"path": "src"}}]<|tool_call_end|>"#;
    assert_eq!(
        content(text),
        expect(
            "pythonic",
            json!([{"name": "list_files", "arguments": {"path": "src"}}]),
            ""
        )
    );
}

#[test]
fn olmo3_writes_one_call_per_line_with_json_constants() {
    let text = "<function_calls>\nread_file(path=\"a.txt\", end_line=null)\nedit(path=\"a.txt\", old_string=\"x\", new_string=\"y\\n\", replace_all=true)\n</function_calls>";
    assert_eq!(
        content(text),
        expect(
            "pythonic",
            json!([
                {"name": "read_file", "arguments": {"path": "a.txt", "end_line": null}},
                {"name": "edit", "arguments": {"path": "a.txt", "old_string": "x", "new_string": "y\n", "replace_all": true}},
            ]),
            ""
        )
    );
}

/// F-30 (mlx-lm PR #1436): LFM2.5 without markers.
#[test]
fn a_bare_python_list_naming_an_offered_tool_is_a_call() {
    let text = r#"[write_file(path='hello.py', content='print("hi")\n')]"#;
    assert_eq!(
        content(text),
        expect(
            "pythonic",
            json!([{"name": "write_file", "arguments": {"path": "hello.py", "content": "print(\"hi\")\n"}}]),
            ""
        )
    );
}

#[test]
fn python_code_in_an_answer_is_not_a_call() {
    for text in [
        "Use [len(x) for x in items] here.",
        "Try [print(value='x')] in a REPL.",
    ] {
        assert_eq!(content(text), expect("none", json!([]), text));
    }
}

#[test]
fn a_llama31_built_in_tool_call_after_python_tag_is_read() {
    let text = r#"<|python_tag|>search.call(pattern="aho-corasick")<|eom_id|>"#;
    assert_eq!(
        content(text),
        expect(
            "pythonic",
            json!([{"name": "search", "arguments": {"pattern": "aho-corasick"}}]),
            ""
        )
    );
}

#[test]
fn a_positional_python_argument_is_not_guessed() {
    let text = r#"<|python_start|>[read_file("a.txt")]<|python_end|>"#;
    assert_eq!(
        content(text),
        expect_warned(
            "none",
            json!([]),
            r#"<|python_start|>[read_file("a.txt")]"#,
            &["a Python call after <|python_start|>: a positional argument (only keyword arguments are read)"]
        )
    );
}
