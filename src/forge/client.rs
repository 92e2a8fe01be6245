//! The REST clients of GitHub and Gitea/Forgejo: the few endpoints vouch uses, one code path with the
//! forges' differences spelled out where they are (the auth header, listing open pull requests by head,
//! drafts). Requests are paced ([`super::pacing`]); an answer that is not a success is a [`ForgeError`].
//!
//! Endpoints: `GET/POST /repos/{o}/{r}/pulls`, `GET/PATCH /repos/{o}/{r}/pulls/{n}`,
//! `POST /repos/{o}/{r}/statuses/{sha}`, `GET/POST /repos/{o}/{r}/issues/{n}/comments`,
//! `PATCH /repos/{o}/{r}/issues/comments/{id}`, `GET /repos/{o}/{r}/issues?labels=`,
//! `POST/PUT /repos/{o}/{r}/issues/{n}/labels`, under the API base (Gitea's is `…/api/v1`). GitLab's
//! (`…/api/v4`, the token in `PRIVATE-TOKEN`): `/projects/{o}%2F{r}/merge_requests`,
//! `GET /projects/{o}%2F{r}/issues?labels=&state=opened`, `PUT /projects/{o}%2F{r}/issues/{iid}` with
//! `add_labels` or `remove_labels`.

use std::time::{Duration, Instant};

use reqwest::header::{HeaderMap, ACCEPT, AUTHORIZATION, USER_AGENT};
use reqwest::Method;
use serde_json::{json, Value};

use super::error::ForgeError;
use super::pacing::{self, Pacer, MAX_WAIT};
use super::tls::{self, Trust};
use super::{Forge, Secret, Target};
use crate::secret;

/// How long one request may take.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// The status context vouch posts.
pub const STATUS_CONTEXT: &str = "vouch/gate";
/// The hidden marker of vouch's sticky report comment.
pub const STICKY_MARKER: &str = "<!-- vouch:gate";

/// A pull request as vouch needs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PullRequest {
    pub number: u64,
    pub url: String,
    pub title: String,
    /// The head branch's name.
    pub head: String,
}

/// A pull request to open.
#[derive(Clone, Debug)]
pub struct NewPr {
    pub title: String,
    pub body: String,
    /// The head branch (`branch`, or `owner:branch` for a fork on GitHub).
    pub head: String,
    pub base: String,
    pub draft: bool,
}

/// What [`Client::open_or_update`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Opened {
    Opened(PullRequest),
    /// An open pull request for the head existed: its body was updated.
    Updated(PullRequest),
}

/// The revisions of a pull request, for re-verifying it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PrHead {
    pub base_ref: String,
    pub base_sha: String,
    pub head_ref: String,
    pub head_sha: String,
    /// The clone URL of the head's repository (a fork's, for a pull request from a fork), when known.
    pub head_clone_url: Option<String>,
    /// The clone URL of the base repository, when known: a head repository with another URL is a fork.
    pub base_clone_url: Option<String>,
    /// `refs/pull/N/head` on GitHub and Gitea: fetchable from the base repository.
    pub pull_ref: String,
}

impl PrHead {
    /// The clone URL of a fork the head lives in; `None` when the head is in the base repository.
    pub fn fork_url(&self) -> Option<&str> {
        let head = self.head_clone_url.as_deref()?;
        let same = |a: &str, b: &str| a.trim_end_matches(".git") == b.trim_end_matches(".git");
        match self.base_clone_url.as_deref() {
            Some(base) if same(base, head) => None,
            _ => Some(head),
        }
    }
}

/// An issue as a task needs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Issue {
    pub number: u64,
    pub title: String,
    pub body: String,
    pub labels: Vec<String>,
}

/// What [`Client::post_sticky_comment`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Sticky {
    Posted(u64),
    Edited(u64),
    /// The last report was for this head already: nothing was posted.
    Unchanged(u64),
}

