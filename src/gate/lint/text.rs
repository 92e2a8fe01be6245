//! The fallback for tools without a structured output: rustfmt's diffs read as one finding per hunk, and any
//! other line that names a file position or says error/warning taken as a finding, normalised (positions and
//! runs of whitespace dropped) so that a moved line compares equal. Summary lines are never findings.

use std::sync::OnceLock;

use regex::Regex;

use super::{Finding, Findings, Format, Level};

/// Reads plain output (already scrubbed of machine paths).
pub fn read(log: &str) -> Findings {
    let mut items = Vec::new();
    let mut lines = log.lines().peekable();
    while let Some(line) = lines.next() {
        if let Some((file, at)) = rustfmt_header(line) {
            let mut diff: Vec<String> = Vec::new();
            while let Some(next) = lines.peek() {
                if rustfmt_header(next).is_some()
                    || !(next.starts_with(' ') || next.starts_with('+') || next.starts_with('-'))
                {
                    break;
                }
                if next.starts_with('+') || next.starts_with('-') {
                    diff.push(next.trim_end().to_owned());
                }
                lines.next();
            }
            items.push(Finding {
                rule: "rustfmt".into(),
                file,
                line: at,
                column: None,
                end_line: None,
                text: diff.join("\n"),
                message: "not formatted as rustfmt formats it".into(),
                level: Level::Error,
                targets: Vec::new(),
            });
            continue;
        }
        if is_finding(line) && !is_summary(line) {
            let level = if line.trim_start().to_lowercase().starts_with("warning") {
                Level::Warning
            } else {
                Level::Error
            };
            items.push(Finding::text_line(line, level));
        }
    }
    Findings {
        format: Format::Text,
        items,
        human: log.to_owned(),
    }
}

/// The file and line of a rustfmt hunk header: `Diff in src/lib.rs:3:` (or, older, `Diff in src/lib.rs at
/// line 3:`).
fn rustfmt_header(line: &str) -> Option<(String, Option<u32>)> {
    static RE: OnceLock<Option<Regex>> = OnceLock::new();
    let re = RE
        .get_or_init(|| Regex::new(r"^Diff in (.+?)(?::(\d+)| at line (\d+)):\s*$").ok())
        .as_ref()?;
    let c = re.captures(line.trim_end())?;
    let at = c.get(2).or(c.get(3)).and_then(|m| m.as_str().parse().ok());
    Some((super::scrub::relative(&c[1]), at))
}

/// Removes ANSI escape sequences (colours, and the `ESC ( B` charset resets rustfmt prints).
pub fn strip_ansi(text: &str) -> String {
    if !text.contains('\u{1b}') {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\u{1b}' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('[') => {
                // CSI: parameters and intermediates, then one final byte in @..~.
                for d in chars.by_ref() {
                    if ('@'..='~').contains(&d) {
                        break;
                    }
                }
            }
            Some('(' | ')') => {
                chars.next();
            }
            _ => {}
        }
    }
    out
}

/// A line of checker output made comparable between two versions of a file: `:line:col` positions dropped
/// (as `:N`), whitespace collapsed.
pub fn normalize(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.trim().chars().peekable();
    while let Some(c) = chars.next() {
        if c == ':' && chars.peek().is_some_and(|d| d.is_ascii_digit()) {
            while chars
                .peek()
                .is_some_and(|d| d.is_ascii_digit() || *d == ':')
            {
                chars.next();
            }
            out.push_str(":N");
            continue;
        }
        if c.is_whitespace() {
            if !out.ends_with(' ') {
                out.push(' ');
            }
            continue;
        }
        out.push(c);
    }
    out
}

/// Whether a line of checker output is a finding (names a file position or says error/warning), not chatter
/// like a count or a timing.
fn is_finding(line: &str) -> bool {
    let t = line.trim_start().to_lowercase();
    let has_position = line
        .split(':')
        .nth(1)
        .is_some_and(|p| p.chars().next().is_some_and(|c| c.is_ascii_digit()));
    (has_position && line.contains('.'))
        || names_position(line)
        || t.starts_with("error")
        || t.starts_with("warning")
        || t.starts_with("-->")
        || t.starts_with("would reformat")
        || t.starts_with("diff in")
        || (!t.contains(' ') && t.contains('.') && !t.ends_with('.'))
}

/// Whether a line names a `file.ext:line` position anywhere (`vet: ./bad.go:3:23: ...`).
fn names_position(line: &str) -> bool {
    static RE: OnceLock<Option<Regex>> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"[\w/-]\.\w+:\d+").ok())
        .as_ref()
        .is_some_and(|re| re.is_match(line))
}

