//! `vouch backlog`: reads the source (a task folder, or the forge issues with a label), makes the plan
//! (sorted, sharded), then prints it (`--plan`), runs one task of it (`--index`) or all of it in the local
//! pool, with the managed model server started once for the whole backlog when no endpoint is configured.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result};
use futures::future::BoxFuture;
use tokio::sync::Mutex;

use crate::backlog::child::{Endpoint, RunSpec};
use crate::backlog::progress::Board;
use crate::backlog::summary::{Row, Status, Summary};
use crate::backlog::{pool, source, BacklogTask, LabelClaims, Shard, StateDir};
use crate::cli::{BacklogArgs, ForgeArgs, OpenPr};
use crate::config::Settings;
use crate::error::{VouchError, EXIT_FAIL, EXIT_INFRA, EXIT_INTERRUPTED, EXIT_PASS};
use crate::forge::client::Client;
use crate::ui::Ui;

use super::run as vouch_run;
use super::{output, pr, runtime, write_file};

pub fn run(args: BacklogArgs) -> Result<i32> {
    let repo = args.repo.clone().unwrap_or_else(|| PathBuf::from("."));
    let repo = std::path::absolute(&repo).with_context(|| format!("locate {}", repo.display()))?;
    crate::secret::learn_repository(&repo);
    let shard = args
        .shard
        .as_deref()
        .map(str::parse::<Shard>)
        .transpose()
        .map_err(VouchError::usage)?;
    if args.jobs == Some(0) {
        return Err(VouchError::usage("--jobs must be at least 1").into());
    }
    if args.attempts == 0 {
        return Err(VouchError::usage("--attempts must be at least 1").into());
    }
    let escalate = args.escalate.as_deref().map(parse_escalate).transpose()?;
    let (tasks, source_key, labels) = read_source(&args, &repo)?;
    let all = source::plan(tasks, None);
    let plan = source::plan(all.clone(), shard);
    if args.plan {
        return print_plan(&plan, args.json.as_deref());
    }
    if args.emit.is_some() {
        return super::backlog_emit::emit(&args, &repo, &plan);
    }
    let single = match args.index {
        // --task-ids names tasks of the whole source; the plan's index counts in the shard.
        Some(i) => Some(match &args.task_ids {
            Some(ids) => source::pick(&all, Some(ids), i)?,
            None => source::pick(&plan, None, i)?,
        }),
        None => None,
    };
    let settings = Settings::from_files(&repo)?
        .overlay(Settings::from_env())
        .overlay(Settings {
            endpoint: args.endpoint.clone(),
            model: args.model.clone(),
            ..Settings::default()
        });
    let key = crate::agent::records::repo_key(&repo)?;
    let state = StateDir::of(&key, &source_key);
    let spec = RunSpec {
        exe: std::env::current_exe().context("locate the vouch binary")?,
        repo: repo.clone(),
        extra: passthrough(&args),
    };
    let ui = Ui::new(args.quiet);
    let managed = vouch_run::managed_model(&settings);
    let ids: Vec<String> = match &single {
        Some(t) => vec![t.id.clone()],
        None => plan.iter().map(|t| t.id.clone()).collect(),
    };
    let summary = runtime::block_on(|cancel| async move {
        let server = match &managed {
            Some(choice) => Some(vouch_run::serve_managed(choice, &settings, &ui, &cancel).await?),
            None => None,
        };
        let endpoint = match &server {
            Some((s, alias)) => Endpoint {
                url: s.url.clone(),
                model: Some(alias.clone()),
            },
            None => Endpoint {
                url: settings.endpoint.clone().unwrap_or_default(),
                model: settings.model.clone(),
            },
        };
        let jobs = match args.jobs {
            Some(n) => n,
            None if server.is_some() => 1,
            None => default_jobs(&endpoint.url).await,
        };
        let opts = Arc::new(pool::Options {
            spec,
            state,
            jobs,
            attempts: args.attempts,
            endpoint,
            escalate,
            resume: args.resume,
            labels,
            setup: tokio::sync::Mutex::new(()),
        });
        if single.is_none() {
            ui.line(&format!(
                "vouch backlog: {} task{}{}, {jobs} at a time (state: {})",
                ids.len(),
                if ids.len() == 1 { "" } else { "s" },
                shard.map(|s| format!(" (shard {s})")).unwrap_or_default(),
                opts.state.dir().display()
            ));
        }
        let board = Arc::new(Board::new(ui.clone(), &ids));
        let result = match &single {
            Some(task) => pool::run_task(&opts, task, &board, &cancel)
                .await
                .map(|row| Summary { tasks: vec![row] }),
            None => pool::run(opts.clone(), plan, board.clone(), &cancel).await,
        };
        board.clear();
        if let Some((server, _)) = server {
            server.stop().await;
        }
        result
    })?;
    if let Some(path) = &args.json {
        write_file(path, &serde_json::to_string_pretty(&summary)?)?;
    }
    if let Some(path) = &args.markdown {
        write_file(path, &summary.markdown())?;
    }
    if !args.quiet {
        let mut err = output::stderr();
        err.print(&summary.console())?;
        err.finish()?;
    }
    Ok(match (&args.index, summary.tasks.first()) {
        (Some(_), Some(row)) => index_exit(row),
        _ => summary.exit_code(),
    })
}

