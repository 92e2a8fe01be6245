//! The per-hunk check: each production hunk of a biting change reverted alone (the others kept), the selected
//! tests run again. A hunk no test notices is `unguarded`: code the change adds or alters that its tests do not
//! pin down. Advisory by default (reported, not blamed); `--bite-hunks require` fails the gate on one.
//!
//! Hunks that change only comments, doc comments or blank lines are skipped, and so is every hunk once the
//! time budget (`bite.hunk_budget`, default twice what the bite check took) is spent; each skip is counted and
//! said. A change with a single production hunk needs no run: reverting it alone is the bite check itself.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Result;
use similar::TextDiff;

use crate::gate::bite::plan::{head_overlay, Overlay};
use crate::gate::bite::{BiteHunk, BiteReport, Plan};
use crate::gate::cargo::Layout;
use crate::gate::outcome::{HunkStatus, TestOutcome};
use crate::gate::profile::{HunkPolicy, Step};
use crate::gate::steps::{human, plural};
use crate::gate::GateRun;
use crate::room::OverlayFile;

use super::run::Limits;

/// One production hunk: the file, its line ranges on both sides (0-based, end exclusive), and the file's
/// text with only this hunk reverted (None: the file is then absent).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hunk {
    pub file: String,
    pub old: std::ops::Range<usize>,
    pub new: std::ops::Range<usize>,
    pub reverted: Option<String>,
    /// Only comments, doc comments and blank lines change.
    pub comment_only: bool,
}

impl Hunk {
    /// `12-18` (1-based, at head); a pure deletion names the line it was before.
    pub fn lines(&self) -> String {
        if self.new.is_empty() {
            format!("{} (deleted)", self.new.start + 1)
        } else if self.new.len() == 1 {
            format!("{}", self.new.start + 1)
        } else {
            format!("{}-{}", self.new.start + 1, self.new.end)
        }
    }
}

/// The hunks of one production file from `from` (base, or base plus the test hunks for a file that holds
/// both) to `to` (head), each with the file as it is with that hunk alone reverted.
pub fn file_hunks(path: &str, from: Option<&str>, to: Option<&str>) -> Vec<Hunk> {
    let (from, to) = match (from, to) {
        (Some(f), Some(t)) => (f, t),
        (None, Some(t)) => {
            return vec![Hunk {
                file: path.to_owned(),
                old: 0..0,
                new: 0..t.lines().count(),
                reverted: None,
                comment_only: t.lines().all(|l| neutral(path, l)),
            }]
        }
        (Some(f), None) => {
            return vec![Hunk {
                file: path.to_owned(),
                old: 0..f.lines().count(),
                new: 0..0,
                reverted: Some(f.to_owned()),
                comment_only: f.lines().all(|l| neutral(path, l)),
            }]
        }
        (None, None) => return Vec::new(),
    };
    let old_lines: Vec<&str> = from.split_inclusive('\n').collect();
    let new_lines: Vec<&str> = to.split_inclusive('\n').collect();
    let diff = TextDiff::from_lines(from, to);
    let mut out = Vec::new();
    for group in diff.grouped_ops(0) {
        let (Some(first), Some(last)) = (group.first(), group.last()) else {
            continue;
        };
        let old = first.old_range().start..last.old_range().end;
        let new = first.new_range().start..last.new_range().end;
        let mut text = String::new();
        for l in &new_lines[..new.start] {
            text.push_str(l);
        }
        for l in &old_lines[old.clone()] {
            text.push_str(l);
        }
        for l in &new_lines[new.end..] {
            text.push_str(l);
        }
        let comment_only = old_lines[old.clone()]
            .iter()
            .chain(&new_lines[new.clone()])
            .all(|l| neutral(path, l));
        out.push(Hunk {
            file: path.to_owned(),
            old,
            new,
            reverted: Some(text),
            comment_only,
        });
    }
    out
}

/// Whether a line holds no code: blank, or a comment in the file's language.
fn neutral(path: &str, line: &str) -> bool {
    let t = line.trim();
    if t.is_empty() {
        return true;
    }
    let ext = Path::new(path)
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("");
    match ext {
        "py" | "sh" | "toml" | "yml" | "yaml" | "rb" => t.starts_with('#'),
        _ => {
            t.starts_with("//")
                || t.starts_with("/*")
                || t.starts_with("*/")
                || (t.starts_with('*') && !t.starts_with("*="))
        }
    }
}

/// Head's tree as an overlay on base, and the production hunks of the change.
fn head_overlay_and_hunks(gate: &GateRun<'_>) -> Result<(Overlay, Vec<Hunk>)> {
    let prep = gate.prep;
    let mut hunks = Vec::new();
    let overlay = head_overlay(prep, |at| {
        let c = at.change;
        let from = if c.mixed {
            prep.mixed.get(&c.path).cloned()
        } else {
            at.base_text.clone()
        };
        let to = at
            .file
            .as_ref()
            .and_then(|f| std::str::from_utf8(&f.content).ok());
        hunks.extend(file_hunks(&c.path, from.as_deref(), to));
        Ok(())
    })?;
    Ok((overlay, hunks))
}

