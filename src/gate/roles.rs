//! Each role's room and cache for one gate run: with copy-on-write layers where the machine allows them
//! ([`layered`](super::layered)), over the trusted build of base ([`trusted`](super::trusted)), else as
//! private places of this run alone.
//!
//! With layers, a gate run: takes the trusted cache (building base there first when it holds another base and
//! no other gate reads it), opens head's room and lays head's views over the trusted cache and over the build
//! layers an earlier gate of the same change kept; base's and bite's views are laid over the trusted cache
//! too. When it ends, head's new build layers are kept for the next gate of the same change, and everything
//! else it wrote is removed.
//!
//! Without them (the sandbox is off, or the kernel gives no user namespace or no overlays), rooms and caches
//! are the run's own temporary ones when code under test is confined (nothing it writes survives the run;
//! every gate builds from nothing), or the cached ones of each role when it is not (the sandbox being off,
//! that code can write anywhere the user can anyway).

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result};
use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;

use crate::gate::layered::{Inside, Views};
use crate::gate::places::{self, Places};
use crate::gate::profile::{Step, StepKind};
use crate::gate::steps::{self, StepEnv};
use crate::gate::trusted::{self, Kept, Record, Store, Trusted, TrustedLock};
use crate::gate::{Options, Prepared};
use crate::room::{Placement, Room};
use crate::ui::Ui;

/// A gate run's layers: the trusted cache it holds, the change's kept layers, its own scratch directory.
#[derive(Debug)]
pub(super) struct Layered {
    repo_dir: PathBuf,
    inside: Inside,
    scratch: PathBuf,
    _scratch_lock: File,
    trusted: Trusted,
    _lock: Mutex<TrustedLock>,
    record: Record,
    /// The trusted cache holds this run's base, and the base room with it.
    base_ready: bool,
    store: Store,
    key: String,
    kept: Option<Kept>,
    fresh: bool,
    count: AtomicUsize,
    /// vouch's cache, hidden from steps (other gates' rooms, layers and logs are there).
    hidden: PathBuf,
}

/// Why this run has no layers, and whether its places are then its own.
#[derive(Debug)]
pub(super) struct Plain {
    pub why: String,
    /// Rooms and caches of this run alone (code under test is confined but its writes cannot be layered).
    pub private: bool,
    /// Temporary caches of this run (removed with it).
    temp: Mutex<Vec<tempfile::TempDir>>,
}

/// How this run places its roles.
#[derive(Debug)]
pub(super) enum Roles {
    Layered(Box<Layered>),
    Plain(Plain),
}

/// The steps base's trusted build runs, as builds: setup happens with the first; build steps as they are;
/// test steps without running tests; lints that reuse the build (clippy as a build).
pub(super) fn trusted_steps(steps: &[Step]) -> Vec<Step> {
    let mut out: Vec<Step> = steps
        .iter()
        .filter_map(|s| match s.kind {
            StepKind::Build => Some(s.clone()),
            StepKind::Lint if s.reuse_build.is_some() => Some(s.clone()),
            StepKind::Test => {
                let build = crate::gate::bite::select::build_command(s.runner(), &s.raw_argv())?;
                let mut b = s.clone();
                b.name = format!("{}-build", s.name);
                b.kind = StepKind::Build;
                b.argv = Some(build);
                b.shell = None;
                Some(b)
            }
            _ => None,
        })
        .collect();
    // Builds first, so that a lint reusing the build finds its dependencies built.
    out.sort_by_key(|s| s.kind == StepKind::Lint);
    out
}

/// What the trusted build depends on besides base's tree: its steps, the profile's environment and the
/// programs it runs.
fn trusted_fingerprint(prep: &Prepared) -> String {
    let steps = trusted_steps(&prep.profile.steps);
    let programs = crate::gate::baseline::programs(steps.iter());
    let tools = crate::gate::baseline::tool_fingerprint(&programs);
    let refs: Vec<&Step> = steps.iter().collect();
    let text = crate::gate::baseline::fingerprint(&prep.profile, &refs, &tools);
    hex::encode(&Sha256::digest(text.as_bytes())[..12])
}

impl Roles {
    /// This run's roles: layered if the machine allows it and the sandbox confines steps; the trusted cache
    /// taken (and built, when it holds another base and nobody reads it).
    pub(super) async fn open(
        opts: &Options,
        prep: &Prepared,
        ui: &Ui,
        cancel: &CancellationToken,
    ) -> Result<Roles> {
        let repo_dir = std::path::absolute(opts.cache.join("rooms").join(&prep.repo_key))
            .context("locate the rooms")?;
        let why = if !prep.sandbox.active() {
            Some("code under test is not confined".to_owned())
        } else if opts.keep {
            Some("--keep: the rooms are kept as the steps left them".to_owned())
        } else {
            crate::layers::available(&repo_dir).err()
        };
        if let Some(why) = why {
            return Ok(Roles::Plain(Plain {
                private: prep.sandbox.active(),
                why,
                temp: Mutex::default(),
            }));
        }
        let layered = Layered::open(opts, prep, &repo_dir, ui, cancel).await?;
        Ok(Roles::Layered(Box::new(layered)))
    }

