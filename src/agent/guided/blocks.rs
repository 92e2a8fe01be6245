//! The guided strategy's reading of a reply: its fenced code blocks, and which file each goes to.

use super::Files;
use crate::agent::next_step::has_test_mark;
use crate::gate::syntax::Lang;
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
pub(super) fn target(
    block: &str,
    files: &Files,
    text_of: impl Fn(&str) -> Option<String>,
) -> Option<String> {
    let first = files.sources.first().or(files.tests.first())?;
    let names = definitions::defined(first, block)?;
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
    if let Some(rel) = best(&files.sources, false) {
        return Some(rel);
    }
    if has_test_mark(block) {
        if let Some(rel) = best(&files.tests, true).or(files.tests.first().cloned()) {
            return Some(rel);
        }
    }
    files.sources.first().or(files.tests.first()).cloned()
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
        // A new helper goes to the first source file.
        assert_eq!(
            target("def clamp(x):\n    return x\n", &files, texts).as_deref(),
            Some("stats.py")
        );
    }
}
