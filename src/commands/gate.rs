//! `vouch gate`: runs the gate on the command runtime, handles Ctrl-C and the gate timeout, writes the reports.

use anyhow::Result;

use crate::cli::GateArgs;
use crate::error::{VouchError, EXIT_FAIL, EXIT_INFRA, EXIT_PASS};
use crate::gate::outcome::Verdict;
use crate::gate::report::Report;
use crate::gate::{self, Options};
use crate::ui::Ui;

use super::{output, runtime, write_file};

pub fn run(args: GateArgs) -> Result<i32> {
    let timeout = args
        .timeout
        .as_deref()
        .map(gate::profile::parse_duration)
        .transpose()
        .map_err(|e| VouchError::usage(format!("bad --timeout: {e:#}")))?;
    let opts = options(&args);
    let ui = Ui::new(args.quiet);
    // The runtime (and with it every room and child process group) is gone before we report.
    let report = runtime::block_on(|cancel| async move {
        let work = gate::run(&opts, &ui, &cancel);
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
    })?;
    if let Some(path) = &args.json {
        write_file(path, &serde_json::to_string_pretty(&report)?)?;
    }
    if let Some(path) = &args.markdown {
        write_file(path, &report.markdown())?;
    }
    if let Some(path) = &args.junit {
        write_file(path, &report.junit()?)?;
    }
    if !args.quiet {
        let mut err = output::stderr();
        err.print(&report.console_summary())?;
        err.finish()?;
    }
    Ok(exit_code(&report))
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
