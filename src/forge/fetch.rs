//! Fetching a pull request's base and head into the user's repository without touching its checkout, index,
//! branches or status: the objects land under vouch's own refs, `refs/vouch/pr/N/{base,head}`, through an
//! anonymous remote (no remote-tracking ref moves, no `FETCH_HEAD`, no tags). The head comes from the
//! pull request's ref (`refs/pull/N/head`) in the base repository, or for a fork from the fork's clone URL,
//! which is fetched without the token: it is a URL the forge's answer chose.

use std::cell::Cell;
use std::path::Path;

use git2::{AutotagOption, FetchOptions, Oid, RemoteUpdateFlags, Repository};

use super::client::PrHead;
use super::push::{callbacks, classify, is_networked, open_remote, Credentials, PushError};

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
        let anonymous = Credentials {
            token: None,
            user: creds.user.clone(),
        };
        fetch(
            repo,
            fork,
            &[format!("+refs/heads/{}:{head_ref}", pr.head_ref)],
            &anonymous,
        )?;
    }
    Ok(())
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
    let auth_failed = Cell::new(None);
    let mut opts = FetchOptions::new();
    opts.remote_callbacks(callbacks(creds, &auth_failed));
    opts.download_tags(AutotagOption::None);
    let specs: Vec<&str> = specs.iter().map(String::as_str).collect();
    // Download, then update the refspecs' own refs only.
    let downloaded = remote.download(&specs, Some(&mut opts));
    drop(opts);
    downloaded.map_err(|e| {
        auth_failed
            .take()
            .map_or_else(|| classify(e, is_networked(url)), PushError::Auth)
    })?;
    remote.disconnect()?;
    remote.update_tips(None, RemoteUpdateFlags::empty(), AutotagOption::None, None)?;
    Ok(())
}
