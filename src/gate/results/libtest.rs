//! Cargo: per-test results read from libtest's human output, and `--exact` selections of them.
//!
//! The human output is what `cargo test` prints on every toolchain (libtest's JSON format needs nightly's
//! `-Z unstable-options`), so it is read line by line: one `running N tests` ... `test result:` block per
//! test binary, the `failures:` list as the binary's own verdict, and cargo's `Running ...` lines (on stderr)
//! to tell binaries apart.

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
        if t.starts_with("Compiling ") || t.starts_with("Finished ") || t.starts_with("Checking ") {
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
        Some((stem, hash)) if !hash.is_empty() && hash.bytes().all(|b| b.is_ascii_hexdigit()) => {
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

#[cfg(test)]
mod tests;
