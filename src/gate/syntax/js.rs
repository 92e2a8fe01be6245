//! JavaScript and TypeScript tests as node's test runner (and mocha, jest, vitest) names them: `test(..)` and
//! `it(..)` calls (`.only`, `.skip`, `.todo` too, and `t.test(..)` subtests) with a literal name, keyed by the
//! names of the `describe`/`suite`/`context` calls and tests around them joined with ` > `, as node reports
//! them (`Calculator > division > throws on zero`). A test whose name is not a literal cannot be keyed; its
//! tokens count as code outside tests.

use tree_sitter::Node;

use super::{each_node, named_children, text, Found};

const SUITES: &[&str] = &["describe", "suite", "context"];
const TESTS: &[&str] = &["test", "it"];
const MODIFIERS: &[&str] = &["only", "skip", "todo"];

/// What a call is to the test runner.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Call {
    Suite,
    Test,
    /// `t.test(..)`: a test only when it has a function to run.
    Subtest,
}

fn classify(call: Node, src: &[u8]) -> Option<Call> {
    let f = call.child_by_field_name("function")?;
    match f.kind() {
        "identifier" => {
            let name = text(f, src);
            if SUITES.contains(&name) {
                Some(Call::Suite)
            } else if TESTS.contains(&name) {
                Some(Call::Test)
            } else {
                None
            }
        }
        "member_expression" => {
            let object = f.child_by_field_name("object")?;
            let property = text(f.child_by_field_name("property")?, src);
            let base = (object.kind() == "identifier").then(|| text(object, src))?;
            if MODIFIERS.contains(&property) && SUITES.contains(&base) {
                Some(Call::Suite)
            } else if MODIFIERS.contains(&property) && TESTS.contains(&base) {
                Some(Call::Test)
            } else if property == "test" && !SUITES.contains(&base) && !TESTS.contains(&base) {
                Some(Call::Subtest)
            } else {
                None
            }
        }
        _ => None,
    }
}

/// The literal name of a test call (its first argument: a string or a template without substitutions).
fn literal_name(call: Node, src: &[u8]) -> Option<String> {
    let args = call.child_by_field_name("arguments")?;
    let first = named_children(args).into_iter().next()?;
    match first.kind() {
        "string" => {
            let t = text(first, src);
            Some(t.get(1..t.len().saturating_sub(1))?.to_owned())
        }
        "template_string" => {
            if named_children(first)
                .iter()
                .any(|c| c.kind() == "template_substitution")
            {
                return None;
            }
            let t = text(first, src);
            Some(t.get(1..t.len().saturating_sub(1))?.to_owned())
        }
        _ => None,
    }
}

fn has_function_argument(call: Node) -> bool {
    call.child_by_field_name("arguments").is_some_and(|args| {
        named_children(args).iter().any(|a| {
            matches!(
                a.kind(),
                "arrow_function" | "function_expression" | "function" | "generator_function"
            )
        })
    })
}

pub(super) fn tests<'t>(root: Node<'t>, src: &[u8]) -> Vec<Found<'t>> {
    let mut out = Vec::new();
    // Depth first with the name path of the suites and tests around each node.
    let mut paths: Vec<Vec<String>> = vec![Vec::new()];
    let mut stack = vec![(root, 0usize)];
    while let Some((node, path)) = stack.pop() {
        let mut inner = path;
        if node.kind() == "call_expression" {
            let call =
                classify(node, src).filter(|c| *c != Call::Subtest || has_function_argument(node));
            if let (Some(call), Some(name)) = (call, literal_name(node, src)) {
                let mut names = paths[path].clone();
                names.push(name.clone());
                if call != Call::Suite {
                    out.push(Found {
                        node: statement_of(node),
                        key: names.join(" > "),
                        name,
                        extra_skips: 0,
                    });
                }
                paths.push(names);
                inner = paths.len() - 1;
            }
        }
        let mut cursor = node.walk();
        let children: Vec<Node> = node.children(&mut cursor).collect();
        stack.extend(children.into_iter().rev().map(|c| (c, inner)));
    }
    out
}

/// The statement a test call is (`test(..);`, `await t.test(..);`), so that its `;` goes with it; the call
/// itself when it is part of something else.
fn statement_of(call: Node) -> Node {
    let mut node = call;
    while let Some(parent) = node.parent() {
        match parent.kind() {
            "await_expression" => node = parent,
            "expression_statement" => return parent,
            _ => return call,
        }
    }
    call
}

