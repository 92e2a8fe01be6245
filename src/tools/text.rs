//! Text helpers the tools share: reading a file as text, binary detection, line endings, numbered lines.

use std::fs;
use std::path::Path;

use super::Resolved;

/// Files larger than this are not read whole (read_file, edit); search skips them.
pub(crate) const MAX_FILE_BYTES: u64 = 10 * 1024 * 1024;

/// Whether `bytes` look binary: a NUL byte in the first 8 KiB, as git decides.
pub(crate) fn looks_binary(bytes: &[u8]) -> bool {
    bytes.iter().take(8192).any(|&b| b == 0)
}

/// The UTF-8 text of an existing regular file, or a message for the model.
pub(crate) fn read_text(path: &Resolved) -> Result<String, String> {
    let rel = &path.rel;
    let meta = match fs::metadata(&path.abs) {
        Ok(meta) => meta,
        Err(_) => {
            return Err(format!(
            "`{rel}` does not exist. Use list_files to see the files, or write_file to create it."
        ))
        }
    };
    if meta.is_dir() {
        return Err(format!(
            "`{rel}` is a directory; use list_files to see what is in it."
        ));
    }
    if !meta.is_file() {
        // A FIFO or a device: opening it for reading could wait for ever, or never end.
        return Err(special_file(rel));
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(format!(
            "`{rel}` is {} bytes, too large to read whole; use search to find the lines you need.",
            meta.len()
        ));
    }
    let bytes = fs::read(&path.abs).map_err(|err| format!("`{rel}` cannot be read: {err}."))?;
    if looks_binary(&bytes) {
        return Err(format!(
            "`{rel}` is a binary file; only text files can be read or edited."
        ));
    }
    String::from_utf8(bytes).map_err(|_| {
        format!("`{rel}` is not UTF-8 text; only UTF-8 text files can be read or edited.")
    })
}

/// Why a file that is neither a regular file nor a directory is refused.
pub(crate) fn special_file(rel: &str) -> String {
    format!(
        "`{rel}` is not a regular file (a FIFO, socket or device); only regular files can be read or written."
    )
}

/// Refuses to write through `meta`'s file when it is not a regular file, or when it has other hard links:
/// writing would change the file under its other names too, which may lie outside the worktree.
pub(crate) fn writable(rel: &str, meta: &fs::Metadata) -> Result<(), String> {
    if !meta.is_file() {
        return Err(special_file(rel));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt as _;
        if meta.nlink() > 1 {
            return Err(format!(
                "`{rel}` has {} hard links: writing it would change the same file under its other names, \
                 perhaps outside the repository. Write a new file instead (delete this one first).",
                meta.nlink()
            ));
        }
    }
    Ok(())
}

/// Whether the file's lines end in CRLF: it has at least one, and no bare LF.
pub(crate) fn is_crlf(text: &str) -> bool {
    let crlf = text.matches("\r\n").count();
    crlf > 0 && crlf == text.matches('\n').count()
}

/// The lines of `text` without their terminators; a final newline does not start another line.
pub(crate) fn lines(text: &str) -> Vec<&str> {
    if text.is_empty() {
        return Vec::new();
    }
    let body = text.strip_suffix('\n').unwrap_or(text);
    body.split('\n')
        .map(|line| line.strip_suffix('\r').unwrap_or(line))
        .collect()
}

/// How many lines `text` has (as [`lines`] counts them).
pub(crate) fn line_count(text: &str) -> usize {
    if text.is_empty() {
        0
    } else {
        text.strip_suffix('\n')
            .unwrap_or(text)
            .matches('\n')
            .count()
            + 1
    }
}

/// One numbered line as read_file shows it: the number right-aligned in six columns, a tab, the text.
pub(crate) fn numbered(number: usize, line: &str) -> String {
    format!("{number:>6}\t{line}")
}

/// `line` cut to at most `max` characters, with a note of how much was cut.
pub(crate) fn cut_line(line: &str, max: usize) -> String {
    match line.char_indices().nth(max) {
        None => line.to_string(),
        Some((end, _)) => {
            let more = line[end..].chars().count();
            format!("{}… [{more} more characters]", &line[..end])
        }
    }
}

/// The 1-based line number of byte offset `at` in `text`.
pub(crate) fn line_of(text: &str, at: usize) -> usize {
    text.as_bytes()[..at.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// A numbered excerpt of `text`: lines `first..=last` (1-based) and `context` lines around them.
pub(crate) fn excerpt(text: &str, first: usize, last: usize, context: usize) -> String {
    let all = lines(text);
    if all.is_empty() {
        return "(the file is now empty)".to_string();
    }
    let from = first.saturating_sub(context).max(1);
    let to = (last + context).min(all.len());
    let from = from.min(to);
    const MAX: usize = 60;
    let mut out: Vec<String> = (from..=to)
        .take(MAX)
        .map(|n| numbered(n, &cut_line(all[n - 1], 500)))
        .collect();
    if to + 1 - from > MAX {
        out.push(format!("[… {} more lines]", to + 1 - from - MAX));
    }
    out.join("\n")
}

/// Whether `path` is a regular file no larger than `max` bytes (search skips others).
pub(crate) fn small_file(path: &Path, max: u64) -> bool {
    fs::metadata(path)
        .map(|m| m.is_file() && m.len() <= max)
        .unwrap_or(false)
}

/// `n` and the noun in the right number: `1 file`, `3 files`.
pub(crate) fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The last `max` characters of `text`, marked when cut.
pub fn cap(text: &str, max: usize) -> String {
    let count = text.chars().count();
    if count <= max {
        return text.to_string();
    }
    let tail: String = text.chars().skip(count - max).collect();
    format!("[... {} characters cut ...]\n{tail}", count - max)
}
