//! Which lines of a Rust file are test code, found with a real parser (`syn`), not with regexes:
//! attributes, nested modules, `cfg` predicates, macros, strings and comments that merely look like tests are
//! all handled by the grammar.

use std::ops::RangeInclusive;

use proc_macro2::{Delimiter, Span, TokenStream, TokenTree};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::visit::{self, Visit};
use syn::{Attribute, Item, Meta, Token};

use super::TestRegions;

/// Rust, with `syn`: items carrying a `cfg` that holds only in test builds (`cfg(test)`, `cfg(all(test, ..))`,
/// not `cfg(any(test, ..))` nor `cfg(not(test))`), anywhere in the file (modules, `mod tests;` declarations,
/// impl and trait items, fields, variants, match arms, `let` statements), functions with a test attribute
/// (`test`, `tokio::test`, `async_std::test`, `rstest`, `test_case`, `quickcheck`, `proptest`,
/// `wasm_bindgen_test`, `bench`, any attribute path whose last segment is `test`), `proptest! { .. }` and
/// `quickcheck! { .. }` invocations at item level, and the whole file under an inner `#![cfg(test)]`. A region
/// starts at the item's first attribute line (doc comments are attributes) and ends at its last line.
pub struct RustRegions;

impl TestRegions for RustRegions {
    fn test_regions(&self, source: &str) -> Option<Vec<RangeInclusive<usize>>> {
        let text = normalize_line_ends(source);
        let file = syn::parse_file(&text).ok()?;
        if cfg_only_in_tests(&file.attrs) {
            let last = source.split_inclusive('\n').count();
            return Some(if last == 0 {
                Vec::new()
            } else {
                vec![1..=last]
            });
        }
        let mut finder = RegionFinder::default();
        finder.visit_file(&file);
        Some(merge(finder.regions))
    }

    fn code_lines(&self, source: &str) -> Option<Vec<bool>> {
        let mut code = vec![false; source.split_inclusive('\n').count()];
        let (text, shebang) = lexable(source);
        if shebang {
            if let Some(first) = code.first_mut() {
                *first = true;
            }
        }
        let tokens: TokenStream = text.parse().ok()?;
        mark_code(tokens, &mut code);
        Some(code)
    }
}

/// The source as the lexer takes it, with the same line numbers: line ends normalized, a byte-order mark
/// dropped, a shebang line emptied (it is not Rust tokens; its line break stays). True when it had a shebang.
fn lexable(source: &str) -> (String, bool) {
    let mut text = normalize_line_ends(source).into_owned();
    if let Some(rest) = text.strip_prefix('\u{feff}') {
        text = rest.to_owned();
    }
    if text.starts_with("#!") && !text[2..].trim_start().starts_with('[') {
        text = text
            .find('\n')
            .map_or_else(String::new, |idx| text[idx..].to_owned());
        return (text, true);
    }
    (text, false)
}

/// One token of a Rust source (a delimiter of a group counts as a token of its own).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RustToken {
    /// The 1-based line it starts on.
    pub line: usize,
    pub text: String,
    /// Part of a `use` declaration.
    pub import: bool,
}

/// The tokens of a Rust source in order, comments left out (doc comments are attributes and stay), each
/// with its line and whether it belongs to a `use` declaration: what the gate compares between base and head
/// outside test functions. None if the source does not lex.
pub fn rust_tokens(source: &str) -> Option<Vec<RustToken>> {
    let (text, _) = lexable(source);
    let tokens: TokenStream = text.parse().ok()?;
    let mut out = Vec::new();
    push_tokens(tokens, false, &mut out);
    Some(out)
}

fn push_tokens(tokens: TokenStream, import: bool, out: &mut Vec<RustToken>) {
    let mut in_use = import;
    for token in tokens {
        let line = token.span().start().line;
        match &token {
            TokenTree::Group(group) => {
                let (open, close) = match group.delimiter() {
                    Delimiter::Parenthesis => ("(", ")"),
                    Delimiter::Brace => ("{", "}"),
                    Delimiter::Bracket => ("[", "]"),
                    Delimiter::None => ("", ""),
                };
                out.push(RustToken {
                    line,
                    text: open.into(),
                    import: in_use,
                });
                push_tokens(group.stream(), in_use, out);
                out.push(RustToken {
                    line: group.span_close().start().line,
                    text: close.into(),
                    import: in_use,
                });
            }
            TokenTree::Ident(ident) => {
                if !import && ident == "use" {
                    in_use = true;
                }
                out.push(RustToken {
                    line,
                    text: ident.to_string(),
                    import: in_use,
                });
            }
            TokenTree::Punct(punct) => {
                out.push(RustToken {
                    line,
                    text: punct.as_char().to_string(),
                    import: in_use,
                });
                if !import && punct.as_char() == ';' {
                    in_use = false;
                }
            }
            TokenTree::Literal(literal) => out.push(RustToken {
                line,
                text: literal.to_string(),
                import: in_use,
            }),
        }
    }
}

