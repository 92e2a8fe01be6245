//! The local pool: up to `jobs` tasks at once, each claimed, run for its attempts (the next attempt told the
//! last one's findings), escalated once to a stronger endpoint when they all fail, recorded, and released.
//! The per-index entry point runs [`run_task`], one slot of this pool.

use std::sync::Arc;

use anyhow::{Context, Result};
use futures::future::BoxFuture;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use super::child::{self, AttemptSpec, Endpoint, Phase, RunSpec};
use super::claim::{self, Claimed};
use super::findings;
use super::progress::{Board, TaskState};
use super::source::{BacklogTask, TaskKind};
use super::state::{Outcome, StateDir, TaskRecord};
use super::summary::{Row, Summary};

/// The forge side of a claim: a label on the issue while a runner works on it.
pub trait LabelClaims: Send + Sync {
    /// Adds the claim label to issue `number`.
    fn add(&self, number: u64) -> BoxFuture<'_, Result<()>>;
    /// Removes it.
    fn remove(&self, number: u64) -> BoxFuture<'_, Result<()>>;
}

/// How a backlog runs.
pub struct Options {
    pub spec: RunSpec,
    pub state: StateDir,
    pub jobs: usize,
    /// Attempts per task on `endpoint` (at least 1).
    pub attempts: u32,
    pub endpoint: Endpoint,
    /// One more attempt here for a task that failed its attempts.
    pub escalate: Option<Endpoint>,
    /// Leave the tasks with a finished record alone; restart the others from a fresh worktree.
    pub resume: bool,
    /// Claim labels on the forge, for issue tasks.
    pub labels: Option<Arc<dyn LabelClaims>>,
    /// Held while a child makes its worktree (see [`child::run`]).
    pub setup: tokio::sync::Mutex<()>,
}

/// Runs `tasks` (the plan) in the pool; the summary has one row per task, in plan order.
pub async fn run(
    opts: Arc<Options>,
    tasks: Vec<BacklogTask>,
    board: Arc<Board>,
    cancel: &CancellationToken,
) -> Result<Summary> {
    let slots = Arc::new(Semaphore::new(opts.jobs.max(1)));
    let mut set = tokio::task::JoinSet::new();
    let mut rows: Vec<Option<Row>> = vec![None; tasks.len()];
    // Slots are taken here, in plan order, so the tasks start in the order of the plan.
    for (i, task) in tasks.iter().cloned().enumerate() {
        let permit = tokio::select! {
            p = slots.clone().acquire_owned() => p.ok(),
            _ = cancel.cancelled() => None,
        };
        let Some(permit) = permit else {
            // Stopped before its turn came: nothing ran, nothing was claimed.
            rows[i] = Some(not_started(&opts, &task, &board)?);
            continue;
        };
        let (opts, board, cancel) = (opts.clone(), board.clone(), cancel.clone());
        set.spawn(async move {
            let row = run_task(&opts, &task, &board, &cancel).await;
            drop(permit);
            (i, row)
        });
    }
    while let Some(joined) = set.join_next().await {
        let (i, row) = joined.context("a backlog task panicked")?;
        rows[i] = Some(row?);
    }
    Ok(Summary {
        tasks: rows.into_iter().flatten().collect(),
    })
}

/// A task Ctrl-C stopped before it started: recorded as interrupted, for `--resume`.
fn not_started(opts: &Options, task: &BacklogTask, board: &Board) -> Result<Row> {
    let record = match opts.state.load(&task.id)? {
        Some(r) if opts.resume && r.finished() => return Ok(Row::of(&r, true)),
        Some(r) => TaskRecord {
            outcome: Some(Outcome::Interrupted),
            ..r
        },
        None => TaskRecord {
            id: task.id.clone(),
            title: task.title.clone(),
            outcome: Some(Outcome::Interrupted),
            attempts: vec![],
        },
    };
    board.set(&task.id, &TaskState::Done(Outcome::Interrupted));
    Ok(Row::of(&record, false))
}

