//! Checking a call's arguments against its tool's JSON schema, so each tool reads typed fields only.
//!
//! The check is lenient where one reading is obvious (a `null` optional field is left out, `"10"` is an
//! integer, arguments sent as a JSON string are parsed) and says what it did; it refuses only what cannot be
//! read. A required field missing is refused by name, so a model that writes `file_path` for `path` learns
//! the name, unless it is the only unknown field where the only required field is missing: then it is read
//! as that field (`edit` with `content` and no `new_string`). Unknown fields beside every required one are
//! left out (`read_file` with a `glob` beside its `path`). The answer notes both.

use serde_json::{Map, Value};

/// Keys of a JSON schema object that a small model copies from a tool's definition into its arguments
/// (`"required": ["path"]`). Where the tool has no field of that name they carry nothing and are skipped.
const SCHEMA_KEYS: [&str; 6] = [
    "required",
    "type",
    "properties",
    "additionalProperties",
    "$schema",
    "title",
];

/// The parameters of one tool, read from its definition.
#[derive(Clone, Debug, Default)]
pub(crate) struct Params {
    /// The tool's name, for messages.
    tool: String,
    fields: Vec<Field>,
}

#[derive(Clone, Debug)]
struct Field {
    name: String,
    kind: Kind,
    required: bool,
    /// The position in the schema's `required` list (0 for optional fields).
    required_at: usize,
    choices: Vec<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    String,
    Integer,
    Boolean,
    Other,
}

impl Params {
    /// Reads `function.parameters` of an OpenAI tool definition.
    pub(crate) fn from_definition(def: &Value) -> Self {
        let params = def.pointer("/function/parameters").unwrap_or(&Value::Null);
        let required: Vec<&str> = params
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let fields = params
            .get("properties")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .map(|(name, prop)| Field {
                name: name.clone(),
                kind: match prop.get("type").and_then(Value::as_str) {
                    Some("string") => Kind::String,
                    Some("integer") => Kind::Integer,
                    Some("boolean") => Kind::Boolean,
                    _ => Kind::Other,
                },
                required: required.contains(&name.as_str()),
                required_at: required.iter().position(|r| r == name).unwrap_or(0),
                choices: prop
                    .get("enum")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect(),
            })
            .collect();
        let tool = def
            .pointer("/function/name")
            .and_then(Value::as_str)
            .unwrap_or("the tool")
            .to_string();
        Params { tool, fields }
    }

    /// Required fields first, in the schema's order of `required`, then the others by name.
    fn ordered(&self) -> Vec<&Field> {
        let mut ordered: Vec<&Field> = self.fields.iter().collect();
        ordered.sort_by(|a, b| {
            (!a.required, a.required_at, &a.name).cmp(&(!b.required, b.required_at, &b.name))
        });
        ordered
    }

    /// The fields for a message: `path (string, required), start_line (integer)`.
    pub(crate) fn describe(&self) -> String {
        if self.fields.is_empty() {
            return "no arguments".to_string();
        }
        let fields: Vec<String> = self
            .ordered()
            .into_iter()
            .map(|f| {
                let kind = match f.kind {
                    Kind::String => "string",
                    Kind::Integer => "integer",
                    Kind::Boolean => "boolean",
                    Kind::Other => "value",
                };
                let required = if f.required { ", required" } else { "" };
                format!("{} ({kind}{required})", f.name)
            })
            .collect();
        fields.join(", ")
    }

    fn has(&self, name: &str) -> bool {
        self.fields.iter().any(|f| f.name == name)
    }

    /// The fields of arguments shaped like the tool's schema, `{"properties": {"path": "a.rs"}, "required":
    /// ["path"]}`: small models echo the definition's shape around the values they mean.
    fn schema_echo(&self, object: &Map<String, Value>) -> Option<Map<String, Value>> {
        if self.has("properties") {
            return None;
        }
        let inner = object.get("properties")?.as_object()?;
        let mut fields = inner.clone();
        for (key, value) in object {
            if !SCHEMA_KEYS.contains(&key.as_str()) {
                fields.entry(key.clone()).or_insert_with(|| value.clone());
            }
        }
        Some(fields)
    }