impl GateRun<'_> {
    /// The per-hunk check (see the module doc) after a biting check that took `bite_took`: fills
    /// `report.hunks` and says what it found and skipped in the warnings.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn check_hunks(
        &mut self,
        step: &Step,
        plan: &Plan,
        run_ids: &[String],
        limits: Limits,
        layout: Option<&Layout>,
        bite_took: Duration,
        report: &mut BiteReport,
    ) -> Result<()> {
        let policy = self.bite_policy();
        if policy.hunks == HunkPolicy::Off || run_ids.is_empty() {
            return Ok(());
        }
        let _ = plan;
        let (overlay, hunks) = tokio::task::block_in_place(|| head_overlay_and_hunks(self))?;
        let budget = policy.hunk_budget.unwrap_or(bite_took * 2);
        let started = Instant::now();
        let code: Vec<&Hunk> = hunks.iter().filter(|h| !h.comment_only).collect();
        let mut out = Vec::new();
        let pb = (code.len() > 1).then(|| {
            self.ui.start(&format!(
                "bite check: {} reverted one at a time",
                plural(code.len(), "production hunk")
            ))
        });
        for h in &hunks {
            let mut row = BiteHunk {
                file: h.file.clone(),
                lines: h.lines(),
                status: HunkStatus::Skipped,
                note: None,
            };
            if h.comment_only {
                row.note = Some("comments or blank lines only".into());
            } else if code.len() == 1 {
                row.status = HunkStatus::Guarded;
                row.note = Some("the only production hunk: the bite check reverted it".into());
            } else if started.elapsed() >= budget {
                row.note = Some(format!("out of the time budget ({})", human(budget)));
            } else {
                let left = budget.saturating_sub(started.elapsed());
                let hunk_limits = Limits {
                    build: limits.build.min(left),
                    tests: limits.tests.min(left),
                };
                let mut files = overlay.clone();
                let reverted = h.reverted.clone().map(|text| OverlayFile {
                    content: text.into_bytes(),
                    executable: files
                        .iter()
                        .find(|(p, _)| *p == h.file)
                        .and_then(|(_, f)| f.as_ref())
                        .is_some_and(|f| f.executable),
                });
                match files.iter_mut().find(|(p, _)| *p == h.file) {
                    Some(entry) => entry.1 = reverted,
                    None => files.push((h.file.clone(), reverted)),
                }
                let n = out.len();
                let run = self
                    .run_in_tree(
                        step,
                        files,
                        &format!("bite-hunk{n}"),
                        run_ids,
                        hunk_limits,
                        layout,
                    )
                    .await?;
                let failed = run.tests.iter().find(|t| t.outcome == TestOutcome::Bites);
                let unbuilt = run
                    .tests
                    .iter()
                    .find(|t| t.outcome == TestOutcome::BitesBuild);
                if let Some(t) = failed {
                    row.status = HunkStatus::Guarded;
                    row.note = Some(format!("{} fails without it", t.id));
                } else if let Some(t) = unbuilt {
                    row.status = HunkStatus::NeededToBuild;
                    row.note = Some(format!(
                        "{} does not build without it: the rest of the change needs it, so no test judges it alone",
                        t.id
                    ));
                } else if run.tests.iter().any(|t| t.outcome == TestOutcome::Timeout) {
                    row.note = Some("the run did not finish in time".into());
                } else if run.tests.iter().any(|t| t.outcome == TestOutcome::Inert) {
                    row.status = HunkStatus::Unguarded;
                } else {
                    row.note = Some("the selected tests did not run".into());
                }
            }
            out.push(row);
        }
        if let Some(pb) = pb {
            pb.finish_and_clear();
        }
        let unguarded: Vec<String> = out
            .iter()
            .filter(|h| h.status == HunkStatus::Unguarded)
            .map(|h| format!("{}:{}", h.file, h.lines))
            .collect();
        let skipped = out
            .iter()
            .filter(|h| h.status == HunkStatus::Skipped)
            .count();
        if !unguarded.is_empty() {
            report.warnings.push(format!(
                "{} of {} no selected test notices when reverted alone: {}",
                unguarded.len(),
                plural(out.len(), "production hunk"),
                unguarded.join(", ")
            ));
        }
        if skipped > 0 {
            report.warnings.push(format!(
                "per-hunk check: {} of {} skipped (comments only, or out of the {} budget)",
                skipped,
                plural(out.len(), "hunk"),
                human(budget)
            ));
        }
        report.hunks = out;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn each_hunk_is_reverted_alone_with_the_others_kept() {
        let from = "a\nb\nc\nd\ne\n";
        let to = "a\nB\nc\nd\nE\nF\n";
        let hunks = file_hunks("src/lib.rs", Some(from), Some(to));
        assert_eq!(hunks.len(), 2);
        assert_eq!(hunks[0].lines(), "2");
        assert_eq!(hunks[0].reverted.as_deref(), Some("a\nb\nc\nd\nE\nF\n"));
        assert_eq!(hunks[1].lines(), "5-6");
        assert_eq!(hunks[1].reverted.as_deref(), Some("a\nB\nc\nd\ne\n"));
        assert!(!hunks[0].comment_only);
    }

    #[test]
    fn comment_only_hunks_are_marked_and_added_or_deleted_files_are_one_hunk() {
        let from = "fn f() {}\n";
        let to = "/// Docs.\nfn f() {}\n// trailing\n";
        let hunks = file_hunks("src/lib.rs", Some(from), Some(to));
        assert!(hunks.iter().all(|h| h.comment_only), "{hunks:?}");
        let added = file_hunks("src/new.rs", None, Some("fn g() {}\n"));
        assert_eq!(added.len(), 1);
        assert_eq!(added[0].reverted, None);
        assert_eq!(added[0].lines(), "1");
        let gone = file_hunks("src/old.rs", Some("fn g() {}\n"), None);
        assert_eq!(gone[0].reverted.as_deref(), Some("fn g() {}\n"));
        assert_eq!(gone[0].lines(), "1 (deleted)");
        let py = file_hunks("m.py", Some("x = 1\n"), Some("x = 1\n# why\n"));
        assert!(py[0].comment_only);
    }
}
