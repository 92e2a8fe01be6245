//! The offered tools: their names, which a recovered call must resolve to, and their JSON schemas, which
//! type the arguments.
//!
//! Tag formats carry every value as text, so the schema decides: a `string` parameter keeps the text
//! exactly, an `integer` is read as one, an `object` or `array` is read as JSON. JSON formats are typed
//! already; there the schema only undoes the obvious slips (`"10"` for an integer, `5` for a string).
//! When a value does not fit, the text is kept and a warning says so: the tool, not this module, rejects it.

use anyhow::{bail, Context as _};
use serde_json::{Map, Value};

use super::literal::{self, Syntax};
use super::scan::Ctx;
use super::{Arg, Args};

/// An offered tool: its name and the JSON schema of its parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolSpec {
    pub name: String,
    pub parameters: Value,
}

impl ToolSpec {
    /// Reads OpenAI tool definitions: a JSON array of `{"type": "function", "function": {"name",
    /// "parameters", …}}` (the `function` wrapper may be left out), or an object with such a `tools` array.
    pub fn from_openai(defs: &Value) -> anyhow::Result<Vec<ToolSpec>> {
        let list = match defs {
            Value::Array(list) => list,
            Value::Object(o) => match o.get("tools") {
                Some(Value::Array(list)) => list,
                _ => bail!(
                    "tool definitions must be a JSON array (or an object with a `tools` array)"
                ),
            },
            _ => bail!("tool definitions must be a JSON array (or an object with a `tools` array)"),
        };
        list.iter()
            .enumerate()
            .map(|(i, def)| {
                let f = def.get("function").unwrap_or(def);
                let name = f
                    .get("name")
                    .and_then(Value::as_str)
                    .filter(|n| !n.trim().is_empty())
                    .with_context(|| format!("tool definition {i} has no `name`"))?;
                Ok(ToolSpec {
                    name: name.to_string(),
                    parameters: f
                        .get("parameters")
                        .cloned()
                        .unwrap_or_else(|| serde_json::json!({"type": "object", "properties": {}})),
                })
            })
            .collect()
    }

    fn property(&self, key: &str) -> Option<&Value> {
        self.parameters.get("properties")?.get(key)
    }

    fn has_property(&self, key: &str) -> bool {
        self.property(key).is_some()
    }

    fn required(&self) -> impl Iterator<Item = &str> {
        self.parameters
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
    }
}

/// The offered tool a written name means: `(index, exact)`. Besides the exact name, a name is resolved
/// when it differs only in case, a `functions.`-style prefix, a `:0` call index, `-` for `_`, or text
/// after it that is not part of a name (Harmony tokens leaking into a name), and exactly one tool matches.
pub(crate) fn resolve(tools: &[ToolSpec], name: &str) -> Option<(usize, bool)> {
    if let Some(i) = tools.iter().position(|t| t.name == name) {
        return Some((i, true));
    }
    let key = normalize(name);
    if key.is_empty() {
        return None;
    }
    let mut hits = tools
        .iter()
        .enumerate()
        .filter(|(_, t)| normalize(&t.name) == key);
    match (hits.next(), hits.next()) {
        (Some((i, _)), None) => Some((i, false)),
        _ => None,
    }
}

fn normalize(name: &str) -> String {
    let name = name
        .trim()
        .trim_matches(|c| c == '"' || c == '\'' || c == '`');
    let end = name
        .bytes()
        .position(|b| !(b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b':')))
        .unwrap_or(name.len());
    let mut n = &name[..end];
    for prefix in ["functions.", "function.", "tools.", "tool."] {
        if n.len() > prefix.len() && n[..prefix.len()].eq_ignore_ascii_case(prefix) {
            n = &n[prefix.len()..];
            break;
        }
    }
    if let Some((head, index)) = n.rsplit_once(':') {
        if index.bytes().all(|b| b.is_ascii_digit()) {
            n = head;
        }
    }
    n.chars()
        .map(|c| {
            if c == '-' {
                '_'
            } else {
                c.to_ascii_lowercase()
            }
        })
        .collect()
}

