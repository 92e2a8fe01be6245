//! The files of one side of the change, as the mapping reads them: which paths exist and what they hold.
//!
//! Which tests a change touches can depend on files it did not change (the test modules that import a
//! changed helper, the pytest configuration, a crate's `mod` tree), so the mapping reads the tree at head
//! through this trait: from git objects in the gate, from a map in unit tests.

use std::collections::BTreeMap;

use anyhow::Result;
use git2::{Oid, Repository};

/// A tree of files: paths relative to the repository root, `/`-separated.
pub trait Sources {
    /// Every file path of the tree.
    fn paths(&self) -> Vec<String>;
    /// A file's text, if it exists and is UTF-8.
    fn text(&self, path: &str) -> Option<String>;
}

/// No files: what the mapping falls back to without a tree (helpers then select their whole directory).
pub struct NoSources;

impl Sources for NoSources {
    fn paths(&self) -> Vec<String> {
        Vec::new()
    }

    fn text(&self, _: &str) -> Option<String> {
        None
    }
}

/// A commit's tree in a repository (read-only).
pub struct GitTree<'r> {
    repo: &'r Repository,
    commit: Oid,
    paths: Vec<String>,
}

impl<'r> GitTree<'r> {
    /// The tree of `commit` (a full sha) in `repo`.
    pub fn new(repo: &'r Repository, commit: &str) -> Result<GitTree<'r>> {
        let commit = Oid::from_str(commit)?;
        let paths = crate::git::tree_paths(repo, commit)?;
        Ok(GitTree {
            repo,
            commit,
            paths,
        })
    }
}

impl Sources for GitTree<'_> {
    fn paths(&self) -> Vec<String> {
        self.paths.clone()
    }

    fn text(&self, path: &str) -> Option<String> {
        crate::git::file_text(self.repo, self.commit, path)
    }
}

impl Sources for BTreeMap<String, String> {
    fn paths(&self) -> Vec<String> {
        self.keys().cloned().collect()
    }

    fn text(&self, path: &str) -> Option<String> {
        self.get(path).cloned()
    }
}
