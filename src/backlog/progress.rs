//! The backlog's progress display: one line per task with its state (queued, claimed, running turn k,
//! gating, verified...), redrawn in place on a terminal (indicatif, which caps the redraws at 20 a second),
//! told as plain lines otherwise. A line never wraps: the id takes at most half the terminal and the state
//! is cut to the rest, since a wrapped line would throw off the redraw's cursor moves on some terminals.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

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

/// How often a running task's spinner turns (each turn redraws the board).
const TICK: Duration = Duration::from_millis(250);
/// The widest a task id is shown, at most (and at most half the terminal): the state gets the rest.
const ID_WIDTH: usize = 40;

/// The display of one backlog run.
pub struct Board {
    ui: Ui,
    /// Each task's line (on a terminal) and the state it shows.
    lines: Mutex<BTreeMap<String, Line>>,
}

struct Line {
    /// `None` without a terminal: state changes are plain lines.
    bar: Option<ProgressBar>,
    state: TaskState,
}

impl Board {
    /// A line per task in `ids`, each queued.
    pub fn new(ui: Ui, ids: &[String]) -> Board {
        let width = ui.width().map(|cols| id_width(ids, cols));
        let mut lines = BTreeMap::new();
        for id in ids {
            let bar = width.map(|w| {
                // Set up hidden, then added: its first frame already has its id and state.
                let pb = ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden());
                pb.set_style(
                    ProgressStyle::with_template("  {spinner} {prefix} {wide_msg}")
                        .unwrap_or_else(|_| ProgressStyle::default_spinner()),
                );
                pb.set_prefix(fit(id, w));
                pb.set_message(TaskState::Queued.text());
                let pb = ui.add(pb);
                pb.tick();
                pb
            });
            let line = Line {
                bar,
                state: TaskState::Queued,
            };
            lines.insert(id.clone(), line);
        }
        Board {
            ui,
            lines: Mutex::new(lines),
        }
    }

    /// Task `id` is now in `state`; telling it the state it is in already draws nothing.
    pub fn set(&self, id: &str, state: &TaskState) {
        let Ok(mut lines) = self.lines.lock() else {
            return;
        };
        let Some(line) = lines.get_mut(id) else {
            return;
        };
        if line.state == *state {
            return;
        }
        line.state = state.clone();
        match &line.bar {
            Some(pb) => {
                pb.set_message(state.text());
                match state {
                    TaskState::Done(_) | TaskState::HeldElsewhere | TaskState::DoneBefore(_) => {
                        pb.finish()
                    }
                    // A queued task's spinner stands still; a claimed or running one's turns.
                    TaskState::Queued => {}
                    _ => pb.enable_steady_tick(TICK),
                }
            }
            None if state.told_plainly() => {
                drop(lines);
                self.ui.line(&format!("  {id}: {}", state.text()));
            }
            None => {}
        }
    }

    /// A line above the task lines.
    pub fn note(&self, line: &str) {
        self.ui.line(line);
    }

    /// Removes the task lines (before the summary is printed).
    pub fn clear(&self) {
        if let Ok(lines) = self.lines.lock() {
            for pb in lines.values().filter_map(|l| l.bar.as_ref()) {
                pb.finish_and_clear();
            }
        }
    }
}

/// The width task ids are padded to on a terminal `cols` wide: the longest id's, at most [`ID_WIDTH`] and
/// half the terminal.
fn id_width(ids: &[String], cols: usize) -> usize {
    let longest = ids.iter().map(|i| i.chars().count()).max().unwrap_or(0);
    longest.min(ID_WIDTH).min(cols / 2).max(1)
}

/// `id` padded to `width` characters, or cut to it with `…` at the end.
fn fit(id: &str, width: usize) -> String {
    if id.chars().count() <= width {
        return format!("{id:<width$}");
    }
    let mut out: String = id.chars().take(width.saturating_sub(1)).collect();
    out.push('…');
    out
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

    #[test]
    fn ids_take_at_most_half_a_narrow_terminal_and_are_cut_with_an_ellipsis() {
        let ids = ["a-rather-long-task-id".to_string(), "b".to_string()];
        assert_eq!(id_width(&ids, 200), 21);
        assert_eq!(id_width(&ids, 30), 15);
        assert_eq!(fit("b", 4), "b   ");
        assert_eq!(fit("a-rather-long-task-id", 10), "a-rather-…");
        assert_eq!(fit("a-rather-long-task-id", 10).chars().count(), 10);
    }

    #[test]
    fn a_board_without_a_terminal_keeps_each_tasks_state() {
        let board = Board::new(Ui::new(true), &["t".to_string()]);
        board.set("t", &TaskState::Claimed);
        board.set("t", &TaskState::Claimed);
        board.set("nobody", &TaskState::Claimed);
        let lines = board.lines.lock().unwrap();
        assert_eq!(lines["t"].state, TaskState::Claimed);
        assert!(lines["t"].bar.is_none());
    }
}
