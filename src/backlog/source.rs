//! Where a backlog's tasks come from, and the plan: the tasks this invocation runs, in order.
//!
//! A folder of task files (the format `vouch run --task` reads; the id is the file stem) or the open forge
//! issues with a label (the id is `OWNER/REPO#N`). The plan sorts them by id, keeps the shard's share and,
//! for the per-index entry point, picks one.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use super::shard::Shard;
use crate::agent::Task;
use crate::error::VouchError;
use crate::forge::client::Issue;

/// One task of a backlog.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BacklogTask {
    /// The file stem, or `OWNER/REPO#N`.
    pub id: String,
    /// The task's title (for the display and the summary).
    pub title: String,
    pub kind: TaskKind,
}

/// What `vouch run` is given for the task.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TaskKind {
    /// `vouch run --task FILE`.
    File(PathBuf),
    /// `vouch run --issue OWNER/REPO#N`: the issue's number is kept for its claim label; `claimed`: the
    /// issue carried the claim label when it was listed (another runner holds it).
    Issue { number: u64, claimed: bool },
}

/// The task files `DIR/*.md`, each read as `vouch run --task` reads it (a broken one is a usage error that
/// names it, before anything runs).
pub fn from_dir(dir: &Path) -> Result<Vec<BacklogTask>> {
    let entries = std::fs::read_dir(dir).map_err(|e| {
        VouchError::usage(format!(
            "cannot read the task folder {}: {e}",
            dir.display()
        ))
    })?;
    let mut tasks = Vec::new();
    for entry in entries {
        let path = entry
            .with_context(|| format!("list {}", dir.display()))?
            .path();
        if path.extension().and_then(|e| e.to_str()) != Some("md") || !path.is_file() {
            continue;
        }
        let task = Task::load(&path)?;
        let id = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        tasks.push(BacklogTask {
            id,
            title: task.title,
            kind: TaskKind::File(std::path::absolute(&path).unwrap_or(path)),
        });
    }
    Ok(tasks)
}

/// The open issues of `repo` (`OWNER/REPO`) as tasks; those with `claim_label` are claimed elsewhere.
pub fn from_issues(repo: &str, issues: &[Issue], claim_label: &str) -> Vec<BacklogTask> {
    issues
        .iter()
        .map(|issue| BacklogTask {
            id: format!("{repo}#{}", issue.number),
            title: issue.title.clone(),
            kind: TaskKind::Issue {
                number: issue.number,
                claimed: issue.labels.iter().any(|l| l == claim_label),
            },
        })
        .collect()
}

/// The tasks sorted by id, the shard's share of them when one is given.
pub fn plan(mut tasks: Vec<BacklogTask>, shard: Option<Shard>) -> Vec<BacklogTask> {
    tasks.sort_by(|a, b| a.id.cmp(&b.id));
    tasks.dedup_by(|a, b| a.id == b.id);
    if let Some(shard) = shard {
        tasks.retain(|t| shard.contains(&t.id));
    }
    tasks
}

/// The per-index entry point's task: the `index`-th (0-based) of `ids` when given, else of `plan`. An id
/// that is not in the source, or an index past the end, is a usage error.
pub fn pick(plan: &[BacklogTask], ids: Option<&[String]>, index: usize) -> Result<BacklogTask> {
    let id = match ids {
        Some(ids) => ids.get(index).ok_or_else(|| {
            VouchError::usage(format!(
                "--index {index} is past the end of --task-ids ({} ids)",
                ids.len()
            ))
        })?,
        None => {
            return plan.get(index).cloned().ok_or_else(|| {
                VouchError::usage(format!(
                    "--index {index} is past the end of the plan ({} tasks)",
                    plan.len()
                ))
                .into()
            })
        }
    };
    plan.iter().find(|t| &t.id == id).cloned().ok_or_else(|| {
        VouchError::usage(format!("task `{id}` of --task-ids is not in the backlog")).into()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(id: &str) -> BacklogTask {
        BacklogTask {
            id: id.into(),
            title: id.into(),
            kind: TaskKind::File(PathBuf::from(format!("{id}.md"))),
        }
    }

    #[test]
    fn the_plan_is_sorted_by_id_and_a_shard_keeps_its_share() {
        let tasks = vec![task("c"), task("a"), task("b")];
        let ids = |p: Vec<BacklogTask>| p.into_iter().map(|t| t.id).collect::<Vec<_>>();
        assert_eq!(ids(plan(tasks.clone(), None)), ["a", "b", "c"]);
        let mut all = Vec::new();
        for k in 1..=2 {
            all.extend(ids(plan(tasks.clone(), Some(Shard { k, n: 2 }))));
        }
        all.sort();
        assert_eq!(all, ["a", "b", "c"]);
    }

    #[test]
    fn pick_takes_the_index_of_the_ids_or_the_plan_and_refuses_unknown_ids() {
        let p = plan(vec![task("b"), task("a")], None);
        assert_eq!(pick(&p, None, 1).unwrap().id, "b");
        let ids = vec!["b".to_string(), "a".to_string()];
        assert_eq!(pick(&p, Some(&ids), 0).unwrap().id, "b");
        let unknown = vec!["zz".to_string()];
        let err = pick(&p, Some(&unknown), 0).unwrap_err();
        assert_eq!(crate::error::exit_code_of(&err), crate::error::EXIT_USAGE);
        assert!(err.to_string().contains("`zz`"), "{err}");
        assert!(pick(&p, None, 2).is_err());
    }

    #[test]
    fn a_folder_gives_its_markdown_files_by_stem() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("fix-add.md"), "# Fix add\nIt subtracts.").unwrap();
        std::fs::write(dir.path().join("notes.txt"), "not a task").unwrap();
        let tasks = from_dir(dir.path()).unwrap();
        assert_eq!(tasks.len(), 1);
        assert_eq!(tasks[0].id, "fix-add");
        assert_eq!(tasks[0].title, "Fix add");
        let issue = |number, label: &str| Issue {
            number,
            title: "Seven".into(),
            body: String::new(),
            labels: vec![label.to_string()],
        };
        let issues = from_issues(
            "acme/calc",
            &[issue(7, "bug"), issue(8, "vouch:claimed")],
            "vouch:claimed",
        );
        assert_eq!(issues[0].id, "acme/calc#7");
        assert_eq!(
            issues[0].kind,
            TaskKind::Issue {
                number: 7,
                claimed: false
            }
        );
        assert_eq!(
            issues[1].kind,
            TaskKind::Issue {
                number: 8,
                claimed: true
            }
        );
    }
}
