//! `list_files`: the repository's files under a directory, as git would track them (ignored files left out).

use serde_json::Value;

use super::text::plural;
use super::walk::{files, Filter};
use super::{Args, Tool, ToolOutput, Workspace};

/// At most this many paths per call.
pub const MAX_ENTRIES: usize = 500;

pub struct ListFiles;

impl Tool for ListFiles {
    fn name(&self) -> &'static str {
        "list_files"
    }

    fn mutates(&self) -> bool {
        false
    }

    fn call(&self, ws: &Workspace, args: &Value) -> ToolOutput {
        list(ws, Args::of(args)).into()
    }
}

fn list(ws: &Workspace, args: Args) -> Result<String, String> {
    let start = ws.resolve(args.opt_string("path").unwrap_or("."))?;
    if !start.abs.exists() {
        return Err(format!(
            "`{}` does not exist; use list_files without a path to see the whole repository.",
            start.rel
        ));
    }
    let glob = args.opt_string("glob").filter(|g| !g.trim().is_empty());
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
        return Ok(format!("No files in {place}{matching}."));
    }
    let mut out = format!(
        "{} in {place}{matching}:\n",
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
