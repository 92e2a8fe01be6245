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
