//! `vouch run`: reads the task, sets up the model client, budgets and gate checks, runs the agent loop on the
//! command runtime with Ctrl-C, writes the extra JSON report and maps the status to an exit code.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Result;
use tokio_util::sync::CancellationToken;

use crate::agent::{self, Config, Rails, Task, DEFAULT_MAX_TURNS, DEFAULT_SHELL_TIMEOUT};
use crate::cli::RunArgs;
use crate::config::Settings;
use crate::error::VouchError;
use crate::gate;
use crate::llama::{self, InstallTools, ModelChoice, ServeOptions, Server, SetupOptions};
use crate::model::{ModelConfig, DEFAULT_ENDPOINT, DEFAULT_MAX_TOKENS, DEFAULT_MODEL};
use crate::probe;
use crate::ui::Ui;

use super::{output, pr, runtime, write_file};

pub fn run(args: RunArgs) -> Result<i32> {
    crate::secret::learn_repository(args.repo.as_deref().unwrap_or(Path::new(".")));
    // The forge settings come from the user's repository, read before the agent writes anything.
    let forge = (args.open_pr.is_some() || args.issue.is_some())
        .then(|| {
            let dir = args.repo.clone().unwrap_or_else(|| PathBuf::from("."));
            pr::ForgeSetup::load(&dir, &args.forge, args.draft)
        })
        .transpose()?;
    let (mut task, issue) = match (&args.task, &args.prompt, &args.issue, &forge) {
        (Some(path), _, _, _) => (Task::load(path)?, None),
        (None, Some(prompt), _, _) => (Task::from_prompt(prompt)?, None),
        (None, None, Some(spec), Some(setup)) => {
            if !valid_issue(spec) {
                return Err(VouchError::usage(format!(
                    "bad --issue `{spec}`: give it as OWNER/REPO#N, e.g. acme/calc#12"
                ))
                .into());
            }
            let dir = args.repo.clone().unwrap_or_else(|| PathBuf::from("."));
            let (task, issue) = pr::issue_task(&dir, setup, spec)?;
            (task, Some(issue))
        }
        _ => return Err(VouchError::usage("give --task FILE or --prompt TEXT").into()),
    };
    let task_text = task.body.clone();
    if let Some(path) = &args.prior_findings {
        let findings = agent::task::read_text(path, "--prior-findings")?;
        task.body = with_findings(&task.body, &findings);
    }
    let timeouts = Timeouts::from_flags(&args)?;
    let repo = args
        .repo
        .clone()
        .or_else(|| task.repo.clone())
        .unwrap_or_else(|| PathBuf::from("."));
    // defaults < user's vouch.toml < repository's vouch.toml < environment < flags.
    let settings = Settings::from_files(&repo)?
        .overlay(Settings::from_env())
        .overlay(flag_settings(&args));
    let mut cfg = config(&args, task, repo, &settings, timeouts)?;
    let managed = managed_model(&settings);
    // vouch's own models are 0.5B-1.5B coders: they write code well and drive tools badly.
    cfg.strategy = args.strategy.unwrap_or(match &managed {
        Some(ModelChoice::Known(_)) => crate::agent::Strategy::Guided,
        _ => crate::agent::Strategy::Tools,
    });
    let ask = probe::first_look::Ask::new(args.no_probe, settings.tool_mode.is_some());
    let ui = Ui::new(args.quiet);
    let report = runtime::block_on(|cancel| async move {
        // The managed server lives exactly as long as the run: stopped here, or killed with its guard on
        // any early return.
        let server = match &managed {
            Some(choice) => Some(start_managed(choice, &settings, &mut cfg, &ui, &cancel).await?),
            None => None,
        };
        // The managed server is known-good and new each run; an endpoint of the user's is probed once.
        if managed.is_none() {
            probe::first_look::prepare_or_cancel(&mut cfg.model, &ask, &ui, &cancel).await?;
        }
        let report = agent::run(&cfg, &ui, &cancel).await;
        if let Some(server) = server {
            server.stop().await;
        }
        report.map(|r| (r, cfg.model.model.clone()))
    })?;
    let (report, model) = report;
    if let Some(path) = &args.json {
        write_file(path, &serde_json::to_string_pretty(&report)?)?;
    }
    if !args.quiet {
        let mut err = output::stderr();
        err.print(&report.console_summary())?;
        err.finish()?;
    }
    if let Some(setup) = &forge {
        let after = pr::AfterRun {
            open_pr: args.open_pr,
            comment: args.comment,
            issue,
            task_text,
            model,
        };
        pr::after_run(&report, setup, &after)?;
    }
    Ok(report.exit_code())
}

