//! `vouch clean`: removes the agent's workspaces (the worktree registration, its directory and the branch
//! `vouch/<task-id>`), but never work that exists nowhere else unless `--force`: a branch with commits that
//! neither the default branch nor the user's HEAD contains, or a worktree with uncommitted changes. The
//! run's records (under vouch's data directory) go with the workspace they describe. Without task ids it also
//! removes the gate's shared Python venvs that are not the latest one of their repository.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use git2::{BranchType, Oid, Repository, StatusOptions};

use crate::agent::records::{self, Records};
use crate::cli::CleanArgs;
use crate::error::{VouchError, EXIT_PASS};

use super::output;

/// What is in the way of removing a workspace.
enum Unsaved {
    /// Commits on the branch that the default branch and HEAD do not contain.
    Commits { count: usize, against: String },
    /// Files changed in the worktree but not committed.
    Changes { count: usize },
}

pub fn run(args: CleanArgs) -> Result<i32> {
    let dir = args.repo.clone().unwrap_or_else(|| PathBuf::from("."));
    let user = crate::git::open(&dir)?;
    // A reader that goes away early ends the listing, not the cleaning.
    let mut out = output::stdout();
    let ids = if args.ids.is_empty() {
        discover(&user)?
    } else {
        args.ids.clone()
    };
    let mut missing = Vec::new();
    let (mut removed, mut kept) = (0, 0);
    for id in &ids {
        let branch = format!("vouch/{id}");
        let tip = user
            .find_branch(&branch, BranchType::Local)
            .ok()
            .and_then(|b| b.get().target());
        let registered = user.find_worktree(id).ok().map(|w| w.path().to_path_buf());
        let records = Records::of(&dir, id)?;
        let dir = match &registered {
            Some(p) => std::path::absolute(p).unwrap_or_else(|_| p.clone()),
            None => records::workspaces(&dir)?.join(id),
        };
        if tip.is_none() && registered.is_none() {
            missing.push(id.clone());
            continue;
        }
        let unsaved = unsaved(&user, &dir, &records, tip)?;
        if !unsaved.is_empty() && !args.force {
            let why: Vec<String> = unsaved
                .iter()
                .map(|u| match u {
                    Unsaved::Commits { count, against } => format!(
                        "branch {branch} has {count} commit{} not in {against}",
                        plural(*count)
                    ),
                    Unsaved::Changes { count } => format!(
                        "{count} uncommitted change{} in {}",
                        plural(*count),
                        dir.display()
                    ),
                })
                .collect();
            out.line(&format!(
                "  kept     {id}: {} (merge it, or pass --force to remove it anyway)",
                why.join("; ")
            ))?;
            kept += 1;
            continue;
        }
        crate::workspace::remove(&user, &dir, id, &branch)?;
        let had_records = records.dir().exists();
        records.remove()?;
        out.line(&format!(
            "  removed  {id}: {}branch {branch}{}{}",
            if registered.is_some() {
                format!("worktree {}, ", dir.display())
            } else {
                String::new()
            },
            if had_records {
                format!(", records {}", records.dir().display())
            } else {
                String::new()
            },
            if unsaved.is_empty() {
                ""
            } else {
                " (forced: its unmerged work is gone)"
            }
        ))?;
        removed += 1;
    }
    if args.ids.is_empty() {
        // Shared Python venvs of dependency sets no longer in use (see `gate::pyenv`).
        let rooms = crate::gate::default_cache_dir().join("rooms");
        for env in crate::gate::pyenv::stale_envs(&rooms) {
            std::fs::remove_dir_all(&env)
                .with_context(|| format!("remove python env {}", env.display()))?;
            out.line(&format!("  removed  python env {}", env.display()))?;
            removed += 1;
        }
    }
    out.line(&format!("vouch clean: {removed} removed, {kept} kept"))?;
    out.finish()?;
    if !missing.is_empty() {
        return Err(VouchError::usage_hint(
            format!(
                "no workspace or branch vouch/<id> for {}",
                missing
                    .iter()
                    .map(|m| format!("`{m}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            "`vouch clean` without task ids removes every finished workspace",
        )
        .into());
    }
    Ok(EXIT_PASS)
}

/// Every task with a `vouch/*` branch or a worktree of that name, sorted.
fn discover(user: &Repository) -> Result<Vec<String>> {
    let mut ids = Vec::new();
    for b in user
        .branches(Some(BranchType::Local))
        .context("list branches")?
    {
        let (b, _) = b.context("read a branch")?;
        if let Some(id) = b
            .name()
            .ok()
            .flatten()
            .and_then(|n| n.strip_prefix("vouch/"))
        {
            ids.push(id.to_string());
        }
    }
    let worktrees = user.worktrees().context("list worktrees")?;
    for name in worktrees.iter().flatten() {
        if !ids.iter().any(|i| i == name)
            && user
                .find_branch(&format!("vouch/{name}"), BranchType::Local)
                .is_ok()
        {
            ids.push(name.to_string());
        }
    }
    ids.sort();
    ids.dedup();
    Ok(ids)
}

/// The work that removing the workspace would lose.
fn unsaved(
    user: &Repository,
    dir: &Path,
    records: &Records,
    tip: Option<Oid>,
) -> Result<Vec<Unsaved>> {
    let mut found = Vec::new();
    if let Some(tip) = tip {
        let mut walk = user.revwalk().context("walk the branch")?;
        walk.push(tip).context("walk the branch")?;
        let mut against = Vec::new();
        if let Some(name) = crate::git::default_branch(user) {
            if let Ok(oid) = crate::git::resolve(user, &name) {
                walk.hide(oid).context("walk the branch")?;
                against.push(name);
            }
        }
        if let Some(head) = user.head().ok().and_then(|h| h.target()) {
            walk.hide(head).context("walk the branch")?;
            against.push("HEAD".to_string());
        }
        // The base the run started from is not the agent's work, even when it is not merged itself.
        if let Some(base) = recorded_base(user, records) {
            walk.hide(base).context("walk the branch")?;
        }
        let count = walk.flatten().count();
        if count > 0 {
            found.push(Unsaved::Commits {
                count,
                against: against.join(" or "),
            });
        }
    }
    if dir.join(".git").exists() {
        if let Ok(wt) = Repository::open(dir) {
            let mut opts = StatusOptions::new();
            opts.include_untracked(true)
                .include_ignored(false)
                .recurse_untracked_dirs(false);
            let count = wt
                .statuses(Some(&mut opts))
                .with_context(|| format!("read the status of {}", dir.display()))?
                .len();
            if count > 0 {
                found.push(Unsaved::Changes { count });
            }
        }
    }
    Ok(found)
}

/// The base commit the run recorded at its start (in its records, not the worktree).
fn recorded_base(user: &Repository, records: &Records) -> Option<Oid> {
    let base = records.state().ok()??.base;
    crate::git::resolve(user, &base).ok()
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}
