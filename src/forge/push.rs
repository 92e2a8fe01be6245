//! Pushing a branch with git2. Over HTTP(S) the token comes from the environment through the credential
//! callback, never from or into a URL, the repository's config or a log; over SSH the agent is asked. The
//! push is leased on the remote's branch as observed just before: when it holds commits the local branch
//! does not contain (commits vouch did not make), nothing is pushed; and the refspec is not forced, so a
//! remote that moves between the look and the push refuses the update rather than losing those commits.
//! An SSH server is trusted only by the host key in the user's known_hosts (see [`super::ssh`]).

use std::cell::{Cell, RefCell};
use std::path::Path;

use git2::{
    CertificateCheckStatus, Cred, CredentialType, Direction, Oid, PushOptions, Remote,
    RemoteCallbacks, Repository,
};
use thiserror::Error;

use super::ssh::{self, HostKey};
use super::tls::{Trust, UNTRUSTED_HINT};
use super::{redact_url, Secret};

/// The credentials a push may use.
#[derive(Clone, Debug, Default)]
pub struct Credentials {
    /// The token and the variable it came from (for messages).
    pub token: Option<(Secret, String)>,
    /// The user name sent with the token when the URL has none.
    pub user: String,
    /// The CA bundles trusted over HTTPS besides OpenSSL's defaults.
    pub trust: Trust,
}

/// What a push did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Pushed {
    /// The remote had no such branch.
    Created { sha: Oid },
    /// The remote branch moved forward from `from`.
    Updated { from: Oid, to: Oid },
    /// The remote branch was at the local commit already.
    UpToDate { sha: Oid },
}

impl Pushed {
    pub fn sha(&self) -> Oid {
        match self {
            Pushed::Created { sha }
            | Pushed::UpToDate { sha }
            | Pushed::Updated { to: sha, .. } => *sha,
        }
    }
}

