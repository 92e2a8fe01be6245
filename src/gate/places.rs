//! Where one gate run puts things, per role (head, base, bite): the room, the build cache and the step logs,
//! and opening a room there.
//!
//! Cached rooms and caches live under `<cache>/rooms/<repo key>/<role>` so build tools' incremental output
//! survives between runs; `--keep` puts rooms and logs under `workspaces/gate-<head>` for the user to inspect
//! (under `<cache>/kept/<repo>/` when `workspaces/` would be inside the checkout);
//! `--fresh-rooms` uses temporary rooms. Logs always start empty, so a report never points at an old run's,
//! and two gates of one head at once write logs of their own (`<head>-2`).
//!
//! Build output is shared between the roles of one repository where the build tool's own fingerprints make
//! that safe. For cargo that is the dependencies only: a workspace member's artifacts are named by a hash of
//! its path *relative to the workspace*, so two rooms of one repository would write the same files, and cargo
//! judges them fresh by modification times alone, so one room would run another's build (measured: a room
//! whose sources are older than another room's build reuses it). Registry and git dependencies are named by
//! their version, source and flags, never by the room: before a role builds for the first time, its target
//! directories get the head role's dependency artifacts as hard links ([`seed_dependencies`]).

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::{Context, Result};

use crate::gate::steps::StepEnv;
use crate::gate::{Options, Prepared};
use crate::room::{OverlayFile, Placement, Room, Target};

/// The places a gate run uses for one role (head, base, bite).
pub(super) struct Places {
    pub room: Placement,
    pub cache: PathBuf,
    pub logs: PathBuf,
    /// The repository's own directory (`<cache>/rooms/<key>`): its shared environments, whatever the room.
    pub shared: PathBuf,
}

/// The places of `role`, its step logs under `logs_name` (two runs in one room keep their logs apart); `seed` says whether a role other than head gets head's dependency artifacts.
pub(super) fn places_seeded(
    opts: &Options,
    prep: &Prepared,
    role: &str,
    logs_name: &str,
    seed: bool,
) -> Result<Places> {
    let mut places = layout(opts, &prep.repo_key, &prep.head.sha, role, logs_name);
    if !opts.keep {
        // Another gate of the same head at once has its own step logs.
        if let (Some(run), Some(name)) = (places.logs.parent(), places.logs.file_name()) {
            places.logs = own_logs(run)?.join(name);
        }
    }
    if seed && role != "head" {
        let head = layout(opts, &prep.repo_key, &prep.head.sha, "head", "head");
        let seeded = seed_dependencies(&head.cache, &places.cache);
        if seeded > 0 {
            tracing::debug!(
                "{role}: {seeded} dependency artifacts linked from {}",
                head.cache.display()
            );
        }
    }
    std::fs::create_dir_all(&places.cache)
        .with_context(|| format!("create {}", places.cache.display()))?;
    if places.logs.exists() {
        let _ = std::fs::remove_dir_all(&places.logs);
    }
    std::fs::create_dir_all(&places.logs)
        .with_context(|| format!("create {}", places.logs.display()))?;
    Ok(places)
}

/// Where `--keep` puts rooms: `opts.workspaces` (`workspaces/` of the current directory), unless that lies
/// inside the repository's work tree, where the rooms would show in the user's `git status`: then
/// `<cache>/kept/<repo-key>/`.
fn kept_root(opts: &Options, repo_key: &str) -> PathBuf {
    let outside = opts.cache.join("kept").join(repo_key);
    let absolute =
        std::path::absolute(&opts.workspaces).unwrap_or_else(|_| opts.workspaces.clone());
    let Some(work_tree) = git2::Repository::discover(&opts.repo)
        .ok()
        .and_then(|r| r.workdir().map(Path::to_path_buf))
    else {
        return absolute;
    };
    let work_tree = work_tree.canonicalize().unwrap_or(work_tree);
    if real_path(&absolute).starts_with(&work_tree) {
        outside
    } else {
        absolute
    }
}

/// `path` with its longest existing ancestor resolved (symbolic links, `..`), the rest appended.
fn real_path(path: &Path) -> PathBuf {
    let mut rest = Vec::new();
    let mut cur = path;
    loop {
        if let Ok(real) = cur.canonicalize() {
            return rest.iter().rev().fold(real, |p, c| p.join(c));
        }
        match (cur.parent(), cur.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                cur = parent;
            }
            _ => return path.to_path_buf(),
        }
    }
}

