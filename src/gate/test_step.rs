//! Judging a test step that ran at head: its exit status against its parsed per-test results, failures split
//! by the baseline, failures rerun alone to spot flaky ones, and the findings and notes that follow.
//!
//! The order matters and each stage can end the judgement: a runner without per-test results is judged by its
//! exit status alone; a timeout is a finding of its own; results that contradict the exit status are never
//! trusted; a non-zero exit with nothing parsed broke before any test. Only then is the baseline needed, and
//! only for failing tests. The rules themselves are pure, in [`judge`](crate::gate::judge).

use std::collections::BTreeSet;
use std::path::Path;

use anyhow::Result;

use crate::gate::findings::{first_error_line, summarize_failure};
use crate::gate::judge::{self, Judgement, Split};
use crate::gate::outcome::{Finding, Rule, StepStatus};
use crate::gate::profile::Step;
use crate::gate::results::{self, Runner, TestResult};
use crate::gate::steps::{self, human, plural, StepEnv, StepRun};
use crate::gate::GateRun;

impl GateRun<'_> {
    /// Decides a test step's status from its exit code, its parsed results, the baseline and reruns.
    pub(super) async fn judge_tests(
        &mut self,
        step: &Step,
        env: &StepEnv,
        run: &mut StepRun,
    ) -> Result<()> {
        let Some(outcome) = run.outcome.clone() else {
            return Ok(());
        };
        let runner = step.runner();
        self.head_test_failed = !outcome.success();
        if runner == Runner::Generic {
            if !outcome.success() {
                self.findings.push(
                    Finding::new(
                        Rule::TestStepFailed,
                        format!(
                            "step `{}` (test) failed{}; it has no per-test results, so it cannot be compared with base",
                            step.name,
                            outcome.exit_code.map(|c| format!(" (exit {c})")).unwrap_or_default()
                        ),
                    )
                    .step(step.name.clone()),
                );
            }
            return Ok(());
        }
        if outcome.timed_out {
            self.findings.push(
                Finding::new(
                    Rule::TestTimeout,
                    format!(
                        "step `{}` (test) timed out after {}; its process group was killed{}",
                        step.name,
                        human(step.timeout()),
                        running_at_timeout(&run.results)
                    ),
                )
                .step(step.name.clone()),
            );
            run.report.status = StepStatus::Timeout;
            return Ok(());
        }
        let tests_exist = self.prep.tree_has_tests
            || (runner == Runner::Cargo && has_inline_rust_tests(&env.room));
        if let Some(m) = judge::exit_mismatch(outcome.exit_code, &run.results, tests_exist) {
            self.findings.push(
                Finding::new(Rule::ExitMismatch, format!("step `{}`: {m}", step.name))
                    .step(step.name.clone()),
            );
            run.report.status = StepStatus::Fail;
            run.report.note = Some(m);
            return Ok(());
        }
        let failing = judge::failing(&run.results);
        if failing.is_empty() {
            if !outcome.success() {
                // Nothing parsed and a non-zero exit: the run broke before any test (build or collection).
                let tail = first_error_line(&run.report.log_tail).unwrap_or_default();
                self.findings.push(
                    Finding::new(
                        Rule::TestStepFailed,
                        format!(
                            "step `{}` (test) failed with exit {} before any test ran: {tail}",
                            step.name,
                            outcome.exit_code.map_or("signal".into(), |c| c.to_string())
                        ),
                    )
                    .step(step.name.clone()),
                );
                run.report.status = StepStatus::Fail;
            }
            return Ok(());
        }
        let base = self.baseline().await?;
        let split = judge::split_by_baseline(&failing, base.as_deref());
        let flaky = self.rerun_failures(step, env, &split).await?;
        let j = judge::judge(
            &split,
            &flaky,
            self.opts.strict_baseline,
            self.opts.no_flaky,
        );
        if !j.new_failures.is_empty() {
            let was = if base.is_some() {
                " (passing or absent at base)"
            } else {
                ""
            };
            self.findings.push(
                Finding::new(
                    Rule::NewTestFailures,
                    format!(
                        "new test failures{was}: {}",
                        failure_list(&j.new_failures, &run.results)
                    ),
                )
                .step(step.name.clone())
                .subjects(j.new_failures.iter().cloned()),
            );
            run.report.status = StepStatus::Fail;
        } else if j.preexisting_failures.is_empty() {
            run.report.status = StepStatus::Pass;
        } else {
            // Only tests that fail at base too: the step fails as it failed there.
            run.report.status = StepStatus::Preexisting;
        }
        if let Some(note) = judgement_note(&j, self.opts.strict_baseline, self.opts.no_flaky) {
            // A hint the run itself gave (a missing module) is kept after the judgement.
            run.report.note = Some(match run.report.note.take() {
                Some(hint) => format!("{note}; {hint}"),
                None => note,
            });
        }
        self.tests.new_failures.extend(j.new_failures);
        self.tests
            .preexisting_failures
            .extend(j.preexisting_failures);
        self.tests.flaky.extend(j.flaky);
        Ok(())
    }

    /// Reruns the candidate failures alone, up to `--reruns` times: the ids that pass on a rerun are flaky.
    async fn rerun_failures(
        &mut self,
        step: &Step,
        env: &StepEnv,
        split: &Split,
    ) -> Result<BTreeSet<String>> {
        let mut flaky = BTreeSet::new();
        if split.candidates.is_empty() || self.opts.reruns == 0 {
            return Ok(flaky);
        }
        let ids: Vec<String> = split.candidates.iter().cloned().collect();
        let Some(cmds) = results::select_argv(step.runner(), &step.raw_argv(), &ids) else {
            return Ok(flaky);
        };
        let pb = self.ui.start(&format!(
            "rerunning {} alone",
            plural(ids.len(), "failed test")
        ));
        let mut wanted = split.candidates.clone();
        for attempt in 0..self.opts.reruns {
            let (results, _) = steps::run_selection(
                step,
                env,
                &cmds,
                &format!("rerun{attempt}-"),
                step.timeout(),
                crate::gate::layered::Phase::Run,
                self.cancel,
            )
            .await?;
            let passed = judge::passed_on_rerun(&wanted, &results);
            wanted.retain(|id| !passed.contains(id));
            flaky.extend(passed);
            if wanted.is_empty() {
                break;
            }
        }
        self.ui.done(
            pb,
            &format!(
                "  rerun    {} flaky of {}",
                flaky.len(),
                plural(ids.len(), "failed test")
            ),
        );
        Ok(flaky)
    }
}

