//! The recovery order (native calls, answer, reasoning), names, schemas and the public API.

use pretty_assertions::assert_eq;

use super::*;

/// F-42 (llama.cpp #13224).
#[test]
fn native_calls_come_first_and_blank_content_becomes_empty() {
    let calls = [native("read_file", r#"{"path": "a.rs"}"#)];
    assert_eq!(
        recovered(Message {
            content: Some("\n\n"),
            reasoning_content: None,
            tool_calls: &calls,
        }),
        expect(
            "native",
            json!([{"name": "read_file", "arguments": {"path": "a.rs"}}]),
            ""
        )
    );
}

#[test]
fn native_arguments_with_trailing_commas_or_single_quotes_are_repaired() {
    let calls = [
        native("read_file", r#"{"path": "a.rs", "end_line": 3,}"#),
        native("search", "{'pattern': 'fn main', 'path': None}"),
    ];
    assert_eq!(
        recovered(Message {
            content: None,
            reasoning_content: None,
            tool_calls: &calls,
        }),
        expect_warned(
            "native",
            json!([
                {"name": "read_file", "arguments": {"path": "a.rs", "end_line": 3}},
                {"name": "search", "arguments": {"pattern": "fn main", "path": null}},
            ]),
            "",
            &[
                "repaired the arguments of the call to read_file: a trailing comma",
                "repaired the arguments of the call to search: single quotes, Python constants",
            ]
        )
    );
}

#[test]
fn native_arguments_encoded_twice_are_decoded() {
    let calls = [native("list_files", r#""{\"path\": \"src\"}""#)];
    assert_eq!(
        recovered(Message {
            tool_calls: &calls,
            ..Message::default()
        }),
        expect_warned(
            "native",
            json!([{"name": "list_files", "arguments": {"path": "src"}}]),
            "",
            &["the arguments of list_files were a JSON string holding an object; decoded it"]
        )
    );
}

/// F-15 (vLLM #32587).
#[test]
fn native_names_with_leaked_harmony_tokens_or_prefixes_resolve() {
    let calls = [
        native("read_file<|channel|>commentary", r#"{"path": "a"}"#),
        native("functions.list_files", ""),
    ];
    assert_eq!(
        recovered(Message {
            tool_calls: &calls,
            ..Message::default()
        }),
        expect_warned(
            "native",
            json!([
                {"name": "read_file", "arguments": {"path": "a"}},
                {"name": "list_files", "arguments": {}},
            ]),
            "",
            &[
                "read the tool name \"read_file<|channel|>commentary\" as read_file",
                "read the tool name \"functions.list_files\" as list_files",
            ]
        )
    );
}

#[test]
fn unusable_native_calls_fall_back_to_calls_in_the_text() {
    let calls = [native("read_file", "{path: a.rs")];
    assert_eq!(
        recovered(Message {
            content: Some("<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.rs\"}}\n</tool_call>"),
            reasoning_content: None,
            tool_calls: &calls,
        }),
        expect_warned(
            "hermes",
            json!([{"name": "read_file", "arguments": {"path": "a.rs"}}]),
            "",
            &[
                "dropped the call to read_file: its arguments are not JSON: {path: a.rs",
                "no usable native tool call; looked for calls in the text",
            ]
        )
    );
}

/// F-12 (vLLM #19017).
#[test]
fn a_call_in_reasoning_content_is_taken_when_the_content_is_empty() {
    let reasoning =
        "<tool_call>\n{\"name\": \"list_files\", \"arguments\": {\"path\": \"src\"}}\n</tool_call>";
    assert_eq!(
        recovered(Message {
            content: Some(""),
            reasoning_content: Some(reasoning),
            tool_calls: &[],
        }),
        expect_warned(
            "hermes",
            json!([{"name": "list_files", "arguments": {"path": "src"}}]),
            "",
            &["took 1 call(s) from the reasoning: the reply has no answer text and the reasoning ends with them"]
        )
    );
}

#[test]
fn a_call_in_reasoning_content_is_not_taken_when_there_is_an_answer() {
    let reasoning =
        "<tool_call>\n{\"name\": \"list_files\", \"arguments\": {\"path\": \"src\"}}\n</tool_call>";
    assert_eq!(
        recovered(Message {
            content: Some("The sources are in src/."),
            reasoning_content: Some(reasoning),
            tool_calls: &[],
        }),
        json!({
            "format": "none",
            "calls": [],
            "content": "The sources are in src/.",
            "reasoning": reasoning,
        })
    );
}

/// F-41 (verl #4757).
#[test]
fn a_call_quoted_inside_think_before_an_answer_is_not_a_call() {
    assert_eq!(
        content(include_str!(
            "../../../tests/data/toolcall/think_mention_then_answer.txt"
        )),
        json!({
            "format": "none",
            "calls": [],
            "content": "The function returns `None` when the list is empty.",
            "reasoning": "Maybe I should call\n<tool_call>\n{\"name\": \"write_file\", \"arguments\": {\"path\": \"out.txt\", \"content\": \"x\"}}\n</tool_call>\nbut the user only asked a question, so no tool is needed.",
        })
    );
}

#[test]
fn a_call_quoted_mid_thought_is_not_taken_even_without_an_answer() {
    let text =
        "<think>Maybe <tool_call>list_files</tool_call> is useful, but I am not sure yet.</think>";
    assert_eq!(
        content(text),
        json!({
            "format": "none",
            "calls": [],
            "content": "",
            "reasoning": "Maybe <tool_call>list_files</tool_call> is useful, but I am not sure yet.",
        })
    );
}

/// F-9 (vLLM #39056).
#[test]
fn a_call_that_ends_the_thinking_of_a_reply_without_answer_is_taken() {
    let text = "<think>I need the scheduler source.\n<tool_call>\n<function=read_file>\n<parameter=path>\nscheduling.go\n</parameter>\n</function>\n</tool_call>\n</think>\n\n";
    assert_eq!(
        content(text),
        json!({
            "format": "qwen3-coder",
            "calls": [{"name": "read_file", "arguments": {"path": "scheduling.go"}}],
            "content": "",
            "reasoning": "I need the scheduler source.",
            "warnings": ["took 1 call(s) from the reasoning: the reply has no answer text and the reasoning ends with them"],
        })
    );
}

/// F-11 (vLLM #51679).
#[test]
fn reasoning_opened_by_the_template_ends_at_the_first_close_tag() {
    let text = "The user wants a listing.\n</think>\n\n<tool_call>\n{\"name\": \"list_files\", \"arguments\": {}}\n</tool_call>";
    assert_eq!(
        content(text),
        json!({
            "format": "hermes",
            "calls": [{"name": "list_files", "arguments": {}}],
            "content": "",
            "reasoning": "The user wants a listing.",
        })
    );
}

#[test]
fn the_first_format_that_yields_a_call_wins() {
    let text = "Per the docs, wrap calls in <tool_call> tags.\n[TOOL_CALLS]list_files[ARGS]{\"path\": \".\"}";
    assert_eq!(
        content(text),
        expect(
            "mistral",
            json!([{"name": "list_files", "arguments": {"path": "."}}]),
            "Per the docs, wrap calls in <tool_call> tags."
        )
    );
}

#[test]
fn a_forced_format_reads_text_the_detector_would_not_choose() {
    let text = "<tool_call>read_file<arg_key>path</arg_key><arg_value>a.go</arg_value></tool_call>";
    assert_eq!(
        forced(text, Format::Glm),
        expect(
            "glm",
            json!([{"name": "read_file", "arguments": {"path": "a.go"}}]),
            ""
        )
    );
    assert_eq!(
        forced(text, Format::Hermes),
        expect("none", json!([]), text)
    );
}

#[test]
fn plain_text_has_no_calls_and_keeps_its_content() {
    let text = "  All tests pass. The fix is in `src/lib.rs`.<|im_end|>\n";
    assert_eq!(
        content(text),
        expect(
            "none",
            json!([]),
            "All tests pass. The fix is in `src/lib.rs`."
        )
    );
}

#[test]
fn a_missing_required_argument_is_reported_but_the_call_is_kept() {
    let text = "<tool_call>edit<arg_key>path</arg_key><arg_value>a.rs</arg_value></tool_call>";
    assert_eq!(
        content(text),
        expect_warned(
            "glm",
            json!([{"name": "edit", "arguments": {"path": "a.rs"}}]),
            "",
            &[
                "the call to edit lacks the required argument old_string",
                "the call to edit lacks the required argument new_string",
            ]
        )
    );
}

#[test]
fn no_call_is_recovered_when_no_tools_are_offered() {
    let msg = Message {
        content: Some("<tool_call>list_files</tool_call>"),
        ..Message::default()
    };
    assert_eq!(
        to_json(&recover(&msg, &[], None)),
        with_unknown(
            expect_warned(
                "glm",
                json!([]),
                "",
                &["dropped a call to \"list_files\": no such tool is offered (no tools are offered)"]
            ),
            &["list_files"],
        )
    );
}

#[test]
fn schema_types_cover_numbers_arrays_objects_unions_and_type_aliases() {
    let tools = ToolSpec::from_openai(
        &json!([{"type": "function", "function": {"name": "t", "parameters": {
            "type": "object",
            "properties": {
                "ratio": {"type": "number"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "opts": {"type": "object"},
                "limit": {"type": ["integer", "null"]},
                "mode": {"enum": ["1", "2"]},
                "level": {"anyOf": [{"type": "integer"}, {"type": "boolean"}]},
                "size": {"type": "int"},
            }
        }}}]),
    )
    .unwrap();
    let text = "<tool_call>t<arg_key>ratio</arg_key><arg_value>0.5</arg_value><arg_key>tags</arg_key><arg_value>[\"a\", \"b\"]</arg_value><arg_key>opts</arg_key><arg_value>{\"x\": 1,}</arg_value><arg_key>limit</arg_key><arg_value>null</arg_value><arg_key>mode</arg_key><arg_value>2</arg_value><arg_key>level</arg_key><arg_value>false</arg_value><arg_key>size</arg_key><arg_value> 7 </arg_value><arg_key>extra</arg_key><arg_value>3</arg_value></tool_call>";
    let msg = Message {
        content: Some(text),
        ..Message::default()
    };
    assert_eq!(
        to_json(&recover(&msg, &tools, None)),
        expect(
            "glm",
            json!([{"name": "t", "arguments": {
                "ratio": 0.5,
                "tags": ["a", "b"],
                "opts": {"x": 1},
                "limit": null,
                "mode": "2",
                "level": false,
                "size": 7,
                "extra": "3",
            }}]),
            ""
        )
    );
}

#[test]
fn tool_definitions_are_read_with_or_without_the_function_wrapper() {
    let defs = json!([
        {"type": "function", "function": {"name": "a", "parameters": {"type": "object"}}},
        {"name": "b"},
    ]);
    assert_eq!(
        ToolSpec::from_openai(&defs).unwrap(),
        vec![
            ToolSpec {
                name: "a".to_string(),
                parameters: json!({"type": "object"}),
            },
            ToolSpec {
                name: "b".to_string(),
                parameters: json!({"type": "object", "properties": {}}),
            },
        ]
    );
    let err = ToolSpec::from_openai(&json!([{"function": {}}])).unwrap_err();
    assert_eq!(err.to_string(), "tool definition 0 has no `name`");
}

#[test]
fn agent_tools_are_described_and_submit_takes_an_enum_verdict() {
    let tools = agent_tools();
    let names: Vec<&str> = tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
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
    for t in tools.as_array().unwrap() {
        let f = &t["function"];
        assert!(
            f["description"].as_str().is_some_and(|d| d.ends_with('.')),
            "{f}"
        );
        for (name, p) in f["parameters"]["properties"].as_object().unwrap() {
            assert!(p["description"].is_string(), "{name} of {}", f["name"]);
        }
    }
    assert_eq!(
        tools[6]["function"]["parameters"]["properties"]["verdict"],
        json!({"type": "string", "enum": ["GO", "NO-GO"], "description": "GO if the change is complete and the tests pass, NO-GO otherwise."})
    );
    assert_eq!(
        tools[0]["function"]["parameters"]["required"],
        json!(["path"])
    );
}

#[test]
fn format_names_round_trip_and_serialize_as_strings() {
    for f in Format::PARSERS {
        assert_eq!(Format::from_name(f.name()), Some(f));
    }
    assert_eq!(Format::from_name("none"), None);
    assert_eq!(
        serde_json::to_value(Format::DeepseekV31).unwrap(),
        json!("deepseek-v3.1")
    );
}

#[test]
fn fenced_calls_under_markdown_headings_are_calls_in_order() {
    // The quick start's first run on a fresh machine, turn 1, shortened: each planned call under a heading.
    let text = "### Tools Call\n\n```json\n{\"name\": \"list_files\", \"arguments\": {\"path\": \"src\"}}\n```\n\n### Tools Call\n\n```json\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"src/lib.rs\"}}\n```\n";
    assert_eq!(
        content(text),
        expect(
            "json",
            json!([
                {"name": "list_files", "arguments": {"path": "src"}},
                {"name": "read_file", "arguments": {"path": "src/lib.rs"}},
            ]),
            "### Tools Call\n\n\n\n### Tools Call",
        )
    );
    // A sentence between two calls makes the first an example when prose comes before it too.
    let text = "I could list them:\n```json\n{\"name\": \"list_files\", \"arguments\": {\"path\": \"src\"}}\n```\nThis would list them; instead:\n```json\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"src/lib.rs\"}}\n```\n";
    assert_eq!(content(text)["calls"].as_array().map(Vec::len), Some(1));
}

#[test]
fn fenced_calls_that_open_the_reply_are_calls_whatever_prose_follows() {
    // Qwen2.5-Coder 1.5B on py-median-empty, turn 2, shortened: a plan of fenced calls, one of them not
    // valid JSON (a raw `\"\"\"` in a string), then a sentence about the plan. Before, the sentence made every
    // call an example and the reply ran nothing.
    let edit = "```json\n{\n    \"name\": \"edit\",\n    \"arguments\": {\n        \"old_string\": \"a\",\n        \"new_string\": \"b\",\n        \"path\": \"stats.py\"\n    }\n}\n```";
    let broken = "```json\n{\"name\": \"write_file\", \"arguments\": {\"content\": \"def f():\\n    \"\"\"Doc.\"\"\"\\n\", \"path\": \"stats.py\"}}\n```";
    let run = "```json\n{\"name\": \"run_tests\", \"arguments\": {}}\n```";
    let text = format!(
        "{edit}\n\n{broken}\n\n{run}\n\nThis approach ensures that the repository contains a change that resolves it."
    );
    assert_eq!(
        content(&text)["calls"],
        json!([{"name": "edit", "arguments": {"old_string": "a", "new_string": "b", "path": "stats.py"}}])
    );
    // A run of them, the first under a heading, with the sentence after the last.
    let plan = format!("### Step 1\n\n{edit}\n\n{run}\n\nThis fixes the issue.");
    assert_eq!(content(&plan)["calls"].as_array().map(Vec::len), Some(2));
}