/// `\r\n` becomes `\n` (line numbers stay the same) so that the lexer never sees a carriage return, which it
/// rejects in some places (doc comments).
fn normalize_line_ends(source: &str) -> std::borrow::Cow<'_, str> {
    if source.contains('\r') {
        std::borrow::Cow::Owned(source.replace("\r\n", "\n"))
    } else {
        std::borrow::Cow::Borrowed(source)
    }
}

fn mark_code(tokens: TokenStream, code: &mut [bool]) {
    for token in tokens {
        match token {
            TokenTree::Group(group) => {
                mark_span(group.span_open(), code);
                mark_span(group.span_close(), code);
                mark_code(group.stream(), code);
            }
            other => mark_span(other.span(), code),
        }
    }
}

fn mark_span(span: Span, code: &mut [bool]) {
    let (start, end) = (span.start().line, span.end().line);
    for line in start.max(1)..=end {
        if let Some(slot) = code.get_mut(line - 1) {
            *slot = true;
        }
    }
}

/// Sorts the regions and merges the overlapping or adjacent ones.
fn merge(mut regions: Vec<RangeInclusive<usize>>) -> Vec<RangeInclusive<usize>> {
    regions.sort_by_key(|region| (*region.start(), *region.end()));
    let mut merged: Vec<RangeInclusive<usize>> = Vec::with_capacity(regions.len());
    for region in regions {
        match merged.last_mut() {
            Some(last) if *region.start() <= last.end().saturating_add(1) => {
                if region.end() > last.end() {
                    *last = *last.start()..=*region.end();
                }
            }
            _ => merged.push(region),
        }
    }
    merged
}

/// The lines of `node`, from its first attribute line (doc comments are attributes) to its last line.
fn lines_of(attrs: &[Attribute], node: &dyn Spanned) -> Option<RangeInclusive<usize>> {
    let span = node.span();
    let start = attrs
        .iter()
        .map(|attr| attr.span().start().line)
        .chain(std::iter::once(span.start().line))
        .min()
        .unwrap_or(0)
        .max(1);
    let end = span.end().line;
    (end >= start).then_some(start..=end)
}

#[derive(Default)]
struct RegionFinder {
    regions: Vec<RangeInclusive<usize>>,
}

impl RegionFinder {
    /// Records `node` (with its attributes) as a test region.
    fn mark(&mut self, attrs: &[Attribute], node: &dyn Spanned) {
        if let Some(lines) = lines_of(attrs, node) {
            self.regions.push(lines);
        }
    }

    /// Records `node` as a test region when its attributes make it test-only; true if so.
    fn mark_if_test(&mut self, attrs: &[Attribute], node: &dyn Spanned) -> bool {
        let test = cfg_only_in_tests(attrs);
        if test {
            self.mark(attrs, node);
        }
        test
    }
}

impl<'ast> Visit<'ast> for RegionFinder {
    fn visit_item(&mut self, item: &'ast Item) {
        let attrs = item_attrs(item);
        let test = cfg_only_in_tests(attrs)
            || matches!(item, Item::Fn(function) if has_test_attribute(&function.attrs))
            || matches!(item, Item::Macro(mac) if is_test_macro(&mac.mac.path));
        if test {
            self.mark(attrs, item);
        } else {
            visit::visit_item(self, item);
        }
    }

    fn visit_impl_item(&mut self, item: &'ast syn::ImplItem) {
        let attrs = match item {
            syn::ImplItem::Const(x) => &x.attrs[..],
            syn::ImplItem::Fn(x) => &x.attrs,
            syn::ImplItem::Type(x) => &x.attrs,
            syn::ImplItem::Macro(x) => &x.attrs,
            _ => &[],
        };
        if !self.mark_if_test(attrs, item) {
            visit::visit_impl_item(self, item);
        }
    }

