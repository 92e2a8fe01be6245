//! `list_files`: the repository's files under a directory, as git would track them (ignored files left out).
//!
//! Small models give a glob as the path (`tests/**`, copied from the task's scope): a path with glob
//! characters that names nothing is taken as the glob, and the answer says so.

use serde_json::{json, Value};

use super::text::plural;
use super::walk::{files, Filter, GlobPath};
use super::{object, Args, CallFuture, Context, Tool, ToolError, Workspace};

/// At most this many paths per call.
pub const MAX_ENTRIES: usize = 500;

pub struct ListFiles;

impl Tool for ListFiles {
    fn name(&self) -> &'static str {
        "list_files"
    }

    fn description(&self) -> &'static str {
        "List the files of the repository under a directory, optionally filtered by a glob."
    }

    fn parameters(&self) -> Value {
        object(
            json!({
                "path": {"type": "string", "description": "The directory to list, relative to the repository root [default: the root]."},
                "glob": {"type": "string", "description": "Only files whose path matches this glob (`*` matches within a name, `**` across directories)."}
            }),
            &[],
        )
    }

    fn mutates(&self) -> bool {
        false
    }

    fn call<'a>(&'a self, ctx: &'a mut Context<'_>, args: &'a Value) -> CallFuture<'a> {
        Box::pin(async move { list(ctx.workspace, Args::of(args)).map_err(ToolError::Failed) })
    }
}

fn list(ws: &Workspace, args: Args) -> Result<String, String> {
    let path = args.opt_string("path").unwrap_or(".");
    let mut glob = args.opt_string("glob").filter(|g| !g.trim().is_empty());
    let mut start = ws.resolve(path)?;
    let mut note = String::new();
    if glob.is_none() && GlobPath::is_glob(ws, path) {
        glob = Some(path);
        start = ws.resolve(".")?;
        note = format!(" (`{path}` is a glob, not a directory: pass it as glob)");
    }
    // A directory that is not there: the whole repository instead, which is what the model needs next.
    if !start.abs.exists() {
        note = format!(
            " (`{}` does not exist, so the whole repository is listed)",
            start.rel
        );
        start = ws.resolve(".")?;
    }
    let filter = glob.map(Filter::new).transpose()?;
    let found = files(ws, &start, filter.as_ref());

    let place = if start.rel == "." {
        "the repository".to_string()
    } else {
        format!("`{}`", start.rel)
    };
    let matching = glob
        .map(|g| format!(" matching `{}`", g.trim()))
        .unwrap_or_default();
    if found.is_empty() {
        return Ok(format!("No files in {place}{matching}{note}."));
    }
    let mut out = format!(
        "{} in {place}{matching}{note}:\n",
        plural(found.len(), "file", "files")
    );
    let shown: Vec<&str> = found
        .iter()
        .take(MAX_ENTRIES)
        .map(|f| f.rel.as_str())
        .collect();
    out.push_str(&shown.join("\n"));
    if found.len() > MAX_ENTRIES {
        out.push_str(&format!(
            "\n[{} more files not shown; narrow the list with path or glob]",
            found.len() - MAX_ENTRIES
        ));
    }
    Ok(out)
}
