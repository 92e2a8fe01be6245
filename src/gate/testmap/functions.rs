//! The test functions of a source file, per language: their ids within the file, their lines, their own
//! text, and how many assertions and skip markers they hold; and the tokens outside them.
//!
//! Python, Go and JavaScript/TypeScript tests come from tree-sitter grammars ([`crate::gate::syntax`]), Rust's
//! from `syn` in [`crate::gate::split`], the one place that decides what Rust test code is. Both give the
//! same thing: each test keyed by the name its runner reports (`TestA::test_y`, `TestX`, `suite > case`,
//! `tests::adds`), so base and head are compared test by test, never by the lines a diff touched.

use std::collections::BTreeMap;

use crate::gate::results::Runner;
use crate::gate::syntax::{self, Lang};

/// A test function in a source file: its id within the file, its name and its lines (1-based, inclusive).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TestFn {
    /// Its id within the file, as its runner names it: `TestA::test_y` (pytest), `TestX` (Go), `suite > case`
    /// (node), `tests::adds` (Rust: the inline modules and the name).
    pub key: String,
    pub name: String,
    pub start: usize,
    pub end: usize,
    /// Assertion-like calls in its body.
    pub assertions: usize,
    /// Skip markers on or in it (`#[ignore]`, `t.Skip`, `@pytest.mark.skip`, `test.skip`).
    pub skips: usize,
}

/// A file's tests with their own texts, and the tokens outside every test.
#[derive(Clone, Debug, Default)]
pub(super) struct FileTests {
    pub fns: Vec<TestFn>,
    /// Each test's own text, by key.
    pub texts: BTreeMap<String, String>,
    /// Tokens outside tests, comments and imports: helpers, fixtures, setup.
    pub rest: Vec<String>,
    pub imports: Vec<String>,
}

pub(super) fn lang(path: &str) -> Option<Runner> {
    let ext = path.rsplit_once('.').map(|(_, e)| e)?;
    match ext {
        "go" => Some(Runner::Go),
        "rs" => Some(Runner::Cargo),
        "py" => Some(Runner::Pytest),
        "js" | "mjs" | "cjs" | "ts" | "mts" | "cts" | "jsx" | "tsx" => Some(Runner::Node),
        _ => None,
    }
}

/// The test functions of a source file, by its extension; none for a file that does not parse.
pub fn test_functions(path: &str, text: &str) -> Vec<TestFn> {
    known_test_functions(path, text).unwrap_or_default()
}

/// The test functions of a source file, or None when they cannot be known: a file that does not parse.
pub(super) fn known_test_functions(path: &str, text: &str) -> Option<Vec<TestFn>> {
    file_tests(path, text).map(|f| f.fns)
}

/// A file's tests and the tokens outside them; None when the file does not parse. A file in no known
/// language has no tests.
pub(super) fn file_tests(path: &str, text: &str) -> Option<FileTests> {
    match lang(path) {
        Some(Runner::Cargo) => rust_tests(path, text),
        Some(_) => {
            let scan = syntax::scan(Lang::of(path)?, text)?;
            let mut out = FileTests {
                rest: scan.rest,
                imports: scan.imports,
                ..FileTests::default()
            };
            for t in scan.tests {
                out.texts.insert(t.key.clone(), t.text);
                out.fns.push(TestFn {
                    key: t.key,
                    name: t.name,
                    start: *t.lines.start(),
                    end: *t.lines.end(),
                    assertions: t.assertions,
                    skips: t.skips,
                });
            }
            Some(out)
        }
        None => Some(FileTests::default()),
    }
}

fn count_assertions(line: &str) -> usize {
    if line.trim_start().starts_with("//") {
        return 0;
    }
    [
        "assert!",
        "assert_eq!",
        "assert_ne!",
        "assert_matches!",
        "panic!(",
        "#[should_panic",
        ".unwrap_err()",
        "prop_assert",
    ]
    .iter()
    .map(|p| line.matches(p).count())
    .sum()
}

