//! The guided strategy's reading of a reply: its fenced code blocks, and which file each goes to.

use super::Files;
use crate::agent::next_step::has_test_mark;
use crate::gate::syntax::{loaded_modules, Lang};
use crate::tools::definitions;

/// The fenced code blocks of a reply, in order; an unclosed last fence (the reply hit its token limit)
/// counts to the end.
pub(super) fn code_blocks(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if !line.trim_start().starts_with("```") {
            continue;
        }
        let mut body = Vec::new();
        for l in lines.by_ref() {
            if l.trim_start().starts_with("```") {
                break;
            }
            body.push(l);
        }
        let block = body.join("\n");
        if !block.trim().is_empty() {
            out.push(format!("{}\n", block.trim_end()));
        }
    }
    out
}

/// The fence name of a path's language.
pub(super) fn fence(rel: &str) -> &'static str {
    if rel.ends_with(".rs") {
        return "rust";
    }
    match Lang::of(rel) {
        Some(Lang::Python) => "python",
        Some(Lang::Go) => "go",
        Some(Lang::JavaScript) => "javascript",
        Some(Lang::TypeScript | Lang::Tsx) => "typescript",
        None => "",
    }
}

/// Whether a path is code of a language the guided strategy can place blocks in.
pub(in crate::agent) fn is_code(rel: &str) -> bool {
    !fence(rel).is_empty()
}

/// Whether a definition name (as [`definitions::defined`] gives it) is a test or a Rust tests module,
/// which existing code of the repository keeps as it is.
pub(super) fn is_test_code(name: &str) -> bool {
    is_test_name(name) || name == "mod tests" || name.starts_with("mod tests.")
}

/// Whether a definition name (as [`definitions::defined`] gives it) is a test.
pub(super) fn is_test_name(name: &str) -> bool {
    let last = name.rsplit(['.', ':']).next().unwrap_or(name);
    name.starts_with("test ")
        || last.starts_with("test_")
        || last.starts_with("Test")
        || name.starts_with("tests::")
}

/// Where a block goes: the source file whose definitions it shares most (a fix, perhaps with a Rust
/// tests module); else, for a block of tests, the test file sharing most names with it, or the first test
/// file (a Rust source file with its own tests module when there is none); else the first source file.
/// A JavaScript or TypeScript block that shares no name with the sources and asserts is a block of tests
/// too. Never a source file the block loads (`const { escapeHtml } = require("../html.js")`, `from stats import
/// median`): a module does not import itself, so that block is a test of it. The 0.5B's test block with
/// such a line, written into `html.js` because it named `escapeHtml`, broke the module for three turns.
pub(super) fn target(
    block: &str,
    files: &Files,
    text_of: impl Fn(&str) -> Option<String>,
) -> Option<String> {
    let first = files.sources.first().or(files.tests.first())?;
    let names = definitions::defined(first, block)?;
    let loads = |rel: &str| loads_file(block, rel);
    let sources: Vec<String> = files
        .sources
        .iter()
        .filter(|rel| !loads(rel))
        .cloned()
        .collect();
    let best = |among: &[String], tests: bool| -> Option<String> {
        let mut best: Option<(usize, &String)> = None;
        for rel in among {
            let Some(have) = text_of(rel).and_then(|t| definitions::defined(rel, &t)) else {
                continue;
            };
            let shared = names
                .iter()
                .filter(|n| tests || !is_test_name(n))
                .filter(|n| have.contains(*n))
                .count();
            if shared > 0 && best.is_none_or(|(n, _)| shared > n) {
                best = Some((shared, rel));
            }
        }
        best.map(|(_, rel)| rel.clone())
    };
    if let Some(rel) = best(&sources, false) {
        return Some(rel);
    }
    // JavaScript's and TypeScript's test files get such functions registered ([`register_js_tests`]);
    // elsewhere a function the runner would not collect is refused as code nothing calls.
    let js = Lang::of(first).is_some_and(|l| !matches!(l, Lang::Python | Lang::Go));
    if has_test_mark(block) || (js && asserts(block)) || sources.len() < files.sources.len() {
        if let Some(rel) = best(&files.tests, true).or(files.tests.first().cloned()) {
            return Some(rel);
        }
    }
    sources.first().or(files.tests.first()).cloned()
}

