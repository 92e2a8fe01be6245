//! `read_file`: a text file's lines, numbered, at most a page at a time.
//!
//! The header gives the total line count, so the model knows how much there is; a cut says where it stopped
//! and which `start_line` reads on. Line numbers are what `edit` errors and `search` results refer to.

use serde_json::{json, Value};

use super::text::{cut_line, is_crlf, lines, numbered, plural, read_text};
use super::walk::{with_similar, GlobPath};
use super::{object, Args, CallFuture, Context, Tool, ToolError, Workspace};

/// At most this many lines per call.
pub const MAX_LINES: usize = 2000;
/// At most this many bytes of file text per call.
pub const MAX_BYTES: usize = 100 * 1024;
/// Longer lines are cut to this many characters.
pub const MAX_LINE_CHARS: usize = 2000;

pub struct ReadFile;

impl Tool for ReadFile {
    fn name(&self) -> &'static str {
        "read_file"
    }

    fn description(&self) -> &'static str {
        "Read a text file of the repository, optionally only a range of lines."
    }

    fn parameters(&self) -> Value {
        object(
            json!({
                "path": {"type": "string", "description": "The file's path, relative to the repository root."},
                "start_line": {"type": "integer", "description": "The first line to read (1-based) [default: 1]."},
                "end_line": {"type": "integer", "description": "The last line to read, inclusive [default: the end of the file]."}
            }),
            &["path"],
        )
    }

    fn mutates(&self) -> bool {
        false
    }

    fn call<'a>(&'a self, ctx: &'a mut Context<'_>, args: &'a Value) -> CallFuture<'a> {
        Box::pin(async move { read(ctx.workspace, Args::of(args)).map_err(ToolError::Failed) })
    }
}

/// `rel` as `read_file` shows it, whole or lines `first..=last`: the opening message shows files this way.
pub(crate) fn show(
    ws: &Workspace,
    rel: &str,
    lines: Option<(usize, usize)>,
) -> Result<String, String> {
    let args = match lines {
        Some((first, last)) => json!({"path": rel, "start_line": first, "end_line": last}),
        None => json!({"path": rel}),
    };
    read(ws, Args::of(&args))
}

fn read(ws: &Workspace, args: Args) -> Result<String, String> {
    let asked = args.string("path")?;
    // A glob (a task's scope, say) that names one file reads it; more than one is refused with the list.
    let (path, glob) = GlobPath::one_file(ws, asked, "read_file")?;
    let glob_note = glob
        .map(|glob| format!("`{glob}` is a glob; the one file it matches is shown.\n"))
        .unwrap_or_default();
    let text = read_text(&path).map_err(|err| with_similar(ws, &path, err))?;
    let rel = &path.rel;
    ws.record_seen(rel);
    let all = lines(&text);
    let total = all.len();
    let crlf = if is_crlf(&text) {
        ", CRLF line endings"
    } else {
        ""
    };
    if total == 0 {
        return Ok(format!("{glob_note}{rel} (empty file)"));
    }
    let start = args.opt_integer("start_line").unwrap_or(1);
    let end = args.opt_integer("end_line");
    if start < 1 {
        return Err(format!(
            "start_line must be 1 or more; `{rel}` has lines 1 to {total}."
        ));
    }
    let start = start as usize;
    if start > total {
        return Err(format!(
            "start_line {start} is past the end: `{rel}` has {total} lines. Read from a start_line between \
             1 and {total}."
        ));
    }
    let end = match end {
        None => total,
        Some(end) if end < start as i64 => {
            return Err(format!(
                "end_line {end} is before start_line {start}; give an end_line of {start} or more, or leave it \
                 out to read to the end."
            ))
        }
        Some(end) => (end as usize).min(total),
    };

    let mut shown = Vec::new();
    let mut bytes = 0;
    let mut long_lines = 0;
    for (i, line) in all.iter().enumerate().take(end).skip(start - 1) {
        if shown.len() == MAX_LINES || (bytes + line.len() > MAX_BYTES && !shown.is_empty()) {
            break;
        }
        bytes += line.len() + 1;
        if line.chars().count() > MAX_LINE_CHARS {
            long_lines += 1;
        }
        shown.push(numbered(i + 1, &cut_line(line, MAX_LINE_CHARS)));
    }
    let last = start + shown.len() - 1;
    let mut out = if start == 1 && last == total {
        format!(
            "{glob_note}{rel} ({}{crlf})",
            plural(total, "line", "lines")
        )
    } else {
        format!("{glob_note}{rel} (lines {start}-{last} of {total}{crlf})")
    };
    out.push('\n');
    out.push_str(&shown.join("\n"));
    if last < end {
        let limit = if shown.len() == MAX_LINES {
            format!("{MAX_LINES} lines")
        } else {
            format!("{} KB", MAX_BYTES / 1024)
        };
        out.push_str(&format!(
            "\n[cut at {limit} per call: lines {}-{end} not shown; read on with start_line={}]",
            last + 1,
            last + 1
        ));
    }
    if long_lines > 0 {
        out.push_str(&format!(
            "\n[{long_lines} line(s) longer than {MAX_LINE_CHARS} characters were cut]"
        ));
    }
    Ok(out)
}
