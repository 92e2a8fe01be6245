//! A `write_file` whose content is part of a file: its definitions go into the file, the rest is kept.
//!
//! The 1.5B coder fixes a function by writing the file anew with only that function (and an import), and
//! adds a test by writing the test module with only the new test. Refused, it wrote the same partial file
//! again, or gave up: the refusal's advice (write the whole file, or use edit) is beyond it. Yet what it
//! meant is plain: these definitions, as written. So when the content drops definitions the file has, and
//! holds nothing but definitions, imports and comments, each of its definitions replaces the file's of the
//! same name (a new one is added after the file's last), its new imports go after the file's, and what it
//! left out stays. A class, an inline Rust `mod` or an `impl` block written with some of its members is
//! merged member by member the same way. A statement the file has already, as it is (`module.exports =
//! { .. }`), merges as nothing; content with anything else at the top (other statements, a program's
//! output) is no part of a file: that write is refused as before.
//!
//! Languages: Rust (`syn`), Python, Go, JavaScript and TypeScript (tree-sitter).

use std::collections::HashSet;
use std::ops::Range;

use proc_macro2::LineColumn;
use syn::spanned::Spanned;
use tree_sitter::Node;

use crate::gate::syntax::{self, Lang};

/// What a merge did, by definition name.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Merged {
    pub text: String,
    pub replaced: Vec<String>,
    pub added: Vec<String>,
    /// The file's definitions the content left out, kept.
    pub kept: Vec<String>,
    /// Definitions the content rewrote that the caller holds as they are ([`merge_holding`]).
    pub held: Vec<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Import,
    Def,
    /// Comments, a package clause, a module docstring: nothing to merge, nothing against merging.
    Quiet,
    /// Anything else: content holding it is not part of a file.
    Other,
}

#[derive(Debug)]
struct Unit {
    kind: Kind,
    key: String,
    range: Range<usize>,
    /// A container's members (class body, inline module, impl block) and where new members go: after the
    /// last member, or just inside the opening brace of an empty body.
    members: Option<(Vec<Unit>, usize)>,
}

/// The two texts and what merging them does so far.
struct Merge<'a> {
    old: &'a str,
    new: &'a str,
    python: bool,
    rust: bool,
    /// The tree-sitter language, for what imports bind (None for Rust).
    lang: Option<Lang>,
    edits: Vec<(Range<usize>, String)>,
    out: Merged,
    /// Which of the file's definitions stay as they are, by full name.
    hold: &'a dyn Fn(&str) -> bool,
}

/// The merged text when `new` is part of `old` as described above; None when it is not (or either does
/// not parse, or the language is not known), and then the caller's rules apply.
pub(crate) fn merge(rel: &str, old: &str, new: &str) -> Option<Merged> {
    merge_holding(rel, old, new, &|_| false)
}

/// [`merge`], except that the file's definitions `hold` names (`name`, `Class.method`, `mod tests.t`) stay
/// as they are where the content rewrites them; they are listed in [`Merged::held`]. A content that
/// rewrites nothing but held definitions gives the file's own text with them listed. None as for `merge`.
pub(crate) fn merge_holding(
    rel: &str,
    old: &str,
    new: &str,
    hold: &dyn Fn(&str) -> bool,
) -> Option<Merged> {
    let old_units = units(rel, old)?;
    let new_units = units(rel, new)?;
    let mut m = Merge {
        old,
        new,
        python: rel.ends_with(".py"),
        rust: rel.ends_with(".rs"),
        lang: Lang::of(rel),
        edits: Vec::new(),
        out: Merged::default(),
        hold,
    };
    m.level(&old_units, &new_units, "", old.len())?;
    let Merge {
        mut edits, mut out, ..
    } = m;
    if out.replaced.is_empty() && out.added.is_empty() {
        if out.held.is_empty() {
            return None;
        }
        out.text = old.to_string();
        return Some(out);
    }
    edits.sort_by_key(|(at, _)| std::cmp::Reverse(at.start));
    let mut text = old.to_string();
    for (range, with) in edits {
        text.replace_range(range, &with);
    }
    out.text = text;
    Some(out)
}

/// Whether every definition `new` holds is in `old` with the same text (whitespace aside): writing it
/// changes nothing.
pub(crate) fn same_definitions(rel: &str, old: &str, new: &str) -> bool {
    let (Some(old_units), Some(new_units)) = (units(rel, old), units(rel, new)) else {
        return false;
    };
    let defs: Vec<&Unit> = new_units.iter().filter(|u| u.kind == Kind::Def).collect();
    !defs.is_empty()
        && defs.iter().all(|n| {
            old_units.iter().any(|o| {
                o.kind == Kind::Def
                    && o.key == n.key
                    && squash(&old[o.range.clone()]) == squash(&new[n.range.clone()])
            })
        })
}

