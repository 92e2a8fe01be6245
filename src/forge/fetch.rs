//! Fetching a pull request's base and head into the user's repository without touching its checkout, index,
//! branches or status: the objects land under vouch's own refs, `refs/vouch/pr/N/{base,head}`, through an
//! anonymous remote (no remote-tracking ref moves, no `FETCH_HEAD`, no tags). The head comes from the
//! pull request's ref (`refs/pull/N/head`) in the base repository, or for a fork from the fork's clone URL.
//! The fork gets the token (a private fork asks for it) only when it is on the base remote's host: the URL
//! is one the forge's answer chose, and the token is never sent anywhere else.

use std::path::Path;

use git2::{AutotagOption, FetchOptions, Oid, RemoteUpdateFlags, Repository};

use super::client::PrHead;
use super::push::{callbacks, open_remote, Credentials, PushError, Seen};

/// The revisions of a fetched pull request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fetched {
    /// Where the pull request's change starts: the merge base of the base branch and the head, as the
    /// forge's own diff shows it.
    pub base: Oid,
    /// The base branch's tip as fetched.
    pub base_tip: Oid,
    pub head: Oid,
}

/// The ref a fetched side of pull request `number` is kept under.
pub fn vouch_ref(number: u64, side: &str) -> String {
    format!("refs/vouch/pr/{number}/{side}")
}

/// Fetches pull request `number` (as the forge described it in `pr`) from `remote` (a name or URL).
pub fn fetch_pr(
    repo_dir: &Path,
    remote: &str,
    number: u64,
    pr: &PrHead,
    creds: &Credentials,
) -> Result<Fetched, PushError> {
    creds.trust.install_for_git().map_err(PushError::CaBundle)?;
    let repo = Repository::open(repo_dir)?;
    let url = open_remote(&repo, remote)?
        .url()
        .map(str::to_string)
        .ok_or_else(|| PushError::Git(git2::Error::from_str("the remote has no URL")))?;
    // libgit2 writes FETCH_HEAD whatever the update flags say: it is put back as it was.
    let fetch_head = repo.path().join("FETCH_HEAD");
    let kept = std::fs::read(&fetch_head).ok();
    let fetched = fetch_both(&repo, &url, number, pr, creds);
    let restored = match kept {
        Some(bytes) => std::fs::write(&fetch_head, bytes),
        None => std::fs::remove_file(&fetch_head).or_else(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                Ok(())
            } else {
                Err(e)
            }
        }),
    };
    fetched?;
    restored.map_err(|e| {
        PushError::Git(git2::Error::from_str(&format!(
            "restore {}: {e}",
            fetch_head.display()
        )))
    })?;
    revisions(&repo, number, pr)
}

/// Fetches the base branch and the head into vouch's refs.
fn fetch_both(
    repo: &Repository,
    url: &str,
    number: u64,
    pr: &PrHead,
    creds: &Credentials,
) -> Result<(), PushError> {
    let base_ref = vouch_ref(number, "base");
    let head_ref = vouch_ref(number, "head");
    let mut specs = vec![format!("+refs/heads/{}:{base_ref}", pr.base_ref)];
    let fork = pr.fork_url();
    if fork.is_none() {
        specs.push(format!("+{}:{head_ref}", pr.pull_ref));
    }
    fetch(repo, url, &specs, creds)?;
    if let Some(fork) = fork {
        // A private fork asks for the token; it goes only to the host the token is for.
        let fork_creds = if same_host(url, fork) {
            creds.clone()
        } else {
            Credentials {
                token: None,
                ..creds.clone()
            }
        };
        fetch(
            repo,
            fork,
            &[format!("+refs/heads/{}:{head_ref}", pr.head_ref)],
            &fork_creds,
        )?;
    }
    Ok(())
}

/// Whether `fork` is on the host (and port) of the base remote `base`, reached over HTTPS or the base's own
/// scheme: only then may the token go with it.
fn same_host(base: &str, fork: &str) -> bool {
    let origin = |url: &str| -> Option<(String, String)> {
        let (scheme, rest) = url.split_once("://")?;
        let authority = rest.split('/').next()?;
        let host = authority.rsplit('@').next()?;
        Some((scheme.to_ascii_lowercase(), host.to_ascii_lowercase()))
    };
    match (origin(base), origin(fork)) {
        (Some((bs, bh)), Some((fs, fh))) => {
            !bh.is_empty() && bh == fh && (fs == "https" || fs == bs) && fs != "file"
        }
        _ => false,
    }
}

/// The fetched revisions: the forge's head when its commit is here, and the merge base with the base tip.
fn revisions(repo: &Repository, number: u64, pr: &PrHead) -> Result<Fetched, PushError> {
    let base_ref = vouch_ref(number, "base");
    let head_ref = vouch_ref(number, "head");
    let base_tip = repo.refname_to_id(&base_ref)?;
    let fetched_head = repo.refname_to_id(&head_ref)?;
    // The forge's head is the one its answer (and the status vouch posts) names; a head that moved between
    // the answer and the fetch is judged as the forge named it when its commit is here, else refused.
    let head = match Oid::from_str(&pr.head_sha) {
        Ok(sha) if repo.find_commit(sha).is_ok() => sha,
        _ => {
            return Err(PushError::Git(git2::Error::from_str(&format!(
                "the forge names head {} but the fetch gave {fetched_head}; run again",
                pr.head_sha
            ))))
        }
    };
    let base = repo.merge_base(base_tip, head)?;
    Ok(Fetched {
        base,
        base_tip,
        head,
    })
}

fn fetch(
    repo: &Repository,
    url: &str,
    specs: &[String],
    creds: &Credentials,
) -> Result<(), PushError> {
    let mut remote = repo.remote_anonymous(url)?;
    let seen = Seen::new(url);
    let mut opts = FetchOptions::new();
    opts.remote_callbacks(callbacks(creds, &seen));
    opts.download_tags(AutotagOption::None);
    let specs: Vec<&str> = specs.iter().map(String::as_str).collect();
    // Download, then update the refspecs' own refs only.
    let downloaded = remote.download(&specs, Some(&mut opts));
    drop(opts);
    downloaded.map_err(|e| seen.error(e, url))?;
    remote.disconnect()?;
    remote.update_tips(None, RemoteUpdateFlags::empty(), AutotagOption::None, None)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::same_host;

    #[test]
    fn the_token_goes_to_a_fork_only_on_the_base_remotes_host() {
        let base = "https://git.example:3000/o/r.git";
        assert!(same_host(base, "https://git.example:3000/fork/r.git"));
        assert!(same_host(base, "https://user@GIT.example:3000/fork/r"));
        assert!(
            !same_host(base, "https://git.example/fork/r.git"),
            "another port"
        );
        assert!(!same_host(base, "https://evil.example:3000/fork/r.git"));
        assert!(
            !same_host(base, "http://git.example:3000/fork/r.git"),
            "no downgrade"
        );
        assert!(same_host(
            "http://127.0.0.1:9/o/r",
            "http://127.0.0.1:9/f/r"
        ));
        assert!(!same_host("/srv/git/r.git", "/srv/git/fork.git"));
        assert!(!same_host("file:///srv/r.git", "file:///srv/fork.git"));
    }
}
