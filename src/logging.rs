//! Logging setup: `tracing` to stderr, quiet by default, `-v`/`-vv` or `RUST_LOG` for more, `-q` for errors
//! only. Colour only when stderr is a terminal: a log file or a pipe gets plain text. Every line passes the
//! redactor of the secrets vouch knows.

use std::io::{self, IsTerminal as _, Write};

use tracing_subscriber::EnvFilter;

/// The filter for `-v` counted `verbose` times, or for `-q`.
pub fn level(verbose: u8, quiet: bool) -> &'static str {
    match (quiet, verbose) {
        (true, _) => "error",
        (false, 0) => "warn",
        (false, 1) => "vouch=info",
        _ => "vouch=debug",
    }
}

/// Starts the global subscriber. Safe to call more than once (later calls are ignored).
pub fn init(verbose: u8) {
    init_with(verbose, false);
}

/// [`init`], with `-q` leaving only errors.
pub fn init_with(verbose: u8, quiet: bool) {
    let default = level(verbose, quiet);
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(|| Redacting(io::stderr()))
        .with_ansi(std::io::stderr().is_terminal())
        .with_target(false)
        .without_time()
        .try_init();
}

/// A writer that replaces every known secret in what it is given (the formatter writes a whole line at once).
struct Redacting<W: Write>(W);

impl<W: Write> Write for Redacting<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match crate::secret::known().bytes(buf) {
            Some(clean) => self.0.write_all(&clean)?,
            None => self.0.write_all(buf)?,
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quiet_leaves_only_errors_and_verbose_adds_detail() {
        assert_eq!(level(0, true), "error");
        assert_eq!(level(2, true), "error");
        assert_eq!(level(0, false), "warn");
        assert_eq!(level(1, false), "vouch=info");
        assert_eq!(level(3, false), "vouch=debug");
    }
}
