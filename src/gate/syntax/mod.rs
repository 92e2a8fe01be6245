//! Test functions of Python, Go and JavaScript/TypeScript sources, found with tree-sitter grammars.
//!
//! Why a parser: a `def test_` inside a string literal, two classes with a method of the same name, a brace
//! in a template string or a test call spread over lines fool a line-based finder; a grammar does not. Each
//! language's file says which nodes are its tests and names them the way its runner does (pytest's
//! `TestClass::test_method`, Go's function name, node's `suite > test`), so a test is compared between base
//! and head by that name and by its own text, never by the lines a diff happens to touch. This file holds
//! what the languages share: parsing, a test's text and lines, and the tokens outside every test (helpers,
//! fixtures, setup), split from the imports, so a change there is seen as such.
//!
//! Rust is not here: its test functions come from `syn` in [`crate::gate::split`].

use std::collections::HashSet;
use std::ops::RangeInclusive;

use tree_sitter::{Node, Parser, Tree};

mod go;
mod imports;
mod js;
mod python;

pub use imports::{bound_names, loaded_modules};
pub use python::{imports as python_imports, Import};

/// A language whose tests are found here, by file extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lang {
    Python,
    Go,
    JavaScript,
    TypeScript,
    Tsx,
}

impl Lang {
    /// The language of a path by its extension (`.py`, `.go`, `.js`/`.mjs`/`.cjs`/`.jsx`, `.ts`/`.mts`/`.cts`,
    /// `.tsx`).
    pub fn of(path: &str) -> Option<Lang> {
        let ext = path.rsplit_once('.').map(|(_, e)| e)?;
        Some(match ext {
            "py" => Lang::Python,
            "go" => Lang::Go,
            "js" | "mjs" | "cjs" | "jsx" => Lang::JavaScript,
            "ts" | "mts" | "cts" => Lang::TypeScript,
            "tsx" => Lang::Tsx,
            _ => return None,
        })
    }

    pub(crate) fn grammar(self) -> tree_sitter::Language {
        match self {
            Lang::Python => tree_sitter_python::LANGUAGE.into(),
            Lang::Go => tree_sitter_go::LANGUAGE.into(),
            Lang::JavaScript => tree_sitter_javascript::LANGUAGE.into(),
            Lang::TypeScript => tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
            Lang::Tsx => tree_sitter_typescript::LANGUAGE_TSX.into(),
        }
    }
}

/// One test in a source file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TestItem {
    /// Its name within the file as the runner reports it: `TestA::test_y` (pytest: classes and function),
    /// `TestX` (Go), `suite > case` (node).
    pub key: String,
    /// Its own name, the last part of the key.
    pub name: String,
    /// 1-based inclusive lines, decorators included.
    pub lines: RangeInclusive<usize>,
    /// Its source text, decorators included, with trailing whitespace of each line dropped.
    pub text: String,
    /// Assertions in it (`assert`, `self.assertX`, `t.Fatal`, `expect(..)`, ..).
    pub assertions: usize,
    /// Skip markers on or in it (`@pytest.mark.skip`, `t.Skip`, `test.skip`, `{ skip: true }`, ..).
    pub skips: usize,
}

/// What a source file holds: its tests and the tokens outside them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Scan {
    pub tests: Vec<TestItem>,
    /// The tokens outside every test, comment, docstring and import: helpers, fixtures, setup, tables
    /// shared by tests. Two sides with equal `rest` differ only inside tests, in comments or in imports.
    pub rest: Vec<String>,
    /// The tokens of the import statements (`import`, `from .. import`, `require(..)` declarations).
    pub imports: Vec<String>,
}

/// A test found by a language's finder: its node (the whole test, decorators included) and its names.
struct Found<'t> {
    node: Node<'t>,
    key: String,
    name: String,
    /// Skip markers outside the node that apply to it (a skip decorator on its class).
    extra_skips: usize,
}

pub(crate) fn parse(lang: Lang, source: &str) -> Option<Tree> {
    let mut parser = Parser::new();
    parser.set_language(&lang.grammar()).ok()?;
    parser.parse(source, None)
}

/// The tree of a source without a syntax error anywhere; None otherwise.
pub(crate) fn parse_clean(lang: Lang, source: &str) -> Option<Tree> {
    parse(lang, source).filter(|tree| !tree.root_node().has_error())
}

/// The tests and the other tokens of a source, or None when it does not parse (a syntax error anywhere:
/// what is a test there cannot be known).
pub fn scan(lang: Lang, source: &str) -> Option<Scan> {
    let tree = parse(lang, source)?;
    let root = tree.root_node();
    if root.has_error() {
        return None;
    }
    let src = source.as_bytes();
    let found = match lang {
        Lang::Python => python::tests(root, src),
        Lang::Go => go::tests(root, src),
        Lang::JavaScript | Lang::TypeScript | Lang::Tsx => js::tests(root, src),
    };
    let mut tests: Vec<TestItem> = found
        .iter()
        .map(|f| {
            let (assertions, skips) = match lang {
                Lang::Python => python::counts(f.node, src),
                Lang::Go => go::counts(f.node, src),
                _ => js::counts(f.node, src),
            };
            TestItem {
                key: f.key.clone(),
                name: f.name.clone(),
                lines: lines_of(f.node),
                text: own_text(text(f.node, src)),
                assertions,
                skips: skips + f.extra_skips,
            }
        })
        .collect();
    tests.sort_by_key(|t| *t.lines.start());
    let test_nodes: HashSet<usize> = found.iter().map(|f| f.node.id()).collect();
    let mut rest = Vec::new();
    let mut imports = Vec::new();
    let mut stack = vec![(root, false)];
    while let Some((node, in_import)) = stack.pop() {
        if test_nodes.contains(&node.id()) || node.kind().contains("comment") {
            continue;
        }
        let in_import = in_import || is_import(lang, node, src);
        if !in_import && lang == Lang::Python && python::is_docstring(node) {
            continue;
        }
        if node.child_count() == 0 {
            let token = text(node, src).to_owned();
            if in_import {
                imports.push(token);
            } else {
                rest.push(token);
            }
            continue;
        }
        let mut cursor = node.walk();
        let children: Vec<Node> = node.children(&mut cursor).collect();
        stack.extend(children.into_iter().rev().map(|c| (c, in_import)));
    }
    Some(Scan {
        tests,
        rest,
        imports,
    })
}

