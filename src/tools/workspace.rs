//! The workspace: the root of the agent's git worktree, and the one place a tool's path is turned into a
//! file system path.
//!
//! A path the model gives is relative to the root. It is refused when it is absolute, when `..` climbs out of
//! the root, when it names anything under `.git` (the repository's history and configuration are the gate's,
//! not the model's) or `.vouch` (vouch's own; its records are not in the worktree, but a file there would
//! still look like them), or when a symbolic link on the way resolves outside the root. A name counts as
//! `.git` when another file system would take it for `.git`: any case, trailing dots and spaces (Windows),
//! invisible characters (macOS ignores them), the short name `GIT~1`, and `\` as a separator. For a path that does not
//! exist yet (a new file), the nearest existing ancestor is resolved and checked, and the rest of the path is
//! plain names, so creating it cannot leave the root either. A dangling symbolic link is refused: writing
//! through it would create its target, wherever that is.
//!
//! The workspace also remembers what the tools changed ([`Changed`]): the paths `edit` and `write_file`
//! wrote, and whether anything else may have changed files (`shell` ran, or the run was resumed). The commit takes those, and not every
//! file that happens to be new in the worktree: a `Cargo.lock`, `target/` or `__pycache__/` that running
//! the tests made is not part of the model's change.
//!
//! Resolution is a check at the time of the call; the model is the only writer in its worktree, so nothing
//! races it between the check and the use.

use std::collections::BTreeSet;
use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};

use anyhow::Context as _;

/// The root directory of a worktree; every tool path is confined to it.
#[derive(Clone, Debug)]
pub struct Workspace {
    root: PathBuf,
    changed: Arc<Mutex<Changed>>,
    /// Paths the model has seen in this run (read, edited or written): `write_file` replaces most of a
    /// file only when the model knows what it replaces.
    seen: Arc<Mutex<BTreeSet<String>>>,
}

/// What the tools changed in the worktree.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Changed {
    /// Paths (relative, `/` separators) that `edit` or `write_file` wrote.
    pub paths: BTreeSet<String>,
    /// Files may have changed beyond `paths`: `shell` ran, or the run was resumed (the earlier run's
    /// paths are not known).
    pub unknown: bool,
    /// Writes recorded so far: a call that wrote nothing leaves it as it was.
    pub writes: u64,
}

/// A path the workspace accepted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolved {
    /// Where it is on disk: the canonical path of its nearest existing ancestor, then the names that follow.
    pub abs: PathBuf,
    /// The path relative to the root, with `/` separators, as shown to the model (`.` for the root).
    pub rel: String,
}

impl Workspace {
    /// The workspace rooted at `root`, which must be an existing directory.
    pub fn new(root: impl AsRef<Path>) -> anyhow::Result<Self> {
        let root = root.as_ref();
        let canonical =
            fs::canonicalize(root).with_context(|| format!("open workspace {}", root.display()))?;
        anyhow::ensure!(
            canonical.is_dir(),
            "workspace {} is not a directory",
            root.display()
        );
        Ok(Workspace {
            root: canonical,
            changed: Arc::default(),
            seen: Arc::default(),
        })
    }

    /// Notes that a tool wrote `rel` (a [`Resolved::rel`]).
    pub fn record(&self, rel: &str) {
        let mut changed = self.lock();
        changed.paths.insert(rel.to_string());
        changed.writes += 1;
        drop(changed);
        self.record_seen(rel);
    }

    /// Notes that files may have changed beyond the recorded paths (`shell` ran, a resumed run).
    pub fn record_unknown(&self) {
        self.lock().unknown = true;
    }

    /// Notes that the model has seen the content of `rel` (a [`Resolved::rel`]) in this run.
    pub fn record_seen(&self, rel: &str) {
        self.seen
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(rel.to_string());
    }

    /// Whether the model has seen the content of `rel` in this run.
    pub fn was_seen(&self, rel: &str) -> bool {
        self.seen
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(rel)
    }

