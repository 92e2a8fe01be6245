//! Learning an unknown tool-call format from the chat template itself.
//!
//! A server that does not know a model's call syntax leaves the calls in the text; the template that taught
//! the model the syntax still knows it. So the template is rendered (`render.rs`, minijinja with Python
//! compatibility) with sentinel tools and values, the renders are diffed (llama.cpp's differential approach):
//! no call against one call gives the call's text; one argument against two, and zero arguments, give the
//! delimiters around the name, the argument keys and the values. The result ([`Learned`]) reads calls
//! (`parse.rs`) and is cached by the template's hash. A template whose rendered calls carry the name but no
//! argument is reported as such ([`LearnError::DropsArguments`]): a parser learned from it would learn the
//! wrapper and never the arguments, and fail exactly like having no parser.

pub(crate) mod parse;
mod render;

#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use render::{Renderer, ARG_FIRST, ARG_SECOND, FUN_FIRST, VAL_FIRST, VAL_SECOND};

/// What was learned about a template's call syntax.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Learned {
    /// The text that opens a call (the wrapper and what precedes the name or the JSON), whitespace trimmed.
    pub open: String,
    /// The text after the last argument that closes a call.
    pub close: String,
    pub shape: Shape,
    /// The recovery format of vouch's own parsers that reads the rendered call, when one does.
    pub known_format: Option<String>,
    /// Arguments are rendered from a JSON string rather than an object.
    pub string_arguments: bool,
}

/// How the name and the arguments are written.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Shape {
    /// A JSON object per call: the name under `name_field`, the arguments under `args_field` (both key
    /// paths); both `None` when the name is the key (Apertus).
    Json {
        name_field: Option<Vec<String>>,
        args_field: Option<Vec<String>>,
    },
    /// A tagged name, then a JSON object of arguments (Functionary, Mistral v11, Kimi).
    TagJson { name_to_args: String },
    /// A tagged name, then tagged keys and values (Qwen3-Coder, GLM).
    Tagged {
        name_to_first_key: String,
        key_to_value: String,
        value_to_key: String,
        value_to_end: String,
        name_to_end: String,
    },
}

/// Why nothing was learned.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum LearnError {
    #[error("the chat template does not render: {0}")]
    Template(String),
    #[error("the chat template renders no tool calls")]
    NoToolCalls,
    #[error("this chat template drops tool-call arguments; use a corrected template")]
    DropsArguments,
    #[error("the rendered tool call has a shape vouch cannot learn: {0}")]
    Unlearnable(String),
}

impl Learned {
    /// The calls in a text written in this syntax, as `(name, arguments)`.
    pub fn parse(&self, text: &str) -> Vec<(String, Value)> {
        parse::parse(self, text)
    }
}

/// SHA-256 of the template, hex: the cache key.
pub fn template_hash(template: &str) -> String {
    hex::encode(Sha256::digest(template.as_bytes()))
}

/// `$VOUCH_CACHE/templates`, else `<user cache dir>/vouch/templates`.
pub fn default_cache_dir() -> Option<PathBuf> {
    Some(crate::gate::prepare::default_cache_dir().join("templates"))
}

/// A cache entry: what learning gave, failures included (they are as stable as successes).
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Cached {
    Learned(Learned),
    DropsArguments,
    NoToolCalls,
}

/// [`learn`], cached under `dir` by template hash (`<hash>.json`). A cache that cannot be read or written
/// is ignored.
pub fn learn_cached(template: &str, dir: Option<&Path>) -> Result<Learned, LearnError> {
    let path = dir.map(|d| d.join(format!("{}.json", template_hash(template))));
    if let Some(cached) = path
        .as_ref()
        .and_then(|p| std::fs::read_to_string(p).ok())
        .and_then(|t| serde_json::from_str::<Cached>(&t).ok())
    {
        return match cached {
            Cached::Learned(l) => Ok(l),
            Cached::DropsArguments => Err(LearnError::DropsArguments),
            Cached::NoToolCalls => Err(LearnError::NoToolCalls),
        };
    }
    let result = learn(template);
    let entry = match &result {
        Ok(l) => Some(Cached::Learned(l.clone())),
        Err(LearnError::DropsArguments) => Some(Cached::DropsArguments),
        Err(LearnError::NoToolCalls) => Some(Cached::NoToolCalls),
        Err(_) => None,
    };
    if let (Some(path), Some(entry)) = (path, entry) {
        if let Some(parent) = path.parent() {
            let _ = std::fs::create_dir_all(parent);
        }
        if let Ok(text) = serde_json::to_string_pretty(&entry) {
            if let Err(e) = std::fs::write(&path, text) {
                tracing::debug!(
                    "cannot cache the learned template at {}: {e}",
                    path.display()
                );
            }
        }
    }
    result
}

