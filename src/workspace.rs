//! The agent's workspace: a git worktree `<workspaces>/<task-id>/` on a new branch `vouch/<task-id>`, made
//! from the user's repository. By default the worktrees live under vouch's data directory
//! ([`crate::agent::records`]), outside the user's checkout.
//!
//! Unlike the gate's rooms, the agent's work must end up somewhere the user can see, review and push: a
//! branch. A worktree gives it one without touching the user's checkout: their working tree, index, HEAD and
//! current branch stay as they are; only the new branch, the worktree registration under `.git/worktrees/`
//! and the objects of the agent's commits are added. vouch's own records are not in the worktree at all:
//! anything the model can write there, it could rewrite, so they live beside it, out of the tools' reach.
//!
//! The commit holds what the model changed with its tools ([`Changed`]), not whatever is new in the
//! worktree: running the tests leaves build artefacts behind ([`is_artefact`]: `target/`, `__pycache__/`,
//! `node_modules/`, a `Cargo.lock` the repository does not commit), and a change that carries them fails
//! the gate as out of scope.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use git2::{BranchType, IndexAddOption, Oid, Repository, Signature, WorktreeAddOptions};

use crate::error::VouchError;
use crate::tools::Changed;

/// Directories that builds and test runs make, never part of a change.
const ARTEFACT_DIRS: [&str; 8] = [
    "target",
    "__pycache__",
    "node_modules",
    ".pytest_cache",
    ".mypy_cache",
    ".ruff_cache",
    ".venv",
    ".tox",
];

/// Whether `path` (relative, `/` separators) is a build artefact: under one of [`ARTEFACT_DIRS`], compiled
/// Python, or a lock file a build made that the repository does not track (`tracked` says).
pub fn is_artefact(path: &str, tracked: bool) -> bool {
    if tracked {
        return false;
    }
    let names: Vec<&str> = path.split('/').collect();
    let file = names.last().copied().unwrap_or_default();
    names[..names.len().saturating_sub(1)]
        .iter()
        .any(|n| ARTEFACT_DIRS.contains(n))
        || file.ends_with(".pyc")
        || file == "Cargo.lock"
}

/// A worktree made for one task.
#[derive(Debug)]
pub struct Worktree {
    /// The task id: the worktree's name and the branch's last part.
    pub id: String,
    /// The worktree's directory (absolute).
    pub dir: PathBuf,
    /// `vouch/<id>`.
    pub branch: String,
    /// The user's repository (its working directory, or the git dir when bare).
    pub repo: PathBuf,
    /// The commit the branch starts from.
    pub base: Oid,
    /// The worktree's git directory in the user's repository (`.git/worktrees/<id>`), as vouch made it: vouch
    /// opens the worktree by this, never by the worktree's `.git` file, which the code under test can rewrite
    /// (pointing it at the user's own git directory would make vouch commit there).
    pub git_dir: PathBuf,
}

/// The worktree at `dir` opened by the git directory vouch recorded for it, with `dir` as its working
/// directory: no `.git` file in the worktree is read.
pub fn open_worktree(git_dir: &Path, dir: &Path) -> Result<Repository> {
    let repo = Repository::open(git_dir)
        .with_context(|| format!("open the worktree's git directory {}", git_dir.display()))?;
    repo.set_workdir(dir, false)
        .with_context(|| format!("use {} as the worktree", dir.display()))?;
    Ok(repo)
}

/// The git directory of worktree `id` of `user`, checked to be one (a `gitdir` file in it).
fn worktree_git_dir(user: &Repository, id: &str) -> Result<PathBuf> {
    let dir = user.commondir().join("worktrees").join(id);
    if !dir.join("gitdir").is_file() {
        anyhow::bail!("worktree `{id}` has no git directory at {}", dir.display());
    }
    Ok(dir)
}