/// The task's text with what the gate found in the previous attempt after it.
fn with_findings(body: &str, findings: &str) -> String {
    format!(
        "{}\n\n## What the gate found in the previous attempt\n\nThis task was tried before and the change was \
         not accepted. Fix what is named here:\n\n{}\n",
        body.trim_end(),
        findings.trim()
    )
}

/// The model vouch serves itself when no endpoint is configured (no flag, no `VOUCH_ENDPOINT`, no `endpoint`
/// in a `vouch.toml`): the one the model setting names if it is a known model or a GGUF file, else the
/// default. `None`: an endpoint is configured, use it.
pub(super) fn managed_model(settings: &Settings) -> Option<ModelChoice> {
    if settings.endpoint.is_some() {
        return None;
    }
    let named = settings
        .model
        .as_deref()
        .and_then(|m| ModelChoice::parse(m).ok());
    Some(named.unwrap_or(ModelChoice::Known(llama::registry::default_model())))
}

/// Sets up and starts the managed llama-server on a free port and points the run's model config at it.
async fn start_managed(
    choice: &ModelChoice,
    settings: &Settings,
    cfg: &mut Config,
    ui: &Ui,
    cancel: &CancellationToken,
) -> Result<Server> {
    let (server, alias) = serve_managed(choice, settings, ui, cancel).await?;
    cfg.model.endpoint = server.url.clone();
    cfg.model.model = alias;
    Ok(server)
}

/// Sets up and starts the managed llama-server on a free port; the server and the model's alias.
pub(super) async fn serve_managed(
    choice: &ModelChoice,
    settings: &Settings,
    ui: &Ui,
    cancel: &CancellationToken,
) -> Result<(Server, String)> {
    ui.line(&format!(
        "no model endpoint configured: vouch serves {} itself (give --endpoint URL to use your own server)",
        choice.alias()
    ));
    let opts = SetupOptions {
        cache: llama::Cache::locate(None),
        model: choice.clone(),
        install_tools: InstallTools::Ask,
        verify: false,
    };
    let hint = "or give --endpoint URL of a running OpenAI-compatible server";
    let ready = llama::setup(&opts, ui, cancel)
        .await
        .map_err(|e| with_hint(e, hint))?;
    let context = settings
        .context
        .filter(|n| *n > 0)
        .unwrap_or(llama::serve::DEFAULT_CONTEXT);
    let port = llama::serve::free_port()?;
    let serve = ServeOptions::for_ready(&ready, "127.0.0.1", port, context);
    let log = opts
        .cache
        .logs()
        .join(format!("llama-server-run-{port}.log"));
    let pb = ui.start(&format!("starting llama-server with {}", ready.alias));
    let server = Server::start(&serve, &log, cancel).await;
    pb.finish_and_clear();
    let server = runtime::unless_interrupted(cancel, server).map_err(|e| with_hint(e, hint))?;
    ui.line(&format!(
        "  llama-server with {} at {} ({}, {context} tokens of context; log {})",
        ready.alias,
        server.url,
        llama::serve::threads_text(serve.threads),
        log.display()
    ));
    Ok((server, ready.alias))
}

/// `err` with a hint added when it has none.
fn with_hint(err: anyhow::Error, hint: &str) -> anyhow::Error {
    if crate::error::hint_of(&err).is_some()
        || crate::error::exit_code_of(&err) != crate::error::EXIT_INFRA
    {
        return err;
    }
    VouchError::infra_hint(format!("{err:#}"), hint).into()
}

/// The duration flags, read before anything else is loaded.
#[derive(Debug)]
struct Timeouts {
    wall_time: Option<Duration>,
    /// The `shell` tool's timeout, when the tool is offered.
    shell: Option<Duration>,
}

