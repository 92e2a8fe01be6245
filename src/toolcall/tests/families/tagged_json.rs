//! Hermes, Granite, Nemotron, Command R7B, Phi-4, `<tool_calls>` and InternLM: JSON between markers.

use pretty_assertions::assert_eq;

use super::*;

#[test]
fn hermes_calls_after_prose_are_recovered_in_order() {
    assert_eq!(
        content(include_str!(
            "../../../../tests/data/toolcall/hermes_two_calls.txt"
        )),
        expect(
            "hermes",
            json!([
                {"name": "read_file", "arguments": {"path": "tests/test_parser.py", "start_line": 10, "end_line": 40}},
                {"name": "search", "arguments": {"pattern": "def parse_<(\\w+)>", "glob": "**/*.py"}},
            ]),
            "Let me look at the failing test first, then search for the parser."
        )
    );
}

#[test]
fn hermes_string_values_keep_newlines_quotes_braces_tags_and_unicode() {
    assert_eq!(
        content(include_str!(
            "../../../../tests/data/toolcall/hermes_write_file_unicode.txt"
        )),
        expect(
            "hermes",
            json!([{"name": "write_file", "arguments": {
                "path": "docs/naïve.md",
                "content": "# Naïve — 日本語 🚀\n\nUse `{\"key\": [1, 2]}` and <b>bold</b>.\n\tIndented 'quote'\n",
            }}]),
            ""
        )
    );
}

#[test]
fn hermes_block_holding_a_list_is_read_like_smollm2_writes_it() {
    let text = r#"<tool_call>[{"name": "read_file", "arguments": {"path": "a.py"}}, {"name": "list_files", "arguments": {"path": "."}}]</tool_call>"#;
    assert_eq!(
        content(text),
        expect(
            "hermes",
            json!([
                {"name": "read_file", "arguments": {"path": "a.py"}},
                {"name": "list_files", "arguments": {"path": "."}},
            ]),
            ""
        )
    );
}

/// F-1 (llama.cpp #20260).
#[test]
fn hermes_block_with_several_objects_separated_by_semicolons_yields_each() {
    let text = r#"<tool_call>{"name": "read_file", "arguments": {"path": "a.go"}}; {"name": "read_file", "arguments": {"path": "b.go"}}; {"name": "list_files", "arguments": {}}</tool_call>"#;
    assert_eq!(
        content(text),
        expect(
            "hermes",
            json!([
                {"name": "read_file", "arguments": {"path": "a.go"}},
                {"name": "read_file", "arguments": {"path": "b.go"}},
                {"name": "list_files", "arguments": {}},
            ]),
            ""
        )
    );
}

/// F-35 (omlx #3153).
#[test]
fn an_unclosed_hermes_call_with_complete_json_is_taken_and_flagged() {
    let text =
        "Listing.\n<tool_call>\n{\"name\": \"list_files\", \"arguments\": {\"path\": \"src\"}}";
    assert_eq!(
        content(text),
        expect_warned(
            "hermes",
            json!([{"name": "list_files", "arguments": {"path": "src"}, "unclosed": true}]),
            "Listing.",
            &["the call to list_files is not closed; its arguments are complete, so it was taken"]
        )
    );
}

#[test]
fn a_hermes_call_cut_off_inside_its_json_is_not_taken() {
    let text = "<tool_call>\n{\"name\": \"write_file\", \"arguments\": {\"path\": \"a.txt\", \"content\": \"first line\nsecond";
    assert_eq!(
        content(text),
        expect_warned(
            "none",
            json!([]),
            text,
            &["a hermes block is cut off: its JSON runs to the end of the reply"]
        )
    );
}

#[test]
fn hermes_json_with_single_quotes_and_trailing_commas_is_repaired_and_reported() {
    let text = "<tool_call>\n{'name': 'edit', 'arguments': {'path': 'a.py', 'old_string': 'x = 1', 'new_string': 'x = 2',},}\n</tool_call>";
    assert_eq!(
        content(text),
        expect_warned(
            "hermes",
            json!([{"name": "edit", "arguments": {"path": "a.py", "old_string": "x = 1", "new_string": "x = 2"}}]),
            "",
            &["repaired the JSON of a hermes block: single quotes, a trailing comma"]
        )
    );
}

/// F-21 (ollama #6390): Hermes calls left in content.
#[test]
fn a_hermes_call_to_a_tool_not_offered_is_dropped_and_reported() {
    let text = "<tool_call>\n{\"name\": \"delete_repo\", \"arguments\": {\"confirm\": true}}\n</tool_call>\nDone.";
    assert_eq!(
        content(text),
        with_unknown(
            expect_warned(
                "hermes",
                json!([]),
                "Done.",
                &[&format!(
                    "dropped a call to \"delete_repo\": no such tool is offered ({OFFERED})"
                )]
            ),
            &["delete_repo"],
        )
    );
}

#[test]
fn a_near_miss_tool_name_resolves_to_the_offered_tool() {
    let text =
        r#"<tool_call>{"name": "functions.Read-File", "arguments": {"path": "x.rs"}}</tool_call>"#;
    assert_eq!(
        content(text),
        expect_warned(
            "hermes",
            json!([{"name": "read_file", "arguments": {"path": "x.rs"}}]),
            "",
            &["read the tool name \"functions.Read-File\" as read_file"]
        )
    );
}

