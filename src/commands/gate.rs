//! `vouch gate`: runs the gate on a tokio runtime, handles Ctrl-C and the gate timeout, writes the reports.

use std::path::Path;

use anyhow::{Context, Result};
use tokio_util::sync::CancellationToken;

use crate::cli::GateArgs;
use crate::error::{VouchError, EXIT_FAIL, EXIT_INFRA, EXIT_PASS};
use crate::gate::outcome::Verdict;
use crate::gate::report::Report;
use crate::gate::{self, Options};
use crate::ui::Ui;

pub fn run(args: GateArgs) -> Result<i32> {
    let timeout = args
        .timeout
        .as_deref()
        .map(gate::profile::parse_duration)
        .transpose()
        .map_err(|e| VouchError::usage(format!("bad --timeout: {e:#}")))?;
    let opts = Options {
        repo: args.repo.clone(),
        base: args.base.clone(),
        head: args.head.clone(),
        profile: args.profile.clone(),
        claimed: args.claimed,
        keep: args.keep,
        strict_baseline: args.strict_baseline,
        no_flaky: args.no_flaky,
        reruns: args.reruns,
        allow_no_tests: args.allow_no_tests,
        allow: args.allow.clone(),
        deny: args.deny.clone(),
        no_baseline: args.no_baseline,
        refresh_baseline: args.refresh_baseline,
        no_bite: args.no_bite,
        bite_require: args.bite_require,
        bite_build_failure: args.bite_build_failure,
        allow_removed_tests: args.allow_removed_tests,
        fresh_rooms: args.fresh_rooms,
        workspaces: std::path::PathBuf::from("workspaces"),
        cache: gate::default_cache_dir(),
    };
    let ui = Ui::new(args.quiet);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("start the async runtime")?;
    let report = rt.block_on(async {
        let cancel = CancellationToken::new();
        let on_signal = cancel.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                on_signal.cancel();
            }
        });
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
                if cancel.is_cancelled() {
                    Err(VouchError::Interrupted.into())
                } else {
                    r
                }
            }
        }
    });
    // The runtime (and with it every room and child process group) is gone before we report.
    rt.shutdown_timeout(std::time::Duration::from_secs(5));
    let report = report?;
    if let Some(path) = &args.json {
        write(path, &serde_json::to_string_pretty(&report)?)?;
    }
    if let Some(path) = &args.markdown {
        write(path, &report.markdown())?;
    }
    if let Some(path) = &args.junit {
        write(path, &report.junit())?;
    }
    if !args.quiet {
        eprint!("{}", report.console_summary());
    }
    Ok(exit_code(&report))
}

fn exit_code(report: &Report) -> i32 {
    match report.verdict {
        Verdict::Pass => EXIT_PASS,
        Verdict::Fail => EXIT_FAIL,
        Verdict::Error => EXIT_INFRA,
    }
}

fn write(path: &Path, text: &str) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
    }
    std::fs::write(path, text).with_context(|| format!("write {}", path.display()))
}
