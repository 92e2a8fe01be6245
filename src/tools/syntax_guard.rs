//! The syntax guard of `edit` and `write_file`: a change that would leave a source file that parsed before
//! unparseable is refused, and the file is left as it was.
//!
//! A small model replaces a function's first line by a whole function and leaves the old body behind (the
//! 1.5B coder on js-sort-numbers), or writes a function of ten lines as one with a brace missing; every
//! later turn then works on a broken file, and the test run says only that nothing compiles. Refused at once, with the line where the parse fails, the model can redo the edit while it
//! still knows what it meant. Rust is parsed with `syn` (the same parser the gate splits Rust with), Python,
//! Go, JavaScript and TypeScript with their tree-sitter grammars; other files are not checked. A file that
//! did not parse before is not checked either: the model may be repairing it step by step.

use tree_sitter::Node;

use crate::gate::syntax::Lang;

/// Where a text fails to parse.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SyntaxError {
    /// 1-based.
    pub line: usize,
    pub what: String,
}

/// The first syntax error of `text` as the file `rel`, for the languages vouch parses.
pub(crate) fn first_error(rel: &str, text: &str) -> Option<SyntaxError> {
    if rel.ends_with(".rs") {
        return syn::parse_file(text).err().map(|e| SyntaxError {
            line: e.span().start().line.max(1),
            what: e.to_string(),
        });
    }
    let lang = Lang::of(rel)?;
    let tree = crate::gate::syntax::parse(lang, text)?;
    let root = tree.root_node();
    if !root.has_error() {
        return None;
    }
    let node = first_bad(root).unwrap_or(root);
    let line = node.start_position().row + 1;
    let what = if node.is_missing() {
        format!("`{}` is missing", node.kind())
    } else {
        let shown: String = text
            .get(node.start_byte()..node.end_byte())
            .unwrap_or("")
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .chars()
            .take(40)
            .collect();
        if shown.is_empty() {
            "the code does not parse here".to_string()
        } else {
            format!("unexpected `{shown}`")
        }
    };
    Some(SyntaxError { line, what })
}

/// The first ERROR or MISSING node, in source order.
fn first_bad(root: Node<'_>) -> Option<Node<'_>> {
    let mut cursor = root.walk();
    let mut stack = vec![root];
    while let Some(node) = stack.pop() {
        if node.is_error() || node.is_missing() {
            return Some(node);
        }
        if !node.has_error() {
            continue;
        }
        let children: Vec<Node<'_>> = node.children(&mut cursor).collect();
        stack.extend(children.into_iter().rev());
    }
    None
}

/// The refusal when `new` (the text `rel` would have) fails to parse and `old` (its text now, or `None` for
/// a new file) does not; `None` when the change may go ahead.
pub(crate) fn refusal(rel: &str, old: Option<&str>, new: &str, tool: &str) -> Option<String> {
    let err = first_error(rel, new)?;
    if old.is_some_and(|old| first_error(rel, old).is_some()) {
        return None;
    }
    let excerpt = super::text::excerpt(new, err.line, err.line, 2);
    let fix = if tool == "edit" {
        "Make old_string cover the whole construct you replace (a whole function, braces included) and \
         new_string the whole new one, or fix new_string"
    } else {
        "Fix the content"
    };
    Some(format!(
        "Not changed: after this {tool} `{rel}` would not parse: line {}: {}. The file is unchanged. The text \
         it would have there:\n{excerpt}\n{fix}, and call {tool} again.",
        err.line, err.what
    ))
}