    /// What the tools changed so far.
    pub fn changed(&self) -> Changed {
        self.lock().clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Changed> {
        self.changed.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The canonical root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Resolves `path` (relative to the root; empty or `.` is the root) for reading or writing, or says why it
    /// is refused.
    pub fn resolve(&self, path: &str) -> Result<Resolved, String> {
        let names = lexical(path)?;
        let rel = if names.is_empty() {
            ".".to_string()
        } else {
            names.join("/")
        };
        let joined: PathBuf = names.iter().fold(self.root.clone(), |p, name| p.join(name));

        // The nearest existing entry on the way: the path itself, or an ancestor. `symlink_metadata` sees a
        // link itself, so a dangling link counts as existing (and is then refused by `canonicalize`).
        let mut existing = joined.as_path();
        let mut tail: Vec<&str> = Vec::new();
        let mut rest = names.iter().rev();
        while existing != self.root && fs::symlink_metadata(existing).is_err() {
            if let Some(name) = rest.next() {
                tail.push(name);
            }
            existing = match existing.parent() {
                Some(parent) => parent,
                None => break,
            };
        }
        let canonical = fs::canonicalize(existing).map_err(|err| {
            let link = fs::symlink_metadata(existing).is_ok_and(|m| m.file_type().is_symlink());
            if link && err.kind() == io::ErrorKind::NotFound {
                format!("`{rel}` goes through a symbolic link that points to nothing; use another path.")
            } else {
                format!("`{rel}` cannot be resolved: {err}.")
            }
        })?;
        let Ok(inside) = canonical.strip_prefix(&self.root) else {
            return Err(format!(
                "`{rel}` goes through a symbolic link that leads outside the workspace; only files inside \
                 the repository can be read or written."
            ));
        };
        if let Some(refusal) = inside
            .components()
            .find_map(|c| refused(&c.as_os_str().to_string_lossy(), &rel))
        {
            return Err(refusal);
        }
        let abs = tail.iter().rev().fold(canonical, |p, name| p.join(name));
        Ok(Resolved { abs, rel })
    }

    /// `abs` (a path under the canonical root) as the model sees it: relative, with `/` separators.
    pub fn display(&self, abs: &Path) -> String {
        match abs.strip_prefix(&self.root) {
            Ok(rel) if rel.as_os_str().is_empty() => ".".to_string(),
            Ok(rel) => rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy())
                .collect::<Vec<_>>()
                .join("/"),
            Err(_) => abs.display().to_string(),
        }
    }
}

/// The names of `path` after removing `.` and resolving `..` without leaving the root.
fn lexical(path: &str) -> Result<Vec<String>, String> {
    let trimmed = path.trim();
    if trimmed.contains('\0') {
        return Err("The path contains a NUL character.".to_string());
    }
    let p = Path::new(trimmed);
    if p.is_absolute()
        || trimmed.starts_with('/')
        || trimmed.starts_with('\\')
        || trimmed == "~"
        || trimmed.starts_with("~/")
    {
        return Err(format!(
            "`{trimmed}` is an absolute path; give a path relative to the repository root, such as \
             `src/main.rs`."
        ));
    }
    let mut names: Vec<String> = Vec::new();
    for component in p.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                if names.pop().is_none() {
                    return Err(format!(
                        "`{trimmed}` leads outside the repository; only files inside it can be read or \
                         written."
                    ));
                }
            }
            Component::Normal(name) => {
                let name = name.to_string_lossy().into_owned();
                if let Some(refusal) = refused(&name, trimmed) {
                    return Err(refusal);
                }
                names.push(name);
            }
            Component::RootDir | Component::Prefix(_) => {
                return Err(format!(
                    "`{trimmed}` is an absolute path; give a path relative to the repository root."
                ))
            }
        }
    }
    Ok(names)
}

/// Why a path with the name `name` in it is refused, if it is.
fn refused(name: &str, path: &str) -> Option<String> {
    if name.split('\\').any(is_git) {
        return Some(git_refusal(path));
    }
    if name.split('\\').any(is_vouch) {
        return Some(format!(
            "`{path}` is inside `.vouch`, which is vouch's own and off limits; work on the project's files."
        ));
    }
    None
}

/// Whether a file system could take `name` for `.git`.
pub(crate) fn is_git(name: &str) -> bool {
    let n = folded(name);
    n == ".git"
        || n.strip_prefix("git~")
            .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
}

/// Whether a file system could take `name` for `.vouch`.
pub(crate) fn is_vouch(name: &str) -> bool {
    let n = folded(name);
    n == ".vouch"
        || n.strip_prefix("vouch~")
            .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
}

/// Whether a walk should skip an entry of this name (a name tools refuse).
pub(crate) fn is_reserved(name: &str) -> bool {
    name.split('\\').any(|n| is_git(n) || is_vouch(n))
}

/// The name as a case-insensitive, dot-and-space-trimming file system that ignores invisible characters
/// (Windows, macOS) would compare it.
fn folded(name: &str) -> String {
    let visible: String = name.chars().filter(|c| !ignorable(*c)).collect();
    visible.trim_end_matches(['.', ' ']).to_lowercase()
}

/// Characters that render as nothing and that HFS+ and other file systems drop when comparing names.
fn ignorable(c: char) -> bool {
    matches!(c,
        '\u{00AD}' | '\u{034F}' | '\u{061C}' | '\u{115F}' | '\u{1160}' | '\u{17B4}' | '\u{17B5}'
        | '\u{180B}'..='\u{180F}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}'
        | '\u{2060}'..='\u{206F}' | '\u{3164}' | '\u{FE00}'..='\u{FE0F}' | '\u{FEFF}' | '\u{FFA0}'
        | '\u{FFF0}'..='\u{FFF8}' | '\u{1BCA0}'..='\u{1BCA3}' | '\u{1D173}'..='\u{1D17A}'
        | '\u{E0000}'..='\u{E0FFF}')
}

fn git_refusal(rel: &str) -> String {
    format!("`{rel}` is inside `.git`, which is off limits; the agent works on the files of the worktree only.")
}
