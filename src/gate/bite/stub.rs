//! Compile-only bites made behavioural: a test that fails without the change only because it does not compile
//! (it calls a new function) proves that the function exists, not that the test checks it. So head is built
//! again with the bodies of the change's new and changed functions stubbed out (signatures kept), and the test
//! is run there: failing is a bite by `stub`, passing is `inert`.
//!
//! A stub is a failing statement put first in the body (`unimplemented!("vouch: stubbed")` in Rust,
//! `panic("vouch: stubbed")` in Go, `throw new Error("vouch: stubbed")` in TypeScript and JavaScript), which
//! is the body replaced as far as running it goes, while the rest still type-checks and keeps its imports and
//! variables used (Go rejects unused ones). Functions are found with parsers: `syn` for Rust (functions in test
//! regions are left alone), tree-sitter for Go and TypeScript. A function is new or changed when no function
//! of the same key (module, impl or receiver or class, name) at base has the same text.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Result;
use syn::spanned::Spanned;

use crate::gate::bite::plan::{head_overlay, Overlay};
use crate::gate::bite::{BiteReport, BiteTest};
use crate::gate::cargo::Layout;
use crate::gate::outcome::{BiteMethod, TestOutcome};
use crate::gate::profile::Step;
use crate::gate::results::Runner;
use crate::gate::GateRun;

use super::run::Limits;

/// The languages functions can be stubbed in, by file extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lang {
    Rust,
    Go,
    TypeScript,
    Tsx,
}

impl Lang {
    pub fn of(path: &str) -> Option<Lang> {
        let ext = Path::new(path).extension()?.to_str()?;
        match ext {
            "rs" => Some(Lang::Rust),
            "go" => Some(Lang::Go),
            "ts" | "mts" | "cts" | "js" | "mjs" | "cjs" => Some(Lang::TypeScript),
            "tsx" | "jsx" => Some(Lang::Tsx),
            _ => None,
        }
    }

    fn stub(self) -> &'static str {
        match self {
            Lang::Rust => " #![allow(unreachable_code)] unimplemented!(\"vouch: stubbed\");",
            Lang::Go => " panic(\"vouch: stubbed\");",
            Lang::TypeScript | Lang::Tsx => " throw new Error(\"vouch: stubbed\");",
        }
    }
}

/// One function of a source file: its key, its text, and where its stub goes (a byte offset in the body).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Function {
    pub key: String,
    pub text: String,
    pub insert_at: usize,
}

/// The functions of a source file, or None when it does not parse.
pub fn functions(lang: Lang, text: &str) -> Option<Vec<Function>> {
    match lang {
        Lang::Rust => rust_functions(text),
        Lang::Go | Lang::TypeScript | Lang::Tsx => sitter_functions(lang, text),
    }
}

/// `text` with every new or changed function (against `old`, absent for a new file) stubbed, and the keys of
/// the stubbed functions. None when either side does not parse.
pub fn stub_file(lang: Lang, old: Option<&str>, text: &str) -> Option<(String, Vec<String>)> {
    let new_fns = functions(lang, text)?;
    let old_fns: BTreeMap<String, String> = match old {
        Some(o) => functions(lang, o)?
            .into_iter()
            .map(|f| (f.key, squash(&f.text)))
            .collect(),
        None => BTreeMap::new(),
    };
    let mut chosen: Vec<&Function> = new_fns
        .iter()
        .filter(|f| old_fns.get(&f.key) != Some(&squash(&f.text)))
        .collect();
    chosen.sort_by_key(|f| std::cmp::Reverse(f.insert_at));
    let mut out = text.to_owned();
    let mut keys = Vec::new();
    for f in chosen {
        if f.insert_at <= out.len() && out.is_char_boundary(f.insert_at) {
            out.insert_str(f.insert_at, lang.stub());
            keys.push(f.key.clone());
        }
    }
    keys.reverse();
    Some((out, keys))
}

