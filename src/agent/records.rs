//! Where a run's records live: outside the worktree, under the user's data directory, where no tool can name
//! them.
//!
//! `$VOUCH_DATA` (else `<user data dir>/vouch`) holds `runs/<repo-key>/<task-id>/` (the transcript, the
//! reports, the resume state, the logs of `run_tests` and `shell`, and the gate profile the run used) and
//! `workspaces/<repo-key>/<task-id>/` (the worktree). The model works in the worktree and its tools are
//! confined to it, so it can neither rewrite the records a resumed run trusts nor break the report (a
//! `.vouch/report.json/x` in the worktree is just a file there). Nothing lands in the user's checkout, so
//! their `git status` stays as it was.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::VouchError;

/// `$VOUCH_DATA`, else `<user data dir>/vouch`, else a directory under the system temp dir.
pub fn data_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("VOUCH_DATA").filter(|v| !v.is_empty()) {
        return PathBuf::from(dir);
    }
    dirs::data_dir()
        .map(|d| d.join("vouch"))
        .unwrap_or_else(|| std::env::temp_dir().join("vouch-data"))
}

/// The key of a repository: a short hash of its canonical git directory (the same key the gate's rooms and
/// caches use), so two checkouts never share records.
pub fn repo_key(repo: &Path) -> Result<String> {
    let user = crate::git::open(repo)?;
    let common = user.commondir();
    let git_dir = common
        .canonicalize()
        .unwrap_or_else(|_| common.to_path_buf());
    let mut h = Sha256::new();
    h.update(git_dir.to_string_lossy().as_bytes());
    Ok(hex::encode(&h.finalize()[..8]))
}

/// Where the agent's worktrees of `repo` go by default: `<data>/workspaces/<repo-key>/`.
pub fn workspaces(repo: &Path) -> Result<PathBuf> {
    Ok(data_dir().join("workspaces").join(repo_key(repo)?))
}

/// What a run wrote about itself at its start, read back by `--resume` and `vouch clean`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunState {
    pub task: String,
    /// The full sha of the commit the branch started from.
    pub base: String,
    pub branch: String,
    /// The worktree's directory.
    pub workspace: PathBuf,
}

/// The records of one task of one repository.
#[derive(Clone, Debug)]
pub struct Records {
    dir: PathBuf,
}

impl Records {
    /// `<data>/runs/<repo-key>/<task-id>/` (not created).
    pub fn of(repo: &Path, task: &str) -> Result<Records> {
        Ok(Records {
            dir: data_dir().join("runs").join(repo_key(repo)?).join(task),
        })
    }

    /// The records in `dir` (tests).
    pub fn at(dir: impl Into<PathBuf>) -> Records {
        Records { dir: dir.into() }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Creates the directory (and `logs/`).
    pub fn create(&self) -> Result<()> {
        std::fs::create_dir_all(self.logs())
            .with_context(|| format!("create {}", self.dir.display()))
    }

    /// Removes every record of the task.
    pub fn remove(&self) -> Result<()> {
        match std::fs::remove_dir_all(&self.dir) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(e).with_context(|| format!("remove {}", self.dir.display()))
            }
            _ => Ok(()),
        }
    }

    pub fn transcript(&self) -> PathBuf {
        self.dir.join("transcript.jsonl")
    }

    pub fn report_json(&self) -> PathBuf {
        self.dir.join("report.json")
    }

    pub fn report_md(&self) -> PathBuf {
        self.dir.join("report.md")
    }

    /// The full output of `run_tests` and `shell` calls.
    pub fn logs(&self) -> PathBuf {
        self.dir.join("logs")
    }

    /// The gate profile the run's `run_tests` used, as TOML.
    pub fn profile(&self) -> PathBuf {
        self.dir.join("gate.toml")
    }

    fn state_path(&self) -> PathBuf {
        self.dir.join("state.json")
    }

    pub fn write_state(&self, state: &RunState) -> Result<()> {
        let path = self.state_path();
        std::fs::write(&path, serde_json::to_string_pretty(state)?)
            .with_context(|| format!("write {}", path.display()))
    }

    /// The state the run wrote at its start; `None` when there is none (no run, or records removed).
    pub fn state(&self) -> Result<Option<RunState>> {
        let path = self.state_path();
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e).with_context(|| format!("read {}", path.display())),
        };
        serde_json::from_str(&text).map(Some).map_err(|e| {
            VouchError::usage(format!(
                "the run state {} is damaged ({e}); pass --fresh to start the task over",
                path.display()
            ))
            .into()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_state_is_written_and_read_back_and_missing_is_none() {
        let dir = tempfile::tempdir().unwrap();
        let r = Records::at(dir.path().join("t"));
        assert_eq!(r.state().unwrap(), None);
        r.create().unwrap();
        let s = RunState {
            task: "t".into(),
            base: "abc".into(),
            branch: "vouch/t".into(),
            workspace: PathBuf::from("/w/t"),
        };
        r.write_state(&s).unwrap();
        assert_eq!(r.state().unwrap(), Some(s));
        std::fs::write(dir.path().join("t/state.json"), "{").unwrap();
        assert!(r.state().is_err());
        r.remove().unwrap();
        assert!(!dir.path().join("t").exists());
        r.remove().unwrap();
    }
}
