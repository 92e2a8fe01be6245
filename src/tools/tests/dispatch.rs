//! The registry: names, schemas, argument checking and the errors a model sees for a bad call.

use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::super::{Context, Registry, Settings, ShellRunner, Submission};
use super::fixture;
use crate::gate::outcome::Claim;

/// Settings that allow `shell` (the runner is never started here).
fn with_shell() -> Settings {
    Settings {
        tests: None,
        shell: Some(ShellRunner::new(
            ".".into(),
            "logs".into(),
            Duration::from_secs(1),
            None,
            crate::sandbox::Sandbox::off(),
            std::env::temp_dir().join("vouch-dispatch-test-home"),
            Vec::new(),
        )),
    }
}

#[test]
fn the_registry_offers_every_tool_in_order_with_its_own_definition() {
    let standard = Registry::standard();
    assert_eq!(
        standard.names(),
        [
            "read_file",
            "edit",
            "write_file",
            "list_files",
            "search",
            "run_tests",
            "submit"
        ]
    );
    assert_eq!(
        Registry::for_run(&Settings::default()).names(),
        standard.names()
    );
    let run = Registry::for_run(&with_shell());
    let mut names = standard.names();
    names.push("shell");
    assert_eq!(run.names(), names);
    for (name, def) in run.names().into_iter().zip(run.definitions()) {
        let tool = run.get(name).unwrap();
        assert_eq!(def["function"]["name"], name);
        assert_eq!(def, tool.definition());
        assert_eq!(def["function"]["parameters"], tool.parameters());
        assert_eq!(def["function"]["description"], tool.description());
    }
    assert_eq!(
        super::super::definitions(),
        Value::Array(standard.definitions())
    );
}

/// The tool list is part of every prompt: a byte that changes invalidates the server's prompt cache and
/// changes what the model tests see. `definitions.json` is the list as it was before the tools owned
/// their schemas (the standard tools, then `shell`).
#[test]
fn the_definitions_are_byte_for_byte_what_the_model_has_always_been_offered() {
    let want = include_str!("definitions.json");
    let run = Registry::for_run(&with_shell());
    assert_eq!(
        serde_json::to_string(&Value::Array(run.definitions())).unwrap(),
        want
    );
    let old: Vec<Value> = serde_json::from_str(want).unwrap();
    assert_eq!(Registry::standard().definitions(), old[..7].to_vec());
}

#[test]
fn only_edit_and_write_file_mutate() {
    let run = Registry::for_run(&with_shell());
    let mutating: Vec<&str> = run
        .names()
        .into_iter()
        .filter(|n| run.get(n).unwrap().mutates())
        .collect();
    assert_eq!(mutating, ["edit", "write_file"]);
}

#[test]
fn an_unknown_tool_lists_the_tools() {
    let f = fixture(&[]);
    assert_eq!(
        f.err("delete_file", json!({"path": "a"})),
        "There is no tool called `delete_file`. The tools are: read_file, edit, write_file, list_files, \
         search, run_tests, submit. If `delete_file` is a name in the code, find it with {\"name\": \
         \"search\", \"arguments\": {\"pattern\": \"delete_file\"}}."
    );
}

#[test]
fn a_function_of_the_code_called_as_a_tool_gets_the_search_that_finds_it() {
    let f = fixture(&[]);
    assert_eq!(
        f.err("median", json!({"values": []})),
        "There is no tool called `median`. The tools are: read_file, edit, write_file, list_files, \
         search, run_tests, submit. If `median` is a name in the code, find it with {\"name\": \"search\", \
         \"arguments\": {\"pattern\": \"median\"}}."
    );
    let err = f.err("ports.Parse", json!({}));
    assert!(
        err.ends_with("{\"name\": \"search\", \"arguments\": {\"pattern\": \"Parse\"}}."),
        "{err}"
    );
    // Not a name: no search to suggest.
    let err = f.err("look around with list_files", json!({}));
    assert!(!err.contains("search\", \"arguments"), "{err}");
}

#[test]
fn the_schema_echoed_around_the_arguments_is_read_as_the_arguments() {
    let f = fixture(&[("a.txt", "a\n")]);
    let plain = f.ok("read_file", json!({"path": "a.txt"}));
    assert_eq!(
        f.ok("read_file", json!({"path": "a.txt", "required": ["path"]})),
        plain
    );
    assert_eq!(
        f.ok(
            "read_file",
            json!({"type": "object", "properties": {"path": "a.txt"}, "required": ["path"]})
        ),
        plain
    );
    // The whole definition echoed, descriptions and all, with no value: as if no field were given.
    let schema = json!({"type": "object", "required": [], "properties": {
        "glob": {"type": "string", "description": "Only files whose path matches this glob."},
        "path": {"type": "string", "description": "The directory to list."}}});
    assert_eq!(f.ok("list_files", schema), f.ok("list_files", json!({})));
    assert_eq!(
        f.err("read_file", json!({"path": {"type": "string", "description": "The file's path."}})),
        "Bad arguments for read_file: missing field `path` (the arguments repeat the tool's definition; \
         give each field its value). read_file takes path (string, required), end_line (integer), \
         start_line (integer)."
    );
    // A field that is really unknown, where a required one is missing, is still refused.
    let err = f.err(
        "read_file",
        json!({"start_line": 1, "file": "b", "glob": "*"}),
    );
    assert!(err.contains("unknown field `file`"), "{err}");
}