impl Timeouts {
    fn from_flags(args: &RunArgs) -> Result<Timeouts> {
        let wall_time = args
            .wall_time
            .as_deref()
            .map(gate::profile::parse_duration)
            .transpose()
            .map_err(|e| VouchError::usage(format!("bad --wall-time: {e:#}")))?;
        // The timeout is only read when the shell is offered.
        let shell = if args.allow_shell {
            let timeout = match &args.shell_timeout {
                Some(text) => gate::profile::parse_duration(text)
                    .map_err(|e| VouchError::usage(format!("bad --shell-timeout: {e:#}")))?,
                None => DEFAULT_SHELL_TIMEOUT,
            };
            Some(timeout)
        } else {
            None
        };
        Ok(Timeouts { wall_time, shell })
    }
}

/// The flags' layer of settings.
fn flag_settings(args: &RunArgs) -> Settings {
    Settings {
        endpoint: args.endpoint.clone(),
        model: args.model.clone(),
        api_key_env: args.api_key_env.clone(),
        tool_mode: args.tool_mode,
        max_turns: args.max_turns,
        stall_turns: args.stall_turns,
        repair_cycles: args.repair_cycles,
        context: args.context,
        max_tokens: args.max_tokens,
        preload: args.preload,
        profile: args.profile.clone(),
        author: args.author.clone(),
        signoff: args.signoff.then_some(true),
        forge: None,
    }
}

