//! Which certificate authorities vouch trusts when it talks to a forge over HTTPS. A self-hosted Gitea or
//! GitHub Enterprise often sits behind a company CA or a self-signed certificate: the user names its CA
//! bundle (`--ca-file`, `ca_file` under `[forge]` in their own vouch.toml, or `SSL_CERT_FILE`) and both
//! clients trust it besides their built-in roots: the REST client (reqwest with rustls) and git's push and
//! fetch (libgit2 with OpenSSL). A server neither trusts fails with [`UNTRUSTED_HINT`], never as "cannot
//! reach".

use std::collections::BTreeSet;
use std::error::Error as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::error::ForgeError;

/// What a certificate error adds: how to make vouch trust the server.
pub const UNTRUSTED_HINT: &str = "if the server uses a company or self-signed CA, name its CA bundle (PEM) with --ca-file, `ca_file` under [forge] in your own vouch.toml, or SSL_CERT_FILE";

/// The CA bundles trusted besides the built-in roots.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Trust {
    ca_files: Vec<PathBuf>,
}

impl Trust {
    /// `ca_file` (the flag or the user's settings) and `SSL_CERT_FILE` from the environment.
    pub fn from_env(ca_file: Option<PathBuf>) -> Trust {
        Trust::new(
            ca_file,
            std::env::var_os("SSL_CERT_FILE").map(PathBuf::from),
        )
    }

    /// `ca_file`, then `ssl_cert_file` (empty values are ignored, a file named twice counts once).
    pub fn new(ca_file: Option<PathBuf>, ssl_cert_file: Option<PathBuf>) -> Trust {
        let mut ca_files: Vec<PathBuf> = Vec::new();
        for f in [ca_file, ssl_cert_file].into_iter().flatten() {
            if !f.as_os_str().is_empty() && !ca_files.contains(&f) {
                ca_files.push(f);
            }
        }
        Trust { ca_files }
    }

    pub fn ca_files(&self) -> &[PathBuf] {
        &self.ca_files
    }

    /// `builder` trusting every certificate of the bundles as well as its built-in roots.
    pub fn reqwest(
        &self,
        mut builder: reqwest::ClientBuilder,
    ) -> Result<reqwest::ClientBuilder, ForgeError> {
        for file in &self.ca_files {
            let bad = |why: String| {
                ForgeError::Config(format!("the CA bundle {}: {why}", file.display()))
            };
            let pem = std::fs::read(file).map_err(|e| bad(format!("cannot read it: {e}")))?;
            let certs = reqwest::Certificate::from_pem_bundle(&pem)
                .map_err(|e| bad(format!("not PEM certificates: {e}")))?;
            if certs.is_empty() {
                return Err(bad("holds no PEM certificate".into()));
            }
            for cert in certs {
                builder = builder.add_root_certificate(cert);
            }
        }
        Ok(builder)
    }

    /// Makes libgit2 (push and fetch) trust the bundles as well as OpenSSL's default locations. The setting
    /// is process-wide in libgit2: each file is added once.
    pub fn install_for_git(&self) -> Result<(), String> {
        static INSTALLED: Mutex<BTreeSet<PathBuf>> = Mutex::new(BTreeSet::new());
        let mut installed = INSTALLED
            .lock()
            .map_err(|_| "the CA settings lock is poisoned".to_string())?;
        for file in &self.ca_files {
            if installed.contains(file) {
                continue;
            }
            if !file.is_file() {
                return Err(format!("the CA bundle {} is not a file", file.display()));
            }
            set_git_ca_file(file)
                .map_err(|e| format!("the CA bundle {}: {}", file.display(), e.message()))?;
            installed.insert(file.clone());
        }
        Ok(())
    }
}

/// Adds `file` to the certificate locations of libgit2's OpenSSL context.
#[allow(unsafe_code)]
fn set_git_ca_file(file: &Path) -> Result<(), git2::Error> {
    // SAFETY: libgit2 options are process-wide and not synchronised with running operations. The only
    // caller holds a process-wide lock, and vouch sets them before the push or fetch that needs them,
    // on the thread that then runs it; OpenSSL only adds the file's certificates to the context's store.
    unsafe { git2::opts::set_ssl_cert_file(file) }
}

/// The certificate problem in a failed request's causes (rustls's "invalid peer certificate: …"), if it is
/// one.
pub fn certificate_problem(e: &reqwest::Error) -> Option<String> {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = e.source();
    while let Some(c) = cause {
        let text = c.to_string();
        if text.to_lowercase().contains("certificate") {
            return Some(text);
        }
        cause = c.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_named_bundle_comes_before_ssl_cert_file_and_each_counts_once() {
        let t = Trust::new(Some("/a.pem".into()), Some("/b.pem".into()));
        assert_eq!(
            t.ca_files(),
            &[PathBuf::from("/a.pem"), PathBuf::from("/b.pem")]
        );
        let t = Trust::new(Some("/a.pem".into()), Some("/a.pem".into()));
        assert_eq!(t.ca_files(), &[PathBuf::from("/a.pem")]);
        assert_eq!(Trust::new(None, Some("".into())), Trust::default());
    }

    #[test]
    fn a_bundle_that_is_missing_or_not_pem_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing.pem");
        let err = Trust::new(Some(missing.clone()), None)
            .reqwest(reqwest::Client::builder())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("cannot read it") && err.contains("missing.pem"),
            "{err}"
        );
        let junk = dir.path().join("junk.pem");
        std::fs::write(&junk, "not a certificate\n").unwrap();
        let err = Trust::new(Some(junk), None)
            .reqwest(reqwest::Client::builder())
            .unwrap_err()
            .to_string();
        assert!(err.contains("holds no PEM certificate"), "{err}");
        let err = Trust::new(Some(missing), None)
            .install_for_git()
            .unwrap_err();
        assert!(err.contains("is not a file"), "{err}");
    }
}
