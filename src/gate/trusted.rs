//! What the gate trusts to read later: the build of base, and the build layers of one change for that change.
//!
//! **The trusted cache** (`rooms/<repo>/base.cache`) is written only by base's own build: its setup, build
//! steps and the test steps' builds (no test runs), in the base room, when base is code on the repository's
//! default branch. Base's code is the user's own, already merged; a change's code never writes here. It is
//! the lowest layer of every role's cache, so head and bite compile only what differs from base. A record
//! beside it ([`Record`]) says which base it holds and when it was sealed; a lock says who uses it (shared by
//! every gate running over it, exclusive for the one build that moves it to a newer base: a gate that would
//! move it while others read it builds base in a layer of its own instead).
//!
//! Cargo judges a unit fresh when no source is newer than its output, by modification time. A room file whose
//! content differs from what the trusted build compiled must therefore be newer than that build: after a room
//! is checked out, [`freshen`] dates every file that differs from the record's tree (and every directory that
//! lost one) to now, if it is not newer already.
//!
//! **The change's layers** ([`Store`]): the build layers a gate of head made (setup, build, the test build,
//! the lint build) are kept by a key of the change's tree, the trusted cache's record and the profile, and
//! laid under the next gate of the same change, which then finds its build done. Only that change's own
//! gates read them: what a change's build scripts wrote can mislead no one but the change itself, and nothing
//! a test run writes is ever in them. The newest few are kept.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::gate::layered::LayerPair;

/// What the trusted cache holds.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    /// The base tree its build compiled.
    pub tree: String,
    /// What else the build depended on (the profile's steps and environment, the tools).
    pub fingerprint: String,
    /// Whether that build succeeded. After a failed one, no file can be assumed compiled from the record's tree.
    pub ok: bool,
    /// When it was sealed, in nanoseconds since the epoch: room files newer than this are never taken as built.
    pub sealed_ns: u128,
}

impl Record {
    /// Whether this record is base `tree` built with `fingerprint`: also when a step of that build failed
    /// (a base whose build or lint fails stays so; building it again in every gate would only cost time, and
    /// what it did build is as trustworthy as a whole build).
    pub fn holds(&self, tree: &str, fingerprint: &str) -> bool {
        !self.tree.is_empty() && self.tree == tree && self.fingerprint == fingerprint
    }

    pub fn sealed(&self) -> SystemTime {
        let secs = (self.sealed_ns / 1_000_000_000) as u64;
        let nanos = (self.sealed_ns % 1_000_000_000) as u32;
        SystemTime::UNIX_EPOCH + std::time::Duration::new(secs, nanos)
    }
}

/// A repository's trusted cache: its directory, record and lock.
#[derive(Debug)]
pub struct Trusted {
    dir: PathBuf,
}

/// A hold on the trusted cache: shared while a gate reads it, exclusive while base's build writes it.
#[derive(Debug)]
pub struct TrustedLock {
    file: File,
    exclusive: bool,
}

impl TrustedLock {
    pub fn exclusive(&self) -> bool {
        self.exclusive
    }

    /// From writing to reading: others may read once base's build is sealed.
    pub fn share(&mut self) -> Result<()> {
        if self.exclusive {
            self.file.unlock().context("unlock the trusted cache")?;
            self.file
                .lock_shared()
                .context("lock the trusted cache for reading")?;
            self.exclusive = false;
        }
        Ok(())
    }
}

impl Trusted {
    /// The trusted cache of the repository whose rooms are under `repo_dir`.
    pub fn new(repo_dir: &Path) -> Trusted {
        Trusted {
            dir: repo_dir.to_path_buf(),
        }
    }

    /// The cache directory itself.
    pub fn cache(&self) -> PathBuf {
        self.dir.join("base.cache")
    }

    fn record_path(&self) -> PathBuf {
        self.dir.join("trusted.json")
    }

    fn lock_file(&self) -> Result<File> {
        lock_file(&self.dir.join("trusted.lock"))
    }

    /// The record, or an empty one (nothing built) when there is none or it does not read.
    pub fn record(&self) -> Record {
        std::fs::read(self.record_path())
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default()
    }

