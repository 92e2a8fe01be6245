//! The bite check's cache: a decided check (bites, no-bite, not applicable) is kept by everything its
//! outcome depends on, so a second gate run of the same change (the agent's run, then `vouch pr`, a CI re-run,
//! `vouch gate --pr` after a rebase that kept the trees) does not revert, rebuild and rerun again.
//!
//! The key covers the base and head commits, the whole profile (steps, paths, bite policy, environment), the
//! effective bite policy, the tools' binaries (path and modification time, so a toolchain upgrade runs it
//! again), vouch's version and its own binary (so a vouch that selects or judges differently does not take an
//! older build's verdict: a fixed selection on tracing-pr1619 was still answered `no-bite` from the cache),
//! and which tests passed at head (the check selects from them; a flaky head gives
//! another key). A test's parameters (`test_x[...]`) are left out of its id there: on the same commits they
//! differ only where the test puts the time or a random value in them (marshmallow's do), and such a change
//! was checked again on every run. An inconclusive or skipped check is never kept. It lives beside the baseline cache, outside
//! every room, where no confined step can write. `--refresh-baseline` and `--fresh-rooms` run it again.

use std::path::{Path, PathBuf};

use serde::Serialize;
use sha2::{Digest, Sha256};

use super::BiteReport;
use crate::gate::outcome::BiteStatus;
use crate::gate::profile::{BitePolicy, Profile};
use crate::gate::results::TestResult;

/// Everything a bite check's outcome depends on.
pub struct KeyParts<'a> {
    pub base: &'a str,
    pub head: &'a str,
    pub profile: &'a Profile,
    pub policy: &'a BitePolicy,
    /// [`crate::gate::baseline::tool_fingerprint`] of the profile's programs.
    pub tools: &'a str,
    pub head_results: &'a [TestResult],
}

/// The cache key of a bite check.
pub fn key(parts: &KeyParts<'_>) -> String {
    #[derive(Serialize)]
    struct Keyed<'a> {
        version: &'a str,
        build: &'a str,
        base: &'a str,
        head: &'a str,
        profile: &'a Profile,
        policy: &'a BitePolicy,
        tools: &'a str,
        head_results: Vec<(&'a str, String)>,
    }
    let mut head_results: Vec<(&str, String)> = parts
        .head_results
        .iter()
        .map(|r| (unparametrized(&r.id), format!("{:?}", r.status)))
        .collect();
    head_results.sort();
    let keyed = Keyed {
        version: concat!("bite 2 vouch ", env!("CARGO_PKG_VERSION")),
        build: this_build(),
        base: parts.base,
        head: parts.head,
        profile: parts.profile,
        policy: parts.policy,
        tools: parts.tools,
        head_results,
    };
    let mut h = Sha256::new();
    h.update(serde_json::to_vec(&keyed).unwrap_or_default());
    hex::encode(&h.finalize()[..16])
}

/// The running vouch binary, by path and modification time: a rebuilt or upgraded vouch is another build.
fn this_build() -> &'static str {
    static BUILD: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    BUILD.get_or_init(|| {
        std::env::current_exe()
            .map(|exe| crate::gate::baseline::tool_fingerprint(&[exe]))
            .unwrap_or_default()
    })
}

/// A test id without its parameters: `t.py::test_x[2026-12-03 12:00:01]` is `t.py::test_x[`.
fn unparametrized(id: &str) -> &str {
    match id.find('[') {
        Some(at) if id.ends_with(']') => &id[..=at],
        _ => id,
    }
}

/// Whether a check's outcome is one to keep: decided, not cut short.
pub fn keepable(report: &BiteReport) -> bool {
    matches!(
        report.status,
        BiteStatus::Bites | BiteStatus::NoBite | BiteStatus::NotApplicable
    )
}

fn path(cache: &Path, key: &str) -> PathBuf {
    cache.join("bite").join(format!("{key}.json"))
}

