//! What node's reporters print on stdout: the TAP reporter's results (the whole test tree, with each test's
//! location and error) and the spec reporter's closing list of failures (with their locations).
//!
//! TAP is the fallback when a run wrote no JUnit file; with a JUnit file both outputs are only read for
//! [`Hint`]s, because they name the file of a failure and the failures of suites (hooks) that Node 20's
//! JUnit file leaves out.

use super::{failure_text, Entry, Hint, PATTERN_SKIP};
use crate::gate::results::{relative_path, secs_to_ms, strip_line_col, TestStatus};
use std::collections::HashMap;
use std::path::Path;

// ---- TAP

pub(super) fn looks_like_tap(stdout: &str) -> bool {
    stdout.lines().any(|l| l.starts_with("TAP version "))
}

/// Node's TAP escapes `\`, `#` and control characters in names.
fn tap_unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

/// `ok 3 - name # SKIP reason` / `not ok 2 - name` -> (name, status, filtered).
fn tap_result(content: &str) -> Option<(String, TestStatus, bool)> {
    let (ok, rest) = match content.strip_prefix("not ok") {
        Some(rest) => (false, rest),
        None => (true, content.strip_prefix("ok")?),
    };
    let rest = rest
        .strip_prefix(' ')
        .or_else(|| rest.is_empty().then_some(rest))?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let rest = rest[digits..].trim_start();
    let rest = rest
        .strip_prefix("- ")
        .or_else(|| rest.strip_prefix('-'))
        .unwrap_or(rest);
    let mut name = rest;
    let mut directive: Option<(bool, &str)> = None;
    for (i, _) in rest.match_indices(" # ") {
        let after = &rest[i + 3..];
        let upper = after.get(..4).map(str::to_ascii_uppercase);
        if let Some(kind @ ("SKIP" | "TODO")) = upper.as_deref() {
            directive = Some((kind == "SKIP", after[4..].trim()));
            name = &rest[..i];
            break;
        }
    }
    let status = match (ok, directive) {
        (_, Some(_)) => TestStatus::Skip,
        (true, None) => TestStatus::Pass,
        (false, None) => TestStatus::Fail,
    };
    let filtered = matches!(directive, Some((true, reason)) if reason == PATTERN_SKIP);
    Some((tap_unescape(name.trim()), status, filtered))
}

fn yaml_scalar(value: &str) -> String {
    let v = value.trim();
    if let Some(inner) = v.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')) {
        return inner.replace("''", "'");
    }
    if let Some(inner) = v.strip_prefix('"').and_then(|v| v.strip_suffix('"')) {
        return inner
            .replace("\\\"", "\"")
            .replace("\\n", "\n")
            .replace("\\\\", "\\");
    }
    if v == "~" {
        return String::new();
    }
    v.to_string()
}

/// The YAML block after a TAP result line (`  ---` ... `  ...`): flat keys and block scalars.
struct Yaml {
    indent: usize,
    level: usize,
    fields: HashMap<String, String>,
    block_key: Option<String>,
}

impl Yaml {
    fn line(&mut self, line: &str) {
        let indent = line.len() - line.trim_start_matches(' ').len();
        let content = line.trim();
        if indent == self.indent {
            if let Some((key, value)) = content.split_once(':') {
                let value = value.trim();
                if value.starts_with('|') || value.starts_with('>') {
                    self.fields.insert(key.to_string(), String::new());
                    self.block_key = Some(key.to_string());
                } else {
                    self.fields.insert(key.to_string(), yaml_scalar(value));
                    self.block_key = None;
                }
            }
            return;
        }
        if let Some(key) = &self.block_key {
            if let Some(text) = self.fields.get_mut(key) {
                if !text.is_empty() {
                    text.push('\n');
                }
                text.push_str(line.get(self.indent + 2..).unwrap_or("").trim_end());
            }
        }
    }

