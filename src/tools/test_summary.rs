//! What a test run's output says, read for a small model: the first compiler or test error with its
//! location, and the names of the failing tests. A model acts on the first error far better than on the
//! last sixty lines of a log, where the error is often cut off or buried under a backtrace.
//!
//! The reading is a heuristic over the common runners' formats (cargo and rustc, pytest, go test, node's
//! TAP and mocha-like reporters); what it does not recognise leaves the summary empty and the output tail
//! is still shown. `go test -json` events are read as the text go prints without `-json` (see
//! [`readable`]).

use crate::gate::results::go_events_as_text;

/// The failing tests and first error of one run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// How many tests ran, when the output says (cargo's `running N tests`, go's `-json` events, node's
    /// `tests N`, pytest's `no tests ran`): a run of 0 tests proves nothing, whatever its exit status.
    pub ran: Option<usize>,
    /// The first error, with its location line when the runner gives one.
    pub first_error: Option<String>,
    /// Failing tests in the order the output names them, without duplicates.
    pub failing: Vec<String>,
}

/// Characters of the first error kept.
const ERROR_CHARS: usize = 600;
/// Failing test names listed.
const MAX_NAMES: usize = 20;

/// Reads `output`.
pub fn summarize(output: &str) -> Summary {
    let go_text = go_events_as_text(output);
    let lines: Vec<&str> = go_text.as_deref().unwrap_or(output).lines().collect();
    let mut failing: Vec<String> = Vec::new();
    let mut push = |name: &str| {
        let name = name.trim();
        if !name.is_empty() && !failing.iter().any(|n| n == name) {
            failing.push(name.to_string());
        }
    };
    for line in &lines {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("test ") {
            if let Some(name) = rest.strip_suffix(" ... FAILED") {
                push(name);
            }
        } else if let Some(rest) = t.strip_prefix("FAILED ") {
            push(rest.split(" - ").next().unwrap_or(rest));
        } else if let Some(rest) = t.strip_prefix("--- FAIL: ") {
            push(rest.split(" (").next().unwrap_or(rest));
        } else if let Some(rest) = t.strip_prefix("not ok ") {
            // TAP: `not ok 3 - name`.
            let rest = rest.trim_start_matches(|c: char| c.is_ascii_digit()).trim();
            push(rest.strip_prefix("- ").unwrap_or(rest));
        }
    }
    failing.truncate(MAX_NAMES);
    Summary {
        ran: ran(&output.lines().collect::<Vec<_>>()),
        first_error: first_error(&lines),
        failing,
    }
}

/// The output as a model should read it: `go test -json` events as the text `go test` prints without
/// `-json` (a model reads `--- FAIL: TestPorts` and `ports_test.go:12: got 2`, not escaped JSON); any
/// other output as it is.
pub fn readable(output: &str) -> std::borrow::Cow<'_, str> {
    match go_events_as_text(output) {
        Some(text) => std::borrow::Cow::Owned(text),
        None => std::borrow::Cow::Borrowed(output),
    }
}

/// How many tests ran, if the output says.
fn ran(lines: &[&str]) -> Option<usize> {
    let mut cargo: Option<usize> = None;
    let mut go_events = false;
    for line in lines {
        let t = line.trim();
        // cargo: `running 3 tests` once per test binary (and the doc-tests).
        if let Some(n) = t
            .strip_prefix("running ")
            .and_then(|r| r.strip_suffix(" tests").or_else(|| r.strip_suffix(" test")))
            .and_then(|n| n.parse::<usize>().ok())
        {
            cargo = Some(cargo.unwrap_or(0) + n);
        }
        // node: `# tests 3` (TAP) or `ℹ tests 3` (spec).
        if let Some(n) = t
            .strip_prefix("# tests ")
            .or_else(|| t.strip_prefix("ℹ tests "))
            .and_then(|n| n.trim().parse::<usize>().ok())
        {
            return Some(n);
        }
        if t.starts_with("no tests ran") || t.contains(" no tests ran in ") {
            return Some(0);
        }
        if t.starts_with("{\"") && t.contains("\"Action\":") {
            go_events = true;
            if t.contains("\"Action\":\"run\"") {
                return None;
            }
        }
    }
    cargo.or(go_events.then_some(0))
}