    /// The note for the report when this run has no layers, else None.
    pub(super) fn note(&self) -> Option<String> {
        match self {
            Roles::Layered(_) => None,
            Roles::Plain(p) if p.private => Some(format!(
                "no copy-on-write layers here ({}): every room and cache of this gate is its own and \
                 starts empty, so it builds from nothing (allow unprivileged user namespaces on Linux 5.11 or \
                 newer for warm, isolated gates)",
                p.why
            )),
            Roles::Plain(p) => Some(format!(
                "no copy-on-write layers ({}): rooms and caches are reused as they were left, and code under \
                 test, unconfined, could change what later gates read",
                p.why
            )),
        }
    }

    /// The layered run, if this is one.
    #[allow(dead_code)]
    pub(super) fn layered(&self) -> Option<&Layered> {
        match self {
            Roles::Layered(l) => Some(l),
            Roles::Plain(_) => None,
        }
    }

    /// The places of `role` (room placement, cache, logs): private ones when this run must not share.
    pub(super) fn places(
        &self,
        opts: &Options,
        prep: &Prepared,
        role: &str,
        logs: &str,
    ) -> Result<Places> {
        // Layered roles share the trusted cache, never another role's: nothing is seeded.
        let seed = matches!(self, Roles::Plain(p) if !p.private);
        let mut p = places::places_seeded(opts, prep, role, logs, seed)?;
        if let Roles::Plain(plain) = self {
            if plain.private {
                // A kept room is this run's own already (under workspaces/gate-<head>).
                if !matches!(p.room, Placement::Kept(_)) {
                    p.room = Placement::Temp;
                }
                let temp = tempfile::Builder::new()
                    .prefix("vouch-cache-")
                    .tempdir()
                    .context("create a temporary cache")?;
                p.cache = temp.path().to_path_buf();
                plain
                    .temp
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .push(temp);
            }
        }
        Ok(p)
    }

    /// What the steps of `role` need, with `room` open (for layers: its views laid over the trusted cache,
    /// and for head over the change's kept layers).
    pub(super) fn env(
        &self,
        prep: &Prepared,
        room: &Room,
        places: &Places,
        role: &str,
    ) -> Result<StepEnv> {
        let mut env = places::step_env(prep, room, places);
        if let Roles::Layered(l) = self {
            let views = l.views(prep, room, role)?;
            env.room = views.vouch_room().to_path_buf();
            env.cache = views.vouch_cache().to_path_buf();
            env.shared = l.repo_dir.clone();
            env.hidden = vec![l.hidden.clone()];
            env.views = Some(Arc::new(views));
        }
        Ok(env)
    }

    /// A room at base for the baseline or the checks: the trusted base room itself (read-only below its
    /// views) when the trusted cache holds this base, else one opened for this run.
    pub(super) async fn base_room(
        &self,
        opts: &Options,
        prep: &Prepared,
        places: &Places,
    ) -> Result<Room> {
        if let Roles::Layered(l) = self {
            if l.base_ready {
                let oid = git2::Oid::from_str(&prep.base.sha)?;
                return Ok(Room::borrowed(&l.repo_dir.join("base"), oid));
            }
            let _ = opts;
            return places::open_room(prep, &prep.base.sha, Placement::Temp).await;
        }
        places::open_room(prep, &prep.base.sha, places.room.clone()).await
    }

    /// Ends the run: head's new build layers kept for the next gate of the same change (unless the run was
    /// interrupted or asked for fresh rooms), the run's scratch removed. `head` must be the last holder of
    /// head's views.
    pub(super) fn finish(self, head: Option<StepEnv>, completed: bool) {
        let Roles::Layered(l) = self else {
            return;
        };
        let views = head.and_then(|e| e.views).and_then(|v| {
            Arc::try_unwrap(v)
                .map_err(|v| {
                    tracing::warn!(
                        "head's views are still in use ({} holders): its layers are not kept",
                        Arc::strong_count(&v)
                    )
                })
                .ok()
        });
        if let Some(views) = views {
            // A layer still open (a lint's build beside the tests) is complete now that every step ended.
            if let Err(e) = views.seal() {
                tracing::warn!("seal head's last build layer: {e:#}");
            }
            tracing::debug!(
                "head made {} build layers; kept before: {}",
                views.made().len(),
                l.kept.is_some()
            );
            let made = views.made();
            drop(views);
            if completed && !l.fresh && l.kept.is_none() && !made.is_empty() {
                if let Err(e) = l.store.keep(&l.key, &made) {
                    tracing::warn!("keep head's build layers: {e:#}");
                }
            }
        }
        trusted::remove_tree(&l.scratch);
    }
}

