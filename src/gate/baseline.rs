//! The baseline: per-test results of the test step at base, had at most once per gate run and cached by base
//! tree id.
//!
//! The baseline is lazy: it is fetched only when a test fails at head. The cache key also covers the build,
//! custom and test steps' definitions, the profile environment and the tools' binaries (path and modification
//! time), so a toolchain upgrade or a profile edit runs the baseline again. A failing build step at base does
//! not stop it (the test step builds what the tests need); a test step that fails without any result (base
//! does not build), or a base step that times out, gives no baseline: head is then judged on its own, and the
//! report says so.

use std::path::{Path, PathBuf};

use anyhow::Result;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::VouchError;
use crate::gate::outcome::Baseline;
use crate::gate::profile::{Profile, Step, StepKind};
use crate::gate::results::{TestResult, TestStatus};
use crate::gate::schedule::base_step_line;
use crate::gate::steps;
use crate::gate::GateRun;

/// What the baseline run found.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BaseRun {
    pub base_tree: String,
    /// The step that kept base's tests from running (the first failing build step, else the test step).
    pub broken: Option<String>,
    pub exit_code: Option<i32>,
    pub results: Vec<TestResult>,
}

/// The cache key for a base tree under a profile and toolchain.
pub fn key(base_tree: &str, steps_fingerprint: &str) -> String {
    let mut h = Sha256::new();
    // The version of what a cached run means: 2 since a failing build step no longer makes base broken.
    h.update(b"baseline 2\0");
    h.update(base_tree.as_bytes());
    h.update([0]);
    h.update(steps_fingerprint.as_bytes());
    hex::encode(&h.finalize()[..16])
}

/// The steps a baseline runs at base: build, custom and test steps, in profile order.
pub fn base_steps(profile: &Profile) -> Vec<&Step> {
    profile
        .steps
        .iter()
        .filter(|s| matches!(s.kind, StepKind::Build | StepKind::Custom | StepKind::Test))
        .collect()
}

/// What the baseline's results depend on besides the base tree: the steps it runs, the profile environment
/// and the fingerprint of the programs the steps start ([`tool_fingerprint`]).
pub fn fingerprint(profile: &Profile, steps: &[&Step], tools: &str) -> String {
    format!(
        "{}\n{}\n{}",
        serde_json::to_string(steps).unwrap_or_default(),
        serde_json::to_string(&profile.env).unwrap_or_default(),
        tools
    )
}