    fn visit_trait_item(&mut self, item: &'ast syn::TraitItem) {
        let attrs = match item {
            syn::TraitItem::Const(x) => &x.attrs[..],
            syn::TraitItem::Fn(x) => &x.attrs,
            syn::TraitItem::Type(x) => &x.attrs,
            syn::TraitItem::Macro(x) => &x.attrs,
            _ => &[],
        };
        if !self.mark_if_test(attrs, item) {
            visit::visit_trait_item(self, item);
        }
    }

    fn visit_foreign_item(&mut self, item: &'ast syn::ForeignItem) {
        let attrs = match item {
            syn::ForeignItem::Fn(x) => &x.attrs[..],
            syn::ForeignItem::Static(x) => &x.attrs,
            syn::ForeignItem::Type(x) => &x.attrs,
            syn::ForeignItem::Macro(x) => &x.attrs,
            _ => &[],
        };
        if !self.mark_if_test(attrs, item) {
            visit::visit_foreign_item(self, item);
        }
    }

    fn visit_field(&mut self, field: &'ast syn::Field) {
        if !self.mark_if_test(&field.attrs, field) {
            visit::visit_field(self, field);
        }
    }

    fn visit_variant(&mut self, variant: &'ast syn::Variant) {
        if !self.mark_if_test(&variant.attrs, variant) {
            visit::visit_variant(self, variant);
        }
    }

    fn visit_arm(&mut self, arm: &'ast syn::Arm) {
        if !self.mark_if_test(&arm.attrs, arm) {
            visit::visit_arm(self, arm);
        }
    }

    fn visit_local(&mut self, local: &'ast syn::Local) {
        if !self.mark_if_test(&local.attrs, local) {
            visit::visit_local(self, local);
        }
    }

    fn visit_stmt_macro(&mut self, mac: &'ast syn::StmtMacro) {
        if !self.mark_if_test(&mac.attrs, mac) {
            visit::visit_stmt_macro(self, mac);
        }
    }
}

fn item_attrs(item: &Item) -> &[Attribute] {
    match item {
        Item::Const(x) => &x.attrs,
        Item::Enum(x) => &x.attrs,
        Item::ExternCrate(x) => &x.attrs,
        Item::Fn(x) => &x.attrs,
        Item::ForeignMod(x) => &x.attrs,
        Item::Impl(x) => &x.attrs,
        Item::Macro(x) => &x.attrs,
        Item::Mod(x) => &x.attrs,
        Item::Static(x) => &x.attrs,
        Item::Struct(x) => &x.attrs,
        Item::Trait(x) => &x.attrs,
        Item::TraitAlias(x) => &x.attrs,
        Item::Type(x) => &x.attrs,
        Item::Union(x) => &x.attrs,
        Item::Use(x) => &x.attrs,
        _ => &[],
    }
}

/// Attribute names (last path segment) that make a function a test.
const TEST_ATTRIBUTES: &[&str] = &[
    "test",
    "bench",
    "rstest",
    "test_case",
    "test_matrix",
    "quickcheck",
    "proptest",
    "wasm_bindgen_test",
];

fn has_test_attribute(attrs: &[Attribute]) -> bool {
    attrs.iter().any(|attr| {
        attr.path()
            .segments
            .last()
            .is_some_and(|segment| TEST_ATTRIBUTES.iter().any(|name| segment.ident == name))
    })
}

/// Item-level macros that expand to test functions only.
fn is_test_macro(path: &syn::Path) -> bool {
    path.segments
        .last()
        .is_some_and(|segment| segment.ident == "proptest" || segment.ident == "quickcheck")
}

/// Whether a `cfg` among `attrs` compiles the item in test builds only: the predicate is false whatever the
/// other options are when `test` is off, and not always false when `test` is on (that is dead code, not tests).
fn cfg_only_in_tests(attrs: &[Attribute]) -> bool {
    attrs
        .iter()
        .filter(|attr| attr.path().is_ident("cfg"))
        .filter_map(|attr| attr.parse_args::<Meta>().ok())
        .any(|predicate| {
            evaluate_cfg(&predicate, false) == Some(false)
                && evaluate_cfg(&predicate, true) != Some(false)
        })
}

