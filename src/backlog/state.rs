//! The backlog's state: one JSON record per task under the backlog's state dir, written only by the runner
//! that holds the task's claim (two runners on one backlog never write the same file). `--resume` reads
//! them back and runs only the tasks without a finished record.
//!
//! The state dir is `<vouch data>/backlogs/<repo-key>/<backlog-key>/`: beside the runs' records and
//! worktrees, never in the user's tracked tree. The backlog key is a hash of the source (the task folder,
//! or the forge repository and label), so runners with the same arguments share claims and state.

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::agent::Status as RunStatus;

/// How one attempt (one `vouch run`) ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// The gate proved the change (exit 0).
    Verified,
    /// Rejected by the gate, NO-GO, or stopped by a budget (exit 1): worth another attempt.
    Rejected,
    /// The task could not start: a usage error (a broken task, a workspace in the way; exit 2).
    Failed,
    /// Infrastructure: the model server, git, a crash (exit 3 or no report).
    Infra,
    /// Stopped by Ctrl-C (exit 130); `--resume` runs it again.
    Interrupted,
}

impl Outcome {
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Verified => "verified",
            Outcome::Rejected => "rejected",
            Outcome::Failed => "failed",
            Outcome::Infra => "infra",
            Outcome::Interrupted => "interrupted",
        }
    }

    /// The exit code of `vouch backlog --index` for a task that ended so.
    pub fn exit_code(self) -> i32 {
        use crate::error::*;
        match self {
            Outcome::Verified => EXIT_PASS,
            Outcome::Rejected | Outcome::Failed => EXIT_FAIL,
            Outcome::Infra => EXIT_INFRA,
            Outcome::Interrupted => EXIT_INTERRUPTED,
        }
    }

    /// From the exit code of `vouch run` (the report refines it when there is one).
    pub fn of_exit(code: Option<i32>) -> Outcome {
        use crate::error::*;
        match code {
            Some(EXIT_PASS) => Outcome::Verified,
            Some(EXIT_FAIL) => Outcome::Rejected,
            Some(EXIT_USAGE) => Outcome::Failed,
            Some(EXIT_INTERRUPTED) => Outcome::Interrupted,
            _ => Outcome::Infra,
        }
    }
}

/// One attempt of a task, as recorded.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attempt {
    /// 1-based.
    pub n: u32,
    pub endpoint: String,
    pub model: String,
    /// The attempt ran against the `--escalate` endpoint.
    pub escalated: bool,
    pub outcome: Outcome,
    /// The run's own status, from its report (none when it wrote no report).
    pub run_status: Option<RunStatus>,
    pub exit_code: Option<i32>,
    /// Seconds since the Unix epoch.
    pub started: u64,
    pub duration_ms: u64,
    pub turns: u32,
    pub branch: Option<String>,
    pub pr: Option<String>,
    /// The run's JSON report.
    pub report: Option<PathBuf>,
    /// The run's console output.
    pub log: PathBuf,
    /// Why the attempt failed, when it did outside the report (no report, a crash).
    pub error: Option<String>,
}

/// Everything recorded about one task.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskRecord {
    pub id: String,
    pub title: String,
    /// The last attempt's outcome; `None` while the task runs.
    pub outcome: Option<Outcome>,
    pub attempts: Vec<Attempt>,
}

impl TaskRecord {
    /// Whether `--resume` leaves the task alone.
    pub fn finished(&self) -> bool {
        !matches!(self.outcome, None | Some(Outcome::Interrupted))
    }
}

/// The state dir of one backlog.
#[derive(Clone, Debug)]
pub struct StateDir {
    dir: PathBuf,
}

impl StateDir {
    pub fn at(dir: impl Into<PathBuf>) -> StateDir {
        StateDir { dir: dir.into() }
    }

    /// `<data>/backlogs/<repo-key>/<hash of source>`.
    pub fn of(repo_key: &str, source: &str) -> StateDir {
        let key = format!("{:016x}", super::shard::stable_hash(source));
        StateDir::at(
            crate::agent::records::data_dir()
                .join("backlogs")
                .join(repo_key)
                .join(key),
        )
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn claims(&self) -> PathBuf {
        self.dir.join("claims")
    }

    /// Where attempt `n` of task `id` writes its report, log and findings.
    pub fn attempt_file(&self, id: &str, n: u32, ext: &str) -> PathBuf {
        let stem = super::claim::lock_path(Path::new(""), id);
        let stem = stem.file_stem().map(|s| s.to_string_lossy().into_owned());
        self.dir
            .join("attempts")
            .join(format!("{}-{n}.{ext}", stem.unwrap_or_default()))
    }

    fn record_path(&self, id: &str) -> PathBuf {
        let lock = super::claim::lock_path(&self.dir.join("tasks"), id);
        lock.with_extension("json")
    }

    /// The record of task `id`, if one was written.
    pub fn load(&self, id: &str) -> Result<Option<TaskRecord>> {
        let path = self.record_path(id);
        match std::fs::read_to_string(&path) {
            Ok(text) => Ok(Some(
                serde_json::from_str(&text).with_context(|| format!("read {}", path.display()))?,
            )),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e).with_context(|| format!("read {}", path.display())),
        }
    }

    /// Writes the record (through a temporary file, so a reader never sees half of it).
    pub fn save(&self, record: &TaskRecord) -> Result<()> {
        let path = self.record_path(&record.id);
        let dir = path.parent().unwrap_or(&self.dir);
        std::fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
        let tmp = path.with_extension(format!("json.{}", std::process::id()));
        std::fs::write(&tmp, serde_json::to_string_pretty(record)?)
            .with_context(|| format!("write {}", tmp.display()))?;
        std::fs::rename(&tmp, &path).with_context(|| format!("write {}", path.display()))
    }
}

/// Seconds since the Unix epoch.
pub fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_round_trips_and_only_interrupted_or_running_ones_are_unfinished() {
        let dir = tempfile::tempdir().unwrap();
        let state = StateDir::at(dir.path());
        assert_eq!(state.load("acme/calc#1").unwrap(), None);
        let mut record = TaskRecord {
            id: "acme/calc#1".into(),
            title: "one".into(),
            outcome: None,
            attempts: vec![],
        };
        assert!(!record.finished());
        state.save(&record).unwrap();
        assert_eq!(state.load("acme/calc#1").unwrap(), Some(record.clone()));
        record.outcome = Some(Outcome::Interrupted);
        assert!(!record.finished());
        record.outcome = Some(Outcome::Rejected);
        assert!(record.finished());
    }

    #[test]
    fn exit_codes_map_to_outcomes_and_back() {
        for o in [
            Outcome::Verified,
            Outcome::Rejected,
            Outcome::Infra,
            Outcome::Interrupted,
        ] {
            assert_eq!(Outcome::of_exit(Some(o.exit_code())), o);
        }
        assert_eq!(Outcome::of_exit(Some(2)), Outcome::Failed);
        assert_eq!(Outcome::of_exit(None), Outcome::Infra);
    }
}