impl Worktree {
    /// Checks that `workspaces/<id>` and branch `vouch/<id>` are free for a new run (or `fresh`, which
    /// [`Worktree::create`] removes), without changing anything.
    pub fn check_free(repo: &Path, workspaces: &Path, id: &str, fresh: bool) -> Result<()> {
        let user = crate::git::open(repo)?;
        let branch = format!("vouch/{id}");
        let dir = std::path::absolute(workspaces.join(id))
            .with_context(|| format!("locate {}", workspaces.display()))?;
        let exists = dir.exists()
            || user.find_worktree(id).is_ok()
            || user.find_branch(&branch, BranchType::Local).is_ok();
        if exists && !fresh {
            return Err(VouchError::usage_hint(
                format!(
                    "the workspace for task `{id}` already exists ({} or branch {branch})",
                    dir.display()
                ),
                "pass --resume to continue the run there, or --fresh to remove the worktree and its \
                 branch and start over",
            )
            .into());
        }
        Ok(())
    }

    /// Makes `workspaces/<id>` a worktree of `repo` on a new branch `vouch/<id>` at `base`. An existing
    /// workspace or branch is an error unless `fresh`, which removes both first.
    pub fn create(
        repo: &Path,
        base: &str,
        workspaces: &Path,
        id: &str,
        fresh: bool,
    ) -> Result<Worktree> {
        let user = crate::git::open(repo)?;
        let base_oid = crate::git::resolve(&user, base)?;
        let branch = format!("vouch/{id}");
        std::fs::create_dir_all(workspaces)
            .with_context(|| format!("create {}", workspaces.display()))?;
        let _lock = lock_worktrees(repo)?;
        let dir = std::path::absolute(workspaces.join(id))
            .with_context(|| format!("locate {}", workspaces.display()))?;
        let exists = dir.exists()
            || user.find_worktree(id).is_ok()
            || user.find_branch(&branch, BranchType::Local).is_ok();
        if exists {
            Worktree::check_free(repo, workspaces, id, fresh)?;
            remove(&user, &dir, id, &branch)?;
        }
        let base_commit = user.find_commit(base_oid).context("find the base commit")?;
        let reference = user
            .branch(&branch, &base_commit, false)
            .with_context(|| format!("create branch {branch}"))?
            .into_reference();
        let mut opts = WorktreeAddOptions::new();
        opts.reference(Some(&reference));
        user.worktree(id, &dir, Some(&opts))
            .with_context(|| format!("add worktree {}", dir.display()))?;
        let repo_dir = user.workdir().unwrap_or_else(|| user.path()).to_path_buf();
        Ok(Worktree {
            id: id.to_string(),
            dir,
            branch,
            repo: repo_dir,
            base: base_oid,
            git_dir: worktree_git_dir(&user, id)?,
        })
    }

    /// Opens the existing workspace `workspaces/<id>` of an earlier run (for `--resume`). `base` is the
    /// base that run recorded at its start (in vouch's records, not the worktree); it must still be the
    /// branch's tip or an ancestor of it, else the branch was moved under the run and nothing it holds can
    /// be trusted as that run's work.
    pub fn open(repo: &Path, workspaces: &Path, id: &str, base: &str) -> Result<Worktree> {
        let user = crate::git::open(repo)?;
        let branch = format!("vouch/{id}");
        let dir = std::path::absolute(workspaces.join(id))
            .with_context(|| format!("locate {}", workspaces.display()))?;
        let tip = user
            .find_branch(&branch, BranchType::Local)
            .ok()
            .and_then(|b| b.get().peel_to_commit().ok());
        let (true, Some(tip)) = (dir.join(".git").exists(), tip) else {
            return Err(VouchError::usage_hint(
                format!(
                    "there is no workspace for task `{id}` to resume ({} on branch {branch})",
                    dir.display()
                ),
                "run without --resume to start the task",
            )
            .into());
        };
        let base_oid = Oid::from_str(base)
            .ok()
            .filter(|oid| user.find_commit(*oid).is_ok())
            .ok_or_else(|| {
                VouchError::usage_hint(
                    format!("the recorded base `{base}` of task `{id}` is not a commit of the repository"),
                    "pass --fresh to start the task over",
                )
            })?;
        let descends = tip.id() == base_oid
            || user
                .graph_descendant_of(tip.id(), base_oid)
                .context("compare the branch with its base")?;
        if !descends {
            return Err(VouchError::usage_hint(
                format!(
                    "branch {branch} does not descend from the base {} the run recorded; it was moved, so it \
                     cannot be resumed",
                    &base[..base.len().min(12)]
                ),
                "pass --fresh to start the task over",
            )
            .into());
        }
        let repo_dir = user.workdir().unwrap_or_else(|| user.path()).to_path_buf();
        Ok(Worktree {
            id: id.to_string(),
            dir,
            branch,
            repo: repo_dir,
            base: base_oid,
            git_dir: worktree_git_dir(&user, id)?,
        })
    }