/// The step logs directory of this run for `wanted` (`logs/<repo>/<head>`): that one, locked for the
/// process's life, unless another process holds it; then `<head>-2`, `-3`, ... The same answer for every
/// role of the run.
fn own_logs(wanted: &Path) -> Result<PathBuf> {
    static TAKEN: Mutex<Vec<(PathBuf, PathBuf, File)>> = Mutex::new(Vec::new());
    let mut taken = TAKEN
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((_, dir, _)) = taken.iter().find(|(w, _, _)| w == wanted) {
        return Ok(dir.clone());
    }
    let parent = wanted.parent().unwrap_or(wanted);
    std::fs::create_dir_all(parent).with_context(|| format!("create {}", parent.display()))?;
    let name = wanted
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    for n in 1.. {
        let dir = if n == 1 {
            wanted.to_path_buf()
        } else {
            parent.join(format!("{name}-{n}"))
        };
        let lock_path = parent.join(format!(
            "{}.lock",
            dir.file_name().unwrap_or_default().to_string_lossy()
        ));
        let lock = crate::gate::trusted::lock_file(&lock_path)?;
        if lock.try_lock().is_ok() {
            taken.push((wanted.to_path_buf(), dir.clone(), lock));
            return Ok(dir);
        }
    }
    unreachable!("an unbounded range ends")
}

/// The directory of one gate run's logs, every role's under it (this run's own, see [`own_logs`]).
pub fn run_logs(opts: &Options, prep: &Prepared) -> PathBuf {
    let head = layout(opts, &prep.repo_key, &prep.head.sha, "head", "head");
    let dir = head
        .logs
        .parent()
        .map_or(head.logs.clone(), Path::to_path_buf);
    if opts.keep {
        return dir;
    }
    own_logs(&dir).unwrap_or(dir)
}

/// The paths of a role, all absolute (steps run inside the room), without touching the disk.
fn layout(opts: &Options, repo_key: &str, head_sha: &str, role: &str, logs_name: &str) -> Places {
    let short = &head_sha[..head_sha.len().min(12)];
    let repo_dir = opts.cache.join("rooms").join(repo_key);
    let run_logs = || {
        opts.cache
            .join("logs")
            .join(repo_key)
            .join(short)
            .join(logs_name)
    };
    let (room, logs) = if opts.keep {
        let dir = kept_root(opts, repo_key).join(format!("gate-{short}"));
        (
            Placement::Kept(dir.join(role)),
            dir.join("logs").join(logs_name),
        )
    } else if opts.fresh_rooms {
        (Placement::Temp, run_logs())
    } else {
        (Placement::Cached(repo_dir.join(role)), run_logs())
    };
    let absolute = |p: PathBuf| std::path::absolute(&p).unwrap_or(p);
    let room = match room {
        Placement::Cached(d) => Placement::Cached(absolute(d)),
        Placement::Kept(d) => Placement::Kept(absolute(d)),
        Placement::Temp => Placement::Temp,
    };
    Places {
        room,
        cache: absolute(repo_dir.join(format!("{role}.cache"))),
        logs: absolute(logs),
        shared: absolute(repo_dir),
    }
}

/// A room holding head's tree as a commit on base that looks like the bite room's (see [`Target::Alike`]).
pub(super) async fn open_head_room(prep: &Prepared, placement: Placement) -> Result<Room> {
    let objects = prep.objects.clone();
    let commit = git2::Oid::from_str(&prep.head.sha)?;
    let base = git2::Oid::from_str(&prep.base.sha)?;
    let preserve = prep.profile.room.preserve.clone();
    tokio::task::spawn_blocking(move || {
        Room::open(
            &objects,
            Target::Alike { base, commit },
            placement,
            &preserve,
        )
    })
    .await
    .context("room task")?
}

/// A room holding commit `sha`.
pub(super) async fn open_room(prep: &Prepared, sha: &str, placement: Placement) -> Result<Room> {
    let objects = prep.objects.clone();
    let oid = git2::Oid::from_str(sha)?;
    let preserve = prep.profile.room.preserve.clone();
    tokio::task::spawn_blocking(move || {
        Room::open(&objects, Target::Commit(oid), placement, &preserve)
    })
    .await
    .context("room task")?
}

/// A room holding base with `files` laid over it, at `placement`.
pub(super) async fn open_overlay_room_at(
    prep: &Prepared,
    files: Vec<(String, Option<OverlayFile>)>,
    placement: Placement,
) -> Result<Room> {
    let objects = prep.objects.clone();
    let base = git2::Oid::from_str(&prep.base.sha)?;
    let preserve = prep.profile.room.preserve.clone();
    tokio::task::spawn_blocking(move || {
        Room::open(
            &objects,
            Target::Overlay { base, files },
            placement,
            &preserve,
        )
    })
    .await
    .context("room task")?
}

