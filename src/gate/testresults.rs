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

use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use std::path::Path;

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
        Runner::Cargo => cargo::parse(out.stdout),
        Runner::Go => go::parse(out.stdout),
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
        Runner::Cargo => cargo::select(argv, ids).map(|cmd| vec![cmd]),
        Runner::Go => go::select(argv, ids),
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

// ---------------------------------------------------------------------------------------------------------
// JUnit XML (pytest, node)

mod junit {
    use super::TestStatus;
    use quick_xml::events::{BytesStart, Event};
    use quick_xml::Reader;

    pub(super) enum Node {
        Suite { name: String, children: Vec<Node> },
        Case(Case),
    }

    pub(super) struct Case {
        pub name: String,
        pub classname: String,
        pub file: Option<String>,
        pub time: Option<f64>,
        pub status: TestStatus,
        pub message_attr: Option<String>,
        pub body: String,
        pub skip_message: Option<String>,
    }

    fn attr(e: &BytesStart, key: &[u8]) -> Option<String> {
        e.attributes()
            .flatten()
            .find(|a| a.key.local_name().as_ref() == key)
            .map(|a| {
                a.unescape_value()
                    .map(|v| v.into_owned())
                    .unwrap_or_else(|_| String::from_utf8_lossy(&a.value).into_owned())
            })
    }

    fn new_case(e: &BytesStart) -> Case {
        Case {
            name: attr(e, b"name").unwrap_or_default(),
            classname: attr(e, b"classname").unwrap_or_default(),
            file: attr(e, b"file").filter(|f| !f.is_empty()),
            time: attr(e, b"time").and_then(|t| t.trim().parse().ok()),
            status: TestStatus::Pass,
            message_attr: None,
            body: String::new(),
            skip_message: None,
        }
    }

    /// Applies a `<failure>`, `<error>` or `<skipped>` child; true when its text is worth keeping.
    fn mark(case: &mut Case, e: &BytesStart) -> bool {
        match e.local_name().as_ref() {
            b"failure" | b"error" => {
                case.status = TestStatus::Fail;
                if let Some(m) = attr(e, b"message").filter(|m| !m.trim().is_empty()) {
                    match &mut case.message_attr {
                        Some(existing) => {
                            existing.push('\n');
                            existing.push_str(&m);
                        }
                        None => case.message_attr = Some(m),
                    }
                }
                if !case.body.is_empty() {
                    case.body.push('\n');
                }
                true
            }
            b"skipped" => {
                if case.status != TestStatus::Fail {
                    case.status = TestStatus::Skip;
                }
                case.skip_message = attr(e, b"message");
                false
            }
            _ => false,
        }
    }

    fn push(stack: &mut [(String, Vec<Node>)], top: &mut Vec<Node>, node: Node) {
        match stack.last_mut() {
            Some((_, children)) => children.push(node),
            None => top.push(node),
        }
    }

    /// The `<testsuite>`/`<testcase>` tree, in document order. Stops at the first XML error and keeps
    /// what was read (a cut-off test case is kept only when it had already failed).
    pub(super) fn read(xml: &str) -> Vec<Node> {
        let mut reader = Reader::from_str(xml);
        let mut stack: Vec<(String, Vec<Node>)> = Vec::new();
        let mut top: Vec<Node> = Vec::new();
        let mut case: Option<Case> = None;
        let mut in_text = false;
        while let Ok(event) = reader.read_event() {
            match event {
                Event::Start(e) => match e.local_name().as_ref() {
                    b"testsuite" => stack.push((attr(&e, b"name").unwrap_or_default(), Vec::new())),
                    b"testcase" => case = Some(new_case(&e)),
                    _ => {
                        if let Some(c) = case.as_mut() {
                            in_text = mark(c, &e);
                        }
                    }
                },
                Event::Empty(e) => match e.local_name().as_ref() {
                    b"testsuite" => {
                        let name = attr(&e, b"name").unwrap_or_default();
                        push(
                            &mut stack,
                            &mut top,
                            Node::Suite {
                                name,
                                children: Vec::new(),
                            },
                        );
                    }
                    b"testcase" => push(&mut stack, &mut top, Node::Case(new_case(&e))),
                    _ => {
                        if let Some(c) = case.as_mut() {
                            mark(c, &e);
                        }
                    }
                },
                Event::Text(t) => {
                    if let (true, Some(c)) = (in_text, case.as_mut()) {
                        match t.unescape() {
                            Ok(text) => c.body.push_str(&text),
                            Err(_) => c.body.push_str(&String::from_utf8_lossy(&t)),
                        }
                    }
                }
                Event::CData(t) => {
                    if let (true, Some(c)) = (in_text, case.as_mut()) {
                        c.body.push_str(&String::from_utf8_lossy(&t));
                    }
                }
                Event::End(e) => match e.local_name().as_ref() {
                    b"testcase" => {
                        in_text = false;
                        if let Some(c) = case.take() {
                            push(&mut stack, &mut top, Node::Case(c));
                        }
                    }
                    b"testsuite" => {
                        if let Some((name, children)) = stack.pop() {
                            push(&mut stack, &mut top, Node::Suite { name, children });
                        }
                    }
                    _ => in_text = false,
                },
                Event::Eof => break,
                _ => {}
            }
        }
        if let Some(c) = case.take().filter(|c| c.status == TestStatus::Fail) {
            push(&mut stack, &mut top, Node::Case(c));
        }
        while let Some((name, children)) = stack.pop() {
            push(&mut stack, &mut top, Node::Suite { name, children });
        }
        top
    }
}

// ---------------------------------------------------------------------------------------------------------
// Cargo (libtest human output)

mod cargo {
    use super::{clip_message, uniq, TestResult, TestStatus};
    use std::collections::{HashMap, HashSet};

    pub(super) const NO_RESULT_FOR_TESTS: &str =
        "no result reported: the test binary stopped while this test was running (crash, abort or timeout)";

    pub(super) fn parse(stdout: &str) -> Vec<TestResult> {
        let mut parser = Parser::default();
        for line in stdout.lines() {
            parser.line(line);
        }
        parser.finish_block();
        parser.results
    }

    /// One `running N tests` ... `test result:` section, i.e. one test binary.
    #[derive(Default)]
    struct Block {
        prefix: Option<String>,
        seen: Vec<(String, TestStatus, Option<u64>)>,
        failures_list: Vec<String>,
        has_list: bool,
        ended_ok: bool,
        outputs: HashMap<String, Vec<String>>,
        panics: HashMap<String, String>,
    }

    #[derive(Default)]
    enum Mode {
        #[default]
        Tests,
        FailuresHeader,
        FailureOutput(String),
        FailureList,
        Successes,
    }

    #[derive(Default)]
    struct Parser {
        prefix: Option<String>,
        block: Option<Block>,
        pending: Option<String>,
        mode: Mode,
        panic: Option<(String, Vec<String>)>,
        build_lines: Vec<String>,
        results: Vec<TestResult>,
    }

    enum Outcome {
        Done(TestStatus, Option<u64>),
        Started,
    }

    impl Parser {
        fn line(&mut self, line: &str) {
            self.track_panic(line);
            if let Some(prefix) = header(line) {
                self.finish_block();
                self.prefix = Some(prefix);
                self.build_lines.clear();
                return;
            }
            if is_running_line(line) {
                self.finish_block();
                self.block = Some(Block {
                    prefix: self.prefix.clone(),
                    ..Block::default()
                });
                return;
            }
            let Some(block) = self.block.as_mut() else {
                self.outside_block(line);
                return;
            };
            if let Some(summary) = line.strip_prefix("test result: ") {
                block.ended_ok = summary.starts_with("ok");
                self.finish_block();
                return;
            }
            if line == "failures:" {
                self.mode = Mode::FailuresHeader;
                return;
            }
            if line == "successes:" {
                self.mode = Mode::Successes;
                return;
            }
            match std::mem::take(&mut self.mode) {
                Mode::FailureOutput(name) => {
                    match stdout_header(line) {
                        Some(next) => self.mode = Mode::FailureOutput(next),
                        None => {
                            block
                                .outputs
                                .entry(name.clone())
                                .or_default()
                                .push(line.to_string());
                            self.mode = Mode::FailureOutput(name);
                        }
                    }
                    return;
                }
                Mode::FailuresHeader | Mode::FailureList if stdout_header(line).is_some() => {
                    self.mode = Mode::FailureOutput(stdout_header(line).unwrap_or_default());
                    return;
                }
                Mode::FailuresHeader if line.trim().is_empty() => {
                    self.mode = Mode::FailuresHeader;
                    return;
                }
                Mode::FailuresHeader | Mode::FailureList
                    if line.starts_with("    ") && !line.trim().is_empty() =>
                {
                    block.failures_list.push(line.trim().to_string());
                    block.has_list = true;
                    self.mode = Mode::FailureList;
                    return;
                }
                Mode::Successes => {
                    self.mode = Mode::Successes;
                    return;
                }
                _ => {}
            }
            self.test_line(line);
        }

        fn test_line(&mut self, line: &str) {
            let Some(block) = self.block.as_mut() else {
                return;
            };
            if let Some((name, outcome)) = parse_test_line(line) {
                match outcome {
                    Outcome::Done(status, ms) => block.seen.push((name, status, ms)),
                    Outcome::Started => {
                        if self.pending.is_none() {
                            self.pending = Some(name);
                        }
                    }
                }
                return;
            }
            if let Some(name) = &self.pending {
                if let Some(status) = trailing_result(line) {
                    block.seen.push((name.clone(), status, None));
                    self.pending = None;
                }
            }
        }

