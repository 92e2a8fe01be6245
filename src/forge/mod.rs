//! Forges: where a pushed branch becomes a pull request. Which forge and repository a remote belongs to
//! ([`Target`], from its URL or from explicit settings), the token from the environment (a [`Secret`], never
//! printed), the REST clients of GitHub and Gitea/Forgejo ([`client`]), the pull-request body ([`body`]), the
//! pacing under the forges' rate limits ([`pacing`]), the typed errors ([`error`]), the push ([`push`]) and
//! the certificate authorities trusted over HTTPS ([`tls`]).

pub mod body;
pub mod client;
pub mod error;
pub mod fetch;
pub mod pacing;
pub mod push;
pub mod ssh;
pub mod tls;

pub use client::{Client, PrHead, PullRequest};
pub use error::ForgeError;

pub use crate::secret::Secret;

/// The room the sticky comment's marker (with a head sha) takes in a body.
pub const STICKY_MARKER_ROOM: usize = 80;

/// The GitHub API of github.com.
pub const GITHUB_API: &str = "https://api.github.com";

/// The GitLab API of gitlab.com.
pub const GITLAB_API: &str = "https://gitlab.com/api/v4";

/// A forge's kind: its API paths, its auth header and its conventions (drafts) differ.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Forge {
    #[value(name = "github")]
    GitHub,
    /// Gitea and Forgejo share one API.
    Gitea,
    /// GitLab: merge requests (`vouch pr`, `vouch run --open-pr`) and issues; `vouch gate --pr` is GitHub's
    /// and Gitea's only.
    #[value(name = "gitlab")]
    #[serde(rename = "gitlab")]
    GitLab,
}

impl Forge {
    pub fn name(self) -> &'static str {
        match self {
            Forge::GitHub => "github",
            Forge::Gitea => "gitea",
            Forge::GitLab => "gitlab",
        }
    }

    /// The environment variables a token is read from, first found wins.
    pub fn token_vars(self) -> &'static [&'static str] {
        match self {
            Forge::GitHub => &["GITHUB_TOKEN", "GH_TOKEN"],
            Forge::Gitea => &["GITEA_TOKEN"],
            Forge::GitLab => &["GITLAB_TOKEN"],
        }
    }

    /// The user name sent with the token over HTTPS (the forges check the token, not the name).
    pub fn git_user(self) -> &'static str {
        match self {
            Forge::GitHub => "x-access-token",
            Forge::Gitea | Forge::GitLab => "oauth2",
        }
    }
}

/// One repository on one forge, and the API that serves it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    pub forge: Forge,
    pub owner: String,
    pub repo: String,
    /// The API base without a trailing slash: `https://api.github.com`, `https://ghe.example/api/v3`,
    /// `https://codeberg.org/api/v1`.
    pub api: String,
}

/// What the user said explicitly; anything left out comes from the remote's URL.
#[derive(Clone, Debug, Default)]
pub struct Explicit {
    pub forge: Option<Forge>,
    /// `OWNER/REPO`.
    pub repo: Option<String>,
    /// GitHub: the API base (`https://ghe.example/api/v3`). Gitea: the server (`/api/v1` is added).
    pub api_url: Option<String>,
}

/// The host and `owner/repo` path of a remote URL: `https://host/o/r(.git)`, `ssh://git@host/o/r`,
/// `git@host:o/r.git`. `None` for a local path or a URL without an owner and a repository.
pub fn parse_remote(url: &str) -> Option<(String, String, String)> {
    let (host, path) = if let Some((scheme, rest)) = url.split_once("://") {
        if scheme == "file" {
            return None;
        }
        let (authority, path) = rest.split_once('/')?;
        let host = authority.rsplit('@').next()?;
        let host = host.split(':').next()?;
        (host.to_string(), path.to_string())
    } else if let Some((authority, path)) = url.split_once(':') {
        if authority.contains('/') || path.starts_with("//") || authority.is_empty() {
            return None;
        }
        let host = authority.rsplit('@').next()?;
        (host.to_string(), path.to_string())
    } else {
        return None;
    };
    let path = path.trim_matches('/');
    let path = path.strip_suffix(".git").unwrap_or(path);
    let (owner, repo) = path.rsplit_once('/')?;
    let owner = owner.rsplit('/').next()?;
    if host.is_empty() || owner.is_empty() || repo.is_empty() {
        return None;
    }
    Some((host, owner.to_string(), repo.to_string()))
}

