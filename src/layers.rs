//! Copy-on-write layers: vouch's private mount namespace and the overlay mounts the gate builds its views from.
//!
//! Code under judgement writes wherever its steps may write: the room, the build cache, its home. None of that
//! may reach a later gate, a rerun or another gate running at the same time. So the places a step writes are
//! overlay mounts: read-only layers that only vouch (or the trusted build of base) ever wrote, and one
//! writable layer on top that belongs to this step or this gate and is thrown away or kept by key
//! ([`gate::layered`](crate::gate::layered) decides which).
//!
//! Mounting needs a mount namespace vouch owns, so the commands that run the gate call [`enter`] first thing,
//! while the process has one thread: a new user namespace (the same user id and group id mapped to
//! themselves, so files keep their owner) and a new mount namespace inside it, every mount private to vouch.
//! Its children inherit both; bubblewrap nests its own inside. Other processes on the machine, the user's
//! shell included, never see these mounts, and they go away with vouch.
//!
//! Where the kernel refuses (no unprivileged user namespaces, an AppArmor policy that denies them, Linux
//! before 5.11 without overlays in user namespaces), [`available`] says why and the gate falls back to
//! per-gate private places: correct, and slower.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use anyhow::{Context, Result};

/// Whether vouch entered its own namespaces, or why not.
static ENTERED: OnceLock<std::result::Result<(), String>> = OnceLock::new();

/// Enters a private user and mount namespace; call it before any thread starts. Idempotent; the result (why
/// not, on failure) is kept for [`available`].
pub fn enter() {
    ENTERED.get_or_init(enter_now);
}

#[cfg(target_os = "linux")]
fn enter_now() -> std::result::Result<(), String> {
    use nix::mount::{mount, MsFlags};
    use nix::sched::{unshare, CloneFlags};
    if std::env::var_os("VOUCH_NO_LAYERS").is_some() {
        return Err("VOUCH_NO_LAYERS is set".into());
    }
    let (uid, gid) = (nix::unistd::getuid(), nix::unistd::getgid());
    unshare(CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNS).map_err(|e| {
        format!("the kernel refuses a user namespace ({e}); unprivileged user namespaces may be disabled")
    })?;
    let write = |file: &str, text: String| {
        std::fs::write(file, text).map_err(|e| format!("write {file}: {e}"))
    };
    write("/proc/self/setgroups", "deny".into())?;
    write("/proc/self/uid_map", format!("{uid} {uid} 1\n"))?;
    write("/proc/self/gid_map", format!("{gid} {gid} 1\n"))?;
    mount(
        None::<&str>,
        "/",
        None::<&str>,
        MsFlags::MS_REC | MsFlags::MS_PRIVATE,
        None::<&str>,
    )
    .map_err(|e| format!("make vouch's mounts private: {e}"))?;
    Ok(())
}

#[cfg(not(target_os = "linux"))]
fn enter_now() -> std::result::Result<(), String> {
    Err("copy-on-write layers need Linux".into())
}

/// Whether layers can be mounted under `dir` (a directory on the file system the layers live on): vouch is
/// in its own namespaces and an overlay mounted there works (a write lands in its top layer, never in the one
/// below). Tried once per process.
pub fn available(dir: &Path) -> std::result::Result<(), String> {
    static PROBE: OnceLock<std::result::Result<(), String>> = OnceLock::new();
    match ENTERED.get() {
        None => return Err("vouch did not enter a mount namespace of its own".into()),
        Some(Err(why)) => return Err(why.clone()),
        Some(Ok(())) => {}
    }
    PROBE.get_or_init(|| probe(dir)).clone()
}

fn probe(dir: &Path) -> std::result::Result<(), String> {
    let fail = |what: &str, e: &dyn std::fmt::Display| format!("{what}: {e}");
    std::fs::create_dir_all(dir).map_err(|e| fail(&format!("create {}", dir.display()), &e))?;
    let tmp = tempfile::Builder::new()
        .prefix("layers-probe-")
        .tempdir_in(dir)
        .map_err(|e| fail("make a probe directory", &e))?;
    let layer = Layer::new(tmp.path().join("upper"));
    let (lower, target) = (tmp.path().join("lower"), tmp.path().join("mnt"));
    for d in [&lower, &target] {
        std::fs::create_dir_all(d).map_err(|e| fail("make a probe directory", &e))?;
    }
    std::fs::write(lower.join("file"), "lower").map_err(|e| fail("write the probe", &e))?;
    let mount = Overlay::mount(&target, std::slice::from_ref(&lower), Some(&layer))
        .map_err(|e| format!("an overlay mount fails here ({e:#})"))?;
    std::fs::write(target.join("file"), "upper")
        .map_err(|e| fail("write through the overlay", &e))?;
    let below = std::fs::read_to_string(lower.join("file")).unwrap_or_default();
    let above = std::fs::read_to_string(layer.files().join("file")).unwrap_or_default();
    drop(mount);
    if below != "lower" || above != "upper" {
        return Err(format!(
            "an overlay mount does not keep its layers apart here (below: {below:?}, above: {above:?})"
        ));
    }
    Ok(())
}

/// A writable layer: its files, and the overlay's work directory beside them (same file system, emptied by
/// the kernel's own use).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layer {
    dir: PathBuf,
}

impl Layer {
    /// The layer kept in `dir` (`dir/files`, `dir/work`), not yet created.
    pub fn new(dir: PathBuf) -> Layer {
        Layer { dir }
    }

    /// The layer's files: what steps wrote over the layers below (whiteouts for what they removed).
    pub fn files(&self) -> PathBuf {
        self.dir.join("files")
    }

