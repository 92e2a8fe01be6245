//! Template learning on small templates in the style of Hermes, Qwen3-Coder and GLM-4.7, and on one that
//! renders calls without their arguments.

use serde_json::json;

use super::*;

const HERMES: &str = r#"{%- for m in messages -%}
<|im_start|>{{ m.role }}
{% if m.tool_calls %}{% for tc in m.tool_calls %}<tool_call>
{"name": "{{ tc.function.name }}", "arguments": {{ tc.function.arguments | tojson }}}
</tool_call>{% endfor %}{% else %}{{ m.content }}{% endif %}<|im_end|>
{% endfor -%}"#;

const QWEN3_CODER: &str = r#"{%- for m in messages -%}
<|im_start|>{{ m.role }}
{%- if m.tool_calls %}{% for tc in m.tool_calls %}
<tool_call>
<function={{ tc.function.name }}>
{% for k, v in tc.function.arguments.items() %}<parameter={{ k }}>
{{ v }}
</parameter>
{% endfor %}</function>
</tool_call>{% endfor %}{% else %}
{{ m.content }}{% endif %}<|im_end|>
{% endfor -%}"#;

const GLM47: &str = r#"{%- for m in messages -%}
<|{{ m.role }}|>
{%- if m.tool_calls %}{% for tc in m.tool_calls %}<tool_call>{{ tc.function.name }}{% for k, v in tc.function.arguments.items() %}<arg_key>{{ k }}</arg_key><arg_value>{{ v }}</arg_value>{% endfor %}</tool_call>{% endfor %}{% else %}{{ m.content }}{% endif %}
{% endfor -%}"#;

/// Renders the wrapper and the name, never the arguments.
const DROPS_ARGUMENTS: &str = r#"{%- for m in messages -%}
<|im_start|>{{ m.role }}
{% if m.tool_calls %}{% for tc in m.tool_calls %}<tool_call>{{ tc.function.name }}</tool_call>{% endfor %}{% else %}{{ m.content }}{% endif %}<|im_end|>
{% endfor -%}"#;

const NO_TOOLS: &str = "{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}";

#[test]
fn a_hermes_template_is_learned_as_json_in_tool_call_tags() {
    let l = learn(HERMES).unwrap();
    assert_eq!(l.open, "<tool_call>");
    assert_eq!(l.close, "</tool_call>");
    assert_eq!(
        l.shape,
        Shape::Json {
            name_field: Some(vec!["name".into()]),
            args_field: Some(vec!["arguments".into()]),
        }
    );
    assert_eq!(l.known_format.as_deref(), Some("hermes"));
    let calls = l.parse("Sure.\n<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.rs\"}}\n</tool_call>");
    assert_eq!(calls, [("read_file".to_string(), json!({"path": "a.rs"}))]);
}

#[test]
fn a_qwen3_coder_template_is_learned_with_its_parameter_tags() {
    let l = learn(QWEN3_CODER).unwrap();
    assert_eq!(l.open, "<tool_call>\n<function=");
    assert!(matches!(&l.shape, Shape::Tagged { key_to_value, .. } if key_to_value.trim() == ">"));
    assert_eq!(l.known_format.as_deref(), Some("qwen3-coder"));
    let text = "<tool_call>\n<function=grep>\n<parameter=pattern>\nTODO\n</parameter>\n<parameter=limit>\n5\n</parameter>\n</function>\n</tool_call>";
    assert_eq!(
        l.parse(text),
        [("grep".to_string(), json!({"pattern": "TODO", "limit": 5}))]
    );
}

#[test]
fn a_glm47_template_is_learned_with_arg_key_and_arg_value() {
    let l = learn(GLM47).unwrap();
    assert_eq!(l.open, "<tool_call>");
    match &l.shape {
        Shape::Tagged {
            name_to_first_key,
            key_to_value,
            value_to_key,
            ..
        } => {
            assert_eq!(name_to_first_key, "<arg_key>");
            assert_eq!(key_to_value, "</arg_key><arg_value>");
            assert_eq!(value_to_key, "</arg_value><arg_key>");
        }
        other => panic!("{other:?}"),
    }
    let text = "<tool_call>read_file<arg_key>path</arg_key><arg_value>internal/x.go</arg_value><arg_key>n</arg_key><arg_value>3</arg_value></tool_call>";
    assert_eq!(
        l.parse(text),
        [(
            "read_file".to_string(),
            json!({"path": "internal/x.go", "n": 3})
        )]
    );
    assert_eq!(
        l.parse("<tool_call>get_time</tool_call>"),
        [("get_time".to_string(), json!({}))]
    );
}

#[test]
fn a_template_that_drops_arguments_is_named_plainly() {
    let e = learn(DROPS_ARGUMENTS).unwrap_err();
    assert_eq!(e, LearnError::DropsArguments);
    assert_eq!(
        e.to_string(),
        "this chat template drops tool-call arguments; use a corrected template"
    );
}

#[test]
fn a_template_without_tool_calls_says_so() {
    assert_eq!(learn(NO_TOOLS).unwrap_err(), LearnError::NoToolCalls);
}

#[test]
fn what_was_learned_is_cached_by_template_hash() {
    let dir = tempfile::tempdir().unwrap();
    let l = learn_cached(GLM47, Some(dir.path())).unwrap();
    let file = dir.path().join(format!("{}.json", template_hash(GLM47)));
    assert!(file.is_file());
    assert_eq!(learn_cached(GLM47, Some(dir.path())).unwrap(), l);
    assert_eq!(
        learn_cached(DROPS_ARGUMENTS, Some(dir.path())).unwrap_err(),
        LearnError::DropsArguments
    );
}

#[test]
fn smollm2s_shipped_tool_template_is_learned() {
    let t = include_str!("../../../tests/llama/chatml-smol-tools.jinja");
    let l = learn(t).unwrap();
    assert!(l.known_format.is_some(), "{l:?}");
}

/// Hugging Face templates call `tojson(ensure_ascii=False)` and wrap the assistant turn in
/// `{% generation %}`: both render.
#[test]
fn tojson_keyword_arguments_and_generation_markers_render() {
    let t = r#"{%- for m in messages -%}
<|im_start|>{{ m.role }}
{% generation %}{% if m.tool_calls %}{% for tc in m.tool_calls %}<tool_call>
{"name": "{{ tc.function.name }}", "arguments": {{ tc.function.arguments | tojson(ensure_ascii=False) }}}
</tool_call>{% endfor %}{% else %}{{ m.content }}{% endif %}{% endgeneration %}<|im_end|>
{% endfor -%}"#;
    let l = learn(t).unwrap();
    assert_eq!(l.known_format.as_deref(), Some("hermes"));
    let text = render_calls(
        t,
        &[("read_file".to_string(), json!({"path": "é.rs"}))],
        &[render::sentinel_tool()],
    )
    .unwrap();
    assert_eq!(
        text,
        "<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\":\"é.rs\"}}\n</tool_call>"
    );
}

#[test]
fn a_template_that_fails_to_render_is_named_in_one_line() {
    let template = "{%- for m in messages %}{{ m.content + m.missing }}{% endfor %}";
    let err = learn(template).unwrap_err();
    let text = err.to_string();
    assert!(
        text.starts_with("the chat template does not render"),
        "{text}"
    );
    assert!(!text.contains('\n'), "one line, not the debug dump: {text}");
    assert!(text.contains("(in "), "the place of the error: {text}");
}