/// One forge's API, with one token.
#[derive(Debug)]
pub struct Client {
    http: reqwest::Client,
    target: Target,
    /// `None`: requests go unauthenticated (reading a public repository).
    token: Option<Secret>,
    /// Where the token came from, for messages.
    token_var: String,
    /// The login of the token's own user, asked once ([`Client::own_login`]): vouch's comments are its.
    login: Option<String>,
    pacer: Pacer,
}

impl Client {
    pub fn new(
        target: Target,
        token: Secret,
        token_var: impl Into<String>,
        trust: &Trust,
    ) -> Result<Client, ForgeError> {
        Client::with_token(target, Some(token), token_var, trust)
    }

    /// A client with a token or none (unauthenticated requests, for reading public repositories), trusting
    /// the CA bundles of `trust` besides the built-in roots.
    pub fn with_token(
        target: Target,
        token: Option<Secret>,
        token_var: impl Into<String>,
        trust: &Trust,
    ) -> Result<Client, ForgeError> {
        let http = trust
            .reqwest(reqwest::Client::builder().timeout(REQUEST_TIMEOUT))?
            .build()
            .map_err(|e| ForgeError::Config(format!("cannot build the HTTP client: {e}")))?;
        Ok(Client {
            http,
            target,
            token,
            login: None,
            token_var: token_var.into(),
            pacer: Pacer::default(),
        })
    }

    /// A client whose token comes from the forge's variables (or `var` when given).
    pub fn from_env(
        target: Target,
        var: Option<&str>,
        trust: &Trust,
    ) -> Result<Client, ForgeError> {
        let vars: Vec<&str> = match var {
            Some(v) => vec![v],
            None => target.forge.token_vars().to_vec(),
        };
        let (token, from) = Secret::from_env(&vars).ok_or_else(|| ForgeError::NoToken {
            forge: target.forge.name(),
            vars: vars.join(" or "),
        })?;
        Client::new(target, token, from, trust)
    }

    pub fn target(&self) -> &Target {
        &self.target
    }

    /// Opens a pull request for `pr.head`, or updates the body of the open one.
    pub async fn open_or_update(&mut self, pr: &NewPr) -> Result<Opened, ForgeError> {
        if let Some(open) = self.find_open(&pr.head).await? {
            return self.update_body(open, &pr.body).await.map(Opened::Updated);
        }
        match self.create(pr).await {
            Ok(created) => Ok(Opened::Opened(created)),
            Err(ForgeError::Unprocessable { message, .. })
            | Err(ForgeError::Status {
                status: 409,
                message,
                ..
            }) if message.to_lowercase().contains("already exist") => {
                let open = self.find_open(&pr.head).await?.ok_or_else(|| ForgeError::Protocol {
                    forge: self.target.forge.name(),
                    action: "opening the pull request".into(),
                    reason: format!("it says one already exists ({message}) but lists none open for the head"),
                })?;
                self.update_body(open, &pr.body).await.map(Opened::Updated)
            }
            Err(e) => Err(e),
        }
    }

    /// The open pull request whose head is `head` (`branch` or `owner:branch`), if any.
    pub async fn find_open(&mut self, head: &str) -> Result<Option<PullRequest>, ForgeError> {
        let branch = head.rsplit(':').next().unwrap_or(head);
        let url = match self.target.forge {
            Forge::GitHub => {
                let qualified = if head.contains(':') {
                    head.to_string()
                } else {
                    format!("{}:{head}", self.target.owner)
                };
                format!(
                    "{}/pulls?state=open&head={qualified}&per_page=100",
                    self.target.repo_url()
                )
            }
            Forge::Gitea => format!("{}/pulls?state=open&limit=50", self.target.repo_url()),
            Forge::GitLab => format!(
                "{}/merge_requests?state=opened&source_branch={branch}&per_page=100",
                self.target.repo_url()
            ),
        };
        let list = self
            .request(Method::GET, &url, None, "listing open pull requests")
            .await?;
        let items = list
            .as_array()
            .ok_or_else(|| self.protocol("listing open pull requests", "not a list"))?;
        for item in items {
            let pr = self.pull_request(item, "listing open pull requests")?;
            if pr.head == branch {
                return Ok(Some(pr));
            }
        }
        Ok(None)
    }