impl Layered {
    async fn open(
        opts: &Options,
        prep: &Prepared,
        repo_dir: &Path,
        ui: &Ui,
        cancel: &CancellationToken,
    ) -> Result<Layered> {
        let inside = Inside {
            room: repo_dir.join("room"),
            cache: repo_dir.join("room.cache"),
            junit: repo_dir.join("junit"),
        };
        for d in [&inside.room, &inside.cache, &inside.junit] {
            std::fs::create_dir_all(d).with_context(|| format!("create {}", d.display()))?;
        }
        let (scratch, scratch_lock) = scratch_dir(repo_dir)?;
        let trusted = Trusted::new(repo_dir);
        std::fs::create_dir_all(trusted.cache())
            .with_context(|| format!("create {}", trusted.cache().display()))?;
        let fingerprint = trusted_fingerprint(prep);
        let wait = || {
            ui.line("  waiting  for another gate building base's trusted cache of this repository");
        };
        let lock = if trusted.record().holds(&prep.base_tree, &fingerprint) {
            trusted.shared(wait)?
        } else {
            match trusted.try_exclusive()? {
                Some(mut lock) => {
                    build_trusted(
                        opts,
                        prep,
                        repo_dir,
                        &inside,
                        &scratch,
                        &trusted,
                        &fingerprint,
                        ui,
                        cancel,
                    )
                    .await?;
                    lock.share()?;
                    lock
                }
                None => trusted.shared(wait)?,
            }
        };
        let record = trusted.record();
        let base_ready = record.holds(&prep.base_tree, &fingerprint);
        if !base_ready {
            ui.line(&format!(
                "  note     the trusted cache holds another base ({}), in use by another gate: built here on top of it",
                short(&record.tree)
            ));
        }
        let store = Store::new(repo_dir);
        let key = {
            let mut h = Sha256::new();
            for part in [
                prep.head.sha.as_str(),
                &record.tree,
                &record.sealed_ns.to_string(),
                &fingerprint,
            ] {
                h.update(part.as_bytes());
                h.update([0]);
            }
            hex::encode(&h.finalize()[..12])
        };
        let kept = if opts.fresh_rooms {
            None
        } else {
            store.find(&key)?
        };
        Ok(Layered {
            repo_dir: repo_dir.to_path_buf(),
            inside,
            scratch,
            _scratch_lock: scratch_lock,
            trusted,
            _lock: Mutex::new(lock),
            record,
            base_ready,
            store,
            key,
            kept,
            fresh: opts.fresh_rooms,
            count: AtomicUsize::new(0),
            hidden: std::path::absolute(&opts.cache).unwrap_or_else(|_| opts.cache.clone()),
        })
    }

    /// The views of `role` in `room`: its files dated against the trusted cache, then laid over it.
    fn views(&self, prep: &Prepared, room: &Room, role: &str) -> Result<Views> {
        let trusted_room = self.repo_dir.join("base");
        // A name that says nothing of the role: a bind's source path shows in the mounts a test can read.
        let n = self.count.fetch_add(1, Ordering::SeqCst);
        let scratch = self.scratch.join(crate::layers::random_name());
        tracing::debug!("{role} views {n}: {}", scratch.display());
        // The trusted base room is already what the trusted cache compiled.
        let is_trusted_room = self.base_ready && room.is_at(&trusted_room);
        if !is_trusted_room && !self.record.tree.is_empty() {
            // What the trusted build compiled is base's tree, whether or not every step of it passed.
            let reference = Some(git2::Oid::from_str(&self.record.tree)?);
            let repo = git2::Repository::open(room.dir())
                .with_context(|| format!("open room {}", room.dir().display()))?;
            let tree = repo.find_commit(room.commit())?.tree_id();
            let dated = trusted::freshen(&repo, room.dir(), tree, reference, self.record.sealed())?;
            tracing::debug!("{role}: {dated} files dated newer than the trusted build");
        }
        let more = match (role, &self.kept) {
            ("head", Some(kept)) => kept.layers.clone(),
            _ => Vec::new(),
        };
        let _ = prep;
        Views::layered(
            self.inside.clone(),
            room.dir().to_path_buf(),
            self.trusted.cache(),
            &more,
            scratch,
        )
    }
}