    /// Commits what the tools `changed` as the one commit of the branch on top of base (replacing an
    /// earlier one, so a repaired change is still one commit): the recorded paths, or, when files may have
    /// changed beyond them, every change in the worktree; never a build artefact ([`is_artefact`]). Returns
    /// `None` when nothing differs from base.
    pub fn commit(
        &self,
        message: &str,
        author: &Signature<'_>,
        changed: &Changed,
    ) -> Result<Option<Oid>> {
        let wt = open_worktree(&self.git_dir, &self.dir)?;
        let base = wt.find_commit(self.base).context("find the base commit")?;
        let base_tree = base.tree().context("read the base tree")?;
        let tracked = |p: &str| base_tree.get_path(Path::new(p)).is_ok();
        let mut index = wt.index().context("read the worktree's index")?;
        if changed.unknown {
            let mut skip = |path: &Path, _: &[u8]| -> i32 {
                let rel = path.to_string_lossy().replace('\\', "/");
                i32::from(is_artefact(rel.trim_end_matches('/'), tracked(&rel)))
            };
            index
                .add_all(["*"], IndexAddOption::DEFAULT, Some(&mut skip))
                .context("stage the worktree's files")?;
            index
                .update_all(["*"], None)
                .context("stage the worktree's deletions")?;
        }
        for rel in &changed.paths {
            if is_artefact(rel, tracked(rel)) {
                continue;
            }
            let path = Path::new(rel);
            if self.dir.join(path).is_file() {
                index
                    .add_path(path)
                    .with_context(|| format!("stage {rel}"))?;
            } else if index.get_path(path, 0).is_some() {
                index
                    .remove_path(path)
                    .with_context(|| format!("stage the removal of {rel}"))?;
            }
        }
        index.write().context("write the worktree's index")?;
        let tree_id = index.write_tree().context("write the tree")?;
        if tree_id == base.tree_id() {
            return Ok(None);
        }
        let tree = wt.find_tree(tree_id).context("find the tree")?;
        let oid = wt
            .commit(None, author, author, message, &tree, &[&base])
            .context("commit the change")?;
        wt.reference(
            &format!("refs/heads/{}", self.branch),
            oid,
            true,
            "vouch: the agent's change",
        )
        .with_context(|| format!("move {} to the new commit", self.branch))?;
        Ok(Some(oid))
    }
}

/// The commit signature: `Name <email>`, else the repository's configured user, else vouch's own.
pub fn signature(repo: &Path, author: Option<&str>) -> Result<Signature<'static>> {
    if let Some(text) = author {
        let (name, email) = text
            .split_once('<')
            .and_then(|(n, rest)| Some((n.trim(), rest.strip_suffix('>')?.trim())))
            .filter(|(n, e)| !n.is_empty() && e.contains('@'))
            .ok_or_else(|| {
                VouchError::usage(format!(
                    "--author must look like `Name <email>`, got `{text}`"
                ))
            })?;
        return Signature::now(name, email).context("make the author signature");
    }
    if let Ok(sig) = crate::git::open(repo).and_then(|r| Ok(r.signature()?)) {
        return Ok(sig.to_owned());
    }
    Signature::now("vouch", "vouch@localhost").context("make the author signature")
}

