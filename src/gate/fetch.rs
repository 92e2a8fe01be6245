//! A room's dependencies fetched before its steps need them, for profiles that ask (`[room] fetch =
//! "cargo"`).
//!
//! Steps run without the network (the sandbox sets `CARGO_NET_OFFLINE`), so on a machine whose cargo cache
//! lacks a crate of the repository (a fresh CI runner, a repository never built here, a change that adds a
//! dependency) every cargo step failed with "no matching package named `argmax` found", at head and base
//! alike, and a correct change got `fail` (seen on fd on a fresh cache). Cargo's cache is not the change's
//! business: once per room opening, before its first cargo step, `cargo fetch --offline` checks that every
//! crate is there (the common case, no network); if it is not, `cargo fetch` downloads them, with the network,
//! sandboxed like a step, with cargo's download caches (`$CARGO_HOME/registry` and `git`) the only writable
//! places beyond the room and its cache. Fetching downloads and unpacks crates checked against the registry's
//! checksums; it compiles and runs none of them. A fetch that fails leaves the step `error`: nothing was
//! judged, and the reason says what cargo said.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::gate::profile::{Step, StepKind};
use crate::gate::steps::{Confined, StepEnv};
use crate::process;

/// How long one fetch may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(15 * 60);

/// The tool whose dependencies a profile's rooms fetch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FetchTool {
    Cargo,
}

/// How fetching a room's dependencies ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fetched {
    /// Every dependency was in the cache already, or there is nothing to fetch here.
    Present,
    /// Missing dependencies were downloaded.
    Downloaded,
    /// They could not be had: cargo's first error.
    Failed(String),
}

/// A room's dependencies, fetched at most once per room opening (by the first step that needs them).
#[derive(Clone, Debug, Default)]
pub struct RoomDeps {
    tool: Option<FetchTool>,
    state: Arc<tokio::sync::OnceCell<Fetched>>,
}

impl RoomDeps {
    pub fn new(tool: Option<FetchTool>) -> RoomDeps {
        RoomDeps {
            tool,
            state: Arc::default(),
        }
    }

    /// Fetches the dependencies if `step` needs them and that was not done yet in this room; None when the
    /// step does not need them.
    pub async fn ensure(
        &self,
        step: &Step,
        env: &StepEnv,
        cancel: &CancellationToken,
    ) -> Option<Fetched> {
        let tool = self.tool?;
        if !needs(tool, step, &env.room) {
            return None;
        }
        Some(self.state.get_or_init(|| fetch(env, cancel)).await.clone())
    }
}

/// Whether `step` builds with `tool`'s dependencies: a cargo step other than a format check, in a room
/// with a `Cargo.toml`.
fn needs(tool: FetchTool, step: &Step, room: &Path) -> bool {
    match tool {
        FetchTool::Cargo => {
            let argv = step.raw_argv();
            let program = argv
                .first()
                .and_then(|p| Path::new(p).file_name())
                .is_some_and(|p| p == "cargo");
            program && step.kind != StepKind::Format && room.join("Cargo.toml").is_file()
        }
    }
}

/// cargo's home: `CARGO_HOME`, else `~/.cargo`.
fn cargo_home() -> Option<PathBuf> {
    std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| dirs::home_dir().map(|h| h.join(".cargo")))
}

/// The room's lock file, when it has one: a room whose lock file is the one of the last fetch that worked
/// in this cache, and whose registry crates are all in the cargo home, has its crates (checking with cargo
/// costs a sandboxed run per room, about a tenth of a second).
fn lock_file(env: &StepEnv) -> Option<Vec<u8>> {
    std::fs::read(env.room.join("Cargo.lock")).ok()
}

/// Where the lock file of the last fetch that worked is kept.
fn marker(env: &StepEnv) -> PathBuf {
    env.cache.join("fetched-Cargo.lock")
}

async fn fetch(env: &StepEnv, cancel: &CancellationToken) -> Fetched {
    let lock = lock_file(env);
    // The record alone is not enough: the cargo home may be another, or emptied, since (fd's rooms, gated
    // again with an empty `CARGO_HOME`, failed offline on every step).
    let present = |lock: &[u8]| cargo_home().is_some_and(|home| crates_present(lock, &home));
    if let Some(lock) = &lock {
        if std::fs::read(marker(env)).ok().as_ref() == Some(lock) && present(lock) {
            return Fetched::Present;
        }
    }
    let remember = |fetched: Fetched| {
        // The lock file as cargo left it: a fetch writes one where there was none.
        if let Some(lock) = lock_file(env) {
            if let Err(e) = std::fs::write(marker(env), lock) {
                tracing::debug!("could not remember the fetch: {e}");
            }
        }
        fetched
    };
    let offline = run(env, false, cancel).await;
    if offline.as_ref().is_ok_and(|o| o.success()) {
        return remember(Fetched::Present);
    }
    match run(env, true, cancel).await {
        Ok(o) if o.success() => remember(Fetched::Downloaded),
        Ok(o) if o.timed_out => Fetched::Failed(format!(
            "`cargo fetch` timed out after {}",
            crate::gate::steps::human(FETCH_TIMEOUT)
        )),
        Ok(o) => Fetched::Failed(first_error(&o.head_and_tail())),
        Err(e) => Fetched::Failed(format!("`cargo fetch` could not start: {e:#}")),
    }
}