/// The part of `call` that differs from `base`: common prefix and suffix removed.
fn diff<'a>(base: &str, call: &'a str) -> &'a str {
    let prefix = base
        .char_indices()
        .zip(call.chars())
        .take_while(|((_, a), b)| a == b)
        .last()
        .map_or(0, |((i, a), _)| i + a.len_utf8());
    let rest_b = &base[prefix..];
    let rest_c = &call[prefix..];
    let suffix = rest_b
        .chars()
        .rev()
        .zip(rest_c.chars().rev())
        .take_while(|(a, b)| a == b)
        .map(|(a, _)| a.len_utf8())
        .sum::<usize>();
    &rest_c[..rest_c.len() - suffix]
}

/// The error in one line: what went wrong and where (`(in chat:104)`). The alternate form adds
/// minijinja's debug dump of the template source and every variable, pages long in a report or a table.
fn tmpl_err(e: minijinja::Error) -> LearnError {
    LearnError::Template(e.to_string())
}

/// What `template` renders for an assistant turn holding `calls` (`(name, arguments object)`), with
/// `tools` (OpenAI definitions) offered: the render with the calls minus the render of a plain answer,
/// as learning diffs them. A model trained on the template writes its calls this way, so this is the text
/// to check recovery against.
pub fn render_calls(
    template: &str,
    calls: &[(String, Value)],
    tools: &[Value],
) -> Result<String, LearnError> {
    let r = Renderer::new(template).map_err(tmpl_err)?;
    let plain = json!({"role": "assistant", "content": "CCCC_CONTENT"});
    let base = r.render_turn(plain, tools).map_err(tmpl_err)?;
    let turn = |as_string: bool| {
        let tool_calls: Vec<Value> = calls
            .iter()
            .enumerate()
            .map(|(i, (name, args))| {
                let arguments = if as_string {
                    json!(args.to_string())
                } else {
                    args.clone()
                };
                json!({
                    "id": format!("call{:05}", i + 1),
                    "type": "function",
                    "function": {"name": name, "arguments": arguments},
                })
            })
            .collect();
        json!({"role": "assistant", "content": "", "tool_calls": tool_calls})
    };
    // Arguments as an object, else as a JSON string (templates differ, as in learning).
    let text = match r.render_turn(turn(false), tools) {
        Ok(t) => t,
        Err(_) => r.render_turn(turn(true), tools).map_err(tmpl_err)?,
    };
    Ok(diff(&base, &text).trim().to_string())
}

/// Learns the call syntax of `template`.
pub fn learn(template: &str) -> Result<Learned, LearnError> {
    let r = Renderer::new(template).map_err(tmpl_err)?;
    let base = r.render(&[], false).map_err(tmpl_err)?;
    let one_arg = vec![(ARG_FIRST, VAL_FIRST)];
    let (one, string_arguments) = match r.render(std::slice::from_ref(&one_arg), false) {
        Ok(one) if one.contains(VAL_FIRST) || !one.contains(FUN_FIRST) => (one, false),
        first => match r.render(std::slice::from_ref(&one_arg), true) {
            Ok(one) if one.contains(VAL_FIRST) => (one, true),
            _ => (first.map_err(tmpl_err)?, false),
        },
    };
    let hay = diff(&base, &one).trim();
    let Some(name_at) = hay.find(FUN_FIRST) else {
        return Err(LearnError::NoToolCalls);
    };
    if !hay.contains(VAL_FIRST) && !hay.contains(ARG_FIRST) {
        return Err(LearnError::DropsArguments);
    }
    let render_hay = |calls: &[Vec<(&str, &str)>]| -> Result<String, LearnError> {
        let text = r.render(calls, string_arguments).map_err(tmpl_err)?;
        Ok(diff(&base, &text).trim().to_string())
    };
    let quoted_name = format!("\"{FUN_FIRST}\"");
    let quoted_arg = format!("\"{ARG_FIRST}\"");
    let mut learned = if hay.contains(&quoted_name) {
        learn_json(hay, string_arguments)?
    } else if hay.contains(&quoted_arg) {
        let name_end = name_at + FUN_FIRST.len();
        let j = hay[name_end..]
            .find('{')
            .map(|k| name_end + k)
            .ok_or_else(|| LearnError::Unlearnable("no JSON object after the name".into()))?;
        let end = json_end(hay, j)?;
        Learned {
            open: hay[..name_at].trim().to_string(),
            close: hay[end..].trim().to_string(),
            shape: Shape::TagJson {
                name_to_args: hay[name_end..j].to_string(),
            },
            known_format: None,
            string_arguments,
        }
    } else {
        let two = render_hay(&[vec![(ARG_FIRST, VAL_FIRST), (ARG_SECOND, VAL_SECOND)]])?;
        let zero = render_hay(&[vec![]])?;
        learn_tagged(&two, &zero, string_arguments)?
    };
    learned.known_format = known_format(hay);
    Ok(learned)
}

