//! The test functions of a source file, per language: their names, their lines, and how many assertions and
//! skip markers they hold.
//!
//! Go, Python and node test functions are found line by line (a `func TestX` at the start of a line, a
//! `def test_*` with the decorators above it, a `test(...)`/`it(...)` call): their shapes are regular enough.
//! Rust's are not (attributes, nested modules, macros, braces in strings), so they come from the parser in
//! [`crate::gate::split`], the one place that decides what Rust test code is.

use crate::gate::results::Runner;

/// A test function in a source file: its name and its lines (1-based, inclusive).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TestFn {
    pub name: String,
    pub start: usize,
    pub end: usize,
    /// Assertion-like calls in its body.
    pub assertions: usize,
    /// Skip markers on or in it (`#[ignore]`, `t.Skip`, `@pytest.mark.skip`, `test.skip`).
    pub skips: usize,
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

/// The test functions of a source file, by its extension; none for a Rust file that does not parse.
pub fn test_functions(path: &str, text: &str) -> Vec<TestFn> {
    known_test_functions(path, text).unwrap_or_default()
}

/// The test functions of a source file, or None when they cannot be known: a Rust file that does not parse.
pub(super) fn known_test_functions(path: &str, text: &str) -> Option<Vec<TestFn>> {
    let lines: Vec<&str> = text.lines().collect();
    let mut fns = match lang(path) {
        Some(Runner::Go) => go_fns(&lines),
        Some(Runner::Cargo) => rust_fns(text)?,
        Some(Runner::Pytest) => python_fns(&lines),
        Some(Runner::Node) => node_fns(&lines),
        _ => Vec::new(),
    };
    let l = lang(path);
    for f in &mut fns {
        let body = lines
            .get(f.start.saturating_sub(1)..f.end.min(lines.len()))
            .unwrap_or_default();
        f.assertions = body.iter().map(|line| count_assertions(l, line)).sum();
        f.skips = body.iter().map(|line| count_skips(l, line)).sum();
    }
    Some(fns)
}

fn count_assertions(l: Option<Runner>, line: &str) -> usize {
    let t = line.trim_start();
    if t.starts_with("//") || t.starts_with('#') && l != Some(Runner::Cargo) {
        return 0;
    }
    let pats: &[&str] = match l {
        Some(Runner::Go) => &[
            "t.Error", "t.Fatal", "t.Fail", "assert.", "require.", "b.Error", "b.Fatal",
        ],
        Some(Runner::Cargo) => &[
            "assert!",
            "assert_eq!",
            "assert_ne!",
            "assert_matches!",
            "panic!(",
            "#[should_panic",
            ".unwrap_err()",
            "prop_assert",
        ],
        Some(Runner::Pytest) => &[
            "assert ",
            "assert(",
            "self.assert",
            "pytest.raises",
            "pytest.fail",
            ".assert_",
        ],
        Some(Runner::Node) => &["assert.", "assert(", "expect(", "t.assert", ".should"],
        _ => &[],
    };
    pats.iter().map(|p| line.matches(p).count()).sum()
}

fn count_skips(l: Option<Runner>, line: &str) -> usize {
    let pats: &[&str] = match l {
        Some(Runner::Go) => &["t.Skip"],
        Some(Runner::Cargo) => &["#[ignore"],
        Some(Runner::Pytest) => &["mark.skip", "mark.xfail", "pytest.skip(", "unittest.skip"],
        Some(Runner::Node) => &[".skip(", ".todo(", "skip: true", "t.skip("],
        _ => &[],
    };
    pats.iter().map(|p| line.matches(p).count()).sum()
}

fn go_fns(lines: &[&str]) -> Vec<TestFn> {
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let Some(rest) = line.strip_prefix("func ") else {
            continue;
        };
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let is_test = ["Test", "Fuzz", "Example", "Benchmark"]
            .iter()
            .any(|p| name.starts_with(p));
        if !is_test {
            continue;
        }
        let end = lines[i..]
            .iter()
            .position(|l| l.starts_with('}'))
            .map_or(lines.len(), |p| i + p + 1);
        out.push(TestFn {
            name,
            start: i + 1,
            end,
            assertions: 0,
            skips: 0,
        });
    }
    out
}