    /// Writes the record (under the exclusive lock).
    pub fn set_record(&self, record: &Record) -> Result<()> {
        let path = self.record_path();
        let tmp = path.with_extension("json.tmp");
        std::fs::write(&tmp, serde_json::to_vec_pretty(record)?)
            .with_context(|| format!("write {}", tmp.display()))?;
        std::fs::rename(&tmp, &path).with_context(|| format!("write {}", path.display()))
    }

    /// The exclusive lock if nobody else holds the cache, else None.
    pub fn try_exclusive(&self) -> Result<Option<TrustedLock>> {
        let file = self.lock_file()?;
        match file.try_lock() {
            Ok(()) => Ok(Some(TrustedLock {
                file,
                exclusive: true,
            })),
            Err(std::fs::TryLockError::WouldBlock) => Ok(None),
            Err(std::fs::TryLockError::Error(e)) => {
                Err(anyhow::Error::new(e).context("lock the trusted cache"))
            }
        }
    }

    /// The shared lock: at once if no one writes the cache, else after `waiting` is called and the writer ends.
    pub fn shared(&self, waiting: impl FnOnce()) -> Result<TrustedLock> {
        let file = self.lock_file()?;
        match file.try_lock_shared() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                waiting();
                file.lock_shared()
                    .context("wait for the trusted cache to be built")?;
            }
            Err(std::fs::TryLockError::Error(e)) => {
                return Err(anyhow::Error::new(e).context("lock the trusted cache"))
            }
        }
        Ok(TrustedLock {
            file,
            exclusive: false,
        })
    }
}

/// The lock file at `path` (its directory made if need be), open for `flock`; never truncated.
pub fn lock_file(path: &Path) -> Result<File> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
    }
    File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .with_context(|| format!("open {}", path.display()))
}

/// Now, in nanoseconds since the epoch.
pub fn now_ns() -> u128 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

/// Dates to now every file of `room` (holding `tree`, of `repo`) whose content differs from `reference`'s, and
/// every directory that lost a file, when it is not newer than `sealed` already; with no reference (the
/// trusted build failed), every file. Returns how many it dated.
pub fn freshen(
    repo: &git2::Repository,
    room: &Path,
    tree: git2::Oid,
    reference: Option<git2::Oid>,
    sealed: SystemTime,
) -> Result<usize> {
    let new_tree = repo.find_tree(tree)?;
    let mut paths: Vec<PathBuf> = Vec::new();
    match reference {
        Some(old) => {
            let old_tree = repo.find_tree(old)?;
            let diff = repo.diff_tree_to_tree(Some(&old_tree), Some(&new_tree), None)?;
            for delta in diff.deltas() {
                if let Some(p) = delta.new_file().path() {
                    paths.push(p.to_path_buf());
                }
                if delta.status() == git2::Delta::Deleted || delta.status() == git2::Delta::Renamed
                {
                    if let Some(parent) = delta.old_file().path().and_then(Path::parent) {
                        paths.push(parent.to_path_buf());
                    }
                }
            }
        }
        None => {
            new_tree.walk(git2::TreeWalkMode::PreOrder, |dir, entry| {
                if let Some(name) = entry.name() {
                    paths.push(Path::new(dir).join(name));
                }
                git2::TreeWalkResult::Ok
            })?;
        }
    }
    let now = SystemTime::now();
    let mut dated = 0;
    for rel in paths {
        let full = room.join(&rel);
        let Ok(meta) = std::fs::symlink_metadata(&full) else {
            continue;
        };
        if meta.file_type().is_symlink() || meta.modified().is_ok_and(|m| m > sealed) {
            continue;
        }
        let file = File::options()
            .read(true)
            .open(&full)
            .with_context(|| format!("open {}", full.display()))?;
        file.set_modified(now)
            .with_context(|| format!("date {}", full.display()))?;
        dated += 1;
    }
    Ok(dated)
}

/// The build layers kept per change (see the module documentation), under `rooms/<repo>/layers/`.
#[derive(Debug)]
pub struct Store {
    dir: PathBuf,
}

/// Kept layers found for a change, held (shared) while a gate lays them under its own.
#[derive(Debug)]
pub struct Kept {
    pub layers: Vec<LayerPair>,
    _lock: File,
}

