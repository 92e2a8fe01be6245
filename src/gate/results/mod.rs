//! Per-test results read from what a test runner left behind, and commands that re-run a subset of them.
//!
//! # Why ids look the way they do
//!
//! The gate compares runs of one step (head against base, a first run against a rerun), so an id has to be
//! the same in every run of the same checkout, has to name one test across everything the step runs (a
//! step runs many crates, packages or files), and has to carry what [`select_argv`] needs to run that test
//! again. Each runner's id is therefore its own selection handle plus the smallest scope that makes it
//! unique:
//!
//! | runner | id | example |
//! |---|---|---|
//! | Cargo | `{binstem}@{path}::{libtest name}` | `mycrate@src/lib.rs::tests::adds`, `cli@tests/cli.rs::runs_binary` |
//! | Cargo doc-tests | `{crate}@doc::{rustdoc name}` | `mycrate@doc::src/lib.rs - add (line 3)` |
//! | Cargo build failure | `{crate}@[build]` | `brokencrate@[build]` |
//! | Go | `{ImportPath}::{Test}[/{subtest}...]` | `example.com/m/calc::TestAddCases/negative_numbers` |
//! | Go, not a test | `{ImportPath}::[build]`, `{ImportPath}::[package]` | a package that does not compile; a test binary that exits or panics outside any test |
//! | Pytest | the pytest node id | `tests/test_calc.py::TestGroup::test_in_class`, `tests/test_broken.py` (collection error) |
//! | Node | `{file}::{suite > ... > test}` | `test/math.test.js::Calculator > division > throws on zero?` |
//! | Node, not a test | `{file}::[file]` | a test file that does not load or exits early |
//!
//! * Cargo: the same test path exists in several test binaries of one package (lib, each bin, each
//!   `tests/*.rs`), and the same binary name in several members of a workspace; the deps binary name
//!   without its `-hash` (which changes with flags and toolchains) plus the target's source path, both
//!   from cargo's `Running ...` line, tell them apart. The part after the first `::` is the exact libtest
//!   name given to `--exact`.
//! * Go: the package is what `go test` selects and the test name (as Go prints it, spaces already turned
//!   into `_`) is what `-run` matches level by level.
//! * Pytest: the node id is what pytest prints and what it accepts back on the command line.
//! * Node: the file is what `node --test` runs and the name path is what `--test-name-pattern` sees.
//!
//! # Limitations (more at [`Runner`] and [`select_argv`])
//!
//! * Cargo prints its `Running ...` / `Doc-tests ...` lines on **stderr**. When only stdout is given, the
//!   binary is unknown and ids are the bare libtest names (`tests::adds`, `src/lib.rs - add (line 3)`):
//!   still selectable, but tests of the same name in two binaries merge. Pass stdout and stderr merged
//!   (`2>&1`) to get qualified ids. Build failures (`{crate}@[build]`) are likewise only seen on stderr.
//! * Output that a test prints and that looks exactly like a runner's own line (`test x ... ok` for
//!   libtest, `--- FAIL: TestX` for Go's test2json) can be mistaken for a result. For libtest a fake
//!   failure is dropped when the binary's final `failures:` list does not name it; a fake pass stays.
//! * Node 20's JUnit reporter writes no file attribute: how the file is found is told at [`Runner::Node`].
//!
//! # Layout
//!
//! Each runner's output format has its own reader and its own selection syntax, and they share nothing but
//! the result types and the helpers below, so each runner is one module: `libtest` (cargo), `gotest`,
//! `pytest` and `node`; `junit` reads the JUnit XML that pytest and node both write.

use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use std::path::Path;

pub use gotest::events_as_text as go_events_as_text;
pub use input::{read_lossy, read_output};

