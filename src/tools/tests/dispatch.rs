//! The registry: names, schemas, argument checking and the errors a model sees for a bad call.

use pretty_assertions::assert_eq;
use serde_json::{json, Value};

use super::super::{definition, LOOP_TOOLS};
use super::fixture;

#[test]
fn every_agent_tool_is_either_a_standard_tool_or_handled_by_the_loop() {
    let f = fixture(&[]);
    let defined: Vec<String> = crate::toolcall::agent_tools()
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["function"]["name"].as_str().unwrap().to_string())
        .collect();
    let mut handled: Vec<String> = f.tools.names().iter().map(|n| n.to_string()).collect();
    handled.extend(LOOP_TOOLS.iter().map(|n| n.to_string()));
    assert_eq!(handled, defined);
    for name in f.tools.names() {
        let tool = f.tools.get(name).unwrap();
        assert_eq!(tool.schema(), definition(name));
        assert_ne!(tool.schema(), Value::Null, "{name} has no schema");
    }
}

#[test]
fn only_edit_and_write_file_mutate() {
    let f = fixture(&[]);
    let mutating: Vec<&str> = f
        .tools
        .names()
        .into_iter()
        .filter(|n| f.tools.get(n).unwrap().mutates())
        .collect();
    assert_eq!(mutating, ["edit", "write_file"]);
}

#[test]
fn an_unknown_tool_lists_the_tools() {
    let f = fixture(&[]);
    assert_eq!(
        f.err("delete_file", json!({"path": "a"})),
        "There is no tool called `delete_file`. The tools are: read_file, edit, write_file, list_files, \
         search, run_tests, submit."
    );
}

#[test]
fn a_loop_tool_says_the_loop_handles_it() {
    let f = fixture(&[]);
    assert_eq!(
        f.err("run_tests", json!({})),
        "run_tests is handled by the agent loop, not by the workspace tools."
    );
}

#[test]
fn missing_unknown_and_mistyped_fields_are_named_with_the_fields_the_tool_takes() {
    let f = fixture(&[("a.txt", "a\n")]);
    assert_eq!(
        f.err("read_file", json!({})),
        "Bad arguments for read_file: missing field `path`. read_file takes path (string, required), \
         end_line (integer), start_line (integer)."
    );
    assert_eq!(
        f.err("edit", json!({"path": "a.txt"})),
        "Bad arguments for edit: missing fields `old_string`, `new_string`. edit takes path (string, \
         required), old_string (string, required), new_string (string, required), replace_all (boolean)."
    );
    assert_eq!(
        f.err("edit", json!({"file_path": "a.txt", "old_string": "a", "new_string": "b"})),
        "Bad arguments for edit: unknown field `file_path`. edit takes path (string, required), old_string \
         (string, required), new_string (string, required), replace_all (boolean)."
    );
    assert_eq!(
        f.err("read_file", json!({"path": "a.txt", "start_line": "ten"})),
        "Bad arguments for read_file: `start_line` must be an integer, not a string. read_file takes path \
         (string, required), end_line (integer), start_line (integer)."
    );
    assert_eq!(
        f.err("list_files", json!(["src"])),
        "Bad arguments for list_files: the arguments must be a JSON object, not an array. list_files takes \
         glob (string), path (string)."
    );
}

#[test]
fn obvious_slips_in_arguments_are_accepted() {
    let f = fixture(&[("a.txt", "1\n2\n3\n")]);
    let expected = "a.txt (lines 2-2 of 3)\n     2\t2";
    assert_eq!(
        f.ok(
            "read_file",
            json!({"path": "a.txt", "start_line": "2", "end_line": 2.0})
        ),
        expected
    );
    assert_eq!(
        f.ok(
            "read_file",
            json!("{\"path\": \"a.txt\", \"start_line\": 2, \"end_line\": 2}")
        ),
        expected
    );
    assert_eq!(
        f.ok("read_file", json!({"path": "a.txt", "start_line": null})),
        "a.txt (3 lines)\n     1\t1\n     2\t2\n     3\t3"
    );
    assert_eq!(
        f.ok("list_files", Value::Null),
        "1 file in the repository:\na.txt"
    );
}