        /// Panic messages (`thread 'name' panicked at ...`) seen in the output: the message of a failed
        /// test when libtest printed no `---- name stdout ----` block for it (`--nocapture`).
        fn track_panic(&mut self, line: &str) {
            if let Some((_, lines)) = self.panic.as_mut() {
                let t = line.trim();
                let end = t.is_empty()
                    || t.starts_with("note: ")
                    || t == "stack backtrace:"
                    || result_token(t).is_some()
                    || line.starts_with("test ")
                    || line.starts_with("thread '");
                if end {
                    self.store_panic();
                } else if lines.len() < 50 {
                    lines.push(line.to_string());
                }
            }
            if let Some(rest) = line.strip_prefix("thread '") {
                if let Some(end) = rest.find('\'') {
                    if rest[end..].contains(" panicked at ") {
                        self.panic = Some((rest[..end].to_string(), vec![line.to_string()]));
                    }
                }
            }
        }

        fn store_panic(&mut self) {
            if let Some((name, lines)) = self.panic.take() {
                if let Some(block) = self.block.as_mut() {
                    block.panics.entry(name).or_insert_with(|| lines.join("\n"));
                }
            }
        }

        /// Lines between binaries: the compiler's output, for `error: could not compile` (merged stderr).
        fn outside_block(&mut self, line: &str) {
            let t = line.trim_start();
            if t.starts_with("Compiling ")
                || t.starts_with("Finished ")
                || t.starts_with("Checking ")
            {
                self.build_lines.clear();
                return;
            }
            if let Some(rest) = line.strip_prefix("error: could not compile `") {
                if let Some(end) = rest.find('`') {
                    let start = self
                        .build_lines
                        .iter()
                        .position(|l| l.starts_with("error"))
                        .unwrap_or(0);
                    let mut text = self.build_lines[start..].join("\n");
                    if !text.is_empty() {
                        text.push('\n');
                    }
                    text.push_str(line);
                    self.results.push(TestResult {
                        id: format!("{}@[build]", &rest[..end]),
                        status: TestStatus::Fail,
                        duration_ms: None,
                        message: clip_message(&text),
                    });
                    self.build_lines.clear();
                    return;
                }
            }
            if self.build_lines.len() < 400 {
                self.build_lines.push(line.to_string());
            }
        }

        fn finish_block(&mut self) {
            self.store_panic();
            self.mode = Mode::Tests;
            let pending = self.pending.take();
            let Some(mut block) = self.block.take() else {
                return;
            };
            // Who failed, as the binary itself summed it up: the `failures:` list, or nobody when it
            // ended with `test result: ok`. Without either (crash, cut-off output), the lines decide.
            let authority: Option<HashSet<String>> = if block.has_list {
                Some(block.failures_list.iter().cloned().collect())
            } else if block.ended_ok {
                Some(HashSet::new())
            } else {
                None
            };
            let mut unfinished = None;
            if let Some(name) = pending {
                let status = match &authority {
                    Some(failed) if !failed.contains(&name) => TestStatus::Pass,
                    Some(_) => TestStatus::Fail,
                    None => {
                        unfinished = Some(name.clone());
                        TestStatus::Fail
                    }
                };
                block.seen.push((name, status, None));
            }
            let mut order: Vec<String> = Vec::new();
            let mut observed: HashMap<String, Vec<(TestStatus, Option<u64>)>> = HashMap::new();
            for (name, status, ms) in &block.seen {
                observed
                    .entry(name.clone())
                    .or_insert_with(|| {
                        order.push(name.clone());
                        Vec::new()
                    })
                    .push((*status, *ms));
            }
            if authority.is_some() {
                for name in &block.failures_list {
                    if !observed.contains_key(name) {
                        order.push(name.clone());
                        observed.insert(name.clone(), Vec::new());
                    }
                }
            }
            for name in order {
                let seen = observed.get(&name).map(Vec::as_slice).unwrap_or_default();
                let status = match &authority {
                    Some(failed) if failed.contains(&name) => TestStatus::Fail,
                    Some(_) => match seen.iter().rev().find(|(s, _)| *s != TestStatus::Fail) {
                        Some((s, _)) => *s,
                        None => continue, // a `... FAILED` line the binary did not count: printed by a test
                    },
                    None if seen.iter().any(|(s, _)| *s == TestStatus::Fail) => TestStatus::Fail,
                    None => seen.last().map_or(TestStatus::Fail, |(s, _)| *s),
                };
                let message = if status == TestStatus::Fail {
                    block
                        .outputs
                        .get(&name)
                        .and_then(|lines| clean_output(lines))
                        .or_else(|| block.panics.get(&name).and_then(|p| clip_message(p)))
                        .or_else(|| {
                            (unfinished.as_ref() == Some(&name))
                                .then(|| NO_RESULT_FOR_TESTS.to_string())
                        })
                } else {
                    None
                };
                let id = match &block.prefix {
                    Some(prefix) => format!("{prefix}::{name}"),
                    None => name.clone(),
                };
                self.results.push(TestResult {
                    id,
                    status,
                    duration_ms: seen.iter().find_map(|(_, ms)| *ms),
                    message,
                });
            }
        }
    }

    /// The captured output of a failed test without the backtrace frames and their notes.
    fn clean_output(lines: &[String]) -> Option<String> {
        let mut kept = Vec::new();
        let mut in_backtrace = false;
        for line in lines {
            if line.trim() == "stack backtrace:" {
                in_backtrace = true;
                continue;
            }
            if in_backtrace && line.starts_with(' ') {
                continue;
            }
            in_backtrace = false;
            if line.starts_with("note: run with `RUST_BACKTRACE=")
                || line.starts_with("note: Some details are omitted")
            {
                continue;
            }
            kept.push(line.as_str());
        }
        clip_message(&kept.join("\n"))
    }

    /// `     Running unittests src/lib.rs (target/debug/deps/mycrate-0123abcd)` -> `mycrate@src/lib.rs`,
    /// `   Doc-tests mycrate` -> `mycrate@doc`.
    fn header(line: &str) -> Option<String> {
        let t = line.trim();
        if let Some(krate) = t.strip_prefix("Doc-tests ") {
            let krate = krate.trim();
            return (!krate.is_empty() && !krate.contains(char::is_whitespace))
                .then(|| format!("{krate}@doc"));
        }
        let rest = t.strip_prefix("Running ")?;
        let rest = rest.strip_prefix("unittests ").unwrap_or(rest);
        let (path, binary) = match rest.strip_suffix(')').and_then(|r| r.rsplit_once(" (")) {
            Some((path, binary)) => (path, binary),
            None => ("", rest), // cargo before 1.52: `Running target/debug/deps/name-hash`
        };
        if !binary.contains("deps/") && !binary.contains("deps\\") {
            return None;
        }
        let file = binary.rsplit(['/', '\\']).next().unwrap_or(binary);
        let file = file.strip_suffix(".exe").unwrap_or(file);
        let stem = match file.rsplit_once('-') {
            Some((stem, hash))
                if !hash.is_empty() && hash.bytes().all(|b| b.is_ascii_hexdigit()) =>
            {
                stem
            }
            _ => file,
        };
        Some(format!("{stem}@{}", path.replace('\\', "/")))
    }

    fn is_running_line(line: &str) -> bool {
        line.trim_end()
            .strip_prefix("running ")
            .and_then(|r| r.strip_suffix(" tests").or_else(|| r.strip_suffix(" test")))
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    }

    fn stdout_header(line: &str) -> Option<String> {
        line.strip_prefix("---- ")?
            .strip_suffix(" stdout ----")
            .map(|name| strip_mode(name).to_string())
    }

    /// libtest shows the kind of test after the name: `name - should panic`, doc-tests
    /// `... (line 5) - compile fail` or `- compile`.
    fn strip_mode(name: &str) -> &str {
        let mut name = name.trim();
        for suffix in [" - should panic", " - compile fail", " - compile"] {
            if let Some(stripped) = name.strip_suffix(suffix) {
                name = stripped;
            }
        }
        name
    }

    /// The outcome words libtest prints after ` ... `, with `--report-time`'s ` <0.012s>` if any.
    fn result_token(rest: &str) -> Option<(TestStatus, Option<u64>)> {
        let rest = rest.trim();
        let (word, ms) = match rest.strip_suffix("s>").and_then(|r| r.rsplit_once(" <")) {
            Some((word, secs)) => (word, secs.parse::<f64>().ok().and_then(super::secs_to_ms)),
            None => (rest, None),
        };
        let status = if word == "ok" || word.starts_with("bench:") {
            TestStatus::Pass
        } else if word == "FAILED" || word.starts_with("FAILED ") {
            TestStatus::Fail
        } else if word == "ignored" || word.starts_with("ignored, ") {
            TestStatus::Skip
        } else {
            return None;
        };
        Some((status, ms))
    }

    /// The result printed at the end of a line after the test's own output (`some printed textok`).
    fn trailing_result(line: &str) -> Option<TestStatus> {
        let t = line.trim_end();
        if let Some((status, _)) = result_token(t) {
            return Some(status);
        }
        if t.ends_with("FAILED") {
            Some(TestStatus::Fail)
        } else if t.ends_with("ok") {
            Some(TestStatus::Pass)
        } else {
            None
        }
    }