mod gotest;
mod input;
mod junit;
mod libtest;
mod node;
mod pytest;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TestStatus {
    Pass,
    Fail,
    Skip,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestResult {
    pub id: String,
    pub status: TestStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// First lines of the failure message, at most ~2 KB, when the runner gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// How to read a test step's results.
///
/// * `Cargo`: libtest's human output (`cargo test`), stdout, ideally merged with stderr (see the module
///   notes). Doc-tests are parsed but cannot be selected.
/// * `Go`: `go test -json` events on stdout (Go 1.19 and later), plus the plain `FAIL pkg [build failed]`
///   lines that `go test` prints there for packages that do not build.
/// * `Pytest`: the JUnit XML file (`--junitxml={junit}`; xunit1 carries the `file` attribute, xunit2 does
///   not and the file is then found under the checkout). Stdout is not read.
/// * `Node`: the JUnit XML file of `--test-reporter=junit`, or the TAP reporter on stdout when there is no
///   JUnit file. Node 20's JUnit has no file attribute: the file of a test is taken from the failure
///   locations printed on stdout (the spec reporter's `failing tests:` section, or TAP's `location:`), from
///   file-level failures, and otherwise by finding which test file under the checkout contains the
///   top-level test's name as a string literal, using the fact that node reports files one after the
///   other in sorted order. A test whose file cannot be found gets the id `::{name}`; its selection then
///   runs the step's own file arguments.
/// * `Generic`: no per-test results.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Runner {
    Cargo,
    Go,
    Pytest,
    Node,
    Generic,
}

/// What one run of a test command left behind.
pub struct RunOutput<'a> {
    /// The command's stdout (stderr is not given).
    pub stdout: &'a str,
    /// Contents of the JUnit XML file, when the runner writes one.
    pub junit: Option<&'a str>,
    /// The directory the command ran in (the repo checkout).
    pub root: &'a Path,
}

/// Parsed results, deduplicated by id (if an id appears twice, a Fail wins over Pass/Skip).
/// Generic returns an empty vector. Malformed or truncated input never panics: parse what you can.
///
/// Results come in the order the runner reported them (first appearance of each id).
pub fn parse(runner: Runner, out: &RunOutput) -> Vec<TestResult> {
    let results = match runner {
        Runner::Cargo => libtest::parse(out.stdout),
        Runner::Go => gotest::parse(out.stdout),
        Runner::Pytest => match out.junit {
            Some(xml) => pytest::parse(xml, out.root),
            None => Vec::new(),
        },
        Runner::Node => node::parse(out.stdout, out.junit, out.root),
        Runner::Generic => Vec::new(),
    };
    dedup(results)
}

/// Commands that run only the given test ids (ids as produced by `parse` for this runner), derived from the
/// step's full argv. Several commands when the runner needs one per package/file. None for Generic or when the
/// ids cannot be selected. `{junit}` placeholders in argv must be preserved as they are (the caller substitutes).
///
/// Per runner:
///
/// * Cargo: one command, the argv with `-- --exact NAME...` appended, or `NAME... --exact` after the
///   existing libtest arguments when the argv already has `--`. Filters already in the argv stay (they
///   can only add tests). Doc-tests cannot be selected: cargo passes the libtest arguments to rustdoc
///   split at whitespace, so a doc-test name (`src/lib.rs - add (line 3)`) never matches with `--exact`
///   (checked with cargo 1.95, editions 2021 and 2024), and its line number moves with any edit anyway.
///   They are left out of the command, which therefore does not report them; a selection of doc-tests
///   only, or one with a `[build]` id, gives None. Callers should check that every selected id shows up
///   in the rerun.
/// * Go: one command per package: the argv without its package patterns and without any `-run`, then
///   `-run REGEX PACKAGE` (before `-args`, if any). Top-level tests give `^(TestA|TestB)$`, a subtest
///   `^TestA$/^sub$` (joined with `|`, which Go splits at the top level); a subtest whose parent is also
///   selected is covered by the parent. `[build]` and `[package]` ids run the whole package.
/// * Pytest: one command, the argv without its positional arguments, then the node ids. Options of the
///   argv that take a separate value are recognised from a list of pytest's (and common plugins') options;
///   an unknown option's separate value would be taken for a positional argument, so write unknown
///   options in the glued forms `--opt=value` or `-oX=Y`.
/// * Node: one command per file: the argv without the positional arguments after `--test` and without
///   any `--test-name-pattern`, then `--test-name-pattern=^NAME$` per selected top-level test and the file.
///   Nested tests are selected through their **top-level** test or suite: in node 20 a matching `describe`
///   or parent `test` runs everything inside it, and a subtest made with `t.test` never runs unless its
///   parent matches, so exact nested selection is not possible without knowing the kind of each level.
///   Tests that do not match are reported by node as skipped with "test name does not match pattern";
///   [`parse`] drops those. A `[file]` id runs its whole file; ids with an unknown file (`::name`) keep
///   the argv's own file arguments.
pub fn select_argv(runner: Runner, argv: &[String], ids: &[String]) -> Option<Vec<Vec<String>>> {
    if ids.is_empty() {
        return None;
    }
    match runner {
        Runner::Cargo => libtest::select(argv, ids).map(|cmd| vec![cmd]),
        Runner::Go => gotest::select(argv, ids),
        Runner::Pytest => pytest::select(argv, ids).map(|cmd| vec![cmd]),
        Runner::Node => node::select(argv, ids),
        Runner::Generic => None,
    }
}

