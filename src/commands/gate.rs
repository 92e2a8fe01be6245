//! `vouch gate`: runs the gate on the command runtime, handles Ctrl-C and the gate timeout, writes the reports.
//!
//! The reports are written whatever happens once the flags are parsed: a gate that cannot judge (a missing
//! tool, a bad revision or profile, a room that cannot be made, the gate's timeout, Ctrl-C) writes them with
//! verdict `error` and the reason, then exits with the error's code.

use std::time::{Duration, Instant};

use anyhow::Result;

use crate::cli::GateArgs;
use crate::error::{
    exit_code_of, hint_of, VouchError, EXIT_FAIL, EXIT_INFRA, EXIT_INTERRUPTED, EXIT_PASS,
    EXIT_USAGE,
};
use crate::gate::outcome::{Finding, Rule, Verdict};
use crate::gate::report::{ProfileInfo, Report, SandboxInfo};
use crate::gate::{self, Options};
use crate::ui::Ui;

use super::{gate_pr, output, runtime, write_file};

pub fn run(mut args: GateArgs) -> Result<i32> {
    let started = Instant::now();
    crate::secret::learn_repository(&args.repo);
    // `--pr`: the pull request's base and head, fetched, become --base and --head.
    let pr = match args.pr.clone() {
        Some(spec) => Some(gate_pr::prepare(&mut args, &spec)?),
        None => None,
    };
    let opts = options(&args);
    match judge(&args, &opts) {
        Ok(report) => {
            // Every step has ended: what the code under judgement printed into the logs is redacted.
            if let Err(e) = crate::secret::redact_tree(&report.logs) {
                tracing::warn!("redact the logs in {}: {e}", report.logs.display());
            }
            write_reports(&args, &report)?;
            if !args.quiet {
                let mut err = output::stderr();
                err.print(&report.console_summary())?;
                err.finish()?;
            }
            if let Some(pr) = pr {
                gate_pr::post(&args, pr, &report)?;
            }
            Ok(exit_code(&report))
        }
        Err(err) => {
            let report = error_report(&opts, &err, started.elapsed());
            if let Err(write) = write_reports(&args, &report) {
                tracing::warn!("{write:#}");
            }
            Err(err)
        }
    }
}

/// The gate's report: the gate run on the command runtime, within `--timeout`.
fn judge(args: &GateArgs, opts: &Options) -> Result<Report> {
    let timeout = args
        .timeout
        .as_deref()
        .map(gate::profile::parse_duration)
        .transpose()
        .map_err(|e| VouchError::usage(format!("bad --timeout: {e:#}")))?;
    let ui = Ui::new(args.quiet);
    // The runtime (and with it every room and child process group) is gone before we report.
    runtime::block_on(|cancel| async move {
        let work = gate::run(opts, &ui, &cancel);
        match timeout {
            Some(limit) => match tokio::time::timeout(limit, work).await {
                Ok(r) => r,
                Err(_) => {
                    cancel.cancel();
                    Err(VouchError::infra_hint(
                        format!("the gate timed out after {}", gate::steps::human(limit)),
                        "raise --timeout, or the step timeouts in the profile",
                    )
                    .into())
                }
            },
            None => {
                let r = work.await;
                runtime::unless_interrupted(&cancel, r)
            }
        }
    })
}

/// Writes every report asked for; the first failure is returned after trying them all.
fn write_reports(args: &GateArgs, report: &Report) -> Result<()> {
    let mut first = None;
    let mut keep = |r: Result<()>| {
        if let Err(e) = r {
            first.get_or_insert(e);
        }
    };
    if let Some(path) = &args.json {
        keep(
            serde_json::to_string_pretty(report)
                .map_err(Into::into)
                .and_then(|text| write_file(path, &text)),
        );
    }
    if let Some(path) = &args.markdown {
        keep(write_file(path, &report.markdown()));
    }
    if let Some(path) = &args.junit {
        keep(report.junit().and_then(|xml| write_file(path, &xml)));
    }
    first.map_or(Ok(()), Err)
}

/// The report of a gate that could not judge: verdict `error`, a finding of the error's kind with its
/// message, its hint as a note, and what the repository still tells (revisions, profile, the change).
fn error_report(opts: &Options, err: &anyhow::Error, elapsed: Duration) -> Report {
    let finding = Finding::new(error_rule(err), format!("{err:#}"));
    let mut report = match gate::prepare(opts) {
        Ok(prep) => {
            // Every step has ended: whatever they logged is redacted, as after a gate that judged.
            let logs = gate::run_logs(opts, &prep);
            if let Err(e) = crate::secret::redact_tree(&logs) {
                tracing::warn!("redact the logs in {}: {e}", logs.display());
            }
            let mut report = Report::error(prep.base.clone(), prep.head.clone(), finding);
            report.profile = ProfileInfo {
                name: prep.profile.name.clone(),
                source: prep.profile_source.clone(),
            };
            report.claimed = prep.claimed;
            report.changes = prep.changes.clone();
            report.notes = prep.notes.clone();
            report.sandbox = SandboxInfo::of(&prep.sandbox);
            report
        }
        Err(_) => {
            let (base, head) = gate::prepare::known_revisions(opts);
            let mut report = Report::error(base, head, finding);
            report.claimed = opts.claimed;
            if let Some(profile) = &opts.profile {
                report.profile.source = format!("--profile {profile}");
            }
            report
        }
    };
    if let Some(hint) = hint_of(err) {
        report.notes.push(format!("hint: {hint}"));
    }
    report.duration_ms = elapsed.as_millis() as u64;
    report
}