    /// The arguments, typed, with a note when an unknown field was read as the one missing required field;
    /// or what is wrong with them.
    pub(crate) fn check(&self, args: &Value) -> Result<(Value, Option<String>), String> {
        let parsed;
        let args = match args {
            Value::String(text) if text.trim().is_empty() => &Value::Null,
            Value::String(text) => {
                parsed = serde_json::from_str::<Value>(text)
                    .map_err(|_| "the arguments must be a JSON object, not a string".to_string())?;
                &parsed
            }
            other => other,
        };
        let empty = Map::new();
        let object = match args {
            Value::Null => &empty,
            Value::Object(object) => object,
            other => {
                return Err(format!(
                    "the arguments must be a JSON object, not {}",
                    kind_of(other)
                ))
            }
        };
        let unwrapped;
        let object = match self.schema_echo(object) {
            Some(fields) => {
                unwrapped = fields;
                &unwrapped
            }
            None => object,
        };
        let mut out = Map::new();
        let mut echoed = false;
        let mut unknown = Vec::new();
        for (key, value) in object {
            if SCHEMA_KEYS.contains(&key.as_str()) && !self.has(key) {
                continue;
            }
            let Some(field) = self.fields.iter().find(|f| &f.name == key) else {
                unknown.push((key, value));
                continue;
            };
            if value.is_null() {
                continue;
            }
            // `"path": {"type": "string", "description": …}`: the definition copied, no value given.
            if field.kind != Kind::Other && is_schema(value) {
                echoed = true;
                continue;
            }
            out.insert(key.clone(), field.typed(value)?);
        }
        let echo = if echoed {
            " (the arguments repeat the tool's definition; give each field its value)"
        } else {
            ""
        };
        let missing: Vec<&Field> = self
            .ordered()
            .into_iter()
            .filter(|f| f.required && !out.contains_key(&f.name))
            .collect();
        // `{"path": "", "glob": "*.py"}` for read_file: an empty path with one unknown field is that field
        // (read_file and edit take a glob that names one file as the path).
        let empty_path = self
            .fields
            .iter()
            .find(|f| f.name == "path" && f.required)
            .filter(|_| out.get("path").and_then(Value::as_str) == Some("") && missing.is_empty());
        let missing = match (unknown.as_slice(), empty_path) {
            ([_], Some(path)) => vec![path],
            _ => missing,
        };
        let mut note = None;
        match (unknown.as_slice(), missing.as_slice()) {
            ([], _) => {}
            // `{"path", "old_string", "content"}` for edit: the one unknown field is the one missing.
            ([(key, value)], [field]) if !value.is_null() && field.typed(value).is_ok() => {
                out.insert(field.name.clone(), field.typed(value)?);
                let note = format!(
                    "There is no field `{key}`: it was read as `{}`.",
                    field.name
                );
                return Ok((Value::Object(out), Some(note)));
            }
            // `{"path": "tests/test_tags.py", "glob": "tests/**"}` for read_file: every required field is
            // there, so the call does what they say; the answer names what was left out.
            (extra, []) => {
                let names: Vec<String> = extra.iter().map(|(k, _)| format!("`{k}`")).collect();
                note = Some(format!(
                    "{} takes no {}: left out.",
                    self.tool,
                    names.join(", ")
                ));
            }
            ([(key, _), ..], _) => return Err(format!("unknown field `{key}`")),
        }
        let missing: Vec<String> = missing.iter().map(|f| format!("`{}`", f.name)).collect();
        match missing.len() {
            0 => {}
            1 => return Err(format!("missing field {}{echo}", missing[0])),
            _ => return Err(format!("missing fields {}{echo}", missing.join(", "))),
        }
        Ok((Value::Object(out), note))
    }
}

/// Whether `value` is a property's schema (`{"type": "string", "description": …}`) rather than a value.
fn is_schema(value: &Value) -> bool {
    value.as_object().is_some_and(|o| {
        o.get("type").is_some_and(Value::is_string)
            && o.keys()
                .all(|k| ["type", "description", "enum", "default"].contains(&k.as_str()))
    })
}

impl Field {
    fn typed(&self, value: &Value) -> Result<Value, String> {
        let wrong = |want: &str| {
            Err(format!(
                "`{}` must be {want}, not {}",
                self.name,
                kind_of(value)
            ))
        };
        let typed = match (self.kind, value) {
            (Kind::String, Value::String(_)) => value.clone(),
            (Kind::String, Value::Number(n)) => Value::String(n.to_string()),
            (Kind::String, _) => return wrong("a string"),
            (Kind::Integer, Value::Number(n)) => match n.as_i64().or_else(|| whole(n.as_f64())) {
                Some(i) => Value::from(i),
                None => return wrong("a whole number"),
            },
            (Kind::Integer, Value::String(s)) => match s.trim().parse::<i64>() {
                Ok(i) => Value::from(i),
                Err(_) => return wrong("an integer"),
            },
            (Kind::Integer, _) => return wrong("an integer"),
            (Kind::Boolean, Value::Bool(_)) => value.clone(),
            (Kind::Boolean, Value::String(s)) if s == "true" || s == "false" => {
                Value::Bool(s == "true")
            }
            (Kind::Boolean, _) => return wrong("true or false"),
            (Kind::Other, _) => value.clone(),
        };
        if !self.choices.is_empty() {
            let text = typed.as_str().unwrap_or_default();
            if !self.choices.iter().any(|c| c == text) {
                return Err(format!(
                    "`{}` must be one of {}",
                    self.name,
                    self.choices.join(", ")
                ));
            }
        }
        Ok(typed)
    }
}

fn whole(f: Option<f64>) -> Option<i64> {
    let f = f?;
    (f.fract() == 0.0 && f.abs() < 1e15).then_some(f as i64)
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A view of a call's arguments (after [`Params::check`], only known fields, typed as the schema says).
#[derive(Clone, Copy, Debug)]
pub struct Args<'a>(Option<&'a Map<String, Value>>);

impl<'a> Args<'a> {
    pub fn of(args: &'a Value) -> Self {
        Args(args.as_object())
    }

    fn get(&self, key: &str) -> Option<&'a Value> {
        self.0.and_then(|object| object.get(key))
    }

    /// A string field; an error names the missing field.
    pub fn string(&self, key: &str) -> Result<&'a str, String> {
        self.opt_string(key)
            .ok_or_else(|| format!("missing field `{key}` (a string)"))
    }

    pub fn opt_string(&self, key: &str) -> Option<&'a str> {
        self.get(key).and_then(Value::as_str)
    }

    pub fn opt_integer(&self, key: &str) -> Option<i64> {
        self.get(key).and_then(Value::as_i64)
    }

    pub fn flag(&self, key: &str) -> bool {
        self.get(key).and_then(Value::as_bool).unwrap_or(false)
    }
}