    fn apply(self, levels: &mut [Vec<Entry>], root: &Path) {
        let Some(entry) = levels.get_mut(self.level).and_then(|l| l.last_mut()) else {
            return;
        };
        if let Some(ms) = self
            .fields
            .get("duration_ms")
            .and_then(|d| d.parse::<f64>().ok())
        {
            entry.duration_ms = secs_to_ms(ms / 1000.0);
        }
        if let Some(location) = self.fields.get("location") {
            entry.file = Some(relative_path(strip_line_col(location), root));
        }
        if self.fields.get("type").is_some_and(|t| t == "suite") {
            entry.leaf = false;
        }
        if entry.status == Some(TestStatus::Fail) {
            let failure_type = self
                .fields
                .get("failureType")
                .map(String::as_str)
                .unwrap_or("");
            if !entry.leaf && failure_type != "subtestsFailed" {
                entry.own_fail = true;
            }
            let mut text = self.fields.get("error").cloned().unwrap_or_default();
            if let Some(stack) = self.fields.get("stack") {
                text.push('\n');
                text.push_str(stack);
            }
            entry.message = failure_text(&text);
        }
    }
}

/// Moves tests below `level` whose parent line never came (cut-off output) into stand-in suites.
fn adopt_orphans(levels: &mut [Vec<Entry>], names: &[String], level: usize) {
    for l in (level + 1..levels.len()).rev() {
        if levels[l].is_empty() {
            continue;
        }
        let children = std::mem::take(&mut levels[l]);
        let name = names.get(l - 1).cloned().unwrap_or_default();
        levels[l - 1].push(Entry {
            name,
            children,
            ..Entry::default()
        });
    }
}

pub(super) fn parse_tap(text: &str, root: &Path) -> Vec<Entry> {
    let mut levels: Vec<Vec<Entry>> = vec![Vec::new()];
    let mut names: Vec<String> = Vec::new();
    let mut yaml: Option<Yaml> = None;
    let mut last_result: Option<(usize, usize)> = None;
    for line in text.lines() {
        let indent = line.len() - line.trim_start_matches(' ').len();
        let content = line.trim();
        if let Some(y) = yaml.as_mut() {
            if content == "..." && indent == y.indent {
                if let Some(y) = yaml.take() {
                    y.apply(&mut levels, root);
                }
                continue;
            }
            if indent >= y.indent || content.is_empty() {
                y.line(line);
                continue;
            }
            if let Some(y) = yaml.take() {
                y.apply(&mut levels, root);
            }
        }
        let level = indent / 4;
        if content == "---" {
            if let Some((result_level, result_indent)) = last_result {
                if indent == result_indent + 2 {
                    yaml = Some(Yaml {
                        indent,
                        level: result_level,
                        fields: HashMap::new(),
                        block_key: None,
                    });
                }
            }
            continue;
        }
        last_result = None;
        if let Some(name) = content.strip_prefix("# Subtest: ") {
            adopt_orphans(&mut levels, &names, level);
            names.truncate(level);
            names.resize(level, String::new());
            names.push(tap_unescape(name));
            continue;
        }
        if let Some((name, status, filtered)) = tap_result(content) {
            adopt_orphans(&mut levels, &names, level + 1);
            if levels.len() < level + 2 {
                levels.resize_with(level + 2, Vec::new);
            }
            let children = std::mem::take(&mut levels[level + 1]);
            levels[level].push(Entry {
                name,
                leaf: children.is_empty(),
                status: Some(status),
                filtered,
                children,
                ..Entry::default()
            });
            last_result = Some((level, indent));
        }
    }
    if let Some(y) = yaml.take() {
        y.apply(&mut levels, root);
    }
    adopt_orphans(&mut levels, &names, 0);
    levels.into_iter().next().unwrap_or_default()
}

pub(super) fn tap_hints(tree: &[Entry]) -> Vec<Hint> {
    fn walk(entries: &[Entry], path: &mut Vec<String>, out: &mut Vec<Hint>) {
        for entry in entries {
            path.push(entry.name.clone());
            if let Some(file) = &entry.file {
                out.push(Hint {
                    path: Some(path.clone()),
                    name: entry.name.clone(),
                    file: file.clone(),
                    fail: entry.status == Some(TestStatus::Fail),
                    own_fail: entry.own_fail,
                    message: entry.message.clone(),
                });
            }
            walk(&entry.children, path, out);
            path.pop();
        }
    }
    let mut out = Vec::new();
    walk(tree, &mut Vec::new(), &mut out);
    out
}

// ---- spec reporter

/// `adds wrong (1.500545ms)` -> `adds wrong`.
fn strip_duration(s: &str) -> &str {
    if let Some(inner) = s.strip_suffix("ms)") {
        if let Some((name, ms)) = inner.rsplit_once(" (") {
            if ms.parse::<f64>().is_ok() {
                return name;
            }
        }
    }
    s
}

