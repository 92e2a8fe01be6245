//! The project's formatter applied to the run's files before each commit.
//!
//! Layout is mechanical, and small models get it wrong: on the quick start's task the 1.5B's fix passed
//! every test and bit, the gate failed it on `cargo fmt --check`, and the model sent the same code fourteen
//! times. A format step of the profile may name the command that formats in place (`fix`, such as `cargo
//! fmt --all`); before committing, the run applies each that applies to the repository, confined like the
//! tests, and keeps what it did to the files the run changed. Any other file it touched is put back as it
//! was: the commit holds the run's change, formatted, and nothing else. The gate still checks the format
//! independently, in its clean room.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use git2::{Repository, Status, StatusOptions};
use tokio_util::sync::CancellationToken;

use crate::gate::profile::{Profile, Step, StepKind};
use crate::gate::steps::{not_applicable, StepEnv};
use crate::process;
use crate::sandbox::Sandbox;

/// The format steps of a profile that can format in place, and where they run.
pub struct Formatter {
    steps: Vec<Step>,
    env: StepEnv,
    /// The worktree's git directory as vouch recorded it ([`crate::workspace::Worktree::git_dir`]).
    git_dir: PathBuf,
}

/// What one application did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Formatted {
    /// The run's files it changed.
    pub files: Vec<String>,
    /// The steps that ran, by name.
    pub ran: Vec<String>,
    /// Other files it changed, put back as they were.
    pub restored: Vec<String>,
}

impl Formatter {
    /// The format steps of `profile` with a `fix` command that apply to `dir`; None when there is none.
    /// `sandbox`, `logs`, `cache` and `readable` as for the tests; `git_dir` the worktree's recorded git
    /// directory.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        profile: &Profile,
        dir: &Path,
        git_dir: &Path,
        logs: PathBuf,
        cache: PathBuf,
        sandbox: Sandbox,
        readable: Vec<PathBuf>,
    ) -> Option<Formatter> {
        let steps: Vec<Step> = profile
            .steps
            .iter()
            .filter(|s| s.kind == StepKind::Format && s.fix.as_ref().is_some_and(|f| !f.is_empty()))
            .filter(|s| not_applicable(s, dir).is_none())
            .cloned()
            .collect();
        if steps.is_empty() {
            return None;
        }
        Some(Formatter {
            steps,
            env: StepEnv::for_worktree(profile, dir, logs, cache, sandbox, readable),
            git_dir: git_dir.to_path_buf(),
        })
    }

    /// Formats the worktree, keeps the changes to `paths` (the run's files) and puts back every other file
    /// the formatters touched. A formatter that is not installed, fails or times out is skipped: the gate's
    /// format step says what is wrong then.
    pub async fn apply(
        &self,
        paths: &BTreeSet<String>,
        cancel: &CancellationToken,
    ) -> Result<Formatted> {
        let dir = &self.env.room;
        let before = dirty(&self.git_dir, dir)?;
        let mut ran = Vec::new();
        for step in &self.steps {
            let Some(argv) = step.fix.as_ref() else {
                continue;
            };
            if which::which(&argv[0]).is_err() {
                continue;
            }
            let junit = self.env.junit_path(&step.name, "-fix");
            let argv = self.env.argv_for(argv, &junit);
            let spec = self.env.spec(
                step,
                argv,
                &junit,
                &format!("format-{}", step.name),
                step.timeout(),
                true,
            );
            let outcome = process::run_clean_env(&spec, cancel).await?;
            if outcome.cancelled {
                anyhow::bail!("cancelled");
            }
            if outcome.success() {
                ran.push(step.name.clone());
            }
        }
        let after = dirty(&self.git_dir, dir)?;
        let mut done = Formatted {
            ran,
            ..Formatted::default()
        };
        let repo = crate::workspace::open_worktree(&self.git_dir, dir)?;
        for (rel, now) in &after {
            let was = before.get(rel);
            if was == Some(now) {
                continue;
            }
            if paths.contains(rel) {
                done.files.push(rel.clone());
                continue;
            }
            // Not the run's file: back as it was, dirty or clean.
            let path = dir.join(rel);
            match was {
                Some(Some(text)) => std::fs::write(&path, text)?,
                Some(None) => {
                    let _ = std::fs::remove_file(&path);
                }
                None => match committed(&repo, rel) {
                    Some(text) => std::fs::write(&path, text)?,
                    None => {
                        let _ = std::fs::remove_file(&path);
                    }
                },
            }
            done.restored.push(rel.clone());
        }
        // A file of another's that a formatter made clean again: back to its uncommitted content too.
        for (rel, was) in before.iter().filter(|(rel, _)| !after.contains_key(*rel)) {
            if paths.contains(rel) {
                done.files.push(rel.clone());
            } else if let Some(text) = was {
                std::fs::write(dir.join(rel), text)?;
                done.restored.push(rel.clone());
            }
        }
        done.files.sort();
        done.restored.sort();
        Ok(done)
    }
}

