//! What the sandbox needs to know about the machine: what of it is visible inside, what in that is masked.

use std::path::{Path, PathBuf};

use super::*;

/// What the sandbox needs to know about the machine: what of it is visible inside, and what in that is masked.
#[derive(Clone, Debug, Default)]
pub(super) struct Host {
    pub(super) home: Option<PathBuf>,
    /// Directories under the home that toolchains live in (read-only inside).
    pub(super) toolchains: Vec<PathBuf>,
    /// Toolchains under `/tmp` or `/var/tmp` (a virtual environment made there), which the private temporary
    /// directories would hide: put back read-only.
    pub(super) temporary: Vec<PathBuf>,
    /// Toolchains outside the home, the system directories and `/tmp` (`/work/go/bin` on PATH).
    pub(super) elsewhere: Vec<PathBuf>,
    /// The top-level system directories that exist here, and what each is (a directory or a symbolic link).
    pub(super) system: Vec<(PathBuf, Option<PathBuf>)>,
    /// Cargo configuration files in visible toolchains, with what to bind over each (a copy without
    /// credentials, or `/dev/null`).
    pub(super) cargo_configs: Vec<(PathBuf, PathBuf)>,
    /// Credential files in visible toolchains outside the home (`$CARGO_HOME/credentials.toml`).
    pub(super) credentials: Vec<PathBuf>,
    /// The paths unix sockets of this network namespace are bound at.
    pub(super) sockets: Vec<PathBuf>,
    /// vouch's data directory (other runs' transcripts and records), hidden where something above shows it.
    pub(super) data: Option<PathBuf>,
    /// Where `/etc/resolv.conf` points when it is a link out of `/etc` (systemd-resolved's file under `/run`).
    pub(super) resolv: Option<PathBuf>,
    /// The size of the private temporary directories.
    pub(super) tmp_size: u64,
}

/// The top-level directories of a Linux system that programs, libraries and system configuration live in:
/// the only part of the root that is visible inside (read-only). Not `/home`, `/root`, `/var`, `/run`,
/// `/srv`, `/mnt`, `/media` or anything a user or a CI system makes at the top (`/work`, `/builds`).
pub(super) const SYSTEM_DIRS: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/nix", "/sys",
];

