//! `write_file`: creates a file (and its parent directories) or replaces a file's whole content.
//!
//! Replacing a file whose lines all end in CRLF keeps CRLF: models write LF, and a whole-file line-ending
//! change would drown the real change in the diff.
//!
//! Small models destroy files with it: they write a tool call's JSON as a file's content, or a few lines
//! they guessed over a file they never read. So a write is refused when its content is a tool call, and
//! when it would remove most of the lines ([`MOST`]) of an existing file (of [`MIN_LINES`] or more) that the model has not seen in this
//! run (read, edited or written); the refusal says to use `edit`. A write of the content the file already
//! has changes nothing and says so ("unchanged"): it is not recorded as a change.

use std::fs;

use serde_json::{json, Value};

use super::text::{is_crlf, line_count, looks_binary, plural, writable};
use super::walk::GlobPath;
use super::{object, Args, CallFuture, Context, Tool, ToolError, Workspace};

/// The share of an existing file's non-blank lines that a write may remove without the model having seen
/// the file: more is refused.
const MOST: f64 = 0.5;
/// Files with fewer non-blank lines are cheap to rewrite whole: the check leaves them alone.
const MIN_LINES: usize = 4;

pub struct WriteFile;

impl Tool for WriteFile {
    fn name(&self) -> &'static str {
        "write_file"
    }

    fn description(&self) -> &'static str {
        "Create a file, or replace a file's whole content."
    }

    fn parameters(&self) -> Value {
        object(
            json!({
                "path": {"type": "string", "description": "The file's path, relative to the repository root."},
                "content": {"type": "string", "description": "The complete new content of the file."}
            }),
            &["path", "content"],
        )
    }

    fn mutates(&self) -> bool {
        true
    }

    fn call<'a>(&'a self, ctx: &'a mut Context<'_>, args: &'a Value) -> CallFuture<'a> {
        Box::pin(async move { write(ctx.workspace, Args::of(args)).map_err(ToolError::Failed) })
    }
}

/// Whether `content` is a tool call rather than a file's text: a JSON object with a tool's `name` and its
/// `arguments` (or `parameters`), or a call wrapped in the template's `<tool_call>` tags.
fn is_tool_call(content: &str) -> bool {
    let t = content.trim();
    if t.starts_with("<tool_call>") {
        return true;
    }
    let Ok(Value::Object(map)) = serde_json::from_str::<Value>(t) else {
        return false;
    };
    map.get("name").is_some_and(Value::is_string)
        && (map.contains_key("arguments") || map.contains_key("parameters"))
}

/// How many of `old`'s non-blank lines `new` no longer has (each line counted as often as it occurs), and
/// how many non-blank lines `old` has.
fn removed_lines(old: &str, new: &str) -> (usize, usize) {
    let mut left: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for line in new.lines().map(str::trim).filter(|l| !l.is_empty()) {
        *left.entry(line).or_default() += 1;
    }
    let mut gone = 0;
    let mut total = 0;
    for line in old.lines().map(str::trim).filter(|l| !l.is_empty()) {
        total += 1;
        match left.get_mut(line) {
            Some(n) if *n > 0 => *n -= 1,
            _ => gone += 1,
        }
    }
    (gone, total)
}

