//! Console progress on stderr: a spinner per running step (only on a terminal), then one line per step.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Progress display shared by the steps of one gate run.
#[derive(Clone)]
pub struct Ui {
    multi: MultiProgress,
    quiet: bool,
}

impl Ui {
    pub fn new(quiet: bool) -> Ui {
        let target = if quiet || !std::io::stderr().is_terminal() {
            ProgressDrawTarget::hidden()
        } else {
            ProgressDrawTarget::stderr()
        };
        Ui {
            multi: MultiProgress::with_draw_target(target),
            quiet,
        }
    }

    /// A spinner for something running; finish it with [`Ui::done`].
    pub fn start(&self, label: &str) -> ProgressBar {
        let pb = self.multi.add(ProgressBar::new_spinner());
        pb.set_style(
            ProgressStyle::with_template("  {spinner} {msg} {elapsed}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        pb.set_message(label.to_owned());
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

    /// Whether spinners and bars are drawn (a terminal, not quiet); without them, progress is told in lines.
    pub fn live(&self) -> bool {
        !self.quiet && !self.multi.is_hidden()
    }

    /// Prints a line above any spinners.
    pub fn line(&self, line: &str) {
        if !self.quiet {
            self.multi.suspend(|| eprintln!("{line}"));
        }
    }
}
