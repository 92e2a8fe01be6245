//! `search`: the lines of the repository's text files that match a regular expression, as `path:line: text`.
//!
//! Models often pass code as the pattern (`foo(bar`), which is not a valid regular expression; then the
//! pattern is searched as literal text and the output says so, instead of failing the call. Matching is line
//! by line. Binary files, files over [`MAX_FILE_BYTES`] and ignored files are skipped.

use std::fs;

use regex::{Regex, RegexBuilder};
use serde_json::{json, Value};

use super::text::{looks_binary, plural, small_file, MAX_FILE_BYTES};
use super::walk::{files, Filter, GlobPath};
use super::{object, Args, CallFuture, Context, Resolved, Tool, ToolError, Workspace};

/// At most this many matching lines per call.
pub const MAX_MATCHES: usize = 200;
/// Longer matching lines are cut to this many characters, around the match.
pub const MAX_LINE_CHARS: usize = 300;

pub struct Search;

impl Tool for Search {
    fn name(&self) -> &'static str {
        "search"
    }

    fn description(&self) -> &'static str {
        "Search the repository's files for a regular expression and return the matching lines."
    }

    fn parameters(&self) -> Value {
        object(
            json!({
                "pattern": {"type": "string", "description": "The regular expression to search for."},
                "path": {"type": "string", "description": "Search only under this directory or file [default: the root]."},
                "glob": {"type": "string", "description": "Search only files whose path matches this glob (`*` matches within a name, `**` across directories)."}
            }),
            &["pattern"],
        )
    }

    fn mutates(&self) -> bool {
        false
    }

    fn call<'a>(&'a self, ctx: &'a mut Context<'_>, args: &'a Value) -> CallFuture<'a> {
        Box::pin(async move { search(ctx.workspace, Args::of(args)).map_err(ToolError::Failed) })
    }
}

fn search(ws: &Workspace, args: Args) -> Result<String, String> {
    let pattern = args.string("pattern")?;
    if pattern.is_empty() {
        return Err(
            "The pattern is empty; give the text or regular expression to search for.".to_string(),
        );
    }
    let asked = args.opt_string("path").unwrap_or(".");
    let mut glob = args.opt_string("glob").filter(|g| !g.trim().is_empty());
    // A glob given as the path (a task's scope, say) filters the files, as `glob` would.
    let mut start = if glob.is_none() && GlobPath::is_glob(ws, asked) {
        glob = Some(asked);
        ws.resolve(".")?
    } else {
        ws.resolve(asked)?
    };
    // A path that is not there: the whole repository is searched, and the answer says so.
    let mut missing = String::new();
    if !start.abs.exists() {
        missing = format!(
            "`{}` does not exist, so the whole repository was searched.\n",
            start.rel
        );
        start = ws.resolve(".")?;
    }
    let mut filter = glob.map(Filter::new).transpose()?;
    // `path: tests/words.rs` with `glob: src/**` (the task's scope): a glob that leaves no file of the path
    // would make every search empty, so the path alone is searched.
    if let (Some(g), Some(f)) = (glob, filter.as_ref()) {
        if start.rel != "." && files(ws, &start, Some(f)).is_empty() {
            missing.push_str(&format!(
                "No file of `{}` matches the glob `{}`, so the glob was left out.\n",
                start.rel,
                g.trim()
            ));
            filter = None;
            glob = None;
        }
    }
    let (regex, mut note) = match build(pattern) {
        Ok(regex) => (regex, String::new()),
        Err(err) => {
            let literal = build(&regex::escape(pattern)).map_err(|_| {
                format!("The pattern is too large to search for ({err}); use a shorter pattern.")
            })?;
            let first = err
                .lines()
                .find(|l| l.trim_start().starts_with("error:"))
                .unwrap_or("");
            (
                literal,
                format!(
                    "`{pattern}` is not a valid regular expression ({}), so it was searched as literal \
                     text.\n",
                    first.trim().trim_start_matches("error:").trim()
                ),
            )
        }
    };

    note.insert_str(0, &missing);
    let place = if start.rel == "." {
        String::new()
    } else {
        format!(" in `{}`", start.rel)
    };
    let matching = glob
        .map(|g| format!(" (files matching `{}`)", g.trim()))
        .unwrap_or_default();
    let hits = find(ws, &start, filter.as_ref(), &regex);
    if hits.total > 0 {
        return Ok(format!("{note}{}", hits.listing(&place, &matching)));
    }
    let none = format!("{note}No matches for `{pattern}`{place}{matching}.");
    // `median\(\)` for `def median(xs)`: the name alone usually finds what was meant.
    let retry = key_word(pattern).and_then(|word| Some((build(&word).ok()?, word)));
    if let Some((word_regex, word)) = retry {
        let again = find(ws, &start, filter.as_ref(), &word_regex);
        if again.total > 0 {
            return Ok(format!(
                "{none} Searched for `{word}` instead: {}",
                again.listing(&place, &matching)
            ));
        }
    }
    Ok(none)
}