/// Whether every key of a call written without an arguments key is a parameter of the tool.
pub(crate) fn all_parameters(tool: &ToolSpec, args: &Args) -> bool {
    match args {
        Args::Flat(map) => map.keys().all(|k| tool.has_property(k)),
        _ => true,
    }
}

/// The arguments typed with the tool's schema, or why they cannot be arguments at all.
pub(crate) fn type_args(
    tool: &ToolSpec,
    args: Args,
    ctx: &mut Ctx,
    warnings: &mut Vec<String>,
) -> Result<Value, String> {
    let mut out = Map::new();
    match args {
        Args::Json(Value::Object(map)) | Args::Flat(map) => {
            for (k, v) in map {
                let v = coerce(tool, &k, v, ctx, warnings);
                out.insert(k, v);
            }
        }
        Args::Json(Value::Null) => {}
        Args::Json(Value::String(s)) => {
            if !s.trim().is_empty() {
                match literal::read_all(&s, Syntax::JSON, ctx) {
                    Ok(lit) if lit.value.is_object() => {
                        warnings.push(format!(
                            "the arguments of {} were a JSON string holding an object; decoded it",
                            tool.name
                        ));
                        return type_args(tool, Args::Json(lit.value), ctx, warnings);
                    }
                    _ => return Err("the arguments are a string, not a JSON object".to_string()),
                }
            }
        }
        Args::Json(_) => return Err("the arguments are not a JSON object".to_string()),
        Args::Pairs(pairs) => {
            for (k, arg) in pairs {
                let v = match arg {
                    Arg::Str(s) => Value::String(s),
                    Arg::Raw(s) => from_text(tool, &k, s, ctx, warnings),
                    Arg::Json(s) => match literal::read_all(&s, Syntax::JSON, ctx) {
                        Ok(lit) => coerce(tool, &k, lit.value, ctx, warnings),
                        Err(_) => from_text(tool, &k, s, ctx, warnings),
                    },
                };
                if out.insert(k.clone(), v).is_some() {
                    warnings.push(format!(
                        "the call to {} gives {k} twice; the last value counts",
                        tool.name
                    ));
                }
            }
        }
    }
    for req in tool.required() {
        if !out.contains_key(req) {
            warnings.push(format!(
                "the call to {} lacks the required argument {req}",
                tool.name
            ));
        }
    }
    Ok(Value::Object(out))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Str,
    Int,
    Num,
    Bool,
    Obj,
    Arr,
    Null,
}

impl Kind {
    fn from_type(t: &str) -> Option<Kind> {
        Some(match t {
            "string" | "str" => Kind::Str,
            "integer" | "int" => Kind::Int,
            "number" | "float" => Kind::Num,
            "boolean" | "bool" => Kind::Bool,
            "object" | "dict" => Kind::Obj,
            "array" | "list" => Kind::Arr,
            "null" => Kind::Null,
            _ => return None,
        })
    }

    fn of(v: &Value) -> Kind {
        match v {
            Value::String(_) => Kind::Str,
            Value::Number(n) if n.is_i64() || n.is_u64() => Kind::Int,
            Value::Number(_) => Kind::Num,
            Value::Bool(_) => Kind::Bool,
            Value::Object(_) => Kind::Obj,
            Value::Array(_) => Kind::Arr,
            Value::Null => Kind::Null,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Kind::Str => "string",
            Kind::Int => "integer",
            Kind::Num => "number",
            Kind::Bool => "boolean",
            Kind::Obj => "object",
            Kind::Arr => "array",
            Kind::Null => "null",
        }
    }
}

