//! Machine-specific paths replaced by placeholders before any comparison.
//!
//! Head and base run in different rooms with different caches (and with `--keep`, under `workspaces/`), and
//! tools name files by absolute path (rustfmt's `Diff in /…/room/src/lib.rs`, ruff's and go vet's file
//! names, cargo's paths into the registry). The same finding must read the same in both rooms: every such
//! path becomes `{room}`, `{cache}`, `{home}`, `{logs}` or `{tmp}` first, and a room file is then named
//! relative to the room.

use std::path::{Path, PathBuf};

/// The placeholder of the room a step ran in.
pub const ROOM: &str = "{room}";

/// Paths to replace, longest first (a room's cache directory starts like the room itself).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Scrub {
    pairs: Vec<(String, &'static str)>,
}

impl Scrub {
    /// The placeholders for a step that ran in `room` with its build cache `cache`, private home `home` and
    /// logs `logs`; the user's home and the temporary directory are always replaced.
    pub fn new(room: &Path, cache: &Path, home: &Path, logs: &Path) -> Scrub {
        let mut s = Scrub::default();
        s.add(room, ROOM);
        s.add(cache, "{cache}");
        s.add(home, "{home}");
        s.add(logs, "{logs}");
        if let Some(h) = dirs::home_dir() {
            s.add(&h, "{home}");
        }
        s.add(&std::env::temp_dir(), "{tmp}");
        s
    }

    /// Only the room (what a report's reader needs to name room files).
    /// [`Scrub::room`] for a room the steps saw at `inside` (the same path inside the sandbox for every
    /// role when the caches are layered).
    pub fn room_seen_at(room: &Path, inside: &Path) -> Scrub {
        let mut s = Scrub::room(room);
        s.add(inside, ROOM);
        s
    }

    /// Adds the paths the steps saw the room and the cache at.
    pub fn seen_at(mut self, room: &Path, cache: &Path) -> Scrub {
        self.add(room, ROOM);
        self.add(cache, "{cache}");
        self
    }

    pub fn room(room: &Path) -> Scrub {
        let mut s = Scrub::default();
        s.add(room, ROOM);
        s
    }

    /// Adds `path` (and its canonical form, when that differs) as `placeholder`.
    fn add(&mut self, path: &Path, placeholder: &'static str) {
        let canonical: Option<PathBuf> = path.canonicalize().ok();
        for p in std::iter::once(path.to_path_buf()).chain(canonical) {
            let text = p.to_string_lossy().trim_end_matches('/').to_owned();
            // The root, or a relative path, would replace far too much.
            if text.len() < 2 || !text.starts_with('/') {
                continue;
            }
            if !self.pairs.iter().any(|(t, _)| *t == text) {
                self.pairs.push((text, placeholder));
            }
        }
        self.pairs
            .sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(a.0.cmp(&b.0)));
    }

    /// `text` with every known path replaced by its placeholder, where it is a whole path component (so
    /// `/tmp/room` does not eat the start of `/tmp/room2`).
    pub fn apply(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for (path, placeholder) in &self.pairs {
            if !out.contains(path.as_str()) {
                continue;
            }
            let mut replaced = String::with_capacity(out.len());
            let mut rest = out.as_str();
            while let Some(i) = rest.find(path.as_str()) {
                let after = &rest[i + path.len()..];
                let boundary = after
                    .chars()
                    .next()
                    .is_none_or(|c| !(c.is_alphanumeric() || matches!(c, '_' | '-' | '.')));
                replaced.push_str(&rest[..i]);
                replaced.push_str(if boundary { placeholder } else { path });
                rest = after;
            }
            replaced.push_str(rest);
            out = replaced;
        }
        out
    }
}

/// A file name as a room-relative path: without `{room}/` or `./` in front.
pub fn relative(file: &str) -> String {
    let f = file.strip_prefix("{room}/").unwrap_or(file);
    f.strip_prefix("./").unwrap_or(f).to_owned()
}

/// Text with every `{room}/` removed, so room files read as in a checkout.
pub fn relative_in_text(text: &str) -> String {
    text.replace("{room}/", "")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scrub() -> Scrub {
        let mut s = Scrub::default();
        s.add(Path::new("/c/rooms/k/head"), ROOM);
        s.add(Path::new("/c/rooms/k/head.cache"), "{cache}");
        s.add(Path::new("/c/rooms/k/head.cache/home"), "{home}");
        s.add(Path::new("/tmp"), "{tmp}");
        s
    }

    #[test]
    fn the_longest_known_path_wins_and_only_whole_components_are_replaced() {
        let s = scrub();
        assert_eq!(
            s.apply("Diff in /c/rooms/k/head/src/lib.rs:3:\n/c/rooms/k/head.cache/target/x /c/rooms/k/head.cache/home/.cargo"),
            "Diff in {room}/src/lib.rs:3:\n{cache}/target/x {home}/.cargo"
        );
        assert_eq!(
            s.apply("/c/rooms/k/header and /tmp/x, /tmpfoo"),
            "/c/rooms/k/header and {tmp}/x, /tmpfoo"
        );
        assert_eq!(s.apply("at /c/rooms/k/head"), "at {room}");
    }

    #[test]
    fn two_rooms_under_different_paths_read_the_same() {
        let head = Scrub::room(Path::new("/w/gate-1/head"));
        let base = Scrub::room(Path::new("/w/gate-1/base"));
        assert_eq!(
            head.apply("Diff in /w/gate-1/head/src/lib.rs:1:"),
            base.apply("Diff in /w/gate-1/base/src/lib.rs:1:")
        );
    }

    #[test]
    fn room_files_are_named_relative_to_the_room() {
        assert_eq!(relative("{room}/src/a.rs"), "src/a.rs");
        assert_eq!(relative("./calc.go"), "calc.go");
        assert_eq!(relative("{home}/.cargo/x.rs"), "{home}/.cargo/x.rs");
        assert_eq!(
            relative_in_text("in {room}/a.py and {room}/b.py"),
            "in a.py and b.py"
        );
    }

    #[test]
    fn relative_paths_and_the_root_are_never_replaced() {
        let mut s = Scrub::default();
        s.add(Path::new("/"), ROOM);
        s.add(Path::new("rel"), ROOM);
        assert_eq!(s.apply("/usr/rel"), "/usr/rel");
    }
}