impl Merge<'_> {
    /// Merges one level (a file, or a container's body), new members going at `insert_at`; None when the new
    /// level holds something that is not a definition, import or comment, or no definition at all.
    fn level(
        &mut self,
        old_units: &[Unit],
        new_units: &[Unit],
        scope: &str,
        insert_at: usize,
    ) -> Option<()> {
        let (old, new) = (self.old, self.new);
        // A statement the file has already, as it is (`module.exports = { .. }`, `"use strict";`, a
        // `__main__` block), is part of the file written back: it merges as nothing.
        let old_statements: HashSet<String> = old_units
            .iter()
            .filter(|u| u.kind == Kind::Other)
            .map(|u| squash(&old[u.range.clone()]))
            .collect();
        let foreign = |u: &Unit| {
            u.kind == Kind::Other && !old_statements.contains(&squash(&new[u.range.clone()]))
        };
        if new_units.iter().any(foreign) || !new_units.iter().any(|u| u.kind == Kind::Def) {
            return None;
        }
        let old_imports: HashSet<&str> = old_units
            .iter()
            .filter(|u| u.kind == Kind::Import)
            .map(|u| old[u.range.clone()].trim())
            .collect();
        // The names the file binds already, by its imports and its definitions: an import binding only
        // those is the file's own written another way (`const escapeHtml = require("../html.js")` beside
        // `const { escapeHtml } = require("../html.js")`), and adding it would declare them twice.
        let bound: HashSet<String> = match self.lang {
            Some(lang) => old_imports
                .iter()
                .flat_map(|t| syntax::bound_names(lang, t).unwrap_or_default())
                .chain(
                    old_units
                        .iter()
                        .filter(|u| u.kind == Kind::Def)
                        .map(|u| u.key.clone()),
                )
                .collect(),
            None => HashSet::new(),
        };
        let binds_anew = |t: &str| match self.lang.and_then(|l| syntax::bound_names(l, t)) {
            Some(names) if !names.is_empty() => !names.iter().all(|n| bound.contains(n)),
            _ => true,
        };
        let imports: Vec<&str> = new_units
            .iter()
            .filter(|u| u.kind == Kind::Import)
            .map(|u| new[u.range.clone()].trim())
            .filter(|t| !old_imports.contains(t) && binds_anew(t))
            .collect();
        if !imports.is_empty() {
            let indent = indent_of(new, new_units.iter().find(|u| u.kind == Kind::Import)?);
            let block: String = imports.iter().map(|t| format!("\n{indent}{t}")).collect();
            match old_units.iter().rfind(|u| u.kind == Kind::Import) {
                Some(last) => self.edits.push((last.range.end..last.range.end, block)),
                None => {
                    // Before the first definition or statement, after a docstring or package clause
                    // (Rust: after the file's inner doc comments and attributes, `//!` and `#![..]`,
                    // which must come first and are no items).
                    let at = old_units
                        .iter()
                        .take_while(|u| u.kind == Kind::Quiet)
                        .last()
                        .map_or(0, |u| u.range.end)
                        .max(if self.rust && scope.is_empty() {
                            inner_attributes_end(old)
                        } else {
                            0
                        });
                    let block = if at == 0 {
                        format!("{}\n\n", block.trim_start())
                    } else {
                        format!("\n{block}")
                    };
                    self.edits.push((at..at, block));
                }
            }
        }
        let mut appended = String::new();
        for unit in new_units.iter().filter(|u| u.kind == Kind::Def) {
            let name = format!("{scope}{}", unit.key);
            match old_units
                .iter()
                .find(|u| u.kind == Kind::Def && u.key == unit.key)
            {
                Some(was) => {
                    // A held container (a test class) takes the content's new members all the same.
                    let held = (self.hold)(&name);
                    let merged_inside = match (&was.members, &unit.members) {
                        (Some((old_members, end)), Some((new_members, _)))
                            if held || dropped(old_members, new_members) =>
                        {
                            self.level(old_members, new_members, &format!("{name}."), *end)
                                .is_some()
                        }
                        _ => false,
                    };
                    if !merged_inside && old[was.range.clone()] != new[unit.range.clone()] {
                        if held {
                            self.out.held.push(name);
                            continue;
                        }
                        self.edits
                            .push((was.range.clone(), new[unit.range.clone()].to_string()));
                        self.out.replaced.push(name);
                    }
                }
                None => {
                    let indent = indent_of(new, unit);
                    let body = &new[unit.range.clone()];
                    if scope.is_empty() {
                        // After the file's last line: one blank line, two in Python.
                        let nl = if old.ends_with('\n') { "" } else { "\n" };
                        let gap = if self.python { "\n\n" } else { "\n" };
                        appended.push_str(&format!("{nl}{gap}{indent}{body}\n"));
                    } else {
                        appended.push_str(&format!("\n\n{indent}{body}"));
                    }
                    self.out.added.push(name);
                }
            }
        }
        if !appended.is_empty() {
            self.edits.push((insert_at..insert_at, appended));
        }
        let written: HashSet<&str> = new_units.iter().map(|u| u.key.as_str()).collect();
        self.out.kept.extend(
            old_units
                .iter()
                .filter(|u| u.kind == Kind::Def && !written.contains(u.key.as_str()))
                .map(|u| format!("{scope}{}", u.key)),
        );
        Some(())
    }
}

