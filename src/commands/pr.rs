//! `vouch pr`: push a run's branch (or any branch) and open its pull request, or update the body of the one
//! that is open. The body is the run's evidence from its records (the run's summary, the gate's report),
//! written next to them as `pr.md` before any request, so a failed request loses nothing.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::agent::records::Records;
use crate::agent::Task;
use crate::agent::{RunReport, Status};
use crate::cli::{ForgeArgs, OpenPr, PrArgs};
use crate::config::Settings;
use crate::error::{VouchError, EXIT_PASS};
use crate::forge::body::{self, Parts, TEMPLATE_PATHS};
use crate::forge::client::{NewPr, Opened};
use crate::forge::push::{self, Credentials, PushError, Pushed};
use crate::forge::tls::Trust;
use crate::forge::{Client, Explicit, ForgeError, Numbered, Secret, Target};

use super::{output, runtime, write_file};

/// The body vouch composed, kept next to the run's records.
const PR_BODY: &str = "pr.md";

pub fn run(args: PrArgs) -> Result<i32> {
    let (repo_dir, branch, report) = match (&args.workspace, &args.branch) {
        (Some(ws), _) => {
            let ws = workspace_dir(ws)?;
            let run = read_report(&ws, args.task.as_deref())?;
            (ws, run.report.branch.clone(), Some(run))
        }
        (None, Some(b)) => (
            args.repo.clone().unwrap_or_else(|| PathBuf::from(".")),
            b.clone(),
            None,
        ),
        (None, None) => return Err(VouchError::usage("give a WORKSPACE or --branch B").into()),
    };
    let setup = ForgeSetup::load(&repo_dir, &args.forge, args.draft)?;
    if let Some(r) = &report {
        if r.report.status != Status::Verified && !setup.draft {
            return Err(VouchError::usage_hint(
                format!("the run's status is {}, not verified: vouch opens pull requests for verified runs", r.report.status.name()),
                "pass --draft to open a draft pull request with the report anyway",
            )
            .into());
        }
    }
    let (records, report) = match report {
        Some(run) => (Some(run.records.dir().to_path_buf()), Some(run.report)),
        None => (None, None),
    };
    // Runs recorded before the report kept them have neither: the body then leaves them out.
    let known = |s: Option<&String>| s.filter(|s| !s.is_empty()).cloned();
    let task = known(report.as_ref().map(|r| &r.task_text));
    let model = known(report.as_ref().map(|r| &r.model));
    let body = match &args.body_file {
        Some(f) => {
            Some(std::fs::read_to_string(f).with_context(|| format!("read {}", f.display()))?)
        }
        None => None,
    };
    publish(
        &Publish {
            repo_dir,
            branch,
            records,
            report,
            title: args.title.clone(),
            body,
            base: args.base.clone(),
            issue: args.issue,
            task,
            model,
            draft: setup.draft,
        },
        &setup,
    )?;
    Ok(EXIT_PASS)
}

/// The forge settings of one command: `[forge]` of the vouch.toml files, under the flags.
#[derive(Clone, Debug)]
pub(super) struct ForgeSetup {
    pub explicit: Explicit,
    /// The remote's name or URL.
    pub remote: String,
    pub token_env: Option<String>,
    pub draft: bool,
    /// The CA bundles trusted over HTTPS: `--ca-file` or `[forge] ca_file`, and `SSL_CERT_FILE`.
    pub trust: Trust,
}

impl ForgeSetup {
    /// The settings for the repository around `repo`: flags win over the files' `[forge]`.
    /// A run's worktree holds files the model wrote: its main checkout's `vouch.toml` is read instead.
    pub fn load(repo: &Path, flags: &ForgeArgs, draft: bool) -> Result<ForgeSetup> {
        crate::secret::learn_repository(repo);
        let file = Settings::from_files(&main_checkout(repo))?
            .forge
            .unwrap_or_default();
        Ok(ForgeSetup {
            explicit: Explicit {
                forge: flags.forge.or(file.forge),
                repo: flags.forge_repo.clone().or(file.repo),
                api_url: flags.api_url.clone().or(file.api_url),
            },
            remote: flags
                .remote
                .clone()
                .or(file.remote)
                .unwrap_or_else(|| "origin".to_string()),
            token_env: flags.token_env.clone().or(file.token_env),
            draft: draft || file.draft.unwrap_or(false),
            trust: Trust::from_env(flags.ca_file.clone().or(file.ca_file)),
        })
    }

