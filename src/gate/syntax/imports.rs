//! What import statements load and what names they bind, read from the tree: for the guided strategy,
//! which file a block of code belongs in (a module does not load itself) and which of its imports a file
//! has already (`const escapeHtml = require(..)` beside `const { escapeHtml } = require(..)` would declare
//! the name twice).

use tree_sitter::Node;

use super::{each_node, named_children, parse_clean, python, text, Lang};

/// The modules a source loads, as its language names them: Python's dotted modules (`stats`, `.helpers`,
/// `pkg.util`; `from . import helpers` gives `.helpers`), JavaScript's and TypeScript's specifiers
/// (`../html.js`, `node:test`), Go's import paths. None when the source does not parse.
pub fn loaded_modules(lang: Lang, source: &str) -> Option<Vec<String>> {
    let tree = parse_clean(lang, source)?;
    let root = tree.root_node();
    let src = source.as_bytes();
    Some(match lang {
        Lang::Python => python::imports(source)?
            .into_iter()
            .flat_map(|i| {
                if i.module.chars().all(|c| c == '.') {
                    i.names.iter().map(|n| format!("{}{n}", i.module)).collect()
                } else {
                    vec![i.module]
                }
            })
            .collect(),
        Lang::Go => {
            let mut out = Vec::new();
            each_node(root, |n| {
                if n.kind() == "import_spec" {
                    if let Some(path) = n.child_by_field_name("path") {
                        out.push(text(path, src).trim_matches(['"', '`']).to_string());
                    }
                }
                true
            });
            out
        }
        Lang::JavaScript | Lang::TypeScript | Lang::Tsx => js_specifiers(root, src),
    })
}

/// The module specifiers a source loads: `require("x")`, `import .. from "x"`, `import("x")`, `export ..
/// from "x"`, at any depth, as written (`../html.js`, `node:test`).
fn js_specifiers(root: Node, src: &[u8]) -> Vec<String> {
    let mut out = Vec::new();
    let string_of = |n: Node| -> Option<String> {
        (n.kind() == "string").then(|| {
            text(n, src)
                .trim_matches(|c| c == '"' || c == '\'' || c == '`')
                .to_string()
        })
    };
    each_node(root, |n| {
        match n.kind() {
            "import_statement" | "export_statement" => {
                if let Some(s) = n.child_by_field_name("source").and_then(string_of) {
                    out.push(s);
                }
            }
            "call_expression" => {
                let loads = n
                    .child_by_field_name("function")
                    .is_some_and(|f| matches!(text(f, src), "require" | "import"));
                let first = n
                    .child_by_field_name("arguments")
                    .and_then(|a| named_children(a).into_iter().next());
                if let Some(s) = first.filter(|_| loads).and_then(string_of) {
                    out.push(s);
                }
            }
            _ => {}
        }
        true
    });
    out
}

/// The names a source's top-level import statements bind: `import a.b` binds `a`, `from m import x, y as z`
/// binds `x` and `z`; `const { a, b: c } = require(..)` binds `a` and `c`, `import d, { e as f } from ..`
/// `d` and `f`; Go's `import x "p/q"` binds `x`, `import "p/q"` binds `q`. A wildcard (`from m import *`,
/// Go's `.` and `_`) binds nothing it names. None when the source does not parse.
pub fn bound_names(lang: Lang, source: &str) -> Option<Vec<String>> {
    let tree = parse_clean(lang, source)?;
    let src = source.as_bytes();
    let mut out = Vec::new();
    each_node(tree.root_node(), |n| {
        match (lang, n.kind()) {
            (Lang::Python, "import_statement") => {
                for name in named_children(n) {
                    match name.kind() {
                        "dotted_name" => {
                            let t = text(name, src);
                            out.push(t.split('.').next().unwrap_or(t).to_string());
                        }
                        "aliased_import" => out.extend(field(name, "alias", src)),
                        _ => {}
                    }
                }
                return false;
            }
            (Lang::Python, "import_from_statement") => {
                let module = n.child_by_field_name("module_name").map(|m| m.id());
                for name in named_children(n)
                    .into_iter()
                    .filter(|c| Some(c.id()) != module)
                {
                    match name.kind() {
                        "dotted_name" => out.push(text(name, src).to_string()),
                        "aliased_import" => out.extend(field(name, "alias", src)),
                        _ => {}
                    }
                }
                return false;
            }
            (Lang::Go, "import_spec") => {
                match field(n, "name", src) {
                    Some(name) if name == "_" || name == "." => {}
                    Some(name) => out.push(name),
                    None => {
                        if let Some(path) = field(n, "path", src) {
                            let path = path.trim_matches(['"', '`']);
                            out.push(path.rsplit('/').next().unwrap_or(path).to_string());
                        }
                    }
                }
                return false;
            }
            (Lang::JavaScript | Lang::TypeScript | Lang::Tsx, "variable_declarator") => {
                if let Some(name) = n.child_by_field_name("name") {
                    pattern_names(name, src, &mut out);
                }
                return false;
            }
            (Lang::JavaScript | Lang::TypeScript | Lang::Tsx, "import_clause") => {
                each_node(n, |c| {
                    match c.kind() {
                        "import_specifier" => {
                            out.extend(field(c, "alias", src).or_else(|| field(c, "name", src)));
                            return false;
                        }
                        "identifier" => out.push(text(c, src).to_string()),
                        _ => {}
                    }
                    true
                });
                return false;
            }
            _ => {}
        }
        // Only what is bound at the top: a function's body binds nothing for the file.
        n.parent().is_none()
            || matches!(
                n.kind(),
                "lexical_declaration"
                    | "variable_declaration"
                    | "import_statement"
                    | "import_declaration"
                    | "import_spec_list"
                    | "export_statement"
            )
    });
    Some(out)
}