/// Text with its whitespace runs collapsed: reformatting a function does not change it.
fn squash(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

// ------------------------------------------------------------------------------------------------- Rust

fn rust_functions(text: &str) -> Option<Vec<Function>> {
    let file = syn::parse_file(text).ok()?;
    let regions = crate::gate::split::regions_for("x.rs")
        .and_then(|f| f.test_regions(text))
        .unwrap_or_default();
    let mut out = Vec::new();
    rust_items(text, &file.items, "", &regions, &mut out);
    Some(out)
}

fn in_regions(regions: &[std::ops::RangeInclusive<usize>], line: usize) -> bool {
    regions.iter().any(|r| r.contains(&line))
}

fn rust_items(
    text: &str,
    items: &[syn::Item],
    scope: &str,
    regions: &[std::ops::RangeInclusive<usize>],
    out: &mut Vec<Function>,
) {
    for item in items {
        if in_regions(regions, item.span().start().line) {
            continue;
        }
        match item {
            syn::Item::Fn(f) => {
                let key = format!("{scope}fn {}", f.sig.ident);
                push_rust(text, &key, item.span(), &f.attrs, &f.block, out);
            }
            syn::Item::Mod(m) => {
                if let Some((_, inner)) = &m.content {
                    rust_items(text, inner, &format!("{scope}{}::", m.ident), regions, out);
                }
            }
            syn::Item::Impl(i) => {
                let ty = source_of(text, i.self_ty.span()).unwrap_or_default();
                let tr = i
                    .trait_
                    .as_ref()
                    .and_then(|(_, p, _)| source_of(text, p.span()))
                    .map(|t| format!(" for {}", squash(&t)))
                    .unwrap_or_default();
                let scope = format!("{scope}impl {}{tr}::", squash(&ty));
                for ii in &i.items {
                    if let syn::ImplItem::Fn(f) = ii {
                        if in_regions(regions, ii.span().start().line) {
                            continue;
                        }
                        let key = format!("{scope}fn {}", f.sig.ident);
                        push_rust(text, &key, ii.span(), &f.attrs, &f.block, out);
                    }
                }
            }
            syn::Item::Trait(t) => {
                let scope = format!("{scope}trait {}::", t.ident);
                for ti in &t.items {
                    if let syn::TraitItem::Fn(f) = ti {
                        if let Some(block) = &f.default {
                            let key = format!("{scope}fn {}", f.sig.ident);
                            push_rust(text, &key, ti.span(), &f.attrs, block, out);
                        }
                    }
                }
            }
            _ => {}
        }
    }
}

fn push_rust(
    text: &str,
    key: &str,
    span: proc_macro2::Span,
    attrs: &[syn::Attribute],
    block: &syn::Block,
    out: &mut Vec<Function>,
) {
    let Some(item_text) = source_of(text, span) else {
        return;
    };
    // After the `{`, and after the body's own inner attributes, which must come first.
    let open = block.brace_token.span.open().byte_range().end;
    let after_inner = attrs
        .iter()
        .filter(|a| matches!(a.style, syn::AttrStyle::Inner(_)))
        .map(|a| a.span().byte_range().end)
        .filter(|end| *end > open)
        .max()
        .unwrap_or(open);
    out.push(Function {
        key: key.to_owned(),
        text: item_text,
        insert_at: after_inner,
    });
}

fn source_of(text: &str, span: proc_macro2::Span) -> Option<String> {
    text.get(span.byte_range()).map(str::to_owned)
}

// --------------------------------------------------------------------------------------- Go, TypeScript

fn sitter_functions(lang: Lang, text: &str) -> Option<Vec<Function>> {
    let language: tree_sitter::Language = match lang {
        Lang::Go => tree_sitter_go::LANGUAGE.into(),
        Lang::TypeScript => tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
        Lang::Tsx => tree_sitter_typescript::LANGUAGE_TSX.into(),
        Lang::Rust => return None,
    };
    let mut parser = tree_sitter::Parser::new();
    parser.set_language(&language).ok()?;
    let tree = parser.parse(text, None)?;
    let root = tree.root_node();
    if root.has_error() {
        return None;
    }
    let mut out = Vec::new();
    sitter_walk(lang, text, root, "", &mut out);
    Some(out)
}

fn node_text<'a>(text: &'a str, node: tree_sitter::Node) -> &'a str {
    text.get(node.byte_range()).unwrap_or("")
}