// ---------------------------------------------------------------------------------------------------------
// Shared helpers

const MESSAGE_LIMIT: usize = 2048;

/// How much output of one test or package is collected before it is cut into a message.
const OUTPUT_LIMIT: usize = 64 * 1024;

/// Appends `text` unless `buf` already holds [`OUTPUT_LIMIT`] bytes.
fn push_capped(buf: &mut String, text: &str) {
    if buf.len() < OUTPUT_LIMIT {
        buf.push_str(text);
    }
}

/// Trims blank lines around `text` and cuts it to about [`MESSAGE_LIMIT`] bytes (at a line end when one
/// is near). None when nothing is left.
fn clip_message(text: &str) -> Option<String> {
    let first = text.find(|c: char| !c.is_whitespace())?;
    let start = text[..first].rfind('\n').map_or(0, |p| p + 1);
    let text = text[start..].trim_end();
    if text.len() <= MESSAGE_LIMIT {
        return Some(text.to_string());
    }
    let mut end = MESSAGE_LIMIT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let cut = match text[..end].rfind('\n') {
        Some(p) if p > MESSAGE_LIMIT / 2 => p,
        _ => end,
    };
    Some(format!("{}\n[...]", text[..cut].trim_end()))
}

fn secs_to_ms(secs: f64) -> Option<u64> {
    (secs.is_finite() && secs >= 0.0).then(|| (secs * 1000.0).round() as u64)
}

fn status_rank(status: TestStatus) -> u8 {
    match status {
        TestStatus::Skip => 0,
        TestStatus::Pass => 1,
        TestStatus::Fail => 2,
    }
}

/// Keeps the first position of each id; a worse status (Fail > Pass > Skip) replaces a better one.
fn dedup(results: Vec<TestResult>) -> Vec<TestResult> {
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut out: Vec<TestResult> = Vec::with_capacity(results.len());
    for result in results {
        match index.get(&result.id) {
            Some(&i) => {
                let kept = &mut out[i];
                if status_rank(result.status) > status_rank(kept.status) {
                    *kept = result;
                } else if result.status == kept.status {
                    if kept.message.is_none() {
                        kept.message = result.message;
                    }
                    if kept.duration_ms.is_none() {
                        kept.duration_ms = result.duration_ms;
                    }
                }
            }
            None => {
                index.insert(result.id.clone(), out.len());
                out.push(result);
            }
        }
    }
    out
}

/// The items in order, without repeats.
fn uniq<T: AsRef<str>>(items: impl IntoIterator<Item = T>) -> Vec<String> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for item in items {
        let item = item.as_ref();
        if seen.insert(item.to_string()) {
            out.push(item.to_string());
        }
    }
    out
}

/// Groups `(key, value)` pairs by key, keys in order of first appearance.
fn group_in_order(pairs: impl IntoIterator<Item = (String, String)>) -> Vec<(String, Vec<String>)> {
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    for (key, value) in pairs {
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, values)) => values.push(value),
            None => groups.push((key, vec![value])),
        }
    }
    groups
}

