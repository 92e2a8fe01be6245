//! Console progress on stderr: a spinner per running step (only on a terminal that can move its cursor),
//! then one line per step.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::gate::report::limits::{clip_lines, CONSOLE_LINE};

/// Progress display shared by the steps of one gate run.
#[derive(Clone)]
pub struct Ui {
    multi: MultiProgress,
    quiet: bool,
}

impl Ui {
    pub fn new(quiet: bool) -> Ui {
        let term = std::env::var("TERM").ok();
        let target = if draws(quiet, std::io::stderr().is_terminal(), term.as_deref()) {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        };
        Ui {
            multi: MultiProgress::with_draw_target(target),
            quiet,
        }
    }

    /// A spinner for something running; finish it with [`Ui::done`].
    pub fn start(&self, label: &str) -> ProgressBar {
        let label = &crate::secret::redact(label);
        let pb = self.multi.add(ProgressBar::new_spinner());
        pb.set_style(
            ProgressStyle::with_template("  {spinner} {msg} {elapsed}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        pb.set_message(clip_lines(label, CONSOLE_LINE, 1));
        pb.enable_steady_tick(Duration::from_millis(120));
        pb
    }

    /// Removes the spinner and prints a line in its place.
    pub fn done(&self, pb: ProgressBar, line: &str) {
        pb.finish_and_clear();
        self.multi.remove(&pb);
        self.line(line);
    }

    /// A bar or counter drawn with `template` (indicatif's), `len` steps long; finish it with [`Ui::done`].
    pub fn bar(&self, len: Option<u64>, template: &str) -> ProgressBar {
        let pb = self.multi.add(match len {
            Some(len) => ProgressBar::new(len),
            None => ProgressBar::no_length(),
        });
        pb.set_style(
            ProgressStyle::with_template(template)
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
        );
        pb.enable_steady_tick(Duration::from_millis(200));
        pb
    }

    /// Adds `pb`, made hidden and set up by the caller, to the drawn lines: it appears with its style,
    /// prefix and message in place (a bar made on stderr would draw once before it has them).
    pub fn add(&self, pb: ProgressBar) -> ProgressBar {
        self.multi.add(pb)
    }

    /// The terminal's width in columns, when spinners and bars are drawn.
    pub fn width(&self) -> Option<usize> {
        if !self.live() {
            return None;
        }
        console::Term::stderr()
            .size_checked()
            .map(|(_, cols)| usize::from(cols))
    }

    /// Whether spinners and bars are drawn (a terminal, not quiet); without them, progress is told in lines.
    pub fn live(&self) -> bool {
        !self.quiet && !self.multi.is_hidden()
    }

    /// Prints a line above any spinners, each of its lines clipped to [`CONSOLE_LINE`] characters (a note
    /// naming hundreds of tests shows their start; the JSON report has all of it), every known secret in it
    /// replaced.
    pub fn line(&self, line: &str) {
        if !self.quiet {
            let line = clip_lines(&crate::secret::redact(line), CONSOLE_LINE, usize::MAX);
            self.multi.suspend(|| eprintln!("{line}"));
        }
    }
}

/// Whether progress is drawn in place: not quiet, stderr a terminal, and one that moves its cursor
/// (`TERM=dumb` does not: it gets plain lines). `NO_COLOR` asks for no colour, which the drawing has none of.
fn draws(quiet: bool, terminal: bool, term: Option<&str>) -> bool {
    !quiet && terminal && term != Some("dumb")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_is_drawn_only_on_a_terminal_that_moves_its_cursor() {
        assert!(draws(false, true, Some("xterm-256color")));
        assert!(draws(false, true, None));
        assert!(!draws(false, true, Some("dumb")));
        assert!(!draws(false, false, Some("xterm")));
        assert!(!draws(true, true, Some("xterm")));
    }
}