    fn parse_test_line(line: &str) -> Option<(String, Outcome)> {
        let Some(rest) = line.strip_prefix("test ") else {
            // A test printed text without a newline just before libtest's line:
            // `no newline heretest noisy::partial ... ok`. Only plain test paths are accepted here.
            let sep = line.find(" ... ")?;
            let start = line[..sep].rfind("test ")?;
            let name = &line[start + 5..sep];
            let plain = !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_alphanumeric() || c == '_' || c == ':');
            let (status, ms) = result_token(&line[sep + 5..]).filter(|_| plain)?;
            return Some((name.to_string(), Outcome::Done(status, ms)));
        };
        let (name, outcome) = rest.split_once(" ... ")?;
        let name = strip_mode(name);
        if name.is_empty() {
            return None;
        }
        let outcome = match result_token(outcome) {
            Some((status, ms)) => Outcome::Done(status, ms),
            None => match outcome.trim_end() {
                t if t.ends_with("FAILED") => Outcome::Done(TestStatus::Fail, None),
                t if t.ends_with("ok") => Outcome::Done(TestStatus::Pass, None),
                _ => Outcome::Started,
            },
        };
        Some((name.to_string(), outcome))
    }

    /// `bin@path::name` -> (`bin@path`, `name`); a bare name has no prefix; `crate@[build]` -> None.
    fn split_id(id: &str) -> Option<(Option<&str>, &str)> {
        if let Some(at) = id.find('@') {
            let before = &id[..at];
            if !before.contains(' ') && !before.contains("::") {
                let sep = id[at..].find("::")? + at;
                return Some((Some(&id[..sep]), &id[sep + 2..]));
            }
        }
        Some((None, id))
    }

    pub(super) fn select(argv: &[String], ids: &[String]) -> Option<Vec<String>> {
        let mut names = Vec::new();
        for id in ids {
            let (prefix, name) = split_id(id)?;
            if name.is_empty() {
                return None;
            }
            // Doc-test names hold spaces, and cargo splits rustdoc's test arguments at spaces.
            let doc = prefix.is_some_and(|p| p.ends_with("@doc")) || name.contains(' ');
            if !doc {
                names.push(name);
            }
        }
        if names.is_empty() {
            return None;
        }
        let names = uniq(names);
        let mut cmd = argv.to_vec();
        if argv.iter().any(|a| a == "--") {
            cmd.extend(names);
            cmd.push("--exact".to_string());
        } else {
            cmd.push("--".to_string());
            cmd.push("--exact".to_string());
            cmd.extend(names);
        }
        Some(cmd)
    }
}

// ---------------------------------------------------------------------------------------------------------
// Go (`go test -json`)

mod go {
    use super::{
        clip_message, group_in_order, secs_to_ms, split_options, uniq, TestResult, TestStatus,
    };
    use serde::Deserialize;
    use std::collections::HashMap;

    pub(super) const NO_RESULT_FOR_TESTS: &str =
        "no result reported: the test binary exited while this test was running";

    #[derive(Deserialize)]
    struct Event {
        #[serde(rename = "Action", default)]
        action: String,
        #[serde(rename = "Package", default)]
        package: Option<String>,
        #[serde(rename = "ImportPath", default)]
        import_path: Option<String>,
        #[serde(rename = "Test", default)]
        test: Option<String>,
        #[serde(rename = "Output", default)]
        output: Option<String>,
        #[serde(rename = "Elapsed", default)]
        elapsed: Option<f64>,
        #[serde(rename = "FailedBuild", default)]
        failed_build: Option<String>,
    }

    #[derive(Default)]
    struct Test {
        name: String,
        status: Option<TestStatus>,
        elapsed: Option<f64>,
        output: String,
    }

    #[derive(Default)]
    struct Package {
        path: String,
        tests: Vec<Test>,
        index: HashMap<String, usize>,
        status: Option<TestStatus>,
        output: String,
        build_failed: bool,
        build_output: String,
    }

    impl Package {
        fn test(&mut self, name: &str) -> &mut Test {
            let i = match self.index.get(name) {
                Some(&i) => i,
                None => {
                    self.index.insert(name.to_string(), self.tests.len());
                    self.tests.push(Test {
                        name: name.to_string(),
                        ..Test::default()
                    });
                    self.tests.len() - 1
                }
            };
            &mut self.tests[i]
        }
    }

    #[derive(Default)]
    struct Packages {
        list: Vec<Package>,
        index: HashMap<String, usize>,
    }

    impl Packages {
        fn get(&mut self, path: &str) -> &mut Package {
            let i = self.position(path);
            &mut self.list[i]
        }

        fn position(&mut self, path: &str) -> usize {
            match self.index.get(path) {
                Some(&i) => i,
                None => {
                    self.index.insert(path.to_string(), self.list.len());
                    self.list.push(Package {
                        path: path.to_string(),
                        ..Package::default()
                    });
                    self.list.len() - 1
                }
            }
        }
    }

    fn status_of(action: &str) -> Option<TestStatus> {
        match action {
            "pass" => Some(TestStatus::Pass),
            "fail" => Some(TestStatus::Fail),
            "skip" => Some(TestStatus::Skip),
            _ => None,
        }
    }

    /// `example.com/m/x [example.com/m/x.test]` -> `example.com/m/x`.
    fn package_of(target: &str) -> &str {
        target.split(" [").next().unwrap_or(target).trim()
    }

    /// `FAIL\texample.com/m/broken [build failed]` (or `[setup failed]`) -> the package.
    fn build_failed_line(line: &str) -> Option<&str> {
        let rest = line.strip_prefix("FAIL")?.trim();
        let pkg = rest
            .strip_suffix("[build failed]")
            .or_else(|| rest.strip_suffix("[setup failed]"))?
            .trim();
        (!pkg.is_empty() && !pkg.contains(char::is_whitespace)).then_some(pkg)
    }

    pub(super) fn parse(stdout: &str) -> Vec<TestResult> {
        let mut pkgs = Packages::default();
        let mut compiler_output_of: Option<usize> = None;
        for line in stdout.lines() {
            let t = line.trim();
            if t.starts_with('{') {
                if let Ok(event) = serde_json::from_str::<Event>(t) {
                    compiler_output_of = None;
                    apply(&mut pkgs, event);
                    continue;
                }
            }
            // Not JSON: what `go test` itself prints (and the compiler, when stderr is merged).
            if let Some(target) = t.strip_prefix("# ") {
                let pkg = package_of(target);
                compiler_output_of = (!pkg.is_empty()).then(|| pkgs.position(pkg));
                continue;
            }
            if let Some(pkg) = build_failed_line(t) {
                let p = pkgs.get(pkg);
                p.build_failed = true;
                if p.build_output.is_empty() {
                    p.build_output = t.to_string();
                }
                compiler_output_of = None;
                continue;
            }
            if let Some(i) = compiler_output_of {
                let out = &mut pkgs.list[i].build_output;
                super::push_capped(out, &format!("{line}\n"));
            }
        }
        results(pkgs)
    }

    fn apply(pkgs: &mut Packages, event: Event) {
        // Go 1.24+ reports builds as events of their own.
        match event.action.as_str() {
            "build-output" => {
                if let (Some(target), Some(out)) = (&event.import_path, &event.output) {
                    pkgs.get(package_of(target)).build_output.push_str(out);
                }
                return;
            }
            "build-fail" => {
                if let Some(target) = &event.import_path {
                    pkgs.get(package_of(target)).build_failed = true;
                }
                return;
            }
            _ => {}
        }
        let Some(pkg) = event.package.as_deref() else {
            return;
        };
        let pkg = pkgs.get(pkg);
        match event.test.as_deref() {
            Some(name) => {
                let test = pkg.test(name);
                match event.action.as_str() {
                    "output" => {
                        if let Some(out) = &event.output {
                            super::push_capped(&mut test.output, out);
                        }
                    }
                    action => {
                        if let Some(status) = status_of(action) {
                            test.status = Some(status);
                            test.elapsed = event.elapsed;
                        }
                    }
                }
            }
            None => match event.action.as_str() {
                "output" => {
                    if let Some(out) = &event.output {
                        super::push_capped(&mut pkg.output, out);
                    }
                }
                action => {
                    if let Some(status) = status_of(action) {
                        pkg.status = Some(status);
                        if event.failed_build.is_some() {
                            pkg.build_failed = true;
                        }
                    }
                }
            },
        }
    }

    /// A test's output without the `=== RUN` / `--- FAIL:` lines that frame it.
    fn test_message(output: &str) -> Option<String> {
        let kept: Vec<&str> = output
            .lines()
            .filter(|l| {
                let t = l.trim_start();
                ![
                    "=== RUN",
                    "=== PAUSE",
                    "=== CONT",
                    "=== NAME",
                    "--- PASS:",
                    "--- FAIL:",
                    "--- SKIP:",
                ]
                .iter()
                .any(|p| t.starts_with(p))
            })
            .collect();
        clip_message(&kept.join("\n"))
    }

    fn results(pkgs: Packages) -> Vec<TestResult> {
        let mut out = Vec::new();
        for pkg in pkgs.list {
            let mut any_fail = false;
            if pkg.build_failed {
                any_fail = true;
                out.push(TestResult {
                    id: format!("{}::[build]", pkg.path),
                    status: TestStatus::Fail,
                    duration_ms: None,
                    message: clip_message(&pkg.build_output)
                        .or_else(|| Some("build failed".to_string())),
                });
            }
            for test in pkg.tests {
                // No result at all: the binary died (panic elsewhere, os.Exit, timeout) during the test.
                let status = test.status.unwrap_or(TestStatus::Fail);
                let message = if status == TestStatus::Fail {
                    any_fail = true;
                    let msg = test_message(&test.output);
                    match (test.status, msg) {
                        (None, None) => Some(NO_RESULT_FOR_TESTS.to_string()),
                        (_, msg) => msg,
                    }
                } else {
                    None
                };
                out.push(TestResult {
                    id: format!("{}::{}", pkg.path, test.name),
                    status,
                    duration_ms: test.elapsed.and_then(secs_to_ms),
                    message,
                });
            }
            if !any_fail && pkg.status == Some(TestStatus::Fail) {
                out.push(TestResult {
                    id: format!("{}::[package]", pkg.path),
                    status: TestStatus::Fail,
                    duration_ms: None,
                    message: clip_message(&pkg.output)
                        .or_else(|| Some("the test binary failed outside any test".to_string())),
                });
            }
        }
        out
    }

    /// `go test` and build flags that take a separate value.
    const VALUE_FLAGS: &[&str] = &[
        "run",
        "skip",
        "bench",
        "benchtime",
        "count",
        "cpu",
        "parallel",
        "timeout",
        "shuffle",
        "list",
        "fuzz",
        "fuzztime",
        "fuzzminimizetime",
        "coverprofile",
        "covermode",
        "coverpkg",
        "blockprofile",
        "blockprofilerate",
        "cpuprofile",
        "memprofile",
        "memprofilerate",
        "mutexprofile",
        "mutexprofilefraction",
        "outputdir",
        "trace",
        "tags",
        "p",
        "o",
        "C",
        "exec",
        "ldflags",
        "gcflags",
        "asmflags",
        "gccgoflags",
        "mod",
        "modfile",
        "pkgdir",
        "toolexec",
        "vet",
        "buildmode",
        "compiler",
        "installsuffix",
        "overlay",
        "pgo",
        "covermode",
    ];

