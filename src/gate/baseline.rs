//! The baseline: per-test results of the test step at base, cached by base tree id.
//!
//! The key also covers the test and build steps' definitions, the profile environment and the test tool's
//! binary (path and modification time), so a toolchain upgrade or a profile edit runs the baseline again.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::gate::results::TestResult;

/// What the baseline run found.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BaseRun {
    pub base_tree: String,
    /// The build (or test) step that failed without running tests, when base does not build.
    pub broken: Option<String>,
    pub exit_code: Option<i32>,
    pub results: Vec<TestResult>,
}

/// The cache key for a base tree under a profile and toolchain.
pub fn key(base_tree: &str, steps_fingerprint: &str) -> String {
    let mut h = Sha256::new();
    h.update(base_tree.as_bytes());
    h.update([0]);
    h.update(steps_fingerprint.as_bytes());
    hex::encode(&h.finalize()[..16])
}

/// A fingerprint of the programs a command line uses: their resolved path and modification time.
pub fn tool_fingerprint(programs: &[PathBuf]) -> String {
    programs
        .iter()
        .map(|p| {
            let mtime = std::fs::metadata(p)
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_secs());
            format!("{}@{mtime}", p.display())
        })
        .collect::<Vec<_>>()
        .join(";")
}

fn path(cache: &Path, key: &str) -> PathBuf {
    cache.join("baseline").join(format!("{key}.json"))
}

pub fn load(cache: &Path, key: &str) -> Option<BaseRun> {
    let text = std::fs::read_to_string(path(cache, key)).ok()?;
    serde_json::from_str(&text).ok()
}

pub fn store(cache: &Path, key: &str, run: &BaseRun) -> std::io::Result<()> {
    let p = path(cache, key);
    if let Some(dir) = p.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = p.with_extension("json.tmp");
    std::fs::write(&tmp, serde_json::to_vec_pretty(run).unwrap_or_default())?;
    std::fs::rename(tmp, p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::results::TestStatus;

    #[test]
    fn a_stored_baseline_loads_back_under_the_same_key_only() {
        let dir = tempfile::tempdir().unwrap();
        let run = BaseRun {
            base_tree: "abc".into(),
            broken: None,
            exit_code: Some(1),
            results: vec![TestResult {
                id: "t".into(),
                status: TestStatus::Fail,
                duration_ms: Some(3),
                message: None,
            }],
        };
        let k = key("abc", "steps");
        store(dir.path(), &k, &run).unwrap();
        let back = load(dir.path(), &k).unwrap();
        assert_eq!(back.results, run.results);
        assert!(load(dir.path(), &key("abc", "other steps")).is_none());
        assert!(load(dir.path(), &key("abd", "steps")).is_none());
    }
}