/// The text of the definition `name` (a full name as [`Merged`] lists them: `median`, `Stats.mean`,
/// `Stack::push`) in `text`, its attributes and doc comments with it where the parser counts them in; None
/// when `text` does not parse or holds no such definition.
pub(crate) fn definition(rel: &str, text: &str, name: &str) -> Option<String> {
    let units = units(rel, text)?;
    let (unit, _) = find(&units, name, "")?;
    text.get(unit.range.clone()).map(str::to_string)
}

/// `text` with the definition `name` (a full name as [`Merged`] lists them: `test_x`, `TestA.test_y`,
/// `mod tests.t`, `test "title"`) renamed to a name `taken` does not refuse (`test_x_2`, `"title (2)"`),
/// and that name; None when `text` does not hold it. A small model asked for a new test often sends an
/// existing test with new assertions under its old name: renamed, it is the new test it meant.
pub(crate) fn renamed(
    rel: &str,
    text: &str,
    name: &str,
    taken: &dyn Fn(&str) -> bool,
) -> Option<(String, String)> {
    let units = units(rel, text)?;
    let (unit, scope) = find(&units, name, "")?;
    let body = &text[unit.range.clone()];
    let (old_leaf, quoted) = match unit.key.find(['"', '\'', '`']) {
        Some(q) => (unit.key[q + 1..unit.key.len() - 1].to_string(), true),
        None => (unit.key.clone(), false),
    };
    let at = if quoted {
        body.find(&old_leaf)?
    } else {
        word_at(body, &old_leaf)?
    };
    for n in 2..100 {
        let leaf = if quoted {
            format!("{old_leaf} ({n})")
        } else {
            format!("{old_leaf}_{n}")
        };
        let key = unit.key.replacen(&old_leaf, &leaf, 1);
        let full = format!("{scope}{key}");
        if taken(&full) {
            continue;
        }
        let start = unit.range.start + at;
        let mut out = text.to_string();
        out.replace_range(start..start + old_leaf.len(), &leaf);
        return Some((out, full));
    }
    None
}

/// The unit of `units` (or of their members) whose full name is `name`, with its scope.
fn find<'u>(units: &'u [Unit], name: &str, scope: &str) -> Option<(&'u Unit, String)> {
    for u in units.iter().filter(|u| u.kind == Kind::Def) {
        let full = format!("{scope}{}", u.key);
        if full == name {
            return Some((u, scope.to_string()));
        }
        if let Some((members, _)) = &u.members {
            if name.starts_with(&format!("{full}.")) {
                if let Some(found) = find(members, name, &format!("{full}.")) {
                    return Some(found);
                }
            }
        }
    }
    None
}

/// Where `word` first occurs in `text` as a whole identifier.
fn word_at(text: &str, word: &str) -> Option<usize> {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    text.match_indices(word).map(|(i, _)| i).find(|&i| {
        !text[..i].chars().next_back().is_some_and(ident)
            && !text[i + word.len()..].chars().next().is_some_and(ident)
    })
}

/// Where a Rust file's leading inner doc comments and attributes (`//!`, `#![..]`, one per line) end: the
/// end of the last such line, 0 when there are none.
fn inner_attributes_end(text: &str) -> usize {
    let mut end = 0;
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        let t = line.trim();
        if t.starts_with("//!") || t.starts_with("#![") {
            end = at + line.trim_end().len();
        } else if !t.is_empty() && !t.starts_with("//") {
            break;
        }
        at += line.len();
    }
    end
}