#[derive(Debug, Error)]
pub enum PushError {
    /// The remote branch has commits the local branch does not contain.
    #[error("the remote branch {branch} is at {remote}, which has commits vouch did not make (not in the local branch); nothing was pushed. Pull them into the branch, or push under another name")]
    Lease { branch: String, remote: String },
    /// The remote refused the update (a push that is not a fast-forward, a protected branch, a hook).
    #[error("the remote refused {refname}: {message}")]
    Rejected { refname: String, message: String },
    /// The remote asked for credentials vouch does not have or it refused them.
    #[error("{0}")]
    Auth(String),
    /// An SSH server whose host key is not in the user's known_hosts, or is another key than the one there.
    #[error("{0}")]
    HostKey(String),
    /// The remote's TLS certificate is not trusted (an unknown CA, a self-signed certificate, another name).
    #[error("the remote's TLS certificate failed verification ({0}); {hint}", hint = UNTRUSTED_HINT)]
    Certificate(String),
    /// A CA bundle the settings name cannot be used.
    #[error("{0}")]
    CaBundle(String),
    /// The remote could not be reached: DNS, connection, TLS or SSH transport.
    #[error("cannot reach the remote: {0}")]
    Network(String),
    #[error("no local branch {0}")]
    NoBranch(String),
    #[error("git: {0}")]
    Git(#[from] git2::Error),
}

/// Pushes the local branch `branch` to `remote_branch` on `remote` (a remote's name or a URL).
pub fn push(
    repo_dir: &Path,
    remote: &str,
    branch: &str,
    remote_branch: &str,
    creds: &Credentials,
) -> Result<Pushed, PushError> {
    creds.trust.install_for_git().map_err(PushError::CaBundle)?;
    let repo = Repository::open(repo_dir)?;
    let local = repo
        .find_branch(branch, git2::BranchType::Local)
        .map_err(|_| PushError::NoBranch(branch.to_string()))?
        .get()
        .peel_to_commit()?
        .id();
    let mut remote = open_remote(&repo, remote)?;
    let url = remote.url().unwrap_or_default().to_string();
    let dst = format!("refs/heads/{remote_branch}");
    let observed = {
        let seen = Seen::new(&url);
        let callbacks = callbacks(creds, &seen);
        let conn = remote.connect_auth(Direction::Push, Some(callbacks), None);
        let conn = match conn {
            Ok(c) => c,
            Err(e) => return Err(seen.error(e, &url)),
        };
        let observed = conn
            .list()?
            .iter()
            .find(|h| h.name() == dst)
            .map(|h| h.oid());
        observed
    };
    if let Some(seen) = observed {
        if seen == local {
            return Ok(Pushed::UpToDate { sha: local });
        }
        let contained = repo.find_commit(seen).is_ok() && repo.graph_descendant_of(local, seen)?;
        if !contained {
            return Err(PushError::Lease {
                branch: remote_branch.to_string(),
                remote: seen.to_string(),
            });
        }
    }
    let rejected = RefCell::new(None);
    let seen = Seen::new(&url);
    let mut callbacks = callbacks(creds, &seen);
    callbacks.push_update_reference(|refname, status| {
        if let Some(message) = status {
            *rejected.borrow_mut() = Some(PushError::Rejected {
                refname: refname.to_string(),
                message: message.to_string(),
            });
        }
        Ok(())
    });
    let mut opts = PushOptions::new();
    opts.remote_callbacks(callbacks);
    // Not forced (no leading `+`): the remote itself refuses anything but a fast-forward of what we saw.
    let refspec = format!("refs/heads/{branch}:{dst}");
    if let Err(e) = remote.push(&[refspec.as_str()], Some(&mut opts)) {
        return Err(seen.error(e, &url));
    }
    drop(opts);
    if let Some(e) = rejected.into_inner() {
        return Err(e);
    }
    Ok(match observed {
        Some(from) => Pushed::Updated { from, to: local },
        None => Pushed::Created { sha: local },
    })
}

/// The URL a remote name or URL stands for, without user information, for messages.
pub fn remote_url(repo_dir: &Path, remote: &str) -> Option<String> {
    let repo = Repository::open(repo_dir).ok()?;
    let url = match repo.find_remote(remote) {
        Ok(r) => r.url()?.to_string(),
        Err(_) => remote.to_string(),
    };
    Some(redact_url(&url))
}

/// A transport failure (DNS, connection, TLS, SSH) is a network error with libgit2's message; anything else
/// stays a git error.
/// (libgit2 reports a refused connection as an OS error, so an OS error of a networked remote counts too.)
pub(super) fn classify(e: git2::Error, networked: bool) -> PushError {
    use git2::ErrorClass;
    if e.code() == git2::ErrorCode::Certificate {
        return PushError::Certificate(redact_message(e.message()));
    }
    match e.class() {
        ErrorClass::Net | ErrorClass::Ssl | ErrorClass::Ssh | ErrorClass::Http => {
            PushError::Network(redact_message(e.message()))
        }
        ErrorClass::Os if networked => PushError::Network(redact_message(e.message())),
        _ => PushError::Git(e),
    }
}

/// Whether a remote URL goes over the network (not a path or `file://`).
pub(super) fn is_networked(url: &str) -> bool {
    match url.split_once("://") {
        Some((scheme, _)) => scheme != "file",
        None => super::parse_remote(url).is_some(),
    }
}

/// A message without the user information of any URL in it.
fn redact_message(message: &str) -> String {
    message
        .split(' ')
        .map(|w| {
            if w.contains("://") {
                redact_url(w)
            } else {
                w.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

pub(super) fn open_remote<'r>(repo: &'r Repository, remote: &str) -> Result<Remote<'r>, PushError> {
    match repo.find_remote(remote) {
        Ok(r) => Ok(r),
        Err(_) if remote.contains('/') || remote.contains(':') => {
            Ok(repo.remote_anonymous(remote)?)
        }
        Err(e) => Err(PushError::Git(e)),
    }
}

/// What the callbacks of one connection saw, for the error that ends it.
pub(super) struct Seen {
    /// Whether the remote is reached over SSH.
    ssh: bool,
    /// The credential callback's own refusal.
    auth: Cell<Option<String>>,
    /// The SSH host key the server showed, and the host libgit2 named with it.
    host_key: RefCell<Option<(String, HostKey)>>,
}

impl Seen {
    /// Nothing seen yet on a connection to `url` (the remote's URL).
    pub(super) fn new(url: &str) -> Seen {
        Seen {
            ssh: ssh::Endpoint::parse(url).is_some(),
            auth: Cell::new(None),
            host_key: RefCell::new(None),
        }
    }

    /// The error a failed connection to `url` (the remote's URL) stands for: the credential callback's refusal,
    /// else an SSH host key known_hosts does not vouch for, else the transport's error.
    pub(super) fn error(&self, e: git2::Error, url: &str) -> PushError {
        if let Some(msg) = self.auth.take() {
            return PushError::Auth(msg);
        }
        if e.code() == git2::ErrorCode::Certificate && e.class() == git2::ErrorClass::Ssh {
            let seen = self.host_key.borrow();
            let (host, key) = match seen.as_ref() {
                Some((host, key)) => (host.as_str(), Some(key)),
                None => ("", None),
            };
            return PushError::HostKey(ssh::host_key_message(url, host, key));
        }
        classify(e, is_networked(url))
    }
}

/// The callbacks of a connection: the credentials (the token once over HTTP(S), the SSH agent once, then a
/// clear error: libgit2 asks again after a refusal, and asking forever would hang), and a certificate check
/// that records an SSH host key and leaves the decision to libgit2 (known_hosts; OpenSSL for TLS).
pub(super) fn callbacks<'a>(creds: &'a Credentials, seen: &'a Seen) -> RemoteCallbacks<'a> {
    let mut callbacks = RemoteCallbacks::new();
    // Over SSH only: with any certificate callback, even one that passes through, libgit2 reports an untrusted
    // TLS certificate as a generic error rather than a certificate one.
    if seen.ssh {
        callbacks.certificate_check(move |cert, host| {
            if let Some(key) = HostKey::of(cert) {
                *seen.host_key.borrow_mut() = Some((host.to_string(), key));
            }
            Ok(CertificateCheckStatus::CertificatePassthrough)
        });
    }
    let failed = &seen.auth;
    let tries = Cell::new(0u32);
    let agent_tried = Cell::new(false);
    callbacks.credentials(move |url, user_from_url, allowed| {
        tries.set(tries.get() + 1);
        let url = redact_url(url);
        if allowed.contains(CredentialType::USER_PASS_PLAINTEXT) {
            let Some((token, var)) = &creds.token else {
                let msg = format!(
                    "{url} asks for credentials and no token is set (see `vouch pr --help`)"
                );
                failed.set(Some(msg.clone()));
                return Err(git2::Error::from_str(&msg));
            };
            if tries.get() > 1 {
                let msg = format!(
                    "{url} refused the token from {var} (wrong, expired or without push access)"
                );
                failed.set(Some(msg.clone()));
                return Err(git2::Error::from_str(&msg));
            }
            return Cred::userpass_plaintext(user_from_url.unwrap_or(&creds.user), token.reveal());
        }
        if allowed.contains(CredentialType::SSH_KEY) {
            let user = user_from_url.unwrap_or("git");
            let refusal = if agent_tried.get() {
                Some(ssh::agent_refused_message(&url, user))
            } else if !ssh::agent_named() {
                Some(ssh::no_agent_message(&url))
            } else {
                None
            };
            if let Some(msg) = refusal {
                failed.set(Some(msg.clone()));
                return Err(git2::Error::from_str(&msg));
            }
            agent_tried.set(true);
            return Cred::ssh_key_from_agent(user);
        }
        if allowed.contains(CredentialType::DEFAULT) && tries.get() <= 1 {
            return Cred::default();
        }
        let msg = format!("{url} refused the credentials vouch has");
        failed.set(Some(msg.clone()));
        Err(git2::Error::from_str(&msg))
    });
    callbacks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn network_remotes_and_their_errors_are_told_apart() {
        assert!(is_networked("https://github.com/o/r.git"));
        assert!(is_networked("ssh://git@host/o/r"));
        assert!(is_networked("git@github.com:o/r.git"));
        assert!(!is_networked("/srv/git/r.git"));
        assert!(!is_networked("file:///srv/git/r.git"));
        let os = git2::Error::new(
            git2::ErrorCode::GenericError,
            git2::ErrorClass::Os,
            "failed to connect",
        );
        assert!(matches!(classify(os, true), PushError::Network(_)));
        let os = git2::Error::new(
            git2::ErrorCode::GenericError,
            git2::ErrorClass::Os,
            "no such file",
        );
        assert!(matches!(classify(os, false), PushError::Git(_)));
        let ssl = git2::Error::new(
            git2::ErrorCode::GenericError,
            git2::ErrorClass::Ssl,
            "handshake failed for https://u:s3cret@h/o/r",
        );
        match classify(ssl, true) {
            PushError::Network(m) => assert_eq!(m, "handshake failed for https://h/o/r"),
            other => panic!("{other:?}"),
        }
        // A certificate libgit2 does not trust is its own error, with the way to trust it.
        let cert = git2::Error::new(
            git2::ErrorCode::Certificate,
            git2::ErrorClass::Ssl,
            "bad cert for https://u:s3cret@h/o/r",
        );
        match classify(cert, true) {
            e @ PushError::Certificate(_) => {
                let m = e.to_string();
                assert!(m.contains("bad cert for https://h/o/r"), "{m}");
                assert!(m.contains("--ca-file") && !m.contains("s3cret"), "{m}");
            }
            other => panic!("{other:?}"),
        }
    }
}