/// Evaluates a cfg predicate with `test` set and every other option unknown (None).
fn evaluate_cfg(predicate: &Meta, test: bool) -> Option<bool> {
    match predicate {
        Meta::Path(path) if path.is_ident("test") => Some(test),
        Meta::Path(_) | Meta::NameValue(_) => None,
        Meta::List(list) => {
            let args = list
                .parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated)
                .ok()?;
            let values: Vec<Option<bool>> =
                args.iter().map(|arg| evaluate_cfg(arg, test)).collect();
            if list.path.is_ident("all") {
                if values.contains(&Some(false)) {
                    Some(false)
                } else if values.iter().all(|value| *value == Some(true)) {
                    Some(true)
                } else {
                    None
                }
            } else if list.path.is_ident("any") {
                if values.contains(&Some(true)) {
                    Some(true)
                } else if values.iter().all(|value| *value == Some(false)) {
                    Some(false)
                } else {
                    None
                }
            } else if list.path.is_ident("not") && values.len() == 1 {
                values.first().copied().flatten().map(|value| !value)
            } else {
                None
            }
        }
    }
}

/// A test function of a Rust file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RustTestFn {
    pub name: String,
    /// The inline modules around it, outermost first (`["tests"]`); empty at the top of the file.
    pub module: Vec<String>,
    /// 1-based inclusive lines, from its first attribute (doc comments are attributes) to its closing brace.
    pub lines: RangeInclusive<usize>,
}

/// The test functions of a Rust source, in source order: functions with a test attribute (the attributes
/// [`RustRegions`] knows) in the file and its inline modules, and functions written out inside item-level
/// macro invocations (`proptest! { #[test] fn any(x in 0..3u8) { .. } }`; every function of
/// `quickcheck! { .. }`, which takes no attributes). Tests that a macro builds from its own definition
/// (`fn $name` in a `macro_rules!`) are not written out anywhere and are not found. None if the source does
/// not parse.
///
/// The gate finds test functions here, once, with the same grammar and the same attribute list that decide
/// which lines are test code: counting braces line by line is fooled by braces in strings, char literals,
/// comments and raw strings, and by an attribute and its function on one line.
pub fn rust_test_functions(source: &str) -> Option<Vec<RustTestFn>> {
    let text = normalize_line_ends(source);
    let file = syn::parse_file(&text).ok()?;
    let mut found = Vec::new();
    test_fns_in_items(&file.items, &mut Vec::new(), &mut found);
    Some(found)
}

fn test_fns_in_items(items: &[Item], module: &mut Vec<String>, out: &mut Vec<RustTestFn>) {
    for item in items {
        match item {
            Item::Fn(function) if has_test_attribute(&function.attrs) => {
                if let Some(lines) = lines_of(&function.attrs, item) {
                    out.push(RustTestFn {
                        name: function.sig.ident.to_string(),
                        module: module.clone(),
                        lines,
                    });
                }
            }
            Item::Mod(inline) => {
                if let Some((_, items)) = &inline.content {
                    module.push(inline.ident.to_string());
                    test_fns_in_items(items, module, out);
                    module.pop();
                }
            }
            Item::Macro(mac) => {
                let every_fn = mac
                    .mac
                    .path
                    .segments
                    .last()
                    .is_some_and(|segment| segment.ident == "quickcheck");
                test_fns_in_tokens(mac.mac.tokens.clone(), every_fn, module, out);
            }
            _ => {}
        }
    }
}