/// Links the dependency artifacts of every cargo target directory under `from` (a role's cache) into the same
/// place under `to`, unit by unit, where `to` does not have the unit yet. Returns how many files it linked.
///
/// A unit is a dependency when its dep-info lists sources under cargo's registry or git checkouts (workspace
/// members list paths relative to their package). Its fingerprint directory is copied (cargo rewrites those
/// files in place); its compiled files and build-script output are hard-linked (rustc and the linker replace
/// an output instead of writing into it), falling back to a copy across file systems. Errors only cost the
/// sharing: the role then builds the dependency itself.
pub(super) fn seed_dependencies(from: &Path, to: &Path) -> usize {
    let mut linked = 0;
    let Ok(entries) = std::fs::read_dir(from) else {
        return 0;
    };
    for entry in entries.flatten() {
        let dir = entry.path();
        if !dir.join("CACHEDIR.TAG").is_file() {
            continue;
        }
        for profile in profile_dirs(&dir) {
            let Ok(rel) = profile.strip_prefix(from) else {
                continue;
            };
            linked += seed_profile(&profile, &to.join(rel));
        }
    }
    linked
}

/// Links the dependency artifacts of cargo target directory `from` into target directory `to` (a step's
/// own, see [`clippy`](crate::gate::clippy)), as [`seed_dependencies`] does for a role's caches; the
/// number of files linked.
pub(super) fn seed_target(from: &Path, to: &Path) -> usize {
    profile_dirs(from)
        .iter()
        .filter_map(|profile| {
            Some(seed_profile(
                profile,
                &to.join(profile.strip_prefix(from).ok()?),
            ))
        })
        .sum()
}

/// The profile directories of a cargo target directory: `debug`, `release`, `<triple>/debug`, ...
fn profile_dirs(target: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(target) else {
        return out;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.join(".fingerprint").is_dir() {
            out.push(p);
        } else if p.is_dir() {
            if let Ok(inner) = std::fs::read_dir(&p) {
                out.extend(
                    inner
                        .flatten()
                        .map(|e| e.path())
                        .filter(|q| q.join(".fingerprint").is_dir()),
                );
            }
        }
    }
    out
}

/// Whether a dep-info file (`deps/<unit>.d`) is a dependency's: its first source is in cargo's registry or
/// a git checkout.
fn is_dependency(dep_info: &str) -> bool {
    let Some(first) = dep_info.lines().next() else {
        return false;
    };
    let sources = first.split_once(": ").map_or("", |(_, s)| s);
    let source = sources.split_whitespace().next().unwrap_or("");
    source.starts_with('/')
        && (source.contains("/registry/src/") || source.contains("/git/checkouts/"))
}

fn seed_profile(from: &Path, to: &Path) -> usize {
    let deps = from.join("deps");
    let Ok(entries) = std::fs::read_dir(&deps) else {
        return 0;
    };
    // The hashes of dependency units, from their dep-info files (`name-hash.d`), and of build scripts.
    let mut hashes = std::collections::BTreeSet::new();
    let mut dep_infos: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "d"))
        .collect();
    if let Ok(builds) = std::fs::read_dir(from.join("build")) {
        for b in builds.flatten() {
            if let Ok(inner) = std::fs::read_dir(b.path()) {
                dep_infos.extend(
                    inner
                        .flatten()
                        .map(|e| e.path())
                        .filter(|p| p.extension().is_some_and(|x| x == "d")),
                );
            }
        }
    }
    let mut member_hashes = std::collections::BTreeSet::new();
    for d in dep_infos {
        let Some(hash) = unit_hash(&d) else { continue };
        if std::fs::read_to_string(&d).is_ok_and(|t| is_dependency(&t)) {
            hashes.insert(hash);
        } else {
            member_hashes.insert(hash);
        }
    }
    let fingerprints = from.join(".fingerprint");
    let Ok(units) = std::fs::read_dir(&fingerprints) else {
        return 0;
    };
    let units: Vec<(String, String)> = units
        .flatten()
        .filter_map(|u| {
            let name = u.file_name().to_string_lossy().into_owned();
            let (package, hash) = name.rsplit_once('-')?;
            Some((package.to_owned(), hash.to_owned()))
        })
        .collect();
    // A build script's run has no dep-info: it goes with its package when no member has that name.
    let packages =
        |set: &std::collections::BTreeSet<String>| -> std::collections::BTreeSet<String> {
            units
                .iter()
                .filter(|(_, h)| set.contains(h))
                .map(|(p, _)| p.clone())
                .collect()
        };
    let dep_packages = packages(&hashes);
    let member_packages = packages(&member_hashes);
    let mut linked = 0;
    for (package, hash) in &units {
        let is_dep = hashes.contains(hash)
            || (dep_packages.contains(package) && !member_packages.contains(package));
        if !is_dep || member_hashes.contains(hash) {
            continue;
        }
        let name = format!("{package}-{hash}");
        let dest = to.join(".fingerprint").join(&name);
        if dest.exists() {
            continue;
        }
        hashes.insert(hash.clone());
        linked += link_tree(&fingerprints.join(&name), &dest);
        let build = from.join("build").join(&name);
        if build.is_dir() {
            linked += link_tree(&build, &to.join("build").join(&name));
        }
    }
    // Compiled files of those units: `lib<name>-<hash>.rlib`, `.rmeta`, `.so`, `<name>-<hash>.d`.
    if let Ok(entries) = std::fs::read_dir(&deps) {
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let hash = name
                .split('.')
                .next()
                .and_then(|stem| stem.rsplit_once('-'))
                .map(|(_, h)| h);
            if hash.is_some_and(|h| hashes.contains(h)) {
                linked += link_tree(&e.path(), &to.join("deps").join(&name));
            }
        }
    }
    linked
}

