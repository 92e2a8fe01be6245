//! The sandbox for code the model can influence: the tests `run_tests` runs, the `shell` tool, and every gate
//! step (a repository under test is untrusted too).
//!
//! On Linux a confined command runs under bubblewrap (`bwrap`, Debian's `bubblewrap`), in new user, PID, IPC,
//! UTS, cgroup and network namespaces, with every capability dropped:
//! - only what a command needs is there at all, read-only: the system's programs, libraries and configuration
//!   (`/usr`, `/etc`, `/opt`, ...), the toolchains PATH and the toolchain variables point into, and what the
//!   caller declares readable (the repository's objects) or writable (the room or worktree, its build
//!   caches, a private home); a private, bounded `/tmp`. Everything else (the user's checkout and home,
//!   vouch's data with other runs' records, `/var`, `/run`, `/srv`, `/mnt`, ...) is not there, so a new
//!   place for secrets or sockets is hidden without anyone naming it;
//! - in what is visible, credential files are masked, cargo's configuration is replaced by a copy without
//!   registry tokens or credential providers, and every path a unix socket of this machine is bound at
//!   (`/proc/net/unix`) is covered with an empty file;
//! - no network but loopback, unless the caller allows it (abstract unix sockets belong to the network
//!   namespace, so they go with it);
//! - a PID namespace: when the command ends, everything it started ends with it (a `setsid` child too);
//! - caps ([`Limits`]): processes (a pids cgroup where one can be made, and RLIMIT_NPROC inside the user
//!   namespace, which counts only the sandbox's processes), the size of a file (RLIMIT_FSIZE), the size of
//!   `/tmp`, and the log kept of a step.
//!
//! Before the first confined command, [`Sandbox::prove`] tries a forbidden write and a connect from inside
//! and refuses to go on if either works or if nothing ran at all.
//!
//! The environment is built from an allowlist ([`child_env`]), never vouch's own, so an API key in vouch's
//! environment is not there to print. `--sandbox auto` (the default) confines where the kernel allows it and
//! warns loudly where it does not; `require` refuses to run unconfined; `off` runs commands as they are.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

mod host;
mod limits;
mod proof;

use host::*;
pub use limits::*;
pub use proof::*;

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
    /// Files or directories bound read-only at a path inside, as (outside, inside), after everything else:
    /// the worktree's `.git` file and a room's `.git`, which vouch's own git operations must be able to trust.
    pub read_only: Vec<(PathBuf, PathBuf)>,
}

/// The sandbox a run uses: bubblewrap when it works here, else nothing (with the reason).
#[derive(Clone, Debug)]
pub struct Sandbox {
    mode: SandboxMode,
    bwrap: Option<PathBuf>,
    /// Why commands run unconfined (mode `auto` without a working bubblewrap, or `off`).
    unconfined: Option<String>,
    limits: Limits,
    /// util-linux's `prlimit`, which sets RLIMIT_NPROC inside the user namespace.
    prlimit: Option<PathBuf>,
}

/// A sandbox that was required and cannot be had.
#[derive(Debug, thiserror::Error)]
#[error("the sandbox is required (--sandbox require) but cannot be used here: {0}")]
pub struct Unavailable(pub String);

impl Sandbox {
    /// The sandbox for `mode`: probes bubblewrap once per process.
    pub fn new(mode: SandboxMode) -> Result<Sandbox, Unavailable> {
        if mode == SandboxMode::Off {
            return Ok(Sandbox::off());
        }
        match probe() {
            Ok(bwrap) => Ok(Sandbox {
                mode,
                bwrap: Some(bwrap.clone()),
                unconfined: None,
                limits: Limits::from_env(),
                prlimit: which::which("prlimit").ok(),
            }),
            Err(why) if mode == SandboxMode::Require => Err(Unavailable(why.clone())),
            Err(why) => Ok(Sandbox {
                mode,
                bwrap: None,
                unconfined: Some(format!(
                    "code under test runs WITHOUT a sandbox: {why}; install bubblewrap (Debian: apt-get install bubblewrap) or pass --sandbox off to silence this"
                )),
                limits: Limits::from_env(),
                prlimit: None,
            }),
        }
    }