/// How many changes' layers are kept per repository.
pub const KEEP: usize = 4;

#[derive(Serialize, Deserialize)]
struct Manifest {
    /// Layer directory names, top first.
    layers: Vec<String>,
}

impl Store {
    pub fn new(repo_dir: &Path) -> Store {
        Store {
            dir: repo_dir.join("layers"),
        }
    }

    fn entry(&self, key: &str) -> PathBuf {
        self.dir.join(key)
    }

    fn lock(&self, key: &str) -> Result<File> {
        lock_file(&self.dir.join(format!("{key}.lock")))
    }

    /// The layers kept for `key`, held shared; None when there are none (or they are being removed).
    pub fn find(&self, key: &str) -> Result<Option<Kept>> {
        let entry = self.entry(key);
        let Ok(text) = std::fs::read(entry.join("manifest.json")) else {
            return Ok(None);
        };
        let Ok(manifest) = serde_json::from_slice::<Manifest>(&text) else {
            return Ok(None);
        };
        let lock = self.lock(key)?;
        if lock.try_lock_shared().is_err() {
            return Ok(None);
        }
        let layers: Vec<LayerPair> = manifest
            .layers
            .iter()
            .map(|name| LayerPair {
                dir: entry.join(name),
            })
            .collect();
        if layers.iter().any(|l| !l.dir.is_dir()) {
            return Ok(None);
        }
        // Touched so that the newest entries are the ones kept.
        if let Ok(f) = File::open(entry.join("manifest.json")) {
            let _ = f.set_modified(SystemTime::now());
        }
        Ok(Some(Kept {
            layers,
            _lock: lock,
        }))
    }

    /// Keeps `layers` (top first, sealed and no longer mounted) for `key`, when nothing is kept for it yet;
    /// then removes the oldest entries beyond [`KEEP`] that no gate holds.
    pub fn keep(&self, key: &str, layers: &[LayerPair]) -> Result<()> {
        let entry = self.entry(key);
        let lock = self.lock(key)?;
        if lock.try_lock().is_err() || entry.join("manifest.json").is_file() {
            return Ok(());
        }
        let staging = self
            .dir
            .join(format!("{key}.staging-{}", std::process::id()));
        remove_tree(&staging);
        remove_tree(&entry);
        std::fs::create_dir_all(&staging)
            .with_context(|| format!("create {}", staging.display()))?;
        let mut names = Vec::new();
        for (i, layer) in layers.iter().enumerate() {
            let name = format!("layer-{i}");
            std::fs::rename(&layer.dir, staging.join(&name))
                .with_context(|| format!("keep {}", layer.dir.display()))?;
            names.push(name);
        }
        std::fs::write(
            staging.join("manifest.json"),
            serde_json::to_vec(&Manifest { layers: names })?,
        )?;
        std::fs::rename(&staging, &entry).with_context(|| format!("keep {}", entry.display()))?;
        drop(lock);
        self.prune();
        Ok(())
    }

    /// Removes the oldest entries beyond [`KEEP`], skipping any a gate holds.
    fn prune(&self) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        let mut kept: Vec<(SystemTime, String)> = entries
            .flatten()
            .filter(|e| e.path().join("manifest.json").is_file())
            .filter_map(|e| {
                let modified = std::fs::metadata(e.path().join("manifest.json"))
                    .and_then(|m| m.modified())
                    .ok()?;
                Some((modified, e.file_name().to_string_lossy().into_owned()))
            })
            .collect();
        kept.sort();
        let excess = kept.len().saturating_sub(KEEP);
        for (_, key) in kept.into_iter().take(excess) {
            let Ok(lock) = self.lock(&key) else { continue };
            if lock.try_lock().is_ok() {
                remove_tree(&self.entry(&key));
                let _ = std::fs::remove_file(self.dir.join(format!("{key}.lock")));
            }
        }
    }
}