/// Functions written out in a macro invocation's tokens: `fn NAME`, from the attributes before it to the first
/// brace group after the name (its body). Such a function is a test when one of those attributes is a test
/// attribute, or when `every_fn`. Groups other than attributes and bodies are searched too.
fn test_fns_in_tokens(
    tokens: TokenStream,
    every_fn: bool,
    module: &[String],
    out: &mut Vec<RustTestFn>,
) {
    let tokens: Vec<TokenTree> = tokens.into_iter().collect();
    let mut first_attr: Option<usize> = None;
    let mut test_attr = false;
    let mut i = 0;
    while i < tokens.len() {
        match &tokens[i] {
            TokenTree::Punct(punct) if punct.as_char() == '#' => {
                if let Some(TokenTree::Group(attr)) = tokens.get(i + 1) {
                    if attr.delimiter() == Delimiter::Bracket {
                        first_attr.get_or_insert(punct.span().start().line);
                        test_attr |= names_a_test_attribute(attr.stream());
                        i += 2;
                        continue;
                    }
                }
            }
            TokenTree::Ident(ident) if ident == "fn" => {
                let body = tokens
                    .iter()
                    .enumerate()
                    .skip(i + 2)
                    .find(|(_, t)| match t {
                        TokenTree::Group(group) => group.delimiter() == Delimiter::Brace,
                        TokenTree::Punct(punct) => punct.as_char() == ';',
                        _ => false,
                    })
                    .and_then(|(at, t)| match t {
                        TokenTree::Group(group) => Some((at, group.span_close().end().line)),
                        _ => None,
                    });
                if let (Some(TokenTree::Ident(name)), Some((at, end))) = (tokens.get(i + 1), body) {
                    let start = first_attr.unwrap_or(ident.span().start().line).max(1);
                    if (test_attr || every_fn) && end >= start {
                        out.push(RustTestFn {
                            name: name.to_string(),
                            module: module.to_vec(),
                            lines: start..=end,
                        });
                    }
                    i = at;
                }
            }
            // `pub`, `async`, `unsafe`, `extern "C"`, `pub(crate)`: the item goes on.
            TokenTree::Ident(_) | TokenTree::Literal(_) => {
                i += 1;
                continue;
            }
            TokenTree::Group(group) if group.delimiter() == Delimiter::Parenthesis => {
                test_fns_in_tokens(group.stream(), every_fn, module, out);
                i += 1;
                continue;
            }
            TokenTree::Group(group) => test_fns_in_tokens(group.stream(), every_fn, module, out),
            TokenTree::Punct(_) => {}
        }
        first_attr = None;
        test_attr = false;
        i += 1;
    }
}

