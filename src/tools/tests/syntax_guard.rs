//! The syntax guard: an edit or a write that would leave a source file that parsed unparseable is refused.

use pretty_assertions::assert_eq;
use serde_json::json;

use super::fixture;

const SCORES: &str = "function sortedNumbers(values) {\n  return [...values].sort();\n}\n\n/** The `k` largest values, largest first. */\nfunction topK(values, k) {\n  return sortedNumbers(values).reverse().slice(0, k);\n}\n\nmodule.exports = { topK };\n";

#[test]
fn an_edit_that_leaves_an_old_body_behind_is_refused_and_the_file_kept() {
    // As the 1.5B coder did on js-sort-numbers: a function's first line replaced by a whole function, the
    // old body and its closing brace left behind.
    let f = fixture(&[("scores.js", SCORES)]);
    let out = f.err(
        "edit",
        json!({
            "path": "scores.js",
            "old_string": "function topK(values, k) {",
            "new_string": "function topK(values, k) { return values.slice(0, k); }"
        }),
    );
    assert!(
        out.starts_with("Not changed: after this edit `scores.js` would not parse: line "),
        "{out}"
    );
    assert!(out.contains("The file is unchanged."), "{out}");
    assert!(
        out.contains("function topK(values, k) { return values.slice(0, k); }"),
        "{out}"
    );
    assert_eq!(f.read("scores.js"), SCORES);
    // The whole function replaced parses, and is written.
    let ok = f.ok(
        "edit",
        json!({
            "path": "scores.js",
            "old_string": "  return [...values].sort();",
            "new_string": "  return [...values].sort((a, b) => a - b);"
        }),
    );
    assert!(ok.starts_with("Edited scores.js"), "{ok}");
}

#[test]
fn rust_and_python_are_checked_and_a_file_broken_before_is_not() {
    let lib =
        "pub fn mean(values: &[u32]) -> Option<u32> {\n    Some(values.iter().sum::<u32>())\n}\n";
    let f = fixture(&[
        ("src/lib.rs", lib),
        ("stats.py", "def median(xs):\n    return xs[0]\n"),
        ("broken.py", "def f(:\n    pass\n"),
        ("notes.txt", "a\n"),
    ]);
    let out = f.err(
        "edit",
        json!({"path": "src/lib.rs", "old_string": "Some(values.iter().sum::<u32>())\n}", "new_string": "Some(1)"}),
    );
    assert!(
        out.starts_with("Not changed: after this edit `src/lib.rs` would not parse: line "),
        "{out}"
    );
    assert_eq!(f.read("src/lib.rs"), lib);
    let out = f.err(
        "write_file",
        json!({"path": "stats.py", "content": "def median(xs)\n    return xs[0]\n"}),
    );
    assert!(
        out.starts_with("Not changed: after this write_file `stats.py` would not parse: line 1"),
        "{out}"
    );
    // A new file is checked too.
    let out = f.err(
        "write_file",
        json!({"path": "tests/test_new.py", "content": "def test_x(:\n    assert True\n"}),
    );
    assert!(out.starts_with("Not changed:"), "{out}");
    assert!(!f.repo().join("tests/test_new.py").exists());
    // A file that did not parse before may be changed step by step; other files are not parsed.
    f.ok(
        "write_file",
        json!({"path": "broken.py", "content": "def f(:\n    return 1\n"}),
    );
    f.ok(
        "write_file",
        json!({"path": "notes.txt", "content": "{ unbalanced\n"}),
    );
}
