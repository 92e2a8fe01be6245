//! Rendering a chat template with sentinel conversations (minijinja with Python compatibility: `.items()`,
//! `.strip()`, `raise_exception`, as the Hugging Face templates expect).

use minijinja::{Environment, Error, ErrorKind, Value as JValue};
use serde_json::{json, Value};

/// The sentinel tool names and argument keys and values: strings no template contains.
pub const FUN_FIRST: &str = "FFF_FIRST_FUN_F";
pub const ARG_FIRST: &str = "AAA_ARG_FIRST";
pub const ARG_SECOND: &str = "BBB_ARG_SECOND";
pub const VAL_FIRST: &str = "XXXX_VALUE_1";
pub const VAL_SECOND: &str = "YYYY_VALUE_2";

/// The sentinel tool definition, with both arguments declared as strings.
pub fn sentinel_tool() -> Value {
    json!({
        "type": "function",
        "function": {
            "name": FUN_FIRST,
            "description": "A sentinel tool.",
            "parameters": {
                "type": "object",
                "properties": {
                    ARG_FIRST: {"type": "string", "description": "first"},
                    ARG_SECOND: {"type": "string", "description": "second"}
                },
                "required": [ARG_FIRST]
            }
        }
    })
}

/// Python's `tojson`, with the keyword arguments Hugging Face templates pass (`ensure_ascii`, `indent`,
/// `separators`, `sort_keys`) accepted; the output is compact JSON, or indented when `indent` is given.
fn tojson(value: JValue, kwargs: minijinja::value::Kwargs) -> Result<JValue, Error> {
    let indent: Option<JValue> = kwargs.get("indent")?;
    for unused in ["ensure_ascii", "separators", "sort_keys"] {
        let _: Option<JValue> = kwargs.get(unused)?;
    }
    kwargs.assert_all_used()?;
    let v = serde_json::to_value(&value)
        .map_err(|e| Error::new(ErrorKind::InvalidOperation, e.to_string()))?;
    let text = match indent.filter(|i| !i.is_none() && !i.is_undefined()) {
        Some(_) => serde_json::to_string_pretty(&v),
        None => serde_json::to_string(&v),
    }
    .map_err(|e| Error::new(ErrorKind::InvalidOperation, e.to_string()))?;
    Ok(JValue::from_safe_string(text))
}

/// The template without Hugging Face's `{% generation %}` markers (they only mark the assistant's tokens for
/// training masks, and minijinja does not know the statement).
fn without_generation_tags(template: &str) -> String {
    let mut out = template.to_string();
    for tag in ["generation", "endgeneration"] {
        for (open, close) in [("{%", "%}"), ("{%-", "-%}"), ("{%-", "%}"), ("{%", "-%}")] {
            out = out.replace(&format!("{open} {tag} {close}"), "");
        }
    }
    out
}

/// A compiled template.
pub struct Renderer {
    env: Environment<'static>,
}

fn raise_exception(msg: String) -> Result<JValue, Error> {
    Err(Error::new(ErrorKind::InvalidOperation, msg))
}

impl Renderer {
    pub fn new(template: &str) -> Result<Renderer, Error> {
        let mut env = Environment::new();
        minijinja_contrib::add_to_environment(&mut env);
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        env.add_function("raise_exception", raise_exception);
        env.add_function("strftime_now", |_fmt: String| "01 Jan 2026".to_string());
        env.add_filter("tojson", tojson);
        env.add_template_owned("chat", without_generation_tags(template))?;
        Ok(Renderer { env })
    }

    /// A user turn, then an assistant turn with `calls` (each a list of `(key, value)` arguments) or,
    /// with no calls, the content `CCCC_CONTENT`.
    pub fn render(&self, calls: &[Vec<(&str, &str)>], string_args: bool) -> Result<String, Error> {
        let tool_calls: Vec<Value> = calls
            .iter()
            .enumerate()
            .map(|(i, args)| {
                let obj: serde_json::Map<String, Value> = args
                    .iter()
                    .map(|(k, v)| (k.to_string(), json!(v)))
                    .collect();
                let arguments = if string_args {
                    json!(Value::Object(obj).to_string())
                } else {
                    Value::Object(obj)
                };
                json!({
                    "id": format!("call{:05}", i + 1),
                    "type": "function",
                    "function": {"name": FUN_FIRST, "arguments": arguments}
                })
            })
            .collect();
        let assistant = if calls.is_empty() {
            json!({"role": "assistant", "content": "CCCC_CONTENT"})
        } else {
            json!({"role": "assistant", "content": "", "tool_calls": tool_calls})
        };
        self.render_turn(assistant, &[sentinel_tool()])
    }

    /// A user turn, then `assistant` (a message object), with `tools` offered.
    pub fn render_turn(&self, assistant: Value, tools: &[Value]) -> Result<String, Error> {
        let ctx = json!({
            "messages": [{"role": "user", "content": "UUUU_USER"}, assistant],
            "tools": tools,
            "add_generation_prompt": false,
            "bos_token": "",
            "eos_token": "",
        });
        self.env
            .get_template("chat")?
            .render(JValue::from_serialize(&ctx))
    }
}