/// Whether JavaScript or TypeScript code asserts: `assert`, `expect(..)`, `.should`. New functions that share
/// no name with the sources and assert are tests, whatever they are called (`function testHtmlTest()`).
fn asserts(code: &str) -> bool {
    code.contains("assert") || code.contains("expect(") || code.contains(".should")
}

/// A JavaScript or TypeScript test file runs its runner's calls (`test("name", fn)`, `it(..)`), not its
/// functions: a function a block adds there that asserts, takes no parameter and that nothing calls
/// (`function testEscapeHtml() { assert.. }`, the 0.5B's habit on js-escape-all) would never run, pass "on
/// the old code" and teach the model nothing. Each gets a call of the file's own runner after it,
/// `test("testEscapeHtml", testEscapeHtml);`. The new text and the names registered; None when there is
/// nothing to register (another language, no runner call in the file, every function called).
pub(super) fn register_js_tests(
    rel: &str,
    text: &str,
    added: &[String],
) -> Option<(String, Vec<String>)> {
    let lang = Lang::of(rel).filter(|l| !matches!(l, Lang::Python | Lang::Go))?;
    let tree = crate::gate::syntax::parse_clean(lang, text)?;
    let root = tree.root_node();
    let src = text.as_bytes();
    let node_text = |n: tree_sitter::Node| n.utf8_text(src).unwrap_or_default();
    // The runner: the first `test(..)` or `it(..)` call with a title, anywhere (inside a `describe` too).
    let mut runner = None;
    let mut uses: Vec<String> = Vec::new();
    crate::gate::syntax::each_node(root, |n| {
        if n.kind() == "call_expression" && runner.is_none() {
            let callee = n.child_by_field_name("function").map(node_text);
            let titled = n
                .child_by_field_name("arguments")
                .and_then(|a| a.named_child(0))
                .is_some_and(|a| matches!(a.kind(), "string" | "template_string"));
            if let Some(c @ ("test" | "it")) = callee.filter(|_| titled) {
                runner = Some(c.to_string());
            }
        }
        if n.kind() == "identifier"
            && n.parent()
                .is_none_or(|p| p.kind() != "function_declaration")
        {
            uses.push(node_text(n).to_string());
        }
        true
    });
    let runner = runner?;
    let mut inserts: Vec<(usize, String)> = Vec::new();
    let mut cursor = root.walk();
    for node in root.named_children(&mut cursor) {
        let decl = match node.kind() {
            "function_declaration" => node,
            "export_statement" => match node.child_by_field_name("declaration") {
                Some(d) if d.kind() == "function_declaration" => d,
                _ => continue,
            },
            _ => continue,
        };
        let Some(name) = decl.child_by_field_name("name").map(node_text) else {
            continue;
        };
        let no_params = decl
            .child_by_field_name("parameters")
            .is_some_and(|p| p.named_child_count() == 0);
        if added.iter().any(|a| a == name)
            && no_params
            && asserts(node_text(decl))
            && !uses.iter().any(|u| u == name)
        {
            inserts.push((node.end_byte(), name.to_string()));
        }
    }
    if inserts.is_empty() {
        return None;
    }
    let mut out = text.to_string();
    let names = inserts.iter().map(|(_, n)| n.clone()).collect();
    for (at, name) in inserts.into_iter().rev() {
        out.insert_str(at, &format!("\n{runner}(\"{name}\", {name});"));
    }
    Some((out, names))
}

