//! One attempt: a child `vouch run` process for one task, its console lines read for the progress display
//! and kept in a log, its `--json` report parsed back into the typed [`RunReport`].
//!
//! A child process rather than the agent in-process: a crash or a leak stays in its slot, each run keeps its
//! own Ctrl-C handling and report, and the per-index entry point (one pod, one task) is the same code path.
//! The child has its own process group; Ctrl-C cancels the backlog's token and the backlog forwards SIGINT
//! to every child's group, waits for each to write its interrupted report, and kills what is left after
//! [`STOP_GRACE`].

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio_util::sync::CancellationToken;

use super::source::{BacklogTask, TaskKind};
use super::state::{now_secs, Attempt, Outcome};
use crate::agent::RunReport;

/// How long an interrupted child has to write its report before its group is killed.
pub const STOP_GRACE: Duration = Duration::from_secs(30);

/// Where a task's requests go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoint {
    pub url: String,
    /// The model name the requests carry (`None`: `vouch run`'s own default or setting).
    pub model: Option<String>,
}

/// What every attempt of the backlog shares.
#[derive(Clone, Debug)]
pub struct RunSpec {
    /// The `vouch` binary (the running one).
    pub exe: PathBuf,
    /// The user's repository (`--repo` of each run).
    pub repo: PathBuf,
    /// More `vouch run` arguments, passed through as given (forge flags, `--open-pr`, budgets).
    pub extra: Vec<String>,
}

/// What an attempt is, beyond its task.
#[derive(Clone, Debug)]
pub struct AttemptSpec {
    pub n: u32,
    pub endpoint: Endpoint,
    pub escalated: bool,
    /// Remove the task's worktree and branch first (an earlier attempt's, or an interrupted run's).
    pub fresh: bool,
    /// The findings of the previous attempt (`--prior-findings`).
    pub findings: Option<PathBuf>,
    pub report: PathBuf,
    pub log: PathBuf,
}

/// What the child is doing, read from its console lines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    Starting,
    Turn(u32),
    Gating,
}

/// The `vouch run` arguments of an attempt.
pub fn argv(spec: &RunSpec, task: &BacklogTask, attempt: &AttemptSpec) -> Vec<String> {
    let mut argv = vec!["run".to_string()];
    match &task.kind {
        TaskKind::File(path) => {
            argv.push("--task".into());
            argv.push(path.to_string_lossy().into_owned());
        }
        TaskKind::Issue { .. } => {
            argv.push("--issue".into());
            argv.push(task.id.clone());
        }
    }
    argv.push("--repo".into());
    argv.push(spec.repo.to_string_lossy().into_owned());
    argv.push("--json".into());
    argv.push(attempt.report.to_string_lossy().into_owned());
    argv.push("--endpoint".into());
    argv.push(attempt.endpoint.url.clone());
    if let Some(model) = &attempt.endpoint.model {
        argv.push("--model".into());
        argv.push(model.clone());
    }
    if attempt.fresh {
        argv.push("--fresh".into());
    }
    if let Some(f) = &attempt.findings {
        argv.push("--prior-findings".into());
        argv.push(f.to_string_lossy().into_owned());
    }
    argv.extend(spec.extra.iter().cloned());
    argv
}

/// Runs one attempt to its end (or Ctrl-C's); `phase` hears what the child is doing. The report is `None`
/// when the child wrote none (it crashed, or stopped on a usage error before the run began).
///
/// `setup` is held from the start of the child until it says its worktree is made (or exits): libgit2's
/// worktree add races with another one in the same repository ("reference is already checked out"), so the
/// pool's children make theirs one at a time.
pub async fn run(
    spec: &RunSpec,
    task: &BacklogTask,
    attempt: &AttemptSpec,
    phase: &(dyn Fn(Phase) + Send + Sync),
    setup: &tokio::sync::Mutex<()>,
    cancel: &CancellationToken,
) -> Result<(Attempt, Option<RunReport>)> {
    for path in [&attempt.report, &attempt.log] {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
        }
    }
    let _ = std::fs::remove_file(&attempt.report);
    let started = now_secs();
    let clock = Instant::now();
    let argv = argv(spec, task, attempt);
    tracing::info!(task = %task.id, "starting {}", crate::process::quote_argv(&argv));
    let setup_guard = setup.lock().await;
    let ready = std::sync::Arc::new(tokio::sync::Notify::new());
    let mut child = tokio::process::Command::new(&spec.exe)
        .args(&argv)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("start {}", spec.exe.display()))?;
    let pid = child.id();
    let log = tokio::fs::File::create(&attempt.log)
        .await
        .with_context(|| format!("create {}", attempt.log.display()))?;
    let log = std::sync::Arc::new(tokio::sync::Mutex::new(log));
    let stderr = child.stderr.take();
    let stdout = child.stdout.take();
    let pr = std::sync::Arc::new(std::sync::Mutex::new(None::<String>));
    let made = ready.clone();
    let read_err = read_lines(stderr, log.clone(), move |line| {
        if line.starts_with("vouch run ") && line.contains(": worktree ") {
            made.notify_one();
        }
        if let Some(p) = phase_of(line) {
            phase(p);
        }
    });
    let pr_seen = pr.clone();
    let read_out = read_lines(stdout, log.clone(), move |line| {
        if let Some(url) = pr_url(line) {
            if let Ok(mut slot) = pr_seen.lock() {
                *slot = Some(url);
            }
        }
    });
    let waited = async {
        let early = tokio::select! {
            status = child.wait() => Some(status),
            _ = ready.notified() => None,
            _ = cancel.cancelled() => None,
        };
        drop(setup_guard);
        if let Some(status) = early {
            return status;
        }
        tokio::select! {
            status = child.wait() => status,
            _ = cancel.cancelled() => {
                signal_group(pid, libc::SIGINT);
                match tokio::time::timeout(STOP_GRACE, child.wait()).await {
                    Ok(status) => status,
                    Err(_) => {
                        signal_group(pid, libc::SIGKILL);
                        child.wait().await
                    }
                }
            }
        }
    };
    let (status, (), ()) = tokio::join!(waited, read_err, read_out);
    let status = status.with_context(|| format!("wait for vouch run of {}", task.id))?;
    let code = status.code();
    let report: Option<RunReport> = std::fs::read_to_string(&attempt.report)
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok());
    let outcome = match &report {
        Some(r) => Outcome::of_exit(Some(r.exit_code())),
        None if cancel.is_cancelled() => Outcome::Interrupted,
        None => Outcome::of_exit(code),
    };
    let error = match (&report, outcome) {
        (Some(r), _) => r.error.clone(),
        (None, Outcome::Interrupted) => None,
        (None, _) => Some(last_error(&attempt.log, code)),
    };
    let pr = pr.lock().ok().and_then(|p| p.clone());
    let record = Attempt {
        n: attempt.n,
        endpoint: attempt.endpoint.url.clone(),
        model: report
            .as_ref()
            .map(|r| r.model.clone())
            .filter(|m| !m.is_empty())
            .or_else(|| attempt.endpoint.model.clone())
            .unwrap_or_default(),
        escalated: attempt.escalated,
        outcome,
        run_status: report.as_ref().map(|r| r.status),
        exit_code: code,
        started,
        duration_ms: u64::try_from(clock.elapsed().as_millis()).unwrap_or(u64::MAX),
        turns: report.as_ref().map_or(0, |r| r.turns),
        branch: report
            .as_ref()
            .map(|r| r.branch.clone())
            .filter(|b| !b.is_empty()),
        pr,
        report: report.as_ref().map(|_| attempt.report.clone()),
        log: attempt.log.clone(),
        error,
    };
    Ok((record, report))
}