/// Whether every registry crate `lock` names is in the cargo home's download cache
/// (`registry/cache/<index>/<name>-<version>.crate`): what cargo needs to build offline. A few hundred file
/// checks, against a sandboxed `cargo fetch --offline` per room.
fn crates_present(lock: &[u8], home: &Path) -> bool {
    #[derive(Deserialize)]
    struct Lock {
        #[serde(default)]
        package: Vec<Package>,
    }
    #[derive(Deserialize)]
    struct Package {
        name: String,
        version: String,
        source: Option<String>,
    }
    let Some(lock) = std::str::from_utf8(lock)
        .ok()
        .and_then(|t| toml::from_str::<Lock>(t).ok())
    else {
        return false;
    };
    let caches: Vec<PathBuf> = std::fs::read_dir(home.join("registry").join("cache"))
        .map(|dir| dir.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    lock.package
        .iter()
        .filter(|p| {
            p.source
                .as_deref()
                .is_some_and(|s| s.starts_with("registry+") || s.starts_with("sparse+"))
        })
        .all(|p| {
            let file = format!("{}-{}.crate", p.name, p.version);
            caches.iter().any(|dir| dir.join(&file).is_file())
        })
}

/// Runs `cargo fetch` in the room, sandboxed: offline, or with the network and cargo's download caches
/// writable.
async fn run(
    env: &StepEnv,
    network: bool,
    cancel: &CancellationToken,
) -> anyhow::Result<process::Outcome> {
    let mut argv: Vec<String> = vec!["cargo".into(), "fetch".into()];
    let mut writable = Vec::new();
    if network {
        if let Some(home) = cargo_home() {
            for dir in ["registry", "git"] {
                let d = home.join(dir);
                std::fs::create_dir_all(&d)?;
                writable.push(d);
            }
        }
    } else {
        argv.push("--offline".into());
    }
    std::fs::create_dir_all(&env.logs)?;
    let vars: Vec<(String, String)> = env
        .profile_env
        .iter()
        .map(|(k, v)| (k.clone(), env.expand(v, &env.logs)))
        .collect();
    let how = Confined {
        vars: &vars,
        writable,
        network,
        phase: crate::gate::layered::Phase::Build,
        binds: Vec::new(),
    };
    let stem = if network { "fetch" } else { "fetch-offline" };
    let spec = env.confined_spec(argv, how, stem, FETCH_TIMEOUT, true);
    process::run_clean_env(&spec, cancel).await
}

/// cargo's first `error:` line (with the next line, which names the package), else the output's last line.
fn first_error(output: &str) -> String {
    let lines: Vec<&str> = output.lines().map(str::trim).collect();
    match lines.iter().position(|l| l.starts_with("error")) {
        Some(i) => lines[i..]
            .iter()
            .take(2)
            .copied()
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join(" "),
        None => lines
            .iter()
            .rev()
            .find(|l| !l.is_empty())
            .map_or_else(|| "cargo fetch failed".into(), |l| l.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crates_are_present_when_the_cargo_home_holds_every_registry_crate_of_the_lock() {
        let home = tempfile::tempdir().unwrap();
        let lock = b"version = 3\n\n[[package]]\nname = \"m\"\nversion = \"0.1.0\"\n\n[[package]]\nname = \"memchr\"\nversion = \"2.8.3\"\nsource = \"registry+https://github.com/rust-lang/crates.io-index\"\n";
        assert!(!crates_present(lock, home.path()));
        let cache = home
            .path()
            .join("registry/cache/index.crates.io-1949cf8c6b5b557f");
        std::fs::create_dir_all(&cache).unwrap();
        assert!(!crates_present(lock, home.path()));
        std::fs::write(cache.join("memchr-2.8.3.crate"), b"").unwrap();
        assert!(crates_present(lock, home.path()));
        assert!(!crates_present(b"not toml [", home.path()));
    }

    #[test]
    fn the_first_error_is_quoted_with_its_next_line() {
        let out = "    Updating crates.io index\nerror: no matching package named `argmax` found\nlocation searched: crates.io index\nrequired by package `fd-find v8.4.0`\n";
        assert_eq!(
            first_error(out),
            "error: no matching package named `argmax` found location searched: crates.io index"
        );
        assert_eq!(first_error("\nsomething odd\n\n"), "something odd");
    }
}
