//! Clean rooms: a directory holding exactly one commit's tree, where the gate builds and tests.
//!
//! A room is its own tiny git repository that borrows the user's objects through `objects/info/alternates`
//! (what `git clone --shared` does) and checks out the commit with a detached HEAD. Unlike `git worktree add`,
//! this writes nothing into the user's repository: no worktree registration, no lock, no ref, so an interrupted
//! gate cannot leave anything behind there. The room still has a real `.git`, so tools that ask git questions work.
//!
//! Rooms are reused between runs by default (one per repository and role, in the cache, behind a lock file):
//! resetting a room rewrites only the files that differ and deletes everything untracked or ignored except the
//! profile's `preserve` paths, so the tree is exact while incremental build caches keep working. `--fresh-rooms`
//! uses a temporary directory instead; `--keep` puts rooms under `workspaces/` and leaves them there.

use std::fs::File;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use git2::{build::CheckoutBuilder, Oid, Repository, Status, StatusOptions};

/// Where a room lives and what happens to it afterwards.
#[derive(Clone, Debug)]
pub enum Placement {
    /// Reused between runs; locked while in use. Falls back to a temporary room when locked.
    Cached(PathBuf),
    /// A new temporary directory, removed when the room is dropped.
    Temp,
    /// A directory that is kept afterwards (`--keep`).
    Kept(PathBuf),
}

/// A checked-out commit in a directory of its own.
pub struct Room {
    dir: PathBuf,
    commit: Oid,
    preserve: Vec<String>,
    _lock: Option<File>,
    _temp: Option<tempfile::TempDir>,
}

impl std::fmt::Debug for Room {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Room")
            .field("dir", &self.dir)
            .field("commit", &self.commit)
            .finish()
    }
}

