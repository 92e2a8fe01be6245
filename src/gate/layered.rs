//! A role's places (its room and its build cache) as copy-on-write views, so that nothing the judged code
//! writes is read by a later gate, a rerun, or another gate running at the same time.
//!
//! Every step sees the room and the cache at the same two paths inside the sandbox ([`Inside`]), whatever its
//! role: the bite room and the head room cannot be told apart by where they run, and the build cache of
//! base, built there, holds the paths head and bite compile against. What is mounted there depends on the
//! phase of the command ([`Phase`]):
//!
//! - **Build** (setting up the environment, fetching, the build steps, the test step's build without running
//!   tests): writes go to the role's open build layer, on top of the layers below. A build layer is sealed
//!   (made read-only) before anything is run on top of it, and a sealed layer is never written again.
//! - **Run** (tests, reruns, checks, code generators, probes): a new writable layer for this one command, on
//!   top of the sealed layers, thrown away when it ends. A test that rewrites a test binary, a `.pyc` or
//!   the Go build cache changes only its own copy: a rerun, the next gate and a concurrent gate read the
//!   sealed layers.
//!
//! The layers below are, bottom up: what only vouch writes (the room's checkout, see [`Room`](crate::room)),
//! and for the cache the trusted build of base ([`trusted`](super::trusted)); then, for head, the build
//! layers an earlier gate of the same change left ([`store`](super::trusted::Store)). vouch reads the role's
//! state at its own view ([`Views::vouch_room`]), a mount only it sees.
//!
//! A trusted role (base's own build, writing the trusted cache) has no layers in build phases: its steps
//! write the room and the cache directly, since base is code the repository's default branch already holds.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result};

use crate::layers::{Layer, Overlay};

/// The room and the cache as steps see them: the same for every role of a repository.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Inside {
    pub room: PathBuf,
    pub cache: PathBuf,
    /// Where a command's JUnit directory is bound (vouch's is one per command).
    pub junit: PathBuf,
}

/// What a command does to the places it is given (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Its writes are kept for the role's later commands (the open build layer).
    Build,
    /// Its writes are thrown away when it ends.
    Run,
}

/// A build layer: the part over the room and the part over the cache.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LayerPair {
    pub dir: PathBuf,
}

impl LayerPair {
    fn room(&self) -> Layer {
        Layer::new(self.dir.join("room"))
    }
    fn cache(&self) -> Layer {
        Layer::new(self.dir.join("cache"))
    }
    /// Its room part's files, as a layer below others.
    pub fn room_files(&self) -> PathBuf {
        self.room().files()
    }
    /// Its cache part's files, as a layer below others.
    pub fn cache_files(&self) -> PathBuf {
        self.cache().files()
    }
}

/// Where a command's places come from: the directories bound at [`Inside`], and what keeps them mounted.
#[derive(Clone, Debug)]
pub struct Bound {
    pub room: PathBuf,
    pub cache: PathBuf,
    /// Held until the command ends.
    pub hold: crate::process::Hold,
}

impl Bound {
    /// The step's home (`HOME`, under the cache), made where the command will see it.
    fn make_home(&self) -> Result<()> {
        let home = self.cache.join("home");
        std::fs::create_dir_all(&home).with_context(|| format!("create {}", home.display()))
    }
}

/// The mounts of one Run-phase command, and its throwaway layer (removed after them).
#[derive(Debug)]
struct RunMounts {
    room: Option<Overlay>,
    cache: Option<Overlay>,
    dir: PathBuf,
}

impl Drop for RunMounts {
    fn drop(&mut self) {
        drop(self.room.take());
        drop(self.cache.take());
        // The layer goes; the mount points stay until the run ends: a sandbox starting now may hold a copy
        // of these mounts, which it re-mounts by their path.
        for part in ["room", "cache"] {
            crate::gate::trusted::remove_tree(&self.dir.join(part));
        }
    }
}

/// One role's views in one gate run.
#[derive(Debug)]
pub struct Views {
    inside: Inside,
    /// Where vouch sees the role's state: mounts in its own namespace, or, trusted, the directories themselves.
    vouch: Inside,
    /// This gate run's own directory for the role: new layers, throwaway layers, mount points.
    scratch: PathBuf,
    trusted: bool,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    /// Sealed layers, top first; the bottom one is the role's directory (room) or the trusted cache.
    room_lowers: Vec<PathBuf>,
    cache_lowers: Vec<PathBuf>,
    /// The build layer being written, if any.
    open: Option<LayerPair>,
    /// The build layers this run made and sealed, bottom first.
    made: Vec<LayerPair>,
    /// vouch's own view of the role.
    view: Option<(Overlay, Overlay)>,
    count: usize,
    /// Build-phase commands running now: the open layer is not sealed under them.
    builders: Arc<std::sync::atomic::AtomicUsize>,
}

