//! Function tags: `<function name="NAME" parameters={…} />`, as Qwen2.5-Coder 1.5B wrote them in the agent
//! benchmark's transcripts.

use pretty_assertions::assert_eq;

use super::*;

#[test]
fn function_tags_in_a_tools_block_are_calls_in_order() {
    // rust-mean-overflow, turn 1, shortened: a read and an edit planned at once.
    let text = "<tools>\n    <function name=\"read_file\" parameters={\"path\": \"src/lib.rs\", \"start_line\": 4, \"end_line\": 10} />\n    <function name=\"list_files\" parameters={\"glob\": \"*\", \"path\": \".\"} />\n</tools>";
    assert_eq!(
        content(text),
        expect(
            "function-tag",
            json!([
                {"name": "read_file", "arguments": {"path": "src/lib.rs", "start_line": 4, "end_line": 10}},
                {"name": "list_files", "arguments": {"glob": "*", "path": "."}},
            ]),
            "",
        )
    );
}

#[test]
fn arguments_may_be_a_quoted_json_string_or_the_tag_body() {
    // The quoted JSON holds the quote character in a string: the object is read, then the quote.
    let text = "<function name='write_file' arguments='{\"path\": \"t.js\", \"content\": \"require('node:assert')\"}'/>";
    assert_eq!(
        content(text),
        expect(
            "function-tag",
            json!([{"name": "write_file", "arguments": {"path": "t.js", "content": "require('node:assert')"}}]),
            "",
        )
    );
    let text = "Listing.\n<function name=\"list_files\">{\"path\": \"src\"}</function>";
    assert_eq!(
        content(text),
        expect(
            "function-tag",
            json!([{"name": "list_files", "arguments": {"path": "src"}}]),
            "Listing.",
        )
    );
}

#[test]
fn a_function_tag_without_arguments_is_a_call_without_arguments() {
    // `arguments={null}`: the 1.5B coder's list_files on rust-mean-overflow, twice.
    let text = "<tools>\n<function name=\"list_files\" arguments={null} />\n</tools>";
    assert_eq!(
        content(text),
        expect(
            "function-tag",
            json!([{"name": "list_files", "arguments": {}}]),
            ""
        )
    );
    let text = "<function name=\"list_files\" />";
    assert_eq!(
        content(text),
        expect(
            "function-tag",
            json!([{"name": "list_files", "arguments": {}}]),
            ""
        )
    );
}

#[test]
fn quoted_parameters_may_be_key_value_pairs() {
    // The quick start's third run, turn 1, before the reply repeated itself, wrote this tag with `search`
    // (which then lacks its pattern): a quoted string of pairs.
    let text = "<function name=\"list_files\" parameters=\"glob: **/*.rs, path: src/lib.rs\">";
    assert_eq!(
        content(text),
        expect(
            "function-tag",
            json!([{"name": "list_files", "arguments": {"glob": "**/*.rs", "path": "src/lib.rs"}}]),
            ""
        )
    );
    // A comma splits pairs only where a key follows it.
    let text = "<function name='list_files' parameters='glob: src/{a,b}.rs' />";
    assert_eq!(
        content(text),
        expect(
            "function-tag",
            json!([{"name": "list_files", "arguments": {"glob": "src/{a,b}.rs"}}]),
            ""
        )
    );
}
