//! Secrets, and keeping them out of everything vouch prints, logs, writes or sends: the model server's API
//! key and the forge's token are both a [`Secret`], and both are removed by a [`Redactor`].
//!
//! A secret reaches vouch's memory only through the client that sends it, but a server can reflect it (an
//! error body that quotes the `Authorization` header, a reply or an issue whose text carries it), and from
//! there it could travel into the conversation, the worktree, the records, a pull request or the terminal.
//! A [`Secret`] never prints itself (`Debug` and `Display` show [`REDACTED`]; only [`Secret::reveal`] gives
//! the text, for a header or a credential callback), and a [`Redactor`] replaces it wherever text passes a
//! boundary. Replacing in whole texts (a streamed reply once it is joined, not chunk by chunk) also catches
//! a secret split across two deltas.

use std::fmt;

use serde_json::Value;

/// What replaces a secret.
pub const REDACTED: &str = "<redacted>";

/// Secrets shorter than this are not replaced: they would match ordinary text.
const MIN_SECRET: usize = 4;

/// A token or key. It is never printed: `Debug` and `Display` show [`REDACTED`].
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(text: impl Into<String>) -> Secret {
        Secret(text.into())
    }

    /// The secret from the first of `vars` that is set and not empty (trimmed), with the variable's name.
    pub fn from_env(vars: &[&str]) -> Option<(Secret, String)> {
        vars.iter().find_map(|v| {
            std::env::var(v)
                .ok()
                .map(|t| t.trim().to_string())
                .filter(|t| !t.is_empty())
                .map(|t| (Secret(t), v.to_string()))
        })
    }

    /// The text, for the one place that sends it (an auth header, a credential callback).
    pub fn reveal(&self) -> &str {
        &self.0
    }

    /// A redactor for this secret.
    pub fn redactor(&self) -> Redactor {
        Redactor::new(Some(&self.0))
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Secret({REDACTED})")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

/// The secrets to remove. Cheap to clone; its `Debug` shows how many, never what.
#[derive(Clone, Default)]
pub struct Redactor {
    /// Each secret, and its JSON-escaped form when that differs (so records written as JSON are covered).
    secrets: Vec<String>,
}

impl fmt::Debug for Redactor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Redactor({} forms)", self.secrets.len())
    }
}

impl Redactor {
    /// A redactor for `secret` (none, or one too short to replace safely, redacts nothing).
    pub fn new(secret: Option<&str>) -> Redactor {
        let mut secrets = Vec::new();
        if let Some(s) = secret.map(str::trim).filter(|s| s.len() >= MIN_SECRET) {
            secrets.push(s.to_string());
            let escaped = Value::String(s.to_string()).to_string();
            let escaped = escaped[1..escaped.len() - 1].to_string();
            if escaped != s {
                secrets.push(escaped);
            }
        }
        Redactor { secrets }
    }

    /// `self` removing `secret` too (a run that holds both the model's key and the forge's token).
    pub fn and(mut self, secret: Option<&Secret>) -> Redactor {
        for s in Redactor::new(secret.map(Secret::reveal)).secrets {
            if !self.secrets.contains(&s) {
                self.secrets.push(s);
            }
        }
        self
    }

    /// Whether there is anything to redact.
    pub fn is_empty(&self) -> bool {
        self.secrets.is_empty()
    }

    /// Whether `text` carries a secret.
    pub fn finds(&self, text: &str) -> bool {
        self.secrets.iter().any(|s| text.contains(s.as_str()))
    }

    /// `text` with every secret replaced.
    pub fn text(&self, text: &str) -> String {
        let mut out = text.to_string();
        self.in_place(&mut out);
        out
    }

    /// Replaces every secret in `text`.
    pub fn in_place(&self, text: &mut String) {
        for s in &self.secrets {
            if text.contains(s.as_str()) {
                *text = text.replace(s.as_str(), REDACTED);
            }
        }
    }

    /// Replaces every secret in every string (and object key) of `value`.
    pub fn value(&self, value: &mut Value) {
        if self.is_empty() {
            return;
        }
        match value {
            Value::String(s) => self.in_place(s),
            Value::Array(items) => items.iter_mut().for_each(|v| self.value(v)),
            Value::Object(map) => {
                if map.keys().any(|k| self.finds(k)) {
                    let old = std::mem::take(map);
                    for (k, v) in old {
                        map.insert(self.text(&k), v);
                    }
                }
                map.values_mut().for_each(|v| self.value(v));
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_secret_is_replaced_in_text_and_in_every_string_of_a_value() {
        let r = Redactor::new(Some("sk-secret-42"));
        assert_eq!(
            r.text("Bearer sk-secret-42 and sk-secret-42"),
            "Bearer <redacted> and <redacted>"
        );
        let mut v = json!({"a": ["x sk-secret-42"], "sk-secret-42": {"b": "sk-secret-42"}, "n": 1});
        r.value(&mut v);
        assert_eq!(
            v,
            json!({"a": ["x <redacted>"], "<redacted>": {"b": "<redacted>"}, "n": 1})
        );
        assert!(!r.finds(&v.to_string()));
    }

    #[test]
    fn a_secret_never_prints_and_redactors_combine() {
        let key = Secret::new("sk-model-key-1");
        let token = Secret::new("forge-token-2");
        assert_eq!(
            format!("{token} {token:?}"),
            "<redacted> Secret(<redacted>)"
        );
        let r = key.redactor().and(Some(&token)).and(Some(&token)).and(None);
        assert_eq!(format!("{r:?}"), "Redactor(2 forms)");
        assert_eq!(
            r.text("key sk-model-key-1, token forge-token-2"),
            "key <redacted>, token <redacted>"
        );
    }

    #[test]
    fn short_or_missing_secrets_redact_nothing_and_debug_shows_no_secret() {
        assert!(Redactor::new(None).is_empty());
        assert_eq!(Redactor::new(Some("abc")).text("abc"), "abc");
        let r = Redactor::new(Some("top\"secret"));
        assert!(!format!("{r:?}").contains("secret"));
        // The JSON-escaped form is covered too.
        assert_eq!(
            r.text("{\"k\":\"top\\\"secret\"}"),
            "{\"k\":\"<redacted>\"}"
        );
    }
}
