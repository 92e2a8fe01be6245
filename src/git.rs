//! Read-only questions to the user's repository (git2): resolving revisions, the default branch, what changed.
//!
//! Nothing here writes to the repository: no refs, no index, no config, no worktree registrations.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use git2::{Delta, DiffOptions, Oid, Repository};

use crate::error::VouchError;

/// Opens the repository containing `dir`.
pub fn open(dir: &Path) -> Result<Repository> {
    Repository::discover(dir).map_err(|e| {
        anyhow::Error::new(VouchError::usage_hint(
            format!(
                "{} is not inside a git repository ({})",
                dir.display(),
                e.message()
            ),
            "pass --repo DIR pointing into a git checkout",
        ))
    })
}

/// The directory holding the repository's objects (shared by all its worktrees).
pub fn objects_dir(repo: &Repository) -> PathBuf {
    repo.commondir().join("objects")
}

/// Resolves any revision expression to a commit.
pub fn resolve(repo: &Repository, rev: &str) -> Result<Oid> {
    let obj = repo.revparse_single(rev).map_err(|e| {
        anyhow::Error::new(VouchError::infra_hint(
            format!("cannot resolve revision `{rev}`: {}", e.message()),
            "name a branch, tag, sha or expression like HEAD~1 that exists in the repository",
        ))
    })?;
    let commit = obj.peel_to_commit().map_err(|_| {
        anyhow::Error::new(VouchError::infra(format!(
            "revision `{rev}` is not a commit"
        )))
    })?;
    Ok(commit.id())
}

/// The repository's default branch: `origin/HEAD` if set, else the first of main, master, trunk, develop.
pub fn default_branch(repo: &Repository) -> Option<String> {
    if let Ok(r) = repo.find_reference("refs/remotes/origin/HEAD") {
        if let Some(target) = r.symbolic_target() {
            return Some(target.trim_start_matches("refs/remotes/").to_owned());
        }
    }
    ["main", "master", "trunk", "develop"]
        .into_iter()
        .find(|name| repo.find_branch(name, git2::BranchType::Local).is_ok())
        .map(str::to_owned)
        .or_else(|| {
            ["origin/main", "origin/master"]
                .into_iter()
                .find(|name| repo.find_branch(name, git2::BranchType::Remote).is_ok())
                .map(str::to_owned)
        })
}

/// The base for `head` when none is given: the merge-base of head with the default branch.
pub fn default_base(repo: &Repository, head: Oid) -> Result<(Oid, String)> {
    let branch = default_branch(repo).ok_or_else(|| {
        VouchError::usage_hint(
            "cannot tell the default branch (no origin/HEAD, main, master, trunk or develop)",
            "pass --base REV",
        )
    })?;
    let tip = resolve(repo, &branch)?;
    let base = repo.merge_base(head, tip).map_err(|_| {
        VouchError::infra_hint(
            format!("head has no common history with {branch}"),
            "pass --base REV",
        )
    })?;
    Ok((base, branch))
}

/// The tree of a commit.
pub fn tree_id(repo: &Repository, commit: Oid) -> Result<Oid> {
    Ok(repo.find_commit(commit)?.tree_id())
}

/// How a path changed between base and head.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChangeKind {
    Added,
    Modified,
    Deleted,
    Renamed,
}

/// One changed path. For a rename, `old_path` is where it came from.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Change {
    pub path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old_path: Option<String>,
    pub kind: ChangeKind,
}

/// The paths that differ between two commits' trees, renames detected.
pub fn changes(repo: &Repository, base: Oid, head: Oid) -> Result<Vec<Change>> {
    let base_tree = repo.find_commit(base)?.tree()?;
    let head_tree = repo.find_commit(head)?.tree()?;
    let mut opts = DiffOptions::new();
    opts.include_typechange(true);
    let mut diff = repo
        .diff_tree_to_tree(Some(&base_tree), Some(&head_tree), Some(&mut opts))
        .context("diff base and head")?;
    let mut find = git2::DiffFindOptions::new();
    find.renames(true);
    diff.find_similar(Some(&mut find))?;
    let mut out = Vec::new();
    for delta in diff.deltas() {
        let new = delta
            .new_file()
            .path()
            .map(|p| p.to_string_lossy().into_owned());
        let old = delta
            .old_file()
            .path()
            .map(|p| p.to_string_lossy().into_owned());
        let (path, old_path, kind) = match delta.status() {
            Delta::Added | Delta::Copied => (new, None, ChangeKind::Added),
            Delta::Deleted => (old, None, ChangeKind::Deleted),
            Delta::Renamed => (new, old, ChangeKind::Renamed),
            _ => (new, None, ChangeKind::Modified),
        };
        if let Some(path) = path {
            out.push(Change {
                path,
                old_path,
                kind,
            });
        }
    }
    Ok(out)
}

/// The text of a file in a commit, if it exists and is UTF-8.
pub fn file_text(repo: &Repository, commit: Oid, path: &str) -> Option<String> {
    let tree = repo.find_commit(commit).ok()?.tree().ok()?;
    let entry = tree.get_path(Path::new(path)).ok()?;
    let blob = repo.find_blob(entry.id()).ok()?;
    String::from_utf8(blob.content().to_vec()).ok()
}

/// All file paths in a commit's tree.
pub fn tree_paths(repo: &Repository, commit: Oid) -> Result<Vec<String>> {
    let tree = repo.find_commit(commit)?.tree()?;
    let mut out = Vec::new();
    tree.walk(git2::TreeWalkMode::PreOrder, |dir, entry| {
        if entry.kind() == Some(git2::ObjectType::Blob) {
            out.push(format!("{dir}{}", entry.name().unwrap_or_default()));
        }
        git2::TreeWalkResult::Ok
    })?;
    Ok(out)
}

/// The value of a trailer (`Key: value` in the last paragraph) of a commit message.
pub fn trailer(message: &str, key: &str) -> Option<String> {
    let last = message.trim_end().rsplit("\n\n").next()?;
    last.lines().rev().find_map(|line| {
        let (k, v) = line.split_once(':')?;
        k.trim()
            .eq_ignore_ascii_case(key)
            .then(|| v.trim().to_owned())
    })
}

/// The commit message of a commit.
pub fn message(repo: &Repository, commit: Oid) -> Result<String> {
    Ok(repo
        .find_commit(commit)?
        .message()
        .unwrap_or_default()
        .to_owned())
}

/// Opens a repository from its objects directory (`<git dir>/objects`), read-only use.
pub fn open_objects(objects: &Path) -> Result<Repository> {
    let git_dir = objects.parent().unwrap_or(objects);
    Repository::open(git_dir).with_context(|| format!("open repository {}", git_dir.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trailer_is_read_from_the_last_paragraph() {
        let msg = "fix: thing\n\nbody mentions Agent-Verdict: NO-GO here\n\nAgent-Verdict: GO\nSigned-off-by: a <a@b>\n";
        assert_eq!(trailer(msg, "agent-verdict").as_deref(), Some("GO"));
        assert_eq!(trailer("fix\n\nno trailers here", "Agent-Verdict"), None);
    }
}