/// `text` with each run of whitespace one space: two texts equal but for layout are equal here.
fn squash(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Whether `new` leaves out a definition `old` has.
fn dropped(old: &[Unit], new: &[Unit]) -> bool {
    let have: HashSet<&str> = new.iter().map(|u| u.key.as_str()).collect();
    old.iter()
        .any(|u| u.kind == Kind::Def && !have.contains(u.key.as_str()))
}

/// The spaces and tabs before a unit on its line.
fn indent_of<'a>(text: &'a str, unit: &Unit) -> &'a str {
    let start = text[..unit.range.start].rfind('\n').map_or(0, |i| i + 1);
    let prefix = &text[start..unit.range.start];
    if prefix.chars().all(|c| c == ' ' || c == '\t') {
        prefix
    } else {
        ""
    }
}

fn units(rel: &str, text: &str) -> Option<Vec<Unit>> {
    if rel.ends_with(".rs") {
        let file = syn::parse_file(text).ok()?;
        let lines = LineIndex::new(text);
        return Some(rust_units(&file.items, &lines));
    }
    let lang = Lang::of(rel)?;
    let tree = syntax::parse_clean(lang, text)?;
    Some(sitter_units(tree.root_node(), text.as_bytes(), lang))
}

fn sitter_units(parent: Node<'_>, src: &[u8], lang: Lang) -> Vec<Unit> {
    let mut out = Vec::new();
    let mut cursor = parent.walk();
    for (i, node) in parent.named_children(&mut cursor).enumerate() {
        let (kind, key, members) = sitter_unit(node, src, lang, i == 0);
        out.push(Unit {
            kind,
            key,
            range: node.byte_range(),
            members,
        });
    }
    out
}

type Classified = (Kind, String, Option<(Vec<Unit>, usize)>);

fn sitter_unit(node: Node<'_>, src: &[u8], lang: Lang, first: bool) -> Classified {
    let text = |n: Node<'_>| n.utf8_text(src).unwrap_or_default().to_string();
    let name = |n: Node<'_>| n.child_by_field_name("name").map(text);
    let plain = |kind: Kind| (kind, String::new(), None);
    let def = |key: Option<String>| match key {
        Some(k) => (Kind::Def, k, None),
        None => (Kind::Other, String::new(), None),
    };
    match (lang, node.kind()) {
        (_, "comment") => plain(Kind::Quiet),
        (
            Lang::Python,
            "import_statement" | "import_from_statement" | "future_import_statement",
        ) => plain(Kind::Import),
        (Lang::Python, "expression_statement")
            if first && node.named_child(0).is_some_and(|c| c.kind() == "string") =>
        {
            plain(Kind::Quiet)
        }
        (Lang::Python, "function_definition") => def(name(node)),
        (Lang::Python, "class_definition") => {
            let members = node
                .child_by_field_name("body")
                .map(|b| (sitter_units(b, src, lang), b.end_byte()));
            match name(node) {
                Some(k) => (Kind::Def, k, members),
                None => plain(Kind::Other),
            }
        }
        (Lang::Python, "decorated_definition") => match node.child_by_field_name("definition") {
            Some(d) => {
                let (kind, key, members) = sitter_unit(d, src, lang, false);
                (kind, key, members)
            }
            None => plain(Kind::Other),
        },
        (Lang::Go, "package_clause") => plain(Kind::Quiet),
        (Lang::Go, "import_declaration") => plain(Kind::Import),
        (Lang::Go, "function_declaration") => def(name(node)),
        (Lang::Go, "method_declaration") => {
            let receiver = node
                .child_by_field_name("receiver")
                .map(text)
                .unwrap_or_default();
            let ty: String = receiver
                .rsplit(|c: char| c.is_whitespace() || c == '*' || c == '(')
                .next()
                .unwrap_or_default()
                .trim_end_matches(')')
                .to_string();
            def(name(node).map(|n| format!("{ty}.{n}")))
        }
        (Lang::Go, "type_declaration" | "const_declaration" | "var_declaration") => {
            let mut c = node.walk();
            let first = node
                .named_children(&mut c)
                .find_map(|spec| spec.child_by_field_name("name").map(text));
            def(first)
        }
        (Lang::JavaScript | Lang::TypeScript | Lang::Tsx, kind) => js_unit(node, kind, src),
        _ => plain(Kind::Other),
    }
}