/// A running build-phase command, counted while it lives.
#[derive(Debug)]
struct Builder(Arc<std::sync::atomic::AtomicUsize>);

impl Drop for Builder {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

impl Views {
    /// The views of a role whose lowest layers are `room` (its checkout) and `cache`, with `more` (sealed
    /// build layers an earlier gate left, top first) over them. `scratch` is the run's own directory.
    pub fn layered(
        inside: Inside,
        room: PathBuf,
        cache: PathBuf,
        more: &[LayerPair],
        scratch: PathBuf,
    ) -> Result<Views> {
        std::fs::create_dir_all(&scratch)
            .with_context(|| format!("create {}", scratch.display()))?;
        let vouch = Inside {
            room: scratch.join("view/room"),
            cache: scratch.join("view/cache"),
            junit: inside.junit.clone(),
        };
        let mut room_lowers: Vec<PathBuf> = more.iter().map(LayerPair::room_files).collect();
        room_lowers.push(room);
        let mut cache_lowers: Vec<PathBuf> = more.iter().map(LayerPair::cache_files).collect();
        cache_lowers.push(cache);
        let views = Views {
            inside,
            vouch,
            scratch,
            trusted: false,
            state: Mutex::new(State {
                room_lowers,
                cache_lowers,
                open: None,
                made: Vec::new(),
                view: None,
                count: 0,
                builders: Arc::default(),
            }),
        };
        views.remount()?;
        Ok(views)
    }

    /// The views of a trusted role: build phases write `room` and `cache` themselves.
    pub fn trusted(
        inside: Inside,
        room: PathBuf,
        cache: PathBuf,
        scratch: PathBuf,
    ) -> Result<Views> {
        std::fs::create_dir_all(&scratch)
            .with_context(|| format!("create {}", scratch.display()))?;
        Ok(Views {
            vouch: Inside {
                room: room.clone(),
                cache: cache.clone(),
                junit: inside.junit.clone(),
            },
            inside,
            scratch,
            trusted: true,
            state: Mutex::new(State {
                room_lowers: vec![room],
                cache_lowers: vec![cache],
                open: None,
                made: Vec::new(),
                view: None,
                count: 0,
                builders: Arc::default(),
            }),
        })
    }

    /// Whether build phases write the role's directories themselves (base's trusted build).
    pub fn is_trusted(&self) -> bool {
        self.trusted
    }

    /// Where steps see the room and the cache.
    pub fn inside(&self) -> &Inside {
        &self.inside
    }

    /// Where vouch sees the role's room: its current state, the open build layer included.
    pub fn vouch_room(&self) -> &Path {
        &self.vouch.room
    }