/// `.../deps/memchr-0123abcd.d` → `0123abcd`.
fn unit_hash(dep_info: &Path) -> Option<String> {
    let stem = dep_info.file_stem()?.to_str()?;
    stem.rsplit_once('-').map(|(_, h)| h.to_owned())
}

/// Places a file or a directory tree at `to`; returns how many files it placed. Existing files are kept.
/// Only rlibs and rmeta files are hard links (rustc writes them to a temporary file and renames it, so a
/// rebuild never writes into the shared copy); everything else is copied (cargo and build scripts rewrite
/// their files in place), and a link that fails (another file system) is a copy too.
fn link_tree(from: &Path, to: &Path) -> usize {
    if from.is_dir() {
        if std::fs::create_dir_all(to).is_err() {
            return 0;
        }
        let Ok(entries) = std::fs::read_dir(from) else {
            return 0;
        };
        return entries
            .flatten()
            .map(|e| link_tree(&e.path(), &to.join(e.file_name())))
            .sum();
    }
    if to.exists() {
        return 0;
    }
    if let Some(parent) = to.parent() {
        let _ = std::fs::create_dir_all(parent);
    }
    let link = from
        .extension()
        .is_some_and(|x| x == "rlib" || x == "rmeta");
    let placed = (link && std::fs::hard_link(from, to).is_ok()) || copy_with_mtime(from, to);
    usize::from(placed)
}

/// Copies a file and gives the copy the original's modification time: cargo judges a unit stale when a
/// dependency's output is newer than its own, and copies made one after another in seeding order (a build
/// script's binary after its run's output) rebuilt fd's dependencies with build scripts, and everything
/// above them, in every seeded directory.
fn copy_with_mtime(from: &Path, to: &Path) -> bool {
    if std::fs::copy(from, to).is_err() {
        return false;
    }
    let modified = std::fs::metadata(from).and_then(|m| m.modified());
    if let Ok(modified) = modified {
        let set = std::fs::File::options()
            .write(true)
            .open(to)
            .and_then(|f| f.set_modified(modified));
        if let Err(e) = set {
            tracing::debug!("keep the modification time of {}: {e}", to.display());
        }
    }
    true
}