    async fn create(&mut self, pr: &NewPr) -> Result<PullRequest, ForgeError> {
        let payload = match self.target.forge {
            Forge::GitHub => json!({
                "title": pr.title, "head": pr.head, "base": pr.base, "body": pr.body, "draft": pr.draft,
            }),
            // Gitea and Forgejo have no draft field: a `WIP:` title prefix is their draft.
            Forge::Gitea => json!({
                "title": if pr.draft { format!("WIP: {}", pr.title) } else { pr.title.clone() },
                "head": pr.head, "base": pr.base, "body": pr.body,
            }),
            // GitLab's draft is a `Draft:` title prefix.
            Forge::GitLab => json!({
                "title": if pr.draft { format!("Draft: {}", pr.title) } else { pr.title.clone() },
                "source_branch": pr.head, "target_branch": pr.base, "description": pr.body,
            }),
        };
        let url = format!("{}/{}", self.target.repo_url(), self.pulls());
        let v = self
            .request(
                Method::POST,
                &url,
                Some(payload),
                "opening the pull request",
            )
            .await?;
        self.pull_request(&v, "opening the pull request")
    }

    async fn update_body(
        &mut self,
        pr: PullRequest,
        body: &str,
    ) -> Result<PullRequest, ForgeError> {
        let url = format!("{}/{}/{}", self.target.repo_url(), self.pulls(), pr.number);
        let action = format!("updating pull request #{}", pr.number);
        let (method, payload) = match self.target.forge {
            Forge::GitLab => (Method::PUT, json!({ "description": body })),
            _ => (Method::PATCH, json!({ "body": body })),
        };
        let v = self.request(method, &url, Some(payload), &action).await?;
        self.pull_request(&v, &action).or(Ok(pr))
    }

    /// The base and head of pull request `number`.
    pub async fn fetch_pr(&mut self, number: u64) -> Result<PrHead, ForgeError> {
        self.not_on_gitlab("vouch gate --pr")?;
        let url = format!("{}/pulls/{number}", self.target.repo_url());
        let action = format!("reading pull request #{number}");
        let v = self.request(Method::GET, &url, None, &action).await?;
        let s = |ptr: &str| v.pointer(ptr).and_then(Value::as_str).map(str::to_string);
        let need = |ptr: &str| s(ptr).ok_or_else(|| self.protocol(&action, &format!("no {ptr}")));
        Ok(PrHead {
            base_ref: need("/base/ref")?,
            base_sha: need("/base/sha")?,
            head_ref: need("/head/ref")?,
            head_sha: need("/head/sha")?,
            head_clone_url: s("/head/repo/clone_url"),
            base_clone_url: s("/base/repo/clone_url"),
            pull_ref: format!("refs/pull/{number}/head"),
        })
    }

    /// Issue `number`: title, body and labels.
    pub async fn fetch_issue(&mut self, number: u64) -> Result<Issue, ForgeError> {
        let url = format!("{}/issues/{number}", self.target.repo_url());
        let action = format!("reading issue #{number}");
        let v = self.request(Method::GET, &url, None, &action).await?;
        let s = |ptr: &str| v.pointer(ptr).and_then(Value::as_str).map(str::to_string);
        // GitLab: `description`, and labels as plain names.
        let body = match self.target.forge {
            Forge::GitLab => s("/description"),
            _ => s("/body"),
        };
        Ok(Issue {
            number,
            title: s("/title").ok_or_else(|| self.protocol(&action, "no title"))?,
            body: body.unwrap_or_default(),
            labels: label_names(&v),
        })
    }