/// The exit code of `--index`: the task's outcome; a task another runner holds is retried (infrastructure).
fn index_exit(row: &Row) -> i32 {
    match row.status {
        Status::Verified => EXIT_PASS,
        Status::Rejected | Status::Failed => EXIT_FAIL,
        Status::Infra | Status::Skipped => EXIT_INFRA,
        Status::Interrupted => EXIT_INTERRUPTED,
    }
}

/// The tasks, the key their state is kept under, and the forge's claim labels for issues.
type Source = (Vec<BacklogTask>, String, Option<Arc<dyn LabelClaims>>);

/// Reads the backlog's source: the task folder, or the forge's open issues with the label.
fn read_source(args: &BacklogArgs, repo: &Path) -> Result<Source> {
    let Some(label) = &args.label else {
        let dir = args.dir.clone().unwrap_or_else(|| repo.join("tasks"));
        let dir = dir.canonicalize().map_err(|e| {
            VouchError::usage(format!(
                "cannot read the task folder {}: {e}",
                dir.display()
            ))
        })?;
        let tasks = source::from_dir(&dir)?;
        return Ok((tasks, format!("dir:{}", dir.display()), None));
    };
    let setup = pr::ForgeSetup::load(repo, &args.forge, args.draft)?;
    let (target, _) = setup.target(repo, None)?;
    let (token, _) = setup.token(&target);
    let (token, var) = token.map_or((None, String::new()), |(t, v)| (Some(t), v));
    let mut client =
        Client::with_token(target.clone(), token, var, &setup.trust).map_err(pr::forge_error)?;
    let wanted = label.clone();
    let issues = runtime::block_on(|_cancel| async move {
        client
            .list_issues(&wanted)
            .await
            .map(|issues| (issues, client))
            .map_err(pr::forge_error)
    })?;
    let (issues, client) = issues;
    let name = format!("{}/{}", target.owner, target.repo);
    let tasks = source::from_issues(&name, &issues, &args.claim_label);
    let labels: Arc<dyn LabelClaims> = Arc::new(ForgeLabels {
        client: Mutex::new(client),
        label: args.claim_label.clone(),
    });
    Ok((tasks, format!("label:{name}:{label}"), Some(labels)))
}

/// Claim labels through the forge's REST client.
struct ForgeLabels {
    client: Mutex<Client>,
    label: String,
}

impl LabelClaims for ForgeLabels {
    fn add(&self, number: u64) -> BoxFuture<'_, Result<()>> {
        Box::pin(async move {
            let mut c = self.client.lock().await;
            c.add_label(number, &self.label)
                .await
                .map_err(pr::forge_error)
        })
    }

    fn remove(&self, number: u64) -> BoxFuture<'_, Result<()>> {
        Box::pin(async move {
            let mut c = self.client.lock().await;
            c.remove_label(number, &self.label)
                .await
                .map_err(pr::forge_error)
        })
    }
}