    /// No confinement at all (unit tests of code that never starts untrusted commands).
    pub fn off() -> Sandbox {
        Sandbox {
            mode: SandboxMode::Off,
            bwrap: None,
            unconfined: Some("the sandbox is off (--sandbox off)".into()),
            limits: Limits::from_env(),
            prlimit: None,
        }
    }

    /// The caps of every command under test.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// The caps a command's process spec carries (the pids cgroup only for confined commands: unconfined,
    /// a test may well need the user's other processes' share).
    pub fn caps(&self) -> crate::process::Caps {
        crate::process::Caps {
            pids: self.active().then_some(self.limits.pids),
            file_size: Some(self.limits.file_size),
            log: Some(self.limits.log),
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
        let Some(bwrap) = &self.bwrap else {
            return argv.to_vec();
        };
        let mut inner = Vec::new();
        if let Some(prlimit) = &self.prlimit {
            inner.extend([
                path_str(prlimit),
                format!("--nproc={}", self.limits.pids),
                "--".into(),
            ]);
        }
        inner.extend(argv.iter().cloned());
        let host = Host::current(self.limits.tmp_size);
        bwrap_argv(bwrap, &inner, cwd, policy, &host)
    }

    /// Proves the sandbox holds, once per process, before the first confined command: from inside, a write
    /// to a place the policy makes read-only and a TCP connect to a port vouch listens on outside must be
    /// tried and refused. Either going through, or nothing running at all (bubblewrap failing to start, a
    /// missing program), is an error: vouch does not run code under test in a sandbox it cannot show is on.
    /// Nothing to prove when commands run unconfined (that is warned about, or refused, already).
    pub fn prove(&self) -> anyhow::Result<()> {
        if !self.active() {
            return Ok(());
        }
        static PROOF: OnceLock<Result<(), String>> = OnceLock::new();
        PROOF
            .get_or_init(|| prove_once(self))
            .clone()
            .map_err(|why| {
                crate::error::VouchError::infra_hint(
                    format!("the sandbox does not hold, so nothing under test runs: {why}"),
                    "check bubblewrap and the kernel's namespaces (vouch tried a write and a connect from inside)",
                )
                .into()
            })
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

fn push(out: &mut Vec<String>, args: &[&str]) {
    out.extend(args.iter().map(|a| (*a).to_owned()));
}

fn path_str(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

/// A test hook, never for real use: `VOUCH_TEST_SANDBOX_HOLE=write` binds readable places writable and
/// `=net` keeps the host's network, so tests can show that [`Sandbox::prove`] refuses such a sandbox.
const HOLE_VAR: &str = "VOUCH_TEST_SANDBOX_HOLE";

/// The bubblewrap command line (pure but for the test hook, for tests): mounts in order, later ones over
/// earlier ones; the root itself is an empty directory of bubblewrap's, read-only at the end.
fn bwrap_argv(
    bwrap: &Path,
    argv: &[String],
    cwd: &Path,
    policy: &Policy,
    host: &Host,
) -> Vec<String> {
    let hole = std::env::var(HOLE_VAR).unwrap_or_default();
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
    if !policy.network && hole != "net" {
        // No network: cargo resolves and fetches from what is already cached (a crate without a Cargo.lock
        // then still builds) instead of failing on an unreachable registry.
        push(
            &mut out,
            &["--unshare-net", "--setenv", "CARGO_NET_OFFLINE", "true"],
        );
    }
    let ro = |out: &mut Vec<String>, from: &Path, to: &Path| {
        out.extend(["--ro-bind".into(), path_str(from), path_str(to)]);
    };
    for (dir, link) in &host.system {
        match link {
            Some(to) => out.extend(["--symlink".into(), path_str(to), path_str(dir)]),
            None => ro(&mut out, dir, dir),
        }
    }
    let tmp_size = host.tmp_size.max(1 << 20).to_string();
    push(&mut out, &["--dev", "/dev", "--proc", "/proc"]);
    for dir in ["/dev/shm", "/tmp", "/var/tmp"] {
        push(&mut out, &["--size", &tmp_size, "--tmpfs", dir]);
    }
    if policy.network {
        if let Some(resolv) = &host.resolv {
            ro(&mut out, resolv, resolv);
        }
    }
    for dir in host
        .toolchains
        .iter()
        .chain(&host.elsewhere)
        .chain(&host.temporary)
    {
        ro(&mut out, dir, dir);
    }
    let inside = |p: &Path, dirs: &[PathBuf]| dirs.iter().any(|d| p.starts_with(d));
    if let Some(home) = &host.home {
        for file in CREDENTIAL_FILES {
            let f = home.join(file);
            if f.is_file() && inside(&f, &host.toolchains) {
                ro(&mut out, Path::new("/dev/null"), &f);
            }
        }
    }
    for file in &host.credentials {
        ro(&mut out, Path::new("/dev/null"), file);
    }
    for (file, over) in &host.cargo_configs {
        ro(&mut out, over, file);
    }
    // What is shown so far (the system, the toolchains); vouch's data and the caller's hidden places are
    // covered where they lie in it, before the readable and writable places are put back.
    let shown: Vec<PathBuf> = host
        .system
        .iter()
        .filter(|(_, link)| link.is_none())
        .map(|(d, _)| d.clone())
        .chain(host.toolchains.iter().cloned())
        .chain(host.elsewhere.iter().cloned())
        .chain(host.temporary.iter().cloned())
        .collect();
    for dir in host.data.iter().chain(&policy.hidden) {
        if dir.is_dir() && inside(dir, &shown) {
            out.extend(["--tmpfs".into(), path_str(dir)]);
        }
    }
    let readable_bind = if hole == "write" {
        "--bind"
    } else {
        "--ro-bind"
    };
    for dir in &policy.readable {
        if dir.exists() {
            out.extend([readable_bind.into(), path_str(dir), path_str(dir)]);
        }
    }
    for dir in &policy.writable {
        out.extend(["--bind".into(), path_str(dir), path_str(dir)]);
    }
    for (outside, inside) in &policy.binds {
        out.extend(["--bind".into(), path_str(outside), path_str(inside)]);
    }
    // Every socket path in a visible place: covered, so that connecting to it finds no socket.
    let visible: Vec<PathBuf> = shown
        .iter()
        .chain(&policy.readable)
        .chain(&policy.writable)
        .cloned()
        .collect();
    for socket in &host.sockets {
        if inside(socket, &visible) && !inside(socket, &policy.hidden) {
            ro(&mut out, Path::new("/dev/null"), socket);
        }
    }
    for (outside, inside) in &policy.read_only {
        if outside.exists() {
            ro(&mut out, outside, inside);
        }
    }
    push(&mut out, &["--remount-ro", "/"]);
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
            system: vec![
                ("/usr".into(), None),
                ("/etc".into(), None),
                ("/bin".into(), Some("usr/bin".into())),
            ],
            tmp_size: 1 << 30,
            ..Host::default()
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
        assert!(joined
            .ends_with("--remount-ro / --chdir /home/u/.cache/vouch/rooms/r/head -- cargo test"));
        assert!(a.contains(&"--unshare-net".to_owned()));
        let pos = |needle: &str| joined.find(needle).unwrap();
        // Only the system's directories are bound, never the root; a link stays a link.
        assert!(!joined.contains("--ro-bind / /"), "{joined}");
        assert!(
            !joined.contains("/home/u "),
            "the home itself is not there: {joined}"
        );
        assert!(pos("--ro-bind /usr /usr") < pos("--ro-bind /home/u/.cargo /home/u/.cargo"));
        assert!(joined.contains("--symlink usr/bin /bin"), "{joined}");
        assert!(
            joined.contains("--size 1073741824 --tmpfs /tmp"),
            "{joined}"
        );
        assert!(pos("--ro-bind /home/u/.rustup") < pos("--bind /home/u/.cache/vouch/rooms/r/head"));
    }

    #[test]
    fn read_only_binds_and_socket_masks_come_after_the_writable_places() {
        let mut h = host();
        h.sockets = vec![
            "/home/u/.cache/vouch/rooms/r/head/s.sock".into(),
            "/usr/lib/x.sock".into(),
            "/srv/elsewhere.sock".into(),
        ];
        let room = PathBuf::from("/home/u/.cache/vouch/rooms/r/head");
        let policy = Policy {
            writable: vec![room.clone()],
            read_only: vec![("/".into(), room.join(".git"))],
            ..Policy::default()
        };
        let joined = bwrap_argv(Path::new("bwrap"), &argv(&["true"]), &room, &policy, &h).join(" ");
        let pos = |needle: &str| joined.find(needle).unwrap();
        assert!(
            pos("--bind /home/u/.cache/vouch/rooms/r/head")
                < pos("--ro-bind / /home/u/.cache/vouch/rooms/r/head/.git")
        );
        assert!(
            pos("--bind /home/u/.cache")
                < pos("--ro-bind /dev/null /home/u/.cache/vouch/rooms/r/head/s.sock")
        );
        assert!(
            joined.contains("--ro-bind /dev/null /usr/lib/x.sock"),
            "{joined}"
        );
        assert!(
            !joined.contains("elsewhere.sock"),
            "a socket in no visible place needs no mask: {joined}"
        );
    }

    #[test]
    fn socket_paths_are_read_from_the_kernels_table() {
        let table = "Num       RefCount Protocol Flags    Type St Inode Path\n\
            0000: 00000002 00000000 00010000 0001 01 1234 /run/user/1000/bus\n\
            0000: 00000002 00000000 00010000 0001 01 1235 @/tmp/.X11-unix/X0\n\
            0000: 00000003 00000000 00000000 0001 03 1236\n\
            0000: 00000002 00000000 00010000 0001 01 1237 /run/user/1000/bus\n";
        assert_eq!(
            socket_paths(table),
            vec![PathBuf::from("/run/user/1000/bus")]
        );
    }

    #[test]
    fn sizes_read_with_binary_units() {
        assert_eq!(parse_size("4G"), Some(4 << 30));
        assert_eq!(parse_size("512MiB"), Some(512 << 20));
        assert_eq!(parse_size("64k"), Some(64 << 10));
        assert_eq!(parse_size("300"), Some(300));
        assert_eq!(parse_size("lots"), None);
        assert_eq!(parse_size(""), None);
    }

    #[test]
    fn cargos_configuration_is_shown_without_tokens_or_credential_providers() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("config.toml");
        std::fs::write(
            &file,
            "[registry]\ntoken = \"t1\"\ncredential-provider = \"cargo:token\"\n\n\
             [registries.corp]\nindex = \"sparse+https://corp/\"\ntoken = \"t2\"\n\n\
             [credential-alias]\nmine = \"x\"\n\n[env]\nNPM_TOKEN = \"t3\"\nRUST_LOG = \"info\"\n\n[net]\nretry = 7\n",
        )
        .unwrap();
        let copy = sanitized_cargo_config(&file).unwrap();
        let text = std::fs::read_to_string(copy).unwrap();
        for gone in ["t1", "t2", "t3", "cargo:token", "credential-alias"] {
            assert!(!text.contains(gone), "{gone} in {text}");
        }
        for kept in ["retry = 7", "sparse+https://corp/", "RUST_LOG"] {
            assert!(text.contains(kept), "{kept} not in {text}");
        }
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
