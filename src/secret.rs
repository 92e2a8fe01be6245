//! Secrets, and keeping them out of everything vouch prints, logs, writes or sends.
//!
//! vouch holds secrets (the model server's API key, the forge's token) and can see others (secret-looking
//! variables of its own environment, a token in a remote's URL or in the `http.extraheader` that
//! actions/checkout leaves in `.git/config`). Code under judgement can print any of them, or a server can
//! reflect one, and from there it would travel into a report, a log, a pull request comment or the terminal.
//!
//! A [`Secret`] never prints itself (`Debug` and `Display` show [`REDACTED`]; only [`Secret::reveal`] gives
//! the text, for a header or a credential callback), and every secret vouch makes or finds is registered
//! with the process's one list of known secrets ([`learn`]). [`known`] is the redactor that removes them
//! all, with the encoded forms a test could print (JSON-escaped, percent-encoded, hex, base64 of the secret
//! and of the basic credentials around it), in one linear pass (Aho-Corasick). Each sink
//! passes its text through it once: the command output (`src/commands/output.rs`), the console progress
//! ([`crate::ui`]), the log lines ([`crate::logging`]), every body the forge client sends, the files the gate
//! writes and leaves (reports, step logs: [`redact_tree`]). Replacing in whole texts (a streamed reply once it
//! is joined, not chunk by chunk) also catches a secret split across two deltas.
//!
//! The list is process-wide on purpose: a secret found anywhere must be removed everywhere, and a sink that
//! had to be handed the right redactor is a sink that one day is not.

use std::fmt;
use std::io::{self, Read as _};
use std::path::Path;
use std::sync::{Arc, Mutex};

use aho_corasick::AhoCorasick;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use base64::Engine as _;
use serde_json::Value;

/// What replaces a secret.
pub const REDACTED: &str = "<redacted>";

/// Secrets shorter than this are not replaced: they would match ordinary text.
const MIN_SECRET: usize = 4;

/// Secrets at least this long are replaced in their encoded forms too (shorter ones' encodings are too short
/// to be told from ordinary text), and a variable's value must be this long to count as a secret.
const MIN_ENCODED: usize = 8;

/// The words that make a variable's name look secret (upper case; matched anywhere in the name).
const SECRET_WORDS: &[&str] = &[
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "API_KEY",
    "APIKEY",
    "ACCESS_KEY",
    "PRIVATE_KEY",
    "CREDENTIAL",
    "AUTH",
];

/// Names that hold a word of [`SECRET_WORDS`] but name a place, not a secret (`SSH_AUTH_SOCK`,
/// `XAUTHORITY`, `GITHUB_TOKEN_FILE`): suffixes, and whole names.
const PLACE_SUFFIXES: &[&str] = &["_SOCK", "_FILE", "_PATH", "_DIR"];
const PLACE_NAMES: &[&str] = &["XAUTHORITY"];

/// The user names basic credentials carry a forge token with (`x-access-token:TOKEN`, GitLab's `oauth2`).
const BASIC_USERS: &[&str] = &["x-access-token", "oauth2"];

/// Files larger than this are redacted as a stream, not read whole.
const WHOLE_FILE: u64 = 64 << 20;

/// A token or key. It is never printed: `Debug` and `Display` show [`REDACTED`].
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// A secret, registered with the known ones ([`learn`]): whatever vouch holds, it removes.
    pub fn new(text: impl Into<String>) -> Secret {
        let text = text.into();
        learn(&text);
        Secret(text)
    }

    /// The secret from the first of `vars` that is set and not empty (trimmed), with the variable's name.
    pub fn from_env(vars: &[&str]) -> Option<(Secret, String)> {
        vars.iter().find_map(|v| {
            std::env::var(v)
                .ok()
                .map(|t| t.trim().to_string())
                .filter(|t| !t.is_empty())
                .map(|t| (Secret::new(t), v.to_string()))
        })
    }

    /// The text, for the one place that sends it (an auth header, a credential callback).
    pub fn reveal(&self) -> &str {
        &self.0
    }

    /// The redactor of every known secret, this one among them.
    pub fn redactor(&self) -> Redactor {
        known()
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
    inner: Option<Arc<Inner>>,
}

