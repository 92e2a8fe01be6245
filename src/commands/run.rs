//! `vouch run`: reads the task, sets up the model client and budgets, runs the agent loop on a tokio runtime
//! with Ctrl-C, writes the extra JSON report and maps the status to an exit code.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use tokio_util::sync::CancellationToken;

use crate::agent::{self, Config, Rails, Task};
use crate::cli::RunArgs;
use crate::error::VouchError;
use crate::gate;
use crate::model::ModelConfig;
use crate::ui::Ui;

pub fn run(args: RunArgs) -> Result<i32> {
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
    let mut model = ModelConfig::new(args.endpoint.clone(), args.model.clone());
    model.api_key_env = args.api_key_env.clone();
    model.tool_mode = args.tool_mode.into();
    let max_turns = args.max_turns.or(task.max_turns).unwrap_or(50);
    if max_turns == 0 {
        return Err(VouchError::usage("--max-turns must be at least 1").into());
    }
    let cfg = Config {
        repo: args
            .repo
            .clone()
            .or_else(|| task.repo.clone())
            .unwrap_or_else(|| PathBuf::from(".")),
        base: args
            .base
            .clone()
            .or_else(|| task.base.clone())
            .unwrap_or_else(|| "HEAD".to_string()),
        profile: args.profile.clone().or_else(|| task.profile.clone()),
        workspaces: PathBuf::from("workspaces"),
        fresh: args.fresh,
        resume: args.resume,
        context: Some(args.context).filter(|n| *n > 0),
        model,
        rails: Rails {
            max_turns,
            stall_turns: args.stall_turns.max(1),
            wall_time,
            tokens: args.token_budget,
            repair_cycles: args.repair_cycles,
            ..Rails::default()
        },
        author: args.author.clone(),
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

fn write(path: &Path, text: &str) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
    }
    std::fs::write(path, text).with_context(|| format!("write {}", path.display()))
}
