//! Reusing a room's layer: the venv without pip into which the project is installed editable.
//!
//! Making it is a `python -m venv` and a `pip install -e` (2-3 s on two cores), once per room opening, for
//! the head room and the bite room, against a test suite that may run in under a second: on small Python
//! projects that was most of a warm gate's time. An editable install only points at the room's checkout, so
//! the same layer serves the next opening of the same room as long as what the install read is the same:
//! the shared venv (its hash covers the files that declare dependencies, the settings and the interpreter),
//! the version setuptools_scm is told, and the project's top-level layout (setuptools maps top-level
//! packages and modules when it installs; a new one would not import). That is the layer's key, kept in
//! [`MARKER`].
//!
//! An install may also write into the room. Its `.egg-info` metadata is kept beside the key and put back when
//! the layer is reused (a room's reset deletes what git does not track). Anything else it wrote (a module
//! generated from the room's files, as setuptools_scm's `write_to` or a custom `setup.py` do; a compiled
//! extension) depends on files the key cannot know, so such a layer is never reused: the next opening
//! installs again.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The key and the room files of a reusable layer, as JSON in the layer.
pub(super) const MARKER: &str = ".vouch-layer.json";
/// Copies of the files the install wrote into the room, under the layer.
const ROOM_FILES: &str = ".vouch-room-files";

#[derive(Debug, Serialize, Deserialize)]
struct Marker {
    key: String,
    /// Paths relative to the room that the install created there.
    room_files: Vec<String>,
}

/// The layer's key: the shared venv it extends, the version given to the build, and the names at the top of
/// the room and of its `src/` (without dot files, `__pycache__` and `.egg-info`).
pub(super) fn key(room: &Path, shared: &Path, scm: Option<&(String, String)>) -> String {
    let mut h = Sha256::new();
    h.update(shared.to_string_lossy().as_bytes());
    h.update([0]);
    if let Some((var, version)) = scm {
        h.update(format!("{var}={version}").as_bytes());
    }
    h.update([0]);
    for dir in [room.to_path_buf(), room.join("src")] {
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .map(|rd| {
                rd.flatten()
                    .filter_map(|e| e.file_name().into_string().ok())
                    // What installs and test runs leave, which a room's reset may or may not have removed.
                    .filter(|n| {
                        !n.starts_with('.') && n != "__pycache__" && !n.ends_with(".egg-info")
                    })
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        for n in names {
            h.update(n.as_bytes());
            h.update([0]);
        }
        h.update([1]);
    }
    hex::encode(&h.finalize()[..12])
}

/// Whether `layer` was made with `key` and is whole; if so the files its install wrote into `room` are put
/// back, and it can be used as it is.
pub(super) fn reuse(layer: &Path, key: &str, room: &Path) -> bool {
    let Some(marker) = read(layer) else {
        return false;
    };
    if marker.key != key || !layer.join("bin").join("python").exists() {
        return false;
    }
    let kept = layer.join(ROOM_FILES);
    for rel in &marker.room_files {
        let to = room.join(rel);
        if to.exists() {
            continue;
        }
        let copied = to
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::copy(kept.join(rel), &to));
        if copied.is_err() {
            return false;
        }
    }
    true
}

/// The files under `room` (relative, `.git` left out), to see afterwards what an install created.
pub(super) fn files(room: &Path) -> BTreeSet<PathBuf> {
    let mut out = BTreeSet::new();
    let mut dirs = vec![room.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in rd.flatten() {
            let path = entry.path();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                if entry.file_name() != ".git" {
                    dirs.push(path);
                }
            } else if let Ok(rel) = path.strip_prefix(room) {
                out.insert(rel.to_path_buf());
            }
        }
    }
    out
}

/// Marks `layer` reusable under `key`, keeping a copy of the `.egg-info` files the install created in `room`
/// (those not in `before`); an install that created anything else there is left unmarked.
pub(super) fn mark(layer: &Path, key: &str, room: &Path, before: &BTreeSet<PathBuf>) {
    let created: Vec<PathBuf> = files(room).difference(before).cloned().collect();
    let metadata = |p: &PathBuf| {
        p.components()
            .any(|c| c.as_os_str().to_string_lossy().ends_with(".egg-info"))
    };
    if !created.iter().all(metadata) {
        let _ = std::fs::remove_file(layer.join(MARKER));
        return;
    }
    let kept = layer.join(ROOM_FILES);
    let mut room_files = Vec::new();
    for rel in &created {
        let to = kept.join(rel);
        let copied = to
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::copy(room.join(rel), &to));
        if copied.is_err() {
            return;
        }
        room_files.push(rel.to_string_lossy().into_owned());
    }
    let marker = Marker {
        key: key.to_string(),
        room_files,
    };
    if let Ok(text) = serde_json::to_string(&marker) {
        let _ = std::fs::write(layer.join(MARKER), text);
    }
}

