//! `vouch pr`: push a run's branch (or any branch) and open its pull request, or update the body of the one
//! that is open. The body is the run's evidence from its records (the run's summary, the gate's report),
//! written next to them as `pr.md` before any request, so a failed request loses nothing.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::agent::records::Records;
use crate::agent::{RunReport, Status};
use crate::cli::PrArgs;
use crate::error::{VouchError, EXIT_PASS};
use crate::forge::body::{self, Parts, TEMPLATE_PATHS};
use crate::forge::client::{NewPr, Opened};
use crate::forge::push::{self, Credentials, PushError, Pushed};
use crate::forge::{Client, Explicit, ForgeError, Target, Token};

use super::{output, runtime, write_file};

/// The body vouch composed, kept next to the run's records.
const PR_BODY: &str = "pr.md";

pub fn run(args: PrArgs) -> Result<i32> {
    let (repo_dir, branch, report) = match (&args.workspace, &args.branch) {
        (Some(ws), _) => {
            let ws = workspace_dir(ws)?;
            let report = read_report(&ws, args.task.as_deref())?;
            (ws, report.1.branch.clone(), Some(report))
        }
        (None, Some(b)) => (
            args.repo.clone().unwrap_or_else(|| PathBuf::from(".")),
            b.clone(),
            None,
        ),
        (None, None) => return Err(VouchError::usage("give a WORKSPACE or --branch B").into()),
    };
    if let Some(r) = &report {
        if r.1.status != Status::Verified && !args.draft {
            return Err(VouchError::usage_hint(
                format!("the run's status is {}, not verified: vouch opens pull requests for verified runs", r.1.status.name()),
                "pass --draft to open a draft pull request with the report anyway",
            )
            .into());
        }
    }
    let repo = crate::git::open(&repo_dir)?;
    let remote_url = push::remote_url(&repo_dir, &args.remote);
    let target = Target::resolve(
        remote_url.as_deref(),
        &Explicit {
            forge: args.forge,
            repo: args.forge_repo.clone(),
            api_url: args.api_url.clone(),
        },
    )
    .map_err(forge_error)?;
    let vars: Vec<&str> = match &args.token_env {
        Some(v) => vec![v.as_str()],
        None => target.forge.token_vars().to_vec(),
    };
    let token = Token::from_env(&vars);

    let head = crate::git::resolve(&repo, &format!("refs/heads/{branch}"))?;
    let template = TEMPLATE_PATHS
        .iter()
        .find_map(|p| crate::git::file_text(&repo, head, p));
    let text = match &args.body_file {
        Some(f) => std::fs::read_to_string(f).with_context(|| format!("read {}", f.display()))?,
        None => body::compose(&parts(
            report.as_ref().map(|(_, r)| r),
            &branch,
            args.issue,
            template,
        )),
    };
    let saved = match &report {
        Some((records, _)) => records.dir().join(PR_BODY),
        None => std::env::temp_dir().join(format!("vouch-pr-{}.md", branch.replace('/', "-"))),
    };
    write_file(&saved, &text)?;
    let title = args
        .title
        .clone()
        .or_else(|| report.as_ref().map(|(_, r)| r.title.clone()))
        .unwrap_or_else(|| branch.clone());
    let base = match &args.base {
        Some(b) => b.clone(),
        None => crate::git::default_branch(&repo)
            .map(|b| b.trim_start_matches("origin/").to_string())
            .ok_or_else(|| {
                VouchError::usage("cannot tell the pull request's base branch; say --base BRANCH")
            })?,
    };

    let (token, var) = token.ok_or_else(|| {
        forge_error(ForgeError::NoToken {
            forge: target.forge.name(),
            vars: vars.join(" or "),
        })
    })?;
    let mut out = output::stdout();
    let creds = Credentials {
        token: Some((token.clone(), var.clone())),
        user: target.forge.git_user().to_string(),
    };
    let shown = remote_url.clone().unwrap_or_else(|| args.remote.clone());
    let pushed = push::push(&repo_dir, &args.remote, &branch, &branch, &creds)
        .map_err(|e| push_error(e, &shown))?;
    out.line(&match &pushed {
        Pushed::Created { sha } => format!(
            "pushed {branch} to {shown} (new branch at {:.12})",
            sha.to_string()
        ),
        Pushed::Updated { from, to } => format!(
            "pushed {branch} to {shown} ({:.12}..{:.12})",
            from.to_string(),
            to.to_string()
        ),
        Pushed::UpToDate { sha } => format!(
            "{branch} is up to date on {shown} ({:.12})",
            sha.to_string()
        ),
    })?;

    let mut client = Client::new(target, token, var).map_err(forge_error)?;
    let new = NewPr {
        title,
        body: text,
        head: branch.clone(),
        base,
        draft: args.draft,
    };
    let opened = runtime::block_on(|_cancel| async move {
        client.open_or_update(&new).await.map_err(forge_error)
    })
    .with_context(|| format!("the pull request's body is kept in {}", saved.display()))?;
    out.line(&match opened {
        Opened::Opened(pr) => format!("opened pull request #{}: {}", pr.number, pr.url),
        Opened::Updated(pr) => format!(
            "updated the body of pull request #{}: {}",
            pr.number, pr.url
        ),
    })?;
    out.finish()?;
    Ok(EXIT_PASS)
}

