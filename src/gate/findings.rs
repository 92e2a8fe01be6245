//! Scraping step output into findings people can act on: which files a formatter names, the first compiler or
//! linter message with its location, a test's failure message in one line.
//!
//! The gate's messages must say what is wrong without opening a log, and tools print that in a handful of
//! shapes (rustfmt `Diff in`, gofmt's file list, rustc/clippy `-->` locations, go vet and ruff `file:line:`
//! lines, Python tracebacks). A tool that printed JSON is read structurally ([`lint`](crate::gate::lint));
//! the rest are heuristics over those shapes, kept pure and in one place.

use std::path::Path;

use crate::gate::lint::{self, Scrub};
use crate::gate::outcome::{Finding, Rule, StepStatus};
use crate::gate::profile::StepKind;
use crate::gate::steps::StepReport;

/// Characters of one line of a step's output kept in a finding.
const LINE_CHARS: usize = 300;
/// Characters of a test's failure message kept in a finding.
const MESSAGE_CHARS: usize = 240;

/// One finding per failed, timed-out or unrunnable step that is not a test step (test steps are judged by
/// their per-test results): what failed and, from its note or its output, why.
/// `room` is where vouch sees the room, `inside` where the steps saw it (the paths their output names).
pub fn step_findings(reports: &[StepReport], room: &Path, inside: &Path) -> Vec<Finding> {
    let mut out = Vec::new();
    for st in reports {
        if !st.status.is_bad() || st.kind == StepKind::Test {
            continue;
        }
        let mut r = format!(
            "step `{}` ({}) {}",
            st.name,
            format!("{:?}", st.kind).to_lowercase(),
            match st.status {
                StepStatus::Timeout => "timed out".to_owned(),
                StepStatus::Error => "could not run".to_owned(),
                _ => match st.exit_code {
                    Some(c) => format!("failed (exit {c})"),
                    None => "failed".to_owned(),
                },
            }
        );
        if let Some(note) = &st.note {
            r.push_str(": ");
            r.push_str(note);
        } else if let Some(detail) = failure_detail(st, room, inside) {
            r.push_str(": ");
            r.push_str(&detail);
        }
        out.push(Finding::new(Rule::StepFailed, r).step(st.name.clone()));
    }
    out
}

/// A failure message in one line: its first few lines joined, without libtest's `thread 'x' (id)` prefix.
pub fn summarize_failure(message: &str) -> String {
    let mut parts: Vec<String> = Vec::new();
    for line in message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .take(4)
    {
        let line = match line.strip_prefix("thread '") {
            Some(rest) => rest
                .find(" panicked at ")
                .map(|i| rest[i + 1..].to_owned())
                .unwrap_or_else(|| line.to_owned()),
            None => line.to_owned(),
        };
        parts.push(line);
    }
    let joined = parts.join(" ");
    let mut out: String = joined.chars().take(MESSAGE_CHARS).collect();
    if joined.chars().count() > MESSAGE_CHARS {
        out.push('…');
    }
    out
}

/// A step's full log as written (relative to its room), or its tail when the file is gone.
pub fn read_log(report: &StepReport) -> String {
    report
        .log
        .as_ref()
        .and_then(|p| std::fs::read_to_string(p).ok())
        .unwrap_or_else(|| report.log_tail.clone())
}

/// Files of the room that a step's output names, in order of first mention.
pub fn mentioned_files(tail: &str, room: &Path) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for token in tail.split(|c: char| {
        c.is_whitespace() || matches!(c, ':' | '(' | ')' | '[' | ']' | ',' | '"' | '\'' | '`')
    }) {
        let t = token.trim_start_matches("./").trim_end_matches('.');
        if t.is_empty() || t.len() > 300 || !t.contains('.') {
            continue;
        }
        if room.join(t).is_file() && !out.iter().any(|o| o == t) {
            out.push(t.to_owned());
        }
    }
    out
}

/// A short, specific account of a failed step: the files a formatter names, or the first error of a linter
/// or compiler with its location (read structurally when the tool printed JSON), else the first line that
/// looks like an error.
pub fn failure_detail(st: &StepReport, room: &Path, inside: &Path) -> Option<String> {
    let tail = Scrub::room_seen_at(room, inside).apply(&st.log_tail);
    let files = mentioned_files(&tail, room);
    if st.kind == StepKind::Format && !files.is_empty() {
        return Some(format!("not formatted: {}", files.join(", ")));
    }
    let found = lint::read(&read_log(st), &Scrub::room_seen_at(room, inside), room);
    if found.format.structured() {
        if let Some(f) = found.first_error() {
            return Some(f.describe().chars().take(LINE_CHARS).collect());
        }
    }
    if st.kind == StepKind::Build {
        if let Some(error) = first_compiler_error(&st.log_tail) {
            return Some(error);
        }
    }
    if let Some(first) = files.first() {
        let lines: Vec<&str> = st
            .log_tail
            .lines()
            .filter(|l| !l.trim().is_empty())
            .collect();
        if let Some(i) = lines.iter().position(|l| l.contains(first.as_str())) {
            let line = lines[i].trim();
            let text = if (line.starts_with("-->") || line.starts_with("at ")) && i > 0 {
                format!(
                    "{} ({})",
                    lines[i - 1].trim(),
                    line.trim_start_matches("-->").trim()
                )
            } else {
                line.to_owned()
            };
            let more = if files.len() > 1 {
                format!(" (files named: {})", files.join(", "))
            } else {
                String::new()
            };
            return Some(format!(
                "{}{more}",
                text.chars().take(LINE_CHARS).collect::<String>()
            ));
        }
    }
    first_error_line(&st.log_tail)
}

