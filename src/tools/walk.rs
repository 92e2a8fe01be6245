//! The files `list_files` and `search` look at: gitignore-aware, hidden files included but never `.git`,
//! symbolic links listed but not followed (a link to a directory outside cannot widen the walk), sorted.

use std::path::PathBuf;

use globset::{GlobBuilder, GlobMatcher};
use ignore::WalkBuilder;

use super::{Resolved, Workspace};

/// A file found by [`files`].
pub(crate) struct Found {
    pub abs: PathBuf,
    pub rel: String,
}

/// A `glob` argument: matched against the path relative to the root; a glob without `/` also matches a
/// bare file name (as in `.gitignore`), so `*.rs` and `Cargo.toml` work at any depth.
pub(crate) struct Filter {
    matcher: GlobMatcher,
    basename: bool,
}

impl Filter {
    pub(crate) fn new(glob: &str) -> Result<Self, String> {
        let glob = glob.trim();
        let matcher = GlobBuilder::new(glob)
            .literal_separator(false)
            .build()
            .map_err(|err| {
                format!("The glob `{glob}` is not valid ({err}); use a glob such as `**/*.rs`.")
            })?
            .compile_matcher();
        Ok(Filter {
            matcher,
            basename: !glob.contains('/'),
        })
    }

    pub(crate) fn matches(&self, rel: &str) -> bool {
        self.matcher.is_match(rel)
            || (self.basename && self.matcher.is_match(rel.rsplit('/').next().unwrap_or(rel)))
    }
}

/// The files under `start` (a directory or a file) that `filter` accepts, sorted by path.
pub(crate) fn files(ws: &Workspace, start: &Resolved, filter: Option<&Filter>) -> Vec<Found> {
    let mut found: Vec<Found> = WalkBuilder::new(&start.abs)
        .hidden(false)
        .parents(true)
        .ignore(true)
        .git_ignore(true)
        .git_exclude(true)
        .git_global(false)
        .require_git(false)
        .follow_links(false)
        .filter_entry(|entry| !super::workspace::is_reserved(&entry.file_name().to_string_lossy()))
        .build()
        .filter_map(Result::ok)
        .filter(|entry| entry.file_type().is_some_and(|t| !t.is_dir()))
        .filter_map(|entry| {
            let link = entry.path_is_symlink();
            let abs = entry.into_path();
            let rel = ws.display(&abs);
            // A link is kept only if it resolves inside the workspace, so nothing reads through it.
            (!link || ws.resolve(&rel).is_ok()).then_some(Found { abs, rel })
        })
        .filter(|f| filter.is_none_or(|filter| filter.matches(&f.rel)))
        .collect();
    found.sort_by(|a, b| a.rel.cmp(&b.rel));
    found
}

/// A path argument that is really a glob: small models pass a task's scope (`src/**`, `tests/*.py`) where
/// one file's path belongs. `None` when `path` has no glob character or names an existing entry.
pub(crate) struct GlobPath {
    pub glob: String,
    /// The files it matches, sorted.
    pub matches: Vec<String>,
}

/// The most matches a message names before it says how many more there are.
const MAX_NAMED: usize = 12;

impl GlobPath {
    /// Whether `path` is a glob rather than a path: it has `*`, `?` or `[` and names nothing that exists.
    /// Cheap: no walk of the repository.
    pub(crate) fn is_glob(ws: &Workspace, path: &str) -> bool {
        path.contains(['*', '?', '[']) && !ws.resolve(path).is_ok_and(|r| r.abs.exists())
    }

    pub(crate) fn of(ws: &Workspace, path: &str) -> Option<GlobPath> {
        if !Self::is_glob(ws, path) {
            return None;
        }
        let filter = Filter::new(path).ok()?;
        let root = ws.resolve(".").ok()?;
        let matches = files(ws, &root, Some(&filter))
            .into_iter()
            .map(|f| f.rel)
            .collect();
        Some(GlobPath {
            glob: path.trim().to_string(),
            matches,
        })
    }

    /// The one file `asked` names for `tool` (`read_file`, `edit`): the path itself, or the one file a
    /// glob matches, with the glob. A glob of no file or of several is refused with the files it matches.
    pub(crate) fn one_file(
        ws: &Workspace,
        asked: &str,
        tool: &str,
    ) -> Result<(Resolved, Option<String>), String> {
        let Some(glob) = Self::of(ws, asked) else {
            return Ok((ws.resolve(asked)?, None));
        };
        match glob.matches.as_slice() {
            [one] => Ok((ws.resolve(one)?, Some(glob.glob))),
            _ => Err(glob.refusal(tool)),
        }
    }

    /// Why `tool` cannot take it, and the paths it could take instead.
    pub(crate) fn refusal(&self, tool: &str) -> String {
        let glob = &self.glob;
        if self.matches.is_empty() {
            return format!(
                "`{glob}` is a glob pattern, not a file path, and no file matches it. {tool} takes the path of \
                 one file; call list_files to see the files."
            );
        }
        let named: Vec<&str> = self
            .matches
            .iter()
            .take(MAX_NAMED)
            .map(String::as_str)
            .collect();
        let more = match self.matches.len().saturating_sub(MAX_NAMED) {
            0 => String::new(),
            n => format!(" and {n} more"),
        };
        format!(
            "`{glob}` is a glob pattern, not a file path: {tool} takes the path of one file. Files matching \
             it: {}{more}. Call {tool} again with one of these paths.",
            named.join(", ")
        )
    }
}

/// `err` for a path that does not exist, with the files whose names come closest (a small model guesses
/// `./go` for `ports.go`, `stats.py` for `src/stats.py`); `err` unchanged when the path exists or nothing
/// is close.
pub(crate) fn with_similar(ws: &Workspace, path: &Resolved, err: String) -> String {
    if path.abs.exists() {
        return err;
    }
    let similar = similar(ws, &path.rel);
    if similar.is_empty() {
        return err;
    }
    format!("{err} Files with similar names: {}.", similar.join(", "))
}

/// At most five files whose name holds the asked-for name's stem, or whose stem it holds, any case; the
/// same file name in another directory first.
fn similar(ws: &Workspace, rel: &str) -> Vec<String> {
    let asked = rel.rsplit('/').next().unwrap_or(rel).to_lowercase();
    let stem = asked
        .split('.')
        .find(|s| !s.is_empty())
        .unwrap_or("")
        .to_string();
    if stem.len() < 2 {
        return Vec::new();
    }
    let Ok(root) = ws.resolve(".") else {
        return Vec::new();
    };
    let mut scored: Vec<(u8, String)> = files(ws, &root, None)
        .into_iter()
        .filter_map(|f| {
            let name = f.rel.rsplit('/').next().unwrap_or(&f.rel).to_lowercase();
            let their_stem = name.split('.').find(|s| !s.is_empty()).unwrap_or("");
            let score = if name == asked {
                0
            } else if name.contains(&stem) {
                1
            } else if their_stem.len() >= 2 && stem.contains(their_stem) {
                2
            } else {
                return None;
            };
            Some((score, f.rel))
        })
        .collect();
    scored.sort();
    scored.into_iter().take(5).map(|(_, rel)| rel).collect()
}