/// The run's configuration from the flags, the task and the merged settings.
fn config(
    args: &RunArgs,
    task: Task,
    repo: PathBuf,
    settings: &Settings,
    timeouts: Timeouts,
) -> Result<Config> {
    let mut model = ModelConfig::new(
        settings
            .endpoint
            .clone()
            .unwrap_or_else(|| DEFAULT_ENDPOINT.to_string()),
        settings
            .model
            .clone()
            .unwrap_or_else(|| DEFAULT_MODEL.to_string()),
    );
    model.api_key_env = settings.api_key_env.clone();
    model.tool_mode = settings.tool_mode.unwrap_or_default();
    let max_tokens = settings.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS);
    if max_tokens == 0 {
        return Err(VouchError::usage("--max-tokens must be at least 1").into());
    }
    model.max_tokens = Some(max_tokens);
    // The task's front matter is more specific than a config file, less than a flag.
    let max_turns = args
        .max_turns
        .or(task.max_turns)
        .or(settings.max_turns)
        .unwrap_or(DEFAULT_MAX_TURNS);
    if max_turns == 0 {
        return Err(VouchError::usage("--max-turns must be at least 1").into());
    }
    let profile = args
        .profile
        .clone()
        .or_else(|| task.profile.clone())
        .or_else(|| settings.profile.clone());
    let mut checks = gate::Options::for_repo(&repo);
    args.checks.apply(&mut checks);
    let defaults = Rails::default();
    // Outside the user's checkout. A directory that is no repository fails when the run opens it.
    let workspaces = crate::agent::records::workspaces(&repo)
        .unwrap_or_else(|_| crate::agent::records::data_dir().join("workspaces"));
    Ok(Config {
        repo,
        base: args
            .base
            .clone()
            .or_else(|| task.base.clone())
            .unwrap_or_else(|| "HEAD".to_string()),
        profile,
        workspaces,
        fresh: args.fresh,
        resume: args.resume,
        strategy: args.strategy.unwrap_or_default(),
        context: settings.context.filter(|n| *n > 0),
        preload: settings
            .preload
            .unwrap_or(crate::tools::DEFAULT_OVERVIEW_BYTES),
        model,
        rails: Rails {
            max_turns,
            stall_turns: settings.stall_turns.unwrap_or(defaults.stall_turns).max(1),
            wall_time: timeouts.wall_time,
            tokens: args.token_budget,
            repair_cycles: settings.repair_cycles.unwrap_or(defaults.repair_cycles),
            ..defaults
        },
        author: settings.author.clone(),
        signoff: settings.signoff.unwrap_or(false),
        shell: timeouts.shell,
        cache: gate::default_cache_dir(),
        gate: checks,
        task,
    })
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use clap::Parser;

    fn run_args(argv: &[&str]) -> RunArgs {
        let cli = Cli::try_parse_from(
            ["vouch", "run", "--prompt", "add subtracts"]
                .iter()
                .chain(argv),
        )
        .unwrap();
        match cli.command {
            Command::Run(args) => *args,
            other => panic!("not run: {other:?}"),
        }
    }

    fn config_of(argv: &[&str]) -> Result<Config> {
        let args = run_args(argv);
        let settings = Settings::default().overlay(flag_settings(&args));
        let timeouts = Timeouts::from_flags(&args)?;
        let task = Task::from_prompt("add subtracts")?;
        config(&args, task, PathBuf::from("calc"), &settings, timeouts)
    }

    #[test]
    fn without_flags_a_run_gets_the_named_defaults() {
        let cfg = config_of(&[]).unwrap();
        assert_eq!(cfg.model.endpoint, DEFAULT_ENDPOINT);
        assert_eq!(cfg.model.model, DEFAULT_MODEL);
        assert_eq!(cfg.model.tool_mode, crate::model::ToolMode::Auto);
        assert_eq!(
            format!("{:?}", cfg.rails),
            format!("{:?}", Rails::default())
        );
        assert_eq!(cfg.rails.max_turns, DEFAULT_MAX_TURNS);
        assert_eq!(cfg.shell, None);
        let gate = gate::Options::for_repo(std::path::Path::new("calc"));
        assert_eq!(format!("{:?}", cfg.gate), format!("{gate:?}"));
    }

    #[test]
    fn the_shell_timeout_defaults_to_the_named_constant_and_is_read_only_with_the_shell() {
        let cfg = config_of(&["--allow-shell"]).unwrap();
        assert_eq!(cfg.shell, Some(DEFAULT_SHELL_TIMEOUT));
        let cfg = config_of(&["--allow-shell", "--shell-timeout", "5m"]).unwrap();
        assert_eq!(cfg.shell, Some(Duration::from_secs(300)));
        assert!(config_of(&["--shell-timeout", "nonsense"]).is_ok());
        let err = config_of(&["--allow-shell", "--shell-timeout", "0"]).unwrap_err();
        assert!(err.to_string().starts_with("bad --shell-timeout"), "{err}");
    }

    #[test]
    fn the_gate_checks_of_a_run_reach_the_gate_options() {
        let cfg = config_of(&[
            "--strict-baseline",
            "--no-flaky",
            "--reruns",
            "0",
            "--allow-no-tests",
            "--allow",
            "src/**",
            "--deny",
            "migrations/**",
            "--no-baseline",
            "--refresh-baseline",
            "--no-bite",
            "--bite-require",
            "all",
            "--bite-build-failure",
            "reject",
            "--allow-removed-tests",
            "--fresh-rooms",
        ])
        .unwrap();
        let mut want = gate::Options::for_repo(std::path::Path::new("calc"));
        want.strict_baseline = true;
        want.no_flaky = true;
        want.reruns = 0;
        want.allow_no_tests = true;
        want.allow = vec!["src/**".into()];
        want.deny = vec!["migrations/**".into()];
        want.no_baseline = true;
        want.refresh_baseline = true;
        want.no_bite = true;
        want.bite_require = Some(gate::profile::BiteRequire::All);
        want.bite_build_failure = Some(gate::profile::BuildFailure::Reject);
        want.allow_removed_tests = true;
        want.fresh_rooms = true;
        assert_eq!(format!("{:?}", cfg.gate), format!("{want:?}"));
    }

    #[test]
    fn without_an_endpoint_vouch_serves_the_named_known_model_or_the_default() {
        let with = |endpoint: Option<&str>, model: Option<&str>| Settings {
            endpoint: endpoint.map(String::from),
            model: model.map(String::from),
            ..Settings::default()
        };
        let id = |s: Settings| match managed_model(&s) {
            Some(ModelChoice::Known(m)) => Some(m.id),
            Some(ModelChoice::File(p)) => panic!("a file: {}", p.display()),
            None => None,
        };
        assert_eq!(id(with(Some("http://gpu:8000"), None)), None);
        assert_eq!(id(with(Some("http://gpu:8000"), Some("qwen-0.5b"))), None);
        assert_eq!(id(with(None, None)), Some("qwen-1.5b"));
        assert_eq!(id(with(None, Some("qwen-0.5b"))), Some("qwen-0.5b"));
        assert_eq!(id(with(None, Some("local"))), Some("qwen-1.5b"));
    }

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
