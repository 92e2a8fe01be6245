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
//!
//! A reused room is never trusted blindly: when it does not hold together (its HEAD names a commit the
//! repository no longer has because the repository was re-created at the same path, objects are missing, the
//! index or HEAD was left half-written by a crash, its git directory points elsewhere), preparing it fails, and
//! the room is wiped and built again from nothing. Only a failure of the fresh room is an error.

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
    /// What the room holds, kept to build it again when a reset finds it inconsistent.
    target: Target,
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
        let mut room = Room {
            dir,
            commit: Oid::zero(),
            target,
            preserve: preserve.to_vec(),
            _lock: lock,
            _temp: temp,
        };
        room.commit = room.reset(objects)?;
        Ok(room)
    }

    /// A room already holding `commit` at `dir`, used as it is: not reset, not locked (its owner holds it; the
    /// gate's trusted base room, read under the trusted cache's lock).
    pub fn borrowed(dir: &Path, commit: Oid) -> Room {
        Room {
            dir: dir.to_path_buf(),
            commit,
            target: Target::Commit(commit),
            preserve: Vec::new(),
            _lock: None,
            _temp: None,
        }
    }

    /// Whether the room is the cached one it was asked for (not a temporary one, taken because that was busy).
    pub fn is_at(&self, dir: &Path) -> bool {
        self.dir == dir
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

    /// Makes the room hold exactly the commit's tree (plus preserved paths); a room that does not hold
    /// together is wiped and built again.
    /// Returns the commit it holds (an overlay's is the same every time: its signature and time are fixed).
    fn reset(&self, objects: &Path) -> Result<Oid> {
        let first = match self.try_reset(objects) {
            Ok(commit) => return Ok(commit),
            Err(e) => e,
        };
        tracing::info!(
            "room {} is inconsistent ({first:#}); building it again",
            self.dir.display()
        );
        self.wipe()?;
        self.try_reset(objects).with_context(|| {
            format!(
                "build room {} again (it was inconsistent: {first:#})",
                self.dir.display()
            )
        })
    }

    /// One attempt at [`Room::reset`]: the room's repository linked to the user's objects, its commit (an
    /// overlay's written to the room's own store), and the commit checked out.
    fn try_reset(&self, objects: &Path) -> Result<Oid> {
        let repo = init_repo(&self.dir, objects)?;
        check_consistent(&repo, &self.dir)?;
        let id = match &self.target {
            Target::Commit(commit) => *commit,
            Target::Overlay { base, files } => synthetic_commit(&repo, *base, files)?,
            Target::Alike { base, commit } => {
                let tree = repo
                    .find_commit(*commit)
                    .with_context(|| format!("commit {commit} is not in the repository"))?
                    .tree()?;
                alike_commit(&repo, *base, &tree)?
            }
        };
        let commit = repo
            .find_commit(id)
            .with_context(|| format!("commit {id} is not in the repository"))?;
        // Check out first, then move HEAD: the old HEAD is the baseline, so files it had and the commit
        // lacks are removed, and files equal in both are not rewritten (their mtimes stay, builds stay warm).
        let mut co = CheckoutBuilder::new();
        co.force();
        repo.checkout_tree(commit.as_object(), Some(&mut co))
            .with_context(|| format!("check out {id} in {}", self.dir.display()))?;
        repo.set_head_detached(id)?;
        self.remove_strays(&repo)?;
        Ok(id)
    }

    /// Empties the room's directory, its repository included (the lock file lives beside it).
    fn wipe(&self) -> Result<()> {
        let entries = std::fs::read_dir(&self.dir)
            .with_context(|| format!("read room {}", self.dir.display()))?;
        for entry in entries {
            let path = entry
                .with_context(|| format!("read room {}", self.dir.display()))?
                .path();
            let res = match std::fs::symlink_metadata(&path) {
                Ok(m) if m.is_dir() => std::fs::remove_dir_all(&path),
                Ok(_) => std::fs::remove_file(&path),
                Err(_) => continue,
            };
            res.with_context(|| format!("remove {}", path.display()))?;
        }
        Ok(())
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
        self.drift_at(&self.dir)
    }

    /// [`Room::drift`] of the room as seen at `dir` (a view of it with what a step wrote on top).
    pub fn drift_at(&self, dir: &Path) -> Result<Vec<(String, DriftKind)>> {
        let repo = Repository::open(dir).with_context(|| format!("open room {}", dir.display()))?;
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
        self.reset(objects).map(|_| ())
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
    /// A commit's tree as a commit on `base` with the same metadata as every overlay's (head's room, which
    /// must look like the bite room to the code it runs).
    Alike { base: Oid, commit: Oid },
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

/// Checks what a reused room could get wrong before anything is checked out: its repository is the room's
/// own (not bare, its work tree the room), and its HEAD is unborn or names a commit whose tree is there.
fn check_consistent(repo: &Repository, dir: &Path) -> Result<()> {
    let workdir = repo
        .workdir()
        .and_then(|w| w.canonicalize().ok())
        .context("the room's repository has no work tree")?;
    let dir = dir
        .canonicalize()
        .with_context(|| format!("find room {}", dir.display()))?;
    anyhow::ensure!(
        workdir == dir,
        "the room's repository works in {}",
        workdir.display()
    );
    match repo.head() {
        Ok(head) => {
            let commit = head
                .peel_to_commit()
                .context("the room's HEAD does not name a commit of the repository")?;
            commit
                .tree()
                .context("the tree of the room's HEAD is missing")?;
        }
        Err(e) if e.code() == git2::ErrorCode::UnbornBranch => {}
        Err(e) => return Err(anyhow::Error::new(e).context("read the room's HEAD")),
    }
    repo.index().context("read the room's index")?;
    Ok(())
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
            // Absent: removed where base has it; a file base lacks (one the change added, taken out
            // again) is absent already, and git2 refuses to remove it.
            None if base_tree.get_path(Path::new(path)).is_ok() => {
                update.remove(path.as_str());
            }
            None => {}
        }
    }
    let tree_id = update.create_updated(repo, &base_tree)?;
    let tree = repo.find_tree(tree_id)?;
    alike_commit(repo, base, &tree)
}

