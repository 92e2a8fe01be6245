//! Python tests as pytest collects them by default: `test*` functions at module level (also under `if`,
//! `try` and `with` blocks there) and `test*` methods of `Test*` classes and of `unittest.TestCase`
//! subclasses, nested classes included; each keyed `Class::Inner::test_name`, the node id pytest prints after
//! the file. And the imports of a module, for finding the tests that use a changed helper.

use tree_sitter::Node;

use super::{each_node, named_children, parse, text, Found, Lang};

/// Statements whose blocks hold module- or class-level definitions all the same.
const BLOCKS: &[&str] = &[
    "if_statement",
    "elif_clause",
    "else_clause",
    "try_statement",
    "except_clause",
    "finally_clause",
    "with_statement",
    "block",
];

pub(super) fn tests<'t>(root: Node<'t>, src: &[u8]) -> Vec<Found<'t>> {
    let mut out = Vec::new();
    in_block(root, src, &mut Vec::new(), 0, &mut out);
    out
}

/// The tests among a block's statements; `classes` are the test classes around it, `class_skips` their
/// skip markers.
fn in_block<'t>(
    block: Node<'t>,
    src: &[u8],
    classes: &mut Vec<String>,
    class_skips: usize,
    out: &mut Vec<Found<'t>>,
) {
    for stmt in named_children(block) {
        let (span, def) = match stmt.kind() {
            "decorated_definition" => match stmt.child_by_field_name("definition") {
                Some(def) => (stmt, def),
                None => continue,
            },
            "function_definition" | "class_definition" => (stmt, stmt),
            kind if BLOCKS.contains(&kind) => {
                in_block(stmt, src, classes, class_skips, out);
                continue;
            }
            _ => continue,
        };
        let Some(name) = def.child_by_field_name("name").map(|n| text(n, src)) else {
            continue;
        };
        match def.kind() {
            "function_definition" if name.starts_with("test") => {
                let key = if classes.is_empty() {
                    name.to_owned()
                } else {
                    format!("{}::{name}", classes.join("::"))
                };
                out.push(Found {
                    node: span,
                    key,
                    name: name.to_owned(),
                    extra_skips: class_skips,
                });
            }
            "class_definition" if is_test_class(def, name, src) => {
                let Some(body) = def.child_by_field_name("body") else {
                    continue;
                };
                let own_skips = if span.id() != def.id() {
                    decorator_skips(span, src)
                } else {
                    0
                };
                classes.push(name.to_owned());
                in_block(body, src, classes, class_skips + own_skips, out);
                classes.pop();
            }
            _ => {}
        }
    }
}

/// pytest's default `python_classes = Test*`, and `unittest.TestCase` subclasses whatever their name.
fn is_test_class(def: Node, name: &str, src: &[u8]) -> bool {
    name.starts_with("Test")
        || def
            .child_by_field_name("superclasses")
            .is_some_and(|s| text(s, src).contains("TestCase"))
}

const SKIP_MARKS: &[&str] = &[
    "mark.skip",
    "mark.xfail",
    "unittest.skip",
    "unittest.expectedFailure",
];

fn decorator_skips(decorated: Node, src: &[u8]) -> usize {
    named_children(decorated)
        .into_iter()
        .filter(|n| n.kind() == "decorator")
        .map(|d| count_marks(text(d, src)))
        .sum()
}

fn count_marks(decorator: &str) -> usize {
    SKIP_MARKS
        .iter()
        .map(|m| decorator.matches(m).count())
        .sum()
}

/// Assertions and skip markers in a test (its decorators included).
pub(super) fn counts(node: Node, src: &[u8]) -> (usize, usize) {
    let (mut assertions, mut skips) = (0, 0);
    each_node(node, |n| match n.kind() {
        "assert_statement" => {
            assertions += 1;
            true
        }
        "decorator" => {
            skips += count_marks(text(n, src));
            false
        }
        "call" => {
            let callee = n
                .child_by_field_name("function")
                .map_or("", |f| text(f, src));
            let last = callee.rsplit('.').next().unwrap_or(callee);
            if callee.starts_with("self.assert")
                || callee.starts_with("self.fail")
                || matches!(callee, "pytest.raises" | "pytest.fail" | "pytest.warns")
                || (callee.contains('.') && last.starts_with("assert_"))
            {
                assertions += 1;
            }
            if matches!(callee, "pytest.skip" | "pytest.xfail" | "self.skipTest") {
                skips += 1;
            }
            true
        }
        _ => true,
    });
    (assertions, skips)
}

/// A string on its own as a statement: a docstring (or a string used as a comment).
pub(super) fn is_docstring(node: Node) -> bool {
    node.kind() == "expression_statement"
        && node.named_child_count() == 1
        && node.named_child(0).is_some_and(|c| c.kind() == "string")
}