/// The failed tests with their failure messages in one line each: `a (assertion failed ...); b`.
fn failure_list(ids: &[String], results: &[TestResult]) -> String {
    ids.iter()
        .map(|id| {
            let msg = results
                .iter()
                .find(|r| &r.id == id)
                .and_then(|r| r.message.as_deref())
                .map(summarize_failure)
                .filter(|m| !m.is_empty())
                .map(|m| format!(" ({m})"))
                .unwrap_or_default();
            format!("{id}{msg}")
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// The step's note on what was not blamed (or was, by policy): failures at base too, and flaky ones.
fn judgement_note(j: &Judgement, strict_baseline: bool, no_flaky: bool) -> Option<String> {
    let mut parts = Vec::new();
    if !j.preexisting_failures.is_empty() {
        parts.push(format!(
            "{} also failing at base{}",
            plural(j.preexisting_failures.len(), "test"),
            if strict_baseline {
                " (blamed: --strict-baseline)"
            } else {
                " (not blamed)"
            }
        ));
    }
    if !j.flaky.is_empty() {
        parts.push(format!(
            "{} passed when rerun alone{}",
            plural(j.flaky.len(), "test"),
            if no_flaky {
                " (blamed: --no-flaky)"
            } else {
                " (flaky, not blamed)"
            }
        ));
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// How far a timed-out test run got, for its finding.
fn running_at_timeout(results: &[TestResult]) -> String {
    let passed = results.len();
    if passed == 0 {
        String::new()
    } else {
        format!(" ({} had finished)", plural(passed, "test"))
    }
}

/// Whether a Rust tree has unit tests (for the "ran no tests" rule): a `.rs` file holding `#[test]` anywhere
/// but under `target/` or `.git/`, eight levels deep at most.
fn has_inline_rust_tests(root: &Path) -> bool {
    fn walk(dir: &Path, depth: usize) -> bool {
        if depth > 8 {
            return false;
        }
        let Ok(entries) = std::fs::read_dir(dir) else {
            return false;
        };
        entries.flatten().any(|e| {
            let p = e.path();
            if p.is_dir() {
                let name = e.file_name();
                name != "target" && name != ".git" && walk(&p, depth + 1)
            } else {
                p.extension().is_some_and(|x| x == "rs")
                    && std::fs::read_to_string(&p).is_ok_and(|t| t.contains("#[test]"))
            }
        })
    }
    walk(root, 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::results::TestStatus;

    fn failed(id: &str, message: Option<&str>) -> TestResult {
        TestResult {
            id: id.into(),
            status: TestStatus::Fail,
            duration_ms: None,
            message: message.map(Into::into),
        }
    }

    fn ids(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn failed_tests_are_listed_with_their_messages_in_one_line() {
        let results = [
            failed("t::a", Some("assertion failed\n  left: 1\n")),
            failed("t::b", None),
            failed("t::c", Some("   ")),
        ];
        assert_eq!(
            failure_list(&ids(&["t::a", "t::b", "t::c", "t::gone"]), &results),
            "t::a (assertion failed left: 1); t::b; t::c; t::gone"
        );
    }

    #[test]
    fn the_note_says_what_was_not_blamed_and_what_policy_blamed() {
        let j = Judgement {
            new_failures: vec![],
            preexisting_failures: ids(&["a", "b"]),
            flaky: ids(&["c"]),
        };
        assert_eq!(
            judgement_note(&j, false, false).as_deref(),
            Some("2 tests also failing at base (not blamed); 1 test passed when rerun alone (flaky, not blamed)")
        );
        assert_eq!(
            judgement_note(&j, true, true).as_deref(),
            Some("2 tests also failing at base (blamed: --strict-baseline); 1 test passed when rerun alone (blamed: --no-flaky)")
        );
        assert_eq!(judgement_note(&Judgement::default(), true, true), None);
    }

    #[test]
    fn a_timeout_says_how_many_tests_had_finished() {
        assert_eq!(running_at_timeout(&[]), "");
        assert_eq!(
            running_at_timeout(&[failed("a", None), failed("b", None)]),
            " (2 tests had finished)"
        );
    }

    #[test]
    fn inline_rust_tests_are_found_outside_target_and_git() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("target/debug")).unwrap();
        std::fs::write(dir.path().join("target/debug/x.rs"), "#[test]\nfn t() {}\n").unwrap();
        std::fs::create_dir_all(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/lib.rs"), "pub fn f() {}\n").unwrap();
        assert!(!has_inline_rust_tests(dir.path()));
        std::fs::write(
            dir.path().join("src/lib.rs"),
            "pub fn f() {}\n#[cfg(test)]\nmod t {\n#[test]\nfn a() {}\n}\n",
        )
        .unwrap();
        assert!(has_inline_rust_tests(dir.path()));
    }
}