/// Splits `OWNER/REPO`.
pub fn parse_repo(spec: &str) -> Result<(String, String), ForgeError> {
    match spec.split_once('/') {
        Some((o, r)) if !o.is_empty() && !r.is_empty() && !r.contains('/') => {
            Ok((o.to_string(), r.to_string()))
        }
        _ => Err(ForgeError::Config(format!("`{spec}` is not OWNER/REPO"))),
    }
}

/// A pull request or issue as the user names it: `OWNER/REPO#N`, `#N` or `N` (the repository then comes
/// from the settings or the remote).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Numbered {
    /// `OWNER/REPO`, when given.
    pub repo: Option<String>,
    pub number: u64,
}

impl Numbered {
    pub fn parse(spec: &str) -> Result<Numbered, ForgeError> {
        let bad = || {
            ForgeError::Config(format!(
                "`{spec}` is not OWNER/REPO#N or N (e.g. acme/calc#12)"
            ))
        };
        let (repo, number) = match spec.rsplit_once('#') {
            Some(("", n)) => (None, n),
            Some((repo, n)) => {
                parse_repo(repo).map_err(|_| bad())?;
                (Some(repo.to_string()), n)
            }
            None => (None, spec),
        };
        let number: u64 = number.parse().map_err(|_| bad())?;
        if number == 0 {
            return Err(bad());
        }
        Ok(Numbered { repo, number })
    }
}

impl Target {
    /// The target from explicit settings, completed from the remote's URL.
    pub fn resolve(remote_url: Option<&str>, explicit: &Explicit) -> Result<Target, ForgeError> {
        let parsed = remote_url.and_then(parse_remote);
        let forge = match (explicit.forge, &parsed) {
            (Some(f), _) => f,
            (None, Some((host, _, _))) if host == "github.com" => Forge::GitHub,
            (None, Some((host, _, _))) if host.contains("gitlab") => Forge::GitLab,
            (None, Some((host, _, _)))
                if host == "codeberg.org" || host.contains("gitea") || host.contains("forgejo") =>
            {
                Forge::Gitea
            }
            _ => {
                return Err(ForgeError::Config(format!(
                    "cannot tell the forge from the remote {}; say --forge github|gitea|gitlab",
                    remote_url
                        .map_or_else(|| "(none)".to_string(), |u| format!("`{}`", redact_url(u)))
                )))
            }
        };
        let (owner, repo) = match (&explicit.repo, &parsed) {
            (Some(spec), _) => parse_repo(spec)?,
            (None, Some((_, o, r))) => (o.clone(), r.clone()),
            (None, None) => {
                return Err(ForgeError::Config(
                    "cannot tell the repository from the remote; say --forge-repo OWNER/REPO"
                        .into(),
                ))
            }
        };
        let api = match (&explicit.api_url, &parsed) {
            (Some(url), _) => api_base(forge, url),
            (None, Some((host, _, _))) => match forge {
                Forge::GitHub if host == "github.com" => GITHUB_API.to_string(),
                Forge::GitHub => format!("https://{host}/api/v3"),
                Forge::Gitea => format!("https://{host}/api/v1"),
                Forge::GitLab => format!("https://{host}/api/v4"),
            },
            (None, None) if forge == Forge::GitHub => GITHUB_API.to_string(),
            (None, None) if forge == Forge::GitLab => GITLAB_API.to_string(),
            (None, None) => {
                return Err(ForgeError::Config(
                    "cannot tell the forge's server from the remote; say --api-url URL".into(),
                ))
            }
        };
        Ok(Target {
            forge,
            owner,
            repo,
            api,
        })
    }

    /// `/repos/OWNER/REPO` under the API base (GitLab: `/projects/OWNER%2FREPO`).
    pub fn repo_url(&self) -> String {
        match self.forge {
            Forge::GitLab => format!("{}/projects/{}%2F{}", self.api, self.owner, self.repo),
            _ => format!("{}/repos/{}/{}", self.api, self.owner, self.repo),
        }
    }
}

/// The API base an `--api-url` names: as given for GitHub, with `/api/v1` for Gitea and `/api/v4` for
/// GitLab unless it has it.
fn api_base(forge: Forge, url: &str) -> String {
    let url = url.trim_end_matches('/');
    match forge {
        Forge::Gitea if !url.ends_with("/api/v1") => format!("{url}/api/v1"),
        Forge::GitLab if !url.ends_with("/api/v4") => format!("{url}/api/v4"),
        _ => url.to_string(),
    }
}