/// The files `git status` lists in the worktree (untracked included, ignored not), with their content
/// (None when deleted).
fn dirty(git_dir: &Path, dir: &Path) -> Result<BTreeMap<String, Option<Vec<u8>>>> {
    let repo = crate::workspace::open_worktree(git_dir, dir)?;
    let mut opts = StatusOptions::new();
    opts.include_untracked(true).recurse_untracked_dirs(true);
    let statuses = repo
        .statuses(Some(&mut opts))
        .context("read the worktree's status")?;
    let mut out = BTreeMap::new();
    for entry in statuses.iter() {
        if entry.status() == Status::CURRENT || entry.status().contains(Status::IGNORED) {
            continue;
        }
        let Some(rel) = entry.path() else {
            continue;
        };
        out.insert(rel.to_string(), std::fs::read(dir.join(rel)).ok());
    }
    Ok(out)
}

/// The file as the worktree's HEAD has it.
fn committed(repo: &Repository, rel: &str) -> Option<Vec<u8>> {
    let tree = repo.head().ok()?.peel_to_tree().ok()?;
    let entry = tree.get_path(Path::new(rel)).ok()?;
    let blob = repo.find_blob(entry.id()).ok()?;
    Some(blob.content().to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::SandboxMode;

    fn git(dir: &Path, args: &[&str]) {
        let out = std::process::Command::new("git")
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "-c",
                "commit.gpgsign=false",
            ])
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
    }

    #[tokio::test]
    async fn cargo_fmt_formats_the_runs_files_and_puts_every_other_file_back() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("wt");
        std::fs::create_dir_all(dir.join("src")).unwrap();
        let other = "pub fn   twice(x:i64)->i64{x*2}\n";
        for (rel, text) in [
            (
                "Cargo.toml",
                "[package]\nname = \"m\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
            ),
            (".gitignore", "/target\n"),
            (
                "src/lib.rs",
                "pub mod notes;\npub mod other;\n\npub fn abs(x: i64) -> i64 {\n    x\n}\n",
            ),
            ("src/notes.rs", "pub fn n() {}\n"),
            // Unformatted at base, and not the run's: cargo fmt --all touches it, the run does not keep it.
            ("src/other.rs", other),
        ] {
            std::fs::write(dir.join(rel), text).unwrap();
        }
        git(&dir, &["init", "-q"]);
        git(&dir, &["add", "-A"]);
        git(&dir, &["commit", "-qm", "base"]);
        // The run's fix, on one line; and a file changed but not by the run's tools (a test run's output,
        // say), which must stay as it is.
        std::fs::write(
            dir.join("src/lib.rs"),
            "pub mod notes;\npub mod other;\n\npub fn abs(x: i64) -> i64 { if x < 0 { -x } else { x } }\n",
        )
        .unwrap();
        let notes = "pub fn   n(){}\n";
        std::fs::write(dir.join("src/notes.rs"), notes).unwrap();
        let profile = Profile::from_arg("rust").unwrap();
        let formatter = Formatter::new(
            &profile,
            &dir,
            &dir.join(".git"),
            tmp.path().join("logs"),
            tmp.path().join("cache"),
            Sandbox::new(SandboxMode::Off).unwrap(),
            Vec::new(),
        )
        .expect("the rust preset formats with cargo fmt");
        let paths: BTreeSet<String> = ["src/lib.rs".to_string()].into();
        let done = formatter
            .apply(&paths, &CancellationToken::new())
            .await
            .unwrap();
        assert_eq!(done.files, ["src/lib.rs"]);
        assert_eq!(done.ran, ["fmt"]);
        assert_eq!(done.restored, ["src/notes.rs", "src/other.rs"]);
        let lib = std::fs::read_to_string(dir.join("src/lib.rs")).unwrap();
        assert!(
            lib.contains("pub fn abs(x: i64) -> i64 {\n    if x < 0 {\n        -x\n    } else {\n        x\n    }\n}\n"),
            "{lib}"
        );
        assert_eq!(
            std::fs::read_to_string(dir.join("src/other.rs")).unwrap(),
            other
        );
        assert_eq!(
            std::fs::read_to_string(dir.join("src/notes.rs")).unwrap(),
            notes
        );
    }
}