/// One import of a module: `import a.b` (module `a.b`), `from .h import x, y` (module `.h`, names `x`, `y`),
/// `from . import helpers` (module `.`, names `helpers`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Import {
    /// The dotted module name, with its leading dots when relative.
    pub module: String,
    /// The names imported from it (`from M import a, b`); empty for `import M` and `from M import *`.
    pub names: Vec<String>,
}

/// Every import statement of a module, at any depth (imports inside functions count: they run when the test
/// does). None when it does not parse.
pub fn imports(source: &str) -> Option<Vec<Import>> {
    let tree = parse(Lang::Python, source)?;
    let src = source.as_bytes();
    let mut out = Vec::new();
    each_node(tree.root_node(), |n| match n.kind() {
        "import_statement" => {
            for name in named_children(n) {
                if let Some(module) = dotted(name, src) {
                    out.push(Import {
                        module,
                        names: Vec::new(),
                    });
                }
            }
            false
        }
        "import_from_statement" => {
            let module = n.child_by_field_name("module_name").map(|m| {
                text(m, src)
                    .chars()
                    .filter(|c| !c.is_whitespace())
                    .collect()
            });
            let module_id = n.child_by_field_name("module_name").map(|m| m.id());
            let names = named_children(n)
                .into_iter()
                .filter(|c| Some(c.id()) != module_id)
                .filter_map(|c| dotted(c, src))
                .collect();
            if let Some(module) = module {
                out.push(Import { module, names });
            }
            false
        }
        _ => true,
    });
    Some(out)
}

/// The dotted name of an import's `a.b` or `a.b as c`.
fn dotted(node: Node, src: &[u8]) -> Option<String> {
    match node.kind() {
        "dotted_name" => Some(text(node, src).to_owned()),
        "aliased_import" => node
            .child_by_field_name("name")
            .map(|n| text(n, src).to_owned()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::super::{scan, Lang, TestItem};
    use super::*;

    fn found(src: &str) -> Vec<(String, usize, usize, usize, usize)> {
        scan(Lang::Python, src)
            .map(|s| {
                s.tests
                    .into_iter()
                    .map(|t: TestItem| {
                        (
                            t.key,
                            *t.lines.start(),
                            *t.lines.end(),
                            t.assertions,
                            t.skips,
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    #[test]
    fn methods_of_the_same_name_in_two_classes_are_two_tests() {
        let src = "class TestA:\n    def test_y(self):\n        assert 1\n\n\nclass TestB:\n    def test_y(self):\n        assert 1\n        assert 2\n";
        assert_eq!(
            found(src),
            vec![
                ("TestA::test_y".into(), 2, 3, 1, 0),
                ("TestB::test_y".into(), 7, 9, 2, 0)
            ]
        );
    }

    #[test]
    fn a_def_test_inside_a_string_literal_is_not_a_test() {
        let src = "CODE = '''\ndef test_fake():\n    assert 0\n'''\n\n\ndef test_real():\n    assert CODE\n";
        assert_eq!(found(src), vec![("test_real".into(), 7, 8, 1, 0)]);
    }

    #[test]
    fn decorators_nested_classes_unittest_cases_and_conditional_tests_are_found() {
        let src = "import pytest\nimport unittest\n\n\n@pytest.mark.parametrize(\n    \"x\",\n    [1, 2],\n)\ndef test_x(x):\n    assert x\n\n\n@pytest.mark.skip\nclass TestOuter:\n    class TestInner:\n        async def test_deep(self):\n            self.assertTrue(1)\n\n    def helper(self):\n        pass\n\n\nclass Checks(unittest.TestCase):\n    def test_u(self):\n        self.skipTest('later')\n\n\nclass NotATest:\n    def test_ignored(self):\n        pass\n\n\nif True:\n    def test_cond():\n        with pytest.raises(ValueError):\n            int('x')\n";
        assert_eq!(
            found(src),
            vec![
                ("test_x".into(), 5, 10, 1, 0),
                ("TestOuter::TestInner::test_deep".into(), 16, 17, 1, 1),
                ("Checks::test_u".into(), 24, 25, 0, 1),
                ("test_cond".into(), 34, 36, 1, 0),
            ]
        );
    }

    #[test]
    fn imports_are_listed_with_their_names_and_relative_dots() {
        let src = "import os, a.b as c\nfrom tests.helpers import make, check as chk\nfrom . import helpers\nfrom ..pkg.mod import *\n\n\ndef test_x():\n    from .inner import thing\n";
        let imports = imports(src).unwrap_or_default();
        let pairs: Vec<(&str, Vec<&str>)> = imports
            .iter()
            .map(|i| {
                (
                    i.module.as_str(),
                    i.names.iter().map(String::as_str).collect(),
                )
            })
            .collect();
        assert_eq!(
            pairs,
            vec![
                ("os", vec![]),
                ("a.b", vec![]),
                ("tests.helpers", vec!["make", "check"]),
                (".", vec!["helpers"]),
                ("..pkg.mod", vec![]),
                (".inner", vec!["thing"]),
            ]
        );
    }
}