/// Copies each line of `pipe` to the log and hands it to `each`.
async fn read_lines<R: tokio::io::AsyncRead + Unpin>(
    pipe: Option<R>,
    log: std::sync::Arc<tokio::sync::Mutex<tokio::fs::File>>,
    each: impl Fn(&str),
) {
    let Some(pipe) = pipe else { return };
    let mut lines = BufReader::new(pipe).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        each(&line);
        let mut file = log.lock().await;
        let _ = file.write_all(line.as_bytes()).await;
        let _ = file.write_all(b"\n").await;
    }
}

/// The phase a console line of `vouch run` announces.
pub fn phase_of(line: &str) -> Option<Phase> {
    let line = line.trim_start();
    if let Some(rest) = line.strip_prefix("turn ") {
        let n = rest.split('/').next()?.trim().parse().ok()?;
        return Some(Phase::Turn(n));
    }
    if line.starts_with("committed ") && line.contains("; gating ") {
        return Some(Phase::Gating);
    }
    None
}

/// The pull request's address in `vouch run --open-pr`'s line `opened pull request #N: URL`.
pub fn pr_url(line: &str) -> Option<String> {
    let rest = line.split_once("pull request #")?.1;
    let url = rest.split_once(": ")?.1.trim();
    url.starts_with("http").then(|| url.to_string())
}

/// The last line of the log that says `error:` (else the exit code), for an attempt without a report.
fn last_error(log: &Path, code: Option<i32>) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines()
        .rev()
        .find_map(|l| l.strip_prefix("error: "))
        .map(str::to_string)
        .unwrap_or_else(|| match code {
            Some(c) => format!("vouch run exited {c} without a report"),
            None => "vouch run was killed by a signal without a report".to_string(),
        })
}

/// Sends `signal` to the child's own process group.
fn signal_group(pid: Option<u32>, signal: libc::c_int) {
    if let Some(pid) = pid {
        crate::process::signal_group(pid, signal);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn console_lines_tell_the_turn_the_gate_and_the_pull_request() {
        assert_eq!(
            phase_of("  turn 3/40  edit  prompt 100  completion 10"),
            Some(Phase::Turn(3))
        );
        assert_eq!(
            phase_of("  committed abc1234 on vouch/t; gating 1111111..abc1234"),
            Some(Phase::Gating)
        );
        assert_eq!(phase_of("  gate: pass"), None);
        assert_eq!(
            pr_url("opened pull request #12: https://github.com/acme/calc/pull/12").as_deref(),
            Some("https://github.com/acme/calc/pull/12")
        );
        assert_eq!(pr_url("no pull request: the run is rejected"), None);
    }

    #[test]
    fn the_argv_names_the_task_the_endpoint_and_the_findings() {
        let spec = RunSpec {
            exe: PathBuf::from("vouch"),
            repo: PathBuf::from("/r"),
            extra: vec!["--max-turns".into(), "5".into()],
        };
        let task = BacklogTask {
            id: "acme/calc#4".into(),
            title: "t".into(),
            kind: TaskKind::Issue {
                number: 4,
                claimed: false,
            },
        };
        let attempt = AttemptSpec {
            n: 2,
            endpoint: Endpoint {
                url: "http://m".into(),
                model: Some("big".into()),
            },
            escalated: false,
            fresh: true,
            findings: Some(PathBuf::from("/f.md")),
            report: PathBuf::from("/r.json"),
            log: PathBuf::from("/r.log"),
        };
        assert_eq!(
            argv(&spec, &task, &attempt).join(" "),
            "run --issue acme/calc#4 --repo /r --json /r.json --endpoint http://m --model big --fresh \
             --prior-findings /f.md --max-turns 5"
        );
    }
}
