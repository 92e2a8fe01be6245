//! Where one gate run puts things, per role (head, base, bite): the room, the build cache and the step logs,
//! and opening a room there.
//!
//! Cached rooms and caches live under `<cache>/rooms/<repo key>/<role>` so build tools' incremental output
//! survives between runs; `--keep` puts rooms and logs under `workspaces/gate-<head>` for the user to inspect;
//! `--fresh-rooms` uses temporary rooms. Logs always start empty, so a report never points at an old run's.

use std::path::PathBuf;

use anyhow::{Context, Result};

use crate::gate::bite::plan::Plan;
use crate::gate::steps::StepEnv;
use crate::gate::{Options, Prepared};
use crate::room::{Placement, Room, Target};

/// The places a gate run uses for one role (head, base, bite).
pub(super) struct Places {
    pub room: Placement,
    pub cache: PathBuf,
    pub logs: PathBuf,
}

/// The places of `role`, with its step logs under the role's name.
pub(super) fn places(opts: &Options, prep: &Prepared, role: &str) -> Result<Places> {
    places_logged(opts, prep, role, role)
}

/// Like [`places`], with step logs under `logs_name` (two runs in one room keep their logs apart).
pub(super) fn places_logged(
    opts: &Options,
    prep: &Prepared,
    role: &str,
    logs_name: &str,
) -> Result<Places> {
    let places = layout(opts, &prep.repo_key, &prep.head.sha, role, logs_name);
    std::fs::create_dir_all(&places.cache)
        .with_context(|| format!("create {}", places.cache.display()))?;
    if places.logs.exists() {
        let _ = std::fs::remove_dir_all(&places.logs);
    }
    std::fs::create_dir_all(&places.logs)
        .with_context(|| format!("create {}", places.logs.display()))?;
    Ok(places)
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
        let dir = opts.workspaces.join(format!("gate-{short}"));
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
    }
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

/// The bite room, holding the reverted tree of `plan`, and its places.
pub(super) async fn open_bite_room(
    opts: &Options,
    prep: &Prepared,
    plan: &Plan,
) -> Result<(Room, Places)> {
    let places = places(opts, prep, "bite")?;
    let objects = prep.objects.clone();
    let base = git2::Oid::from_str(&prep.base.sha)?;
    let preserve = prep.profile.room.preserve.clone();
    let files = plan.overlay.clone();
    let placement = places.room.clone();
    let room = tokio::task::spawn_blocking(move || {
        Room::open(
            &objects,
            Target::Overlay { base, files },
            placement,
            &preserve,
        )
    })
    .await
    .context("room task")??;
    Ok((room, places))
}

/// What a step needs to run in `room`.
pub(super) fn step_env(prep: &Prepared, room: &Room, places: &Places) -> StepEnv {
    StepEnv {
        room: room.dir().to_path_buf(),
        cache: places.cache.clone(),
        logs: places.logs.clone(),
        profile_env: prep.profile.env.clone(),
        sandbox: prep.sandbox.clone(),
        readable: vec![prep.objects.clone()],
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
}
