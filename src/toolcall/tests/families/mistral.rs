//! Mistral: the `[TOOL_CALLS]` list (pre-v11) and `[TOOL_CALLS]NAME[ARGS]{…}` (v11 and later).

use pretty_assertions::assert_eq;

use super::*;

/// F-16, F-27 (lmstudio #797) and F-39 (Rapid-MLX #1071).
#[test]
fn mistral_v11_calls_each_with_their_own_marker_are_read() {
    let text = r#"I'll check both.[TOOL_CALLS]read_file[ARGS]{"path": "README.md"}[TOOL_CALLS]search[ARGS]{"pattern": "TODO", "path": "src"}</s>"#;
    assert_eq!(
        content(text),
        expect(
            "mistral",
            json!([
                {"name": "read_file", "arguments": {"path": "README.md"}},
                {"name": "search", "arguments": {"pattern": "TODO", "path": "src"}},
            ]),
            "I'll check both."
        )
    );
}

#[test]
fn a_mistral_call_id_between_name_and_arguments_is_skipped() {
    let text = r#"[TOOL_CALLS]list_files[CALL_ID]a1B2c3D4e[ARGS]{"path": "."}"#;
    assert_eq!(
        content(text),
        expect(
            "mistral",
            json!([{"name": "list_files", "arguments": {"path": "."}}]),
            ""
        )
    );
}

#[test]
fn the_mistral_nemo_list_with_ids_is_read() {
    let text = r#"[TOOL_CALLS][{"name": "read_file", "arguments": {"path": "main.py"}, "id": "a1B2c3D4e"}, {"name": "list_files", "arguments": {}, "id": "f5G6h7J8k"}]"#;
    assert_eq!(
        content(text),
        expect(
            "mistral",
            json!([
                {"name": "read_file", "arguments": {"path": "main.py"}},
                {"name": "list_files", "arguments": {}},
            ]),
            ""
        )
    );
}

#[test]
fn a_mistral_call_inside_magistral_thinking_is_not_a_call() {
    let text = r#"[THINK]Maybe [TOOL_CALLS]write_file[ARGS]{"path": "x", "content": ""} but no.[/THINK]The answer is 42."#;
    assert_eq!(
        content(text),
        json!({
            "format": "none",
            "calls": [],
            "content": "The answer is 42.",
            "reasoning": r#"Maybe [TOOL_CALLS]write_file[ARGS]{"path": "x", "content": ""} but no."#,
        })
    );
}

#[test]
fn a_mistral_call_to_a_tool_not_offered_is_dropped() {
    let text = r#"[TOOL_CALLS]web_search[ARGS]{"query": "rust"}"#;
    assert_eq!(
        content(text),
        with_unknown(
            expect_warned(
                "mistral",
                json!([]),
                "",
                &[&format!(
                    "dropped a call to \"web_search\": no such tool is offered ({OFFERED})"
                )]
            ),
            &["web_search"],
        )
    );
}

/// Special tokens stripped by skip_special_tokens.
#[test]
fn a_mistral_list_whose_marker_was_stripped_is_read_as_bare_json() {
    let text = r#"[{"name": "read_file", "arguments": {"path": "main.py"}, "id": "a1B2c3D4e"}]"#;
    assert_eq!(
        content(text),
        expect(
            "json",
            json!([{"name": "read_file", "arguments": {"path": "main.py"}}]),
            ""
        )
    );
}