fn js_unit(node: Node<'_>, kind: &str, src: &[u8]) -> Classified {
    let text = |n: Node<'_>| n.utf8_text(src).unwrap_or_default().to_string();
    let plain = |kind: Kind| (kind, String::new(), None);
    match kind {
        "import_statement" => plain(Kind::Import),
        "export_statement" => match node.child_by_field_name("declaration") {
            Some(d) => js_unit(d, d.kind(), src),
            None => plain(Kind::Other),
        },
        "function_declaration"
        | "generator_function_declaration"
        | "class_declaration"
        | "interface_declaration"
        | "type_alias_declaration"
        | "enum_declaration" => match node.child_by_field_name("name") {
            Some(n) => (Kind::Def, text(n), None),
            None => plain(Kind::Other),
        },
        "lexical_declaration" | "variable_declaration" => {
            let mut c = node.walk();
            let declarators: Vec<Node<'_>> = node
                .named_children(&mut c)
                .filter(|d| d.kind() == "variable_declarator")
                .collect();
            let [one] = declarators.as_slice() else {
                return plain(Kind::Other);
            };
            let value = one.child_by_field_name("value");
            // `const assert = require('assert')` is an import in all but name.
            if value.is_some_and(|v| {
                v.kind() == "call_expression"
                    && v.child_by_field_name("function")
                        .is_some_and(|f| text(f) == "require")
            }) {
                return plain(Kind::Import);
            }
            match one.child_by_field_name("name") {
                Some(n) => (Kind::Def, text(n), None),
                None => plain(Kind::Other),
            }
        }
        // `test('name', () => ..)`, `it(..)`, `describe(..)`: keyed by the call and its title.
        "expression_statement" => {
            let call = node
                .named_child(0)
                .filter(|c| c.kind() == "call_expression");
            let callee = call
                .and_then(|c| c.child_by_field_name("function"))
                .map(text);
            let title = call
                .and_then(|c| c.child_by_field_name("arguments"))
                .and_then(|a| a.named_child(0))
                .filter(|a| matches!(a.kind(), "string" | "template_string"))
                .map(text);
            match (callee.as_deref(), title) {
                (Some("test" | "it" | "describe"), Some(t)) => (
                    Kind::Def,
                    format!("{} {t}", callee.unwrap_or_default()),
                    None,
                ),
                _ => plain(Kind::Other),
            }
        }
        _ => plain(Kind::Other),
    }
}

/// Byte offsets of syn's line/column positions (columns count chars).
struct LineIndex<'a> {
    text: &'a str,
    starts: Vec<usize>,
}

impl<'a> LineIndex<'a> {
    fn new(text: &'a str) -> Self {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        LineIndex { text, starts }
    }

    fn at(&self, lc: LineColumn) -> usize {
        let Some(&start) = self.starts.get(lc.line.saturating_sub(1)) else {
            return self.text.len();
        };
        self.text[start..]
            .char_indices()
            .nth(lc.column)
            .map_or(self.text.len(), |(i, _)| start + i)
    }

    fn range(&self, span: proc_macro2::Span) -> Range<usize> {
        self.at(span.start())..self.at(span.end())
    }
}

fn rust_units(items: &[syn::Item], lines: &LineIndex<'_>) -> Vec<Unit> {
    items
        .iter()
        .map(|item| {
            let range = lines.range(item.span());
            let (kind, key, members) = match item {
                syn::Item::Use(_) | syn::Item::ExternCrate(_) => {
                    (Kind::Import, String::new(), None)
                }
                syn::Item::Fn(f) => (Kind::Def, f.sig.ident.to_string(), None),
                syn::Item::Struct(s) => (Kind::Def, s.ident.to_string(), None),
                syn::Item::Enum(e) => (Kind::Def, e.ident.to_string(), None),
                syn::Item::Trait(t) => (Kind::Def, t.ident.to_string(), None),
                syn::Item::Const(c) => (Kind::Def, c.ident.to_string(), None),
                syn::Item::Static(s) => (Kind::Def, s.ident.to_string(), None),
                syn::Item::Type(t) => (Kind::Def, t.ident.to_string(), None),
                syn::Item::Macro(m) if m.ident.is_some() => (
                    Kind::Def,
                    m.ident
                        .as_ref()
                        .map(ToString::to_string)
                        .unwrap_or_default(),
                    None,
                ),
                syn::Item::Mod(m) => {
                    let members = m.content.as_ref().map(|(brace, inner)| {
                        let members = rust_units(inner, lines);
                        let open = lines.at(brace.span.open().end());
                        let end = members.last().map_or(open, |u| u.range.end);
                        (members, end)
                    });
                    (Kind::Def, format!("mod {}", m.ident), members)
                }
                syn::Item::Impl(i) => {
                    let ty = quote_type(&i.self_ty);
                    let key = match &i.trait_ {
                        Some((_, path, _)) => format!(
                            "impl {} for {ty}",
                            path.segments
                                .last()
                                .map(|s| s.ident.to_string())
                                .unwrap_or_default()
                        ),
                        None => format!("impl {ty}"),
                    };
                    let members: Vec<Unit> = i
                        .items
                        .iter()
                        .map(|ii| {
                            let (kind, key) = match ii {
                                syn::ImplItem::Fn(f) => (Kind::Def, f.sig.ident.to_string()),
                                syn::ImplItem::Const(c) => (Kind::Def, c.ident.to_string()),
                                syn::ImplItem::Type(t) => (Kind::Def, t.ident.to_string()),
                                _ => (Kind::Other, String::new()),
                            };
                            Unit {
                                kind,
                                key,
                                range: lines.range(ii.span()),
                                members: None,
                            }
                        })
                        .collect();
                    let open = lines.at(i.brace_token.span.open().end());
                    let end = members.last().map_or(open, |u| u.range.end);
                    (Kind::Def, key, Some((members, end)))
                }
                _ => (Kind::Other, String::new(), None),
            };
            Unit {
                kind,
                key,
                range,
                members,
            }
        })
        .collect()
}