/// `path` relative to `root`, with `/` separators (`file://` URLs and `./` accepted).
fn relative_path(path: &str, root: &Path) -> String {
    let path = path.strip_prefix("file://").unwrap_or(path);
    let p = Path::new(path);
    if p.is_absolute() {
        if let Ok(rel) = p.strip_prefix(root) {
            return rel.to_string_lossy().replace('\\', "/");
        }
        if let Ok(canonical) = root.canonicalize() {
            if let Ok(rel) = p.strip_prefix(&canonical) {
                return rel.to_string_lossy().replace('\\', "/");
            }
        }
        return path.replace('\\', "/");
    }
    path.strip_prefix("./").unwrap_or(path).replace('\\', "/")
}

/// `file.js:12:5` -> `file.js` (only digits are taken for line and column).
fn strip_line_col(location: &str) -> &str {
    let mut s = location;
    for _ in 0..2 {
        match s.rsplit_once(':') {
            Some((head, tail)) if !tail.is_empty() && tail.bytes().all(|b| b.is_ascii_digit()) => {
                s = head
            }
            _ => break,
        }
    }
    s
}

/// Splits `argv` into what stays (everything through `anchor`, then the options after it, with the
/// separate values of the options in `takes_value`) and the positional arguments after `anchor`.
/// Options for which `drop` says true are left out together with their value. Everything after a `--`
/// counts as positional.
fn split_options(
    argv: &[String],
    anchor: usize,
    takes_value: impl Fn(&str) -> bool,
    drop: impl Fn(&str) -> bool,
) -> (Vec<String>, Vec<String>) {
    let mut kept: Vec<String> = argv[..=anchor].to_vec();
    let mut positional = Vec::new();
    let mut i = anchor + 1;
    while i < argv.len() {
        let arg = &argv[i];
        if arg == "--" {
            positional.extend(argv[i + 1..].iter().cloned());
            break;
        }
        if arg.starts_with('-') && arg.len() > 1 {
            let separate_value = !arg.contains('=') && takes_value(arg);
            let step = if separate_value { 2 } else { 1 };
            if !drop(arg) {
                kept.extend(argv[i..(i + step).min(argv.len())].iter().cloned());
            }
            i += step;
            continue;
        }
        positional.push(arg.clone());
        i += 1;
    }
    (kept, positional)
}

/// What the tests of every runner module share: samples, a parse shortcut and result builders.
#[cfg(test)]
mod test_support {
    use super::*;
    use std::path::Path;

    pub(super) const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/testresults");

    pub(super) fn run(
        runner: Runner,
        stdout: &str,
        junit: Option<&str>,
        root: &Path,
    ) -> Vec<TestResult> {
        parse(
            runner,
            &RunOutput {
                stdout,
                junit,
                root,
            },
        )
    }

    /// (id, status) of each result.
    pub(super) fn statuses(results: &[TestResult]) -> Vec<(String, TestStatus)> {
        results.iter().map(|r| (r.id.clone(), r.status)).collect()
    }

    pub(super) fn expect(pairs: &[(&str, TestStatus)]) -> Vec<(String, TestStatus)> {
        pairs.iter().map(|(id, s)| (id.to_string(), *s)).collect()
    }

