//! Reading a test step's output for the parsers: as a stream of lines, bytes taken lossily (a test that
//! prints invalid UTF-8 must not hide every result), with a cap, so that a step printing a gigabyte does not
//! cost the gate a gigabyte of memory.
//!
//! What is kept: every line up to [`MAX_LINE`] bytes (longer lines are cut; a result line is short), the
//! first half of [`MAX_KEPT`] bytes and the last half, with one marker line between them saying how much
//! was skipped. Runners print their results as they go and their summary at the end, so the parsers keep
//! the summary and the earliest results; a skipped middle only loses per-test lines, and the step is then
//! judged on what remains and its exit status.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

/// Bytes of a single line that are kept.
pub const MAX_LINE: usize = 64 * 1024;
/// Bytes of output kept in all (half from the start, half from the end).
pub const MAX_KEPT: usize = 64 * 1024 * 1024;

/// The output file at `path` as text for the parsers (empty when it cannot be read).
pub fn read_output(path: &Path) -> String {
    match std::fs::File::open(path) {
        Ok(f) => read_capped(f, MAX_LINE, MAX_KEPT),
        Err(_) => String::new(),
    }
}

/// Bytes of a JUnit report read at most.
pub const MAX_REPORT: u64 = 64 * 1024 * 1024;

/// A whole small file (a JUnit report) as text, bytes taken lossily; `None` when it cannot be read. The
/// report lies where the code under test writes, so it is read as that code might have left it: a symbolic
/// link is not followed (`O_NOFOLLOW`), anything but a regular file is refused (a FIFO would block, a
/// device never end), and at most [`MAX_REPORT`] bytes are read.
pub fn read_lossy(path: &Path) -> Option<String> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::File::options()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .ok()?;
    if !file.metadata().ok()?.is_file() {
        tracing::warn!("{} is not a regular file; not read", path.display());
        return None;
    }
    let mut bytes = Vec::new();
    file.take(MAX_REPORT).read_to_end(&mut bytes).ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// The lines of `input`, each cut to `max_line` bytes, the first and last `max_kept / 2` bytes of them.
pub fn read_capped(input: impl Read, max_line: usize, max_kept: usize) -> String {
    let mut reader = BufReader::new(input);
    let half = max_kept / 2;
    let mut head = String::new();
    let mut tail: VecDeque<String> = VecDeque::new();
    let mut tail_bytes = 0usize;
    let mut skipped_lines = 0usize;
    let mut skipped_bytes = 0usize;
    let mut line: Vec<u8> = Vec::new();
    loop {
        let (ended, eof) = next_piece(&mut reader, &mut line, max_line).unwrap_or((true, true));
        if ended && !(eof && line.is_empty()) {
            let text = String::from_utf8_lossy(&line).into_owned();
            line.clear();
            if head.len() + text.len() < half {
                head.push_str(&text);
                head.push('\n');
            } else {
                tail_bytes += text.len() + 1;
                tail.push_back(text);
                while tail_bytes > half {
                    let Some(old) = tail.pop_front() else { break };
                    tail_bytes -= old.len() + 1;
                    skipped_lines += 1;
                    skipped_bytes += old.len() + 1;
                }
            }
        }
        if eof {
            break;
        }
    }
    if skipped_lines > 0 {
        head.push_str(&format!(
            "[vouch: {skipped_lines} lines ({skipped_bytes} bytes) of output skipped]\n"
        ));
    }
    for t in tail {
        head.push_str(&t);
        head.push('\n');
    }
    head
}

/// Reads up to the end of the current line into `line` (at most `max_line` bytes of it; the rest of a
/// longer line is read and dropped). Returns (the line ended, the input ended).
fn next_piece(
    reader: &mut impl BufRead,
    line: &mut Vec<u8>,
    max_line: usize,
) -> std::io::Result<(bool, bool)> {
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            return Ok((true, true));
        }
        let (take, found) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (i, true),
            None => (buf.len(), false),
        };
        let room = max_line.saturating_sub(line.len());
        line.extend_from_slice(&buf[..take.min(room)]);
        let used = if found { take + 1 } else { take };
        reader.consume(used);
        if found {
            return Ok((true, false));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_utf8_is_read_lossily_and_lines_are_kept() {
        let bytes = b"test a ... ok\n\xff\xfe garbage\ntest b ... ok".to_vec();
        let text = read_capped(&bytes[..], 1000, 1000);
        assert_eq!(
            text,
            "test a ... ok\n\u{fffd}\u{fffd} garbage\ntest b ... ok\n"
        );
    }

    #[test]
    fn long_lines_are_cut_and_the_middle_is_skipped_past_the_cap() {
        let mut input = String::new();
        input.push_str("first\n");
        input.push_str(&"x".repeat(5000));
        input.push('\n');
        for i in 0..1000 {
            input.push_str(&format!("line {i}\n"));
        }
        input.push_str("summary\n");
        let text = read_capped(input.as_bytes(), 100, 2000);
        assert!(text.len() < 2200, "{}", text.len());
        assert!(text.starts_with("first\n"));
        assert!(text.contains(&format!("{}\n", "x".repeat(100))));
        assert!(!text.contains(&"x".repeat(101)));
        assert!(text.contains("lines ("), "{text}");
        assert!(text.ends_with("line 999\nsummary\n"), "{text}");
    }

    #[test]
    fn a_huge_single_line_costs_no_more_than_the_line_cap() {
        // A reader that yields 100 MB without a newline, never held whole.
        let reader = std::io::repeat(b'y').take(100 * 1024 * 1024);
        let text = read_capped(reader, 1024, 4096);
        assert_eq!(text.len(), 1025);
    }
}
