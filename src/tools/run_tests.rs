//! `run_tests`: the profile's test step run in the worktree, its outcome summarised for the model.
//!
//! This is a convenience for the model, not evidence: the gate reruns everything in a clean room after
//! `submit`. So it runs the test step's command as is (placeholders filled, the selector appended), with
//! the step's timeout, and returns the exit status, the failing tests and the first error with its location
//! ([`test_summary`](super::test_summary)), then the tail of the output, capped. The pass/fail set of the
//! last run is kept ([`TestRunner::last`]): the loop counts progress as that set changing. A run that
//! exits 0 having run no test (a selector that matched nothing, such as `all` for cargo) is a failure
//! that says so: it proves nothing.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;

use anyhow::Result;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::test_summary::{readable, summarize};
use super::text::cap;
use super::{object, CallFuture, CallResult, Context, Tool, ToolError};
use crate::gate::profile::{Profile, Step};
use crate::gate::steps::StepEnv;
use crate::process;
use crate::sandbox::Sandbox;

/// Lines of output returned to the model.
const TAIL_LINES: usize = 60;
/// Characters of output returned to the model.
const TAIL_CHARS: usize = 6000;

/// The tool; the test command comes from [`super::Settings::tests`].
pub struct RunTests;

impl Tool for RunTests {
    fn name(&self) -> &'static str {
        "run_tests"
    }

    fn description(&self) -> &'static str {
        "Run the repository's tests, or a selection of them, and return the result."
    }

    fn parameters(&self) -> Value {
        object(
            json!({
                "selector": {"type": "string", "description": "Optional: the name or path of the tests to run, in the test runner's own syntax. Leave it out to run every test."}
            }),
            &[],
        )
    }

    fn mutates(&self) -> bool {
        false
    }

    fn strict(&self) -> bool {
        false
    }

    fn call<'a>(&'a self, ctx: &'a mut Context<'_>, args: &'a Value) -> CallFuture<'a> {
        Box::pin(async move {
            let selector = args.get("selector").and_then(Value::as_str);
            match &ctx.settings.tests {
                None => Err(ToolError::failed(
                    "No gate profile matches this repository, so vouch does not know how to run its tests.",
                )),
                Some(runner) => runner.run(selector, ctx.cancel).await,
            }
        })
    }
}

/// What one run of the tests came to: whether it passed, which tests failed, the first error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TestResult {
    pub passed: bool,
    pub failing: Vec<String>,
    pub first_error: Option<String>,
}

/// The test command of a worktree.
#[derive(Debug)]
pub struct TestRunner {
    step: Option<Step>,
    env: StepEnv,
    profile: String,
    runs: AtomicU32,
    last: Mutex<Option<TestResult>>,
}

impl TestRunner {
    /// The first test step of `profile`, run in `dir`; logs go to `logs`, build caches to `cache`.
    /// `sandbox` confines the tests; `readable` is what they may read in the hidden home (the user's
    /// repository, where the worktree's git data lives).
    pub fn new(
        profile: &Profile,
        dir: &Path,
        logs: PathBuf,
        cache: PathBuf,
        sandbox: Sandbox,
        readable: Vec<PathBuf>,
    ) -> TestRunner {
        TestRunner {
            step: profile.test_steps().next().cloned(),
            env: StepEnv::for_worktree(profile, dir, logs, cache, sandbox, readable),
            profile: profile.name.clone(),
            runs: AtomicU32::new(0),
            last: Mutex::new(None),
        }
    }

    /// The result of the last run that finished (not timed out or cancelled).
    pub fn last(&self) -> Option<TestResult> {
        self.last.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Runs the tests (or `selector`). Failing tests, a bad selector and a command that cannot be started
    /// are all failed calls.
    pub async fn run(&self, selector: Option<&str>, cancel: &CancellationToken) -> CallResult {
        match self.attempt(selector, cancel).await {
            Ok(result) => result.map_err(ToolError::Failed),
            Err(e) => Err(ToolError::failed(format!(
                "The tests could not be started: {e:#}"
            ))),
        }
    }

    /// `Err` only when the command cannot be started at all.
    async fn attempt(
        &self,
        selector: Option<&str>,
        cancel: &CancellationToken,
    ) -> Result<Result<String, String>> {
        let Some(step) = &self.step else {
            return Ok(Err(format!(
                "The {} profile has no test step, so there are no tests to run. Submit when the change is done.",
                self.profile
            )));
        };
        let run = self.runs.fetch_add(1, Ordering::Relaxed) + 1;
        std::fs::create_dir_all(&self.env.logs)?;
        let stem = format!("run_tests-{run}");
        let junit = self.env.junit_path(&step.name, &format!("-{run}"));
        let mut argv = self.env.argv_for(&step.raw_argv(), &junit);
        // The command as the model would type it: without the JUnit report flags (and their paths in
        // vouch's records) that the profile adds for vouch itself.
        let mut shown: Vec<String> = argv
            .iter()
            .filter(|a| !a.to_ascii_lowercase().contains("junit"))
            .cloned()
            .collect();
        if let Some(sel) = selector.map(str::trim).filter(|s| !s.is_empty()) {
            match shell_words::split(sel) {
                Ok(words) => {
                    shown.extend(words.iter().cloned());
                    argv.extend(words);
                }
                Err(e) => {
                    return Ok(Err(format!(
                        "The selector `{sel}` cannot be split into arguments ({e}); give test names or paths."
                    )))
                }
            }
        }
        let timeout = step.timeout();
        let spec = self
            .env
            .spec(step, argv.clone(), &junit, &stem, timeout, true);
        let outcome = process::run_clean_env(&spec, cancel).await?;
        let command = self.env.relativize(&process::quote_argv(&shown));
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
        let output = outcome.head_and_tail();
        let summary = summarize(&output);
        // Exit 0 after running no test at all (a selector that matched nothing) proves nothing.
        let none_ran = outcome.success() && summary.ran == Some(0);
        if !outcome.timed_out && !outcome.cancelled {
            *self.last.lock().unwrap_or_else(|e| e.into_inner()) = Some(TestResult {
                passed: outcome.success() && !none_ran,
                failing: summary.failing.clone(),
                first_error: summary.first_error.clone(),
            });
        }
        if none_ran {
            let hint = match selector.map(str::trim).filter(|s| !s.is_empty()) {
                Some(sel) => format!(
                    "the selector `{sel}` matched no test. Run run_tests without a selector to run every \
                     test, or give the name of a test that exists"
                ),
                None => "the repository has no tests yet: add one for the change".to_string(),
            };
            return Ok(Err(format!(
                "$ {command}\nTests failed: 0 tests ran, {hint}.\n"
            )));
        }
        let mut text = format!("$ {command}\nTests {status}.\n");
        if !outcome.success() {
            if !summary.failing.is_empty() {
                text.push_str(&format!("Failing tests: {}\n", summary.failing.join(", ")));
            }
            if let Some(e) = &summary.first_error {
                text.push_str(&format!("First error: {}\n", self.env.relativize(e)));
            }
            if !summary.failing.is_empty() || summary.first_error.is_some() {
                text.push_str("Output, last part:\n");
            }
        }
        let readable = readable(&output);
        let lines: Vec<&str> = readable.lines().collect();
        let last = lines[lines.len().saturating_sub(TAIL_LINES)..].join("\n");
        let tail = self.env.relativize(&cap(&last, TAIL_CHARS));
        text.push_str(&tail);
        Ok(if outcome.success() {
            Ok(text)
        } else {
            Err(text)
        })
    }
}
