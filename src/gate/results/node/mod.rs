//! Node (`node --test`): per-test results from the JUnit reporter's file or, without one, the TAP
//! reporter on stdout, and `--test-name-pattern` selections of them.
//!
//! Node 20's JUnit file names no file for a test, and the file is half of a node id (it is what `node
//! --test` runs), so reading node's results is three jobs, one file each: this module reads the JUnit tree,
//! turns the tests into ids and selects them; [`tap`] reads what the reporters print on stdout (TAP, which
//! carries every test with its location, or the spec reporter's list of failures with theirs); [`files`]
//! puts a file on every test from those locations and, where none was printed, from the test files under
//! the checkout.

mod files;
mod tap;

use super::junit::{self, Node as XmlNode};
use super::{
    clip_message, group_in_order, relative_path, secs_to_ms, split_options, uniq, TestResult,
    TestStatus,
};
use files::{apply_hints, assign_files};
use std::path::Path;
use tap::{looks_like_tap, parse_tap, spec_hints, tap_hints};

/// What node reports for tests left out by `--test-name-pattern`.
const PATTERN_SKIP: &str = "test name does not match pattern";

/// A test or a suite (a `describe`, or a `test` with subtests).
#[derive(Debug, Default)]
struct Entry {
    name: String,
    leaf: bool,
    status: Option<TestStatus>,
    /// A suite that failed by itself (hook, code after its subtests), not only through a child.
    own_fail: bool,
    duration_ms: Option<u64>,
    message: Option<String>,
    /// The file, relative to the checkout, when the output says it.
    file: Option<String>,
    /// Skipped only because of `--test-name-pattern`.
    filtered: bool,
    children: Vec<Entry>,
}

/// A failure location printed on stdout.
struct Hint {
    /// The full name path (TAP) or only the test's own name (spec reporter).
    path: Option<Vec<String>>,
    name: String,
    file: String,
    fail: bool,
    own_fail: bool,
    message: Option<String>,
}

pub(super) fn parse(stdout: &str, junit: Option<&str>, root: &Path) -> Vec<TestResult> {
    let tap = looks_like_tap(stdout);
    let tree = match junit {
        Some(xml) => {
            let mut tree = from_junit(junit::read(xml));
            let hints = if tap {
                tap_hints(&parse_tap(stdout, root))
            } else {
                spec_hints(stdout, root)
            };
            apply_hints(&mut tree, hints);
            tree
        }
        None if tap => parse_tap(stdout, root),
        None => return Vec::new(),
    };
    let files = assign_files(&tree, root);
    let mut out = Vec::new();
    for (entry, file) in tree.iter().zip(files) {
        let file = file.unwrap_or_default();
        if file_test(&entry.name, root).is_some() {
            out.push(TestResult {
                id: format!("{file}::[file]"),
                status: entry.status.unwrap_or(TestStatus::Fail),
                duration_ms: entry.duration_ms,
                message: entry.message.clone(),
            });
            continue;
        }
        emit(entry, &mut Vec::new(), &file, &mut out);
    }
    out
}

fn emit<'a>(entry: &'a Entry, path: &mut Vec<&'a str>, file: &str, out: &mut Vec<TestResult>) {
    path.push(&entry.name);
    if entry.leaf {
        if !entry.filtered {
            out.push(TestResult {
                id: format!("{file}::{}", path.join(" > ")),
                status: entry.status.unwrap_or(TestStatus::Pass),
                duration_ms: entry.duration_ms,
                message: entry.message.clone(),
            });
        }
    } else {
        if entry.own_fail {
            out.push(TestResult {
                id: format!("{file}::{}", path.join(" > ")),
                status: TestStatus::Fail,
                duration_ms: entry.duration_ms,
                message: entry.message.clone(),
            });
        }
        for child in &entry.children {
            emit(child, path, file, out);
        }
    }
    path.pop();
}

