//! The sandbox for code the model can influence: the tests `run_tests` runs, the `shell` tool, and every gate
//! step (a repository under test is untrusted too).
//!
//! On Linux a confined command runs under bubblewrap (`bwrap`, Debian's `bubblewrap`), in new user, PID, IPC,
//! UTS, cgroup and network namespaces, with every capability dropped:
//! - the whole file system is read-only, except the directories the caller declares writable (the room or
//!   worktree, its build caches, a private home) and a private `/tmp`;
//! - the user's home is hidden; only the toolchains that PATH and the toolchain variables point into are
//!   visible (read-only), credential files in them are masked;
//! - `/run` is hidden (the sockets of other services live there);
//! - no network but loopback, unless the caller allows it;
//! - a PID namespace: when the command ends, everything it started ends with it (a `setsid` child too).
//!
//! The environment is built from an allowlist ([`child_env`]), never vouch's own, so an API key in vouch's
//! environment is not there to print. `--sandbox auto` (the default) confines where the kernel allows it and
//! warns loudly where it does not; `require` refuses to run unconfined; `off` runs commands as they are.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

/// `--sandbox`: whether code under test must, may or must not run confined.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum SandboxMode {
    /// Confine where the kernel allows it; warn loudly where it does not.
    #[default]
    Auto,
    /// Refuse to run code under test unconfined.
    Require,
    /// Run code under test unconfined (its environment is still built from the allowlist).
    Off,
}

/// What a confined command may touch.
#[derive(Clone, Debug, Default)]
pub struct Policy {
    /// Directories it may write (created if missing).
    pub writable: Vec<PathBuf>,
    /// Directories it may read although they lie in the hidden home or under `/tmp` (the user's repository).
    pub readable: Vec<PathBuf>,
    /// Whether it may reach the network (a step that downloads must say so).
    pub network: bool,
    /// Directories hidden behind an empty tmpfs before anything is put back (vouch's own cache of rooms,
    /// layers and logs, where other gates' state lives).
    pub hidden: Vec<PathBuf>,
    /// Writable directories bound at another path inside, as (outside, inside), last of all: a role's views
    /// at the paths every role's steps see ([`layered`](crate::gate::layered)).
    pub binds: Vec<(PathBuf, PathBuf)>,
}

/// The sandbox a run uses: bubblewrap when it works here, else nothing (with the reason).
#[derive(Clone, Debug)]
pub struct Sandbox {
    mode: SandboxMode,
    bwrap: Option<PathBuf>,
    /// Why commands run unconfined (mode `auto` without a working bubblewrap, or `off`).
    unconfined: Option<String>,
}

/// A sandbox that was required and cannot be had.
#[derive(Debug, thiserror::Error)]
#[error("the sandbox is required (--sandbox require) but cannot be used here: {0}")]
pub struct Unavailable(pub String);

impl Sandbox {
    /// The sandbox for `mode`: probes bubblewrap once per process.
    pub fn new(mode: SandboxMode) -> Result<Sandbox, Unavailable> {
        if mode == SandboxMode::Off {
            return Ok(Sandbox {
                mode,
                bwrap: None,
                unconfined: Some("the sandbox is off (--sandbox off)".into()),
            });
        }
        match probe() {
            Ok(bwrap) => Ok(Sandbox {
                mode,
                bwrap: Some(bwrap.clone()),
                unconfined: None,
            }),
            Err(why) if mode == SandboxMode::Require => Err(Unavailable(why.clone())),
            Err(why) => Ok(Sandbox {
                mode,
                bwrap: None,
                unconfined: Some(format!(
                    "code under test runs WITHOUT a sandbox: {why}; install bubblewrap (Debian: apt-get install bubblewrap) or pass --sandbox off to silence this"
                )),
            }),
        }
    }

    /// No confinement at all (unit tests of code that never starts untrusted commands).
    pub fn off() -> Sandbox {
        Sandbox {
            mode: SandboxMode::Off,
            bwrap: None,
            unconfined: Some("the sandbox is off (--sandbox off)".into()),
        }
    }

    pub fn mode(&self) -> SandboxMode {
        self.mode
    }

    /// Whether commands are confined.
    pub fn active(&self) -> bool {
        self.bwrap.is_some()
    }