/// The matching lines of one search.
struct Hits {
    /// `path:line: text`, the first [`MAX_MATCHES`].
    shown: Vec<String>,
    total: usize,
    in_files: usize,
}

impl Hits {
    /// `N matches in M files{place}{matching}:` and the lines shown, with how many more there are.
    fn listing(&self, place: &str, matching: &str) -> String {
        let mut out = format!(
            "{} in {}{place}{matching}:\n{}",
            plural(self.total, "match", "matches"),
            plural(self.in_files, "file", "files"),
            self.shown.join("\n")
        );
        if self.total > self.shown.len() {
            out.push_str(&format!(
                "\n[{} more matches not shown; narrow the search with path, glob or a more specific pattern]",
                self.total - self.shown.len()
            ));
        }
        out
    }
}

/// The lines `regex` matches in the text files under `start` that `filter` accepts.
fn find(ws: &Workspace, start: &Resolved, filter: Option<&Filter>, regex: &Regex) -> Hits {
    let mut hits = Hits {
        shown: Vec::new(),
        total: 0,
        in_files: 0,
    };
    for file in files(ws, start, filter) {
        if !small_file(&file.abs, MAX_FILE_BYTES) {
            continue;
        }
        let Ok(bytes) = fs::read(&file.abs) else {
            continue;
        };
        if looks_binary(&bytes) {
            continue;
        }
        let text = String::from_utf8_lossy(&bytes);
        let mut hit = false;
        for (i, line) in text.lines().enumerate() {
            let line = line.strip_suffix('\r').unwrap_or(line);
            let Some(found) = regex.find(line) else {
                continue;
            };
            hit = true;
            hits.total += 1;
            if hits.shown.len() < MAX_MATCHES {
                hits.shown.push(format!(
                    "{}:{}: {}",
                    file.rel,
                    i + 1,
                    around(line, found.start())
                ));
            }
        }
        hits.in_files += usize::from(hit);
    }
    hits
}

/// The longest name in a pattern (escapes dropped) when the pattern is more than that name: what a
/// search that found nothing is tried again with.
fn key_word(pattern: &str) -> Option<String> {
    let mut plain = String::new();
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            chars.next();
            plain.push(' ');
        } else {
            plain.push(c);
        }
    }
    let word = plain
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .max_by_key(|w| w.chars().count())?;
    (word.chars().count() >= 3 && word != pattern).then(|| word.to_string())
}

fn build(pattern: &str) -> Result<Regex, String> {
    RegexBuilder::new(pattern)
        .size_limit(1 << 22)
        .dfa_size_limit(1 << 22)
        .build()
        .map_err(|err| err.to_string())
}

/// `line` cut to [`MAX_LINE_CHARS`] characters around byte offset `at` (where the match starts).
fn around(line: &str, at: usize) -> String {
    if line.chars().count() <= MAX_LINE_CHARS {
        return line.to_string();
    }
    let before = line[..at].chars().count();
    let skip = before.saturating_sub(MAX_LINE_CHARS / 3);
    let body: String = line.chars().skip(skip).take(MAX_LINE_CHARS).collect();
    let head = if skip > 0 { "…" } else { "" };
    let tail = if skip + MAX_LINE_CHARS < line.chars().count() {
        "…"
    } else {
        ""
    };
    format!("{head}{body}{tail}")
}