    /// The forge and repository (`repo`, `OWNER/REPO`, wins over the settings), and the remote's URL
    /// without user information, for messages.
    pub fn target(&self, repo_dir: &Path, repo: Option<&str>) -> Result<(Target, Option<String>)> {
        let remote_url = push::remote_url(repo_dir, &self.remote);
        let mut explicit = self.explicit.clone();
        if let Some(r) = repo {
            explicit.repo = Some(r.to_string());
        }
        let target = Target::resolve(remote_url.as_deref(), &explicit).map_err(forge_error)?;
        Ok((target, remote_url))
    }

    /// The token, from `token_env` or the forge's variables; and the variables looked at, for messages.
    pub fn token(&self, target: &Target) -> (Option<(Secret, String)>, String) {
        let vars: Vec<&str> = match &self.token_env {
            Some(v) => vec![v.as_str()],
            None => target.forge.token_vars().to_vec(),
        };
        (Secret::from_env(&vars), vars.join(" or "))
    }

    /// The token, or the usage error that says which variable to set.
    pub fn need_token(&self, target: &Target) -> Result<(Secret, String)> {
        let (token, vars) = self.token(target);
        token.ok_or_else(|| {
            forge_error(ForgeError::NoToken {
                forge: target.forge.name(),
                vars,
            })
        })
    }

    /// The credentials git asks for: the token over HTTP(S), the SSH agent otherwise.
    pub fn credentials(&self, target: &Target, token: Option<(Secret, String)>) -> Credentials {
        Credentials {
            token,
            user: target.forge.git_user().to_string(),
            trust: self.trust.clone(),
        }
    }
}

/// The main checkout of the repository around `dir` when `dir` is in a linked worktree, else `dir`.
fn main_checkout(dir: &Path) -> PathBuf {
    git2::Repository::discover(dir)
        .ok()
        .filter(|r| r.is_worktree())
        .and_then(|r| r.commondir().parent().map(Path::to_path_buf))
        .unwrap_or_else(|| dir.to_path_buf())
}

/// One pull request to push and open or update: what `vouch pr` and `vouch run --open-pr` share.
#[derive(Clone, Debug)]
pub(super) struct Publish {
    pub repo_dir: PathBuf,
    pub branch: String,
    /// The run's records directory, where the body is kept (`pr.md`); the temp dir without one.
    pub records: Option<PathBuf>,
    pub report: Option<RunReport>,
    pub title: Option<String>,
    /// A body given as is, instead of the run's evidence.
    pub body: Option<String>,
    pub base: Option<String>,
    pub issue: Option<u64>,
    pub task: Option<String>,
    pub model: Option<String>,
    pub draft: bool,
}