/// The names a JavaScript binding pattern binds: `a`, `{ a, b: c, ...d }`, `[e, f]`.
fn pattern_names(node: Node, src: &[u8], out: &mut Vec<String>) {
    match node.kind() {
        "identifier" | "shorthand_property_identifier_pattern" => {
            out.push(text(node, src).to_string())
        }
        "pair_pattern" => {
            if let Some(v) = node.child_by_field_name("value") {
                pattern_names(v, src, out);
            }
        }
        _ => {
            for c in named_children(node) {
                pattern_names(c, src, out);
            }
        }
    }
}

fn field(node: Node, name: &str, src: &[u8]) -> Option<String> {
    node.child_by_field_name(name)
        .map(|n| text(n, src).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_modules_a_source_loads_are_read_from_its_tree() {
        let py = "import os.path\nfrom stats import median\nfrom . import helpers, util\n\ndef f():\n    import json\n    s = 'import fake'\n";
        assert_eq!(
            loaded_modules(Lang::Python, py).unwrap(),
            ["os.path", "stats", ".helpers", ".util", "json"]
        );
        let js = "const { escapeHtml } = require(\"../html.js\");\nimport test from 'node:test';\nexport { x } from './x';\nconst s = \"require('fake')\";\nasync function f() { await import('./lazy.mjs'); }\n";
        assert_eq!(
            loaded_modules(Lang::JavaScript, js).unwrap(),
            ["../html.js", "node:test", "./x", "./lazy.mjs"]
        );
        let go = "package a\n\nimport (\n\t\"fmt\"\n\tx \"example.com/m/util\"\n)\n";
        assert_eq!(
            loaded_modules(Lang::Go, go).unwrap(),
            ["fmt", "example.com/m/util"]
        );
        assert_eq!(loaded_modules(Lang::Python, "def f(:\n"), None);
    }

    #[test]
    fn the_names_imports_bind_are_read_from_its_tree() {
        let py = "import os.path\nimport numpy as np\nfrom stats import median, mean as avg\nfrom x import *\n\ndef f():\n    import json\n";
        assert_eq!(
            bound_names(Lang::Python, py).unwrap(),
            ["os", "np", "median", "avg"]
        );
        let js = "const { escapeHtml, commentItem: item, ...rest } = require(\"../html.js\");\nconst assert = require('node:assert');\nimport d, { e as f, g } from './m';\nimport * as ns from './n';\nfunction h() { const inner = 1; }\n";
        assert_eq!(
            bound_names(Lang::JavaScript, js).unwrap(),
            ["escapeHtml", "item", "rest", "assert", "d", "f", "g", "ns"]
        );
        let go = "package a\n\nimport (\n\t\"fmt\"\n\tu \"example.com/m/util\"\n\t_ \"embed\"\n)\n";
        assert_eq!(bound_names(Lang::Go, go).unwrap(), ["fmt", "u"]);
    }
}