/// Removes a directory tree that may hold an overlay's work directory (which the kernel leaves without
/// permissions): permissions are given back first where a removal is refused.
pub fn remove_tree(dir: &Path) {
    if std::fs::symlink_metadata(dir).is_err() {
        return;
    }
    if std::fs::remove_dir_all(dir).is_ok() {
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    for entry in ignore::WalkBuilder::new(dir)
        .standard_filters(false)
        .build()
        .flatten()
    {
        if entry.file_type().is_some_and(|t| t.is_dir()) {
            let _ = std::fs::set_permissions(entry.path(), std::fs::Permissions::from_mode(0o700));
        }
    }
    if let Err(e) = std::fs::remove_dir_all(dir) {
        tracing::warn!("remove {}: {e}", dir.display());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo_with(files: &[(&str, &str)], dir: &Path) -> (git2::Repository, git2::Oid) {
        let repo = git2::Repository::init(dir).unwrap();
        let tree = tree_of(&repo, files);
        (repo, tree)
    }

    fn tree_of(repo: &git2::Repository, files: &[(&str, &str)]) -> git2::Oid {
        let mut index = git2::Index::new().unwrap();
        for (path, text) in files {
            let blob = repo.blob(text.as_bytes()).unwrap();
            let entry = git2::IndexEntry {
                ctime: git2::IndexTime::new(0, 0),
                mtime: git2::IndexTime::new(0, 0),
                dev: 0,
                ino: 0,
                mode: 0o100644,
                uid: 0,
                gid: 0,
                file_size: 0,
                id: blob,
                flags: 0,
                flags_extended: 0,
                path: path.as_bytes().to_vec(),
            };
            index.add(&entry).unwrap();
        }
        index.write_tree_to(repo).unwrap()
    }

    #[test]
    fn only_files_that_differ_from_the_trusted_build_and_are_not_newer_are_dated_now() {
        let tmp = tempfile::tempdir().unwrap();
        let (repo, base) = repo_with(&[("a.rs", "1"), ("b.rs", "1")], &tmp.path().join("repo"));
        let head = tree_of(&repo, &[("a.rs", "2"), ("b.rs", "1"), ("c.rs", "new")]);
        let room = tmp.path().join("room");
        std::fs::create_dir_all(&room).unwrap();
        let old = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000);
        for (name, text) in [("a.rs", "2"), ("b.rs", "1"), ("c.rs", "new")] {
            std::fs::write(room.join(name), text).unwrap();
            File::options()
                .write(true)
                .open(room.join(name))
                .unwrap()
                .set_modified(old)
                .unwrap();
        }
        let sealed = old + std::time::Duration::from_secs(10);
        let dated = freshen(&repo, &room, head, Some(base), sealed).unwrap();
        assert_eq!(dated, 2);
        let mtime = |n: &str| std::fs::metadata(room.join(n)).unwrap().modified().unwrap();
        assert!(mtime("a.rs") > sealed && mtime("c.rs") > sealed);
        assert_eq!(mtime("b.rs"), old);
        // Dated once is newer than the seal: a second pass dates nothing.
        assert_eq!(freshen(&repo, &room, head, Some(base), sealed).unwrap(), 0);
        // Without a reference (the trusted build failed) every file older than the seal is dated.
        assert_eq!(freshen(&repo, &room, head, None, sealed).unwrap(), 1);
    }

    #[test]
    fn kept_layers_are_found_by_key_and_the_oldest_go() {
        let tmp = tempfile::tempdir().unwrap();
        let store = Store::new(tmp.path());
        for i in 0..(KEEP + 2) {
            let dir = tmp.path().join(format!("scratch/layer-{i}"));
            std::fs::create_dir_all(dir.join("room/files")).unwrap();
            std::fs::write(dir.join("room/files/x"), format!("{i}")).unwrap();
            store
                .keep(&format!("key{i}"), &[LayerPair { dir: dir.clone() }])
                .unwrap();
            assert!(!dir.exists(), "moved into the store");
        }
        let found = store.find(&format!("key{}", KEEP + 1)).unwrap().unwrap();
        assert_eq!(
            std::fs::read_to_string(found.layers[0].room_files().join("x")).unwrap(),
            format!("{}", KEEP + 1)
        );
        let kept = (0..(KEEP + 2))
            .filter(|i| tmp.path().join(format!("layers/key{i}")).is_dir())
            .count();
        assert_eq!(kept, KEEP);
        assert!(store.find("key0").unwrap().is_none());
    }
}