/// Holds `<data>/locks/worktrees-<repo-key>.lock` until dropped. libgit2's worktree add fails when another
/// one runs in the same repository at the same moment ("reference is already checked out"), so every vouch
/// process making a worktree of this repository (a backlog's children, two backlogs, a run beside them)
/// takes this lock first. It lives beside vouch's records, never in the user's repository.
fn lock_worktrees(repo: &Path) -> Result<std::fs::File> {
    let dir = crate::agent::records::data_dir().join("locks");
    std::fs::create_dir_all(&dir).with_context(|| format!("create {}", dir.display()))?;
    let path = dir.join(format!(
        "worktrees-{}.lock",
        crate::agent::records::repo_key(repo)?
    ));
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .with_context(|| format!("open the lock {}", path.display()))?;
    file.lock()
        .with_context(|| format!("lock {}", path.display()))?;
    Ok(file)
}

/// Removes the worktree `id` (registration and directory) and the branch.
pub fn remove(user: &Repository, dir: &Path, id: &str, branch: &str) -> Result<()> {
    if dir.exists() {
        std::fs::remove_dir_all(dir).with_context(|| format!("remove {}", dir.display()))?;
    }
    if let Ok(wt) = user.find_worktree(id) {
        let mut opts = git2::WorktreePruneOptions::new();
        opts.valid(true).working_tree(true).locked(true);
        wt.prune(Some(&mut opts))
            .with_context(|| format!("prune worktree {id}"))?;
    }
    if let Ok(mut b) = user.find_branch(branch, BranchType::Local) {
        b.delete()
            .with_context(|| format!("delete branch {branch}"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn build_artefacts_are_told_apart_from_sources() {
        for p in [
            "target/debug/x",
            "sub/target/x",
            "pkg/__pycache__/m.cpython-312.pyc",
            "node_modules/a/index.js",
            "m.pyc",
            "Cargo.lock",
            "crates/a/Cargo.lock",
        ] {
            assert!(is_artefact(p, false), "{p}");
        }
        for p in [
            "src/lib.rs",
            "target.rs",
            "docs/targets/x.md",
            "test_calc.py",
        ] {
            assert!(!is_artefact(p, false), "{p}");
        }
        assert!(
            !is_artefact("Cargo.lock", true),
            "a committed lock file is a source"
        );
    }

    /// Worktrees made at the same moment in one repository, by separate openers as separate processes
    /// would: each one is made (libgit2 alone fails some with "reference is already checked out").
    #[test]
    fn worktrees_made_at_once_in_one_repository_are_all_made() {
        let tmp = tempfile::tempdir().unwrap();
        let repo_dir = tmp.path().join("repo");
        let repo = Repository::init(&repo_dir).unwrap();
        std::fs::write(repo_dir.join("a.txt"), "a\n").unwrap();
        let mut index = repo.index().unwrap();
        index.add_path(Path::new("a.txt")).unwrap();
        let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
        let sig = Signature::now("t", "t@example.com").unwrap();
        repo.commit(Some("HEAD"), &sig, &sig, "init", &tree, &[])
            .unwrap();
        let workspaces = tmp.path().join("workspaces");
        for round in 0..4 {
            let handles: Vec<_> = (0..6)
                .map(|i| {
                    let (repo_dir, workspaces) = (repo_dir.clone(), workspaces.clone());
                    std::thread::spawn(move || {
                        Worktree::create(
                            &repo_dir,
                            "HEAD",
                            &workspaces,
                            &format!("t{round}-{i}"),
                            false,
                        )
                        .map(|_| ())
                        .map_err(|e| format!("{e:#}"))
                    })
                })
                .collect();
            let failed: Vec<String> = handles
                .into_iter()
                .filter_map(|h| h.join().unwrap().err())
                .collect();
            assert_eq!(failed, Vec::<String>::new(), "round {round}");
        }
    }
}