/// What a step needs to run in `room`.
pub(super) fn step_env(prep: &Prepared, room: &Room, places: &Places) -> StepEnv {
    StepEnv {
        room: room.dir().to_path_buf(),
        cache: places.cache.clone(),
        shared: places.shared.clone(),
        logs: places.logs.clone(),
        profile_env: prep.profile.env.clone(),
        sandbox: prep.sandbox.clone(),
        readable: vec![prep.objects.clone()],
        hidden: crate::gate::steps::repository_of(&prep.objects),
        python: crate::gate::pyenv::RoomPython::new(prep.profile.python.clone()),
        deps: crate::gate::fetch::RoomDeps::new(prep.profile.room.fetch),
        views: None,
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    const SHA: &str = "0123456789abcdef0123456789abcdef01234567";

    fn opts() -> Options {
        let mut o = Options::for_repo(Path::new("repo"));
        o.cache = PathBuf::from("/c");
        o.workspaces = PathBuf::from("/w");
        o
    }

    #[test]
    fn cached_rooms_and_caches_are_per_repository_and_role_and_logs_per_head() {
        let p = layout(&opts(), "key", SHA, "base", "base-checks");
        assert!(matches!(p.room, Placement::Cached(ref d) if d == Path::new("/c/rooms/key/base")));
        assert_eq!(p.cache, Path::new("/c/rooms/key/base.cache"));
        assert_eq!(p.logs, Path::new("/c/logs/key/0123456789ab/base-checks"));
    }

    #[test]
    fn kept_rooms_and_their_logs_go_under_workspaces_and_fresh_ones_are_temporary() {
        let mut o = opts();
        o.keep = true;
        let p = layout(&o, "key", SHA, "head", "head");
        assert!(
            matches!(p.room, Placement::Kept(ref d) if d == Path::new("/w/gate-0123456789ab/head"))
        );
        assert_eq!(p.logs, Path::new("/w/gate-0123456789ab/logs/head"));
        assert_eq!(p.cache, Path::new("/c/rooms/key/head.cache"));
        let mut o = opts();
        o.fresh_rooms = true;
        let p = layout(&o, "key", SHA, "bite", "bite");
        assert!(matches!(p.room, Placement::Temp));
        assert_eq!(p.logs, Path::new("/c/logs/key/0123456789ab/bite"));
    }

    #[test]
    fn relative_places_are_made_absolute() {
        let mut o = opts();
        o.cache = PathBuf::from("rel-cache");
        let p = layout(&o, "key", SHA, "head", "head");
        assert!(p.cache.is_absolute() && p.logs.is_absolute());
        assert!(matches!(p.room, Placement::Cached(ref d) if d.is_absolute()));
    }

    #[test]
    fn only_registry_and_git_dependencies_are_seeded_into_another_role() {
        let tmp = tempfile::tempdir().unwrap();
        let head = tmp.path().join("head.cache/target");
        let debug = head.join("debug");
        for d in [
            ".fingerprint/memchr-aa11",
            ".fingerprint/mine-bb22",
            "deps",
            "build",
        ] {
            std::fs::create_dir_all(debug.join(d)).unwrap();
        }
        std::fs::write(head.join("CACHEDIR.TAG"), "Signature").unwrap();
        std::fs::write(debug.join(".fingerprint/memchr-aa11/lib-memchr"), "fp").unwrap();
        std::fs::write(debug.join(".fingerprint/mine-bb22/lib-mine"), "fp").unwrap();
        std::fs::write(
            debug.join("deps/memchr-aa11.d"),
            "/t/debug/deps/memchr-aa11.d: /home/u/.cargo/registry/src/idx/memchr-2.7/src/lib.rs\n",
        )
        .unwrap();
        std::fs::write(debug.join("deps/libmemchr-aa11.rlib"), "rlib").unwrap();
        std::fs::write(
            debug.join("deps/mine-bb22.d"),
            "/t/debug/deps/mine-bb22.d: src/lib.rs\n",
        )
        .unwrap();
        std::fs::write(debug.join("deps/libmine-bb22.rlib"), "rlib").unwrap();
        let bite = tmp.path().join("bite.cache");
        assert_eq!(seed_dependencies(&tmp.path().join("head.cache"), &bite), 3);
        let seeded = bite.join("target/debug");
        assert!(seeded.join("deps/libmemchr-aa11.rlib").is_file());
        assert!(seeded.join(".fingerprint/memchr-aa11/lib-memchr").is_file());
        assert!(!seeded.join("deps/libmine-bb22.rlib").exists());
        assert!(!seeded.join(".fingerprint/mine-bb22").exists());
        // Seeding again places nothing: the role has the units now.
        assert_eq!(seed_dependencies(&tmp.path().join("head.cache"), &bite), 0);
    }

    #[test]
    fn a_copied_file_keeps_its_modification_time() {
        let tmp = tempfile::tempdir().unwrap();
        let (from, to) = (tmp.path().join("output"), tmp.path().join("copy/output"));
        std::fs::write(&from, "cargo:rerun-if-changed=build.rs\n").unwrap();
        let old = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_700_000_000);
        std::fs::File::options()
            .write(true)
            .open(&from)
            .unwrap()
            .set_modified(old)
            .unwrap();
        assert_eq!(link_tree(&from, &to), 1);
        assert_eq!(std::fs::metadata(&to).unwrap().modified().unwrap(), old);
        assert_eq!(std::fs::read(&to).unwrap(), std::fs::read(&from).unwrap());
    }
}
