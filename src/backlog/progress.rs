//! The backlog's progress display: one line per task with its state (queued, claimed, running turn k,
//! gating, verified...), redrawn in place on a terminal (indicatif), told as plain lines otherwise.

use std::collections::BTreeMap;
use std::sync::Mutex;

use indicatif::{ProgressBar, ProgressStyle};

use super::state::Outcome;
use crate::ui::Ui;

/// Where a task is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TaskState {
    Queued,
    Claimed,
    /// Attempt `attempt` runs its model turn `turn` (0: starting).
    Running {
        attempt: u32,
        turn: u32,
    },
    Gating {
        attempt: u32,
    },
    Done(Outcome),
    /// Another runner holds the task.
    HeldElsewhere,
    /// `--resume`: finished by an earlier run.
    DoneBefore(Outcome),
}

impl TaskState {
    pub fn text(&self) -> String {
        match self {
            TaskState::Queued => "queued".into(),
            TaskState::Claimed => "claimed".into(),
            TaskState::Running { attempt, turn: 0 } => format!("attempt {attempt}: starting"),
            TaskState::Running { attempt, turn } => {
                format!("attempt {attempt}: running turn {turn}")
            }
            TaskState::Gating { attempt } => format!("attempt {attempt}: gating"),
            TaskState::Done(o) => o.name().into(),
            TaskState::HeldElsewhere => "claimed by another runner: skipped".into(),
            TaskState::DoneBefore(o) => format!("{} (an earlier run)", o.name()),
        }
    }

    /// Whether a plain-lines display tells this change (each turn would be noise).
    fn told_plainly(&self) -> bool {
        !matches!(self, TaskState::Running { turn, .. } if *turn > 0)
    }
}

/// The display of one backlog run.
pub struct Board {
    ui: Ui,
    bars: Mutex<BTreeMap<String, ProgressBar>>,
}

impl Board {
    /// A line per task in `ids`, each queued.
    pub fn new(ui: Ui, ids: &[String]) -> Board {
        let mut bars = BTreeMap::new();
        if ui.live() {
            let width = ids.iter().map(|i| i.len()).max().unwrap_or(0).min(40);
            for id in ids {
                let pb = ui.bar(None, "  {spinner} {prefix} {msg} {elapsed}");
                pb.set_style(
                    ProgressStyle::with_template("  {spinner} {prefix} {msg}")
                        .unwrap_or_else(|_| ProgressStyle::default_spinner()),
                );
                pb.set_prefix(format!("{id:<width$}"));
                pb.set_message(TaskState::Queued.text());
                bars.insert(id.clone(), pb);
            }
        }
        Board {
            ui,
            bars: Mutex::new(bars),
        }
    }

    /// Task `id` is now in `state`.
    pub fn set(&self, id: &str, state: &TaskState) {
        let live = self.bars.lock().ok().and_then(|b| b.get(id).cloned());
        match live {
            Some(pb) => {
                pb.set_message(state.text());
                if matches!(
                    state,
                    TaskState::Done(_) | TaskState::HeldElsewhere | TaskState::DoneBefore(_)
                ) {
                    pb.finish();
                }
            }
            None if state.told_plainly() => self.ui.line(&format!("  {id}: {}", state.text())),
            None => {}
        }
    }

    /// A line above the task lines.
    pub fn note(&self, line: &str) {
        self.ui.line(line);
    }

    /// Removes the task lines (before the summary is printed).
    pub fn clear(&self) {
        if let Ok(bars) = self.bars.lock() {
            for pb in bars.values() {
                pb.finish_and_clear();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_read_as_the_display_shows_them() {
        assert_eq!(
            TaskState::Running {
                attempt: 2,
                turn: 3
            }
            .text(),
            "attempt 2: running turn 3"
        );
        assert_eq!(TaskState::Done(Outcome::Verified).text(), "verified");
        assert!(!TaskState::Running {
            attempt: 1,
            turn: 4
        }
        .told_plainly());
        assert!(TaskState::Gating { attempt: 1 }.told_plainly());
    }
}