/// Whether `block`, read as code of `rel`'s language, loads the module `rel` is: a Python import whose
/// module is its stem (`stats`, `.stats`) or ends in its path (`pkg.stats`), a JavaScript or TypeScript
/// specifier whose last part is its file (`../html.js`, `./html`). A package's `__init__.py` and
/// `index.js` are named by their directory.
fn loads_file(block: &str, rel: &str) -> bool {
    let Some(lang) = Lang::of(rel) else {
        return false;
    };
    let Some(modules) = loaded_modules(lang, block) else {
        return false;
    };
    let path = std::path::Path::new(rel);
    let stem = |p: &std::path::Path| -> Option<String> {
        let stem = p.file_stem()?.to_str()?;
        match stem {
            "__init__" | "index" => p.parent()?.file_name()?.to_str().map(str::to_string),
            _ => Some(stem.to_string()),
        }
    };
    let Some(own) = stem(path) else {
        return false;
    };
    modules.iter().any(|m| match lang {
        // `stats` and `.stats` by the stem; `pkg.stats` only where the path ends so (`from django.utils
        // import x` does not load `myapp/utils.py`).
        Lang::Python => match m.trim_start_matches('.').rsplit_once('.') {
            _ if m.starts_with('.') => m.rsplit('.').next() == Some(own.as_str()),
            None => *m == own,
            Some(_) => {
                let tail = m.replace('.', "/");
                rel.strip_suffix(".py").is_some_and(|r| {
                    r == tail
                        || r.ends_with(&format!("/{tail}"))
                        || r == format!("{tail}/__init__")
                        || r.ends_with(&format!("/{tail}/__init__"))
                })
            }
        },
        Lang::Go => false,
        Lang::JavaScript | Lang::TypeScript | Lang::Tsx => {
            let p = std::path::Path::new(m.as_str());
            (m.starts_with('.') || m.starts_with('/'))
                && (stem(p).as_deref() == Some(own.as_str())
                    || p.file_name().and_then(|f| f.to_str()) == Some(own.as_str()))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fenced_blocks_are_read_in_order_and_an_unclosed_one_to_the_end() {
        let text = "Here:\n```python\ndef f():\n    return 1\n```\ntext\n```\ndef g():\n    pass\n";
        assert_eq!(
            code_blocks(text),
            ["def f():\n    return 1\n", "def g():\n    pass\n"]
        );
        assert!(code_blocks("no code").is_empty());
    }

    #[test]
    fn a_block_goes_to_the_file_whose_definitions_it_shares() {
        let files = Files {
            sources: vec!["stats.py".into(), "report.py".into()],
            tests: vec!["tests/test_stats.py".into()],
            focus: String::new(),
            focus_defs: Vec::new(),
            symptom: None,
        };
        let texts = |rel: &str| -> Option<String> {
            Some(
                match rel {
                    "stats.py" => "def mean(v):\n    return 1\n\n\ndef median(v):\n    return 2\n",
                    "report.py" => "def render(v):\n    return ''\n",
                    "tests/test_stats.py" => {
                        "from stats import mean\n\n\ndef test_mean():\n    assert mean([1]) == 1\n"
                    }
                    _ => return None,
                }
                .to_string(),
            )
        };
        let fix =
            "def median(v):\n    if not v:\n        raise ValueError('empty')\n    return 2\n";
        assert_eq!(target(fix, &files, texts).as_deref(), Some("stats.py"));
        let test = "import pytest\n\n\ndef test_median_empty():\n    with pytest.raises(ValueError):\n        median([])\n";
        assert_eq!(
            target(test, &files, texts).as_deref(),
            Some("tests/test_stats.py")
        );
        // A test written again replaces its own.
        let again = "def test_mean():\n    assert mean([2]) == 2\n";
        assert_eq!(
            target(again, &files, texts).as_deref(),
            Some("tests/test_stats.py")
        );
        // A test that loads the module it tests goes to the tests, whatever names it shares with it.
        let loading = "from stats import median\n\n\ndef median_of_nothing():\n    median([])\n";
        assert_eq!(
            target(loading, &files, texts).as_deref(),
            Some("tests/test_stats.py")
        );
        let again = "from stats import median\n\n\ndef median(v):\n    return 3\n";
        assert_eq!(
            target(again, &files, texts).as_deref(),
            Some("tests/test_stats.py")
        );
        // A new helper goes to the first source file.
        assert_eq!(
            target("def clamp(x):\n    return x\n", &files, texts).as_deref(),
            Some("stats.py")
        );
    }

    #[test]
    fn a_block_that_loads_a_source_goes_to_the_tests_not_into_that_source() {
        // The 0.5B's reply on js-escape-all: its `require` line went into html.js, which then declared
        // `escapeHtml` twice and broke every later run.
        let files = Files {
            sources: vec!["html.js".into()],
            tests: vec!["test/html.test.js".into()],
            focus: String::new(),
            focus_defs: Vec::new(),
            symptom: None,
        };
        let texts = |rel: &str| -> Option<String> {
            Some(
                match rel {
                    "html.js" => "function escapeHtml(t) {\n  return t;\n}\nmodule.exports = { escapeHtml };\n",
                    "test/html.test.js" => "const test = require(\"node:test\");\nconst { escapeHtml } = require(\"../html.js\");\n\ntest(\"one\", () => {});\n",
                    _ => return None,
                }
                .to_string(),
            )
        };
        let block = "const escapeHtml = require(\"../html.js\");\n\nfunction testHtmlTest() {\n  assert.strictEqual(escapeHtml(\"a < b\"), \"a &lt; b\");\n}\n";
        assert_eq!(
            target(block, &files, texts).as_deref(),
            Some("test/html.test.js")
        );
        // A new function that asserts is a test, whatever its name.
        let named = "function testHtmlTest() {\n  assert.strictEqual(escapeHtml(\"<<\"), \"&lt;&lt;\");\n}\n";
        assert_eq!(
            target(named, &files, texts).as_deref(),
            Some("test/html.test.js")
        );
        // The fix itself still goes to the source, and `./html` names it as `../html.js` does.
        let fix = "function escapeHtml(t) {\n  return t.replace(/</g, \"&lt;\");\n}\n";
        assert_eq!(target(fix, &files, texts).as_deref(), Some("html.js"));
        assert!(loads_file("const h = require('./html');\n", "html.js"));
        assert!(loads_file(
            "import { x } from '../lib/index.js';\n",
            "lib/index.ts"
        ));
        assert!(!loads_file("const h = require('html');\n", "html.js"));
        assert!(!loads_file("from statistics import median\n", "stats.py"));
        assert!(loads_file(
            "from pkg.stats import median\n",
            "src/pkg/stats.py"
        ));
        assert!(loads_file("from . import stats\n", "pkg/stats.py"));
        assert!(loads_file("import pkg\n", "pkg/__init__.py"));
        assert!(!loads_file(
            "from django.utils import timezone\n",
            "myapp/utils.py"
        ));
    }

    #[test]
    fn a_js_test_function_nothing_calls_is_registered_with_the_files_runner() {
        let text = "\"use strict\";\nconst test = require(\"node:test\");\nconst assert = require(\"node:assert\");\n\ntest(\"one\", () => {\n  assert.ok(true);\n});\n\nfunction testEscapesAll() {\n  assert.strictEqual(escapeHtml(\"<<\"), \"&lt;&lt;\");\n}\n\nfunction helper() {\n  return 1;\n}\n\nfunction called() {\n  assert.ok(helper());\n}\ntest(\"uses\", called);\n\nfunction withParam(x) {\n  assert.ok(x);\n}\n";
        let added: Vec<String> = ["testEscapesAll", "helper", "called", "withParam"]
            .map(String::from)
            .to_vec();
        let (out, names) = register_js_tests("test/html.test.js", text, &added).unwrap();
        assert_eq!(names, ["testEscapesAll"]);
        assert!(
            out.contains(
                "\"&lt;&lt;\");\n}\ntest(\"testEscapesAll\", testEscapesAll);\n\nfunction helper()"
            ),
            "{out}"
        );
        // A file of `describe`/`it` gets `it`; a file without a runner call, or another language, nothing.
        let mocha = "describe(\"html\", () => {\n  it(\"escapes\", () => {});\n});\nfunction checkIt() {\n  expect(1).toBe(1);\n}\n";
        let (out, _) = register_js_tests("a.test.js", mocha, &["checkIt".into()]).unwrap();
        assert!(out.ends_with("}\nit(\"checkIt\", checkIt);\n"), "{out}");
        assert_eq!(
            register_js_tests("a.js", "function f() { assert(1); }\n", &["f".into()]),
            None
        );
        assert_eq!(
            register_js_tests("a_test.py", "def f():\n    assert 1\n", &["f".into()]),
            None
        );
    }
}