/// Rust tests from the parser in `split` (None if the file does not parse). In a file under `src/`, which
/// holds production code too, only the tokens of its test regions count as the code around the tests.
fn rust_tests(path: &str, text: &str) -> Option<FileTests> {
    let fns = crate::gate::split::rust_test_functions(text)?;
    let tokens = crate::gate::split::rust_tokens(text)?;
    let regions = if path.starts_with("src/") {
        Some(
            crate::gate::split::regions_for(path)
                .and_then(|f| f.test_regions(text))
                .unwrap_or_default(),
        )
    } else {
        None
    };
    let lines: Vec<&str> = text.lines().collect();
    let mut out = FileTests::default();
    for f in fns {
        let (start, end) = (*f.lines.start(), *f.lines.end());
        let body = lines
            .get(start.saturating_sub(1)..end.min(lines.len()))
            .unwrap_or_default();
        let mut key = f.module.join("::");
        if !key.is_empty() {
            key.push_str("::");
        }
        key.push_str(&f.name);
        out.texts.insert(
            key.clone(),
            body.iter()
                .map(|l| l.trim_end())
                .collect::<Vec<_>>()
                .join("\n"),
        );
        out.fns.push(TestFn {
            key,
            name: f.name,
            start,
            end,
            assertions: body.iter().map(|l| count_assertions(l)).sum(),
            skips: body.iter().map(|l| l.matches("#[ignore").count()).sum(),
        });
    }
    for t in tokens {
        let in_fn = out.fns.iter().any(|f| f.start <= t.line && t.line <= f.end);
        let in_region = regions
            .as_ref()
            .is_none_or(|r| r.iter().any(|r| r.contains(&t.line)));
        if in_fn || !in_region {
            continue;
        }
        if t.import {
            out.imports.push(t.text);
        } else {
            out.rest.push(t.text);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_test_functions_are_found_with_their_assertions() {
        let src = "package x\n\nfunc helper() {}\n\nfunc TestA(t *testing.T) {\n\tif 1 != 1 {\n\t\tt.Fatal(\"x\")\n\t}\n}\n\nfunc TestB(t *testing.T) {\n\tt.Skip(\"later\")\n}\n";
        let fns = test_functions("x_test.go", src);
        assert_eq!(
            fns,
            vec![
                TestFn {
                    key: "TestA".into(),
                    name: "TestA".into(),
                    start: 5,
                    end: 9,
                    assertions: 1,
                    skips: 0
                },
                TestFn {
                    key: "TestB".into(),
                    name: "TestB".into(),
                    start: 11,
                    end: 13,
                    assertions: 0,
                    skips: 1
                },
            ]
        );
    }

    #[test]
    fn rust_test_functions_start_at_their_attributes_and_end_at_their_brace() {
        let src = "fn helper() -> &'static str { \"}\" }\n\n#[test]\n#[ignore]\nfn a() {\n    let s = '{';\n    assert_eq!(helper(), \"}\");\n}\n\n#[tokio::test]\nasync fn b() {\n    assert!(true);\n}\n";
        let fns = test_functions("tests/x.rs", src);
        assert_eq!(
            fns,
            vec![
                TestFn {
                    key: "a".into(),
                    name: "a".into(),
                    start: 3,
                    end: 8,
                    assertions: 1,
                    skips: 1
                },
                TestFn {
                    key: "b".into(),
                    name: "b".into(),
                    start: 10,
                    end: 13,
                    assertions: 1,
                    skips: 0
                },
            ]
        );
    }

    #[test]
    fn python_tests_include_their_multiline_decorators() {
        let src = "import pytest\n\n\n@pytest.mark.parametrize(\n    \"x\",\n    [1, 2],\n)\ndef test_x(x):\n    assert x\n\n\nclass TestC:\n    def test_y(self):\n        assert 1\n";
        let fns = test_functions("tests/test_a.py", src);
        assert_eq!(
            fns.iter()
                .map(|f| (f.name.as_str(), f.start, f.end))
                .collect::<Vec<_>>(),
            vec![("test_x", 4, 9), ("test_y", 13, 14)]
        );
    }

    #[test]
    fn node_tests_are_found_by_their_names() {
        let src = "const test = require('node:test');\n\ntest('adds', () => {\n  assert.strictEqual(1, 1);\n});\n\ndescribe('suite', () => {\n  it(\"works\", () => {\n    expect(1).toBe(1);\n  });\n});\n";
        let fns = test_functions("test/a.test.js", src);
        assert_eq!(
            fns.iter()
                .map(|f| (f.name.as_str(), f.start, f.end, f.assertions))
                .collect::<Vec<_>>(),
            vec![("adds", 3, 5, 1), ("works", 8, 10, 1)]
        );
    }

    #[test]
    fn rust_test_functions_are_found_past_braces_in_raw_strings_and_on_one_line() {
        let src = "#[test]\nfn a() {\n    let _ = r#\"a \" }\"#;\n    assert!(true);\n}\n\n#[test] fn b() { assert!(true); }\n\n#[test]\nfn c() {}\n";
        assert_eq!(
            test_functions("tests/x.rs", src)
                .iter()
                .map(|f| (f.name.as_str(), f.start, f.end, f.assertions))
                .collect::<Vec<_>>(),
            vec![("a", 1, 5, 1), ("b", 7, 7, 1), ("c", 9, 10, 0)]
        );
    }
}