/// The programs `steps` start, resolved on PATH (those not found are left out).
pub fn programs<'a>(steps: impl Iterator<Item = &'a Step>) -> Vec<PathBuf> {
    steps
        .filter_map(|s| s.raw_argv().first().cloned())
        .filter_map(|p| crate::process::find_program(&p, None, Path::new(".")))
        .collect()
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

impl GateRun<'_> {
    /// The base results, run or loaded from the cache once per gate run; None when there is no usable
    /// baseline (disabled, base broken, a base step timed out).
    pub(super) async fn baseline(&mut self) -> Result<Option<Vec<TestResult>>> {
        if let Some(b) = &self.baseline {
            return Ok(b.clone());
        }
        let result = self.fetch_baseline().await?;
        self.baseline = Some(result.clone());
        Ok(result)
    }

    async fn fetch_baseline(&mut self) -> Result<Option<Vec<TestResult>>> {
        if self.opts.no_baseline {
            self.tests.baseline = Baseline::Disabled;
            self.notes
                .push("no baseline (--no-baseline): every failing test is blamed".into());
            return Ok(None);
        }
        let prep = self.prep;
        let base_steps = base_steps(&prep.profile);
        let programs = programs(base_steps.iter().copied());
        let fingerprint = fingerprint(&prep.profile, &base_steps, &tool_fingerprint(&programs));
        let key = key(&prep.base_tree, &fingerprint);
        if !self.opts.refresh_baseline {
            if let Some(cached) = load(&self.opts.cache, &key) {
                self.tests.baseline = Baseline::Cached;
                return Ok(self.use_base_run(cached));
            }
        }
        let places = self.roles.places(self.opts, prep, "base", "base")?;
        let pb = self.ui.start("preparing the clean room at base");
        let room = self.roles.base_room(self.opts, prep, &places).await?;
        self.ui
            .done(pb, &format!("  room     base at {}", room.dir().display()));
        let env = self.roles.env(prep, &room, &places, "base")?;
        let mut results = Vec::new();
        let mut broken = None;
        let mut exit_code = None;
        let mut failed_build = None;
        for step in base_steps {
            if steps::not_applicable(step, room.dir()).is_some()
                || steps::missing_tool(step, &env, self.cancel).await.is_some()
            {
                continue;
            }
            let pb = self.ui.start(&format!("{} at base", step.name));
            steps::build_tests(step, &env, self.cancel).await?;
            let run = steps::run_step(step, &env, &room, &prep.objects, self.cancel).await?;
            self.ui.done(pb, &base_step_line(&run));
            let Some(outcome) = run.outcome else { continue };
            if outcome.cancelled {
                return Err(VouchError::Interrupted.into());
            }
            if outcome.timed_out {
                self.tests.baseline = Baseline::Unavailable;
                self.notes.push(format!(
                    "the baseline could not be had: `{}` timed out at base; every failing test is blamed",
                    step.name
                ));
                return Ok(None);
            }
            if step.kind == StepKind::Test {
                // After a failing build step, tests that only "fail" (a Go package that does not build
                // reports its tests failed) are no baseline: base runs tests when some pass.
                let ran = if failed_build.is_some() {
                    run.results.iter().any(|r| r.status == TestStatus::Pass)
                } else {
                    !run.results.is_empty()
                };
                if !ran && !outcome.success() {
                    broken = Some(failed_build.take().unwrap_or_else(|| step.name.clone()));
                    break;
                }
                exit_code = outcome.exit_code;
                results.extend(run.results);
            } else if !outcome.success() && failed_build.is_none() {
                // A build step that fails at base (a bench needing nightly under `--all-targets`) does not
                // make base unusable: the test step builds what the tests need, and says so by running them.
                failed_build = Some(step.name.clone());
            }
        }
        let base_run = BaseRun {
            base_tree: prep.base_tree.clone(),
            broken,
            exit_code,
            results,
        };
        if let Err(e) = store(&self.opts.cache, &key, &base_run) {
            tracing::warn!("could not cache the baseline: {e}");
        }
        self.tests.baseline = Baseline::Ran;
        Ok(self.use_base_run(base_run))
    }

    /// The results of a base run, or None (with a note) when base does not build.
    fn use_base_run(&mut self, run: BaseRun) -> Option<Vec<TestResult>> {
        match run.broken {
            Some(step) => {
                self.tests.baseline = Baseline::BaseBroken;
                self.notes.push(format!(
                    "base does not build (step `{step}` fails there before any test runs); head was judged on its own"
                ));
                None
            }
            None => Some(run.results),
        }
    }
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

    #[test]
    fn the_baseline_runs_build_custom_and_test_steps_but_not_checks() {
        let p = Profile::preset("rust").unwrap();
        let kinds: Vec<StepKind> = base_steps(&p).iter().map(|s| s.kind).collect();
        assert!(kinds.contains(&StepKind::Test), "{kinds:?}");
        assert!(
            kinds
                .iter()
                .all(|k| matches!(k, StepKind::Build | StepKind::Custom | StepKind::Test)),
            "{kinds:?}"
        );
    }

    #[test]
    fn the_key_changes_with_the_test_steps_the_environment_and_the_tools_but_not_the_checks() {
        let p = Profile::preset("python").unwrap();
        let key_of = |p: &Profile, tools: &str| key("tree", &fingerprint(p, &base_steps(p), tools));
        let k = key_of(&p, "/usr/bin/pytest@1");
        assert_eq!(k.len(), 32);
        assert_eq!(k, key_of(&p, "/usr/bin/pytest@1"));
        assert_ne!(k, key_of(&p, "/usr/bin/pytest@2"), "a new tool binary");
        let mut env = p.clone();
        env.env.insert("PYTHONHASHSEED".into(), "1".into());
        assert_ne!(k, key_of(&env, "/usr/bin/pytest@1"), "the profile env");
        let mut test = p.clone();
        let i = test
            .steps
            .iter()
            .position(|s| s.kind == StepKind::Test)
            .unwrap();
        test.steps[i].env.insert("X".into(), "1".into());
        assert_ne!(k, key_of(&test, "/usr/bin/pytest@1"), "the test step");
        let mut checks = p.clone();
        checks.steps.retain(|s| !s.kind.parallel());
        assert_eq!(
            k,
            key_of(&checks, "/usr/bin/pytest@1"),
            "checks do not count"
        );
    }

    #[test]
    fn tools_are_fingerprinted_by_path_and_modification_time() {
        let dir = tempfile::tempdir().unwrap();
        let tool = dir.path().join("tool");
        std::fs::write(&tool, "").unwrap();
        let gone = dir.path().join("gone");
        let fp = tool_fingerprint(&[tool.clone(), gone.clone()]);
        let mtime = std::fs::metadata(&tool)
            .unwrap()
            .modified()
            .unwrap()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        assert_eq!(
            fp,
            format!("{}@{mtime};{}@0", tool.display(), gone.display())
        );
    }
}
