//! Progress of a setup phase: a bar or counter on a terminal, else a line at every tenth of the way, so that a
//! long build or download never runs silent in a log either.

use std::time::Instant;

use indicatif::ProgressBar;

use crate::ui::Ui;

/// What a phase counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Bytes, with a known total or not.
    Bytes,
    /// A percentage (0 to 100), as cmake prints it.
    Percent,
}

/// One running phase of setup.
pub struct Phase {
    ui: Ui,
    pb: ProgressBar,
    label: String,
    unit: Unit,
    total: Option<u64>,
    /// The last tenth told in a line (without a terminal), and when.
    told: u64,
    told_at: Instant,
    start: Instant,
}

/// Without a terminal, lines come at most this often.
const LINE_EVERY: std::time::Duration = std::time::Duration::from_secs(3);

impl Phase {
    /// A phase counting `unit`, `total` long when known (a percentage is always 100 long).
    pub fn start(ui: &Ui, label: &str, unit: Unit, total: Option<u64>) -> Phase {
        let total = match unit {
            Unit::Percent => Some(100),
            Unit::Bytes => total,
        };
        let template = match (unit, total) {
            (Unit::Percent, _) => "  {spinner} {msg} [{bar:30}] {pos}% {elapsed}",
            (Unit::Bytes, Some(_)) => {
                "  {spinner} {msg} [{bar:30}] {bytes}/{total_bytes} {binary_bytes_per_sec} {elapsed}"
            }
            (Unit::Bytes, None) => "  {spinner} {msg} {bytes} {binary_bytes_per_sec} {elapsed}",
        };
        let pb = ui.bar(total, template);
        pb.set_message(label.to_owned());
        if !ui.live() {
            ui.line(&format!("  {label} ..."));
        }
        Phase {
            ui: ui.clone(),
            pb,
            label: label.to_owned(),
            unit,
            total,
            told: 0,
            told_at: Instant::now(),
            start: Instant::now(),
        }
    }

    /// A phase with nothing to count.
    pub fn spinner(ui: &Ui, label: &str) -> Phase {
        let pb = ui.start(label);
        if !ui.live() {
            ui.line(&format!("  {label} ..."));
        }
        Phase {
            ui: ui.clone(),
            pb,
            label: label.to_owned(),
            unit: Unit::Bytes,
            total: None,
            told: 0,
            told_at: Instant::now(),
            start: Instant::now(),
        }
    }

    /// Changes what the phase says it is doing (`wheel 3 of 22`); without a terminal, in a line now and then.
    pub fn set_label(&mut self, label: &str) {
        label.clone_into(&mut self.label);
        self.pb.set_message(label.to_owned());
        if !self.ui.live() && self.told_at.elapsed() >= LINE_EVERY {
            self.told_at = Instant::now();
            self.ui.line(&format!("  {label} ..."));
        }
    }

    /// Sets how far the phase is.
    pub fn set(&mut self, position: u64) {
        self.pb.set_position(position);
        if self.ui.live() {
            return;
        }
        let Some(total) = self.total.filter(|t| *t > 0) else {
            return;
        };
        let tenth = position.min(total) * 10 / total;
        if tenth > self.told && tenth < 10 && self.told_at.elapsed() >= LINE_EVERY {
            self.told = tenth;
            self.told_at = Instant::now();
            let done = match self.unit {
                Unit::Percent => format!("{position}%"),
                Unit::Bytes => format!("{} of {}", mib(position), mib(total)),
            };
            self.ui.line(&format!("  {}: {done}", self.label));
        }
    }

    /// Adds to how far the phase is.
    pub fn inc(&mut self, delta: u64) {
        let position = self.pb.position() + delta;
        self.set(position);
    }

    /// Ends the phase with one line; its time is added.
    pub fn done(self, line: &str) {
        let secs = self.start.elapsed().as_secs_f64();
        self.ui.done(self.pb, &format!("  {line} ({secs:.1} s)"));
    }

    /// Ends the phase without a line (it failed; the error tells).
    pub fn abandon(self) {
        self.pb.finish_and_clear();
    }
}

/// Bytes as MiB with one decimal.
pub fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_in_mebibytes() {
        assert_eq!(mib(1_117_320_768), "1065.6 MiB");
        assert_eq!(mib(0), "0.0 MiB");
    }
}