/// A file-level test: node names it after the file's absolute path (load error, early exit).
fn file_test(name: &str, root: &Path) -> Option<String> {
    let script = [".js", ".cjs", ".mjs", ".jsx", ".ts", ".cts", ".mts", ".tsx"]
        .iter()
        .any(|ext| name.ends_with(ext));
    if !script {
        return None;
    }
    let bytes = name.as_bytes();
    let windows = bytes.len() > 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':';
    (name.starts_with('/') || name.starts_with("file://") || windows)
        .then(|| relative_path(name, root))
}

/// Node's error text without its own (`node:internal`) stack frames.
fn failure_text(text: &str) -> Option<String> {
    let kept: Vec<&str> = text
        .lines()
        .filter(|l| {
            let t = l.trim_start();
            !(t.contains("(node:") || t.starts_with("at node:") || t.starts_with("node:"))
        })
        .collect();
    clip_message(&kept.join("\n"))
}

fn from_junit(nodes: Vec<XmlNode>) -> Vec<Entry> {
    nodes
        .into_iter()
        .map(|node| match node {
            XmlNode::Suite { name, children } => Entry {
                name,
                children: from_junit(children),
                ..Entry::default()
            },
            XmlNode::Case(case) => {
                let message = if case.status == TestStatus::Fail {
                    failure_text(&case.body)
                        .or_else(|| case.message_attr.as_deref().and_then(clip_message))
                } else {
                    None
                };
                Entry {
                    filtered: case.status == TestStatus::Skip
                        && case.skip_message.as_deref() == Some(PATTERN_SKIP),
                    name: case.name,
                    leaf: true,
                    status: Some(case.status),
                    duration_ms: case.time.and_then(secs_to_ms),
                    message,
                    ..Entry::default()
                }
            }
        })
        .collect()
}

// ---- selection

/// Node options that take a separate value.
const VALUE_OPTIONS: &[&str] = &[
    "--test-reporter",
    "--test-reporter-destination",
    "--test-name-pattern",
    "--test-skip-pattern",
    "--test-concurrency",
    "--test-timeout",
    "--test-shard",
    "--test-coverage-include",
    "--test-coverage-exclude",
    "--test-coverage-branches",
    "--test-coverage-functions",
    "--test-coverage-lines",
    "--import",
    "--require",
    "-r",
    "--loader",
    "--experimental-loader",
    "--env-file",
    "--conditions",
    "-C",
    "--input-type",
    "--inspect-port",
    "--stack-trace-limit",
    "--title",
    "--watch-path",
    "--experimental-config-file",
];

/// A JavaScript `RegExp` source matching `s` literally.
fn regex_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if "\\^$.*+?()[]{}|/".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

pub(super) fn select(argv: &[String], ids: &[String]) -> Option<Vec<Vec<String>>> {
    let anchor = argv.iter().position(|a| a == "--test")?;
    let option = |arg: &str| arg.split('=').next().unwrap_or(arg).to_string();
    let (base, files) = split_options(
        argv,
        anchor,
        |arg| VALUE_OPTIONS.contains(&option(arg).as_str()),
        |arg| option(arg) == "--test-name-pattern",
    );
    let mut pairs = Vec::new();
    for id in ids {
        let (file, name) = id.split_once("::")?;
        if name.is_empty() {
            return None;
        }
        pairs.push((file.to_string(), name.to_string()));
    }
    let mut commands = Vec::new();
    for (file, names) in group_in_order(pairs) {
        let mut cmd = base.clone();
        if !names.iter().any(|n| n == "[file]") {
            let tops = uniq(names.iter().map(|n| n.split(" > ").next().unwrap_or(n)));
            cmd.extend(
                tops.iter()
                    .map(|top| format!("--test-name-pattern=^{}$", regex_escape(top))),
            );
        }
        if file.is_empty() {
            cmd.extend(files.iter().cloned());
        } else {
            cmd.push(file);
        }
        commands.push(cmd);
    }
    Some(commands)
}