/// `--plan`: the ids on stdout, and `{"tasks": [...]}` in the JSON file.
fn print_plan(plan: &[BacklogTask], json: Option<&Path>) -> Result<i32> {
    let ids: Vec<&str> = plan.iter().map(|t| t.id.as_str()).collect();
    if let Some(path) = json {
        write_file(
            path,
            &serde_json::to_string_pretty(&serde_json::json!({ "tasks": ids }))?,
        )?;
    }
    let mut out = output::stdout();
    for id in &ids {
        out.line(id)?;
    }
    out.finish()?;
    Ok(EXIT_PASS)
}

/// `URL#MODEL` or `URL`.
fn parse_escalate(text: &str) -> Result<Endpoint> {
    let (url, model) = match text.rsplit_once('#') {
        Some((url, model)) => (url, Some(model.to_string()).filter(|m| !m.is_empty())),
        None => (text, None),
    };
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(VouchError::usage(format!(
            "bad --escalate `{text}`: give it as URL or URL#MODEL, e.g. http://gpu:8000#qwen3-coder"
        ))
        .into());
    }
    Ok(Endpoint {
        url: url.to_string(),
        model,
    })
}

/// The CPU cores, at most the server's slots when it says how many it has.
async fn default_jobs(url: &str) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    match pool::server_slots(url).await {
        Some(slots) => cores.min(slots),
        None => cores,
    }
}

/// The `vouch run` arguments every task gets: the forge flags, `--open-pr`, and what follows `--`.
fn passthrough(args: &BacklogArgs) -> Vec<String> {
    let mut out = Vec::new();
    match args.open_pr {
        Some(OpenPr::Verified) => out.push("--open-pr=verified".to_string()),
        Some(OpenPr::Always) => out.push("--open-pr=always".to_string()),
        None => {}
    }
    if args.draft {
        out.push("--draft".into());
    }
    out.extend(forge_flags(&args.forge));
    out.extend(args.run_args.iter().cloned());
    out
}

fn forge_flags(f: &ForgeArgs) -> Vec<String> {
    let mut out = Vec::new();
    let mut flag = |name: &str, value: Option<String>| {
        if let Some(v) = value {
            out.push(format!("--{name}"));
            out.push(v);
        }
    };
    flag("forge", f.forge.map(|x| x.name().to_string()));
    flag("forge-repo", f.forge_repo.clone());
    flag("api-url", f.api_url.clone());
    flag("remote", f.remote.clone());
    flag("token-env", f.token_env.clone());
    flag(
        "ca-file",
        f.ca_file.as_ref().map(|p| p.to_string_lossy().into_owned()),
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use clap::Parser;

    fn args(argv: &[&str]) -> BacklogArgs {
        let cli = Cli::try_parse_from(["vouch", "backlog"].iter().chain(argv)).unwrap();
        match cli.command {
            Command::Backlog(a) => *a,
            other => panic!("not backlog: {other:?}"),
        }
    }

    #[test]
    fn the_forge_flags_open_pr_and_the_rest_pass_through_to_each_run() {
        let a = args(&[
            "--open-pr",
            "--draft",
            "--forge-repo",
            "acme/calc",
            "--",
            "--max-turns",
            "5",
        ]);
        assert_eq!(
            passthrough(&a),
            [
                "--open-pr=verified",
                "--draft",
                "--forge-repo",
                "acme/calc",
                "--max-turns",
                "5"
            ]
        );
    }

    #[test]
    fn escalation_takes_a_url_and_an_optional_model() {
        let e = parse_escalate("http://gpu:8000#big").unwrap();
        assert_eq!(
            (e.url.as_str(), e.model.as_deref()),
            ("http://gpu:8000", Some("big"))
        );
        assert_eq!(parse_escalate("http://gpu:8000").unwrap().model, None);
        assert!(parse_escalate("gpu").is_err());
    }
}