/// The spec reporter's closing `✖ failing tests:` section: `test at FILE:L:C` then `✖ name` and the
/// error. It lists failed tests and suites that failed by themselves (hooks), with their file.
pub(super) fn spec_hints(stdout: &str, root: &Path) -> Vec<Hint> {
    let lines: Vec<&str> = stdout.lines().collect();
    let Some(start) = lines.iter().rposition(|l| l.trim() == "✖ failing tests:") else {
        return Vec::new();
    };
    let mut hints = Vec::new();
    let mut i = start + 1;
    while i < lines.len() {
        let Some(location) = lines[i].trim().strip_prefix("test at ") else {
            i += 1;
            continue;
        };
        let file = relative_path(strip_line_col(location.trim()), root);
        i += 1;
        let Some(name_line) = lines.get(i) else { break };
        let Some(name) = name_line.trim().strip_prefix("✖ ") else {
            continue;
        };
        let indent = name_line.len() - name_line.trim_start().len();
        i += 1;
        let mut message = Vec::new();
        while i < lines.len()
            && !lines[i].trim().is_empty()
            && !lines[i].trim_start().starts_with("test at ")
        {
            message.push(lines[i].get(indent + 2..).unwrap_or(lines[i].trim_start()));
            i += 1;
        }
        hints.push(Hint {
            path: None,
            name: strip_duration(name.trim()).to_string(),
            file,
            fail: true,
            own_fail: true,
            message: failure_text(&message.join("\n")),
        });
    }
    hints
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::*;
    use crate::gate::results::test_support::*;
    use crate::gate::results::*;
    use std::path::Path;
    use TestStatus::{Fail, Pass};

    #[test]
    fn node_junit_with_tap_output_and_tap_output_alone_give_the_same_results() {
        let tap = include_str!("../../../../tests/data/testresults/node_tap_stdout.txt");
        let with_junit = node(
            tap,
            Some(include_str!(
                "../../../../tests/data/testresults/node_tap_junit.xml"
            )),
        );
        let alone = node(tap, None);
        assert_eq!(statuses(&with_junit), node_statuses());
        assert_eq!(statuses(&alone), node_statuses());
        assert_eq!(
            message_of(
                &alone,
                "test/math.test.js::parent with subtests > sub fails"
            ),
            format!(
                "sub failed\nTestContext.<anonymous> ({root}/test/math.test.js:33:44)\n\
                 TestContext.<anonymous> ({root}/test/math.test.js:33:11)",
                root = node_root().display()
            )
        );
        assert_eq!(
            message_of(&alone, "test/syntax.test.js::[file]"),
            "test failed"
        );
    }

    #[test]
    fn node_suite_failures_missing_from_junit_are_taken_from_the_output() {
        let root = Path::new("/tmp/trp/nodeextra");
        let expected = expect(&[
            ("test/hooks.test.js::with failing hook", Fail),
            ("test/hooks.test.js::with failing hook > inner a", Fail),
            ("test/hooks.test.js::parent throws after subtests", Fail),
            (
                "test/hooks.test.js::parent throws after subtests > child passes",
                Pass,
            ),
            ("test/hooks.test.js::parent ends early > late child", Fail),
            (
                "test/hooks.test.js::name with # hash and \\ backslash",
                Pass,
            ),
            ("test/hooks.test.js::prints", Pass),
        ]);
        let spec = include_str!("../../../../tests/data/testresults/node_hooks_spec_stdout.txt");
        let junit = include_str!("../../../../tests/data/testresults/node_hooks_junit.xml");
        let with_junit = run(Runner::Node, spec, Some(junit), root);
        assert_eq!(statuses(&with_junit), expected);
        assert_eq!(
            message_of(&with_junit, "test/hooks.test.js::parent throws after subtests"),
            "Error: parent boom\n    at TestContext.<anonymous> (/tmp/trp/nodeextra/test/hooks.test.js:8:9)"
        );
        let tap = include_str!("../../../../tests/data/testresults/node_hooks_tap_stdout.txt");
        assert_eq!(statuses(&run(Runner::Node, tap, None, root)), expected);
        // Without stdout the JUnit file alone loses the suite-level failures.
        assert_eq!(
            statuses(&run(Runner::Node, "", Some(junit), root))
                .into_iter()
                .filter(|(_, s)| *s == Fail)
                .count(),
            2
        );
    }
}