    fn work(&self) -> PathBuf {
        self.dir.join("work")
    }

    /// The directory holding the layer.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn create(&self) -> Result<()> {
        for d in [self.files(), self.work()] {
            std::fs::create_dir_all(&d).with_context(|| format!("create {}", d.display()))?;
        }
        Ok(())
    }
}

/// An overlay mounted in vouch's namespace, unmounted when dropped (lazily: a process that still holds it
/// keeps its own view until it ends).
#[derive(Debug)]
pub struct Overlay {
    target: PathBuf,
}

impl Overlay {
    /// Mounts at `target` the read-only `lowers` (top first) under `upper`, or, without `upper`, a read-only
    /// view of the lowers.
    pub fn mount(target: &Path, lowers: &[PathBuf], upper: Option<&Layer>) -> Result<Overlay> {
        use nix::mount::{mount, MsFlags};
        anyhow::ensure!(!lowers.is_empty(), "an overlay needs a layer below");
        std::fs::create_dir_all(target).with_context(|| format!("create {}", target.display()))?;
        if lowers.len() == 1 && upper.is_none() {
            // Overlayfs wants two layers for a read-only view; one is a read-only bind.
            mount(
                Some(lowers[0].as_path()),
                target,
                None::<&str>,
                MsFlags::MS_BIND,
                None::<&str>,
            )
            .with_context(|| format!("bind {} at {}", lowers[0].display(), target.display()))?;
            mount(
                None::<&str>,
                target,
                None::<&str>,
                MsFlags::MS_BIND | MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY,
                None::<&str>,
            )
            .with_context(|| format!("make {} read-only", target.display()))?;
            return Ok(Overlay {
                target: target.to_path_buf(),
            });
        }
        // The kernel shows an overlay's options as they were given (`/proc/self/mountinfo`, readable by the
        // code under test): each layer is named through a link of no meaning, removed once mounted, so the
        // options never say whose room or which role a layer is.
        let mut names = Names::new()?;
        let mut options = String::from("userxattr,lowerdir=");
        for (i, lower) in lowers.iter().enumerate() {
            if i > 0 {
                options.push(':');
            }
            options.push_str(&option_path(&names.alias(lower)?)?);
        }
        if let Some(layer) = upper {
            layer.create()?;
            options.push_str(",upperdir=");
            options.push_str(&option_path(&names.alias(&layer.files())?)?);
            options.push_str(",workdir=");
            options.push_str(&option_path(&names.alias(&layer.work())?)?);
        }
        mount(
            Some("overlay"),
            target,
            Some("overlay"),
            MsFlags::empty(),
            Some(options.as_str()),
        )
        .with_context(|| format!("mount an overlay at {} ({options})", target.display()))?;
        Ok(Overlay {
            target: target.to_path_buf(),
        })
    }

    /// Where it is mounted.
    pub fn target(&self) -> &Path {
        &self.target
    }
}

impl Drop for Overlay {
    fn drop(&mut self) {
        use nix::mount::{umount2, MntFlags};
        if let Err(e) = umount2(&self.target, MntFlags::MNT_DETACH) {
            tracing::warn!("unmount {}: {e}", self.target.display());
        }
    }
}

/// A path as overlayfs's options take it: absolute, and without the characters that separate its options and
/// its layers (`,` `:`) or escape them.
/// Links of no meaning to the layers of one mount; removed on drop.
struct Names {
    dir: PathBuf,
    links: Vec<PathBuf>,
}

impl Names {
    fn new() -> Result<Names> {
        // One directory per user, shared by every gate: the names are random and each is removed at once.
        let dir = std::env::temp_dir().join(format!("vouch-layers-{}", nix::unistd::getuid()));
        std::fs::create_dir_all(&dir).with_context(|| format!("create {}", dir.display()))?;
        Ok(Names {
            dir,
            links: Vec::new(),
        })
    }

    /// A new link to `path`: a random name.
    fn alias(&mut self, path: &Path) -> Result<PathBuf> {
        let link = self.dir.join(random_name());
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(path, &link)
            .with_context(|| format!("link {} as {}", path.display(), link.display()))?;
        self.links.push(link.clone());
        Ok(link)
    }
}

impl Drop for Names {
    fn drop(&mut self) {
        for link in &self.links {
            let _ = std::fs::remove_file(link);
        }
    }
}

/// A name that says nothing: 16 hex digits, new on every call.
pub fn random_name() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let seed = format!(
        "{}-{}-{:?}",
        std::process::id(),
        COUNT.fetch_add(1, Ordering::SeqCst),
        std::time::SystemTime::now()
    );
    let digest = <sha2::Sha256 as sha2::Digest>::digest(seed.as_bytes());
    hex::encode(&digest[..8])
}

fn option_path(path: &Path) -> Result<String> {
    let text = path
        .to_str()
        .with_context(|| format!("{} is not UTF-8", path.display()))?;
    anyhow::ensure!(
        path.is_absolute() && !text.contains([',', ':', '\\']),
        "{text} cannot be an overlay layer (it must be absolute, without `,`, `:` or `\\`)"
    );
    Ok(text.to_owned())
}

/// What a layer's files say about one path: the whiteout of a path the layer removed is a character device
/// 0:0 (overlayfs's mark). Used to read a layer without mounting it.
pub fn is_whiteout(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    meta.file_type().is_char_device() && meta.rdev() == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_with_an_option_separator_is_no_layer() {
        assert!(option_path(Path::new("/a/b")).is_ok());
        for bad in ["/a,b", "/a:b", "rel/dir", "/a\\b"] {
            assert!(option_path(Path::new(bad)).is_err(), "{bad}");
        }
    }
}