fn sitter_walk(
    lang: Lang,
    text: &str,
    node: tree_sitter::Node,
    scope: &str,
    out: &mut Vec<Function>,
) {
    let mut cursor = node.walk();
    for child in node.named_children(&mut cursor) {
        let name = child
            .child_by_field_name("name")
            .map(|n| node_text(text, n).to_owned());
        let body = child.child_by_field_name("body");
        let mut push = |key: String, body: tree_sitter::Node| {
            if node_text(text, body).starts_with('{') {
                out.push(Function {
                    key,
                    text: node_text(text, child).to_owned(),
                    insert_at: body.start_byte() + 1,
                });
            }
        };
        match (lang, child.kind()) {
            (Lang::Go, "function_declaration") => {
                if let (Some(name), Some(body)) = (name, body) {
                    push(format!("func {name}"), body);
                }
            }
            (Lang::Go, "method_declaration") => {
                let receiver = child
                    .child_by_field_name("receiver")
                    .map(|r| squash(node_text(text, r)))
                    .unwrap_or_default();
                if let (Some(name), Some(body)) = (name, body) {
                    push(format!("func {receiver} {name}"), body);
                }
            }
            (
                Lang::TypeScript | Lang::Tsx,
                "function_declaration"
                | "generator_function_declaration"
                | "method_definition"
                | "function_expression"
                | "function",
            ) => {
                if let (Some(name), Some(body)) = (name, body) {
                    push(format!("{scope}{name}"), body);
                }
            }
            (Lang::TypeScript | Lang::Tsx, "class_declaration" | "abstract_class_declaration") => {
                let class = name.unwrap_or_default();
                if let Some(body) = body {
                    sitter_walk(lang, text, body, &format!("{scope}{class}."), out);
                }
            }
            (Lang::TypeScript | Lang::Tsx, "variable_declarator") => {
                let value = child.child_by_field_name("value");
                let is_fn = value.is_some_and(|v| {
                    matches!(
                        v.kind(),
                        "arrow_function" | "function_expression" | "function"
                    )
                });
                if let (Some(name), Some(value), true) = (name, value, is_fn) {
                    if let Some(body) = value.child_by_field_name("body") {
                        push(format!("{scope}{name}"), body);
                    }
                }
            }
            (Lang::TypeScript | Lang::Tsx, _) => sitter_walk(lang, text, child, scope, out),
            _ => {}
        }
    }
}

// ------------------------------------------------------------------------------------------- the run

/// Head's tree as an overlay on base, with the new and changed functions of its production files stubbed;
/// the stubbed functions as `file: key`. None when nothing could be stubbed.
fn stubbed_overlay(gate: &GateRun<'_>) -> Result<Option<(Overlay, Vec<String>)>> {
    let mut stubbed = Vec::new();
    let overlay = head_overlay(gate.prep, |at| {
        let path = &at.change.path;
        let (Some(lang), Some(file)) = (Lang::of(path), at.file.as_mut()) else {
            return Ok(());
        };
        let Ok(text) = std::str::from_utf8(&file.content) else {
            return Ok(());
        };
        if let Some((new_text, keys)) = stub_file(lang, at.base_text.as_deref(), text) {
            stubbed.extend(keys.iter().map(|k| format!("{path}: {k}")));
            file.content = new_text.into_bytes();
        }
        Ok(())
    })?;
    Ok((!stubbed.is_empty()).then_some((overlay, stubbed)))
}

