//! Claims: a task is claimed before it starts, so two runners on the same backlog never take the same task.
//!
//! A claim is a lock file made with `create_new` (atomic on one filesystem) under the backlog's state dir,
//! holding the claimer's pid, host and time. A claim whose pid is dead on this host is stale (a runner that
//! crashed) and may be taken; a live one, or one from another host, is respected.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use super::shard::stable_hash;

/// What a lock file says about its claimer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claimer {
    pub pid: u32,
    pub host: String,
    /// Seconds since the Unix epoch.
    pub time: u64,
}

impl Claimer {
    /// This process on this host, now.
    pub fn me() -> Claimer {
        Claimer {
            pid: std::process::id(),
            host: hostname(),
            time: super::state::now_secs(),
        }
    }

    /// Whether the claimer is a process of this host that is gone.
    fn is_stale(&self) -> bool {
        self.host == hostname() && !pid_alive(self.pid)
    }
}

/// How trying to claim a task ended.
#[derive(Debug)]
pub enum Claimed {
    /// The task is ours until the guard is released (or dropped).
    Taken(Claim),
    /// Ours, after removing the stale claim of a dead runner.
    TakenStale(Claim, Claimer),
    /// Another live runner holds it.
    Held(Claimer),
}

/// A held claim; releasing (or dropping) it removes the lock file.
#[derive(Debug)]
pub struct Claim {
    path: PathBuf,
    released: bool,
}

impl Claim {
    pub fn release(mut self) -> Result<()> {
        self.released = true;
        match std::fs::remove_file(&self.path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(e).with_context(|| format!("release the claim {}", self.path.display()))
            }
            _ => Ok(()),
        }
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        if !self.released {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// The lock file of task `id` under `dir`: a readable part of the id and its hash (ids hold `/` and `#`).
pub fn lock_path(dir: &Path, id: &str) -> PathBuf {
    let readable: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(48)
        .collect();
    dir.join(format!("{readable}-{:08x}.lock", stable_hash(id) >> 32))
}

/// Claims task `id` under `dir` (created if need be).
pub fn claim(dir: &Path, id: &str) -> Result<Claimed> {
    std::fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
    let path = lock_path(dir, id);
    let mut stale = None;
    // Twice at most: once, and once more after removing a stale claim.
    for _ in 0..2 {
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(mut file) => {
                let text = serde_json::to_string(&Claimer::me())?;
                file.write_all(text.as_bytes())
                    .with_context(|| format!("write the claim {}", path.display()))?;
                let claim = Claim {
                    path,
                    released: false,
                };
                return Ok(match stale {
                    Some(old) => Claimed::TakenStale(claim, old),
                    None => Claimed::Taken(claim),
                });
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                let holder = read(&path);
                match holder {
                    Some(h) if h.is_stale() => {
                        std::fs::remove_file(&path)
                            .or_else(|e| {
                                if e.kind() == std::io::ErrorKind::NotFound {
                                    Ok(())
                                } else {
                                    Err(e)
                                }
                            })
                            .with_context(|| {
                                format!("remove the stale claim {}", path.display())
                            })?;
                        stale = Some(h);
                    }
                    // A claim being written right now reads as empty: it is held.
                    Some(h) => return Ok(Claimed::Held(h)),
                    None => {
                        return Ok(Claimed::Held(Claimer {
                            pid: 0,
                            host: String::new(),
                            time: 0,
                        }))
                    }
                }
            }
            Err(e) => return Err(e).with_context(|| format!("claim {}", path.display())),
        }
    }
    let holder = read(&path).unwrap_or(Claimer {
        pid: 0,
        host: String::new(),
        time: 0,
    });
    Ok(Claimed::Held(holder))
}

fn read(path: &Path) -> Option<Claimer> {
    let text = std::fs::read_to_string(path).ok()?;
    serde_json::from_str(&text).ok()
}

/// This machine's host name (`localhost` when it cannot be read).
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".to_string())
}

/// Whether process `pid` of this host exists and is not a zombie (Linux's /proc says).
fn pid_alive(pid: u32) -> bool {
    if pid == 0 {
        return false;
    }
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // `pid (comm) S ...`: the state follows the last `)`.
        Ok(stat) => stat
            .rsplit_once(')')
            .map(|(_, rest)| rest.trim_start())
            .is_some_and(|rest| !rest.starts_with('Z') && !rest.starts_with('X')),
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claim_is_held_until_released_then_free_again() {
        let dir = tempfile::tempdir().unwrap();
        let Claimed::Taken(claim) = claim(dir.path(), "acme/calc#3").unwrap() else {
            panic!("not taken");
        };
        match super::claim(dir.path(), "acme/calc#3").unwrap() {
            Claimed::Held(h) => assert_eq!(h.pid, std::process::id()),
            other => panic!("not held: {other:?}"),
        }
        claim.release().unwrap();
        assert!(matches!(
            super::claim(dir.path(), "acme/calc#3").unwrap(),
            Claimed::Taken(_)
        ));
    }

    #[test]
    fn the_claim_of_a_dead_process_on_this_host_is_stale_and_taken() {
        let dir = tempfile::tempdir().unwrap();
        // A child that has exited: its pid is dead (and not reused this soon).
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let old = Claimer {
            pid: dead,
            host: hostname(),
            time: 1,
        };
        let path = lock_path(dir.path(), "t");
        std::fs::write(&path, serde_json::to_string(&old).unwrap()).unwrap();
        match claim(dir.path(), "t").unwrap() {
            Claimed::TakenStale(_, was) => assert_eq!(was, old),
            other => panic!("not taken as stale: {other:?}"),
        }
        // Another host's claim is never judged from here.
        let far = Claimer {
            host: "elsewhere".into(),
            ..old
        };
        std::fs::write(&path, serde_json::to_string(&far).unwrap()).unwrap();
        assert!(matches!(claim(dir.path(), "t").unwrap(), Claimed::Held(_)));
    }
}