fn read(layer: &Path) -> Option<Marker> {
    serde_json::from_str(&std::fs::read_to_string(layer.join(MARKER)).ok()?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layer_with_python(dir: &Path) -> PathBuf {
        let layer = dir.join("layer");
        std::fs::create_dir_all(layer.join("bin")).unwrap();
        std::fs::write(layer.join("bin/python"), "").unwrap();
        layer
    }

    #[test]
    fn a_marked_layer_is_reused_with_the_same_key_and_puts_back_the_installs_metadata() {
        let tmp = tempfile::tempdir().unwrap();
        let room = tmp.path().join("room");
        std::fs::create_dir_all(room.join("pkg")).unwrap();
        std::fs::write(room.join("pkg/__init__.py"), "").unwrap();
        let layer = layer_with_python(tmp.path());
        let shared = tmp.path().join("shared");
        let scm = (
            "SETUPTOOLS_SCM_PRETEND_VERSION".to_string(),
            "1.2.3".to_string(),
        );
        let k = key(&room, &shared, Some(&scm));
        let before = files(&room);
        // The metadata the install wrote into the room.
        std::fs::create_dir_all(room.join("pkg.egg-info")).unwrap();
        std::fs::write(room.join("pkg.egg-info/PKG-INFO"), "Version: 1.2.3\n").unwrap();
        mark(&layer, &k, &room, &before);
        // The room's reset deletes it; reuse puts it back.
        std::fs::remove_dir_all(room.join("pkg.egg-info")).unwrap();
        assert!(reuse(&layer, &k, &room));
        assert_eq!(
            std::fs::read_to_string(room.join("pkg.egg-info/PKG-INFO")).unwrap(),
            "Version: 1.2.3\n"
        );
        // Another version, another top-level module or another shared venv is another key.
        let other = (
            "SETUPTOOLS_SCM_PRETEND_VERSION".to_string(),
            "1.2.4".to_string(),
        );
        assert_ne!(key(&room, &shared, Some(&other)), k);
        assert_ne!(key(&room, &tmp.path().join("other"), Some(&scm)), k);
        std::fs::write(room.join("newmod.py"), "").unwrap();
        let moved = key(&room, &shared, Some(&scm));
        assert_ne!(moved, k);
        assert!(!reuse(&layer, &moved, &room));
        // A file inside a package is not part of the layout.
        std::fs::remove_file(room.join("newmod.py")).unwrap();
        std::fs::write(room.join("pkg/more.py"), "").unwrap();
        assert_eq!(key(&room, &shared, Some(&scm)), k);
    }

    #[test]
    fn an_install_that_generated_code_or_a_layer_without_python_is_not_reused() {
        let tmp = tempfile::tempdir().unwrap();
        let room = tmp.path().join("room");
        std::fs::create_dir_all(room.join("pkg")).unwrap();
        let layer = layer_with_python(tmp.path());
        let k = key(&room, tmp.path(), None);
        let before = files(&room);
        mark(&layer, &k, &room, &before);
        assert!(reuse(&layer, &k, &room));
        // A module generated from the room's files, or a compiled extension, unmarks it.
        for made in [
            "pkg/_generated.py",
            "pkg/_speedups.cpython-311-x86_64-linux-gnu.so",
        ] {
            std::fs::write(room.join(made), "").unwrap();
            mark(&layer, &k, &room, &before);
            assert!(!reuse(&layer, &k, &room), "{made}");
            std::fs::remove_file(room.join(made)).unwrap();
        }
        mark(&layer, &k, &room, &before);
        assert!(reuse(&layer, &k, &room));
        std::fs::remove_file(layer.join("bin/python")).unwrap();
        assert!(!reuse(&layer, &k, &room));
    }
}