    fn flag_name(arg: &str) -> &str {
        let name = arg.trim_start_matches('-');
        name.split('=').next().unwrap_or(name)
    }

    /// Go's `regexp.QuoteMeta`.
    fn quote_meta(s: &str) -> String {
        let mut out = String::with_capacity(s.len());
        for c in s.chars() {
            if "\\.+*?()|[]{}^$".contains(c) {
                out.push('\\');
            }
            out.push(c);
        }
        out
    }

    /// The `-run` pattern for tests of one package. Go splits the pattern at top-level `/` (one regexp
    /// per name level) and at top-level `|` (alternatives).
    fn run_regex(names: &[String]) -> String {
        let top: Vec<&str> = names
            .iter()
            .filter(|n| !n.contains('/'))
            .map(String::as_str)
            .collect();
        let mut alternatives = Vec::new();
        if !top.is_empty() {
            let quoted: Vec<String> = uniq(top.iter().map(|n| quote_meta(n)));
            alternatives.push(if quoted.len() == 1 {
                format!("^{}$", quoted[0])
            } else {
                format!("^({})$", quoted.join("|"))
            });
        }
        for name in names.iter().filter(|n| n.contains('/')) {
            let parent = name.split('/').next().unwrap_or_default();
            if top.contains(&parent) {
                continue;
            }
            let levels: Vec<String> = name
                .split('/')
                .map(|level| format!("^{}$", quote_meta(level)))
                .collect();
            alternatives.push(levels.join("/"));
        }
        uniq(alternatives).join("|")
    }

    pub(super) fn select(argv: &[String], ids: &[String]) -> Option<Vec<Vec<String>>> {
        let test_pos = argv.iter().position(|a| a == "test")?;
        let args_pos = argv
            .iter()
            .skip(test_pos + 1)
            .position(|a| a == "-args" || a == "--args");
        let (head, tail) = match args_pos {
            Some(p) => argv.split_at(test_pos + 1 + p),
            None => (argv, &[][..]),
        };
        let (base, _packages) = split_options(
            head,
            test_pos,
            |arg| VALUE_FLAGS.contains(&flag_name(arg)),
            |arg| flag_name(arg) == "run",
        );
        let mut pairs = Vec::new();
        for id in ids {
            let (pkg, name) = id.split_once("::")?;
            if pkg.is_empty() || name.is_empty() {
                return None;
            }
            pairs.push((pkg.to_string(), name.to_string()));
        }
        let mut commands = Vec::new();
        for (pkg, names) in group_in_order(pairs) {
            let mut cmd = base.clone();
            if !names.iter().any(|n| n == "[build]" || n == "[package]") {
                cmd.push("-run".to_string());
                cmd.push(run_regex(&names));
            }
            cmd.push(pkg);
            cmd.extend(tail.iter().cloned());
            commands.push(cmd);
        }
        Some(commands)
    }
}

// ---------------------------------------------------------------------------------------------------------
// Pytest (JUnit XML)

mod pytest {
    use super::junit::{self, Case, Node};
    use super::{clip_message, secs_to_ms, split_options, uniq, TestResult, TestStatus};
    use std::collections::HashMap;
    use std::path::Path;

    pub(super) fn parse(xml: &str, root: &Path) -> Vec<TestResult> {
        let mut cases = Vec::new();
        flatten(junit::read(xml), &mut cases);
        let mut files: HashMap<String, (String, usize)> = HashMap::new();
        cases
            .into_iter()
            .map(|case| {
                let message = if case.status == TestStatus::Fail {
                    let mut text = case.message_attr.clone().unwrap_or_default();
                    if !case.body.trim().is_empty() && case.body.trim() != text.trim() {
                        text.push_str("\n\n");
                        text.push_str(case.body.trim());
                    }
                    clip_message(&text)
                } else {
                    None
                };
                TestResult {
                    id: node_id(&case, root, &mut files),
                    status: case.status,
                    duration_ms: case.time.and_then(secs_to_ms),
                    message,
                }
            })
            .collect()
    }

    fn flatten(nodes: Vec<Node>, out: &mut Vec<Case>) {
        for node in nodes {
            match node {
                Node::Suite { children, .. } => flatten(children, out),
                Node::Case(case) => out.push(case),
            }
        }
    }

    /// The node id. With xunit1, `file` is there and `classname` is the module's dotted path followed by
    /// the classes. Without `file` (xunit2) the module is the longest dotted prefix of `classname` that is
    /// a `.py` file under `root` (dots inside directory names are tried too).
    fn node_id(case: &Case, root: &Path, cache: &mut HashMap<String, (String, usize)>) -> String {
        let classname = case.classname.trim();
        if classname.is_empty() {
            // A collection error: the name is the module's dotted path.
            return match &case.file {
                Some(file) => file.replace('\\', "/"),
                None => {
                    let parts: Vec<&str> = case.name.split('.').collect();
                    module_file(&parts, root).0
                }
            };
        }
        let parts: Vec<&str> = classname.split('.').collect();
        let (file, classes): (String, Vec<&str>) = match &case.file {
            Some(file) => {
                let file = file.replace('\\', "/");
                let module = file.strip_suffix(".py").unwrap_or(&file).replace('/', ".");
                let classes = if classname == module {
                    Vec::new()
                } else if let Some(rest) = classname.strip_prefix(&format!("{module}.")) {
                    rest.split('.').collect()
                } else {
                    // A `junit_prefix` or an unusual layout: take what follows the module's last part.
                    let last = module.rsplit('.').next().unwrap_or_default();
                    match parts.iter().rposition(|p| *p == last) {
                        Some(i) => parts[i + 1..].to_vec(),
                        None => Vec::new(),
                    }
                };
                (file, classes)
            }
            None => {
                let (file, used) = cache
                    .entry(classname.to_string())
                    .or_insert_with(|| module_file(&parts, root))
                    .clone();
                (file, parts[used.min(parts.len())..].to_vec())
            }
        };
        let mut id = file;
        for class in classes {
            id.push_str("::");
            id.push_str(class);
        }
        id.push_str("::");
        id.push_str(&case.name);
        id
    }

    /// The file of a dotted module path and how many parts it used.
    fn module_file(parts: &[&str], root: &Path) -> (String, usize) {
        for used in (1..=parts.len()).rev() {
            let joints = used - 1;
            let masks: u32 = if joints <= 8 { 1 << joints } else { 1 };
            for mask in 0..masks {
                let mut path = parts[0].to_string();
                for (j, part) in parts[1..used].iter().enumerate() {
                    path.push(if mask & (1 << j) != 0 { '.' } else { '/' });
                    path.push_str(part);
                }
                if root.join(format!("{path}.py")).is_file() {
                    return (format!("{path}.py"), used);
                }
                if used == parts.len() && root.join(&path).is_dir() {
                    return (path, used);
                }
            }
        }
        // Nothing on disk: by pytest's naming, classes start with an upper-case letter.
        let used = parts
            .iter()
            .position(|p| p.chars().next().is_some_and(char::is_uppercase))
            .filter(|&i| i > 0)
            .unwrap_or(parts.len());
        (format!("{}.py", parts[..used].join("/")), used)
    }

    /// Options of pytest (and common plugins) that take a separate value.
    const VALUE_OPTIONS: &[&str] = &[
        "-k",
        "-m",
        "-p",
        "-o",
        "-c",
        "-W",
        "-r",
        "-n",
        "--maxfail",
        "--tb",
        "--junitxml",
        "--junit-xml",
        "--junit-prefix",
        "--rootdir",
        "--basetemp",
        "--confcutdir",
        "--ignore",
        "--ignore-glob",
        "--deselect",
        "--durations",
        "--durations-min",
        "--log-level",
        "--log-format",
        "--log-date-format",
        "--log-file",
        "--log-file-level",
        "--log-file-format",
        "--log-file-date-format",
        "--log-cli-level",
        "--log-cli-format",
        "--log-cli-date-format",
        "--import-mode",
        "--capture",
        "--override-ini",
        "--config-file",
        "--color",
        "--code-highlight",
        "--pythonwarnings",
        "--verbosity",
        "--assert",
        "--doctest-glob",
        "--doctest-report",
        "--cov",
        "--cov-report",
        "--cov-config",
        "--cov-fail-under",
        "--timeout",
        "--dist",
        "--numprocesses",
        "--maxprocesses",
        "--max-worker-restart",
        "--tx",
        "--report-log",
        "--html",
        "--random-order-seed",
        "--reruns",
        "--reruns-delay",
    ];

    fn is_pytest(arg: &str) -> bool {
        let name = arg.rsplit(['/', '\\']).next().unwrap_or(arg);
        matches!(name, "pytest" | "py.test" | "pytest-3" | "pytest3")
    }

    pub(super) fn select(argv: &[String], ids: &[String]) -> Option<Vec<String>> {
        let anchor = argv.iter().position(|a| is_pytest(a))?;
        let (mut cmd, _paths) =
            split_options(argv, anchor, |arg| VALUE_OPTIONS.contains(&arg), |_| false);
        cmd.extend(uniq(ids));
        Some(cmd)
    }
}

// ---------------------------------------------------------------------------------------------------------
// Node (`node --test`: JUnit file, TAP or spec on stdout)

mod node {
    use super::junit::{self, Node as XmlNode};
    use super::{
        clip_message, group_in_order, relative_path, secs_to_ms, split_options, strip_line_col,
        uniq, TestResult, TestStatus,
    };
    use std::cmp::Reverse;
    use std::collections::{HashMap, HashSet};
    use std::path::Path;

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

    // ---- TAP

