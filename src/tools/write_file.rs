//! `write_file`: creates a file (and its parent directories) or replaces a file's whole content.
//!
//! Replacing a file whose lines all end in CRLF keeps CRLF: models write LF, and a whole-file line-ending
//! change would drown the real change in the diff.

use std::fs;

use serde_json::{json, Value};

use super::text::{is_crlf, line_count, looks_binary, plural, writable};
use super::{object, Args, CallFuture, Context, Tool, ToolError, Workspace};

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

fn write(ws: &Workspace, args: Args) -> Result<String, String> {
    let path = ws.resolve(args.string("path")?)?;
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
    let mut content = content.to_string();
    let mut note = "";
    if existing.is_some() {
        let old = fs::read(&path.abs).unwrap_or_default();
        if !looks_binary(&old) {
            let old = String::from_utf8_lossy(&old);
            if is_crlf(&old) && !content.contains('\r') && content.contains('\n') {
                content = content.replace('\n', "\r\n");
                note = ", CRLF line endings kept";
            }
        }
    }
    if let Some(parent) = path.abs.parent() {
        fs::create_dir_all(parent)
            .map_err(|err| format!("Cannot create the directories for `{rel}`: {err}."))?;
    }
    fs::write(&path.abs, &content).map_err(|err| format!("Cannot write `{rel}`: {err}."))?;
    ws.record(rel);
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