/// Whether an attribute's tokens (inside `#[..]`) name a test attribute by the last segment of their path.
fn names_a_test_attribute(attr: TokenStream) -> bool {
    attr.into_iter()
        .take_while(|t| match t {
            TokenTree::Ident(_) => true,
            TokenTree::Punct(punct) => punct.as_char() == ':',
            _ => false,
        })
        .filter_map(|t| match t {
            TokenTree::Ident(ident) => Some(ident),
            _ => None,
        })
        .last()
        .is_some_and(|ident| TEST_ATTRIBUTES.iter().any(|name| ident == name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn regions(source: &str) -> Vec<RangeInclusive<usize>> {
        RustRegions
            .test_regions(source)
            .expect("source should parse")
    }

    #[test]
    fn cfg_any_test_is_production_cfg_all_test_is_test_and_cfg_not_test_is_production() {
        let source = "\
#[cfg(any(test, feature = \"x\"))]
pub fn a() {}
#[cfg(all(test, unix))]
pub fn b() {}
#[cfg(not(test))]
pub fn c() {}
#[cfg(not(not(test)))]
pub fn d() {}
#[cfg(all(test, any()))]
pub fn e() {}
#[cfg(all(unix, any(test, all(test, windows))))]
pub fn g() {}
";
        assert_eq!(regions(source), vec![3..=4, 7..=8, 11..=12]);
    }

    #[test]
    fn test_attributes_of_common_frameworks_mark_test_functions() {
        let attributes = [
            "test",
            "tokio::test",
            "tokio::test(flavor = \"multi_thread\")",
            "async_std::test",
            "rstest",
            "test_case(1, 2)",
            "quickcheck",
            "proptest",
            "wasm_bindgen_test",
            "test_log::test",
        ];
        for attribute in attributes {
            let source = format!("fn prod() {{}}\n\n#[{attribute}]\nasync fn t() {{}}\n");
            assert_eq!(regions(&source), vec![3..=4], "#[{attribute}]");
        }
        assert_eq!(
            regions("#[inline]\nfn f() {}\n#[should_panic]\nfn g() {}\n"),
            vec![]
        );
    }

    #[test]
    fn a_region_starts_at_the_first_doc_comment_or_attribute_line() {
        let source = "\
fn prod() {}

/// Checks things.
#[test]
#[ignore]
fn t() {
}
";
        assert_eq!(regions(source), vec![3..=7]);
    }

    #[test]
    fn nested_modules_impl_items_fields_and_whole_files_are_searched() {
        let source = "\
mod outer {
    mod inner {
        #[cfg(test)]
        mod tests {}
    }
}
struct S {
    a: u8,
    #[cfg(test)]
    b: u8,
}
impl S {
    #[cfg(test)]
    fn helper() {}
}
";
        assert_eq!(regions(source), vec![3..=4, 9..=10, 13..=14]);
        assert_eq!(regions("#![cfg(test)]\nfn helper() {}\n"), vec![1..=2]);
    }

    fn test_fns(source: &str) -> Vec<(String, Vec<String>, RangeInclusive<usize>)> {
        rust_test_functions(source)
            .expect("source should parse")
            .into_iter()
            .map(|f| (f.name, f.module, f.lines))
            .collect()
    }

    fn found(
        name: &str,
        module: &[&str],
        lines: RangeInclusive<usize>,
    ) -> (String, Vec<String>, RangeInclusive<usize>) {
        (
            name.to_string(),
            module.iter().map(|m| m.to_string()).collect(),
            lines,
        )
    }

    #[test]
    fn test_functions_come_with_their_module_path_and_lines_from_the_first_attribute_to_the_brace()
    {
        let source = "\
pub fn prod() -> &'static str { \"}\" }

#[test]
fn top() { let _ = '{'; }

#[cfg(test)]
mod tests {
    /// Docs.
    #[tokio::test]
    async fn inner() {
        assert!(true);
    }

    fn helper() {}

    mod deeper {
        #[rstest]
        #[case(1)]
        fn cased(#[case] x: u8) {
            let _ = x;
        }
    }
    #[test] fn one_line() {}
}
";
        assert_eq!(
            test_fns(source),
            vec![
                found("top", &[], 3..=4),
                found("inner", &["tests"], 8..=12),
                found("cased", &["tests", "deeper"], 17..=21),
                found("one_line", &["tests"], 23..=23),
            ]
        );
    }

    #[test]
    fn test_functions_written_out_in_proptest_and_quickcheck_invocations_are_found() {
        let source = "\
proptest! {
    #![proptest_config(ProptestConfig::with_cases(8))]
    #[test]
    fn any(x in 0..3u8) {
        prop_assert!(x < 3);
    }
}

quickcheck! {
    fn reverses(xs: Vec<u8>) -> bool {
        xs == xs
    }
}

macro_rules! cases {
    ($($name:ident),*) => { $(#[test] fn $name() {})* };
}
cases!(a, b);
";
        assert_eq!(
            test_fns(source),
            vec![found("any", &[], 3..=6), found("reverses", &[], 10..=12)]
        );
    }

    #[test]
    fn tests_in_comments_and_strings_are_not_found_and_unparseable_source_gives_none() {
        let source =
            "// #[test]\n// fn commented() {}\nconst S: &str = \"#[test] fn in_string() {}\";\n";
        assert_eq!(test_fns(source), vec![]);
        assert_eq!(rust_test_functions("#[test]\nfn broken( {}\n"), None);
        assert_eq!(
            rust_test_functions("#[test]\r\nfn crlf() {\r\n}\r\n").map(|fns| fns.len()),
            Some(1)
        );
    }

    #[test]
    fn tokens_carry_their_lines_and_mark_use_declarations_and_drop_comments() {
        let source = "#!/usr/bin/env run\nuse a::{b, c};\n// gone\nfn f() { let _ = 1; }\n";
        let tokens = rust_tokens(source).unwrap_or_default();
        let shown: Vec<(usize, &str, bool)> = tokens
            .iter()
            .map(|t| (t.line, t.text.as_str(), t.import))
            .collect();
        assert_eq!(
            shown,
            vec![
                (2, "use", true),
                (2, "a", true),
                (2, ":", true),
                (2, ":", true),
                (2, "{", true),
                (2, "b", true),
                (2, ",", true),
                (2, "c", true),
                (2, "}", true),
                (2, ";", true),
                (4, "fn", false),
                (4, "f", false),
                (4, "(", false),
                (4, ")", false),
                (4, "{", false),
                (4, "let", false),
                (4, "_", false),
                (4, "=", false),
                (4, "1", false),
                (4, ";", false),
                (4, "}", false),
            ]
        );
        assert_eq!(rust_tokens("fn f() {"), None);
    }
}