/// The workspace a `vouch pr` argument names: a directory, else a task id of the repository in the current
/// directory (its worktree where `vouch run` puts them).
fn workspace_dir(arg: &Path) -> Result<PathBuf> {
    if arg.is_dir() {
        return Ok(arg.to_path_buf());
    }
    let by_id = crate::agent::records::workspaces(Path::new("."))
        .ok()
        .map(|w| w.join(arg))
        .filter(|w| w.is_dir());
    by_id.ok_or_else(|| {
        VouchError::usage_hint(
            format!("no workspace {}", arg.display()),
            "give the worktree `vouch run` printed, or a task id from the repository's directory",
        )
        .into()
    })
}

/// The run's records and its report: the records of `task` (default: the workspace directory's name) of the
/// repository the workspace belongs to, where `vouch run` wrote them, outside the worktree.
fn read_report(workspace: &Path, task: Option<&str>) -> Result<(Records, RunReport)> {
    let task = match task {
        Some(t) => t.to_string(),
        None => workspace
            .canonicalize()
            .unwrap_or_else(|_| workspace.to_path_buf())
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .ok_or_else(|| {
                VouchError::usage("cannot tell the task id from the workspace; say --task ID")
            })?,
    };
    let records = Records::of(workspace, &task)?;
    let path = records.report_json();
    let text = std::fs::read_to_string(&path).map_err(|e| {
        VouchError::usage_hint(
            format!("no run records of task `{task}` at {}: {e}", path.display()),
            "give the workspace of a `vouch run` (and --task ID when its directory is not named after the task), or --branch B",
        )
    })?;
    let report = serde_json::from_str(&text).with_context(|| format!("read {}", path.display()))?;
    Ok((records, report))
}

/// The parts of the body: the run's summary and the gate's report, or just the branch without records.
fn parts(
    report: Option<&RunReport>,
    branch: &str,
    issue: Option<u64>,
    template: Option<String>,
) -> Parts {
    match report {
        Some(r) => Parts {
            summary: r.markdown(),
            report: r
                .gate
                .as_ref()
                .map_or_else(|| "The gate did not run.".to_string(), |g| g.markdown()),
            task: None,
            issue,
            model: None,
            template,
        },
        None => Parts {
            summary: format!("Branch `{branch}`."),
            report: String::new(),
            task: None,
            issue,
            model: None,
            template,
        },
    }
}

fn forge_error(e: ForgeError) -> anyhow::Error {
    match e {
        ForgeError::Config(_) | ForgeError::NoToken { .. } => {
            VouchError::usage(e.to_string()).into()
        }
        _ => VouchError::infra(e.to_string()).into(),
    }
}

fn push_error(e: PushError, remote: &str) -> anyhow::Error {
    let message = format!("push to {remote}: {e}");
    match e {
        PushError::Lease { .. } | PushError::NoBranch(_) => VouchError::usage(message).into(),
        _ => VouchError::infra(message).into(),
    }
}
