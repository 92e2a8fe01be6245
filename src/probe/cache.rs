//! What a probe found that `vouch run` reuses: the recommended tool mode and the call syntax learned from
//! the chat template, one small versioned JSON file per endpoint, model and template hash under
//! `$VOUCH_CACHE/probe/`. A template change (a new hash) or another model is another entry, so nothing
//! learned about one template is applied to another. A file of another version, or one that does not
//! read, is no entry.

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Context as _, Result};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::report::Report;
use crate::model::ToolMode;
use crate::toolcall::learn::Learned;

/// The version of the entry's fields; an entry of another version is ignored (and rewritten).
pub const VERSION: u32 = 1;

/// `$VOUCH_CACHE/probe`, else `<user cache dir>/vouch/probe`.
pub fn default_dir() -> PathBuf {
    crate::gate::prepare::default_cache_dir().join("probe")
}

/// What identifies a probed configuration.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Key {
    /// The endpoint as configured, without a trailing `/` or `/v1`.
    pub endpoint: String,
    /// The model asked for (what `vouch run` sends in `model`).
    pub model: String,
    /// SHA-256 of the chat template (`/props`), `None` when the server does not say.
    pub template_hash: Option<String>,
}

impl Key {
    pub fn new(endpoint: &str, model: &str, template_hash: Option<String>) -> Key {
        let trimmed = endpoint.trim_end_matches('/');
        let endpoint = trimmed.strip_suffix("/v1").unwrap_or(trimmed).to_string();
        Key {
            endpoint,
            model: model.to_string(),
            template_hash,
        }
    }

    fn file_name(&self) -> String {
        let mut h = Sha256::new();
        for part in [
            self.endpoint.as_str(),
            self.model.as_str(),
            self.template_hash.as_deref().unwrap_or(""),
        ] {
            h.update(part.as_bytes());
            h.update([0]);
        }
        format!("{}.json", hex::encode(h.finalize()))
    }
}

/// One cached probe result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    pub version: u32,
    #[serde(flatten)]
    pub key: Key,
    /// The tool mode the probe recommends.
    pub tool_mode: ToolMode,
    /// The call syntax learned from the template, when none of vouch's parsers reads it.
    pub learned: Option<Learned>,
    /// A round trip came back as structured `tool_calls`.
    pub structured: bool,
    /// The format calls leaked in, if they did.
    pub leaked_format: Option<String>,
    /// When the probe ran, in seconds since the Unix epoch.
    pub probed_unix: u64,
}

impl Entry {
    /// The entry for what a probe reported under `key`.
    pub fn from_report(key: Key, report: &Report) -> Entry {
        Entry {
            version: VERSION,
            key,
            tool_mode: report.tool_mode,
            learned: usable_learned(report),
            structured: report.tool_calls.structured,
            leaked_format: report.tool_calls.leaked_format.clone(),
            probed_unix: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
        }
    }
}

/// The learned syntax worth using in recovery: only one that none of vouch's own parsers reads.
pub fn usable_learned(report: &Report) -> Option<Learned> {
    report
        .template
        .as_ref()
        .and_then(|t| t.learned.clone())
        .filter(|l| l.known_format.is_none())
}

/// The entry for `key` under `dir`, if there is one of this version.
pub fn load(dir: &Path, key: &Key) -> Option<Entry> {
    let text = std::fs::read_to_string(dir.join(key.file_name())).ok()?;
    let entry: Entry = serde_json::from_str(&text).ok()?;
    (entry.version == VERSION && entry.key == *key).then_some(entry)
}

/// Writes `entry` under `dir`, replacing the one of the same key.
pub fn store(dir: &Path, entry: &Entry) -> Result<PathBuf> {
    std::fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
    let path = dir.join(entry.key.file_name());
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, serde_json::to_string_pretty(entry)?)
        .with_context(|| format!("write {}", tmp.display()))?;
    std::fs::rename(&tmp, &path).with_context(|| format!("write {}", path.display()))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn entry(key: Key) -> Entry {
        Entry {
            version: VERSION,
            key,
            tool_mode: ToolMode::Constrained,
            learned: None,
            structured: false,
            leaked_format: Some("hermes".into()),
            probed_unix: 1,
        }
    }

    #[test]
    fn an_entry_is_found_by_endpoint_model_and_template_only() {
        let dir = tempfile::tempdir().unwrap();
        let key = Key::new("http://gpu:8080/v1/", "local", Some("abc".into()));
        store(dir.path(), &entry(key.clone())).unwrap();
        assert_eq!(
            load(
                dir.path(),
                &Key::new("http://gpu:8080", "local", Some("abc".into()))
            ),
            Some(entry(key))
        );
        for other in [
            Key::new("http://gpu:8081", "local", Some("abc".into())),
            Key::new("http://gpu:8080", "qwen", Some("abc".into())),
            Key::new("http://gpu:8080", "local", Some("abd".into())),
            Key::new("http://gpu:8080", "local", None),
        ] {
            assert_eq!(load(dir.path(), &other), None, "{other:?}");
        }
    }

    #[test]
    fn an_entry_of_another_version_or_unreadable_is_no_entry() {
        let dir = tempfile::tempdir().unwrap();
        let key = Key::new("http://gpu:8080", "local", None);
        let mut old = entry(key.clone());
        old.version = VERSION + 1;
        let path = store(dir.path(), &old).unwrap();
        assert_eq!(load(dir.path(), &key), None);
        std::fs::write(&path, "{not json").unwrap();
        assert_eq!(load(dir.path(), &key), None);
    }

    #[test]
    fn the_file_is_typed_json_with_its_version_and_key() {
        let dir = tempfile::tempdir().unwrap();
        let key = Key::new("http://gpu:8080", "local", Some("abc".into()));
        let path = store(dir.path(), &entry(key)).unwrap();
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        assert_eq!(v["version"], VERSION);
        assert_eq!(v["endpoint"], "http://gpu:8080");
        assert_eq!(v["template_hash"], "abc");
        assert_eq!(v["tool_mode"], "constrained");
    }
}