/// The kinds a schema allows; empty means anything.
fn kinds(schema: &Value) -> Vec<Kind> {
    match schema.get("type") {
        Some(Value::String(t)) => return Kind::from_type(t).into_iter().collect(),
        Some(Value::Array(ts)) => {
            return ts
                .iter()
                .filter_map(Value::as_str)
                .filter_map(Kind::from_type)
                .collect()
        }
        _ => {}
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(alts)) = schema.get(key) {
            let mut all = Vec::new();
            for alt in alts {
                let k = kinds(alt);
                if k.is_empty() {
                    return Vec::new();
                }
                all.extend(k);
            }
            return all;
        }
    }
    if let Some(Value::Array(values)) = schema.get("enum") {
        return values.iter().map(Kind::of).collect();
    }
    if schema.get("properties").is_some() {
        return vec![Kind::Obj];
    }
    if schema.get("items").is_some() {
        return vec![Kind::Arr];
    }
    Vec::new()
}

fn fits(v: &Value, allowed: &[Kind]) -> bool {
    let k = Kind::of(v);
    allowed.contains(&k) || (k == Kind::Int && allowed.contains(&Kind::Num))
}

/// A raw text value typed with the parameter's schema.
fn from_text(
    tool: &ToolSpec,
    key: &str,
    raw: String,
    ctx: &mut Ctx,
    warnings: &mut Vec<String>,
) -> Value {
    let allowed = tool.property(key).map(kinds).unwrap_or_default();
    if allowed.is_empty() || allowed.contains(&Kind::Str) {
        return Value::String(raw);
    }
    let t = raw.trim();
    for k in &allowed {
        if let Some(v) = read_as(*k, t, ctx) {
            return v;
        }
    }
    warnings.push(format!(
        "{}: {key} should be {} but is {:?}; kept the text",
        tool.name,
        allowed
            .iter()
            .map(|k| k.name())
            .collect::<Vec<_>>()
            .join(" or "),
        shorten(t)
    ));
    Value::String(raw)
}

fn read_as(kind: Kind, t: &str, ctx: &mut Ctx) -> Option<Value> {
    ctx.charge(t.len());
    match kind {
        Kind::Str => Some(Value::String(t.to_string())),
        Kind::Int => t
            .parse::<i64>()
            .map(Value::from)
            .or_else(|_| t.parse::<u64>().map(Value::from))
            .ok(),
        Kind::Num => t.parse::<i64>().map(Value::from).ok().or_else(|| {
            t.parse::<f64>()
                .ok()
                .and_then(serde_json::Number::from_f64)
                .map(Value::Number)
        }),
        Kind::Bool => {
            if t.eq_ignore_ascii_case("true") {
                Some(Value::Bool(true))
            } else if t.eq_ignore_ascii_case("false") {
                Some(Value::Bool(false))
            } else {
                None
            }
        }
        Kind::Null => matches!(t, "null" | "None").then_some(Value::Null),
        Kind::Obj => literal::read_all(t, Syntax::JSON, ctx)
            .ok()
            .map(|l| l.value)
            .filter(Value::is_object),
        Kind::Arr => literal::read_all(t, Syntax::JSON, ctx)
            .ok()
            .map(|l| l.value)
            .filter(Value::is_array),
    }
}

/// A JSON value made to fit the parameter's schema where that is lossless: text holding the right kind is
/// read, a number or boolean given for a string becomes its text.
fn coerce(
    tool: &ToolSpec,
    key: &str,
    v: Value,
    ctx: &mut Ctx,
    warnings: &mut Vec<String>,
) -> Value {
    let allowed = tool.property(key).map(kinds).unwrap_or_default();
    if allowed.is_empty() || fits(&v, &allowed) {
        return v;
    }
    match v {
        Value::String(s) => from_text(tool, key, s, ctx, warnings),
        Value::Number(_) | Value::Bool(_) if allowed.contains(&Kind::Str) => {
            Value::String(v.to_string())
        }
        other => other,
    }
}

fn shorten(s: &str) -> String {
    match s.char_indices().nth(40) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}