/// The first error line and the line that locates it.
fn first_error(lines: &[&str]) -> Option<String> {
    for (i, line) in lines.iter().enumerate() {
        let t = line.trim();
        let next = |n: usize| lines.get(i + n).map(|l| l.trim()).unwrap_or_default();
        // node's TAP: `error: |-` in a failing test's YAML block, the message indented under it
        // (`Expected values to be strictly equal:`, `1 !== 2`), its `location:` a few lines above.
        if matches!(t, "error: |-" | "error: |" | "error: >-" | "error: >") {
            let indent = indent_of(line);
            let message: Vec<&str> = lines[i + 1..]
                .iter()
                .take_while(|l| l.trim().is_empty() || indent_of(l) > indent)
                .map(|l| l.trim())
                .filter(|l| !l.is_empty())
                .collect();
            let at = lines[i.saturating_sub(6)..i]
                .iter()
                .rev()
                .find_map(|l| l.trim().strip_prefix("location: "))
                .map(|l| format!(" at {}", l.trim_matches('\'')))
                .unwrap_or_default();
            return Some(cut(&format!("{}{at}", message.join(" "))));
        }
        // rustc: `error[E0308]: mismatched types` then `--> src/lib.rs:3:5`.
        if (t.starts_with("error[") || t.starts_with("error:"))
            && !t.starts_with("error: could not compile")
            && !t.starts_with("error: test failed")
            && !t.starts_with("error: aborting")
        {
            let at = (1..=3)
                .map(next)
                .find(|l| l.starts_with("-->"))
                .map(|l| format!(" at {}", l.trim_start_matches("-->").trim()))
                .unwrap_or_default();
            return Some(cut(&format!("{t}{at}")));
        }
        // A Rust test: `thread 'x' panicked at src/lib.rs:10:5:` then the message, with the values an
        // `assert_eq!` compared (`  left: [1]`, ` right: [2]`) on the lines after it.
        if t.starts_with("thread '") && t.contains("panicked at") {
            let message: Vec<&str> = lines[i + 1..]
                .iter()
                .map(|l| l.trim())
                .take_while(|l| !l.is_empty() && !l.starts_with("note:"))
                .take(8)
                .collect();
            return Some(cut(&format!("{t} {}", message.join(" "))));
        }
        // Python: `  File "calc.py", line 3` ... `SyntaxError: ...` (collection errors, tracebacks).
        if t.starts_with("E   ") {
            let at = lines[i..]
                .iter()
                .map(|l| l.trim())
                .find(|l| is_python_location(l))
                .map(|l| format!(" at {l}"))
                .unwrap_or_default();
            return Some(cut(&format!("{}{at}", t.trim_start_matches('E').trim())));
        }
        // Go and TypeScript compilers: `./calc.go:3:2: undefined: foo`, `src/a.ts(3,5): error TS2322: ...`.
        if t.contains(": error TS") || is_go_build_error(t) {
            return Some(cut(t));
        }
    }
    // A Go test failure: `calc_test.go:12: got 1, want 2` after `--- FAIL`.
    lines
        .iter()
        .map(|l| l.trim())
        .find(|l| l.contains("_test.go:"))
        .map(cut)
}

/// The spaces before a line's text.
fn indent_of(line: &str) -> usize {
    line.len() - line.trim_start().len()
}

/// `calc.py:12: AssertionError`.
fn is_python_location(line: &str) -> bool {
    let mut parts = line.splitn(3, ':');
    let (Some(file), Some(n)) = (parts.next(), parts.next()) else {
        return false;
    };
    file.ends_with(".py") && !n.is_empty() && n.chars().all(|c| c.is_ascii_digit())
}

