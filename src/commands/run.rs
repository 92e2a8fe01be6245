//! `vouch run`: reads the task, sets up the model client and budgets, runs the agent loop on a tokio runtime
//! with Ctrl-C, writes the extra JSON report and maps the status to an exit code.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use tokio_util::sync::CancellationToken;

use crate::agent::{self, Config, Rails, Task};
use crate::cli::{RunArgs, ToolModeArg};
use crate::config::Settings;
use crate::error::VouchError;
use crate::gate;
use crate::model::ModelConfig;
use crate::ui::Ui;

pub fn run(args: RunArgs) -> Result<i32> {
    if let Some(issue) = &args.issue {
        return Err(issue_error(issue).into());
    }
    let task = match (&args.task, &args.prompt) {
        (Some(path), _) => Task::load(path)?,
        (None, Some(prompt)) => Task::from_prompt(prompt)?,
        (None, None) => return Err(VouchError::usage("give --task FILE or --prompt TEXT").into()),
    };
    let wall_time = args
        .wall_time
        .as_deref()
        .map(gate::profile::parse_duration)
        .transpose()
        .map_err(|e| VouchError::usage(format!("bad --wall-time: {e:#}")))?;
    let shell = if args.allow_shell {
        let timeout = gate::profile::parse_duration(&args.shell_timeout)
            .map_err(|e| VouchError::usage(format!("bad --shell-timeout: {e:#}")))?;
        Some(timeout)
    } else {
        None
    };
    let repo = args
        .repo
        .clone()
        .or_else(|| task.repo.clone())
        .unwrap_or_else(|| PathBuf::from("."));
    // defaults < user's vouch.toml < repository's vouch.toml < environment < flags.
    let flags = Settings {
        endpoint: args.endpoint.clone(),
        model: args.model.clone(),
        api_key_env: args.api_key_env.clone(),
        tool_mode: args.tool_mode,
        max_turns: args.max_turns,
        stall_turns: args.stall_turns,
        repair_cycles: args.repair_cycles,
        context: args.context,
        profile: args.profile.clone(),
        author: args.author.clone(),
        signoff: args.signoff.then_some(true),
    };
    let settings = Settings::from_files(&repo)?
        .overlay(Settings::from_env())
        .overlay(flags);
    let mut model = ModelConfig::new(
        settings
            .endpoint
            .clone()
            .unwrap_or_else(|| "http://127.0.0.1:8080".to_string()),
        settings
            .model
            .clone()
            .unwrap_or_else(|| "local".to_string()),
    );
    model.api_key_env = settings.api_key_env.clone();
    model.tool_mode = settings.tool_mode.unwrap_or(ToolModeArg::Auto).into();
    // The task's front matter is more specific than a config file, less than a flag.
    let max_turns = args
        .max_turns
        .or(task.max_turns)
        .or(settings.max_turns)
        .unwrap_or(50);
    if max_turns == 0 {
        return Err(VouchError::usage("--max-turns must be at least 1").into());
    }
    let profile = args
        .profile
        .clone()
        .or_else(|| task.profile.clone())
        .or_else(|| settings.profile.clone());
    let defaults = Rails::default();
    let cfg = Config {
        repo,
        base: args
            .base
            .clone()
            .or_else(|| task.base.clone())
            .unwrap_or_else(|| "HEAD".to_string()),
        profile,
        workspaces: PathBuf::from("workspaces"),
        fresh: args.fresh,
        resume: args.resume,
        context: settings.context.filter(|n| *n > 0),
        model,
        rails: Rails {
            max_turns,
            stall_turns: settings.stall_turns.unwrap_or(defaults.stall_turns).max(1),
            wall_time,
            tokens: args.token_budget,
            repair_cycles: settings.repair_cycles.unwrap_or(defaults.repair_cycles),
            ..defaults
        },
        author: settings.author.clone(),
        signoff: settings.signoff.unwrap_or(false),
        shell,
        cache: gate::default_cache_dir(),
        task,
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
        agent::run(&cfg, &ui, &cancel).await
    });
    rt.shutdown_timeout(std::time::Duration::from_secs(5));
    let report = report?;
    if let Some(path) = &args.json {
        write(path, &serde_json::to_string_pretty(&report)?)?;
    }
    if !args.quiet {
        eprint!("{}", report.console_summary());
    }
    Ok(report.exit_code())
}

/// `--issue OWNER/REPO#N`: checked for form; fetching it from a forge is not built yet.
fn issue_error(issue: &str) -> VouchError {
    if !valid_issue(issue) {
        return VouchError::usage(format!(
            "bad --issue `{issue}`: give it as OWNER/REPO#N, e.g. acme/calc#12"
        ));
    }
    VouchError::usage(
        "fetching issues from a forge is not built yet; save the issue text to a task file (tasks/NAME.md) \
         and pass --task",
    )
}

/// Whether `issue` has the form OWNER/REPO#N (N a positive number).
fn valid_issue(issue: &str) -> bool {
    let Some((repo, number)) = issue.split_once('#') else {
        return false;
    };
    let Some((owner, name)) = repo.split_once('/') else {
        return false;
    };
    let part = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    };
    part(owner)
        && part(name)
        && !number.is_empty()
        && number.chars().all(|c| c.is_ascii_digit())
        && number.parse::<u64>().is_ok_and(|n| n > 0)
}

fn write(path: &Path, text: &str) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
    }
    std::fs::write(path, text).with_context(|| format!("write {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::valid_issue;

    #[test]
    fn issues_have_the_form_owner_repo_number() {
        for good in ["acme/calc#12", "a-b/c.d_e#1"] {
            assert!(valid_issue(good), "{good}");
        }
        for bad in [
            "acme/calc",
            "calc#12",
            "acme/calc#",
            "acme/calc#x",
            "/calc#1",
            "a/b/c#1",
            "acme/calc#0",
        ] {
            assert!(!valid_issue(bad), "{bad}");
        }
    }
}