fn json_end(text: &str, start: usize) -> Result<usize, LearnError> {
    let mut stream = serde_json::Deserializer::from_str(&text[start..]).into_iter::<Value>();
    match stream.next() {
        Some(Ok(_)) => Ok(start + stream.byte_offset()),
        _ => Err(LearnError::Unlearnable("the arguments are not JSON".into())),
    }
}

/// Where, in a JSON object, the value `pred` accepts sits: a key path.
fn find_path(v: &Value, pred: &dyn Fn(&Value) -> bool) -> Option<Vec<String>> {
    let obj = v.as_object()?;
    for (k, x) in obj {
        if pred(x) {
            return Some(vec![k.clone()]);
        }
    }
    for (k, x) in obj {
        if let Some(mut p) = find_path(x, pred) {
            p.insert(0, k.clone());
            return Some(p);
        }
    }
    None
}

fn learn_json(hay: &str, string_arguments: bool) -> Result<Learned, LearnError> {
    let start = hay
        .find('{')
        .ok_or_else(|| LearnError::Unlearnable("no JSON object in the call".into()))?;
    let end = json_end(hay, start)?;
    let v: Value = serde_json::from_str(&hay[start..end])
        .map_err(|e| LearnError::Unlearnable(format!("the call is not JSON: {e}")))?;
    let name_field = find_path(&v, &|x| x.as_str() == Some(FUN_FIRST));
    let args_field = find_path(&v, &|x| match x {
        Value::Object(o) => o.contains_key(ARG_FIRST),
        Value::String(s) => s.contains(ARG_FIRST),
        _ => false,
    });
    let name_is_key = v.get(FUN_FIRST).is_some();
    if name_field.is_none() && !name_is_key {
        return Err(LearnError::Unlearnable(
            "the name's place in the JSON".into(),
        ));
    }
    Ok(Learned {
        open: hay[..start].trim().to_string(),
        close: hay[end..].trim().to_string(),
        shape: if name_is_key {
            Shape::Json {
                name_field: None,
                args_field: None,
            }
        } else {
            Shape::Json {
                name_field,
                args_field,
            }
        },
        known_format: None,
        string_arguments,
    })
}

fn learn_tagged(two: &str, zero: &str, string_arguments: bool) -> Result<Learned, LearnError> {
    let bad = |what: &str| LearnError::Unlearnable(what.to_string());
    let name_at = two
        .find(FUN_FIRST)
        .ok_or_else(|| bad("no name in the two-argument render"))?;
    let name_end = name_at + FUN_FIRST.len();
    let pos = |s: &str| two[name_end..].find(s).map(|k| name_end + k);
    let (k1, v1, k2, v2) = match (
        pos(ARG_FIRST),
        pos(VAL_FIRST),
        pos(ARG_SECOND),
        pos(VAL_SECOND),
    ) {
        (Some(a), Some(x), Some(b), Some(y)) if a < b => (
            (a, ARG_FIRST),
            (x, VAL_FIRST),
            (b, ARG_SECOND),
            (y, VAL_SECOND),
        ),
        (Some(a), Some(x), Some(b), Some(y)) => (
            (b, ARG_SECOND),
            (y, VAL_SECOND),
            (a, ARG_FIRST),
            (x, VAL_FIRST),
        ),
        _ => return Err(bad("the arguments are not all in the render")),
    };
    if !(k1.0 < v1.0 && v1.0 < k2.0 && k2.0 < v2.0) {
        return Err(bad("keys and values are not in key, value order"));
    }
    let key_to_value = &two[k1.0 + k1.1.len()..v1.0];
    if &two[k2.0 + k2.1.len()..v2.0] != key_to_value {
        return Err(bad("the two arguments are written differently"));
    }
    let zero_name_end = zero
        .find(FUN_FIRST)
        .map(|k| k + FUN_FIRST.len())
        .ok_or_else(|| bad("no name in the zero-argument render"))?;
    Ok(Learned {
        open: two[..name_at].trim().to_string(),
        close: two[v2.0 + v2.1.len()..].trim().to_string(),
        shape: Shape::Tagged {
            name_to_first_key: two[name_end..k1.0].to_string(),
            key_to_value: key_to_value.to_string(),
            value_to_key: two[v1.0 + v1.1.len()..k2.0].to_string(),
            value_to_end: two[v2.0 + v2.1.len()..].to_string(),
            name_to_end: zero[zero_name_end..].to_string(),
        },
        known_format: None,
        string_arguments,
    })
}

/// The format of vouch's own parsers that reads the rendered call back whole, if any.
fn known_format(rendered: &str) -> Option<String> {
    let tools = super::ToolSpec::from_openai(&json!([render::sentinel_tool()])).ok()?;
    let rec = super::recover(
        &super::Message {
            content: Some(rendered),
            ..super::Message::default()
        },
        &tools,
        None,
    );
    rec.calls
        .first()
        .filter(|c| c.name == FUN_FIRST && c.arguments.get(ARG_FIRST) == Some(&json!(VAL_FIRST)))
        .map(|_| rec.format.name().to_string())
}