/// One slot: claims `task`, runs its attempts and escalation, records each, releases the claim.
pub async fn run_task(
    opts: &Options,
    task: &BacklogTask,
    board: &Board,
    cancel: &CancellationToken,
) -> Result<Row> {
    let earlier = opts.state.load(&task.id)?;
    if let Some(r) = earlier.as_ref().filter(|r| opts.resume && r.finished()) {
        board.set(
            &task.id,
            &TaskState::DoneBefore(r.outcome.unwrap_or(Outcome::Failed)),
        );
        return Ok(Row::of(r, true));
    }
    if let TaskKind::Issue { claimed: true, .. } = task.kind {
        board.note(&format!(
            "  {}: claimed by another runner (the issue has the claim label): skipped",
            task.id
        ));
        board.set(&task.id, &TaskState::HeldElsewhere);
        return Ok(Row::skipped(&task.id, &task.title));
    }
    let guard = match claim::claim(&opts.state.claims(), &task.id)? {
        Claimed::Taken(c) => c,
        Claimed::TakenStale(c, old) => {
            board.note(&format!(
                "  {}: took over the stale claim of pid {} on {} (that process is gone)",
                task.id, old.pid, old.host
            ));
            c
        }
        Claimed::Held(holder) => {
            board.note(&format!(
                "  {}: claimed by another runner (pid {} on {}): skipped",
                task.id, holder.pid, holder.host
            ));
            board.set(&task.id, &TaskState::HeldElsewhere);
            return Ok(Row::skipped(&task.id, &task.title));
        }
    };
    board.set(&task.id, &TaskState::Claimed);
    let number = match task.kind {
        TaskKind::Issue { number, .. } => Some(number),
        TaskKind::File(_) => None,
    };
    if let (Some(labels), Some(n)) = (&opts.labels, number) {
        labels.add(n).await?;
    }
    // A resumed task starts again from a fresh worktree: the interrupted run's is in the way.
    let mut fresh = opts.resume && earlier.is_some();
    let mut record = TaskRecord {
        id: task.id.clone(),
        title: task.title.clone(),
        outcome: None,
        attempts: earlier.map(|r| r.attempts).unwrap_or_default(),
    };
    opts.state.save(&record)?;
    let mut findings_file = None;
    let mut outcome = Outcome::Interrupted;
    let plan: Vec<(Endpoint, bool)> = std::iter::repeat_n(
        (opts.endpoint.clone(), false),
        opts.attempts.max(1) as usize,
    )
    .chain(opts.escalate.clone().map(|e| (e, true)))
    .collect();
    for (endpoint, escalated) in plan {
        if cancel.is_cancelled() {
            outcome = Outcome::Interrupted;
            break;
        }
        let n = u32::try_from(record.attempts.len()).unwrap_or(u32::MAX) + 1;
        let attempt = AttemptSpec {
            n,
            endpoint,
            escalated,
            fresh,
            findings: findings_file.clone(),
            report: opts.state.attempt_file(&task.id, n, "json"),
            log: opts.state.attempt_file(&task.id, n, "log"),
        };
        board.set(
            &task.id,
            &TaskState::Running {
                attempt: n,
                turn: 0,
            },
        );
        let id = task.id.clone();
        let on_phase = |p: Phase| {
            let state = match p {
                Phase::Starting => TaskState::Running {
                    attempt: n,
                    turn: 0,
                },
                Phase::Turn(turn) => TaskState::Running { attempt: n, turn },
                Phase::Gating => TaskState::Gating { attempt: n },
            };
            board.set(&id, &state);
        };
        let (done, report) =
            child::run(&opts.spec, task, &attempt, &on_phase, &opts.setup, cancel).await?;
        outcome = done.outcome;
        record.attempts.push(done);
        opts.state.save(&record)?;
        if outcome != Outcome::Rejected {
            break;
        }
        // The next attempt is told what the gate found, and starts from a fresh worktree.
        fresh = true;
        if let Some(report) = report {
            let path = opts.state.attempt_file(&task.id, n, "findings.md");
            std::fs::write(&path, findings::of_report(n, &report))
                .with_context(|| format!("write {}", path.display()))?;
            findings_file = Some(path);
        }
    }
    record.outcome = Some(outcome);
    opts.state.save(&record)?;
    let has_pr = record.attempts.iter().any(|a| a.pr.is_some());
    if let (Some(labels), Some(n), false) = (&opts.labels, number, has_pr) {
        if let Err(e) = labels.remove(n).await {
            board.note(&format!("  {}: the claim label stays: {e:#}", task.id));
        }
    }
    guard.release()?;
    board.set(&task.id, &TaskState::Done(outcome));
    Ok(Row::of(&record, false))
}

/// `total_slots` from llama-server's `GET /props` at `url`; `None` when the server does not say.
pub async fn server_slots(url: &str) -> Option<usize> {
    let root = url.trim_end_matches('/').trim_end_matches("/v1");
    let client = reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(5))
        .build()
        .ok()?;
    let props: serde_json::Value = client
        .get(format!("{root}/props"))
        .send()
        .await
        .ok()?
        .error_for_status()
        .ok()?
        .json()
        .await
        .ok()?;
    props
        .get("total_slots")
        .and_then(serde_json::Value::as_u64)
        .and_then(|n| usize::try_from(n).ok())
        .filter(|n| *n > 0)
}