/// Rust test functions, from the parser in `split` (None if the file does not parse).
fn rust_fns(text: &str) -> Option<Vec<TestFn>> {
    let fns = crate::gate::split::rust_test_functions(text)?;
    Some(
        fns.into_iter()
            .map(|f| TestFn {
                name: f.name,
                start: *f.lines.start(),
                end: *f.lines.end(),
                assertions: 0,
                skips: 0,
            })
            .collect(),
    )
}

fn indent(line: &str) -> usize {
    line.len() - line.trim_start().len()
}

fn python_fns(lines: &[&str]) -> Vec<TestFn> {
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let t = line.trim_start();
        let rest = t
            .strip_prefix("async def ")
            .or_else(|| t.strip_prefix("def "));
        let Some(rest) = rest else { continue };
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if !name.starts_with("test") {
            continue;
        }
        let ind = indent(line);
        let mut start = i;
        while start > 0
            && indent(lines[start - 1]) == ind
            && lines[start - 1].trim_start().starts_with('@')
        {
            start -= 1;
        }
        // A decorator may span lines (a parametrize list): walk up through lines indented deeper than `ind`
        // when an `@` line at `ind` is found above them.
        let mut probe = start;
        while probe > 0 {
            let prev = lines[probe - 1];
            if prev.trim().is_empty() {
                break;
            }
            if indent(prev) > ind
                || prev.trim_start().starts_with(')')
                || prev.trim_start().starts_with(']')
            {
                probe -= 1;
                continue;
            }
            if indent(prev) == ind && prev.trim_start().starts_with('@') {
                probe -= 1;
                start = probe;
                continue;
            }
            break;
        }
        let mut end = i + 1;
        for (j, l) in lines.iter().enumerate().skip(i + 1) {
            if l.trim().is_empty() {
                continue;
            }
            if indent(l) <= ind {
                break;
            }
            end = j + 1;
        }
        out.push(TestFn {
            name,
            start: start + 1,
            end,
            assertions: 0,
            skips: 0,
        });
    }
    out
}

/// Counts braces on a line, skipping string and char literals and `//` comments (roughly: enough for node's
/// `test(...)` calls; Rust test functions come from a parser instead, see [`rust_fns`]).
fn brace_delta(line: &str) -> i64 {
    let mut depth = 0i64;
    let mut chars = line.chars().peekable();
    let mut in_str = false;
    while let Some(c) = chars.next() {
        if in_str {
            match c {
                '\\' => {
                    chars.next();
                }
                '"' => in_str = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_str = true,
            '\'' => {
                // A char literal like '{' or '\n'; lifetimes ('a) have no closing quote soon after.
                let mut look = chars.clone();
                let a = look.next();
                let b = look.next();
                let c3 = look.next();
                if a == Some('\\') && c3 == Some('\'') || b == Some('\'') {
                    chars.next();
                    chars.next();
                    if a == Some('\\') {
                        chars.next();
                    }
                }
            }
            '/' if chars.peek() == Some(&'/') => break,
            '{' => depth += 1,
            '}' => depth -= 1,
            _ => {}
        }
    }
    depth
}

fn block_end(lines: &[&str], from: usize) -> usize {
    let mut depth = 0i64;
    let mut opened = false;
    for (j, line) in lines.iter().enumerate().skip(from) {
        let d = brace_delta(line);
        if line.contains('{') {
            opened = true;
        }
        depth += d;
        if opened && depth <= 0 {
            return j + 1;
        }
    }
    lines.len()
}

fn node_fns(lines: &[&str]) -> Vec<TestFn> {
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let t = line.trim_start();
        let callee: String = t
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '.' || *c == '_')
            .collect();
        let base = callee.split('.').next().unwrap_or("");
        if !matches!(base, "test" | "it") || !t[callee.len()..].starts_with('(') {
            continue;
        }
        let after = t[callee.len() + 1..].trim_start();
        let Some(q) = after
            .chars()
            .next()
            .filter(|c| matches!(c, '\'' | '"' | '`'))
        else {
            continue;
        };
        let Some(close) = after[1..].find(q) else {
            continue;
        };
        let name = after[1..1 + close].to_owned();
        out.push(TestFn {
            name,
            start: i + 1,
            end: block_end(lines, i),
            assertions: 0,
            skips: 0,
        });
    }
    out
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
                    name: "TestA".into(),
                    start: 5,
                    end: 9,
                    assertions: 1,
                    skips: 0
                },
                TestFn {
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
                    name: "a".into(),
                    start: 3,
                    end: 8,
                    assertions: 1,
                    skips: 1
                },
                TestFn {
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