/// The kept check for `key`, marked as cached.
pub fn load(cache: &Path, key: &str) -> Option<BiteReport> {
    let text = std::fs::read_to_string(path(cache, key)).ok()?;
    let mut report: BiteReport = serde_json::from_str(&text).ok()?;
    if !keepable(&report) {
        return None;
    }
    report.cached = true;
    Some(report)
}

/// Keeps a decided check (see [`keepable`]); anything else is not written.
pub fn store(cache: &Path, key: &str, report: &BiteReport) -> std::io::Result<()> {
    if !keepable(report) {
        return Ok(());
    }
    let p = path(cache, key);
    if let Some(dir) = p.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = p.with_extension("json.tmp");
    std::fs::write(&tmp, serde_json::to_vec_pretty(report).unwrap_or_default())?;
    std::fs::rename(tmp, p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::results::TestStatus;

    fn result(id: &str, status: TestStatus) -> TestResult {
        TestResult {
            id: id.into(),
            status,
            duration_ms: Some(3),
            message: None,
        }
    }

    #[test]
    fn the_key_changes_with_each_thing_the_outcome_depends_on_and_not_with_test_order_or_durations()
    {
        let rust = Profile::preset("rust").unwrap();
        let policy = rust.bite.clone();
        let results = vec![result("a", TestStatus::Pass), result("b", TestStatus::Pass)];
        let parts = KeyParts {
            base: "b1",
            head: "h1",
            profile: &rust,
            policy: &policy,
            tools: "cargo@1",
            head_results: &results,
        };
        let k = key(&parts);
        let mut reordered = vec![result("b", TestStatus::Pass), result("a", TestStatus::Pass)];
        reordered[0].duration_ms = Some(900);
        assert_eq!(
            k,
            key(&KeyParts {
                head_results: &reordered,
                ..parts
            })
        );
        // Parameters that hold the time differ from run to run of the same commits; statuses still count.
        let stamped = |at: &str, status| {
            vec![
                result("a", TestStatus::Pass),
                result("b", TestStatus::Pass),
                result(&format!("t.py::test_when[{at}]"), status),
            ]
        };
        let timed = key(&KeyParts {
            head_results: &stamped("2026-12-03 12:00:01.5", TestStatus::Pass),
            ..parts
        });
        assert_eq!(
            timed,
            key(&KeyParts {
                head_results: &stamped("2026-12-03 12:07:44.1", TestStatus::Pass),
                ..parts
            })
        );
        assert_ne!(timed, k);
        let failed = stamped("2026-12-03 12:07:44.1", TestStatus::Fail);
        assert_ne!(
            timed,
            key(&KeyParts {
                head_results: &failed,
                ..parts
            })
        );
        let flaky = vec![result("a", TestStatus::Pass), result("b", TestStatus::Fail)];
        let go = Profile::preset("go").unwrap();
        let mut all = policy.clone();
        all.require = crate::gate::profile::BiteRequire::All;
        for other in [
            KeyParts {
                base: "b2",
                ..parts
            },
            KeyParts {
                head: "h2",
                ..parts
            },
            KeyParts {
                tools: "cargo@2",
                ..parts
            },
            KeyParts {
                profile: &go,
                ..parts
            },
            KeyParts {
                policy: &all,
                ..parts
            },
            KeyParts {
                head_results: &flaky,
                ..parts
            },
        ] {
            assert_ne!(k, key(&other));
        }
    }

    #[test]
    fn only_a_decided_check_is_kept_and_it_comes_back_marked_cached() {
        let dir = tempfile::tempdir().unwrap();
        let mut report = BiteReport::new(&BitePolicy::default());
        report.status = BiteStatus::Inconclusive;
        store(dir.path(), "k", &report).unwrap();
        assert!(load(dir.path(), "k").is_none());
        report.status = BiteStatus::Bites;
        report
            .reasons
            .push("1 of 1 changed tests fail without the production change".into());
        store(dir.path(), "k", &report).unwrap();
        let back = load(dir.path(), "k").unwrap();
        assert!(back.cached && !report.cached);
        assert_eq!(back.status, BiteStatus::Bites);
        assert_eq!(back.reasons, report.reasons);
        assert!(load(dir.path(), "other").is_none());
    }
}