    pub(super) fn message_of<'a>(results: &'a [TestResult], id: &str) -> &'a str {
        results
            .iter()
            .find(|r| r.id == id)
            .and_then(|r| r.message.as_deref())
            .unwrap_or("<none>")
    }

    pub(super) fn argv(args: &[&str]) -> Vec<String> {
        args.iter().map(|a| a.to_string()).collect()
    }

    pub(super) fn ids(ids: &[&str]) -> Vec<String> {
        argv(ids)
    }

    pub(super) fn result(
        id: &str,
        status: TestStatus,
        duration_ms: Option<u64>,
        message: Option<&str>,
    ) -> TestResult {
        TestResult {
            id: id.to_string(),
            status,
            duration_ms,
            message: message.map(str::to_string),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::test_support::*;
    use super::*;
    use TestStatus::{Fail, Pass, Skip};

    #[test]
    fn duplicate_ids_keep_their_first_place_and_a_failure_wins() {
        let results = dedup(vec![
            result("a", Pass, Some(1), None),
            result("b", Skip, None, None),
            result("a", Fail, Some(2), Some("boom")),
            result("b", Pass, None, None),
            result("a", Pass, Some(3), None),
        ]);
        assert_eq!(
            results,
            vec![
                result("a", Fail, Some(2), Some("boom")),
                result("b", Pass, None, None)
            ]
        );
    }

    #[test]
    fn messages_are_trimmed_and_cut_to_about_two_kilobytes_at_a_line_end() {
        assert_eq!(
            clip_message("\n\n  \n  indented first\nsecond\n\n"),
            Some("  indented first\nsecond".into())
        );
        assert_eq!(clip_message(" \n\t"), None);
        let long = "é123456789\n".repeat(400);
        let clipped = clip_message(&long).unwrap_or_default();
        assert!(clipped.len() <= MESSAGE_LIMIT + 10, "{}", clipped.len());
        assert!(clipped.ends_with("é123456789\n[...]"), "{clipped}");
    }

    #[test]
    fn the_generic_runner_reports_no_tests_and_selects_nothing() {
        let out = RunOutput {
            stdout: "test a ... ok\n",
            junit: Some("<testcase name='x'/>"),
            root: Path::new("."),
        };
        assert_eq!(parse(Runner::Generic, &out), vec![]);
        assert_eq!(
            select_argv(Runner::Generic, &argv(&["make", "test"]), &ids(&["x"])),
            None
        );
    }

    #[test]
    fn an_empty_selection_gives_no_command_for_any_runner() {
        for runner in [Runner::Cargo, Runner::Go, Runner::Pytest, Runner::Node] {
            assert_eq!(
                select_argv(
                    runner,
                    &argv(&["cargo", "go", "test", "pytest", "--test"]),
                    &[]
                ),
                None
            );
        }
    }

    /// Every sample, cut at many places and with its lines shuffled, through every parser.
    #[test]
    fn no_parser_panics_on_cut_or_garbled_input() {
        let samples = [
            include_str!("../../../tests/data/testresults/cargo_merged_nocapture_serial.txt"),
            include_str!("../../../tests/data/testresults/cargo_stdout_only.txt"),
            include_str!("../../../tests/data/testresults/go_json_stdout.jsonl"),
            include_str!("../../../tests/data/testresults/go_json_build_failure_merged.jsonl"),
            include_str!("../../../tests/data/testresults/pytest_xunit1.xml"),
            include_str!("../../../tests/data/testresults/node_spec_junit.xml"),
            include_str!("../../../tests/data/testresults/node_spec_stdout.txt"),
            include_str!("../../../tests/data/testresults/node_tap_stdout.txt"),
            "test \ntest  ... \n---- \nrunning 1 test\n ... ok\n{\"Action\":\"pass\"}\n{\"Test\":\"x\"}\nFAIL\n# \n",
            "<testcase><failure><testsuite><testcase name='a' time='nan'><skipped/></testcase>",
            "TAP version 13\n    # Subtest: \n    not ok\n  ---\n  location: ':1:'\n# Subtest: x\nok 1 - # SKIP\nnot ok 2 - a # TODO\n",
            "✖ failing tests:\ntest at \n✖ \ntest at x.js:1:1\n",
        ];
        let root = Path::new(DATA).join("node_project");
        for sample in samples {
            let mut cuts: Vec<&str> = (0..sample.len())
                .step_by(37)
                .filter(|&i| sample.is_char_boundary(i))
                .map(|i| &sample[..i])
                .collect();
            let mut lines: Vec<&str> = sample.lines().collect();
            lines.reverse();
            let reversed = lines.join("\n");
            let interleaved: String = sample
                .lines()
                .step_by(2)
                .chain(sample.lines().skip(1).step_by(2))
                .collect();
            cuts.push(&reversed);
            cuts.push(&interleaved);
            for text in cuts {
                for runner in [Runner::Cargo, Runner::Go, Runner::Pytest, Runner::Node] {
                    let _ = run(runner, text, Some(text), &root);
                    let _ = run(runner, text, None, &root);
                }
            }
        }
    }
}
