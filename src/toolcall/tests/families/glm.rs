//! GLM-4.5/4.6 and GLM-4.7/Laguna `arg_key`/`arg_value`, Ling-3 and Hunyuan V3.

use pretty_assertions::assert_eq;

use super::*;

/// F-4 (club-3090 #1250), F-40 and F-41 (verl #4757).
#[test]
fn glm45_calls_with_newlines_are_taken_and_a_call_quoted_in_thinking_is_not() {
    assert_eq!(
        content(include_str!(
            "../../../../tests/data/toolcall/glm45_two_calls.txt"
        )),
        json!({
            "format": "glm",
            "calls": [
                {"name": "read_file", "arguments": {"path": "config/app.yaml", "start_line": 1}},
                {"name": "list_files", "arguments": {"path": "config"}},
            ],
            "content": "I'll read the config first.",
            "reasoning": "The user wants the config. Something like <tool_call>read_file\n<arg_key>path</arg_key>\n<arg_value>secrets.env</arg_value>\n</tool_call> would be wrong; the config lives in config/.",
        })
    );
}

/// F-26 (lmstudio #2243), F-32 and F-33 (MTPLX PR #195).
#[test]
fn laguna_inline_values_keep_their_whitespace_exactly() {
    assert_eq!(
        content(include_str!(
            "../../../../tests/data/toolcall/laguna_inline_edit.txt"
        )),
        expect(
            "glm",
            json!([{"name": "edit", "arguments": {
                "path": "internal/controller/scheduling.go",
                "old_string": "\treturn nil\n}",
                "new_string": "\treturn errors.Join(errs...) // <nil> if empty\n}\n",
                "replace_all": false,
            }}]),
            ""
        )
    );
}

/// The issue's own example (Laguna behind llama-server).
#[test]
fn the_laguna_read_file_call_from_the_issue_is_recovered() {
    let text = "<tool_call>read_file<arg_key>path</arg_key><arg_value>internal/controller/scheduling.go</arg_value></tool_call>";
    assert_eq!(
        content(text),
        expect(
            "glm",
            json!([{"name": "read_file", "arguments": {"path": "internal/controller/scheduling.go"}}]),
            ""
        )
    );
}

/// F-13 (vLLM #44326).
#[test]
fn a_glm47_zero_argument_call_inside_prose_is_taken() {
    let text = "Listing the root.<tool_call>list_files</tool_call> Then I decide.";
    assert_eq!(
        content(text),
        expect(
            "glm",
            json!([{"name": "list_files", "arguments": {}}]),
            "Listing the root. Then I decide."
        )
    );
}

/// F-3 (llama.cpp PR #26608).
#[test]
fn ling3_newlines_between_key_and_value_do_not_merge_arguments() {
    let text = "<tool_call>search<arg_key>pattern</arg_key>\n<arg_value>panic!</arg_value><arg_key>path</arg_key>\n<arg_value>logs</arg_value>\n</tool_call>";
    assert_eq!(
        content(text),
        expect(
            "glm",
            json!([{"name": "search", "arguments": {"pattern": "panic!", "path": "logs"}}]),
            ""
        )
    );
}

#[test]
fn hunyuan_v3_tool_sep_and_tool_calls_wrapper_are_read_as_glm() {
    let text = "<tool_calls><tool_call>list_files<tool_sep><arg_key>path</arg_key><arg_value>.</arg_value></tool_call><tool_call>read_file<tool_sep><arg_key>path</arg_key><arg_value>a.md</arg_value></tool_call></tool_calls>";
    assert_eq!(
        content(text),
        expect(
            "glm",
            json!([
                {"name": "list_files", "arguments": {"path": "."}},
                {"name": "read_file", "arguments": {"path": "a.md"}},
            ]),
            ""
        )
    );
}

#[test]
fn a_glm_call_to_a_tool_not_offered_is_dropped_and_reported() {
    let text =
        "<tool_call>lookup<arg_key>query</arg_key><arg_value>scheduler</arg_value></tool_call>";
    assert_eq!(
        content(text),
        with_unknown(
            expect_warned(
                "glm",
                json!([]),
                "",
                &[&format!(
                    "dropped a call to \"lookup\": no such tool is offered ({OFFERED})"
                )]
            ),
            &["lookup"],
        )
    );
}

#[test]
fn a_glm_value_running_to_the_end_of_the_reply_is_cut_off() {
    let text = "<tool_call>write_file<arg_key>path</arg_key><arg_value>a.txt";
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

#[test]
fn a_glm_value_without_its_closer_ends_at_the_next_key() {
    let text = "<tool_call>read_file<arg_key>path</arg_key><arg_value>a.rs<arg_key>end_line</arg_key><arg_value>9</arg_value></tool_call>";
    assert_eq!(
        content(text),
        expect_warned(
            "glm",
            json!([{"name": "read_file", "arguments": {"path": "a.rs", "end_line": 9}}]),
            "",
            &["an argument of the call to read_file has no </arg_value>; it ends where the next tag starts"]
        )
    );
}

#[test]
fn glm_object_and_enum_values_are_typed_by_the_schema() {
    let text = "<tool_call>submit<arg_key>verdict</arg_key><arg_value>NO-GO</arg_value><arg_key>summary</arg_key><arg_value>{\"not\": \"json here\"}</arg_value></tool_call>";
    assert_eq!(
        content(text),
        expect(
            "glm",
            json!([{"name": "submit", "arguments": {"verdict": "NO-GO", "summary": "{\"not\": \"json here\"}"}}]),
            ""
        )
    );
}