/// Pushes the branch (leased) and opens its pull request or updates the open one's body; the body is
/// saved before any request.
pub(super) fn publish(p: &Publish, setup: &ForgeSetup) -> Result<()> {
    let repo = crate::git::open(&p.repo_dir)?;
    let (target, remote_url) = setup.target(&p.repo_dir, None)?;
    let branch = &p.branch;
    let head = crate::git::resolve(&repo, &format!("refs/heads/{branch}"))?;
    let template = TEMPLATE_PATHS
        .iter()
        .find_map(|path| crate::git::file_text(&repo, head, path));
    let text = match &p.body {
        Some(text) => text.clone(),
        None => body::compose(&parts(p, template)),
    };
    let saved = match &p.records {
        Some(dir) => dir.join(PR_BODY),
        None => std::env::temp_dir().join(format!("vouch-pr-{}.md", branch.replace('/', "-"))),
    };
    write_file(&saved, &text)?;
    let title = p
        .title
        .clone()
        .or_else(|| p.report.as_ref().map(|r| r.title.clone()))
        .unwrap_or_else(|| branch.clone());
    let base = match &p.base {
        Some(b) => b.clone(),
        None => crate::git::default_branch(&repo)
            .map(|b| b.trim_start_matches("origin/").to_string())
            .ok_or_else(|| {
                VouchError::usage("cannot tell the pull request's base branch; say --base BRANCH")
            })?,
    };

    let (token, var) = setup.need_token(&target)?;
    let mut out = output::stdout();
    let creds = setup.credentials(&target, Some((token.clone(), var.clone())));
    let shown = remote_url.clone().unwrap_or_else(|| setup.remote.clone());
    let pushed = push::push(&p.repo_dir, &setup.remote, branch, branch, &creds)
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

    let mut client = Client::new(target, token, var, &setup.trust).map_err(forge_error)?;
    let new = NewPr {
        title,
        body: text,
        head: branch.clone(),
        base,
        draft: p.draft,
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
    out.finish()
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
fn read_report(workspace: &Path, task: Option<&str>) -> Result<Run> {
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
    Ok(Run { records, report })
}

/// A finished run as `vouch pr` finds it: where its records are, and its report.
struct Run {
    records: Records,
    report: RunReport,
}

/// The parts of the body: the run's summary and the gate's report, or just the branch without records.
fn parts(p: &Publish, template: Option<String>) -> Parts {
    let (summary, report) = match &p.report {
        Some(r) => (
            r.markdown(),
            r.gate
                .as_ref()
                .map_or_else(|| "The gate did not run.".to_string(), |g| g.markdown()),
        ),
        None => (format!("Branch `{}`.", p.branch), String::new()),
    };
    Parts {
        summary,
        report,
        task: p.task.clone(),
        issue: p.issue,
        model: p.model.clone(),
        template,
    }
}

pub(super) fn forge_error(e: ForgeError) -> anyhow::Error {
    match e {
        ForgeError::Config(_) | ForgeError::NoToken { .. } => {
            VouchError::usage(e.to_string()).into()
        }
        _ => VouchError::infra(e.to_string()).into(),
    }
}

pub(super) fn push_error(e: PushError, remote: &str) -> anyhow::Error {
    git_error(e, &format!("push to {remote}"))
}

/// A failed fetch (`vouch gate --pr`), said as one.
pub(super) fn fetch_error(e: PushError, remote: &str) -> anyhow::Error {
    git_error(e, &format!("fetch from {remote}"))
}

fn git_error(e: PushError, what: &str) -> anyhow::Error {
    let message = format!("{what}: {e}");
    match e {
        PushError::Lease { .. } | PushError::NoBranch(_) => VouchError::usage(message).into(),
        _ => VouchError::infra(message).into(),
    }
}

/// The issue a run works on, as `vouch run --issue` fetched it.
#[derive(Clone, Debug)]
pub(super) struct IssueRun {
    pub target: Target,
    pub number: u64,
}

/// `vouch run --issue OWNER/REPO#N`: the issue's title, body and labels as the task, its body ending with
/// `Fixes #N`. Reading needs no token for a public repository; one is sent when set.
pub(super) fn issue_task(
    repo_dir: &Path,
    setup: &ForgeSetup,
    spec: &str,
) -> Result<(Task, IssueRun)> {
    let spec = Numbered::parse(spec).map_err(forge_error)?;
    let (target, _) = setup.target(repo_dir, spec.repo.as_deref())?;
    let (token, _) = setup.token(&target);
    let (token, var) = token.map_or((None, String::new()), |(t, v)| (Some(t), v));
    let mut client =
        Client::with_token(target.clone(), token, var, &setup.trust).map_err(forge_error)?;
    let number = spec.number;
    let issue = runtime::block_on(|_cancel| async move {
        client.fetch_issue(number).await.map_err(forge_error)
    })?;
    // An issue's text is task text like a task file's, under the same cap.
    crate::agent::task::check_size(
        (issue.title.len() + issue.body.len()) as u64,
        &format!("the text of issue #{number}"),
    )?;
    let mut text = format!("{}\n\n{}", issue.title.trim(), issue.body.trim());
    if !issue.labels.is_empty() {
        text.push_str(&format!("\n\nLabels: {}", issue.labels.join(", ")));
    }
    text.push_str(&format!("\n\nFixes #{number}"));
    let mut task = Task::from_prompt(&text)?;
    task.title = issue.title.trim().to_string();
    Ok((task, IssueRun { target, number }))
}

/// What `vouch run` does with the forge after the run: `--open-pr` and `--comment`.
#[derive(Clone, Debug)]
pub(super) struct AfterRun {
    pub open_pr: Option<OpenPr>,
    pub comment: bool,
    pub issue: Option<IssueRun>,
    pub task_text: String,
    pub model: String,
}

/// After a finished run: push and open or update its pull request (`vouch pr`'s path) when asked and the
/// status allows it, then the verdict as a comment on the issue. A forge failure is an error after the run's
/// records are written; the run's own verdict stands in them.
pub(super) fn after_run(report: &RunReport, setup: &ForgeSetup, after: &AfterRun) -> Result<()> {
    let finished = !matches!(report.status, Status::Error | Status::Incomplete);
    let verified = report.status == Status::Verified;
    let mut errors = Vec::new();
    if let Some(when) = after.open_pr {
        if verified || (when == OpenPr::Always && finished) {
            let p = Publish {
                repo_dir: PathBuf::from(&report.workspace),
                branch: report.branch.clone(),
                records: Some(PathBuf::from(&report.records)),
                report: Some(report.clone()),
                title: None,
                body: None,
                base: None,
                issue: after.issue.as_ref().map(|i| i.number),
                task: Some(after.task_text.clone()),
                model: Some(after.model.clone()),
                draft: setup.draft || !verified,
            };
            if let Err(e) = publish(&p, setup) {
                errors.push(e);
            }
        } else {
            let mut err = output::stderr();
            err.line(&format!(
                "no pull request: the run is {} (--open-pr=always opens a draft for a finished run)",
                report.status.name()
            ))?;
            err.finish()?;
        }
    }
    if let (true, Some(issue)) = (after.comment, &after.issue) {
        let (token, var) = setup.need_token(&issue.target)?;
        let mut client =
            Client::new(issue.target.clone(), token, var, &setup.trust).map_err(forge_error)?;
        let number = issue.number;
        let text = format!(
            "{}\n\n<sub>vouch {}</sub>\n",
            report.markdown(),
            env!("CARGO_PKG_VERSION")
        );
        runtime::block_on(|_cancel| async move {
            client
                .post_comment(number, &text)
                .await
                .map_err(forge_error)
        })?;
        let mut out = output::stdout();
        out.line(&format!("commented the verdict on issue #{number}"))?;
        out.finish()?;
    }
    errors.into_iter().next().map_or(Ok(()), Err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_worktree_reads_the_forge_settings_of_its_main_checkout() {
        let dir = tempfile::tempdir().unwrap();
        let main = dir.path().join("main");
        let repo = git2::Repository::init(&main).unwrap();
        let sig = git2::Signature::now("a", "a@b.c").unwrap();
        let tree = repo
            .find_tree(repo.index().unwrap().write_tree().unwrap())
            .unwrap();
        repo.commit(Some("HEAD"), &sig, &sig, "init", &tree, &[])
            .unwrap();
        let wt = dir.path().join("wt");
        repo.worktree("wt", &wt, None).unwrap();
        std::fs::write(wt.join("vouch.toml"), "[forge]\nrepo = \"evil/x\"\n").unwrap();
        std::fs::write(
            main.join("vouch.toml"),
            "[forge]\nrepo = \"o/r\"\ndraft = true\n",
        )
        .unwrap();
        let setup = ForgeSetup::load(&wt, &ForgeArgs::default(), false).unwrap();
        assert_eq!(setup.explicit.repo.as_deref(), Some("o/r"));
        assert!(setup.draft);
        assert_eq!(setup.remote, "origin");
        let flags = ForgeArgs {
            forge_repo: Some("x/y".into()),
            remote: Some("up".into()),
            ..ForgeArgs::default()
        };
        let setup = ForgeSetup::load(&main, &flags, false).unwrap();
        assert_eq!(
            (setup.explicit.repo.as_deref(), setup.remote.as_str()),
            (Some("x/y"), "up")
        );
    }
}