    /// Where vouch sees the role's cache.
    pub fn vouch_cache(&self) -> &Path {
        &self.vouch.cache
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Mounts vouch's own view again: the sealed layers, read-only, with the open layer on top if there is one.
    fn remount(&self) -> Result<()> {
        if self.trusted {
            return Ok(());
        }
        let mut st = self.lock();
        st.view = None;
        let room_upper = st.open.as_ref().map(LayerPair::room);
        let cache_upper = st.open.as_ref().map(LayerPair::cache);
        let room = Overlay::mount(&self.vouch.room, &st.room_lowers, room_upper.as_ref())?;
        let cache = Overlay::mount(&self.vouch.cache, &st.cache_lowers, cache_upper.as_ref())?;
        st.view = Some((room, cache));
        Ok(())
    }

    /// Seals the open build layer, if any: from now on it is read-only, below every later command. While a
    /// build-phase command still writes it, it stays open (later commands then see the layers below it).
    pub fn seal(&self) -> Result<()> {
        {
            let mut st = self.lock();
            if st.builders.load(std::sync::atomic::Ordering::SeqCst) > 0 {
                return Ok(());
            }
            let Some(open) = st.open.take() else {
                return Ok(());
            };
            st.room_lowers.insert(0, open.room_files());
            st.cache_lowers.insert(0, open.cache_files());
            st.made.push(open);
        }
        self.remount()
    }

    /// Throws the open build layer away (what a code generator wrote, once read for drift).
    pub fn discard(&self) -> Result<()> {
        let dropped = {
            let mut st = self.lock();
            if st.builders.load(std::sync::atomic::Ordering::SeqCst) > 0 {
                return Ok(());
            }
            st.open.take()
        };
        let Some(layer) = dropped else {
            return Ok(());
        };
        self.remount()?;
        crate::gate::trusted::remove_tree(&layer.dir);
        Ok(())
    }

    /// The places for a command of `phase`: for Build, the open build layer (opened if need be), bound where
    /// vouch sees it; for Run, a throwaway layer of its own over the sealed layers.
    pub fn bind(&self, phase: Phase) -> Result<Bound> {
        match phase {
            Phase::Build => {
                let (opened, builder) = {
                    let mut st = self.lock();
                    st.builders
                        .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    let builder = Builder(st.builders.clone());
                    if self.trusted || st.open.is_some() {
                        (false, builder)
                    } else {
                        st.count += 1;
                        let dir = self.scratch.join(format!("layer-{}", st.count));
                        st.open = Some(LayerPair { dir });
                        (true, builder)
                    }
                };
                if opened {
                    self.remount()?;
                }
                let bound = Bound {
                    room: self.vouch.room.clone(),
                    cache: self.vouch.cache.clone(),
                    hold: crate::process::Hold::new(Arc::new(builder)),
                };
                bound.make_home()?;
                Ok(bound)
            }
            Phase::Run => {
                let (room_lowers, cache_lowers, n) = {
                    let mut st = self.lock();
                    st.count += 1;
                    (st.room_lowers.clone(), st.cache_lowers.clone(), st.count)
                };
                let dir = self.scratch.join(format!("run-{n}"));
                let pair = LayerPair { dir: dir.clone() };
                let mut mounts = RunMounts {
                    room: None,
                    cache: None,
                    dir: dir.clone(),
                };
                let (room_at, cache_at) = (dir.join("mnt/room"), dir.join("mnt/cache"));
                mounts.room = Some(Overlay::mount(&room_at, &room_lowers, Some(&pair.room()))?);
                mounts.cache = Some(Overlay::mount(
                    &cache_at,
                    &cache_lowers,
                    Some(&pair.cache()),
                )?);
                let bound = Bound {
                    room: room_at,
                    cache: cache_at,
                    hold: crate::process::Hold::new(Arc::new(mounts)),
                };
                bound.make_home()?;
                Ok(bound)
            }
        }
    }

    /// The build layers this run made and sealed, top first (to keep for the next gate of the same change).
    pub fn made(&self) -> Vec<LayerPair> {
        let st = self.lock();
        st.made.iter().rev().cloned().collect()
    }

    /// This run's own directory for the role.
    pub fn scratch(&self) -> &Path {
        &self.scratch
    }

    /// `path` (one of vouch's, under its view of the room or the cache, or under `bound`'s directories) as
    /// steps see it; other paths are as they are.
    pub fn to_inside(&self, path: &Path, bound: Option<&Bound>) -> PathBuf {
        let pairs = [
            (self.vouch.room.as_path(), self.inside.room.as_path()),
            (self.vouch.cache.as_path(), self.inside.cache.as_path()),
        ];
        let bound_pairs = bound.map(|b| {
            [
                (b.room.as_path(), self.inside.room.as_path()),
                (b.cache.as_path(), self.inside.cache.as_path()),
            ]
        });
        for (from, to) in pairs.iter().chain(bound_pairs.iter().flatten()) {
            if let Ok(rest) = path.strip_prefix(from) {
                return if rest.as_os_str().is_empty() {
                    to.to_path_buf()
                } else {
                    to.join(rest)
                };
            }
        }
        path.to_path_buf()
    }

    /// `text` with vouch's paths of the room and the cache replaced by the steps' (an argument or a value).
    pub fn text_to_inside(&self, text: &str, bound: Option<&Bound>) -> String {
        let mut out = text.to_owned();
        let mut pairs: Vec<(String, String)> = vec![
            (path_text(&self.vouch.room), path_text(&self.inside.room)),
            (path_text(&self.vouch.cache), path_text(&self.inside.cache)),
        ];
        if let Some(b) = bound {
            pairs.push((path_text(&b.room), path_text(&self.inside.room)));
            pairs.push((path_text(&b.cache), path_text(&self.inside.cache)));
        }
        for (from, to) in pairs {
            if from != to {
                out = out.replace(&from, &to);
            }
        }
        out
    }
}

fn path_text(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

impl Drop for Views {
    fn drop(&mut self) {
        let st = self
            .state
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        st.view = None;
    }
}
