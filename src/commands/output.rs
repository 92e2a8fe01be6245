//! Where a command's output goes. A reader that stops early (`vouch profile --list | head -1`) ends the
//! output, not the command: later writes are dropped, the command finishes its work and exits as it would
//! have. Any other write error (a full disk behind a redirect) is an error. Every text passes the redactor of
//! the secrets vouch knows ([`crate::secret::known`]) on its way out.

use std::io::{self, Write};

use anyhow::{Context, Result};

/// A writer for a command's output that treats a closed pipe as a normal end.
pub struct Output<W: Write> {
    inner: W,
    /// What the writer writes to, for errors: `stdout`, `stderr`.
    name: &'static str,
    /// The reader went away; nothing more is written.
    closed: bool,
}

/// The process's standard output.
pub fn stdout() -> Output<io::Stdout> {
    Output::new(io::stdout(), "stdout")
}

/// The process's standard error.
pub fn stderr() -> Output<io::Stderr> {
    Output::new(io::stderr(), "stderr")
}

impl<W: Write> Output<W> {
    pub fn new(inner: W, name: &'static str) -> Output<W> {
        Output {
            inner,
            name,
            closed: false,
        }
    }

    /// Writes `text`, every known secret in it replaced.
    pub fn print(&mut self, text: &str) -> Result<()> {
        if self.closed {
            return Ok(());
        }
        let text = crate::secret::redact(text);
        let written = self.inner.write_all(text.as_bytes());
        self.settle(written)
    }

    /// Writes `text` and a newline.
    pub fn line(&mut self, text: &str) -> Result<()> {
        self.print(text)?;
        self.print("\n")
    }

    /// Flushes what is buffered; call it once the output is complete.
    pub fn finish(mut self) -> Result<()> {
        if self.closed {
            return Ok(());
        }
        let flushed = self.inner.flush();
        self.settle(flushed)
    }

    /// Whether the reader has gone away.
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    fn settle(&mut self, result: io::Result<()>) -> Result<()> {
        match result {
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {
                self.closed = true;
                Ok(())
            }
            other => other.with_context(|| format!("write to {}", self.name)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Takes `room` bytes, then fails every write with `kind`.
    struct Pipe {
        got: Vec<u8>,
        room: usize,
        kind: io::ErrorKind,
        writes_after_error: usize,
    }

    impl Pipe {
        fn new(room: usize, kind: io::ErrorKind) -> Pipe {
            Pipe {
                got: Vec::new(),
                room,
                kind,
                writes_after_error: 0,
            }
        }
    }

    impl Write for Pipe {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            if self.got.len() >= self.room {
                self.writes_after_error += 1;
                return Err(io::Error::from(self.kind));
            }
            let n = buf.len().min(self.room - self.got.len());
            self.got.extend_from_slice(&buf[..n]);
            Ok(n)
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_closed_pipe_ends_the_output_quietly_and_later_writes_are_dropped() {
        let mut out = Output::new(Pipe::new(5, io::ErrorKind::BrokenPipe), "stdout");
        out.line("rust").unwrap();
        assert!(!out.is_closed());
        out.line("go").unwrap();
        assert!(out.is_closed());
        out.line("python").unwrap();
        assert_eq!(out.inner.got, b"rust\n");
        assert_eq!(out.inner.writes_after_error, 1);
        out.finish().unwrap();
    }

    #[test]
    fn any_other_write_error_is_an_error_naming_the_stream() {
        let mut out = Output::new(Pipe::new(0, io::ErrorKind::StorageFull), "stdout");
        let err = out.print("x").unwrap_err();
        assert_eq!(err.to_string(), "write to stdout");
        assert!(!out.is_closed());
    }
}