    /// Why commands are not confined, for the console and the report; None when they are.
    pub fn warning(&self) -> Option<&str> {
        match self.mode {
            SandboxMode::Off => None,
            _ => self.unconfined.as_deref(),
        }
    }

    /// The command line that runs `argv` in `cwd` under `policy`: `argv` itself when the sandbox is not active.
    pub fn wrap(&self, argv: &[String], cwd: &Path, policy: &Policy) -> Vec<String> {
        match &self.bwrap {
            Some(bwrap) => bwrap_argv(bwrap, argv, cwd, policy, &Host::current()),
            None => argv.to_vec(),
        }
    }
}

/// Where bubblewrap is and whether it can create namespaces here, tried once per process.
fn probe() -> Result<PathBuf, String> {
    static PROBE: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    PROBE
        .get_or_init(|| {
            if !cfg!(target_os = "linux") {
                return Err("bubblewrap needs Linux namespaces".into());
            }
            let bwrap = which::which("bwrap")
                .map_err(|_| "bubblewrap (`bwrap`) is not installed".to_owned())?;
            let out = std::process::Command::new(&bwrap)
                .args([
                    "--unshare-all",
                    "--unshare-user",
                    "--die-with-parent",
                    "--cap-drop",
                    "ALL",
                    "--ro-bind",
                    "/",
                    "/",
                    "--proc",
                    "/proc",
                    "--dev",
                    "/dev",
                    "true",
                ])
                .stdin(std::process::Stdio::null())
                .output()
                .map_err(|e| format!("bubblewrap cannot start: {e}"))?;
            if out.status.success() {
                Ok(bwrap)
            } else {
                let err = String::from_utf8_lossy(&out.stderr);
                Err(format!(
                    "bubblewrap cannot create namespaces here ({}); unprivileged user namespaces may be disabled (sysctl kernel.unprivileged_userns_clone)",
                    err.trim()
                ))
            }
        })
        .clone()
}

/// What the sandbox needs to know about the machine: the home to hide and what in it stays visible.
#[derive(Clone, Debug, Default)]
struct Host {
    home: Option<PathBuf>,
    /// Directories under the home that toolchains live in (read-only inside).
    toolchains: Vec<PathBuf>,
    /// Toolchains under `/tmp` or `/var/tmp` (a virtual environment made there), which the private temporary
    /// directories would hide: put back read-only.
    temporary: Vec<PathBuf>,
}

/// Variables that point at toolchains (their directories stay visible when they lie in the home).
const TOOLCHAIN_DIRS: &[&str] = &[
    "CARGO_HOME",
    "RUSTUP_HOME",
    "GOROOT",
    "GOPATH",
    "GOMODCACHE",
    "PYENV_ROOT",
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
    "NVM_DIR",
    "VOLTA_HOME",
    "JAVA_HOME",
];

/// Toolchain homes that exist by convention when their variable is not set.
const DEFAULT_TOOLCHAIN_DIRS: &[&str] = &[".cargo", ".rustup", "go", ".pyenv", ".nvm"];

/// Files inside visible toolchain directories that hold credentials: masked with an empty file.
const CREDENTIAL_FILES: &[&str] = &[
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".pypirc",
    ".npmrc",
    ".netrc",
    ".git-credentials",
];

impl Host {
    fn current() -> Host {
        let temporary = temporary_toolchains(
            std::env::var_os("PATH")
                .map(|p| std::env::split_paths(&p).collect())
                .unwrap_or_default(),
            TOOLCHAIN_DIRS
                .iter()
                .filter_map(|v| std::env::var_os(v).filter(|v| !v.is_empty()))
                .map(PathBuf::from)
                .collect(),
        );
        let home = dirs::home_dir().filter(|h| h.is_absolute() && h != Path::new("/"));
        let Some(home) = home else {
            return Host {
                temporary,
                ..Host::default()
            };
        };
        let mut toolchains: Vec<PathBuf> = Vec::new();
        let mut add = |p: PathBuf| {
            // The top directory under the home: ~/.pyenv for ~/.pyenv/versions/3.11/bin.
            if let Ok(rel) = p.strip_prefix(&home) {
                if let Some(first) = rel.components().next() {
                    let top = home.join(first);
                    if top.exists() && !toolchains.contains(&top) {
                        toolchains.push(top);
                    }
                }
            }
        };
        if let Some(path) = std::env::var_os("PATH") {
            for dir in std::env::split_paths(&path) {
                add(dir);
            }
        }
        for var in TOOLCHAIN_DIRS {
            if let Some(dir) = std::env::var_os(var).filter(|v| !v.is_empty()) {
                add(PathBuf::from(dir));
            }
        }
        for dir in DEFAULT_TOOLCHAIN_DIRS {
            add(home.join(dir));
        }
        Host {
            home: Some(home),
            toolchains,
            temporary,
        }
    }
}