/// A URL without its user information (`https://user:secret@host/x` → `https://host/x`), for messages.
pub fn redact_url(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
            let host = authority.rsplit('@').next().unwrap_or(authority);
            if path.is_empty() && !rest.contains('/') {
                format!("{scheme}://{host}")
            } else {
                format!("{scheme}://{host}/{path}")
            }
        }
        None => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remotes_parse_in_every_spelling() {
        let want = Some(("github.com".to_string(), "o".to_string(), "r".to_string()));
        assert_eq!(parse_remote("https://github.com/o/r.git"), want);
        assert_eq!(parse_remote("https://user:pw@github.com/o/r"), want);
        assert_eq!(parse_remote("ssh://git@github.com:22/o/r.git"), want);
        assert_eq!(parse_remote("git@github.com:o/r.git"), want);
        assert_eq!(parse_remote("/srv/git/r.git"), None);
        assert_eq!(parse_remote("file:///srv/git/o/r.git"), None);
        assert_eq!(parse_remote("https://github.com/r"), None);
    }

    #[test]
    fn targets_come_from_the_remote_or_explicit_settings() {
        let t = Target::resolve(Some("git@github.com:o/r.git"), &Explicit::default()).unwrap();
        assert_eq!((t.forge, t.api.as_str()), (Forge::GitHub, GITHUB_API));
        assert_eq!(t.repo_url(), "https://api.github.com/repos/o/r");
        let t = Target::resolve(Some("https://codeberg.org/a/b"), &Explicit::default()).unwrap();
        assert_eq!(
            (t.forge, t.api.as_str()),
            (Forge::Gitea, "https://codeberg.org/api/v1")
        );
        let explicit = Explicit {
            forge: Some(Forge::Gitea),
            repo: Some("x/y".into()),
            api_url: Some("http://127.0.0.1:3000/".into()),
        };
        let t = Target::resolve(Some("/tmp/bare.git"), &explicit).unwrap();
        assert_eq!(t.repo_url(), "http://127.0.0.1:3000/api/v1/repos/x/y");
        let explicit = Explicit {
            forge: Some(Forge::GitHub),
            repo: None,
            api_url: Some("https://ghe.example/api/v3".into()),
        };
        let t = Target::resolve(Some("https://ghe.example/o/r"), &explicit).unwrap();
        assert_eq!(t.repo_url(), "https://ghe.example/api/v3/repos/o/r");
        let t = Target::resolve(Some("git@gitlab.com:g/p.git"), &Explicit::default()).unwrap();
        assert_eq!(t.forge, Forge::GitLab);
        assert_eq!(t.repo_url(), "https://gitlab.com/api/v4/projects/g%2Fp");
        let explicit = Explicit {
            forge: Some(Forge::GitLab),
            repo: Some("g/p".into()),
            api_url: Some("http://127.0.0.1:9".into()),
        };
        let t = Target::resolve(None, &explicit).unwrap();
        assert_eq!(t.repo_url(), "http://127.0.0.1:9/api/v4/projects/g%2Fp");
        let err =
            Target::resolve(Some("https://git.example/o/r"), &Explicit::default()).unwrap_err();
        assert!(err.to_string().contains("--forge"), "{err}");
        assert!(parse_repo("nope").is_err());
    }

    #[test]
    fn numbered_references_parse_with_or_without_a_repository() {
        let n = |s: &str| Numbered::parse(s).map_err(|e| e.to_string());
        assert_eq!(
            n("o/r#12"),
            Ok(Numbered {
                repo: Some("o/r".into()),
                number: 12
            })
        );
        assert_eq!(
            n("#3"),
            Ok(Numbered {
                repo: None,
                number: 3
            })
        );
        assert_eq!(
            n("7"),
            Ok(Numbered {
                repo: None,
                number: 7
            })
        );
        for bad in ["o#1", "o/r#", "o/r#x", "0", "a/b/c#1", ""] {
            assert!(n(bad).unwrap_err().contains("OWNER/REPO#N"), "{bad}");
        }
    }

    #[test]
    fn tokens_and_urls_never_show_secrets() {
        let t = Secret::new("s3cret");
        assert_eq!(format!("{t} {t:?}"), "<redacted> Secret(<redacted>)");
        assert_eq!(redact_url("https://u:s3cret@h/o/r"), "https://h/o/r");
        assert_eq!(redact_url("https://h"), "https://h");
    }
}