    fn looks_like_tap(stdout: &str) -> bool {
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
                entry.duration_ms = super::secs_to_ms(ms / 1000.0);
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

    fn parse_tap(text: &str, root: &Path) -> Vec<Entry> {
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

    fn tap_hints(tree: &[Entry]) -> Vec<Hint> {
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
    fn spec_hints(stdout: &str, root: &Path) -> Vec<Hint> {
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

    // ---- putting the file on each test

    fn find_mut<'a>(
        entries: &'a mut [Entry],
        pred: &dyn Fn(&Entry) -> bool,
    ) -> Option<&'a mut Entry> {
        for entry in entries.iter_mut() {
            if pred(entry) {
                return Some(entry);
            }
            if let Some(found) = find_mut(&mut entry.children, pred) {
                return Some(found);
            }
        }
        None
    }

    fn find_path_mut<'a>(entries: &'a mut [Entry], path: &[String]) -> Option<&'a mut Entry> {
        let (first, rest) = path.split_first()?;
        let fits = |e: &Entry| &e.name == first && (rest.is_empty() || has_path(&e.children, rest));
        let i = entries
            .iter()
            .position(|e| fits(e) && (!rest.is_empty() || e.file.is_none()))
            .or_else(|| entries.iter().position(fits))?;
        if rest.is_empty() {
            Some(&mut entries[i])
        } else {
            find_path_mut(&mut entries[i].children, rest)
        }
    }

    fn has_path(entries: &[Entry], path: &[String]) -> bool {
        match path.split_first() {
            None => true,
            Some((first, rest)) => entries
                .iter()
                .any(|e| &e.name == first && has_path(&e.children, rest)),
        }
    }

    fn apply_hints(tree: &mut Vec<Entry>, hints: Vec<Hint>) {
        for hint in hints {
            let found = match &hint.path {
                Some(path) => find_path_mut(tree, path),
                None if hint.fail => {
                    let failed_test = |e: &Entry| {
                        e.leaf
                            && e.name == hint.name
                            && e.file.is_none()
                            && e.status == Some(TestStatus::Fail)
                    };
                    let suite = |e: &Entry| !e.leaf && e.name == hint.name && e.file.is_none();
                    if find_mut(tree, &failed_test).is_some() {
                        find_mut(tree, &failed_test)
                    } else {
                        find_mut(tree, &suite)
                    }
                }
                None => None,
            };
            match found {
                Some(entry) => {
                    entry.file.get_or_insert(hint.file);
                    if !entry.leaf && hint.fail && hint.own_fail {
                        entry.own_fail = true;
                        entry.status = Some(TestStatus::Fail);
                        if entry.message.is_none() {
                            entry.message = hint.message;
                        }
                    }
                }
                // A failure the JUnit file lost: keep it rather than pass silently.
                None if hint.fail => tree.push(Entry {
                    name: hint
                        .path
                        .as_ref()
                        .and_then(|p| p.first().cloned())
                        .unwrap_or(hint.name),
                    leaf: true,
                    status: Some(TestStatus::Fail),
                    message: hint.message,
                    file: Some(hint.file),
                    ..Entry::default()
                }),
                None => {}
            }
        }
    }

    fn first_file(entry: &Entry) -> Option<&str> {
        entry
            .file
            .as_deref()
            .or_else(|| entry.children.iter().find_map(first_file))
    }

    /// Test files node 20 finds by default under `root` (`*.test.js`, `test-*.js`, `test/**/*.js`, ...),
    /// without `node_modules` and hidden directories; bounded.
    fn discover(root: &Path) -> Vec<String> {
        let mut found = Vec::new();
        let mut stack = vec![(root.to_path_buf(), 0usize, false)];
        let mut visited = 0usize;
        while let Some((dir, depth, in_test_dir)) = stack.pop() {
            let Ok(read) = std::fs::read_dir(&dir) else {
                continue;
            };
            for item in read.flatten() {
                visited += 1;
                if visited > 20_000 {
                    return found;
                }
                let name = item.file_name().to_string_lossy().into_owned();
                if name.starts_with('.') || name == "node_modules" {
                    continue;
                }
                let path = item.path();
                let Ok(kind) = item.file_type() else { continue };
                if kind.is_dir() {
                    if depth < 12 {
                        stack.push((path, depth + 1, in_test_dir || name == "test"));
                    }
                    continue;
                }
                let Some((stem, ext)) = name.rsplit_once('.') else {
                    continue;
                };
                if !matches!(ext, "js" | "cjs" | "mjs" | "ts" | "cts" | "mts") {
                    continue;
                }
                let named = stem == "test"
                    || stem.starts_with("test-")
                    || [".test", "-test", "_test"]
                        .iter()
                        .any(|s| stem.ends_with(s));
                if named || in_test_dir {
                    if let Ok(rel) = path.strip_prefix(root) {
                        found.push(rel.to_string_lossy().replace('\\', "/"));
                    }
                }
            }
        }
        found
    }

    /// Whether the source mentions `name` as a string literal.
    fn mentions(source: &str, name: &str) -> bool {
        ['\'', '"', '`'].iter().any(|&q| {
            let escaped = name.replace('\\', "\\\\").replace(q, &format!("\\{q}"));
            source.contains(&format!("{q}{escaped}{q}"))
        })
    }

