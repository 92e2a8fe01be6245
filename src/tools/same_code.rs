//! Whether two texts of a file are the same code: comments, doc comments, docstrings and layout aside.
//!
//! Asked for a fix, the 0.5B coder often sends the function back as it was, with its doc comment dropped
//! or reworded. The file changes, the code does not, and the tests pass as before: taken for a fix, that
//! sends the run on to write a test for a bug that is still there. Compared by tokens, such a reply
//! changes nothing.
//!
//! Rust is read with the gate's lexer ([`crate::gate::split::rust_tokens`]: comments dropped, doc comments
//! become `#[doc]` attributes, dropped here); Python, Go, JavaScript and TypeScript with their tree-sitter
//! grammars.

use crate::gate::syntax::{self, Lang};

/// Whether `a` and `b`, as texts of the file `rel`, hold the same code. False when either does not parse
/// or the language is not known: then they may differ.
pub(crate) fn same_code(rel: &str, a: &str, b: &str) -> bool {
    match (tokens(rel, a), tokens(rel, b)) {
        (Some(x), Some(y)) => x == y,
        _ => false,
    }
}

fn tokens(rel: &str, text: &str) -> Option<Vec<String>> {
    if rel.ends_with(".rs") {
        let tokens = crate::gate::split::rust_tokens(text)?;
        return Some(without_doc_attributes(
            tokens.into_iter().map(|t| t.text).collect(),
        ));
    }
    syntax::code_tokens(Lang::of(rel)?, text)
}

/// Rust tokens (a group's delimiters tokens of their own) without the doc attributes (`#[doc = ".."]`,
/// `#![doc = ".."]`) that doc comments lex to.
fn without_doc_attributes(tokens: Vec<String>) -> Vec<String> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        let bang = tokens.get(i + 1).is_some_and(|t| t == "!");
        let open = i + 1 + usize::from(bang);
        let is_doc = tokens[i] == "#"
            && tokens.get(open).is_some_and(|t| t == "[")
            && tokens.get(open + 1).is_some_and(|t| t == "doc");
        if !is_doc {
            out.push(tokens[i].clone());
            i += 1;
            continue;
        }
        // Past the attribute's closing bracket.
        let mut depth = 0usize;
        let mut at = open;
        while at < tokens.len() {
            match tokens[at].as_str() {
                "[" | "(" | "{" => depth += 1,
                "]" | ")" | "}" => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                _ => {}
            }
            at += 1;
        }
        i = at + 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_function_with_only_its_doc_comment_changed_is_the_same_code() {
        let old = "/// The maximum of every window.\n///\n/// More.\npub fn window_max(v: &[i64], size: usize) -> Vec<i64> {\n    // scan\n    let n = v.len() - size; // last\n    vec![n as i64]\n}\n";
        let new = "pub fn window_max(v: &[i64], size: usize) -> Vec<i64> {\n    let n = v.len()   - size;\n    vec![n as i64]\n}\n";
        assert!(same_code("src/lib.rs", old, new));
        let fixed = "pub fn window_max(v: &[i64], size: usize) -> Vec<i64> {\n    let n = v.len() - size + 1;\n    vec![n as i64]\n}\n";
        assert!(!same_code("src/lib.rs", old, fixed));
        // An attribute that is not a doc comment is code.
        assert!(!same_code(
            "src/lib.rs",
            "fn f() {}\n",
            "#[inline]\nfn f() {}\n"
        ));
    }

    #[test]
    fn python_docstrings_and_comments_are_not_code_but_strings_are() {
        let old = "def median(values):\n    \"\"\"The median.\"\"\"\n    ordered = sorted(values)  # sort\n    return ordered[len(ordered) // 2]\n";
        let new = "def median(values):\n    \"\"\"The median; raises ValueError when empty.\"\"\"\n    ordered = sorted(values)\n    return ordered[len(ordered)//2]\n";
        assert!(same_code("stats.py", old, new));
        let fixed = "def median(values):\n    if not values:\n        raise ValueError('empty')\n    ordered = sorted(values)\n    return ordered[len(ordered) // 2]\n";
        assert!(!same_code("stats.py", old, fixed));
        assert!(!same_code(
            "a.py",
            "def f():\n    return 'a'\n",
            "def f():\n    return 'b'\n"
        ));
    }

    #[test]
    fn go_and_javascript_comments_are_not_code() {
        assert!(same_code(
            "ports.go",
            "package p\n\n// Parse parses.\nfunc Parse(s string) int {\n\treturn len(s) // n\n}\n",
            "package p\n\nfunc Parse(s string) int {\n\treturn len(s)\n}\n"
        ));
        assert!(same_code(
            "scores.js",
            "/** Sorted. */\nfunction f(v) {\n  return [...v].sort(); // copy\n}\n",
            "function f(v) { return [...v].sort(); }\n"
        ));
        assert!(!same_code(
            "scores.js",
            "function f(v) {\n  return [...v].sort();\n}\n",
            "function f(v) {\n  return [...v].sort((a, b) => a - b);\n}\n"
        ));
    }

    #[test]
    fn text_that_does_not_parse_or_an_unknown_language_may_differ() {
        assert!(!same_code("a.py", "def f(:\n", "def f(:\n"));
        assert!(!same_code("notes.txt", "a", "a"));
    }
}