/// `import ..` statements, and declarations whose every value is a `require(..)` (or a member of one).
pub(super) fn is_import(node: Node, src: &[u8]) -> bool {
    match node.kind() {
        "import_statement" => true,
        "lexical_declaration" | "variable_declaration" => {
            let declarators: Vec<Node> = named_children(node)
                .into_iter()
                .filter(|d| d.kind() == "variable_declarator")
                .collect();
            !declarators.is_empty()
                && declarators.iter().all(|d| {
                    d.child_by_field_name("value")
                        .is_some_and(|v| is_require(v, src))
                })
        }
        _ => false,
    }
}

fn is_require(value: Node, src: &[u8]) -> bool {
    match value.kind() {
        "call_expression" => value
            .child_by_field_name("function")
            .is_some_and(|f| text(f, src) == "require"),
        "member_expression" => value
            .child_by_field_name("object")
            .is_some_and(|o| is_require(o, src)),
        "await_expression" => named_children(value)
            .first()
            .is_some_and(|v| v.kind() == "call_expression" && text(*v, src).starts_with("import(")),
        _ => false,
    }
}

/// Assertions (`assert(..)`, `assert.x(..)`, `t.assert.x(..)`, `expect(..)`, `.should`) and skips
/// (`test.skip`, `.todo`, `t.skip()`, `{ skip: true }`) in a test call.
pub(super) fn counts(node: Node, src: &[u8]) -> (usize, usize) {
    let (mut assertions, mut skips) = (0, 0);
    each_node(node, |n| {
        match n.kind() {
            "call_expression" => {
                let callee = n.child_by_field_name("function");
                let callee_text = callee.map_or("", |f| text(f, src));
                match callee.map(|f| f.kind()) {
                    Some("identifier") if matches!(callee_text, "assert" | "expect") => {
                        assertions += 1;
                    }
                    Some("member_expression") => {
                        let segments: Vec<&str> = callee_text.split('.').map(str::trim).collect();
                        if segments.first() == Some(&"assert") || segments.contains(&"assert") {
                            assertions += 1;
                        }
                        if matches!(segments.last(), Some(&"skip") | Some(&"todo")) {
                            skips += 1;
                        }
                    }
                    _ => {}
                }
            }
            "member_expression"
                if n.child_by_field_name("property")
                    .is_some_and(|p| text(p, src) == "should") =>
            {
                assertions += 1;
            }
            "pair" => {
                let key = n.child_by_field_name("key").map_or("", |k| text(k, src));
                let value = n.child_by_field_name("value").map_or("", |v| text(v, src));
                if matches!(key, "skip" | "todo") && value != "false" {
                    skips += 1;
                }
            }
            _ => {}
        }
        true
    });
    (assertions, skips)
}

#[cfg(test)]
mod tests {
    use super::super::{scan, Lang};

    fn found(lang: Lang, src: &str) -> Vec<(String, usize, usize, usize, usize)> {
        scan(lang, src)
            .map(|s| {
                s.tests
                    .into_iter()
                    .map(|t| {
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
    fn node_tests_are_keyed_by_their_suites_as_node_reports_them() {
        let src = "const test = require('node:test');\nconst assert = require('node:assert');\n\ndescribe('Calculator', () => {\n  describe(\"division\", () => {\n    it(`throws on zero`, () => {\n      assert.throws(() => div(1, 0));\n    });\n  });\n  test.skip('later', () => {});\n});\n\ntest('outer', async (t) => {\n  await t.test('inner', () => {\n    expect(1).toBe(1);\n  });\n});\n\nconst s = 'test(\"fake\", () => {})';\n/x/.test(s);\ntest(`dyn ${s}`, () => {});\n";
        assert_eq!(
            found(Lang::JavaScript, src),
            vec![
                ("Calculator > division > throws on zero".into(), 6, 8, 1, 0),
                ("Calculator > later".into(), 10, 10, 0, 1),
                ("outer".into(), 13, 17, 1, 0),
                ("outer > inner".into(), 14, 16, 1, 0),
            ]
        );
    }

    #[test]
    fn typescript_tests_with_types_and_options_are_found() {
        let src = "import { test } from 'node:test';\nimport assert from 'node:assert/strict';\n\nfunction sq(x: number): number {\n  return x * x;\n}\n\ntest('squares', { skip: false }, (): void => {\n  const v: number = sq(3);\n  assert.equal(v, 9);\n});\n\ntest('not yet', { todo: true }, () => {});\n";
        assert_eq!(
            found(Lang::TypeScript, src),
            vec![
                ("squares".into(), 8, 11, 1, 0),
                ("not yet".into(), 13, 13, 0, 1)
            ]
        );
        let s = scan(Lang::TypeScript, src).unwrap_or_default();
        assert!(
            s.imports.contains(&"node:test".to_string()),
            "{:?}",
            s.imports
        );
        assert!(s.rest.contains(&"sq".to_string()));
    }
}