/// A scratch directory of this run under `rooms/<repo>/gates/`, locked while it lives; those of runs that
/// ended without removing theirs (no lock held) are removed first.
fn scratch_dir(repo_dir: &Path) -> Result<(PathBuf, File)> {
    let gates = repo_dir.join("gates");
    std::fs::create_dir_all(&gates).with_context(|| format!("create {}", gates.display()))?;
    if let Ok(entries) = std::fs::read_dir(&gates) {
        for e in entries.flatten() {
            let path = e.path();
            if path.extension().is_some_and(|x| x == "lock") {
                continue;
            }
            let lock = path.with_extension("lock");
            let stale = trusted::lock_file(&lock).is_ok_and(|f| f.try_lock().is_ok());
            if stale {
                trusted::remove_tree(&path);
                let _ = std::fs::remove_file(&lock);
            }
        }
    }
    let name = format!("{}-{}", std::process::id(), trusted::now_ns());
    let dir = gates.join(&name);
    let lock_path = gates.join(format!("{name}.lock"));
    let lock =
        File::create(&lock_path).with_context(|| format!("create {}", lock_path.display()))?;
    lock.lock().context("lock this gate's scratch directory")?;
    std::fs::create_dir_all(&dir).with_context(|| format!("create {}", dir.display()))?;
    Ok((dir, lock))
}

fn short(sha: &str) -> &str {
    &sha[..sha.len().min(12)]
}

/// Base's trusted build (see [`trusted`]): the base room reset to base, then base's setup and build-like
/// steps writing the room and the trusted cache directly; the record written last.
#[allow(clippy::too_many_arguments)]
async fn build_trusted(
    opts: &Options,
    prep: &Prepared,
    repo_dir: &Path,
    inside: &Inside,
    scratch: &Path,
    trusted: &Trusted,
    fingerprint: &str,
    ui: &Ui,
    cancel: &CancellationToken,
) -> Result<()> {
    let started = std::time::Instant::now();
    let room_dir = repo_dir.join("base");
    let places = places::places_seeded(opts, prep, "base", "trusted", false)?;
    let pb = ui.start("base's trusted build (the cache later gates build on)");
    let room = places::open_room(prep, &prep.base.sha, Placement::Cached(room_dir.clone())).await?;
    if !room.is_at(&room_dir) {
        pb.finish_and_clear();
        return Ok(());
    }
    let views = Views::trusted(
        inside.clone(),
        room.dir().to_path_buf(),
        trusted.cache(),
        scratch.join("trusted"),
    )?;
    let mut env = places::step_env(prep, &room, &places);
    env.cache = trusted.cache();
    env.shared = repo_dir.to_path_buf();
    env.hidden = vec![std::path::absolute(&opts.cache).unwrap_or_else(|_| opts.cache.clone())];
    env.views = Some(Arc::new(views));
    // Marked unbuilt while it is written: a crash in between leaves no record naming this base.
    trusted.set_record(&Record::default())?;
    let mut ok = true;
    // A Python project's room environment too (the editable install of base): every role of a later gate
    // sees it at the same inside path and reuses it while its layout is base's.
    if let Some(test) = prep
        .profile
        .steps
        .iter()
        .find(|s| s.kind == crate::gate::profile::StepKind::Test)
    {
        if let Some(crate::gate::pyenv::State::Failed(why)) =
            env.python.ensure(test, &env, cancel).await
        {
            tracing::info!("trusted build: base's Python environment: {why}");
            ok = false;
        }
    }
    for step in trusted_steps(&prep.profile.steps) {
        if steps::not_applicable(&step, &env.room).is_some()
            || steps::missing_tool(&step, &env, cancel).await.is_some()
        {
            continue;
        }
        let run = steps::run_step(&step, &env, &room, &prep.objects, cancel).await?;
        if cancel.is_cancelled() {
            return Err(crate::error::VouchError::Interrupted.into());
        }
        ok &= run.outcome.as_ref().is_some_and(|o| o.success());
    }
    trusted.set_record(&Record {
        tree: prep.base_tree.clone(),
        fingerprint: fingerprint.to_owned(),
        ok,
        sealed_ns: trusted::now_ns(),
    })?;
    ui.done(
        pb,
        &format!(
            "  {:<8} {:<16} {:>7}  base's own build, kept for later gates{}",
            if ok { "built" } else { "partial" },
            "trusted cache",
            steps::human(started.elapsed()),
            if ok {
                ""
            } else {
                " (a step failed at base: what it built is kept, the rest each gate builds)"
            }
        ),
    );
    Ok(())
}