/// `./calc.go:3:2: undefined: foo`.
fn is_go_build_error(line: &str) -> bool {
    let mut parts = line.splitn(4, ':');
    let (Some(file), Some(l), Some(c)) = (parts.next(), parts.next(), parts.next()) else {
        return false;
    };
    file.ends_with(".go")
        && !file.ends_with("_test.go")
        && [l, c]
            .iter()
            .all(|n| !n.is_empty() && n.chars().all(|ch| ch.is_ascii_digit()))
}

fn cut(text: &str) -> String {
    if text.chars().count() <= ERROR_CHARS {
        return text.to_string();
    }
    let mut s: String = text.chars().take(ERROR_CHARS).collect();
    s.push('…');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rust_compiler_error_comes_with_its_location() {
        let out =
            "   Compiling calc v0.1.0\nerror[E0308]: mismatched types\n --> src/lib.rs:2:5\n  |\n\
                   2 |     \"x\"\nerror: could not compile `calc`\n";
        assert_eq!(
            summarize(out),
            Summary {
                ran: None,
                first_error: Some("error[E0308]: mismatched types at src/lib.rs:2:5".into()),
                failing: vec![],
            }
        );
    }

    #[test]
    fn failing_cargo_tests_are_named_with_the_first_panic() {
        let out =
            "running 2 tests\ntest tests::sub ... ok\ntest tests::add ... FAILED\n\nfailures:\n\n\
                   ---- tests::add stdout ----\n\nthread 'tests::add' panicked at src/lib.rs:9:9:\n\
                   assertion `left == right` failed\n  left: -1\n right: 5\nnote: run with \
                   `RUST_BACKTRACE=1` environment variable to display a backtrace\n\nfailures:\n    tests::add\n";
        let s = summarize(out);
        assert_eq!(s.failing, vec!["tests::add"]);
        // The values compared come with it: the model sees what its code returned.
        assert_eq!(
            s.first_error.as_deref(),
            Some(
                "thread 'tests::add' panicked at src/lib.rs:9:9: assertion `left == right` failed \
                 left: -1 right: 5"
            )
        );
    }

    #[test]
    fn a_node_tap_failure_gives_the_assertion_message_not_the_yaml_key() {
        // node 20's `node --test` output, as captured from a real run.
        let out = "TAP version 13\n# Subtest: topK\nnot ok 1 - topK\n  ---\n  duration_ms: 7.74\n  \
                   location: '/w/test/a.test.js:3:1'\n  failureType: 'testCodeFailure'\n  error: |-\n    \
                   Expected values to be strictly equal:\n    \n    1 !== 2\n    \n  code: 'ERR_ASSERTION'\n  \
                   name: 'AssertionError'\n  ...\n1..1\n# tests 1\n# fail 1\n";
        let s = summarize(out);
        assert_eq!(s.failing, vec!["topK"]);
        assert_eq!(
            s.first_error.as_deref(),
            Some("Expected values to be strictly equal: 1 !== 2 at /w/test/a.test.js:3:1")
        );
    }

    #[test]
    fn pytest_failures_give_the_test_ids_and_the_assertion_with_its_line() {
        let out = "    def test_add():\n>       assert add(2, 3) == 5\nE       assert -1 == 5\n\n\
                   test_calc.py:5: AssertionError\n=== short test summary info ===\n\
                   FAILED test_calc.py::test_add - assert -1 == 5\n1 failed, 1 passed in 0.02s\n";
        let s = summarize(out);
        assert_eq!(s.failing, vec!["test_calc.py::test_add"]);
        assert_eq!(
            s.first_error.as_deref(),
            Some("assert -1 == 5 at test_calc.py:5: AssertionError")
        );
    }

    #[test]
    fn go_failures_and_build_errors_are_read() {
        let s = summarize("--- FAIL: TestAdd (0.00s)\n    calc_test.go:8: got -1, want 5\nFAIL\n");
        assert_eq!(s.failing, vec!["TestAdd"]);
        assert_eq!(
            s.first_error.as_deref(),
            Some("calc_test.go:8: got -1, want 5")
        );
        let s = summarize("# calc\n./calc.go:4:9: undefined: x\nFAIL calc [build failed]\n");
        assert_eq!(
            s.first_error.as_deref(),
            Some("./calc.go:4:9: undefined: x")
        );
    }

    /// `go test -json` output of a failing test, as Go 1.19 prints it (the events of one test).
    const GO_JSON_FAIL: &str = r#"{"Time":"2026-12-05T03:00:00Z","Action":"run","Package":"ports","Test":"TestParse"}
{"Time":"2026-12-05T03:00:00Z","Action":"output","Package":"ports","Test":"TestParse","Output":"=== RUN   TestParse\n"}
{"Time":"2026-12-05T03:00:00Z","Action":"output","Package":"ports","Test":"TestParse","Output":"    ports_test.go:12: Parse(\"80-81\") = [80], want [80 81]\n"}
{"Time":"2026-12-05T03:00:00Z","Action":"output","Package":"ports","Test":"TestParse","Output":"--- FAIL: TestParse (0.00s)\n"}
{"Time":"2026-12-05T03:00:00Z","Action":"fail","Package":"ports","Test":"TestParse","Elapsed":0}
{"Time":"2026-12-05T03:00:00Z","Action":"output","Package":"ports","Output":"FAIL\n"}
{"Time":"2026-12-05T03:00:00Z","Action":"fail","Package":"ports","Elapsed":0.01}
"#;

    #[test]
    fn go_json_events_are_read_as_the_text_go_prints() {
        let s = summarize(GO_JSON_FAIL);
        assert_eq!(s.failing, vec!["TestParse"]);
        assert_eq!(
            s.first_error.as_deref(),
            Some("ports_test.go:12: Parse(\"80-81\") = [80], want [80 81]")
        );
        assert_eq!(s.ran, None);
        let text = readable(GO_JSON_FAIL);
        assert!(
            text.starts_with("=== RUN   TestParse\n    ports_test.go:12:"),
            "{text}"
        );
        assert!(
            text.contains("--- FAIL: TestParse (0.00s)\nFAIL\n"),
            "{text}"
        );
        assert!(!text.contains("\"Action\""), "{text}");
        // Build errors come as plain lines between events and stay.
        let mixed =
            "# ports\n./ports.go:3:2: undefined: x\n{\"Action\":\"output\",\"Package\":\"ports\",\
                     \"Output\":\"FAIL\\tports [build failed]\\n\"}\n";
        assert_eq!(
            readable(mixed),
            "# ports\n./ports.go:3:2: undefined: x\nFAIL\tports [build failed]\n"
        );
        assert_eq!(readable("plain\n"), "plain\n");
    }

    #[test]
    fn the_number_of_tests_run_is_read_from_each_runner() {
        let cargo =
            "running 0 tests\n\ntest result: ok. 0 passed\n   Doc-tests calc\n\nrunning 0 tests\n";
        assert_eq!(summarize(cargo).ran, Some(0));
        assert_eq!(
            summarize("running 1 test\ntest t ... ok\nrunning 2 tests\n").ran,
            Some(3)
        );
        let go = "{\"Action\":\"output\",\"Package\":\"calc\",\"Output\":\"testing: warning: no tests to run\\n\"}\n\
                  {\"Action\":\"pass\",\"Package\":\"calc\",\"Elapsed\":0}\n";
        assert_eq!(summarize(go).ran, Some(0));
        let go = "{\"Action\":\"run\",\"Package\":\"calc\",\"Test\":\"TestAdd\"}\n";
        assert_eq!(summarize(go).ran, None);
        assert_eq!(summarize("ℹ tests 0\nℹ pass 0\n").ran, Some(0));
        assert_eq!(summarize("# tests 4\n# pass 4\n").ran, Some(4));
        assert_eq!(summarize("no tests ran in 0.01s\n").ran, Some(0));
        assert_eq!(summarize("all good\n").ran, None);
    }

    #[test]
    fn tap_output_names_the_failing_tests_and_plain_output_gives_nothing() {
        let s = summarize("ok 1 - sub\nnot ok 2 - add works\n");
        assert_eq!(s.failing, vec!["add works"]);
        assert_eq!(summarize("all good\n"), Summary::default());
    }
}