/// A commit of `tree` on `base` in the room's own store, with the signature, time and message every such
/// room commit has: the same tree gives the same commit id, run after run, and a room holding the change
/// cannot be told from one holding it without its production code by what git says of its HEAD.
fn alike_commit(repo: &Repository, base: Oid, tree: &git2::Tree<'_>) -> Result<Oid> {
    let base_commit = repo
        .find_commit(base)
        .with_context(|| format!("commit {base} is not in the repository"))?;
    let sig = git2::Signature::new("vouch", "vouch@localhost", &git2::Time::new(0, 0))?;
    let commit = repo.commit(
        None,
        &sig,
        &sig,
        "vouch: the change under test",
        tree,
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A user's repository with one commit per entry of `contents` (each the whole text of `a.txt`), in order.
    fn user_repo(dir: &Path, contents: &[&str]) -> (Repository, Vec<Oid>) {
        let repo = Repository::init(dir).unwrap();
        let sig = git2::Signature::new("t", "t@example.com", &git2::Time::new(0, 0)).unwrap();
        let mut ids: Vec<Oid> = Vec::new();
        for text in contents {
            let blob = repo.blob(text.as_bytes()).unwrap();
            let mut tb = repo.treebuilder(None).unwrap();
            tb.insert("a.txt", blob, 0o100644).unwrap();
            let tree = repo.find_tree(tb.write().unwrap()).unwrap();
            let parent = ids.last().map(|id| repo.find_commit(*id).unwrap());
            let parents: Vec<&git2::Commit> = parent.iter().collect();
            ids.push(
                repo.commit(None, &sig, &sig, text, &tree, &parents)
                    .unwrap(),
            );
        }
        (repo, ids)
    }

    fn open(objects: &Path, commit: Oid, dir: &Path) -> Result<Room> {
        Room::open(
            objects,
            Target::Commit(commit),
            Placement::Cached(dir.to_path_buf()),
            &[],
        )
    }

    fn text(room: &Room) -> String {
        std::fs::read_to_string(room.dir().join("a.txt")).unwrap()
    }

    #[test]
    fn a_cached_room_is_reset_to_the_next_commit_and_strays_go() {
        let tmp = tempfile::tempdir().unwrap();
        let (repo, ids) = user_repo(&tmp.path().join("user"), &["one", "two"]);
        let objects = repo.path().join("objects");
        let dir = tmp.path().join("rooms/head");
        let room = open(&objects, ids[0], &dir).unwrap();
        assert_eq!(text(&room), "one");
        std::fs::write(dir.join("stray"), "x").unwrap();
        drop(room);
        let room = open(&objects, ids[1], &dir).unwrap();
        assert_eq!((text(&room), room.commit()), ("two".to_owned(), ids[1]));
        assert!(!dir.join("stray").exists());
    }

    #[test]
    fn a_room_whose_head_is_gone_from_a_recreated_repository_is_rebuilt() {
        let tmp = tempfile::tempdir().unwrap();
        let user = tmp.path().join("user");
        let (repo, ids) = user_repo(&user, &["one", "two"]);
        let dir = tmp.path().join("rooms/head");
        drop(open(&repo.path().join("objects"), ids[1], &dir).unwrap());
        drop(repo);
        std::fs::remove_dir_all(&user).unwrap();
        let (repo, ids) = user_repo(&user, &["other", "history"]);
        let room = open(&repo.path().join("objects"), ids[1], &dir).unwrap();
        assert_eq!(text(&room), "history");
    }

    #[test]
    fn a_room_linked_to_other_objects_or_half_written_is_rebuilt() {
        let tmp = tempfile::tempdir().unwrap();
        let (repo, ids) = user_repo(&tmp.path().join("user"), &["one", "two"]);
        let (other, other_ids) = user_repo(&tmp.path().join("other"), &["elsewhere"]);
        let objects = repo.path().join("objects");
        let dir = tmp.path().join("rooms/head");
        // A room that last held a commit of another repository (its alternates point there).
        drop(open(&other.path().join("objects"), other_ids[0], &dir).unwrap());
        let room = open(&objects, ids[0], &dir).unwrap();
        assert_eq!(text(&room), "one");
        drop(room);
        // A crash left HEAD and the index half-written.
        std::fs::write(dir.join(".git/HEAD"), "").unwrap();
        std::fs::write(dir.join(".git/index"), "DIRC").unwrap();
        let room = open(&objects, ids[1], &dir).unwrap();
        assert_eq!(text(&room), "two");
        drop(room);
        // A crash before the repository was made: files, and no .git.
        std::fs::remove_dir_all(dir.join(".git")).unwrap();
        std::fs::write(dir.join("a.txt"), "half").unwrap();
        let room = open(&objects, ids[0], &dir).unwrap();
        assert_eq!(text(&room), "one");
    }

    #[test]
    fn a_room_whose_repository_works_elsewhere_is_rebuilt() {
        let tmp = tempfile::tempdir().unwrap();
        let (repo, ids) = user_repo(&tmp.path().join("user"), &["one"]);
        let objects = repo.path().join("objects");
        let dir = tmp.path().join("rooms/head");
        drop(open(&objects, ids[0], &dir).unwrap());
        let elsewhere = tmp.path().join("elsewhere");
        std::fs::create_dir_all(&elsewhere).unwrap();
        let room_repo = Repository::open(&dir).unwrap();
        room_repo
            .config()
            .unwrap()
            .set_str("core.worktree", elsewhere.to_str().unwrap())
            .unwrap();
        drop(room_repo);
        let room = open(&objects, ids[0], &dir).unwrap();
        assert_eq!(text(&room), "one");
        assert!(!elsewhere.join("a.txt").exists());
    }

    #[test]
    fn an_overlay_room_gives_the_same_commit_after_a_rebuild() {
        let tmp = tempfile::tempdir().unwrap();
        let (repo, ids) = user_repo(&tmp.path().join("user"), &["one"]);
        let objects = repo.path().join("objects");
        let dir = tmp.path().join("rooms/bite");
        let overlay = || Target::Overlay {
            base: ids[0],
            files: vec![(
                "b.txt".to_owned(),
                Some(OverlayFile {
                    content: b"new".to_vec(),
                    executable: false,
                }),
            )],
        };
        let placement = Placement::Cached(dir.clone());
        let first = Room::open(&objects, overlay(), placement.clone(), &[]).unwrap();
        let commit = first.commit();
        drop(first);
        std::fs::write(dir.join(".git/HEAD"), "garbage").unwrap();
        let room = Room::open(&objects, overlay(), placement, &[]).unwrap();
        assert_eq!(room.commit(), commit);
        assert_eq!(std::fs::read_to_string(dir.join("b.txt")).unwrap(), "new");
    }
}