fn quote_type(ty: &syn::Type) -> String {
    match ty {
        syn::Type::Path(p) => p
            .path
            .segments
            .last()
            .map(|s| s.ident.to_string())
            .unwrap_or_default(),
        _ => "_".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_python_function_written_alone_replaces_its_own_and_keeps_the_rest() {
        // Qwen2.5-Coder 1.5B on py-median-empty: stats.py written anew with median alone, and an import.
        let old = "\"\"\"Small statistics helpers.\"\"\"\n\n\ndef mean(values):\n    return sum(values) / len(values)\n\n\ndef median(values):\n    ordered = sorted(values)\n    return ordered[len(ordered) // 2]\n";
        let new = "from typing import List\n\n\ndef median(values: List[int]):\n    if not values:\n        raise ValueError('median of an empty sequence')\n    ordered = sorted(values)\n    return ordered[len(ordered) // 2]\n";
        let m = merge("stats.py", old, new).unwrap();
        assert_eq!(
            m.text,
            "\"\"\"Small statistics helpers.\"\"\"\n\nfrom typing import List\n\n\ndef mean(values):\n    return sum(values) / len(values)\n\n\ndef median(values: List[int]):\n    if not values:\n        raise ValueError('median of an empty sequence')\n    ordered = sorted(values)\n    return ordered[len(ordered) // 2]\n"
        );
        assert_eq!(
            (m.replaced, m.added, m.kept),
            (vec!["median".to_string()], vec![], vec!["mean".to_string()])
        );
    }

    #[test]
    fn an_import_of_names_the_file_binds_already_is_not_added_again() {
        // The 0.5B's test for js-escape-all: a `require` of what the test file destructures already.
        let old = "\"use strict\";\nconst test = require(\"node:test\");\nconst { escapeHtml, commentItem } = require(\"../html.js\");\n\ntest(\"one\", () => {});\n";
        let new = "const escapeHtml = require(\"../html.js\");\nconst assert = require(\"node:assert\");\n\nfunction escapesAll() {\n  assert.strictEqual(escapeHtml(\"<<\"), \"&lt;&lt;\");\n}\n";
        let m = merge("test/html.test.js", old, new).unwrap();
        assert_eq!(
            m.text,
            "\"use strict\";\nconst test = require(\"node:test\");\nconst { escapeHtml, commentItem } = require(\"../html.js\");\nconst assert = require(\"node:assert\");\n\ntest(\"one\", () => {});\n\nfunction escapesAll() {\n  assert.strictEqual(escapeHtml(\"<<\"), \"&lt;&lt;\");\n}\n"
        );
        // Python: `from stats import median` where the file has `from stats import mean, median`.
        let old =
            "from stats import mean, median\n\n\ndef test_mean():\n    assert mean([1]) == 1\n";
        let new = "from stats import median\n\n\ndef test_median_empty():\n    assert median([]) is None\n";
        let m = merge("tests/test_stats.py", old, new).unwrap();
        assert!(
            m.text
                .starts_with("from stats import mean, median\n\n\ndef test_mean"),
            "{}",
            m.text
        );
    }

    #[test]
    fn a_test_module_written_with_only_the_new_test_gets_it_added() {
        let old = "import pytest\n\nfrom stats import mean\n\n\ndef test_mean():\n    assert mean([1, 2]) == 1.5\n";
        let new = "import pytest\nfrom stats import median\n\n\ndef test_median_empty():\n    with pytest.raises(ValueError):\n        median([])\n";
        let m = merge("tests/test_stats.py", old, new).unwrap();
        assert_eq!(
            m.text,
            "import pytest\n\nfrom stats import mean\nfrom stats import median\n\n\ndef test_mean():\n    assert mean([1, 2]) == 1.5\n\n\ndef test_median_empty():\n    with pytest.raises(ValueError):\n        median([])\n"
        );
        assert_eq!(m.added, ["test_median_empty"]);
        assert_eq!(m.kept, ["test_mean"]);
        // A class written with one new method keeps the others.
        let old = "class TestStats:\n    def test_a(self):\n        assert True\n";
        let new = "class TestStats:\n    def test_b(self):\n        assert 1\n";
        let m = merge("tests/test_s.py", old, new).unwrap();
        assert_eq!(
            m.text,
            "class TestStats:\n    def test_a(self):\n        assert True\n\n    def test_b(self):\n        assert 1\n"
        );
        assert_eq!(m.added, ["TestStats.test_b"]);
    }

    #[test]
    fn held_definitions_stay_as_they_are_and_the_rest_goes_in() {
        let old = "def test_a():\n    assert f(1) == 1\n\n\nclass TestB:\n    def test_b(self):\n        assert f(2) == 2\n";
        let hold = |n: &str| n == "test_a" || n == "TestB" || n == "TestB.test_b";
        // A rewritten held test beside a new one: the new one goes in, the held one is listed.
        let new = "def test_a():\n    assert True\n\n\ndef test_c():\n    assert f(3) == 3\n";
        let m = merge_holding("t.py", old, new, &hold).unwrap();
        assert_eq!(
            (m.added.clone(), m.held.clone()),
            (vec!["test_c".to_string()], vec!["test_a".to_string()])
        );
        assert!(
            m.text.starts_with(old) && m.text.contains("def test_c():"),
            "{}",
            m.text
        );
        // A held class written with all its members takes its new member, its held one kept.
        let new = "class TestB:\n    def test_b(self):\n        pass\n\n    def test_d(self):\n        assert f(4) == 4\n";
        let m = merge_holding("t.py", old, new, &hold).unwrap();
        assert_eq!(m.added, ["TestB.test_d"]);
        assert_eq!(m.held, ["TestB.test_b"]);
        assert!(
            m.text.contains("assert f(2) == 2") && !m.text.contains("pass"),
            "{}",
            m.text
        );
        // Nothing but a held rewrite: the file's own text, the rewrite listed.
        let m = merge_holding("t.py", old, "def test_a():\n    assert True\n", &hold).unwrap();
        assert_eq!((m.text.as_str(), m.held.len()), (old, 1));
        // Without a hold it is the plain merge.
        let m = merge("t.py", old, "def test_a():\n    assert True\n").unwrap();
        assert_eq!(m.replaced, ["test_a"]);
    }

    #[test]
    fn statements_the_file_has_already_merge_as_nothing() {
        // The 0.5B's fix of scores.js, written with the file's `module.exports` line.
        let old = "\"use strict\";\n\nfunction sortedNumbers(v) {\n  return [...v].sort();\n}\n\nfunction topK(v, k) {\n  return sortedNumbers(v).slice(-k);\n}\n\nmodule.exports = { sortedNumbers, topK };\n";
        let new = "function sortedNumbers(v) {\n  return [...v].sort((a, b) => a - b);\n}\n\nmodule.exports = {  sortedNumbers, topK };\n";
        let m = merge("scores.js", old, new).unwrap();
        assert_eq!(m.replaced, ["sortedNumbers"]);
        assert_eq!(
            m.text,
            old.replace("[...v].sort();", "[...v].sort((a, b) => a - b);")
        );
        // A statement the file does not have is still no part of it.
        assert_eq!(
            merge(
                "scores.js",
                old,
                "function topK(v, k) {\n  return v;\n}\n\ntopK([1], 1);\n"
            ),
            None
        );
    }

    #[test]
    fn a_definition_is_renamed_to_a_free_name_in_each_language() {
        let none = |_: &str| false;
        let py = "def test_a():\n    assert test_a_helper() == 1\n";
        let (text, name) = renamed("t.py", py, "test_a", &|n| n == "test_a_2").unwrap();
        assert_eq!(
            (text.as_str(), name.as_str()),
            (
                "def test_a_3():\n    assert test_a_helper() == 1\n",
                "test_a_3"
            )
        );
        let class = "class TestB:\n    def test_b(self):\n        pass\n";
        let (text, name) = renamed("t.py", class, "TestB.test_b", &none).unwrap();
        assert_eq!(name, "TestB.test_b_2");
        assert!(text.contains("def test_b_2(self):"), "{text}");
        let js = "test(\"topK takes the largest\", () => {\n  assert.ok(true);\n});\n";
        let (text, name) =
            renamed("a.test.js", js, "test \"topK takes the largest\"", &none).unwrap();
        assert_eq!(name, "test \"topK takes the largest (2)\"");
        assert!(
            text.starts_with("test(\"topK takes the largest (2)\""),
            "{text}"
        );
        let rs = "#[cfg(test)]\nmod tests {\n    #[test]\n    fn abs_of_three() {\n        assert_eq!(1, 1);\n    }\n}\n";
        let (text, name) = renamed("src/lib.rs", rs, "mod tests.abs_of_three", &none).unwrap();
        assert_eq!(name, "mod tests.abs_of_three_2");
        assert!(text.contains("fn abs_of_three_2()"), "{text}");
        let go = "package p\n\nfunc TestX(t *testing.T) {\n}\n";
        assert!(renamed("x_test.go", go, "TestX", &none)
            .unwrap()
            .0
            .contains("func TestX_2(t"));
        assert_eq!(renamed("t.py", py, "test_zz", &none), None);
    }

    #[test]
    fn new_rust_imports_go_after_the_files_inner_doc_comments() {
        // The 0.5B's fix of rust-newest-version brought `use` lines to a file that had none: put at the
        // top, before `//!`, the file did not parse, on five turns.
        let old = "//! Versions.\n\n/// Parses.\npub fn parse(v: &str) -> u32 {\n    0\n}\n\npub fn newest() -> u32 {\n    1\n}\n";
        let new = "use std::cmp::Ordering;\n\npub fn newest() -> u32 {\n    2\n}\n";
        let m = merge("src/lib.rs", old, new).unwrap();
        assert!(
            m.text
                .starts_with("//! Versions.\n\nuse std::cmp::Ordering;\n\n/// Parses."),
            "{}",
            m.text
        );
        assert!(syn::parse_file(&m.text).is_ok(), "{}", m.text);
    }

    #[test]
    fn content_that_is_not_definitions_is_not_merged() {
        let go = "package words\n\nfunc Count(s string) int { return 0 }\n\nfunc Format() string { return \"\" }\n";
        // The program's expected output written over its source.
        assert_eq!(merge("words.go", go, "apple: 1\nfig: 2\n"), None);
        // A statement at the top besides a definition.
        let py = "def a():\n    return 1\n\n\ndef b():\n    return 2\n";
        assert_eq!(
            merge("m.py", py, "def a():\n    return 3\n\nprint(a())\n"),
            None
        );
        // Unparseable content, or a language vouch does not parse.
        assert_eq!(merge("m.py", py, "def a(:\n"), None);
        assert_eq!(merge("notes.txt", "a\nb\n", "a\n"), None);
    }

    #[test]
    fn go_rust_and_js_definitions_merge_by_name() {
        let go = "package words\n\nimport \"strings\"\n\nfunc Count(s string) int { return len(strings.Fields(s)) }\n\nfunc Format() string { return \"\" }\n";
        let m = merge(
            "words.go",
            go,
            "package words\n\nfunc Count(s string) int { return 1 }\n",
        )
        .unwrap();
        assert_eq!(
            m.text,
            go.replace("return len(strings.Fields(s))", "return 1")
        );
        let rs = "pub fn mean(v: &[u32]) -> u32 {\n    v.iter().sum::<u32>() / v.len() as u32\n}\n\npub fn max(v: &[u32]) -> u32 {\n    0\n}\n\n#[cfg(test)]\nmod tests {\n    use super::*;\n\n    #[test]\n    fn mean_of_two() {\n        assert_eq!(mean(&[1, 3]), 2);\n    }\n}\n";
        let new = "#[cfg(test)]\nmod tests {\n    use super::*;\n\n    #[test]\n    fn mean_does_not_overflow() {\n        assert_eq!(mean(&[u32::MAX, u32::MAX]), u32::MAX);\n    }\n}\n";
        let m = merge("src/lib.rs", rs, new).unwrap();
        assert_eq!(m.added, ["mod tests.mean_does_not_overflow"]);
        assert!(m.text.contains("fn mean_of_two()"), "{}", m.text);
        assert!(
            m.text
                .contains("    }\n\n    #[test]\n    fn mean_does_not_overflow() {"),
            "{}",
            m.text
        );
        assert!(syn::parse_file(&m.text).is_ok(), "{}", m.text);
        let js = "const assert = require('assert');\nconst { test } = require('node:test');\nconst { sortScores } = require('../scores');\n\ntest('sorts', () => {\n  assert.deepStrictEqual(sortScores([2, 1]), [1, 2]);\n});\n";
        let new = "const assert = require('assert');\nconst { test } = require('node:test');\nconst { sortScores } = require('../scores');\n\ntest('sorts numbers', () => {\n  assert.deepStrictEqual(sortScores([10, 9]), [9, 10]);\n});\n";
        let m = merge("test/scores.test.js", js, new).unwrap();
        assert_eq!(m.added, ["test 'sorts numbers'"]);
        assert_eq!(m.kept, ["test 'sorts'"]);
        assert!(m.text.starts_with(js), "{}", m.text);
    }
}