impl GateRun<'_> {
    /// Runs the tests that only failed to build without the change against head with the change's functions
    /// stubbed, and replaces their outcomes: failing there bites (method `stub`), passing is inert; a stubbed
    /// tree that does not build leaves them as they were, with a warning.
    pub(super) async fn stub_build_only(
        &mut self,
        step: &Step,
        tests: &mut [BiteTest],
        limits: Limits,
        layout: Option<&Layout>,
        report: &mut BiteReport,
    ) -> Result<()> {
        let build_only: Vec<String> = tests
            .iter()
            .filter(|t| t.outcome == TestOutcome::BitesBuild)
            .map(|t| t.id.clone())
            .collect();
        if build_only.is_empty()
            || !matches!(step.runner(), Runner::Cargo | Runner::Go | Runner::Node)
        {
            return Ok(());
        }
        let Some((overlay, stubbed)) = tokio::task::block_in_place(|| stubbed_overlay(self))?
        else {
            report.warnings.push(format!(
                "only fail to build without the change, and no new or changed function could be stubbed to check them: {}",
                build_only.join(", ")
            ));
            return Ok(());
        };
        let pb = self.ui.start(&format!(
            "bite check: {} against stubbed functions",
            crate::gate::steps::plural(build_only.len(), "compile-only bite")
        ));
        let run = self
            .run_in_tree(step, overlay, "bite-stub", &build_only, limits, layout)
            .await?;
        pb.finish_and_clear();
        let by_id: BTreeMap<&str, TestOutcome> = run
            .tests
            .iter()
            .map(|t| (t.id.as_str(), t.outcome))
            .collect();
        let mut unbuilt = Vec::new();
        for t in tests.iter_mut() {
            match by_id.get(t.id.as_str()) {
                Some(TestOutcome::Bites) => {
                    t.outcome = TestOutcome::Bites;
                    t.method = Some(BiteMethod::Stub);
                }
                Some(TestOutcome::Inert) => {
                    t.outcome = TestOutcome::Inert;
                    t.method = Some(BiteMethod::Stub);
                }
                Some(_) => unbuilt.push(t.id.clone()),
                None => {}
            }
        }
        report.reverted.push(format!(
            "compile-only bites rerun against head with stubbed functions: {}",
            stubbed.join(", ")
        ));
        if !unbuilt.is_empty() {
            report.warnings.push(format!(
                "with the change's functions stubbed these still did not build or run, so they count as compile-only bites: {}",
                unbuilt.join(", ")
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn rust_new_and_changed_functions_get_a_stub_and_unchanged_ones_and_tests_do_not() {
        let old = "pub fn same() -> u8 {\n    1\n}\n\npub fn changed() -> u8 {\n    1\n}\n\nimpl S {\n    pub fn m(&self) -> u8 { 1 }\n}\n";
        let new = "pub fn same() -> u8 {\n    1\n}\n\npub fn changed() -> u8 {\n    2\n}\n\npub fn added(x: u8) -> impl Iterator<Item = u8> {\n    #![allow(clippy::all)]\n    std::iter::once(x)\n}\n\nimpl S {\n    pub fn m(&self) -> u8 { 2 }\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn t() { assert_eq!(super::changed(), 2); }\n}\n";
        let (out, keys) = stub_file(Lang::Rust, Some(old), new).unwrap();
        assert_eq!(keys, vec!["fn changed", "fn added", "impl S::fn m"]);
        assert!(out.contains("pub fn same() -> u8 {\n    1\n}"));
        assert!(out.contains(
            "pub fn changed() -> u8 { #![allow(unreachable_code)] unimplemented!(\"vouch: stubbed\");\n    2\n}"
        ));
        assert!(out.contains("    #![allow(clippy::all)] #![allow(unreachable_code)] unimplemented!(\"vouch: stubbed\");\n    std::iter::once(x)"), "{out}");
        assert!(out.contains("fn t() { assert_eq!"), "{out}");
        assert!(syn::parse_file(&out).is_ok());
    }

    #[test]
    fn go_functions_and_methods_get_a_panic_first() {
        let old = "package calc\n\nfunc Abs(x int) int {\n\treturn x\n}\n";
        let new = "package calc\n\nimport \"fmt\"\n\nfunc Abs(x int) int {\n\treturn x\n}\n\nfunc Sign(x int) int {\n\tfmt.Sprint(x)\n\treturn 1\n}\n\nfunc (c *Calc) Add(a int) int {\n\treturn a\n}\n";
        let (out, keys) = stub_file(Lang::Go, Some(old), new).unwrap();
        assert_eq!(keys, vec!["func Sign", "func (c *Calc) Add"]);
        assert!(out.contains("func Sign(x int) int { panic(\"vouch: stubbed\");\n\tfmt.Sprint(x)"));
        assert!(out.contains("func Abs(x int) int {\n\treturn x"));
    }

    #[test]
    fn typescript_functions_methods_and_arrow_functions_throw_first() {
        let new = "export function sign(x: number): number {\n  return Math.sign(x);\n}\n\nexport class C {\n  m(): number {\n    return 1;\n  }\n}\n\nexport const f = (x: number) => {\n  return x;\n};\n\nexport const g = (x: number) => x;\n";
        let (out, keys) = stub_file(Lang::TypeScript, None, new).unwrap();
        assert_eq!(keys, vec!["sign", "C.m", "f"]);
        assert!(
            out.contains("number { throw new Error(\"vouch: stubbed\");\n  return Math.sign(x);")
        );
        assert!(out.contains("=> { throw new Error(\"vouch: stubbed\");\n  return x;"));
        let js = "module.exports = function sign(x) {\n  return Math.sign(x);\n};\n";
        let (_, keys) = stub_file(Lang::TypeScript, None, js).unwrap();
        assert_eq!(keys, vec!["sign"]);
    }

    #[test]
    fn a_file_that_does_not_parse_is_not_stubbed() {
        assert_eq!(stub_file(Lang::Rust, None, "fn ( {"), None);
        assert_eq!(stub_file(Lang::Go, None, "package x\nfunc ( {"), None);
    }
}