#[test]
fn json_strings_holding_numbers_and_booleans_are_typed_by_the_schema() {
    let text = r#"<tool_call>{"name": "edit", "arguments": {"path": "a", "old_string": 1, "new_string": "2", "replace_all": "true"}}</tool_call>"#;
    assert_eq!(
        content(text),
        expect(
            "hermes",
            json!([{"name": "edit", "arguments": {"path": "a", "old_string": "1", "new_string": "2", "replace_all": true}}]),
            ""
        )
    );
}

#[test]
fn longcat_tool_call_tags_are_read_as_hermes() {
    let text = r#"<longcat_tool_call>{"name": "list_files", "arguments": {"path": "src"}}</longcat_tool_call>"#;
    assert_eq!(
        content(text),
        expect(
            "hermes",
            json!([{"name": "list_files", "arguments": {"path": "src"}}]),
            ""
        )
    );
}

#[test]
fn granite_lists_after_its_marker_are_calls_and_its_thinking_is_reasoning() {
    let text = r#"<think>Need the file and the listing.</think><|tool_call|>[{"name": "read_file", "arguments": {"path": "a.txt"}}, {"name": "list_files", "arguments": {}}]"#;
    assert_eq!(
        content(text),
        json!({
            "format": "granite",
            "calls": [
                {"name": "read_file", "arguments": {"path": "a.txt"}},
                {"name": "list_files", "arguments": {}},
            ],
            "content": "",
            "reasoning": "Need the file and the listing.",
        })
    );
}

#[test]
fn nemotron_toolcall_tags_hold_a_list() {
    let text = r#"I'll search.<TOOLCALL>[{"name": "search", "arguments": {"pattern": "fn main", "path": "src"}}]</TOOLCALL>"#;
    assert_eq!(
        content(text),
        expect(
            "nemotron",
            json!([{"name": "search", "arguments": {"pattern": "fn main", "path": "src"}}]),
            "I'll search."
        )
    );
}

#[test]
fn command_r7b_actions_use_tool_name_and_parameters() {
    let text = "<|START_THINKING|>I should list the files.<|END_THINKING|><|START_ACTION|>[\n    {\"tool_call_id\": \"0\", \"tool_name\": \"list_files\", \"parameters\": {\"path\": \"src\"}},\n    {\"tool_call_id\": \"1\", \"tool_name\": \"read_file\", \"parameters\": {\"path\": \"README.md\"}}\n]<|END_ACTION|>";
    assert_eq!(
        content(text),
        json!({
            "format": "command-r7b",
            "calls": [
                {"name": "list_files", "arguments": {"path": "src"}},
                {"name": "read_file", "arguments": {"path": "README.md"}},
            ],
            "content": "",
            "reasoning": "I should list the files.",
        })
    );
}

#[test]
fn phi4_and_firefunction_functools_lists_are_calls() {
    for text in [
        r#"functools[{"name": "read_file", "arguments": {"path": "setup.py"}}]"#,
        r#" functools[{"name": "read_file", "arguments": {"path": "setup.py"}}]"#,
    ] {
        assert_eq!(
            content(text),
            expect(
                "phi4",
                json!([{"name": "read_file", "arguments": {"path": "setup.py"}}]),
                ""
            )
        );
    }
}

#[test]
fn functools_in_prose_without_a_list_is_not_a_call() {
    let text = "Use functools.lru_cache here.";
    assert_eq!(content(text), expect("none", json!([]), text));
}

#[test]
fn tool_calls_tags_hold_json_lines_or_a_list() {
    let lines = "<tool_calls>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}\n{\"name\": \"list_files\", \"arguments\": {\"path\": \"b\"}}\n</tool_calls>";
    let list = r#"<tool_calls>[{"name": "read_file", "arguments": {"path": "a"}}, {"name": "list_files", "arguments": {"path": "b"}}]</tool_calls>"#;
    for text in [lines, list] {
        assert_eq!(
            content(text),
            expect(
                "tool-calls-json",
                json!([
                    {"name": "read_file", "arguments": {"path": "a"}},
                    {"name": "list_files", "arguments": {"path": "b"}},
                ]),
                ""
            )
        );
    }
}

#[test]
fn internlm_plugin_actions_are_calls() {
    let text = "<|action_start|><|plugin|>\n{\"name\": \"search\", \"parameters\": {\"pattern\": \"TODO\"}}<|action_end|>";
    assert_eq!(
        content(text),
        expect(
            "internlm",
            json!([{"name": "search", "arguments": {"pattern": "TODO"}}]),
            ""
        )
    );
}

#[test]
fn a_hermes_string_holding_the_close_marker_does_not_end_the_call() {
    let text = r#"<tool_call>{"name": "write_file", "arguments": {"path": "t.txt", "content": "<tool_call>x</tool_call>"}}</tool_call> Written."#;
    assert_eq!(
        content(text),
        expect(
            "hermes",
            json!([{"name": "write_file", "arguments": {"path": "t.txt", "content": "<tool_call>x</tool_call>"}}]),
            "Written."
        )
    );
}
