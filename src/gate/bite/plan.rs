//! The reverted tree of the bite check: base plus the test part of the change, as an overlay of files, and the
//! test changes that say which tests the change touches.
//!
//! Every changed path is placed by its class: tests as at head, production as at base (added files removed,
//! deleted ones restored), files holding both (Rust inline tests) as base plus their test hunks, generated
//! files and docs at base. What each became is listed in the report, so the verdict can be checked by hand.

use std::path::Path;

use anyhow::{Context, Result};

use crate::gate::bite::BiteReport;
use crate::gate::paths::PathClass;
use crate::gate::results::{Runner, TestResult};
use crate::gate::testmap::TestChange;
use crate::git::ChangeKind;
use crate::room::OverlayFile;

/// What the bite step needs from the gate.
pub struct Input<'a> {
    pub prep: &'a crate::gate::Prepared,
    pub runner: Runner,
    /// The test step's argv (placeholders unfilled).
    pub argv: Vec<String>,
    pub head_results: &'a [TestResult],
}

/// A tree as files laid over base: replaced (`Some`) or removed (`None`).
pub type Overlay = Vec<(String, Option<OverlayFile>)>;

/// One changed path as it is at head, for a tree laid over base that starts from head (the stub and per-hunk
/// checks): the file at head (None: deleted) and, for production files, its text at base (None: added).
pub struct AtHead<'a> {
    pub change: &'a crate::gate::report::ChangedFile,
    pub file: Option<OverlayFile>,
    pub base_text: Option<String>,
}

/// Head's tree as an overlay on base: every changed path as at head (a renamed file's old path removed), each
/// production file passed to `edit` first, which may rewrite it (`file`) and look at its base text.
pub fn head_overlay(
    prep: &crate::gate::Prepared,
    mut edit: impl FnMut(&mut AtHead<'_>) -> Result<()>,
) -> Result<Overlay> {
    let repo = crate::git::open_objects(&prep.objects)?;
    let base = git2::Oid::from_str(&prep.base.sha)?;
    let head = git2::Oid::from_str(&prep.head.sha)?;
    let head_tree = repo.find_commit(head)?.tree()?;
    let mut overlay = Vec::new();
    for c in &prep.changes {
        let old_path = c.old_path.as_deref().unwrap_or(&c.path);
        if c.change == ChangeKind::Renamed && old_path != c.path {
            overlay.push((old_path.to_owned(), None));
        }
        let file = if c.change == ChangeKind::Deleted {
            None
        } else {
            let entry = head_tree
                .get_path(Path::new(&c.path))
                .with_context(|| format!("{} at head", c.path))?;
            let blob = repo.find_blob(entry.id())?;
            Some(OverlayFile {
                content: blob.content().to_vec(),
                executable: entry.filemode() == 0o100755,
            })
        };
        let mut at = AtHead {
            change: c,
            file,
            base_text: None,
        };
        if c.class == PathClass::Production {
            if c.change != ChangeKind::Added {
                at.base_text = crate::git::file_text(&repo, base, old_path);
            }
            edit(&mut at)?;
        }
        overlay.push((c.path.clone(), at.file));
    }
    Ok(overlay)
}

/// The reverted tree's overlay and the test changes, read from the user's repository (read-only).
pub struct Plan {
    pub overlay: Overlay,
    pub test_changes: Vec<TestChange>,
    pub go_module: Option<String>,
}

/// Classifies the change into its parts and builds the overlay. Fills the report's file lists.
pub fn plan(input: &Input, report: &mut BiteReport) -> Result<Plan> {
    let prep = input.prep;
    let repo = crate::git::open_objects(&prep.objects)?;
    let base = git2::Oid::from_str(&prep.base.sha)?;
    let head = git2::Oid::from_str(&prep.head.sha)?;
    let head_tree = repo.find_commit(head)?.tree()?;
    let file_at = |commit: git2::Oid, path: &str| crate::git::file_text(&repo, commit, path);
    let mut overlay = Vec::new();
    let mut test_changes = Vec::new();
    let mut generated = Vec::new();
    let mut other = Vec::new();
    for c in &prep.changes {
        let old_path = c.old_path.as_deref().unwrap_or(&c.path);
        match (c.class, c.mixed) {
            (PathClass::Test, _) => {
                report.test_files.push(c.path.clone());
                let file = match c.change {
                    ChangeKind::Deleted => None,
                    _ => {
                        let entry = head_tree
                            .get_path(Path::new(&c.path))
                            .with_context(|| format!("{} at head", c.path))?;
                        let blob = repo.find_blob(entry.id())?;
                        Some(OverlayFile {
                            content: blob.content().to_vec(),
                            executable: entry.filemode() == 0o100755,
                        })
                    }
                };
                overlay.push((c.path.clone(), file));
                if c.change == ChangeKind::Renamed && old_path != c.path {
                    overlay.push((old_path.to_owned(), None));
                }
                test_changes.push(TestChange {
                    path: c.path.clone(),
                    old: match c.change {
                        ChangeKind::Added => None,
                        _ => file_at(base, old_path),
                    },
                    new: match c.change {
                        ChangeKind::Deleted => None,
                        _ => file_at(head, &c.path),
                    },
                });
            }
            (PathClass::Production, true) => {
                report.production_files.push(c.path.clone());
                report.test_files.push(c.path.clone());
                let test_only = prep.mixed.get(&c.path).cloned().unwrap_or_default();
                report.reverted.push(format!(
                    "{}: kept the test hunks, reverted the rest ({})",
                    c.path,
                    c.detail.as_deref().unwrap_or("split by test regions")
                ));
                let executable = head_tree
                    .get_path(Path::new(&c.path))
                    .is_ok_and(|e| e.filemode() == 0o100755);
                overlay.push((
                    c.path.clone(),
                    Some(OverlayFile {
                        content: test_only.clone().into_bytes(),
                        executable,
                    }),
                ));
                test_changes.push(TestChange {
                    path: c.path.clone(),
                    old: file_at(base, old_path),
                    new: Some(test_only),
                });
            }
            (PathClass::Production, false) => {
                report.production_files.push(c.path.clone());
                report.reverted.push(match c.change {
                    ChangeKind::Added => format!("{}: removed (the change added it)", c.path),
                    ChangeKind::Deleted => format!("{}: restored (the change deleted it)", c.path),
                    _ => format!("{}: reverted to base", c.path),
                });
            }
            (PathClass::Generated, _) => generated.push(c.path.clone()),
            (PathClass::Docs | PathClass::Other, _) => other.push(c.path.clone()),
        }
    }
    if !generated.is_empty() {
        report.reverted.push(format!(
            "generated files follow their production source, reverted to base: {}",
            generated.join(", ")
        ));
    }
    if !other.is_empty() {
        report.reverted.push(format!(
            "docs and other files, neither production nor tests, reverted to base: {}",
            other.join(", ")
        ));
    }
    let go_module = if input.runner == Runner::Go {
        file_at(head, "go.mod").and_then(|m| {
            m.lines().find_map(|l| {
                l.trim()
                    .strip_prefix("module ")
                    .map(|s| s.trim().trim_matches('"').to_owned())
            })
        })
    } else {
        None
    };
    Ok(Plan {
        overlay,
        test_changes,
        go_module,
    })
}
