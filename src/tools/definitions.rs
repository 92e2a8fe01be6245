//! The definitions a source file holds, by name, so that `write_file` does not silently delete them.
//!
//! The 1.5B coder replaced whole files it meant to change a line of: `words.go` became three lines of the
//! program's expected output (which tree-sitter's Go grammar still parses, as labelled statements), a test
//! file became one assertion, a test module lost every test but the new one. Each such write passed the
//! syntax guard, and every later turn worked on a repository whose functions and tests were gone. A rewrite
//! that drops definitions the file had is refused with their names; the model can write the whole file
//! with them, or change part of it with edit.
//!
//! Names are scoped (`Stats.mean`, `tests.test_mean`, `Count`), from `syn` for Rust and the tree-sitter
//! grammars for Python, Go, JavaScript and TypeScript, tests included (a pytest function, `func TestX`,
//! `test('name', ..)`). A file that does not parse has no definitions known (`None`).

use std::collections::BTreeSet;

use tree_sitter::Node;

use crate::gate::syntax::{self, Lang};

/// The names defined in `text` as the file `rel`, or None for a language vouch does not parse or a text
/// that does not parse.
pub(crate) fn defined(rel: &str, text: &str) -> Option<BTreeSet<String>> {
    if rel.ends_with(".rs") {
        let file = syn::parse_file(text).ok()?;
        let mut out = BTreeSet::new();
        rust(&file.items, "", &mut out);
        return Some(out);
    }
    let lang = Lang::of(rel)?;
    let tree = syntax::parse_clean(lang, text)?;
    let mut out = BTreeSet::new();
    sitter(tree.root_node(), text.as_bytes(), "", &mut out);
    if let Some(scan) = syntax::scan(lang, text) {
        out.extend(scan.tests.into_iter().map(|t| format!("test {}", t.key)));
    }
    Some(out)
}

/// The names `old` defines that `new` does not, in order; empty when either does not parse.
pub(crate) fn removed(rel: &str, old: &str, new: &str) -> Vec<String> {
    match (defined(rel, old), defined(rel, new)) {
        (Some(old), Some(new)) => old.difference(&new).cloned().collect(),
        _ => Vec::new(),
    }
}

fn rust(items: &[syn::Item], scope: &str, out: &mut BTreeSet<String>) {
    for item in items {
        let name = match item {
            syn::Item::Fn(f) => Some(f.sig.ident.to_string()),
            syn::Item::Struct(s) => Some(s.ident.to_string()),
            syn::Item::Enum(e) => Some(e.ident.to_string()),
            syn::Item::Trait(t) => Some(t.ident.to_string()),
            syn::Item::Mod(m) => {
                if let Some((_, inner)) = &m.content {
                    rust(inner, &format!("{scope}{}::", m.ident), out);
                }
                None
            }
            syn::Item::Impl(i) => {
                let ty = match &*i.self_ty {
                    syn::Type::Path(p) => p
                        .path
                        .segments
                        .last()
                        .map(|s| s.ident.to_string())
                        .unwrap_or_default(),
                    _ => "_".to_string(),
                };
                for ii in &i.items {
                    if let syn::ImplItem::Fn(f) = ii {
                        out.insert(format!("{scope}{ty}::{}", f.sig.ident));
                    }
                }
                None
            }
            _ => None,
        };
        if let Some(name) = name {
            out.insert(format!("{scope}{name}"));
        }
    }
}

/// Definitions by tree-sitter node kinds: functions, classes, methods and types with a `name` field, and
/// functions bound to a name (`const f = () => ..`).
fn sitter(node: Node<'_>, src: &[u8], scope: &str, out: &mut BTreeSet<String>) {
    let mut cursor = node.walk();
    for child in node.named_children(&mut cursor) {
        let kind = child.kind();
        let named = matches!(
            kind,
            "function_definition"
                | "class_definition"
                | "function_declaration"
                | "generator_function_declaration"
                | "class_declaration"
                | "method_definition"
                | "method_declaration"
                | "type_spec"
                | "interface_declaration"
                | "type_alias_declaration"
                | "enum_declaration"
        ) || (kind == "variable_declarator"
            && child.child_by_field_name("value").is_some_and(|v| {
                matches!(
                    v.kind(),
                    "arrow_function" | "function_expression" | "function"
                )
            }));
        let name = named
            .then(|| child.child_by_field_name("name"))
            .flatten()
            .and_then(|n| n.utf8_text(src).ok());
        match name {
            Some(name) => {
                let key = format!("{scope}{name}");
                out.insert(key.clone());
                sitter(child, src, &format!("{key}."), out);
            }
            None => sitter(child, src, scope, out),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(rel: &str, text: &str) -> Vec<String> {
        defined(rel, text).unwrap().into_iter().collect()
    }

    #[test]
    fn definitions_are_named_with_their_scope_in_each_language() {
        assert_eq!(
            names(
                "src/lib.rs",
                "pub struct S;\nimpl S {\n    pub fn m(&self) {}\n}\npub fn mean() {}\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn t() {}\n}\n"
            ),
            ["S", "S::m", "mean", "tests::t"]
        );
        assert_eq!(
            names(
                "stats.py",
                "class Stats:\n    def mean(self):\n        pass\n\n\ndef median(xs):\n    def key(x):\n        return x\n"
            ),
            ["Stats", "Stats.mean", "median", "median.key"]
        );
        assert_eq!(
            names(
                "words.go",
                "package words\n\ntype Pair struct{}\n\nfunc Count(s string) int { return 0 }\n\nfunc (p Pair) Key() string { return \"\" }\n"
            ),
            ["Count", "Key", "Pair"]
        );
        let js = names(
            "test/html.test.js",
            "const assert = require('assert');\nconst { test } = require('node:test');\nconst esc = (s) => s;\n\ntest('escapes all', () => {\n  assert.strictEqual(esc('a'), 'a');\n});\n",
        );
        assert!(js.contains(&"esc".to_string()), "{js:?}");
        assert!(
            js.iter()
                .any(|n| n.starts_with("test ") && n.contains("escapes all")),
            "{js:?}"
        );
        assert!(defined("broken.py", "def f(:\n").is_none());
        assert!(defined("notes.txt", "anything").is_none());
    }

    #[test]
    fn a_rewrite_that_drops_definitions_names_them() {
        let go = "package words\n\nfunc Count(s string) int { return 0 }\n\nfunc Format(m map[string]int) string { return \"\" }\n";
        // The program's output written over its source still parses as Go (labelled statements).
        assert_eq!(
            removed("words.go", go, "apple: 1\nfig: 2\npear: 1\n"),
            ["Count", "Format"]
        );
        let py = "def test_mean():\n    assert mean([1]) == 1\n\n\ndef test_sum():\n    assert sum([1]) == 1\n";
        let one = "def test_median():\n    assert median([3, 1, 2]) == 2\n";
        assert_eq!(
            removed("tests/test_stats.py", py, one),
            ["test test_mean", "test test_sum", "test_mean", "test_sum"]
        );
        // Keeping every definition, adding one or changing bodies is no removal.
        let more = format!("{py}\n\n{one}");
        assert!(removed("tests/test_stats.py", py, &more).is_empty());
        assert!(removed("words.go", go, &go.replace("return 0", "return 1")).is_empty());
        // Nothing is known when a side does not parse (the syntax guard's to judge).
        assert!(removed("words.go", go, "func (").is_empty());
    }
}
