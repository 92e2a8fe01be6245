//! `run_tests`: the profile's test step run in the worktree, its outcome summarised for the model.
//!
//! This is a convenience for the model, not evidence: the gate reruns everything in a clean room after
//! `submit`. So it runs the test step's command as is (placeholders filled, the selector appended), with
//! the step's timeout, and returns the exit status and the tail of the output, capped.

use std::path::{Path, PathBuf};

use anyhow::Result;
use tokio_util::sync::CancellationToken;

use crate::gate::profile::{Profile, Step};
use crate::gate::steps::StepEnv;
use crate::process;
use crate::tools::ToolOutput;

/// Lines of output returned to the model.
const TAIL_LINES: usize = 60;
/// Characters of output returned to the model.
const TAIL_CHARS: usize = 6000;

/// The test command of a worktree.
pub struct TestRunner {
    step: Option<Step>,
    env: StepEnv,
    profile: String,
    runs: u32,
}

impl TestRunner {
    /// The first test step of `profile`, run in `dir`; logs go to `logs`, build caches to `cache`.
    pub fn new(profile: &Profile, dir: &Path, logs: PathBuf, cache: PathBuf) -> TestRunner {
        TestRunner {
            step: profile.test_steps().next().cloned(),
            env: StepEnv {
                room: dir.to_path_buf(),
                cache,
                logs,
                profile_env: profile.env.clone(),
            },
            profile: profile.name.clone(),
            runs: 0,
        }
    }

    /// Runs the tests (or `selector`); `Err` only when the command cannot be started at all.
    pub async fn run(
        &mut self,
        selector: Option<&str>,
        cancel: &CancellationToken,
    ) -> Result<ToolOutput> {
        let Some(step) = &self.step else {
            return Ok(ToolOutput::error(format!(
                "The {} profile has no test step, so there are no tests to run. Submit when the change is done.",
                self.profile
            )));
        };
        self.runs += 1;
        std::fs::create_dir_all(&self.env.logs)?;
        let stem = format!("run_tests-{}", self.runs);
        let junit = self.env.junit_path(&step.name, &format!("-{}", self.runs));
        let mut argv = self.env.argv_for(&step.raw_argv(), &junit);
        if let Some(sel) = selector.map(str::trim).filter(|s| !s.is_empty()) {
            match shell_words::split(sel) {
                Ok(words) => argv.extend(words),
                Err(e) => {
                    return Ok(ToolOutput::error(format!(
                        "The selector `{sel}` cannot be split into arguments ({e}); give test names or paths."
                    )))
                }
            }
        }
        let timeout = step.timeout();
        let spec = self
            .env
            .spec(step, argv.clone(), &junit, &stem, timeout, true);
        let outcome = process::run(&spec, cancel).await?;
        let command = self.env.relativize(&process::quote_argv(&argv));
        let status = if outcome.timed_out {
            format!("timed out after {}s", timeout.as_secs())
        } else if outcome.cancelled {
            "cancelled".to_string()
        } else {
            match outcome.exit_code {
                Some(0) => "passed (exit 0)".to_string(),
                Some(c) => format!("failed (exit {c})"),
                None => "killed by a signal".to_string(),
            }
        };
        let tail = self
            .env
            .relativize(&cap(&outcome.tail_lines(TAIL_LINES), TAIL_CHARS));
        let text = format!("$ {command}\nTests {status}.\n{tail}");
        Ok(if outcome.success() {
            ToolOutput::ok(text)
        } else {
            ToolOutput::error(text)
        })
    }
}

/// The last `max` characters of `text`, marked when cut.
pub fn cap(text: &str, max: usize) -> String {
    let count = text.chars().count();
    if count <= max {
        return text.to_string();
    }
    let tail: String = text.chars().skip(count - max).collect();
    format!("[... {} characters cut ...]\n{tail}", count - max)
}
