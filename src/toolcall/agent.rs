//! vouch's own agent tools, as OpenAI tool definitions: the one place they are defined.

use serde_json::{json, Value};

/// The tools vouch offers its agent, as a JSON array of OpenAI tool definitions.
pub fn agent_tools() -> Value {
    json!([
        function(
            "read_file",
            "Read a text file of the repository, optionally only a range of lines.",
            json!({
                "path": {"type": "string", "description": "The file's path, relative to the repository root."},
                "start_line": {"type": "integer", "description": "The first line to read (1-based) [default: 1]."},
                "end_line": {"type": "integer", "description": "The last line to read, inclusive [default: the end of the file]."}
            }),
            &["path"],
        ),
        function(
            "edit",
            "Replace an exact piece of text in a file with new text.",
            json!({
                "path": {"type": "string", "description": "The file's path, relative to the repository root."},
                "old_string": {"type": "string", "description": "The exact text to replace, whitespace included; it must occur exactly once unless replace_all is set."},
                "new_string": {"type": "string", "description": "The text to put in its place."},
                "replace_all": {"type": "boolean", "description": "Replace every occurrence instead of exactly one [default: false]."}
            }),
            &["path", "old_string", "new_string"],
        ),
        function(
            "write_file",
            "Create a file, or replace a file's whole content.",
            json!({
                "path": {"type": "string", "description": "The file's path, relative to the repository root."},
                "content": {"type": "string", "description": "The complete new content of the file."}
            }),
            &["path", "content"],
        ),
        function(
            "list_files",
            "List the files of the repository under a directory, optionally filtered by a glob.",
            json!({
                "path": {"type": "string", "description": "The directory to list, relative to the repository root [default: the root]."},
                "glob": {"type": "string", "description": "Only files whose path matches this glob, such as **/*.rs."}
            }),
            &[],
        ),
        function(
            "search",
            "Search the repository's files for a regular expression and return the matching lines.",
            json!({
                "pattern": {"type": "string", "description": "The regular expression to search for."},
                "path": {"type": "string", "description": "Search only under this directory or file [default: the root]."},
                "glob": {"type": "string", "description": "Search only files whose path matches this glob, such as **/*.go."}
            }),
            &["pattern"],
        ),
        function(
            "run_tests",
            "Run the repository's tests, or a selection of them, and return the result.",
            json!({
                "selector": {"type": "string", "description": "Which tests to run, in the test runner's own syntax [default: all]."}
            }),
            &[],
        ),
        function(
            "submit",
            "Finish the task with a verdict and a summary of the change.",
            json!({
                "verdict": {"type": "string", "enum": ["GO", "NO-GO"], "description": "GO if the change is complete and the tests pass, NO-GO otherwise."},
                "summary": {"type": "string", "description": "What was changed and why, for the pull request."}
            }),
            &["verdict", "summary"],
        ),
    ])
}

fn function(name: &str, description: &str, properties: Value, required: &[&str]) -> Value {
    json!({
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": properties,
                "required": required,
            }
        }
    })
}