/// Lines that sum up or report progress: counts of errors and warnings, cargo's "could not compile" per
/// target, rustc's pointers to `--explain`. They change whenever the number of findings does, and name the
/// target that happened to fail first, so they are never findings.
pub fn is_summary(line: &str) -> bool {
    static RE: OnceLock<Option<Regex>> = OnceLock::new();
    let Some(re) = RE
        .get_or_init(|| {
            Regex::new(concat!(
                r"^(?:error: could not compile `",
                r"|error: aborting due to",
                r"|warning: build failed, waiting for other jobs",
                r"|(?:error|warning): `[^`]+` \(.*\) generated \d+ (?:warning|error)",
                r"|(?:warning|error): \d+ (?:warning|error)s? emitted",
                r"|For more information about (?:this|an) error, try `rustc --explain",
                r"|Some errors have detailed explanations",
                r"|Found \d+ errors?",
                r"|\[\*\] \d+ fixable",
                r"|\d+ files? (?:would be reformatted|already formatted|left unchanged)",
                r"|No fixes available",
                r"|error: process didn't exit successfully",
                r"|error: \d+ targets? failed",
                r")"
            ))
            .ok()
        })
        .as_ref()
    else {
        return false;
    };
    re.is_match(line.trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lines of `head`'s findings whose key is not among `base`'s, as the reasons quote them.
    fn new_lines(head: &str, base: &str) -> Vec<String> {
        let (head, base) = (read(head), read(base));
        super::super::new_findings(&head.items, &base.items)
            .into_iter()
            .map(|f| f.message.clone())
            .collect()
    }

    #[test]
    fn findings_already_at_base_are_not_new_even_when_lines_moved() {
        let base =
            "error: unexpected `cfg` condition name: `x`\n --> tests/a.rs:12:7\nFound 1 error.\n";
        let head =
            "error: unexpected `cfg` condition name: `x`\n --> tests/a.rs:15:7\nFound 1 error.\n";
        assert!(new_lines(head, base).is_empty());
        let head2 = format!("{head}calc.py:3:1: F401 `os` imported but unused\nFound 2 errors.\n");
        assert_eq!(
            new_lines(&head2, base),
            vec!["calc.py:3:1: F401 `os` imported but unused".to_string()]
        );
    }

    #[test]
    fn a_repeated_finding_counts_once_per_occurrence() {
        let base = "a.go:1:1: bad\n";
        let head = "a.go:1:1: bad\na.go:9:1: bad\n";
        assert_eq!(new_lines(head, base), vec!["a.go:9:1: bad".to_string()]);
    }

    #[test]
    fn a_file_list_like_gofmt_l_compares_by_name() {
        assert!(new_lines("old.go\n", "old.go\n").is_empty());
        assert_eq!(
            new_lines("old.go\nnew.go\n", "old.go\n"),
            vec!["new.go".to_string()]
        );
    }

    #[test]
    fn cargo_summaries_are_never_findings_whatever_the_count_or_target() {
        let base = "error: unneeded `return` statement\n --> src/lib.rs:9:5\nerror: unneeded `return` statement\n --> src/lib.rs:14:5\nerror: could not compile `m` (lib) due to 2 previous errors\nwarning: build failed, waiting for other jobs to finish...\nerror: could not compile `m` (lib test) due to 2 previous errors\n";
        let head = "error: unneeded `return` statement\n --> src/lib.rs:14:5\nerror: could not compile `m` (lib test) due to 1 previous error\n";
        assert!(
            new_lines(head, base).is_empty(),
            "{:?}",
            new_lines(head, base)
        );
        let fd_base = "warning: `fd` (bin \"fd\") generated 1 warning\nerror: could not compile `fd` (bin \"fd\") due to 1 previous error\n";
        let fd_head = "warning: `fd` (bin \"fd\" test) generated 1 warning (1 duplicate)\nerror: could not compile `fd` (bin \"fd\" test) due to 1 previous error\n";
        assert!(new_lines(fd_head, fd_base).is_empty());
        for summary in [
            "warning: 2 warnings emitted",
            "error: aborting due to 3 previous errors",
            "For more information about this error, try `rustc --explain E0425`.",
            "Found 12 errors.",
            "[*] 3 fixable with the `--fix` option.",
            "2 files would be reformatted, 3 files already formatted",
        ] {
            assert!(is_summary(summary), "{summary}");
        }
        assert!(!is_summary(
            "error[E0425]: cannot find value `x` in this scope"
        ));
    }

    #[test]
    fn a_rustfmt_hunk_is_one_finding_keyed_by_its_diff_not_its_line() {
        let base = "Diff in src/lib.rs:20:\n pub fn add() {}\n-pub fn   mul(a: i64,b:i64)->i64{a*b}\n+pub fn mul(a: i64, b: i64) -> i64 {\n+    a * b\n+}\n";
        let head = base.replace(":20:", ":23:");
        let f = read(&head);
        assert_eq!(f.items.len(), 1);
        assert_eq!(f.items[0].rule, "rustfmt");
        assert_eq!(f.items[0].location(), "src/lib.rs:23");
        assert!(new_lines(&head, base).is_empty());
        let more = format!("Diff in src/lib.rs at line 3:\n-         a+b\n+    a + b\n }}\n{head}");
        assert_eq!(
            read(&more).items[0].describe(),
            "src/lib.rs:3: not formatted as rustfmt formats it [rustfmt]"
        );
        assert_eq!(new_lines(&more, base).len(), 1);
    }

    #[test]
    fn colours_are_stripped() {
        assert_eq!(
            strip_ansi("\u{1b}[31m-  x\n\u{1b}(B\u{1b}[m\u{1b}[32m+    x\n"),
            "-  x\n+    x\n"
        );
        assert_eq!(strip_ansi("plain"), "plain");
    }
}