/// The toolchain directories among PATH's (`path`) and the toolchain variables' (`vars`) that lie under `/tmp` or
/// `/var/tmp`: a PATH entry's parent when it is a `bin` directory (the virtual environment), else the directory.
fn temporary_toolchains(path: Vec<PathBuf>, vars: Vec<PathBuf>) -> Vec<PathBuf> {
    let under_tmp = |p: &Path| {
        p.is_absolute()
            && p != Path::new("/tmp")
            && p != Path::new("/var/tmp")
            && (p.starts_with("/tmp") || p.starts_with("/var/tmp"))
    };
    let mut out: Vec<PathBuf> = Vec::new();
    let from_path = path.into_iter().map(|d| match d.file_name() {
        Some(n) if n == "bin" => d.parent().map_or(d.clone(), Path::to_path_buf),
        _ => d,
    });
    for dir in from_path.chain(vars) {
        if under_tmp(&dir) && dir.is_dir() && !out.iter().any(|o| dir.starts_with(o)) {
            out.push(dir);
        }
    }
    out
}

fn push(out: &mut Vec<String>, args: &[&str]) {
    out.extend(args.iter().map(|a| (*a).to_owned()));
}

fn path_str(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

/// The bubblewrap command line (pure, for tests): mounts in order, later ones over earlier ones.
fn bwrap_argv(
    bwrap: &Path,
    argv: &[String],
    cwd: &Path,
    policy: &Policy,
    host: &Host,
) -> Vec<String> {
    let mut out = vec![path_str(bwrap)];
    push(
        &mut out,
        &[
            "--die-with-parent",
            "--new-session",
            "--unshare-user",
            "--unshare-pid",
            "--unshare-ipc",
            "--unshare-uts",
            "--unshare-cgroup-try",
            "--cap-drop",
            "ALL",
        ],
    );
    if !policy.network {
        // No network: cargo resolves and fetches from what is already cached (a crate without a Cargo.lock
        // then still builds) instead of failing on an unreachable registry.
        push(
            &mut out,
            &["--unshare-net", "--setenv", "CARGO_NET_OFFLINE", "true"],
        );
    }
    push(
        &mut out,
        &[
            "--ro-bind",
            "/",
            "/",
            "--dev",
            "/dev",
            "--tmpfs",
            "/dev/shm",
            "--proc",
            "/proc",
            "--tmpfs",
            "/tmp",
            "--tmpfs",
            "/var/tmp",
            "--tmpfs",
            "/run",
        ],
    );
    let inside = |p: &Path, dirs: &[PathBuf]| dirs.iter().any(|d| p.starts_with(d));
    if let Some(home) = &host.home {
        out.push("--tmpfs".into());
        out.push(path_str(home));
        for dir in &host.toolchains {
            out.extend(["--ro-bind".into(), path_str(dir), path_str(dir)]);
        }
        for file in CREDENTIAL_FILES {
            let f = home.join(file);
            if f.is_file() && inside(&f, &host.toolchains) {
                out.extend(["--ro-bind".into(), "/dev/null".into(), path_str(&f)]);
            }
        }
    }
    for dir in &host.temporary {
        out.extend(["--ro-bind".into(), path_str(dir), path_str(dir)]);
    }
    for dir in &policy.hidden {
        if dir.is_dir() {
            out.extend(["--tmpfs".into(), path_str(dir)]);
        }
    }
    // Readable and writable places may lie in the hidden home or under the private /tmp: put them back.
    for dir in &policy.readable {
        if dir.exists() {
            out.extend(["--ro-bind".into(), path_str(dir), path_str(dir)]);
        }
    }
    for dir in &policy.writable {
        out.extend(["--bind".into(), path_str(dir), path_str(dir)]);
    }
    for (outside, inside) in &policy.binds {
        out.extend(["--bind".into(), path_str(outside), path_str(inside)]);
    }
    out.extend(["--chdir".into(), path_str(cwd), "--".into()]);
    out.extend(argv.iter().cloned());
    out
}

/// Names of variables that are never passed on, whatever the allowlist says.
pub fn is_secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    [
        "KEY",
        "TOKEN",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "CREDENTIAL",
        "AUTH",
        "COOKIE",
        "SESSION",
    ]
    .iter()
    .any(|word| upper.contains(word))
}

