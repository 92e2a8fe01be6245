//! Qwen3-Coder XML and Seed-OSS.

use pretty_assertions::assert_eq;

use super::*;

#[test]
fn qwen3_coder_values_keep_tabs_quotes_angle_brackets_and_unicode() {
    assert_eq!(
        content(include_str!(
            "../../../../tests/data/toolcall/qwen3_coder_edit.txt"
        )),
        expect(
            "qwen3-coder",
            json!([
                {"name": "edit", "arguments": {
                    "path": "internal/controller/scheduling.go",
                    "old_string": "\tif len(pods) < limit {\n\t\treturn fmt.Errorf(\"need %d pods, got \\\"%d\\\"\", limit, len(pods))\n\t}",
                    "new_string": "\tif len(pods) <= limit {\n\t\t// ≤ is intended: the limit is inclusive — see “Scheduling” in the docs.\n\t\treturn fmt.Errorf(\"need %d pods, got \\\"%d\\\"\", limit, len(pods))\n\t}",
                }},
                {"name": "run_tests", "arguments": {"selector": "./internal/controller/..."}},
            ]),
            "I'll fix the comparison in the scheduler and then run the tests."
        )
    );
}

/// F-6 (llama.cpp PR #16932) and F-22 (continue #13057).
#[test]
fn qwen3_coder_without_its_wrapper_or_closers_is_taken_as_unclosed() {
    assert_eq!(
        content(include_str!(
            "../../../../tests/data/toolcall/qwen3_coder_unwrapped_unclosed.txt"
        )),
        expect_warned(
            "qwen3-coder",
            json!([{"name": "write_file", "arguments": {
                "path": "notes/todo.md",
                "content": "# TODO\n- [ ] handle <br> tags in {templates}\n",
            }, "unclosed": true}]),
            "",
            &["the call to write_file is not closed; its arguments are complete, so it was taken"]
        )
    );
}

/// F-22 (continue #13057), as reported.
#[test]
fn a_qwen3_coder_value_running_to_the_end_of_the_reply_is_cut_off() {
    let text = "<function=write_file>\n<parameter=path> test.txt";
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
fn a_parameter_without_its_closer_ends_at_the_next_parameter() {
    let text = "<tool_call>\n<function=read_file>\n<parameter=path>\nsrc/a.rs\n<parameter=start_line>\n5\n</parameter>\n</function>\n</tool_call>";
    assert_eq!(
        content(text),
        expect_warned(
            "qwen3-coder",
            json!([{"name": "read_file", "arguments": {"path": "src/a.rs", "start_line": 5}}]),
            "",
            &["a parameter of the call to read_file has no </parameter>; it ends where the next tag starts"]
        )
    );
}

#[test]
fn qwen3_coder_integers_and_booleans_are_typed_and_strings_are_not() {
    let text = "<tool_call>\n<function=edit>\n<parameter=path>\n42\n</parameter>\n<parameter=old_string>\ntrue\n</parameter>\n<parameter=new_string>\n  false  \n</parameter>\n<parameter=replace_all>\nTrue\n</parameter>\n</function>\n</tool_call>";
    assert_eq!(
        content(text),
        expect(
            "qwen3-coder",
            json!([{"name": "edit", "arguments": {"path": "42", "old_string": "true", "new_string": "  false  ", "replace_all": true}}]),
            ""
        )
    );
}

#[test]
fn a_value_that_does_not_fit_its_type_is_kept_as_text_with_a_warning() {
    let text = "<tool_call>\n<function=read_file>\n<parameter=path>\na.rs\n</parameter>\n<parameter=start_line>\nten\n</parameter>\n</function>\n</tool_call>";
    assert_eq!(
        content(text),
        expect_warned(
            "qwen3-coder",
            json!([{"name": "read_file", "arguments": {"path": "a.rs", "start_line": "ten"}}]),
            "",
            &["read_file: start_line should be integer but is \"ten\"; kept the text"]
        )
    );
}

#[test]
fn seed_oss_calls_are_taken_and_a_call_quoted_in_its_thinking_is_not() {
    assert_eq!(
        content(include_str!(
            "../../../../tests/data/toolcall/seed_oss_search.txt"
        )),
        json!({
            "format": "seed-oss",
            "calls": [{"name": "search", "arguments": {"pattern": "fn main\\(\\)", "path": "src"}}],
            "content": "",
            "reasoning": "I need the entry point. Listing the directory with <seed:tool_call>\n<function=list_files>\n</function>\n</seed:tool_call> would be slower than a search.",
        })
    );
}

#[test]
fn a_zero_argument_qwen3_coder_call_has_empty_arguments() {
    let text = "<tool_call>\n<function=list_files>\n</function>\n</tool_call>";
    assert_eq!(
        content(text),
        expect(
            "qwen3-coder",
            json!([{"name": "list_files", "arguments": {}}]),
            ""
        )
    );
}