#[test]
fn run_tests_without_a_profile_says_so() {
    let f = fixture(&[]);
    assert_eq!(
        f.err("run_tests", json!({})),
        "No gate profile matches this repository, so vouch does not know how to run its tests."
    );
}

/// Runs `submit(args)` and returns what it answered and what it left in the context.
fn submit(args: Value) -> (Result<String, String>, Option<Submission>) {
    let f = fixture(&[]);
    let cancel = CancellationToken::new();
    let mut ctx = Context::new(&f.workspace, &cancel, &f.settings);
    let out = futures::executor::block_on(f.tools.dispatch(&mut ctx, "submit", &args));
    (out.map_err(|e| e.to_string()), ctx.submission)
}

#[test]
fn submit_records_the_claim_and_reads_the_verdict_leniently() {
    assert_eq!(
        submit(json!({"verdict": "GO", "summary": "fixed"})),
        (
            Ok("Submitted GO. The change is being verified by the gate.".to_string()),
            Some(Submission {
                claim: Claim::Go,
                summary: "fixed".into()
            })
        )
    );
    assert_eq!(
        submit(json!({"verdict": " no_go ", "extra": 1})),
        (
            Ok("Submitted NO-GO.".to_string()),
            Some(Submission {
                claim: Claim::NoGo,
                summary: String::new()
            })
        )
    );
    assert_eq!(
        submit(json!({"verdict": "maybe", "summary": "?"})),
        (
            Err("submit needs verdict \"GO\" or \"NO-GO\" and a summary.".to_string()),
            None
        )
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
    // Every required field there and one more: the call runs, and the answer says what was left out.
    assert_eq!(
        f.ok("edit", json!({"path": "a.txt", "old_string": "a", "new_string": "b", "file": "a.txt"})),
        "Edited a.txt: replaced 1 occurrence, now at line 1.\n     1\tb\n(edit takes no `file`: left out.)"
    );
    // Two unknown fields for two missing ones: which is which is a guess, so nothing is guessed.
    assert_eq!(
        f.err("edit", json!({"path": "a.txt", "old": "a", "new": "b"})),
        "Bad arguments for edit: unknown field `new`. edit takes path (string, required), old_string \
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

#[test]
fn one_unknown_field_for_the_one_missing_required_field_is_read_as_it_and_the_answer_says_so() {
    // The 1.5B coder's edit on the quick start's task: `content` where `new_string` belongs.
    let f = fixture(&[("a.txt", "one two\n")]);
    assert_eq!(
        f.ok(
            "edit",
            json!({"path": "a.txt", "old_string": "two", "content": "three"})
        ),
        "Edited a.txt: replaced 1 occurrence, now at line 1.\n     1\tone three\n(There is no field \
         `content`: it was read as `new_string`.)"
    );
    assert_eq!(
        std::fs::read_to_string(f.repo().join("a.txt")).unwrap(),
        "one three\n"
    );
    assert_eq!(
        f.err("read_file", json!({"file_path": "b.txt"})),
        "`b.txt` does not exist. Use list_files to see the files, or write_file to create it.\n(There is \
         no field `file_path`: it was read as `path`.)"
    );
    // An empty path and a glob (the 1.5B coder on py-mutable-default, five times): the glob is the path,
    // and read_file names the files it matches.
    let f = fixture(&[("tags.py", "x = 1\n"), ("tests/test_tags.py", "y = 2\n")]);
    let out = f.err("read_file", json!({"path": "", "glob": "*.py"}));
    assert!(
        out.starts_with("`*.py` is a glob pattern, not a file path")
            && out.contains("tags.py, tests/test_tags.py")
            && out.ends_with("(There is no field `glob`: it was read as `path`.)"),
        "{out}"
    );
    // A path and a glob (the 1.5B coder on py-mutable-default, six times, each refused as an unknown field):
    // the path is read, the glob left out.
    assert_eq!(
        f.ok(
            "read_file",
            json!({"glob": "tests/**", "path": "tests/test_tags.py"})
        ),
        "tests/test_tags.py (1 line)\n     1\ty = 2\n(read_file takes no `glob`: left out.)"
    );
    // A value of the wrong kind for the missing field is not taken for it.
    let err = f.err("read_file", json!({"file_path": ["a.txt"]}));
    assert!(err.contains("unknown field `file_path`"), "{err}");
}