/// Variables that point at toolchains (their directories stay visible when they lie in the home).
pub(super) const TOOLCHAIN_DIRS: &[&str] = &[
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
pub(super) const DEFAULT_TOOLCHAIN_DIRS: &[&str] = &[".cargo", ".rustup", "go", ".pyenv", ".nvm"];

/// Files inside visible toolchain directories that hold credentials: masked with an empty file.
pub(super) const CREDENTIAL_FILES: &[&str] = &[
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".pypirc",
    ".npmrc",
    ".netrc",
    ".git-credentials",
];

impl Host {
    pub(super) fn current(tmp_size: u64) -> Host {
        let path: Vec<PathBuf> = std::env::var_os("PATH")
            .map(|p| std::env::split_paths(&p).collect())
            .unwrap_or_default();
        let vars: Vec<PathBuf> = TOOLCHAIN_DIRS
            .iter()
            .filter_map(|v| std::env::var_os(v).filter(|v| !v.is_empty()))
            .map(PathBuf::from)
            .collect();
        let temporary = temporary_toolchains(path.clone(), vars.clone());
        let system: Vec<(PathBuf, Option<PathBuf>)> = SYSTEM_DIRS
            .iter()
            .map(PathBuf::from)
            .filter_map(|d| match std::fs::symlink_metadata(&d) {
                Ok(m) if m.file_type().is_symlink() => {
                    std::fs::read_link(&d).ok().map(|to| (d, Some(to)))
                }
                Ok(m) if m.is_dir() => Some((d, None)),
                _ => None,
            })
            .collect();
        let home = dirs::home_dir().filter(|h| h.is_absolute() && h != Path::new("/"));
        let in_system = |p: &Path| system.iter().any(|(d, _)| p.starts_with(d));
        let under_tmp = |p: &Path| p.starts_with("/tmp") || p.starts_with("/var/tmp");
        let mut toolchains: Vec<PathBuf> = Vec::new();
        let mut elsewhere: Vec<PathBuf> = Vec::new();
        {
            let mut add = |p: &Path| {
                if !p.is_absolute() || p == Path::new("/") || in_system(p) || under_tmp(p) {
                    return;
                }
                match home
                    .as_ref()
                    .and_then(|h| p.strip_prefix(h).ok().map(|rel| (h, rel)))
                {
                    // The top directory under the home: ~/.pyenv for ~/.pyenv/versions/3.11/bin.
                    Some((h, rel)) => {
                        if let Some(first) = rel.components().next() {
                            let top = h.join(first);
                            if top.exists() && !toolchains.contains(&top) {
                                toolchains.push(top);
                            }
                        }
                    }
                    // A `bin` directory's parent: a virtual environment needs its `lib` and `pyvenv.cfg`.
                    None => {
                        let p = match p.file_name() {
                            Some(n) if n == "bin" => p.parent().unwrap_or(p),
                            _ => p,
                        };
                        if p.is_dir()
                            && p != Path::new("/")
                            && !elsewhere.iter().any(|e| p.starts_with(e))
                        {
                            elsewhere.retain(|e| !e.starts_with(p));
                            elsewhere.push(p.to_path_buf());
                        }
                    }
                }
            };
            for dir in path.iter().chain(&vars) {
                add(dir);
            }
            if let Some(h) = &home {
                for dir in DEFAULT_TOOLCHAIN_DIRS {
                    add(&h.join(dir));
                }
            }
        }
        let visible = |p: &Path| {
            in_system(p)
                || toolchains
                    .iter()
                    .chain(&elsewhere)
                    .chain(&temporary)
                    .any(|d| p.starts_with(d))
        };
        let cargo_homes: Vec<PathBuf> = std::env::var_os("CARGO_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .into_iter()
            .chain(home.as_ref().map(|h| h.join(".cargo")))
            .filter(|d| d.is_dir() && visible(d))
            .collect();
        let mut cargo_configs = Vec::new();
        let mut credentials = Vec::new();
        for dir in &cargo_homes {
            for name in ["config.toml", "config"] {
                let file = dir.join(name);
                if file.is_file() && !cargo_configs.iter().any(|(f, _)| f == &file) {
                    let over = sanitized_cargo_config(&file).unwrap_or_else(|| "/dev/null".into());
                    cargo_configs.push((file, over));
                }
            }
            for name in ["credentials", "credentials.toml"] {
                let file = dir.join(name);
                if file.is_file() && !credentials.contains(&file) {
                    credentials.push(file);
                }
            }
        }
        let sockets = std::fs::read_to_string("/proc/net/unix")
            .map(|t| socket_paths(&t))
            .unwrap_or_default();
        let resolv = std::fs::read_link("/etc/resolv.conf")
            .ok()
            .and_then(|_| std::fs::canonicalize("/etc/resolv.conf").ok())
            .filter(|to| !visible(to));
        Host {
            home,
            toolchains,
            temporary,
            elsewhere,
            system,
            cargo_configs,
            credentials,
            sockets,
            data: Some(crate::agent::records::data_dir()),
            resolv,
            tmp_size,
        }
    }
}

/// The paths of the bound unix sockets in `/proc/net/unix` (abstract and unnamed ones have none).
pub(super) fn socket_paths(table: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = table
        .lines()
        .skip(1)
        .filter_map(|line| line.split_whitespace().nth(7))
        .filter(|p| p.starts_with('/'))
        .map(PathBuf::from)
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Cargo's configuration without what could authenticate to a registry: `[registry] token`,
/// `credential-provider` and `global-credential-providers`, every `[registries.*]` token and credential
/// provider, `[credential-alias]`, and `[env]` variables whose names say they are secrets. Written next to
/// the system's temporary files under a name of its content; None when the file cannot be read as TOML or
/// the copy cannot be written (the caller then binds an empty file).
pub(super) fn sanitized_cargo_config(file: &Path) -> Option<PathBuf> {
    let text = std::fs::read_to_string(file).ok()?;
    let mut table: toml::Table = text.parse().ok()?;
    if let Some(toml::Value::Table(registry)) = table.get_mut("registry") {
        for key in [
            "token",
            "credential-provider",
            "global-credential-providers",
        ] {
            registry.remove(key);
        }
    }
    if let Some(toml::Value::Table(registries)) = table.get_mut("registries") {
        for (_, reg) in registries.iter_mut() {
            if let toml::Value::Table(reg) = reg {
                reg.remove("token");
                reg.remove("credential-provider");
            }
        }
    }
    table.remove("credential-alias");
    if let Some(toml::Value::Table(env)) = table.get_mut("env") {
        env.retain(|name, _| !is_secret_name(name));
    }
    let clean = toml::to_string(&table).ok()?;
    let hash = {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        clean.hash(&mut h);
        h.finish()
    };
    // The uid keeps users apart in a shared temporary directory.
    let dest = std::env::temp_dir().join(format!(
        "vouch-cargo-config-{}-{hash:016x}.toml",
        whoami_uid()
    ));
    // Reused only when it is our own regular file with exactly this content; else written anew.
    let ours = std::fs::symlink_metadata(&dest).ok().is_some_and(|m| {
        use std::os::unix::fs::MetadataExt;
        m.is_file() && m.uid() == whoami_uid()
    }) && std::fs::read_to_string(&dest).ok().as_deref() == Some(clean.as_str());
    if !ours {
        let mut tmp = tempfile::NamedTempFile::new().ok()?;
        std::io::Write::write_all(&mut tmp, clean.as_bytes()).ok()?;
        tmp.persist(&dest).ok()?;
    }
    Some(dest)
}

/// The real user id of vouch's process.
pub(super) fn whoami_uid() -> u32 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").map_or(u32::MAX, |m| m.uid())
}

/// The toolchain directories among PATH's (`path`) and the toolchain variables' (`vars`) that lie under `/tmp` or
/// `/var/tmp`: a PATH entry's parent when it is a `bin` directory (the virtual environment), else the directory.
pub(super) fn temporary_toolchains(path: Vec<PathBuf>, vars: Vec<PathBuf>) -> Vec<PathBuf> {
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