    /// The file of each top-level entry. Known: a location printed for something inside it, or a
    /// file-level test. Otherwise one of the test files whose source holds the top-level name as a string
    /// literal, knowing that node reports files one after the other in sorted order: not a file before
    /// the current one, not one that already had a top-level test of that name; the current file if it
    /// fits, else the file that fits the longest run of the following tests. A name found nowhere (built
    /// at run time) stays in the current file.
    fn assign_files(tree: &[Entry], root: &Path) -> Vec<Option<String>> {
        let known: Vec<Option<String>> = tree
            .iter()
            .map(|e| file_test(&e.name, root).or_else(|| first_file(e).map(str::to_string)))
            .collect();
        if known.iter().all(Option::is_some) {
            return known;
        }
        let mut files = discover(root);
        files.extend(known.iter().flatten().cloned());
        files.sort();
        files.dedup();
        let sources: Vec<String> = files
            .iter()
            .map(|f| std::fs::read_to_string(root.join(f)).unwrap_or_default())
            .collect();
        let index_of = |file: &str| files.binary_search_by(|f| f.as_str().cmp(file)).ok();
        let fixed: Vec<Option<usize>> = known
            .iter()
            .map(|k| k.as_deref().and_then(index_of))
            .collect();
        // The files whose source holds each top-level name (for the entries whose file is unknown).
        let holders: Vec<Vec<usize>> = tree
            .iter()
            .zip(&fixed)
            .map(|(entry, fixed)| match fixed {
                Some(_) => Vec::new(),
                None => (0..files.len())
                    .filter(|&f| mentions(&sources[f], &entry.name))
                    .collect(),
            })
            .collect();
        // How many entries from `i` on can sit together in file `f` (a name found nowhere fits anywhere).
        let run = |i: usize, f: usize| -> usize {
            let mut names = HashSet::new();
            let mut count = 0;
            for (j, entry) in tree.iter().enumerate().skip(i) {
                let fits = match fixed[j] {
                    Some(g) => g == f,
                    None => holders[j].is_empty() || holders[j].contains(&f),
                };
                if !fits || !names.insert(entry.name.as_str()) {
                    break;
                }
                count += 1;
            }
            count
        };
        let mut chosen = fixed.clone();
        let mut used: HashSet<(usize, &str)> = HashSet::new();
        let mut current: Option<usize> = None;
        for (i, entry) in tree.iter().enumerate() {
            if let Some(f) = chosen[i] {
                current = Some(f);
                used.insert((f, &entry.name));
                continue;
            }
            let mut cands: Vec<usize> = holders[i]
                .iter()
                .copied()
                .filter(|f| !used.contains(&(*f, entry.name.as_str())))
                .collect();
            if let Some(cur) = current {
                let later: Vec<usize> = cands.iter().copied().filter(|&f| f >= cur).collect();
                if !later.is_empty() {
                    cands = later;
                }
            }
            // The current file first, then the one that holds the longest run of the tests that follow,
            // then the first in node's order.
            let pick = match cands
                .iter()
                .copied()
                .max_by_key(|&f| (Some(f) == current, run(i, f), Reverse(f)))
            {
                Some(f) => Some(f),
                None => current.or_else(|| chosen[i + 1..].iter().flatten().next().copied()),
            };
            chosen[i] = pick;
            if let Some(f) = pick {
                current = Some(f);
                used.insert((f, &entry.name));
            }
        }
        chosen
            .into_iter()
            .zip(known)
            .map(|(c, k)| k.or_else(|| c.map(|f| files[f].clone())))
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;
    use TestStatus::{Fail, Pass, Skip};

    const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/testresults");

    fn run(runner: Runner, stdout: &str, junit: Option<&str>, root: &Path) -> Vec<TestResult> {
        parse(
            runner,
            &RunOutput {
                stdout,
                junit,
                root,
            },
        )
    }

    fn cargo(stdout: &str) -> Vec<TestResult> {
        run(Runner::Cargo, stdout, None, Path::new("/nonexistent"))
    }

    fn go(stdout: &str) -> Vec<TestResult> {
        run(Runner::Go, stdout, None, Path::new("/nonexistent"))
    }

    /// (id, status) of each result.
    fn statuses(results: &[TestResult]) -> Vec<(String, TestStatus)> {
        results.iter().map(|r| (r.id.clone(), r.status)).collect()
    }

    fn expect(pairs: &[(&str, TestStatus)]) -> Vec<(String, TestStatus)> {
        pairs.iter().map(|(id, s)| (id.to_string(), *s)).collect()
    }

    fn message_of<'a>(results: &'a [TestResult], id: &str) -> &'a str {
        results
            .iter()
            .find(|r| r.id == id)
            .and_then(|r| r.message.as_deref())
            .unwrap_or("<none>")
    }

    fn argv(args: &[&str]) -> Vec<String> {
        args.iter().map(|a| a.to_string()).collect()
    }

    fn ids(ids: &[&str]) -> Vec<String> {
        argv(ids)
    }

    fn result(
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

    // ---- shared

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
            include_str!("../../tests/data/testresults/cargo_merged_nocapture_serial.txt"),
            include_str!("../../tests/data/testresults/cargo_stdout_only.txt"),
            include_str!("../../tests/data/testresults/go_json_stdout.jsonl"),
            include_str!("../../tests/data/testresults/go_json_build_failure_merged.jsonl"),
            include_str!("../../tests/data/testresults/pytest_xunit1.xml"),
            include_str!("../../tests/data/testresults/node_spec_junit.xml"),
            include_str!("../../tests/data/testresults/node_spec_stdout.txt"),
            include_str!("../../tests/data/testresults/node_tap_stdout.txt"),
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

    // ---- cargo

    #[test]
    fn cargo_stdout_alone_gives_bare_libtest_names_for_units_and_doc_tests() {
        let results = cargo(include_str!(
            "../../tests/data/testresults/cargo_stdout_only.txt"
        ));
        assert_eq!(
            statuses(&results),
            expect(&[
                ("noisy::partial_line_then_ok", Pass),
                ("tests::adds", Pass),
                ("tests::adds_wrong", Fail),
                ("tests::ignored_plain", Skip),
                ("tests::ignored_with_reason", Skip),
                ("tests::nested::deep", Pass),
                ("tests::panics_with_message", Fail),
                ("noisy::chatty_passes", Pass),
                ("tests::prints_then_passes", Pass),
                ("tests::should_panic_ok", Pass),
                ("tests::slow_printer", Pass),
                ("runs_binary", Pass),
                ("writes_directly", Pass),
                ("fails_in_cli", Fail),
                ("src/lib.rs - add (line 3)", Pass),
                ("src/lib.rs - sub (line 12)", Fail),
                ("src/lib.rs - ig (line 19)", Skip),
            ])
        );
    }

    #[test]
    fn cargo_failure_messages_come_from_the_stdout_blocks_without_backtrace_frames() {
        let results = cargo(include_str!(
            "../../tests/data/testresults/cargo_stdout_only.txt"
        ));
        assert_eq!(
            message_of(&results, "tests::adds_wrong"),
            "thread 'tests::adds_wrong' (7362) panicked at src/lib.rs:35:9:\n\
             assertion `left == right` failed: math is broken\n  left: 4\n right: 5"
        );
        assert_eq!(
            message_of(&results, "tests::panics_with_message"),
            "captured stdout before panic\n\n\
             thread 'tests::panics_with_message' (7371) panicked at src/lib.rs:47:9:\nboom\nsecond line"
        );
        assert!(message_of(&results, "src/lib.rs - sub (line 12)")
            .starts_with("Test executable failed (exit status: 101).\n\nstderr:\n\nthread 'main'"));
    }

    #[test]
    fn cargo_output_merged_with_stderr_qualifies_ids_with_binary_and_target_path() {
        let results = cargo(include_str!(
            "../../tests/data/testresults/cargo_merged.txt"
        ));
        assert_eq!(
            statuses(&results),
            expect(&[
                ("mycrate@src/lib.rs::noisy::partial_line_then_ok", Pass),
                ("mycrate@src/lib.rs::tests::adds", Pass),
                ("mycrate@src/lib.rs::tests::adds_wrong", Fail),
                ("mycrate@src/lib.rs::tests::ignored_plain", Skip),
                ("mycrate@src/lib.rs::tests::ignored_with_reason", Skip),
                ("mycrate@src/lib.rs::tests::nested::deep", Pass),
                ("mycrate@src/lib.rs::tests::panics_with_message", Fail),
                ("mycrate@src/lib.rs::tests::prints_then_passes", Pass),
                ("mycrate@src/lib.rs::tests::should_panic_ok", Pass),
                ("mycrate@src/lib.rs::noisy::chatty_passes", Pass),
                ("mycrate@src/lib.rs::tests::slow_printer", Pass),
                ("cli@tests/cli.rs::fails_in_cli", Fail),
                ("cli@tests/cli.rs::runs_binary", Pass),
                ("cli@tests/cli.rs::writes_directly", Pass),
                ("mycrate@doc::src/lib.rs - sub (line 12)", Fail),
                ("mycrate@doc::src/lib.rs - add (line 3)", Pass),
                ("mycrate@doc::src/lib.rs - ig (line 19)", Skip),
            ])
        );
        assert_eq!(
            message_of(&results, "cli@tests/cli.rs::fails_in_cli"),
            "thread 'fails_in_cli' (7741) panicked at tests/cli.rs:19:14:\n\
             index out of bounds: the len is 0 but the index is 3"
        );
    }

    #[test]
    fn cargo_nocapture_output_with_test_prints_in_the_way_gives_the_same_results() {
        let merged = cargo(include_str!(
            "../../tests/data/testresults/cargo_merged.txt"
        ));
        let nocapture = cargo(include_str!(
            "../../tests/data/testresults/cargo_merged_nocapture.txt"
        ));
        let mut a = statuses(&merged);
        let mut b = statuses(&nocapture);
        a.sort_by(|x, y| x.0.cmp(&y.0));
        b.sort_by(|x, y| x.0.cmp(&y.0));
        assert_eq!(a, b);
        // `test fake ... FAILED`, printed by a passing test, is not in the binary's failure list.
        assert!(!nocapture.iter().any(|r| r.id.contains("fake")));
        // No `---- stdout ----` blocks with --nocapture: the panic message printed on stderr is used.
        assert_eq!(
            message_of(&nocapture, "mycrate@src/lib.rs::tests::panics_with_message"),
            "thread 'tests::panics_with_message' (7470) panicked at src/lib.rs:47:9:\nboom\nsecond line"
        );
    }

    #[test]
    fn cargo_serial_nocapture_results_printed_lines_after_the_test_name_are_found() {
        let results = cargo(include_str!(
            "../../tests/data/testresults/cargo_merged_nocapture_serial.txt"
        ));
        assert_eq!(
            statuses(&results),
            expect(&[
                ("mycrate@src/lib.rs::noisy::chatty_passes", Pass),
                ("mycrate@src/lib.rs::noisy::partial_line_then_ok", Pass),
                ("mycrate@src/lib.rs::tests::adds", Pass),
                ("mycrate@src/lib.rs::tests::adds_wrong", Fail),
                ("mycrate@src/lib.rs::tests::ignored_plain", Skip),
                ("mycrate@src/lib.rs::tests::ignored_with_reason", Skip),
                ("mycrate@src/lib.rs::tests::nested::deep", Pass),
                ("mycrate@src/lib.rs::tests::panics_with_message", Fail),
                ("mycrate@src/lib.rs::tests::prints_then_passes", Pass),
                ("mycrate@src/lib.rs::tests::should_panic_ok", Pass),
                ("mycrate@src/lib.rs::tests::slow_printer", Pass),
            ])
        );
        assert_eq!(
            message_of(&results, "mycrate@src/lib.rs::tests::panics_with_message"),
            "thread 'tests::panics_with_message' (7535) panicked at src/lib.rs:47:9:\nboom\nsecond line"
        );
    }

    #[test]
    fn cargo_show_output_successes_section_is_not_read_as_failures() {
        let results = cargo(include_str!(
            "../../tests/data/testresults/cargo_show_output_stdout.txt"
        ));
        let failed: Vec<&str> = results
            .iter()
            .filter(|r| r.status == Fail)
            .map(|r| r.id.as_str())
            .collect();
        assert_eq!(
            failed,
            vec!["tests::adds_wrong", "tests::panics_with_message"]
        );
        assert_eq!(results.len(), 11);
    }

    #[test]
    fn cargo_passing_doc_test_run_strips_the_test_kind_from_names() {
        let results = cargo(include_str!(
            "../../tests/data/testresults/cargo_passing_stdout.txt"
        ));
        assert_eq!(
            results,
            vec![
                result("src/lib.rs - f (line 5)", Pass, None, None),
                result("src/lib.rs - inner (line 14)", Pass, None, None),
                result("src/lib.rs - inner::S (line 18)", Pass, None, None),
                result("src/lib.rs - inner::S::m (line 23)", Pass, None, None),
                result("src/lib.rs - f (line 9)", Pass, None, None),
                result("src/lib.rs - f (line 1)", Pass, None, None),
            ]
        );
    }

    #[test]
    fn cargo_test_binary_that_aborts_fails_the_test_it_was_running() {
        let results = cargo(include_str!(
            "../../tests/data/testresults/cargo_abort_serial_merged.txt"
        ));
        assert_eq!(
            results,
            vec![
                result("crashcrate@src/lib.rs::tests::a_passes", Pass, None, None),
                result(
                    "crashcrate@src/lib.rs::tests::b_aborts",
                    Fail,
                    None,
                    Some(cargo::NO_RESULT_FOR_TESTS)
                ),
            ]
        );
    }

    #[test]
    fn cargo_compile_error_in_merged_output_gives_a_build_id_with_the_compiler_message() {
        let results = cargo(include_str!(
            "../../tests/data/testresults/cargo_build_failure_merged.txt"
        ));
        assert_eq!(
            results,
            vec![result(
                "brokencrate@[build]",
                Fail,
                None,
                Some(
                    "error[E0308]: mismatched types\n  --> tests/cli.rs:21:20\n   |\n\
                     21 | fn oops() -> i32 { \"x\" }\n   \
                     |              ---   ^^^ expected `i32`, found `&str`\n   \
                     |              |\n   \
                     |              expected `i32` because of return type\n\n\
                     For more information about this error, try `rustc --explain E0308`.\n\
                     error: could not compile `brokencrate` (test \"cli\") due to 1 previous error"
                ),
            )]
        );
    }

    #[test]
    fn cargo_report_time_durations_and_summary_lines_are_understood() {
        let text = "running 2 tests\ntest a ... ok <0.250s>\ntest b ... FAILED <1.000s>\n\nfailures:\n    b\n\n\
                    test result: FAILED. 1 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out\n";
        assert_eq!(
            cargo(text),
            vec![
                result("a", Pass, Some(250), None),
                result("b", Fail, Some(1000), None)
            ]
        );
    }

    #[test]
    fn cargo_selection_appends_exact_names_after_a_new_or_the_existing_double_dash() {
        let ids = ids(&[
            "mycrate@src/lib.rs::tests::adds",
            "cli@tests/cli.rs::runs_binary",
            "tests::adds",
        ]);
        assert_eq!(
            select_argv(
                Runner::Cargo,
                &argv(&["cargo", "test", "--no-fail-fast"]),
                &ids
            ),
            Some(vec![argv(&[
                "cargo",
                "test",
                "--no-fail-fast",
                "--",
                "--exact",
                "tests::adds",
                "runs_binary"
            ])])
        );
        assert_eq!(
            select_argv(
                Runner::Cargo,
                &argv(&["cargo", "test", "--", "--test-threads=1"]),
                &ids
            ),
            Some(vec![argv(&[
                "cargo",
                "test",
                "--",
                "--test-threads=1",
                "tests::adds",
                "runs_binary",
                "--exact"
            ])])
        );
    }

    #[test]
    fn cargo_selection_leaves_doc_tests_out_and_gives_none_without_unit_tests_or_with_build_failures(
    ) {
        let cmd = argv(&["cargo", "test"]);
        assert_eq!(
            select_argv(
                Runner::Cargo,
                &cmd,
                &ids(&["m@doc::src/lib.rs - add (line 3)", "m@src/lib.rs::t"])
            ),
            Some(vec![argv(&["cargo", "test", "--", "--exact", "t"])])
        );
        assert_eq!(
            select_argv(
                Runner::Cargo,
                &cmd,
                &ids(&["m@doc::src/lib.rs - add (line 3)"])
            ),
            None
        );
        assert_eq!(
            select_argv(Runner::Cargo, &cmd, &ids(&["src/lib.rs - add (line 3)"])),
            None
        );
        assert_eq!(
            select_argv(Runner::Cargo, &cmd, &ids(&["m@[build]", "m@src/lib.rs::t"])),
            None
        );
    }

    // ---- go

    #[test]
    fn go_events_give_tests_subtests_and_failures_outside_tests() {
        let results = go(include_str!(
            "../../tests/data/testresults/go_json_stdout.jsonl"
        ));
        assert_eq!(
            statuses(&results),
            expect(&[
                ("example.com/m/broken::[build]", Fail),
                ("example.com/m/calc::TestAdd", Pass),
                ("example.com/m/calc::TestAddCases", Fail),
                ("example.com/m/calc::TestAddCases/positive", Pass),
                ("example.com/m/calc::TestAddCases/negative_numbers", Pass),
                ("example.com/m/calc::TestAddCases/wrong_on_purpose", Fail),
                ("example.com/m/calc::TestAddCases/a/b_(slash)", Pass),
                ("example.com/m/calc::TestNested", Pass),
                ("example.com/m/calc::TestNested/outer", Pass),
                ("example.com/m/calc::TestNested/outer/inner", Pass),
                ("example.com/m/calc::TestSkipped", Skip),
                ("example.com/m/calc::TestFailsWithLog", Fail),
                ("example.com/m/calc::TestParallelA", Pass),
                // Printed by TestParallelA; test2json cannot tell it from a real test.
                ("example.com/m/calc::TestFake", Fail),
                ("example.com/m/exitmain::TestOK", Pass),
                ("example.com/m/exitmain::[package]", Fail),
                ("example.com/m/panicky::TestFine", Pass),
                ("example.com/m/panicky::TestPanics", Fail),
                ("example.com/m/printer::TestPrints", Pass),
                ("example.com/m/printer::TestGoroutinePanicAfter", Pass),
            ])
        );
        assert_eq!(
            message_of(&results, "example.com/m/calc::TestFailsWithLog"),
            "printed to stdout directly\n    calc_test.go:47: a log line\n    calc_test.go:48: first error\n        \
             second line of error"
        );
        assert_eq!(
            message_of(&results, "example.com/m/broken::[build]"),
            "FAIL\texample.com/m/broken [build failed]"
        );
        assert_eq!(
            message_of(&results, "example.com/m/exitmain::[package]"),
            "PASS\nFAIL\texample.com/m/exitmain\t0.001s"
        );
        assert!(message_of(&results, "example.com/m/panicky::TestPanics")
            .starts_with("panic: assignment to entry in nil map [recovered]\n"));
    }

    #[test]
    fn go_passing_run_gives_passes_with_durations_and_ignores_packages_without_tests() {
        assert_eq!(
            go(include_str!(
                "../../tests/data/testresults/go_json_passing.jsonl"
            )),
            vec![
                result("example.com/m/printer::TestPrints", Pass, Some(0), None),
                result(
                    "example.com/m/printer::TestGoroutinePanicAfter",
                    Pass,
                    Some(0),
                    None
                ),
            ]
        );
    }

    #[test]
    fn go_compiler_output_merged_into_stdout_becomes_the_build_message() {
        assert_eq!(
            go(include_str!("../../tests/data/testresults/go_json_build_failure_merged.jsonl")),
            vec![
                result(
                    "example.com/m/broken::[build]",
                    Fail,
                    None,
                    Some(
                        "broken/broken.go:3:23: cannot use \"nope\" (untyped string constant) as int value in \
                         return statement"
                    )
                ),
                result("example.com/m/printer::TestPrints", Pass, Some(0), None),
                result("example.com/m/printer::TestGoroutinePanicAfter", Pass, Some(0), None),
            ]
        );
    }

    #[test]
    fn go_timeout_fails_the_tests_that_never_finished() {
        let results = go(include_str!(
            "../../tests/data/testresults/go_json_timeout.jsonl"
        ));
        assert_eq!(
            statuses(&results),
            expect(&[
                ("example.com/m/hangs::TestQuick", Pass),
                ("example.com/m/hangs::TestHangs", Fail),
                ("example.com/m/hangs::TestHangs/sub_hang", Fail),
            ])
        );
        assert_eq!(
            message_of(&results, "example.com/m/hangs::TestHangs"),
            go::NO_RESULT_FOR_TESTS
        );
        assert!(
            message_of(&results, "example.com/m/hangs::TestHangs/sub_hang")
                .starts_with("panic: test timed out after 1s\n")
        );
    }

    #[test]
    fn go_package_failing_without_a_failed_test_or_any_event_still_fails() {
        let text = "{\"Action\":\"output\",\"Package\":\"p\",\"Output\":\"FAIL\\tp\\t0.1s\\n\"}\n\
                    {\"Action\":\"fail\",\"Package\":\"p\",\"Elapsed\":0.1}\n\
                    {\"Action\":\"fail\",\"Package\":\"q\",\"Elapsed\":0,\"FailedBuild\":\"q [q.test]\"}\n\
                    FAIL\tr [setup failed]\n";
        assert_eq!(
            go(text),
            vec![
                result("p::[package]", Fail, None, Some("FAIL\tp\t0.1s")),
                result("q::[build]", Fail, None, Some("build failed")),
                result("r::[build]", Fail, None, Some("FAIL\tr [setup failed]")),
            ]
        );
    }

    #[test]
    fn go_selection_runs_each_package_with_an_anchored_run_pattern() {
        let cmd = argv(&[
            "go", "test", "-json", "-count=1", "-run", "Old", "-timeout", "5m", "./...", "-tags",
            "x",
        ]);
        let selected = ids(&[
            "example.com/m/calc::TestAdd",
            "example.com/m/calc::TestSkipped",
            "example.com/m/calc::TestAddCases/negative_numbers",
            "example.com/m/calc::TestAddCases/a/b_(slash)",
            "example.com/m/calc::TestNested/outer",
            "example.com/m/calc::TestNested/outer/inner",
            "example.com/m/other::TestX",
        ]);
        let base = [
            "go", "test", "-json", "-count=1", "-timeout", "5m", "-tags", "x",
        ];
        let with = |extra: &[&str]| argv(&[&base[..], extra].concat());
        assert_eq!(
            select_argv(Runner::Go, &cmd, &selected),
            Some(vec![
                with(&[
                    "-run",
                    "^(TestAdd|TestSkipped)$|^TestAddCases$/^negative_numbers$|^TestAddCases$/^a$/^b_\\(slash\\)$\
                     |^TestNested$/^outer$|^TestNested$/^outer$/^inner$",
                    "example.com/m/calc",
                ]),
                with(&["-run", "^TestX$", "example.com/m/other"]),
            ])
        );
    }

    #[test]
    fn go_selection_covers_subtests_by_a_selected_parent_and_whole_packages_for_build_ids() {
        let cmd = argv(&["go", "test", "-json", "./...", "-args", "-v"]);
        assert_eq!(
            select_argv(
                Runner::Go,
                &cmd,
                &ids(&[
                    "m/a::TestP/sub",
                    "m/a::TestP",
                    "m/b::[build]",
                    "m/c::[package]",
                    "m/c::TestZ"
                ])
            ),
            Some(vec![
                argv(&["go", "test", "-json", "-run", "^TestP$", "m/a", "-args", "-v"]),
                argv(&["go", "test", "-json", "m/b", "-args", "-v"]),
                argv(&["go", "test", "-json", "m/c", "-args", "-v"]),
            ])
        );
        assert_eq!(select_argv(Runner::Go, &cmd, &ids(&["no-separator"])), None);
        assert_eq!(
            select_argv(Runner::Go, &argv(&["make"]), &ids(&["m::T"])),
            None
        );
    }

    // ---- pytest

    fn pytest_root() -> PathBuf {
        Path::new(DATA).join("pytest_project")
    }

    fn pytest_statuses() -> Vec<(String, TestStatus)> {
        expect(&[
            ("tests/test_broken.py", Fail),
            ("tests/sub.dir/test_dotted.py::test_in_dotted_dir", Pass),
            ("tests/test_calc.py::test_adds", Pass),
            ("tests/test_calc.py::test_adds_wrong", Fail),
            ("tests/test_calc.py::test_param[1-2-3]", Pass),
            ("tests/test_calc.py::test_param[2-2-5]", Fail),
            ("tests/test_calc.py::test_param[x-y-xy]", Pass),
            ("tests/test_calc.py::test_weird_ids[a::b]", Pass),
            ("tests/test_calc.py::test_weird_ids[with space]", Pass),
            ("tests/test_calc.py::test_weird_ids[br[ack]et]", Pass),
            ("tests/test_calc.py::test_skipped", Skip),
            ("tests/test_calc.py::test_xfail", Skip),
            ("tests/test_calc.py::test_xpass_strict", Fail),
            ("tests/test_calc.py::TestGroup::test_in_class", Pass),
            ("tests/test_calc.py::TestGroup::test_in_class_fails", Fail),
            (
                "tests/test_calc.py::TestGroup::TestInner::test_inner[1]",
                Pass,
            ),
            (
                "tests/test_calc.py::TestGroup::TestInner::test_inner[2]",
                Fail,
            ),
            ("tests/test_calc.py::test_fixture_error", Fail),
            ("tests/test_calc.py::test_teardown_error", Fail),
            ("tests/test_calc.py::test_exits_output", Pass),
            ("tests/test_calc.py::test_slow", Pass),
        ])
    }

    #[test]
    fn pytest_xunit1_gives_node_ids_for_classes_params_errors_and_collection_failures() {
        let xml = include_str!("../../tests/data/testresults/pytest_xunit1.xml");
        let results = run(Runner::Pytest, "", Some(xml), Path::new("/nonexistent"));
        assert_eq!(statuses(&results), pytest_statuses());
        assert_eq!(
            results
                .iter()
                .find(|r| r.id.ends_with("test_slow"))
                .and_then(|r| r.duration_ms),
            Some(50)
        );
        assert_eq!(
            message_of(&results, "tests/test_calc.py::TestGroup::TestInner::test_inner[2]"),
            "assert 2 == 1\n\n\
             self = <test_calc.TestGroup.TestInner object at 0x7fdad0e93090>, n = 2\n\n    \
             @pytest.mark.parametrize(\"n\", [1, 2])\n    def test_inner(self, n):\n>       assert n == 1\n\
             E       assert 2 == 1\n\ntests/test_calc.py:50: AssertionError"
        );
        assert_eq!(
            message_of(&results, "tests/test_calc.py::test_xpass_strict"),
            "[XPASS(strict)] should fail"
        );
        assert!(message_of(&results, "tests/test_broken.py").starts_with(
            "collection failure\n\nImportError while importing test module '/tmp/trp/pyproj/tests/test_broken.py'."
        ));
    }

    #[test]
    fn pytest_xunit2_without_file_attributes_finds_the_module_files_under_the_checkout() {
        let xml = include_str!("../../tests/data/testresults/pytest_xunit2.xml");
        let results = run(Runner::Pytest, "", Some(xml), &pytest_root());
        assert_eq!(statuses(&results), pytest_statuses());
    }

    #[test]
    fn pytest_xunit2_without_the_checkout_guesses_modules_from_the_dotted_names() {
        let xml = include_str!("../../tests/data/testresults/pytest_xunit2.xml");
        let results = run(Runner::Pytest, "", Some(xml), Path::new("/nonexistent"));
        let mut expected = pytest_statuses();
        // A dot in a directory name cannot be told from a package separator without the files.
        expected[1].0 = "tests/sub/dir/test_dotted.py::test_in_dotted_dir".into();
        assert_eq!(statuses(&results), expected);
    }

    #[test]
    fn pytest_passing_run_and_a_missing_junit_file() {
        let xml = include_str!("../../tests/data/testresults/pytest_passing.xml");
        assert_eq!(
            run(Runner::Pytest, "", Some(xml), Path::new(".")),
            vec![
                result("tests/test_calc.py::test_adds", Pass, Some(0), None),
                result(
                    "tests/test_calc.py::TestGroup::test_in_class",
                    Pass,
                    Some(0),
                    None
                ),
            ]
        );
        let stdout = include_str!("../../tests/data/testresults/pytest_xunit1_stdout.txt");
        assert_eq!(run(Runner::Pytest, stdout, None, Path::new(".")), vec![]);
    }

    #[test]
    fn pytest_junit_cut_off_inside_a_failure_keeps_the_failure() {
        let xml = include_str!("../../tests/data/testresults/pytest_xunit1.xml");
        let cut = &xml[..xml.find("E       assert 4 == 5").unwrap_or(xml.len())];
        assert_eq!(
            statuses(&run(Runner::Pytest, "", Some(cut), Path::new("."))),
            expect(&[
                ("tests/test_broken.py", Fail),
                ("tests/sub.dir/test_dotted.py::test_in_dotted_dir", Pass),
                ("tests/test_calc.py::test_adds", Pass),
                ("tests/test_calc.py::test_adds_wrong", Fail),
            ])
        );
    }

    #[test]
    fn pytest_selection_replaces_positional_paths_with_node_ids_and_keeps_option_values() {
        let cmd = argv(&[
            "python3",
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-ojunit_family=xunit1",
            "--junitxml={junit}",
            "tests",
            "-k",
            "not slow",
            "--continue-on-collection-errors",
            "other/",
        ]);
        let selected = ids(&[
            "tests/test_calc.py::test_param[2-2-5]",
            "tests/test_broken.py",
            "tests/test_broken.py",
        ]);
        assert_eq!(
            select_argv(Runner::Pytest, &cmd, &selected),
            Some(vec![argv(&[
                "python3",
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:cacheprovider",
                "-ojunit_family=xunit1",
                "--junitxml={junit}",
                "-k",
                "not slow",
                "--continue-on-collection-errors",
                "tests/test_calc.py::test_param[2-2-5]",
                "tests/test_broken.py",
            ])])
        );
        assert_eq!(
            select_argv(Runner::Pytest, &argv(&["tox"]), &selected),
            None
        );
    }

    // ---- node

    fn node_root() -> PathBuf {
        Path::new(DATA).join("node_project")
    }

    /// A sample captured in /tmp/trp/nodeproj, moved to the copy of that project kept with the samples.
    fn relocated(sample: &str) -> String {
        sample.replace("/tmp/trp/nodeproj", &node_root().to_string_lossy())
    }

    fn node(stdout: &str, junit: Option<&str>) -> Vec<TestResult> {
        let junit = junit.map(relocated);
        run(
            Runner::Node,
            &relocated(stdout),
            junit.as_deref(),
            &node_root(),
        )
    }

    fn node_statuses() -> Vec<(String, TestStatus)> {
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

    #[test]
    fn node_junit_with_spec_output_puts_each_test_under_its_file() {
        let results = node(
            include_str!("../../tests/data/testresults/node_spec_stdout.txt"),
            Some(include_str!(
                "../../tests/data/testresults/node_spec_junit.xml"
            )),
        );
        assert_eq!(statuses(&results), node_statuses());
        assert_eq!(
            results
                .iter()
                .find(|r| r.id == "test/math.test.js::adds")
                .and_then(|r| r.duration_ms),
            Some(1)
        );
        assert_eq!(
            message_of(&results, "test/math.test.js::Calculator > division > throws on zero?"),
            format!(
                "Error [ERR_TEST_FAILURE]: division exploded\nsecond line\n    at async Promise.all (index 0) {{\n  \
                 code: 'ERR_TEST_FAILURE',\n  failureType: 'testCodeFailure',\n  cause: Error: division exploded\n  \
                 second line\n      at TestContext.<anonymous> ({}/test/math.test.js:26:13)\n      \
                 at async Promise.all (index 0)\n}}",
                node_root().display()
            )
        );
    }

    #[test]
    fn node_junit_with_tap_output_and_tap_output_alone_give_the_same_results() {
        let tap = include_str!("../../tests/data/testresults/node_tap_stdout.txt");
        let with_junit = node(
            tap,
            Some(include_str!(
                "../../tests/data/testresults/node_tap_junit.xml"
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
        let spec = include_str!("../../tests/data/testresults/node_hooks_spec_stdout.txt");
        let junit = include_str!("../../tests/data/testresults/node_hooks_junit.xml");
        let with_junit = run(Runner::Node, spec, Some(junit), root);
        assert_eq!(statuses(&with_junit), expected);
        assert_eq!(
            message_of(&with_junit, "test/hooks.test.js::parent throws after subtests"),
            "Error: parent boom\n    at TestContext.<anonymous> (/tmp/trp/nodeextra/test/hooks.test.js:8:9)"
        );
        let tap = include_str!("../../tests/data/testresults/node_hooks_tap_stdout.txt");
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

    #[test]
    fn node_run_filtered_by_name_pattern_reports_only_the_selected_tests() {
        let results = node(
            include_str!("../../tests/data/testresults/node_selected_stdout.txt"),
            Some(include_str!(
                "../../tests/data/testresults/node_selected_junit.xml"
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
    fn node_test_name_found_in_two_files_goes_to_the_file_holding_its_neighbours() {
        // A rerun of `adds` in test/other.test.mjs only; test/math.test.js has an `adds` too.
        let junit = include_str!("../../tests/data/testresults/node_selected_one_file_junit.xml");
        assert_eq!(
            run(Runner::Node, "", Some(junit), &node_root()),
            vec![result("test/other.test.mjs::adds", Pass, Some(2), None)]
        );
    }

    #[test]
    fn node_tests_whose_file_cannot_be_found_get_an_empty_file() {
        let junit =
            "<testsuites><testcase name=\"only\" time=\"0.002\" classname=\"test\"/></testsuites>";
        assert_eq!(
            run(Runner::Node, "", Some(junit), Path::new("/nonexistent")),
            vec![result("::only", Pass, Some(2), None)]
        );
        assert_eq!(
            run(Runner::Node, "✔ only (1ms)\n", None, Path::new(".")),
            vec![]
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