    /// The open issues (not pull requests) with `label`, lowest number first; the first 100 (one page).
    pub async fn list_issues(&mut self, label: &str) -> Result<Vec<Issue>, ForgeError> {
        let base = format!("{}/issues", self.target.repo_url());
        let mut params = vec![("labels", label)];
        match self.target.forge {
            Forge::GitHub => params.extend([("state", "open"), ("per_page", "100")]),
            Forge::Gitea => {
                params.extend([("state", "open"), ("type", "issues"), ("limit", "100")])
            }
            Forge::GitLab => params.extend([("state", "opened"), ("per_page", "100")]),
        }
        let action = format!("listing the open issues labelled {label}");
        let url = reqwest::Url::parse_with_params(&base, &params)
            .map_err(|e| self.protocol(&action, &format!("bad URL: {e}")))?;
        let v = self
            .request(Method::GET, url.as_str(), None, &action)
            .await?;
        let items = v
            .as_array()
            .ok_or_else(|| self.protocol(&action, "not a list"))?;
        let text = |i: &Value, key: &str| {
            i.get(key)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let mut out: Vec<Issue> = items
            .iter()
            // GitHub lists pull requests as issues too.
            .filter(|i| i.get("pull_request").is_none_or(Value::is_null))
            .filter_map(|i| {
                // GitLab: `iid`, `description` and labels as plain names.
                let number = i.get("number").or_else(|| i.get("iid"));
                let body = match i.get("body") {
                    Some(_) => text(i, "body"),
                    None => text(i, "description"),
                };
                Some(Issue {
                    number: number.and_then(Value::as_u64)?,
                    title: text(i, "title"),
                    body,
                    labels: label_names(i),
                })
            })
            .collect();
        out.sort_by_key(|i| i.number);
        Ok(out)
    }

    /// Adds `label` to issue `number`.
    pub async fn add_label(&mut self, number: u64, label: &str) -> Result<(), ForgeError> {
        let action = format!("labelling issue #{number} {label}");
        let (method, url, body) = match self.target.forge {
            Forge::GitLab => (
                Method::PUT,
                format!("{}/issues/{number}", self.target.repo_url()),
                json!({ "add_labels": label }),
            ),
            Forge::GitHub | Forge::Gitea => (
                Method::POST,
                format!("{}/issues/{number}/labels", self.target.repo_url()),
                json!({ "labels": [label] }),
            ),
        };
        self.request(method, &url, Some(body), &action).await?;
        Ok(())
    }

    /// Removes `label` from issue `number`: its labels replaced by the others (one call both forges take
    /// by name).
    pub async fn remove_label(&mut self, number: u64, label: &str) -> Result<(), ForgeError> {
        if self.target.forge == Forge::GitLab {
            let url = format!("{}/issues/{number}", self.target.repo_url());
            let action = format!("removing the label {label} from issue #{number}");
            self.request(
                Method::PUT,
                &url,
                Some(json!({ "remove_labels": label })),
                &action,
            )
            .await?;
            return Ok(());
        }
        let issue = self.fetch_issue(number).await?;
        if !issue.labels.iter().any(|l| l == label) {
            return Ok(());
        }
        let rest: Vec<&String> = issue.labels.iter().filter(|l| *l != label).collect();
        let url = format!("{}/issues/{number}/labels", self.target.repo_url());
        self.request(
            Method::PUT,
            &url,
            Some(json!({ "labels": rest })),
            &format!("removing the label {label} from issue #{number}"),
        )
        .await?;
        Ok(())
    }

    /// Posts a comment on issue (or pull request) `number`.
    pub async fn post_comment(&mut self, number: u64, body: &str) -> Result<(), ForgeError> {
        let comments = match self.target.forge {
            Forge::GitLab => "notes",
            _ => "comments",
        };
        let url = format!("{}/issues/{number}/{comments}", self.target.repo_url());
        self.request(
            Method::POST,
            &url,
            Some(json!({ "body": body })),
            &format!("commenting on #{number}"),
        )
        .await?;
        Ok(())
    }

    /// Posts the `vouch/gate` commit status on `sha`.
    pub async fn post_status(
        &mut self,
        sha: &str,
        success: bool,
        description: &str,
    ) -> Result<(), ForgeError> {
        self.not_on_gitlab("posting a commit status")?;
        let url = format!("{}/statuses/{sha}", self.target.repo_url());
        // Redacted before it is cut, so that no part of a secret is left at the cut.
        let description: String = secret::redact(description).chars().take(140).collect();
        let payload = json!({
            "state": if success { "success" } else { "failure" },
            "context": STATUS_CONTEXT,
            "description": description,
        });
        self.request(
            Method::POST,
            &url,
            Some(payload),
            "posting the commit status",
        )
        .await?;
        Ok(())
    }

    /// The login of the token's own user (GitHub and Gitea `GET /user` → `login`, GitLab's `username`), asked
    /// once. A GitHub installation token (Actions' `GITHUB_TOKEN`) may not read `/user`; its comments are
    /// `github-actions[bot]`'s.
    pub async fn own_login(&mut self) -> Result<String, ForgeError> {
        if let Some(login) = &self.login {
            return Ok(login.clone());
        }
        let url = format!("{}/user", self.target.api);
        let action = "asking whose the token is";
        let login = match self.request(Method::GET, &url, None, action).await {
            Ok(v) => {
                let key = match self.target.forge {
                    Forge::GitLab => "username",
                    _ => "login",
                };
                v.get(key)
                    .and_then(Value::as_str)
                    .filter(|l| !l.is_empty())
                    .map(str::to_string)
                    .ok_or_else(|| self.protocol(action, &format!("no {key}")))?
            }
            Err(ForgeError::Forbidden { .. }) if self.target.forge == Forge::GitHub => {
                tracing::debug!("the token cannot read /user: an installation token");
                "github-actions[bot]".to_string()
            }
            Err(e) => return Err(e),
        };
        self.login = Some(login.clone());
        Ok(login)
    }

    /// Posts the report as one sticky comment on pull request `number`: vouch's own comment (by the token's
    /// user, with vouch's marker) is edited, or one is posted; nothing is posted when vouch's last report was
    /// for `head_sha` already. A comment by anyone else is never edited, whatever marker it holds.
    pub async fn post_sticky_comment(
        &mut self,
        number: u64,
        head_sha: &str,
        report: &str,
    ) -> Result<Sticky, ForgeError> {
        self.not_on_gitlab("posting the report comment")?;
        let marker = format!("{STICKY_MARKER} head={head_sha} -->");
        let repo = self.target.repo_url();
        let action = format!("reading the comments of #{number}");
        let list = self
            .request(
                Method::GET,
                &format!("{repo}/issues/{number}/comments?per_page=100"),
                None,
                &action,
            )
            .await?;
        let login = self.own_login().await?;
        let author = match self.target.forge {
            Forge::GitLab => "/author/username",
            _ => "/user/login",
        };
        let existing = list.as_array().into_iter().flatten().find_map(|c| {
            let body = c.get("body")?.as_str()?;
            let mine = c.pointer(author).and_then(Value::as_str) == Some(login.as_str());
            (mine && body.contains(STICKY_MARKER))
                .then(|| (c.get("id").and_then(Value::as_u64), body.contains(&marker)))
        });
        let body = format!("{marker}\n{report}");
        match existing {
            Some((Some(id), true)) => Ok(Sticky::Unchanged(id)),
            Some((Some(id), false)) => {
                let url = format!("{repo}/issues/comments/{id}");
                self.request(
                    Method::PATCH,
                    &url,
                    Some(json!({ "body": body })),
                    "editing the report comment",
                )
                .await?;
                Ok(Sticky::Edited(id))
            }
            _ => {
                let url = format!("{repo}/issues/{number}/comments");
                let v = self
                    .request(
                        Method::POST,
                        &url,
                        Some(json!({ "body": body })),
                        "posting the report comment",
                    )
                    .await?;
                Ok(Sticky::Posted(
                    v.get("id").and_then(Value::as_u64).unwrap_or(0),
                ))
            }
        }
    }

    /// `pulls`, or GitLab's `merge_requests`.
    fn pulls(&self) -> &'static str {
        match self.target.forge {
            Forge::GitLab => "merge_requests",
            _ => "pulls",
        }
    }