struct Inner {
    /// The secrets themselves, as given (trimmed).
    secrets: Vec<String>,
    /// Every form replaced: each secret and its encodings, longest first.
    forms: Vec<String>,
    /// All of `forms`, every match reported (overlapping ones too): what is replaced is the union of them,
    /// so that of two overlapping secrets neither keeps a part.
    automaton: Option<AhoCorasick>,
}

impl fmt::Debug for Redactor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (secrets, forms) = self
            .inner
            .as_ref()
            .map_or((0, 0), |i| (i.secrets.len(), i.forms.len()));
        write!(f, "Redactor({secrets} known, {forms} forms)")
    }
}

impl Redactor {
    /// A redactor for `secret` (none, or one too short to replace safely, redacts nothing).
    pub fn new(secret: Option<&str>) -> Redactor {
        Redactor::default().with(secret.unwrap_or_default())
    }

    /// A redactor for each of `secrets`.
    pub fn of<'a>(secrets: impl IntoIterator<Item = &'a str>) -> Redactor {
        secrets
            .into_iter()
            .fold(Redactor::default(), Redactor::with)
    }

    /// `self` removing `secret` too (a run that holds both the model's key and the forge's token).
    pub fn and(self, secret: Option<&Secret>) -> Redactor {
        match secret {
            Some(s) => self.with(s.reveal()),
            None => self,
        }
    }

    /// `self` removing `secret` too, unless it is too short or known already.
    pub fn with(self, secret: &str) -> Redactor {
        let secret = secret.trim();
        let mut secrets = self.secrets().to_vec();
        if secret.len() < MIN_SECRET || secrets.iter().any(|s| s == secret) {
            return self;
        }
        secrets.push(secret.to_string());
        let mut forms: Vec<String> = secrets.iter().flat_map(|s| forms_of(s)).collect();
        forms.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        forms.dedup();
        let automaton = AhoCorasick::new(&forms).ok();
        Redactor {
            inner: Some(Arc::new(Inner {
                secrets,
                forms,
                automaton,
            })),
        }
    }

    fn secrets(&self) -> &[String] {
        self.inner.as_ref().map_or(&[], |i| &i.secrets)
    }

    /// Whether there is anything to redact.
    pub fn is_empty(&self) -> bool {
        self.inner.is_none()
    }

    /// Whether `text` carries a secret, in any form.
    pub fn finds(&self, text: &str) -> bool {
        match &self.inner {
            None => false,
            Some(i) => match &i.automaton {
                Some(ac) => ac.is_match(text),
                None => i.forms.iter().any(|f| text.contains(f.as_str())),
            },
        }
    }

    /// `text` with every secret replaced.
    pub fn text(&self, text: &str) -> String {
        let mut out = text.to_string();
        self.in_place(&mut out);
        out
    }

    /// Replaces every secret in `text`.
    pub fn in_place(&self, text: &mut String) {
        let Some(inner) = &self.inner else {
            return;
        };
        if !self.finds(text) {
            return;
        }
        *text = match self.bytes(text.as_bytes()) {
            // Whole matches of UTF-8 forms in UTF-8 text were replaced: the rest is as valid as it was.
            Some(clean) => String::from_utf8_lossy(&clean).into_owned(),
            None => inner
                .forms
                .iter()
                .fold(text.clone(), |t, f| t.replace(f.as_str(), REDACTED)),
        };
    }

    /// `bytes` with every secret replaced (a log that need not be UTF-8); `None` when none is there.
    pub fn bytes(&self, bytes: &[u8]) -> Option<Vec<u8>> {
        let ac = self.inner.as_ref()?.automaton.as_ref()?;
        let mut spans: Vec<(usize, usize)> = ac
            .find_overlapping_iter(bytes)
            .map(|m| (m.start(), m.end()))
            .collect();
        if spans.is_empty() {
            return None;
        }
        spans.sort_unstable();
        let mut out = Vec::with_capacity(bytes.len());
        let mut at = 0;
        let mut spans = spans.into_iter().peekable();
        while let Some((start, mut end)) = spans.next() {
            while let Some(&(s, e)) = spans.peek() {
                if s > end {
                    break;
                }
                end = end.max(e);
                spans.next();
            }
            out.extend_from_slice(&bytes[at..start]);
            out.extend_from_slice(REDACTED.as_bytes());
            at = end;
        }
        out.extend_from_slice(&bytes[at..]);
        Some(out)
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

    /// Redacts the file at `path` in place (a new file renamed over it, so that a hard link to it elsewhere
    /// is never written through); whether it held a secret. Only regular files: a symlink is left alone.
    pub fn file(&self, path: &Path) -> io::Result<bool> {
        let Some(inner) = &self.inner else {
            return Ok(false);
        };
        let meta = std::fs::symlink_metadata(path)?;
        if !meta.file_type().is_file() {
            return Ok(false);
        }
        let dir = path.parent().unwrap_or(Path::new("."));
        if meta.len() <= WHOLE_FILE {
            let mut bytes = Vec::new();
            std::fs::File::open(path)?.read_to_end(&mut bytes)?;
            let Some(clean) = self.bytes(&bytes) else {
                return Ok(false);
            };
            let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
            io::Write::write_all(&mut tmp, &clean)?;
            tmp.persist(path).map_err(|e| e.error)?;
            return Ok(true);
        }
        // A stream is replaced match by match: of two overlapping secrets, the second may keep its tail.
        let Some(stream) = &inner.automaton else {
            return Ok(false);
        };
        if !stream
            .stream_find_iter(std::fs::File::open(path)?)
            .any(|m| m.is_ok())
        {
            return Ok(false);
        }
        let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
        let reader = io::BufReader::new(std::fs::File::open(path)?);
        stream.try_stream_replace_all(reader, &mut tmp, &vec![REDACTED; inner.forms.len()])?;
        tmp.persist(path).map_err(|e| e.error)?;
        Ok(true)
    }
}