/// Variables passed from vouch's environment to code under test: the search path, the locale, the terminal,
/// and the toolchains' own settings.
const ALLOWED_VARS: &[&str] = &[
    "PATH",
    "LANG",
    "LANGUAGE",
    "TZ",
    "TERM",
    "USER",
    "LOGNAME",
    "SHELL",
    "CARGO_HOME",
    "RUSTUP_HOME",
    "RUSTUP_TOOLCHAIN",
    "RUSTFLAGS",
    "CARGO_BUILD_JOBS",
    "GOROOT",
    "GOPATH",
    "GOMODCACHE",
    "GOFLAGS",
    "GOPROXY",
    "GONOSUMDB",
    "GOTOOLCHAIN",
    "GO111MODULE",
    "CGO_ENABLED",
    "CC",
    "CXX",
    "PKG_CONFIG_PATH",
    "PYENV_ROOT",
    "PYENV_VERSION",
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
    "NVM_DIR",
    "NODE_PATH",
    "VOLTA_HOME",
    "JAVA_HOME",
    "CI",
];

/// The environment of a command under test: the allowlisted variables of vouch's own environment (never one
/// whose name says it is a secret), `HOME` and the temporary directory pointing at `home` and `/tmp`, then
/// `extra` (the profile's and the step's variables, which win).
pub fn child_env(home: &Path, extra: &[(String, String)]) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = Vec::new();
    let mut set = |k: &str, v: String| {
        env.retain(|(name, _)| name != k);
        env.push((k.to_owned(), v));
    };
    for (k, v) in std::env::vars() {
        let allowed = ALLOWED_VARS.contains(&k.as_str()) || k.starts_with("LC_");
        if allowed && !is_secret_name(&k) {
            set(&k, v);
        }
    }
    // Toolchains found in the real home by default must still be found when HOME moves.
    if let Some(real) = dirs::home_dir() {
        for (var, dir) in [("CARGO_HOME", ".cargo"), ("RUSTUP_HOME", ".rustup")] {
            if std::env::var_os(var).is_none() && real.join(dir).is_dir() {
                set(var, path_str(&real.join(dir)));
            }
        }
    }
    set("HOME", path_str(home));
    set("TMPDIR", "/tmp".into());
    set("XDG_CACHE_HOME", path_str(&home.join(".cache")));
    set("XDG_CONFIG_HOME", path_str(&home.join(".config")));
    set("XDG_DATA_HOME", path_str(&home.join(".local/share")));
    for (k, v) in extra {
        set(k, v.clone());
    }
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host() -> Host {
        Host {
            home: Some("/home/u".into()),
            toolchains: vec!["/home/u/.cargo".into(), "/home/u/.rustup".into()],
            temporary: Vec::new(),
        }
    }

    #[test]
    fn a_toolchain_under_tmp_is_put_back_over_the_private_tmp() {
        let venv = tempfile::tempdir_in("/tmp").unwrap();
        let bin = venv.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        let found = temporary_toolchains(
            vec![bin.clone(), "/usr/bin".into(), "/tmp".into()],
            vec![venv.path().to_path_buf(), "/tmp/does-not-exist".into()],
        );
        assert_eq!(found, vec![venv.path().to_path_buf()]);
        let mut h = host();
        h.temporary = found;
        let args = bwrap_argv(
            Path::new("/usr/bin/bwrap"),
            &argv(&["python3"]),
            Path::new("/w"),
            &Policy::default(),
            &h,
        )
        .join(" ");
        let bound = format!("--ro-bind {0} {0}", venv.path().display());
        assert!(
            args.find("--tmpfs /tmp ").unwrap() < args.find(&bound).unwrap(),
            "{args}"
        );
    }

    fn argv(s: &[&str]) -> Vec<String> {
        s.iter().map(|a| a.to_string()).collect()
    }

    #[test]
    fn the_command_runs_last_after_every_mount_with_the_home_hidden_and_toolchains_visible() {
        let policy = Policy {
            writable: vec!["/home/u/.cache/vouch/rooms/r/head".into()],
            readable: vec![],
            network: false,
            ..Policy::default()
        };
        let a = bwrap_argv(
            Path::new("/usr/bin/bwrap"),
            &argv(&["cargo", "test"]),
            Path::new("/home/u/.cache/vouch/rooms/r/head"),
            &policy,
            &host(),
        );
        let joined = a.join(" ");
        assert!(joined.starts_with("/usr/bin/bwrap --die-with-parent"));
        assert!(joined.ends_with("--chdir /home/u/.cache/vouch/rooms/r/head -- cargo test"));
        assert!(a.contains(&"--unshare-net".to_owned()));
        let pos = |needle: &str| joined.find(needle).unwrap();
        // The home is hidden before the toolchains and the room are put back, and the root is read-only first.
        assert!(pos("--ro-bind / /") < pos("--tmpfs /home/u "));
        assert!(pos("--tmpfs /home/u ") < pos("--ro-bind /home/u/.cargo /home/u/.cargo"));
        assert!(pos("--ro-bind /home/u/.rustup") < pos("--bind /home/u/.cache/vouch/rooms/r/head"));
    }

    #[test]
    fn network_is_kept_only_when_the_policy_allows_it() {
        let policy = Policy {
            network: true,
            ..Policy::default()
        };
        let a = bwrap_argv(
            Path::new("bwrap"),
            &argv(&["npm", "ci"]),
            Path::new("/r"),
            &policy,
            &host(),
        );
        assert!(!a.contains(&"--unshare-net".to_owned()));
        assert!(!a.contains(&"CARGO_NET_OFFLINE".to_owned()));
        assert!(a.contains(&"--unshare-pid".to_owned()));
        let offline = bwrap_argv(
            Path::new("bwrap"),
            &argv(&["cargo", "test"]),
            Path::new("/r"),
            &Policy::default(),
            &host(),
        );
        let at = offline.iter().position(|a| a == "CARGO_NET_OFFLINE");
        assert!(
            at.is_some_and(|i| offline[i - 1] == "--setenv" && offline[i + 1] == "true"),
            "{offline:?}"
        );
    }

    #[test]
    fn secret_looking_names_are_never_passed_on() {
        for name in [
            "OPENAI_API_KEY",
            "GITHUB_TOKEN",
            "AWS_SECRET_ACCESS_KEY",
            "DB_PASSWORD",
            "X_AUTH",
            "api_key",
        ] {
            assert!(is_secret_name(name), "{name}");
        }
        for name in ["PATH", "HOME", "CARGO_HOME", "LANG", "GOFLAGS"] {
            assert!(!is_secret_name(name), "{name}");
        }
    }

    #[test]
    fn the_child_environment_moves_home_and_lets_the_profile_win() {
        let env = child_env(
            Path::new("/tmp/h"),
            &[
                ("HOME".into(), "/elsewhere".into()),
                ("FOO".into(), "1".into()),
            ],
        );
        let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        assert_eq!(get("HOME"), Some("/elsewhere"));
        assert_eq!(get("FOO"), Some("1"));
        assert_eq!(get("TMPDIR"), Some("/tmp"));
        assert_eq!(get("XDG_CACHE_HOME"), Some("/tmp/h/.cache"));
        assert!(get("PATH").is_some());
        assert_eq!(env.iter().filter(|(n, _)| n == "HOME").count(), 1);
    }

    #[test]
    fn off_wraps_nothing_and_warns_nothing() {
        let s = Sandbox::new(SandboxMode::Off).unwrap();
        assert!(!s.active());
        assert_eq!(s.warning(), None);
        assert_eq!(
            s.wrap(&argv(&["true"]), Path::new("/"), &Policy::default()),
            argv(&["true"])
        );
    }
}