    /// The error for what vouch does on GitHub and Gitea only.
    fn not_on_gitlab(&self, what: &str) -> Result<(), ForgeError> {
        match self.target.forge {
            Forge::GitLab => Err(ForgeError::Config(format!(
                "{what} is not supported on GitLab yet (merge requests and issues are)"
            ))),
            _ => Ok(()),
        }
    }

    fn pull_request(&self, v: &Value, action: &str) -> Result<PullRequest, ForgeError> {
        // GitLab: the project-local `iid`, `web_url` and `source_branch`.
        let (number, url, head) = match self.target.forge {
            Forge::GitLab => ("iid", "/web_url", "/source_branch"),
            _ => ("number", "/html_url", "/head/ref"),
        };
        let number = v
            .get(number)
            .and_then(Value::as_u64)
            .ok_or_else(|| self.protocol(action, "no number"))?;
        let s = |ptr: &str| {
            v.pointer(ptr)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        Ok(PullRequest {
            number,
            url: s(url),
            title: s("/title"),
            head: s(head),
        })
    }

    fn protocol(&self, action: &str, reason: &str) -> ForgeError {
        ForgeError::Protocol {
            forge: self.target.forge.name(),
            action: action.to_string(),
            reason: secret::redact(reason),
        }
    }

    /// One request, paced, retried once when the forge asks to wait (within [`MAX_WAIT`]).
    async fn request(
        &mut self,
        method: Method,
        url: &str,
        body: Option<Value>,
        action: &str,
    ) -> Result<Value, ForgeError> {
        let write = method != Method::GET;
        let forge = self.target.forge.name();
        for attempt in 0..2 {
            let delay = self.pacer.delay(write, Instant::now());
            if !delay.is_zero() {
                tracing::info!(?delay, "pacing {forge} requests");
                tokio::time::sleep(delay).await;
            }
            let mut req = self
                .http
                .request(method.clone(), url)
                .header(USER_AGENT, concat!("vouch/", env!("CARGO_PKG_VERSION")));
            if let Some(token) = &self.token {
                req = match self.target.forge {
                    Forge::GitHub => {
                        req.header(AUTHORIZATION, format!("Bearer {}", token.reveal()))
                    }
                    Forge::Gitea => req.header(AUTHORIZATION, format!("token {}", token.reveal())),
                    Forge::GitLab => req.header("PRIVATE-TOKEN", token.reveal()),
                };
            }
            req = match self.target.forge {
                Forge::GitHub => req
                    .header(ACCEPT, "application/vnd.github+json")
                    .header("X-GitHub-Api-Version", "2022-11-28"),
                Forge::Gitea | Forge::GitLab => req.header(ACCEPT, "application/json"),
            };
            // Every body vouch sends passes the redactor of every secret vouch knows.
            if let Some(b) = &body {
                let mut b = b.clone();
                secret::known().value(&mut b);
                req = req.json(&b);
            }
            tracing::debug!(%method, url, "{forge} request");
            self.pacer.sent(write, Instant::now());
            let resp = req
                .send()
                .await
                .map_err(|e| match tls::certificate_problem(&e) {
                    Some(reason) => ForgeError::Certificate {
                        forge,
                        api: self.target.api.clone(),
                        action: action.to_string(),
                        reason,
                    },
                    None => ForgeError::Network {
                        forge,
                        api: self.target.api.clone(),
                        action: action.to_string(),
                        reason: e.without_url().to_string(),
                    },
                })?;
            let status = resp.status().as_u16();
            let wait = header_wait(status, resp.headers());
            if let Some(w) = wait {
                self.pacer.back_off(w, Instant::now());
            }
            let text = resp.text().await.map_err(|e| ForgeError::Network {
                forge,
                api: self.target.api.clone(),
                action: action.to_string(),
                reason: e.without_url().to_string(),
            })?;
            if (200..300).contains(&status) {
                if text.trim().is_empty() {
                    return Ok(Value::Null);
                }
                let mut answer: Value = serde_json::from_str(&text)
                    .map_err(|e| self.protocol(action, &format!("not JSON: {e}")))?;
                secret::known().value(&mut answer);
                return Ok(answer);
            }
            let retryable = matches!(status, 403 | 429) && wait.is_some_and(|w| w <= MAX_WAIT);
            if attempt == 0 && retryable {
                continue;
            }
            return Err(self.status_error(status, &text, action));
        }
        Err(self.protocol(action, "rate limited twice"))
    }

    fn status_error(&self, status: u16, text: &str, action: &str) -> ForgeError {
        let forge = self.target.forge.name();
        let message = secret::redact(&error_message(text));
        let repo = format!("{}/{}", self.target.owner, self.target.repo);
        match status {
            401 => ForgeError::Unauthorized {
                forge,
                var: self.token_var.clone(),
            },
            403 => {
                let scope = match self.target.forge {
                    Forge::GitHub => {
                        "classic: repo; fine-grained: contents and pull requests, read and write"
                    }
                    Forge::Gitea => "write:repository",
                    Forge::GitLab => "api",
                };
                let said = if message.is_empty() {
                    String::new()
                } else {
                    format!(": {message}")
                };
                ForgeError::Forbidden {
                    forge,
                    action: action.to_string(),
                    var: self.token_var.clone(),
                    detail: format!("lacks the scope it needs ({scope}) or access to {repo}{said}"),
                }
            }
            404 => ForgeError::NotFound {
                forge,
                what: format!("{repo} ({action})"),
            },
            422 => ForgeError::Unprocessable {
                forge,
                action: action.to_string(),
                message,
            },
            _ => ForgeError::Status {
                forge,
                action: action.to_string(),
                status,
                message,
            },
        }
    }
}

/// The wait the headers of an answer ask for.
fn header_wait(status: u16, headers: &HeaderMap) -> Option<Duration> {
    let h = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    pacing::wait_from_headers(
        status,
        h("retry-after"),
        h("x-ratelimit-remaining"),
        h("x-ratelimit-reset"),
        pacing::now_epoch(),
    )
}

/// The message of an error answer: `message` and GitHub's `errors[].message`, or the text itself, short.
fn error_message(text: &str) -> String {
    let Ok(v) = serde_json::from_str::<Value>(text) else {
        return text.chars().take(300).collect();
    };
    let mut parts: Vec<String> = v
        .get("message")
        .and_then(Value::as_str)
        .map(str::to_string)
        .into_iter()
        .collect();
    for e in v
        .get("errors")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(m) = e.get("message").and_then(Value::as_str) {
            parts.push(m.to_string());
        }
    }
    parts.join(": ")
}

/// An issue's label names: GitHub and Gitea send objects with a `name`, GitLab plain strings.
fn label_names(issue: &Value) -> Vec<String> {
    issue
        .get("labels")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|l| {
            l.as_str()
                .or_else(|| l.get("name").and_then(Value::as_str))
                .map(str::to_string)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_answers_give_their_message() {
        let text = r#"{"message":"Validation Failed","errors":[{"message":"A pull request already exists for o:b."}]}"#;
        assert_eq!(
            error_message(text),
            "Validation Failed: A pull request already exists for o:b."
        );
        assert_eq!(error_message("plain"), "plain");
    }
}
