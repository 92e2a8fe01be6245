//! The syntax learned from a chat template, used by recovery: a reply in a syntax none of vouch's parsers
//! reads is recovered once the template's syntax is given.

use pretty_assertions::assert_eq;

use super::super::learn::{learn, Learned};
use super::super::recover_with;
use super::*;

/// Tag, name, then JSON arguments, in delimiters no known family uses.
const TAG_JSON: &str = r#"{%- for m in messages -%}
<|{{ m.role }}|>
{%- if m.tool_calls %}{% for tc in m.tool_calls %}<<invoke>>{{ tc.function.name }}<<with>>{{ tc.function.arguments | tojson }}<</invoke>>{% endfor %}{% else %}{{ m.content }}{% endif %}
{% endfor -%}"#;

/// Tag, name, then tagged keys and values.
const TAGGED: &str = r#"{%- for m in messages -%}
<|{{ m.role }}|>
{%- if m.tool_calls %}{% for tc in m.tool_calls %}@@call {{ tc.function.name }}{% for k, v in tc.function.arguments.items() %} @key {{ k }} @val {{ v }}{% endfor %} @@end{% endfor %}{% else %}{{ m.content }}{% endif %}
{% endfor -%}"#;

fn learned(template: &str) -> Learned {
    match learn(template) {
        Ok(l) => l,
        Err(e) => panic!("learn: {e}"),
    }
}

fn with(template: &str, text: &str) -> Value {
    let l = learned(template);
    let msg = Message {
        content: Some(text),
        ..Message::default()
    };
    to_json(&recover_with(&msg, &agent(), None, Some(&l)))
}

#[test]
fn a_learned_tag_json_syntax_is_recovered_only_with_the_template() {
    let l = learned(TAG_JSON);
    assert_eq!(l.known_format, None);
    let text = "Reading it.\n<<invoke>>read_file<<with>>{\"path\": \"src/lib.rs\"}<</invoke>>";
    assert_eq!(content(text)["format"], json!("none"));
    assert_eq!(
        with(TAG_JSON, text),
        expect(
            "learned",
            json!([{"name": "read_file", "arguments": {"path": "src/lib.rs"}}]),
            "Reading it."
        )
    );
}

#[test]
fn a_learned_tagged_syntax_types_its_values_with_the_schema() {
    let l = learned(TAGGED);
    assert_eq!(l.known_format, None);
    let text = "@@call read_file @key path @val 2024.rs @key end_line @val 5 @@end";
    assert_eq!(content(text)["format"], json!("none"));
    assert_eq!(
        with(TAGGED, text),
        expect(
            "learned",
            json!([{"name": "read_file", "arguments": {"path": "2024.rs", "end_line": 5}}]),
            ""
        )
    );
}

#[test]
fn two_learned_calls_are_both_taken_and_unknown_tools_are_dropped() {
    let text = "<<invoke>>list_files<<with>>{\"path\": \"src\"}<</invoke>>\n<<invoke>>rm_rf<<with>>{}<</invoke>>";
    let out = with(TAG_JSON, text);
    assert_eq!(out["format"], json!("learned"));
    assert_eq!(
        out["calls"],
        json!([{"name": "list_files", "arguments": {"path": "src"}}])
    );
    assert_eq!(out["content"], json!(""));
}

#[test]
fn a_learned_syntax_that_a_known_parser_reads_changes_nothing() {
    let hermes = r#"{%- for m in messages -%}
<|im_start|>{{ m.role }}
{% if m.tool_calls %}{% for tc in m.tool_calls %}<tool_call>
{"name": "{{ tc.function.name }}", "arguments": {{ tc.function.arguments | tojson }}}
</tool_call>{% endfor %}{% else %}{{ m.content }}{% endif %}<|im_end|>
{% endfor -%}"#;
    let text = "<tool_call>\n{\"name\": \"list_files\", \"arguments\": {}}\n</tool_call>";
    assert_eq!(with(hermes, text), content(text));
    assert_eq!(content(text)["format"], json!("hermes"));
}

#[test]
fn the_learned_format_can_be_forced() {
    let l = learned(TAG_JSON);
    let text = "<<invoke>>list_files<<with>>{}<</invoke>>";
    let msg = Message {
        content: Some(text),
        ..Message::default()
    };
    let out = to_json(&recover_with(
        &msg,
        &agent(),
        Some(Format::Learned),
        Some(&l),
    ));
    assert_eq!(out["format"], json!("learned"));
    // Forced without a learned syntax, it finds nothing.
    assert_eq!(forced(text, Format::Learned)["format"], json!("none"));
}
