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
/// Never a source file the block loads (`const { escapeHtml } = require("../html.js")`, `from stats import
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
    if has_test_mark(block) || sources.len() < files.sources.len() {
        if let Some(rel) = best(&files.tests, true).or(files.tests.first().cloned()) {
            return Some(rel);
        }
    }
    sources.first().or(files.tests.first()).cloned()
}

/// Whether `block`, read as code of `rel`'s language, loads the module `rel` is: a Python import whose
/// module ends in its stem (`stats`, `.stats`, `pkg.stats`), a JavaScript or TypeScript specifier whose
/// last part is its file (`../html.js`, `./html`). A package's `__init__.py` and `index.js` are named by
/// their directory.
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
        Lang::Python => m.rsplit('.').next() == Some(own.as_str()),
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
    }
}