/// The samples of the node tests: a copy of the project they were captured in, and the results all its
/// reporters must agree on.
#[cfg(test)]
mod fixtures {
    use crate::gate::results::test_support::*;
    use crate::gate::results::{Runner, TestResult, TestStatus};
    use std::path::{Path, PathBuf};
    use TestStatus::{Fail, Pass, Skip};

    pub(super) fn node_root() -> PathBuf {
        Path::new(DATA).join("node_project")
    }

    /// A sample captured in /tmp/trp/nodeproj, moved to the copy of that project kept with the samples.
    pub(super) fn relocated(sample: &str) -> String {
        sample.replace("/tmp/trp/nodeproj", &node_root().to_string_lossy())
    }

    pub(super) fn node(stdout: &str, junit: Option<&str>) -> Vec<TestResult> {
        let junit = junit.map(relocated);
        run(
            Runner::Node,
            &relocated(stdout),
            junit.as_deref(),
            &node_root(),
        )
    }

    pub(super) fn node_statuses() -> Vec<(String, TestStatus)> {
        expect(&[
            ("test/exits.test.js::[file]", Fail),
            ("test/math.test.js::adds", Pass),
            ("test/math.test.js::adds wrong", Fail),
            ("test/math.test.js::skipped one", Skip),
            ("test/math.test.js::todo one", Skip),
            ("test/math.test.js::Calculator > multiplies", Pass),
            (
                "test/math.test.js::Calculator > division > divides (evenly)",
                Pass,
            ),
            (
                "test/math.test.js::Calculator > division > throws on zero?",
                Fail,
            ),
            ("test/math.test.js::parent with subtests > sub ok", Pass),
            ("test/math.test.js::parent with subtests > sub fails", Fail),
            ("test/other.test.mjs::adds", Pass),
            ("test/other.test.mjs::async rejects", Fail),
            ("test/syntax.test.js::[file]", Fail),
        ])
    }
}

#[cfg(test)]
mod tests {
    use super::fixtures::*;
    use crate::gate::results::test_support::*;
    use crate::gate::results::*;
    use TestStatus::Pass;

    #[test]
    fn node_run_filtered_by_name_pattern_reports_only_the_selected_tests() {
        let results = node(
            include_str!("../../../../tests/data/testresults/node_selected_stdout.txt"),
            Some(include_str!(
                "../../../../tests/data/testresults/node_selected_junit.xml"
            )),
        );
        assert_eq!(
            results,
            vec![
                result("test/math.test.js::adds", Pass, Some(1), None),
                result("test/other.test.mjs::adds", Pass, Some(1), None),
            ]
        );
    }

    #[test]
    fn node_selection_runs_each_file_with_patterns_for_its_top_level_tests() {
        let cmd = argv(&[
            "node",
            "--test",
            "--test-reporter=spec",
            "--test-reporter-destination=stdout",
            "--test-reporter",
            "junit",
            "--test-reporter-destination={junit}",
            "--test-name-pattern=old",
            "--test-name-pattern",
            "older",
            "test/",
        ]);
        let base = &cmd[..7];
        let with = |extra: &[&str]| [base, &argv(extra)[..]].concat();
        let selected = ids(&[
            "test/math.test.js::adds wrong",
            "test/other.test.mjs::async rejects",
            "test/math.test.js::Calculator > division > throws on zero?",
            "test/math.test.js::Calculator > multiplies",
            "test/exits.test.js::[file]",
            "::dynamic (1+1) / 2?",
        ]);
        assert_eq!(
            select_argv(Runner::Node, &cmd, &selected),
            Some(vec![
                with(&[
                    "--test-name-pattern=^adds wrong$",
                    "--test-name-pattern=^Calculator$",
                    "test/math.test.js"
                ]),
                with(&["--test-name-pattern=^async rejects$", "test/other.test.mjs"]),
                with(&["test/exits.test.js"]),
                with(&[
                    "--test-name-pattern=^dynamic \\(1\\+1\\) \\/ 2\\?$",
                    "test/"
                ]),
            ])
        );
        assert_eq!(
            select_argv(Runner::Node, &argv(&["npm", "test"]), &selected),
            None
        );
    }
}