/// The forms of `secret` that are replaced: itself, JSON-escaped, percent-encoded, hex, and base64 (both
/// alphabets, with and without padding) of itself and of the basic credentials that carry it.
fn forms_of(secret: &str) -> Vec<String> {
    let mut forms = vec![secret.to_string()];
    let escaped = Value::String(secret.to_string()).to_string();
    forms.push(escaped[1..escaped.len() - 1].to_string());
    if secret.len() >= MIN_ENCODED {
        let encoded = percent_encode(secret);
        forms.push(lowercase_escapes(&encoded));
        forms.push(encoded);
        forms.push(hex::encode(secret));
        forms.push(hex::encode_upper(secret));
        let mut plain = vec![
            secret.to_string(),
            format!("{secret}:"),
            format!(":{secret}"),
        ];
        plain.extend(BASIC_USERS.iter().map(|u| format!("{u}:{secret}")));
        for p in &plain {
            for engine in [&STANDARD, &STANDARD_NO_PAD, &URL_SAFE, &URL_SAFE_NO_PAD] {
                forms.push(engine.encode(p));
            }
        }
    }
    forms
}

/// `text` percent-encoded: every byte but the unreserved ones (`A-Z a-z 0-9 - . _ ~`), upper-case escapes.
fn percent_encode(text: &str) -> String {
    let mut out = String::new();
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The escapes of a percent-encoded text in lower case (`%2f`), the rest as it is.
fn lowercase_escapes(encoded: &str) -> String {
    let mut out = String::with_capacity(encoded.len());
    let mut chars = encoded.chars();
    while let Some(c) = chars.next() {
        out.push(c);
        if c == '%' {
            out.extend(chars.by_ref().take(2).map(|h| h.to_ascii_lowercase()));
        }
    }
    out
}

/// The process's known secrets.
static KNOWN: Mutex<Redactor> = Mutex::new(Redactor { inner: None });

/// Registers `secret` (with its encoded forms) with the known secrets; too short ones are ignored.
pub fn learn(secret: &str) {
    let mut known = KNOWN.lock().unwrap_or_else(|e| e.into_inner());
    *known = std::mem::take(&mut *known).with(secret);
}

/// The redactor of every secret known so far.
pub fn known() -> Redactor {
    KNOWN.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

/// `text` with every known secret replaced.
pub fn redact(text: &str) -> String {
    known().text(text)
}

/// Whether a variable named `name` holds a secret by its name: one of [`SECRET_WORDS`] in it, any case,
/// and not a name of a place (`SSH_AUTH_SOCK`, `XAUTHORITY`).
pub fn looks_secret(name: &str) -> bool {
    let name = name.to_ascii_uppercase();
    if PLACE_NAMES.contains(&name.as_str()) || PLACE_SUFFIXES.iter().any(|s| name.ends_with(s)) {
        return false;
    }
    SECRET_WORDS.iter().any(|w| name.contains(w))
}

/// Registers the values of vouch's own environment variables whose names look secret ([`looks_secret`])
/// and that are long enough to be told from ordinary text (`GITHUB_TOKEN`, `CI_JOB_TOKEN`, ...).
pub fn learn_environment() {
    for (name, value) in std::env::vars_os() {
        let (Some(name), Some(value)) = (name.to_str(), value.to_str()) else {
            continue;
        };
        if looks_secret(name) {
            for s in values_of(value) {
                learn(s);
            }
        }
    }
}

/// A secret variable's value, and each line of it when it has several (a PEM key), long enough to count.
fn values_of(value: &str) -> Vec<&str> {
    let value = value.trim();
    let mut out: Vec<&str> = vec![value];
    if value.contains('\n') {
        out.extend(
            value
                .lines()
                .map(str::trim)
                .filter(|l| l.len() >= 2 * MIN_ENCODED),
        );
    }
    out.retain(|v| v.len() >= MIN_ENCODED);
    out
}

/// Registers the credentials in the git configuration of the repository around `dir` (its own, the user's
/// and the system's): the user info of every URL in a name or value (`https://user:TOKEN@host`, an
/// `insteadOf` rule) and the credentials of every `http.*.extraheader` (`AUTHORIZATION: basic <base64>`, the
/// blob and what it decodes to, or a bearer token).
pub fn learn_repository(dir: &Path) {
    let Ok(repo) = git2::Repository::discover(dir) else {
        return;
    };
    let Ok(config) = repo.config() else {
        return;
    };
    let Ok(mut entries) = config.entries(None) else {
        return;
    };
    while let Some(Ok(entry)) = entries.next() {
        let name = entry.name().unwrap_or_default().to_string();
        let value = entry.value().unwrap_or_default().to_string();
        for s in config_secrets(&name, &value) {
            learn(&s);
        }
    }
}

/// The secrets one git configuration entry holds.
fn config_secrets(name: &str, value: &str) -> Vec<String> {
    let mut out = url_credentials(name);
    out.extend(url_credentials(value));
    if name.to_ascii_lowercase().ends_with("extraheader") {
        out.extend(header_credentials(value));
    }
    out
}

/// The passwords of the URLs in `text` (`scheme://user:password@`), and a user alone when it is long enough
/// to be a token (`https://TOKEN@host`).
fn url_credentials(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        rest = &rest[at + 3..];
        let end = rest
            .find(|c: char| c == '/' || c.is_whitespace())
            .unwrap_or(rest.len());
        let Some((info, _host)) = rest[..end].rsplit_once('@') else {
            continue;
        };
        match info.split_once(':') {
            Some((_, password)) => out.push(percent_decode(password)),
            None if info.len() >= 2 * MIN_ENCODED => out.push(percent_decode(info)),
            None => {}
        }
    }
    out
}

/// The credentials of an HTTP header line (`AUTHORIZATION: basic <base64>`, `Authorization: bearer TOKEN`).
fn header_credentials(header: &str) -> Vec<String> {
    let value = header.split_once(':').map_or(header, |(_, v)| v);
    let mut words = value.split_whitespace();
    let (Some(scheme), Some(cred)) = (words.next(), words.next()) else {
        return value.split_whitespace().map(str::to_string).collect();
    };
    let mut out = vec![cred.to_string()];
    if scheme.eq_ignore_ascii_case("basic") {
        let decoded = [&STANDARD, &URL_SAFE, &STANDARD_NO_PAD, &URL_SAFE_NO_PAD]
            .iter()
            .find_map(|e| {
                e.decode(cred.trim_end_matches('='))
                    .ok()
                    .or_else(|| e.decode(cred).ok())
            })
            .and_then(|b| String::from_utf8(b).ok());
        if let Some(decoded) = decoded {
            if let Some((_, password)) = decoded.split_once(':') {
                out.push(password.to_string());
            }
            out.push(decoded);
        }
    }
    out
}

/// `text` with its `%XX` escapes decoded (as they stand when not valid).
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok());
        match (bytes[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Redacts every regular file under `dir` with the known secrets (a symlink is neither followed nor
/// written); how many held one. The gate calls it on its logs once every step has ended.
pub fn redact_tree(dir: &Path) -> io::Result<usize> {
    let redactor = known();
    if redactor.is_empty() || !dir.is_dir() {
        return Ok(0);
    }
    let mut count = 0;
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d)? {
            let entry = entry?;
            let kind = entry.file_type()?;
            if kind.is_dir() {
                todo.push(entry.path());
            } else if kind.is_file() && redactor.file(&entry.path())? {
                count += 1;
            }
        }
    }
    Ok(count)
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
        let r = Redactor::default()
            .and(Some(&key))
            .and(Some(&token))
            .and(Some(&token))
            .and(None);
        assert!(format!("{r:?}").starts_with("Redactor(2 known, "), "{r:?}");
        assert_eq!(
            r.text("key sk-model-key-1, token forge-token-2"),
            "key <redacted>, token <redacted>"
        );
        // Made secrets are known to the process's redactor.
        assert_eq!(redact("forge-token-2"), REDACTED);
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

    #[test]
    fn every_encoded_form_of_a_secret_is_replaced() {
        let secret = "ghs_a/b+c=d?e";
        let r = Redactor::new(Some(secret));
        let mut forms = vec![
            secret.to_string(),
            "ghs_a%2Fb%2Bc%3Dd%3Fe".to_string(),
            "ghs_a%2fb%2bc%3dd%3fe".to_string(),
            hex::encode(secret),
            hex::encode_upper(secret),
        ];
        for plain in [
            secret.to_string(),
            format!("x-access-token:{secret}"),
            format!("oauth2:{secret}"),
            format!("{secret}:"),
            format!(":{secret}"),
        ] {
            for engine in [&STANDARD, &STANDARD_NO_PAD, &URL_SAFE, &URL_SAFE_NO_PAD] {
                forms.push(engine.encode(&plain));
            }
        }
        for form in forms {
            assert_eq!(r.text(&format!("[{form}]")), "[<redacted>]", "{form}");
        }
        // The header actions/checkout writes, whole.
        let header = format!(
            "AUTHORIZATION: basic {}",
            STANDARD.encode(format!("x-access-token:{secret}"))
        );
        assert_eq!(r.text(&header), "AUTHORIZATION: basic <redacted>");
    }

    #[test]
    fn a_short_secret_is_replaced_only_as_itself() {
        let r = Redactor::new(Some("pw42x"));
        assert_eq!(r.text("pw42x"), REDACTED);
        let b64 = STANDARD.encode("pw42x");
        assert_eq!(r.text(&b64), b64);
        assert_eq!(r.text(&hex::encode("pw42x")), hex::encode("pw42x"));
    }

    #[test]
    fn overlapping_secrets_are_replaced_whole_and_none_keeps_a_part() {
        let r = Redactor::of([
            "token-abcdefgh",
            "token-abcdefgh-longer",
            "efgh-longer-tail",
        ]);
        assert_eq!(r.text("a token-abcdefgh b"), "a <redacted> b");
        assert_eq!(r.text("a token-abcdefgh-longer b"), "a <redacted> b");
        // One secret running into another: the union of both goes.
        assert_eq!(r.text("a token-abcdefgh-longer-tail b"), "a <redacted> b");
        assert_eq!(
            r.text("x token-abcdefgh token-abcdefgh y"),
            "x <redacted> <redacted> y"
        );
        assert_eq!(r.text("é token-abcdefgh ü"), "é <redacted> ü");
    }

    #[test]
    fn secret_variables_are_told_by_name() {
        for name in [
            "GITHUB_TOKEN",
            "gh_token",
            "CI_JOB_TOKEN",
            "GITEA_TOKEN",
            "OPENAI_API_KEY",
            "AWS_SECRET_ACCESS_KEY",
            "DB_PASSWORD",
            "NPM_AUTH",
            "MY_APIKEY",
            "GOOGLE_CREDENTIALS",
        ] {
            assert!(looks_secret(name), "{name}");
        }
        for name in [
            "HOME",
            "PATH",
            "SSH_AUTH_SOCK",
            "XAUTHORITY",
            "GITHUB_TOKEN_FILE",
            "USER",
        ] {
            assert!(!looks_secret(name), "{name}");
        }
        assert_eq!(values_of("  short  "), Vec::<&str>::new());
        assert_eq!(values_of("long-enough"), vec!["long-enough"]);
    }

    #[test]
    fn credentials_in_remote_urls_and_extra_headers_are_found() {
        assert_eq!(
            config_secrets(
                "remote.origin.url",
                "https://x-access-token:ghp_one%2Btwo@github.com/o/r.git"
            ),
            vec!["ghp_one+two"]
        );
        assert_eq!(
            config_secrets(
                "url.https://oauth2:glpat-xyz12345@gitlab.com/.insteadof",
                "https://gitlab.com/"
            ),
            vec!["glpat-xyz12345"]
        );
        assert_eq!(
            config_secrets(
                "remote.a.url",
                "https://ghp_0123456789abcdef@github.com/o/r"
            ),
            vec!["ghp_0123456789abcdef"]
        );
        assert!(config_secrets("remote.a.url", "https://git@github.com/o/r").is_empty());
        assert!(config_secrets("remote.a.url", "git@github.com:o/r.git").is_empty());
        let blob = STANDARD.encode("x-access-token:ghs_checkout42");
        assert_eq!(
            config_secrets(
                "http.https://github.com/.extraheader",
                &format!("AUTHORIZATION: basic {blob}")
            ),
            vec![
                blob.clone(),
                "ghs_checkout42".to_string(),
                "x-access-token:ghs_checkout42".to_string()
            ]
        );
        assert_eq!(
            config_secrets("http.extraheader", "Authorization: Bearer ghs_bearer42"),
            vec!["ghs_bearer42"]
        );
    }

    #[test]
    fn a_file_is_redacted_by_a_new_file_and_a_symlink_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let r = Redactor::new(Some("file-secret-77"));
        let log = dir.path().join("step.log");
        let link = dir.path().join("step.stdout");
        std::fs::write(&log, b"a file-secret-77 \xff b").unwrap();
        std::fs::hard_link(&log, &link).unwrap();
        assert!(r.file(&log).unwrap());
        assert_eq!(std::fs::read(&log).unwrap(), b"a <redacted> \xff b");
        // The other name of the old file was not written through.
        assert_eq!(std::fs::read(&link).unwrap(), b"a file-secret-77 \xff b");
        assert!(!r.file(&log).unwrap());
        let outside = dir.path().join("outside");
        std::fs::write(&outside, "file-secret-77").unwrap();
        let sym = dir.path().join("sym");
        std::os::unix::fs::symlink(&outside, &sym).unwrap();
        assert!(!r.file(&sym).unwrap());
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "file-secret-77");
    }
}