fn write(ws: &Workspace, args: Args) -> Result<String, String> {
    let asked = args.string("path")?;
    // Never a file literally named `**`: a glob here is a scope copied where a path belongs.
    if let Some(glob) = GlobPath::of(ws, asked) {
        return Err(glob.refusal("write_file"));
    }
    let path = ws.resolve(asked)?;
    let content = args.string("content")?;
    let rel = &path.rel;
    if rel == "." {
        return Err("write_file needs the path of a file, such as `src/new.rs`.".to_string());
    }
    let existing = fs::metadata(&path.abs).ok();
    if existing.as_ref().is_some_and(|m| m.is_dir()) {
        return Err(format!(
            "`{rel}` is a directory; give the path of a file inside it."
        ));
    }
    if let Some(meta) = &existing {
        writable(rel, meta)?;
    }
    if is_tool_call(content) {
        return Err(format!(
            "Not written: the content is a tool call, not the text of `{rel}`. Call the tool itself; to change \
             part of a file, use edit."
        ));
    }
    let mut content = content.to_string();
    let mut note = "";
    let mut before = None;
    let mut merged = None;
    if existing.is_some() {
        let old = fs::read(&path.abs).unwrap_or_default();
        if !looks_binary(&old) {
            let old = String::from_utf8_lossy(&old);
            before = Some(old.to_string());
            if is_crlf(&old) && !content.contains('\r') && content.contains('\n') {
                content = content.replace('\n', "\r\n");
                note = ", CRLF line endings kept";
            }
            if old == content {
                return Ok(format!(
                    "Unchanged: `{rel}` already has this content; nothing was written."
                ));
            }
            // Part of the file, its definitions as written: merged into the file, the rest kept.
            if !super::definitions::removed(rel, &old, &content).is_empty() {
                if let Some(m) = super::merge::merge(rel, &old, &content) {
                    content = m.text.clone();
                    merged = Some(m);
                }
            }
            let (gone, total) = removed_lines(&old, &content);
            if !ws.was_seen(rel) && total >= MIN_LINES && gone as f64 > MOST * total as f64 {
                return Err(format!(
                    "Not written: this would remove {gone} of the {total} lines of `{rel}`, which you have not \
                     read. Use edit to change part of a file (read_file shows its lines first); write_file \
                     replaces a whole file."
                ));
            }
        }
    }
    if let Some(old) = &before {
        let gone = super::definitions::removed(rel, old, &content);
        if !gone.is_empty() {
            return Err(removal_refusal(rel, &gone));
        }
    }
    // A binary file is never a source file; a new one counts as valid before.
    if existing.is_none() || before.is_some() {
        if let Some(refusal) =
            super::syntax_guard::refusal(rel, before.as_deref(), &content, "write_file")
        {
            return Err(refusal);
        }
    }
    if let Some(parent) = path.abs.parent() {
        fs::create_dir_all(parent)
            .map_err(|err| format!("Cannot create the directories for `{rel}`: {err}."))?;
    }
    fs::write(&path.abs, &content).map_err(|err| format!("Cannot write `{rel}`: {err}."))?;
    ws.record(rel);
    if let Some(m) = merged {
        return Ok(merged_answer(rel, &m, &content));
    }
    let action = if existing.is_some() {
        "Replaced"
    } else {
        "Created"
    };
    Ok(format!(
        "{action} {rel}: {}, {}{note}.",
        plural(content.len(), "byte", "bytes"),
        plural(line_count(&content), "line", "lines")
    ))
}

/// The answer to a rewrite that would delete definitions (tests shown by their names).
fn removal_refusal(rel: &str, gone: &[String]) -> String {
    let shown: Vec<String> = gone
        .iter()
        .filter(|n| !n.starts_with("test ") || !gone.contains(&n["test ".len()..].to_string()))
        .map(|n| format!("`{}`", n.strip_prefix("test ").unwrap_or(n)))
        .collect();
    format!(
        "Not written: this would delete {} from `{rel}` ({}). write_file replaces the whole file: to \
         change part of it use edit; to add a test, add it beside the existing ones. Do not delete tests.",
        if shown.len() == 1 { "a definition" } else { "definitions" },
        listed(&shown)
    )
}

/// Up to eight names, then how many more.
fn listed(names: &[String]) -> String {
    let shown = names.iter().take(8).cloned().collect::<Vec<_>>().join(", ");
    match names.len() {
        n if n > 8 => format!("{shown} and {} more", n - 8),
        _ => shown,
    }
}

/// The answer to a write merged into the file: what was replaced, added and kept.
fn merged_answer(rel: &str, m: &super::merge::Merged, content: &str) -> String {
    let names = |list: &[String]| {
        let quoted: Vec<String> = list.iter().map(|n| format!("`{n}`")).collect();
        listed(&quoted)
    };
    let mut done = Vec::new();
    if !m.replaced.is_empty() {
        done.push(format!("replaced {}", names(&m.replaced)));
    }
    if !m.added.is_empty() {
        done.push(format!("added {}", names(&m.added)));
    }
    format!(
        "Merged into {rel} ({}, {}): your content is part of the file, so its definitions went in \
         ({}) and the ones it left out were kept ({}). To delete a definition, use edit.",
        plural(content.len(), "byte", "bytes"),
        plural(line_count(content), "line", "lines"),
        done.join("; "),
        names(&m.kept)
    )
}