/// The rule of an error's finding, by the exit code the error gets.
fn error_rule(err: &anyhow::Error) -> Rule {
    match exit_code_of(err) {
        EXIT_USAGE => Rule::Usage,
        EXIT_INTERRUPTED => Rule::Interrupted,
        _ => Rule::Infrastructure,
    }
}

/// The gate's options for the flags.
fn options(args: &GateArgs) -> Options {
    let mut opts = Options::for_repo(&args.repo);
    opts.base = args.base.clone();
    opts.head = args.head.clone();
    opts.profile = args.profile.clone();
    opts.claimed = args.claimed;
    opts.keep = args.keep;
    args.checks.apply(&mut opts);
    opts
}

fn exit_code(report: &Report) -> i32 {
    match report.verdict {
        Verdict::Pass => EXIT_PASS,
        Verdict::Fail => EXIT_FAIL,
        Verdict::Error => EXIT_INFRA,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use clap::Parser;

    #[test]
    fn an_error_becomes_a_finding_of_its_kind() {
        let infra: anyhow::Error = VouchError::infra("`cargo` is not installed").into();
        assert_eq!(error_rule(&infra), Rule::Infrastructure);
        assert_eq!(
            error_rule(&anyhow::anyhow!("disk full").context("create room")),
            Rule::Infrastructure
        );
        let usage: anyhow::Error = VouchError::usage("invalid gate profile").into();
        assert_eq!(error_rule(&usage), Rule::Usage);
        let stop: anyhow::Error = VouchError::Interrupted.into();
        assert_eq!(error_rule(&stop), Rule::Interrupted);
    }

    #[test]
    fn the_error_report_outside_a_repository_says_why_and_keeps_the_revisions_asked_for() {
        let dir = tempfile::tempdir().unwrap();
        let mut opts = Options::for_repo(dir.path());
        opts.base = Some("main".into());
        let err: anyhow::Error =
            VouchError::usage_hint("not inside a git repository", "pass --repo DIR").into();
        let report = error_report(&opts, &err, Duration::from_millis(1500));
        assert_eq!(report.verdict, Verdict::Error);
        assert_eq!(exit_code(&report), EXIT_INFRA);
        assert_eq!(
            report.findings,
            vec![Finding::new(Rule::Usage, "not inside a git repository")]
        );
        assert_eq!(report.reasons, vec!["not inside a git repository"]);
        assert_eq!(report.notes, vec!["hint: pass --repo DIR"]);
        assert_eq!(
            (report.base.rev.as_str(), report.base.sha.as_str()),
            ("main", "")
        );
        assert_eq!(
            (report.head.rev.as_str(), report.head.sha.as_str()),
            ("HEAD", "")
        );
        assert_eq!(report.range, "");
        assert_eq!(report.duration_ms, 1500);
    }

    fn gate_args(argv: &[&str]) -> GateArgs {
        let cli = Cli::try_parse_from(["vouch", "gate"].iter().chain(argv)).unwrap();
        match cli.command {
            Command::Gate(args) => *args,
            other => panic!("not gate: {other:?}"),
        }
    }

    #[test]
    fn without_flags_the_options_are_the_gates_defaults() {
        let opts = options(&gate_args(&[]));
        let want = Options::for_repo(std::path::Path::new("."));
        assert_eq!(format!("{opts:?}"), format!("{want:?}"));
    }

    #[test]
    fn every_flag_lands_in_the_options() {
        let opts = options(&gate_args(&[
            "--repo",
            "../svc",
            "--base",
            "main",
            "--head",
            "fix",
            "--profile",
            "go",
            "--claimed",
            "NO-GO",
            "--keep",
            "--strict-baseline",
            "--no-flaky",
            "--reruns",
            "3",
            "--allow-no-tests",
            "--allow",
            "src/**",
            "--deny",
            "vendor/**",
            "--no-baseline",
            "--refresh-baseline",
            "--no-bite",
            "--bite-require",
            "all",
            "--bite-build-failure",
            "reject",
            "--allow-removed-tests",
            "--fresh-rooms",
        ]));
        let mut want = Options::for_repo(std::path::Path::new("../svc"));
        want.base = Some("main".into());
        want.head = "fix".into();
        want.profile = Some("go".into());
        want.claimed = Some(crate::gate::outcome::Claim::NoGo);
        want.keep = true;
        want.strict_baseline = true;
        want.no_flaky = true;
        want.reruns = 3;
        want.allow_no_tests = true;
        want.allow = vec!["src/**".into()];
        want.deny = vec!["vendor/**".into()];
        want.no_baseline = true;
        want.refresh_baseline = true;
        want.no_bite = true;
        want.bite_require = Some(gate::profile::BiteRequire::All);
        want.bite_build_failure = Some(gate::profile::BuildFailure::Reject);
        want.allow_removed_tests = true;
        want.fresh_rooms = true;
        assert_eq!(format!("{opts:?}"), format!("{want:?}"));
    }
}