/// The first `error` line of a compiler's text output (never a warning, never a summary), with the location
/// rustc prints under it: `error[E0425]: cannot find value `y` (src/lib.rs:3:5)`.
fn first_compiler_error(tail: &str) -> Option<String> {
    let lines: Vec<&str> = tail
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let i = lines
        .iter()
        .position(|l| l.starts_with("error") && !lint::text::is_summary(l))?;
    let at = lines[i + 1..]
        .iter()
        .take(2)
        .find_map(|l| l.strip_prefix("-->"))
        .map(|l| format!(" ({})", l.trim()))
        .unwrap_or_default();
    Some(
        format!("{}{at}", lines[i])
            .chars()
            .take(LINE_CHARS)
            .collect(),
    )
}

/// The first line that looks like an error (or a formatter's complaint), else the last line.
pub fn first_error_line(tail: &str) -> Option<String> {
    let lines: Vec<&str> = tail.lines().filter(|l| !l.trim().is_empty()).collect();
    lines
        .iter()
        .find(|l| {
            let l = l.to_lowercase();
            l.contains("error")
                || l.contains("diff in")
                || l.contains("would reformat")
                || l.contains("fail")
        })
        .or(lines.last())
        .map(|l| l.trim().chars().take(LINE_CHARS).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A room holding `files` (empty files: only their existence matters here).
    fn room(files: &[&str]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for f in files {
            let p = dir.path().join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "").unwrap();
        }
        dir
    }

    fn failed(name: &str, kind: StepKind, tail: &str) -> StepReport {
        StepReport {
            name: name.into(),
            kind,
            status: StepStatus::Fail,
            duration_ms: 10,
            command: name.into(),
            exit_code: Some(1),
            log_tail: tail.into(),
            log: None,
            note: None,
            tests: None,
            drift: Vec::new(),
        }
    }

    #[test]
    fn rustfmt_and_gofmt_output_name_the_unformatted_files() {
        let dir = room(&["src/lib.rs", "calc.go"]);
        let rustfmt = failed(
            "fmt",
            StepKind::Format,
            "Diff in src/lib.rs:3:\n fn add() {\n-    1+1\n+    1 + 1\n }\n",
        );
        assert_eq!(
            failure_detail(&rustfmt, dir.path(), dir.path()).as_deref(),
            Some("not formatted: src/lib.rs")
        );
        let gofmt = failed("gofmt", StepKind::Format, "calc.go\n");
        assert_eq!(
            failure_detail(&gofmt, dir.path(), dir.path()).as_deref(),
            Some("not formatted: calc.go")
        );
        let ruff = failed(
            "ruff-format",
            StepKind::Format,
            "Would reformat: calc.py\n1 file would be reformatted\n",
        );
        let dir = room(&["calc.py"]);
        assert_eq!(
            failure_detail(&ruff, dir.path(), dir.path()).as_deref(),
            Some("not formatted: calc.py")
        );
    }

    #[test]
    fn a_compiler_or_clippy_finding_gets_its_message_with_the_location() {
        let dir = room(&["src/lib.rs"]);
        let clippy = failed(
            "clippy",
            StepKind::Lint,
            "    Checking calc v0.1.0\nerror: unneeded `return` statement\n  --> src/lib.rs:2:5\n   |\n2  |     return a + b;\n   = help: for further information visit https://rust-lang.github.io/rust-clippy/master/index.html#needless_return\n",
        );
        assert_eq!(
            failure_detail(&clippy, dir.path(), dir.path()).as_deref(),
            Some("error: unneeded `return` statement (src/lib.rs:2:5)")
        );
    }

    #[test]
    fn a_vet_or_lint_line_that_starts_with_the_file_is_kept_whole() {
        let dir = room(&["calc.go", "calc.py", "legacy.py"]);
        let vet = failed(
            "vet",
            StepKind::Vet,
            "# example.com/calc\n./calc.go:7:2: fmt.Printf format %s has arg x of wrong type int\n",
        );
        assert_eq!(
            failure_detail(&vet, dir.path(), dir.path()).as_deref(),
            Some("./calc.go:7:2: fmt.Printf format %s has arg x of wrong type int")
        );
        let ruff = failed(
            "ruff",
            StepKind::Lint,
            "calc.py:1:8: F401 [*] `os` imported but unused\nlegacy.py:1:8: F401 [*] `sys` imported but unused\nFound 2 errors.\n",
        );
        assert_eq!(
            failure_detail(&ruff, dir.path(), dir.path()).as_deref(),
            Some(
                "calc.py:1:8: F401 [*] `os` imported but unused (files named: calc.py, legacy.py)"
            )
        );
    }

    #[test]
    fn without_a_named_file_the_first_error_line_or_the_last_line_is_used() {
        let dir = room(&[]);
        let build = failed(
            "build",
            StepKind::Build,
            "Compiling x\nerror[E0425]: cannot find value `y`\nmore\n",
        );
        assert_eq!(
            failure_detail(&build, dir.path(), dir.path()).as_deref(),
            Some("error[E0425]: cannot find value `y`")
        );
        assert_eq!(
            first_error_line("one\n  last line  \n\n").as_deref(),
            Some("last line")
        );
        assert_eq!(first_error_line(""), None);
    }

    #[test]
    fn a_build_failure_is_named_by_its_first_error_not_by_a_warning_before_it() {
        let dir = room(&["src/lib.rs"]);
        let build = failed(
            "build",
            StepKind::Build,
            "   Compiling calc v0.1.0\nwarning: unused variable: `unused`\n --> src/lib.rs:3:9\n  |\nerror[E0277]: cannot add `&str` to `i64`\n --> src/lib.rs:4:11\n  |\nerror: could not compile `calc` (lib) due to 1 previous error\n",
        );
        assert_eq!(
            failure_detail(&build, dir.path(), dir.path()).as_deref(),
            Some("error[E0277]: cannot add `&str` to `i64` (src/lib.rs:4:11)")
        );
    }

    #[test]
    fn a_structured_output_is_named_by_its_first_error_with_its_real_location() {
        let dir = room(&["src/lib.rs"]);
        let json = serde_json::json!({
            "reason": "compiler-message",
            "target": {"kind": ["lib"], "name": "calc", "src_path": "src/lib.rs"},
            "message": {"message": "unneeded `return` statement", "level": "error",
                "code": {"code": "clippy::needless_return"}, "rendered": "error: unneeded",
                "spans": [{"file_name": "src/lib.rs", "line_start": 9, "column_start": 5,
                    "is_primary": true, "text": [{"text": "    return x;"}]}]}
        });
        let clippy = failed(
            "clippy",
            StepKind::Lint,
            &format!("{json}\nerror: could not compile `calc` (lib) due to 1 previous error\n"),
        );
        assert_eq!(
            failure_detail(&clippy, dir.path(), dir.path()).as_deref(),
            Some("src/lib.rs:9:5: unneeded `return` statement [clippy::needless_return]")
        );
    }

    #[test]
    fn only_existing_room_files_are_mentioned_once_each_in_order() {
        let dir = room(&["b.py", "pkg/a.py"]);
        assert_eq!(
            mentioned_files(
                "error in ./pkg/a.py: see b.py, (pkg/a.py) and missing.py or v1.2",
                dir.path()
            ),
            vec!["pkg/a.py".to_string(), "b.py".to_string()]
        );
    }

    #[test]
    fn a_failure_message_is_one_line_without_the_thread_prefix_and_capped() {
        assert_eq!(
            summarize_failure(
                "thread 'tests::mean' (123) panicked at src/lib.rs:9:5:\nassertion `left == right` failed\n  left: 2\n right: 3\n note: more"
            ),
            "panicked at src/lib.rs:9:5: assertion `left == right` failed left: 2 right: 3"
        );
        let long = "x".repeat(300);
        let s = summarize_failure(&long);
        assert_eq!(s.chars().count(), MESSAGE_CHARS + 1);
        assert!(s.ends_with('…'));
    }

    #[test]
    fn only_bad_steps_that_are_not_tests_become_findings() {
        let dir = room(&[]);
        let mut timeout = failed("build", StepKind::Build, "");
        timeout.status = StepStatus::Timeout;
        timeout.note = Some("timed out after 1s; its process group was killed".into());
        let mut passed = failed("fmt", StepKind::Format, "");
        passed.status = StepStatus::Pass;
        let test = failed("test", StepKind::Test, "FAILED");
        let mut error = failed("lint", StepKind::Lint, "");
        error.status = StepStatus::Error;
        error.exit_code = None;
        let found = step_findings(&[timeout, passed, test, error], dir.path(), dir.path());
        assert_eq!(
            found.iter().map(|f| f.message.as_str()).collect::<Vec<_>>(),
            vec![
                "step `build` (build) timed out: timed out after 1s; its process group was killed",
                "step `lint` (lint) could not run",
            ]
        );
        assert!(found.iter().all(|f| f.rule == Rule::StepFailed));
        assert_eq!(found[0].step.as_deref(), Some("build"));
    }
}