/// The tokens of a source that are code: every leaf but comments and (Python) docstrings. Two texts with the
/// same tokens differ only in comments, docstrings and layout. None when the source does not parse.
pub(crate) fn code_tokens(lang: Lang, source: &str) -> Option<Vec<String>> {
    let tree = parse_clean(lang, source)?;
    let src = source.as_bytes();
    let mut out = Vec::new();
    each_node(tree.root_node(), |node| {
        if node.kind().contains("comment") || (lang == Lang::Python && python::is_docstring(node)) {
            return false;
        }
        if node.child_count() == 0 {
            out.push(text(node, src).to_owned());
        }
        true
    });
    Some(out)
}

fn is_import(lang: Lang, node: Node, src: &[u8]) -> bool {
    match lang {
        Lang::Python => matches!(
            node.kind(),
            "import_statement" | "import_from_statement" | "future_import_statement"
        ),
        Lang::Go => node.kind() == "import_declaration",
        _ => js::is_import(node, src),
    }
}

/// A node's source text.
fn text<'s>(node: Node, src: &'s [u8]) -> &'s str {
    node.utf8_text(src).unwrap_or("")
}

/// A test's text as compared between base and head: line ends normalized, trailing whitespace dropped.
fn own_text(text: &str) -> String {
    text.lines()
        .map(str::trim_end)
        .collect::<Vec<_>>()
        .join("\n")
}

/// A node's 1-based inclusive lines (a node ending at the start of a line does not hold that line).
fn lines_of(node: Node) -> RangeInclusive<usize> {
    let start = node.start_position();
    let end = node.end_position();
    let last = if end.column == 0 && end.row > start.row {
        end.row
    } else {
        end.row + 1
    };
    start.row + 1..=last
}

/// The named children of a node.
fn named_children(node: Node) -> Vec<Node> {
    let mut cursor = node.walk();
    node.named_children(&mut cursor).collect()
}

/// Every node under `node` (itself included), depth first, without recursion; `descend` says whether to look
/// inside a node.
pub(crate) fn each_node<'t>(node: Node<'t>, mut visit: impl FnMut(Node<'t>) -> bool) {
    let mut stack = vec![node];
    while let Some(n) = stack.pop() {
        if !visit(n) {
            continue;
        }
        let mut cursor = n.walk();
        let children: Vec<Node> = n.children(&mut cursor).collect();
        stack.extend(children.into_iter().rev());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(lang: Lang, src: &str) -> Vec<String> {
        scan(lang, src)
            .map(|s| s.tests.into_iter().map(|t| t.key).collect())
            .unwrap_or_default()
    }

    #[test]
    fn languages_come_from_extensions() {
        assert_eq!(Lang::of("tests/test_a.py"), Some(Lang::Python));
        assert_eq!(Lang::of("a_test.go"), Some(Lang::Go));
        assert_eq!(Lang::of("test/a.test.mjs"), Some(Lang::JavaScript));
        assert_eq!(Lang::of("test/a.test.ts"), Some(Lang::TypeScript));
        assert_eq!(Lang::of("test/a.test.tsx"), Some(Lang::Tsx));
        assert_eq!(Lang::of("src/lib.rs"), None);
        assert_eq!(Lang::of("Makefile"), None);
    }

    #[test]
    fn a_source_with_a_syntax_error_is_not_scanned() {
        assert_eq!(scan(Lang::Python, "def test_a(:\n    pass\n"), None);
        assert_eq!(
            scan(Lang::Go, "package m\n\nfunc TestA(t *testing.T) {\n"),
            None
        );
        assert_eq!(
            keys(Lang::Python, "def test_a():\n    pass\n"),
            vec!["test_a"]
        );
    }

    #[test]
    fn comments_docstrings_and_imports_are_not_rest() {
        let a = scan(
            Lang::Python,
            "\"\"\"Tests.\"\"\"\nimport os\n\n# old\ndef helper():\n    return 1\n",
        );
        let b = scan(
            Lang::Python,
            "\"\"\"Tests of x.\"\"\"\nimport os, sys\n\n# new comment\ndef helper():\n    return 1\n",
        );
        let (a, b) = (a.unwrap_or_default(), b.unwrap_or_default());
        assert_eq!(a.rest, b.rest);
        assert_ne!(a.imports, b.imports);
        assert_eq!(
            a.rest,
            ["def", "helper", "(", ")", ":", "return", "1"].map(String::from)
        );
    }

    #[test]
    fn a_test_text_ignores_trailing_whitespace_and_line_ends() {
        let a =
            scan(Lang::Go, "package m\n\nfunc TestA(t *testing.T) {  \n}\n").unwrap_or_default();
        let b = scan(
            Lang::Go,
            "package m\r\n\r\nfunc TestA(t *testing.T) {\r\n}\r\n",
        )
        .unwrap_or_default();
        assert_eq!(a.tests[0].text, b.tests[0].text);
        assert_eq!(a.tests[0].lines, 3..=4);
    }
}