impl Room {
    /// Prepares a room holding `commit` from the repository whose objects are at `objects`.
    /// `preserve` names top-level paths (like `target`) that survive a reset.
    pub fn open(
        objects: &Path,
        target: Target,
        placement: Placement,
        preserve: &[String],
    ) -> Result<Room> {
        let (dir, lock, temp) = match placement {
            Placement::Cached(dir) => {
                std::fs::create_dir_all(&dir)
                    .with_context(|| format!("create room {}", dir.display()))?;
                let lock_path = dir.with_extension("lock");
                let lock = File::create(&lock_path)
                    .with_context(|| format!("create lock {}", lock_path.display()))?;
                match lock.try_lock() {
                    Ok(()) => (dir, Some(lock), None),
                    Err(_) => {
                        tracing::info!(
                            "room {} is in use by another gate; using a temporary one",
                            dir.display()
                        );
                        let temp = tempdir()?;
                        (temp.path().to_path_buf(), None, Some(temp))
                    }
                }
            }
            Placement::Temp => {
                let temp = tempdir()?;
                (temp.path().to_path_buf(), None, Some(temp))
            }
            Placement::Kept(dir) => {
                std::fs::create_dir_all(&dir)
                    .with_context(|| format!("create room {}", dir.display()))?;
                (dir, None, None)
            }
        };
        let commit = match target {
            Target::Commit(commit) => commit,
            Target::Overlay { base, files } => {
                let repo = init_repo(&dir, objects)?;
                synthetic_commit(&repo, base, &files)?
            }
        };
        let room = Room {
            dir,
            commit,
            preserve: preserve.to_vec(),
            _lock: lock,
            _temp: temp,
        };
        room.reset(objects)?;
        Ok(room)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn commit(&self) -> Oid {
        self.commit
    }

    fn repo(&self) -> Result<Repository> {
        Repository::open(&self.dir).with_context(|| format!("open room {}", self.dir.display()))
    }

    /// Makes the room hold exactly the commit's tree (plus preserved paths).
    fn reset(&self, objects: &Path) -> Result<()> {
        let repo = init_repo(&self.dir, objects)?;
        let commit = repo
            .find_commit(self.commit)
            .with_context(|| format!("commit {} is not in the repository", self.commit))?;
        // Check out first, then move HEAD: the old HEAD is the baseline, so files it had and the commit
        // lacks are removed, and files equal in both are not rewritten (their mtimes stay, builds stay warm).
        let mut co = CheckoutBuilder::new();
        co.force();
        repo.checkout_tree(commit.as_object(), Some(&mut co))
            .with_context(|| format!("check out {} in {}", self.commit, self.dir.display()))?;
        repo.set_head_detached(self.commit)?;
        self.remove_strays(&repo)
    }

    /// Deletes untracked and ignored files, except preserved top-level paths.
    fn remove_strays(&self, repo: &Repository) -> Result<()> {
        for path in self.strays(repo, true)? {
            let full = self.dir.join(&path);
            let meta = match std::fs::symlink_metadata(&full) {
                Ok(m) => m,
                Err(_) => continue,
            };
            let res = if meta.is_dir() {
                std::fs::remove_dir_all(&full)
            } else {
                std::fs::remove_file(&full)
            };
            res.with_context(|| format!("clean {}", full.display()))?;
        }
        Ok(())
    }

    fn preserved(&self, path: &str) -> bool {
        let top = path.trim_end_matches('/');
        self.preserve.iter().any(|p| top == p.trim_end_matches('/'))
    }

    /// Untracked (and with `ignored`, ignored) paths, directories not descended into.
    fn strays(&self, repo: &Repository, ignored: bool) -> Result<Vec<String>> {
        let mut opts = StatusOptions::new();
        opts.include_untracked(true)
            .recurse_untracked_dirs(false)
            .include_ignored(ignored)
            .recurse_ignored_dirs(false)
            .exclude_submodules(true);
        let statuses = repo.statuses(Some(&mut opts))?;
        Ok(statuses
            .iter()
            .filter(|s| s.status().intersects(Status::WT_NEW | Status::IGNORED))
            .filter_map(|s| s.path().map(str::to_owned))
            .filter(|p| !self.preserved(p))
            .collect())
    }

    /// Files that differ from the commit: modified, deleted or new (not ignored), with paths.
    pub fn drift(&self) -> Result<Vec<(String, DriftKind)>> {
        let repo = self.repo()?;
        let mut opts = StatusOptions::new();
        opts.include_untracked(true)
            .recurse_untracked_dirs(true)
            .include_ignored(false)
            .exclude_submodules(true);
        let statuses = repo.statuses(Some(&mut opts))?;
        let mut out = Vec::new();
        for s in statuses.iter() {
            let Some(path) = s.path() else { continue };
            if self.preserved(path.split('/').next().unwrap_or(path)) {
                continue;
            }
            let st = s.status();
            let kind = if st.contains(Status::WT_NEW) {
                DriftKind::Added
            } else if st.contains(Status::WT_DELETED) {
                DriftKind::Deleted
            } else if st
                .intersects(Status::WT_MODIFIED | Status::WT_TYPECHANGE | Status::WT_RENAMED)
            {
                DriftKind::Modified
            } else {
                continue;
            };
            out.push((path.to_owned(), kind));
        }
        out.sort();
        Ok(out)
    }

    /// The committed text of a path in the room's commit.
    pub fn committed_text(&self, path: &str) -> Option<String> {
        let repo = self.repo().ok()?;
        crate::git::file_text(&repo, self.commit, path)
    }

    /// Puts the tree back to the commit (after a step that writes, like a code generator).
    pub fn restore(&self, objects: &Path) -> Result<()> {
        self.reset(objects)
    }
}

/// What a room holds.
#[derive(Clone, Debug)]
pub enum Target {
    /// A commit of the user's repository.
    Commit(Oid),
    /// A commit's tree with some files replaced (`Some`) or removed (`None`): the bite check's reverted tree.
    /// The tree and a commit for it are written to the room's own object store, never to the user's.
    Overlay {
        base: Oid,
        files: Vec<(String, Option<OverlayFile>)>,
    },
}

/// A file's content and mode in an overlay.
#[derive(Clone, Debug)]
pub struct OverlayFile {
    pub content: Vec<u8>,
    pub executable: bool,
}

/// Opens (or creates) the room's repository and points its alternates at the user's objects.
fn init_repo(dir: &Path, objects: &Path) -> Result<Repository> {
    let repo = match Repository::open(dir) {
        Ok(repo) => repo,
        Err(_) => Repository::init(dir)
            .with_context(|| format!("create room repository in {}", dir.display()))?,
    };
    std::fs::create_dir_all(repo.path().join("objects/info"))?;
    let objects = objects
        .canonicalize()
        .with_context(|| format!("find objects {}", objects.display()))?;
    let alternates = repo.path().join("objects/info/alternates");
    let want = format!("{}\n", objects.display());
    if std::fs::read_to_string(&alternates).ok().as_deref() != Some(want.as_str()) {
        std::fs::write(&alternates, want).context("link room to the repository's objects")?;
    }
    // Reopen so libgit2 sees the alternates.
    Repository::open(dir).with_context(|| format!("open room {}", dir.display()))
}

/// Writes base's tree with the overlay applied, and a commit of it, into the room's object store.
fn synthetic_commit(
    repo: &Repository,
    base: Oid,
    files: &[(String, Option<OverlayFile>)],
) -> Result<Oid> {
    let base_commit = repo
        .find_commit(base)
        .with_context(|| format!("commit {base} is not in the repository"))?;
    let base_tree = base_commit.tree()?;
    let mut update = git2::build::TreeUpdateBuilder::new();
    for (path, file) in files {
        match file {
            Some(f) => {
                let blob = repo.blob(&f.content)?;
                let mode = if f.executable {
                    git2::FileMode::BlobExecutable
                } else {
                    git2::FileMode::Blob
                };
                update.upsert(path.as_str(), blob, mode);
            }
            None => {
                update.remove(path.as_str());
            }
        }
    }
    let tree_id = update.create_updated(repo, &base_tree)?;
    let tree = repo.find_tree(tree_id)?;
    // A fixed signature and time: the same overlay gives the same commit id, run after run.
    let sig = git2::Signature::new("vouch", "vouch@localhost", &git2::Time::new(0, 0))?;
    let commit = repo.commit(
        None,
        &sig,
        &sig,
        "vouch: reverted tree",
        &tree,
        &[&base_commit],
    )?;
    Ok(commit)
}

/// How a file drifted from the commit.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum DriftKind {
    Added,
    Modified,
    Deleted,
}

fn tempdir() -> Result<tempfile::TempDir> {
    tempfile::Builder::new()
        .prefix("vouch-room-")
        .tempdir()
        .context("create a temporary room")
}
