//! `vouch pr`: real pushes (a bare repository on disk, and a smart-HTTP server the test starts in front of
//! `git http-backend` that checks the token), and pull requests against a scripted GitHub/Gitea API that
//! records every request. A recognisable fake token is used throughout and must appear nowhere.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

use crate::util::tls::TestCa;
use crate::util::{git_env, Repo, Run};

pub(super) const TOKEN: &str = "vouch-fake-token-5e1f9a2c";
/// The login of the token's own user, as the scripted forge reports it: its comments are this user's.
pub(super) const LOGIN: &str = "vouch-bot";

/// One request the scripted forge saw.
#[derive(Clone, Debug)]
pub(super) struct Seen {
    pub method: String,
    pub path: String,
    pub auth: Option<String>,
    /// GitLab's `PRIVATE-TOKEN` header.
    pub private_token: Option<String>,
    pub json: Value,
}

#[derive(Default)]
pub(super) struct ForgeState {
    pub seen: Vec<Seen>,
    pub prs: Vec<Value>,
    /// An error answer for every creating request: status and message.
    pub fail: Option<(u16, String)>,
    /// `GET pulls/N`: the pull requests to re-verify.
    pub pulls: HashMap<u64, Value>,
    /// `GET issues/N`.
    pub issues: HashMap<u64, Value>,
    /// Comments on issues and pull requests: `{id, issue, body, user: {login}}`.
    pub comments: Vec<Value>,
    /// The next creating request of a pull request gets `429 Too Many Requests` with this `Retry-After`.
    pub rate_limit_once: Option<u64>,
}

/// A scripted forge API on a local port: GitHub's paths, or Gitea's under `/api/v1`.
pub(super) struct FakeForge {
    pub url: String,
    pub state: Arc<Mutex<ForgeState>>,
}

impl FakeForge {
    pub(super) fn start() -> FakeForge {
        FakeForge::start_on(None)
    }

    /// The forge over HTTPS, with a certificate `ca` signed.
    pub(super) fn start_tls(ca: &TestCa) -> FakeForge {
        FakeForge::start_on(Some(ca))
    }

    fn start_on(ca: Option<&TestCa>) -> FakeForge {
        let state = Arc::new(Mutex::new(ForgeState::default()));
        let app = axum::Router::new()
            .fallback(forge_handler)
            .with_state(state.clone());
        let url = crate::util::tls::serve_in_thread(app, ca);
        FakeForge { url, state }
    }

    pub(super) fn seen(&self) -> Vec<Seen> {
        self.state.lock().unwrap().seen.clone()
    }

    fn fail(&self, status: u16, message: &str) {
        self.state.lock().unwrap().fail = Some((status, message.to_string()));
    }
}

/// Serves `app` on a free local port from a thread of its own; the URL.
pub(super) fn serve(app: axum::Router) -> String {
    crate::util::tls::serve_in_thread(app, None)
}

async fn forge_handler(
    State(state): State<Arc<Mutex<ForgeState>>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let mut st = state.lock().unwrap();
    let json: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    // A forge that reflects what it was sent: `@AUTH@` in an issue or an error message becomes the
    // request's `Authorization` header.
    if let Some(auth) = headers.get("authorization").and_then(|v| v.to_str().ok()) {
        let reflect =
            |v: &Value| serde_json::from_str(&v.to_string().replace("@AUTH@", auth)).unwrap();
        for issue in st.issues.values_mut() {
            *issue = reflect(issue);
        }
        if let Some((_, message)) = &mut st.fail {
            *message = message.replace("@AUTH@", auth);
        }
    }
    let full = uri
        .path_and_query()
        .map(|p| p.to_string())
        .unwrap_or_default();
    st.seen.push(Seen {
        method: method.to_string(),
        path: full.clone(),
        auth: headers
            .get("authorization")
            .map(|v| v.to_str().unwrap().to_string()),
        private_token: headers
            .get("private-token")
            .map(|v| v.to_str().unwrap().to_string()),
        json: json.clone(),
    });
    if let Some(rest) = uri
        .path()
        .strip_prefix("/api/v4/projects/o%2Fr/merge_requests")
    {
        return gitlab_merge_requests(&mut st, method.as_str(), rest, uri.query(), &json);
    }
    if let Some(rest) = uri.path().strip_prefix("/api/v4/projects/o%2Fr/issues") {
        return gitlab_issues(&mut st, method.as_str(), rest, &full, &json);
    }
    let path = uri.path().trim_start_matches("/api/v1");
    // The token's own user: GitHub's and Gitea's `login`, GitLab's `username`.
    match (method.as_str(), uri.path()) {
        ("GET", "/user" | "/api/v1/user") => {
            return axum::Json(json!({"login": LOGIN})).into_response()
        }
        ("GET", "/api/v4/user") => return axum::Json(json!({"username": LOGIN})).into_response(),
        _ => {}
    }
    if let Some(answer) = issues_and_statuses(&mut st, method.as_str(), path, &json) {
        return answer;
    }
    let Some(rest) = path.strip_prefix("/repos/o/r/pulls") else {
        return (
            StatusCode::NOT_FOUND,
            axum::Json(json!({"message": "Not Found"})),
        )
            .into_response();
    };
    if method != Method::GET {
        if let Some(secs) = st.rate_limit_once.take() {
            return (
                StatusCode::TOO_MANY_REQUESTS,
                [("retry-after", secs.to_string())],
                axum::Json(json!({"message": "You have exceeded a secondary rate limit."})),
            )
                .into_response();
        }
        if let Some((status, message)) = st.fail.clone() {
            let status = StatusCode::from_u16(status).unwrap();
            return (status, axum::Json(json!({"message": message}))).into_response();
        }
    }
    match (method.as_str(), rest) {
        ("GET", "") => axum::Json(Value::Array(st.prs.clone())).into_response(),
        ("POST", "") => {
            let number = st.prs.len() as u64 + 1;
            let pr = json!({
                "number": number,
                "html_url": format!("https://forge.example/o/r/pull/{number}"),
                "title": json["title"],
                "body": json["body"],
                "head": {"ref": json["head"]},
            });
            st.prs.push(pr.clone());
            (StatusCode::CREATED, axum::Json(pr)).into_response()
        }
        ("GET", n) => {
            let n: u64 = n.trim_start_matches('/').parse().unwrap();
            match st.pulls.get(&n) {
                Some(pr) => axum::Json(pr.clone()).into_response(),
                None => (
                    StatusCode::NOT_FOUND,
                    axum::Json(json!({"message": "Not Found"})),
                )
                    .into_response(),
            }
        }
        ("PATCH", n) => {
            let n: u64 = n.trim_start_matches('/').parse().unwrap();
            let pr = st.prs.iter_mut().find(|p| p["number"] == n).unwrap();
            pr["body"] = json["body"].clone();
            axum::Json(pr.clone()).into_response()
        }
        _ => StatusCode::METHOD_NOT_ALLOWED.into_response(),
    }
}

/// GitLab's merge requests: listed by source branch, opened, their description replaced.
fn gitlab_merge_requests(
    st: &mut ForgeState,
    method: &str,
    rest: &str,
    query: Option<&str>,
    json: &Value,
) -> Response {
    match (method, rest) {
        ("GET", "") => {
            let branch = query
                .unwrap_or("")
                .split('&')
                .find_map(|kv| kv.strip_prefix("source_branch="))
                .unwrap_or("");
            let open: Vec<Value> = st
                .prs
                .iter()
                .filter(|m| m["source_branch"] == branch)
                .cloned()
                .collect();
            axum::Json(Value::Array(open)).into_response()
        }
        ("POST", "") => {
            let iid = st.prs.len() as u64 + 1;
            let mr = json!({
                "id": 1000 + iid, "iid": iid,
                "web_url": format!("https://gitlab.example/o/r/-/merge_requests/{iid}"),
                "title": json["title"], "description": json["description"],
                "source_branch": json["source_branch"], "target_branch": json["target_branch"],
            });
            st.prs.push(mr.clone());
            (StatusCode::CREATED, axum::Json(mr)).into_response()
        }
        ("PUT", n) => {
            let iid: u64 = n.trim_start_matches('/').parse().unwrap();
            let mr = st.prs.iter_mut().find(|m| m["iid"] == iid).unwrap();
            mr["description"] = json["description"].clone();
            axum::Json(mr.clone()).into_response()
        }
        _ => StatusCode::METHOD_NOT_ALLOWED.into_response(),
    }
}

/// GitLab's issues as its API documents them: listed with the `labels` filter (all of them, comma-separated)
/// and `state` (`opened`, `closed`, all when left out) applied, each with `iid`, `description` and plain
/// label names; edited by `PUT` with `add_labels` and `remove_labels` (comma-separated names).
fn gitlab_issues(
    st: &mut ForgeState,
    method: &str,
    rest: &str,
    full: &str,
    json: &Value,
) -> Response {
    let query: HashMap<String, String> = reqwest::Url::parse(&format!("http://forge{full}"))
        .unwrap()
        .query_pairs()
        .into_owned()
        .collect();
    let names = |v: &Value| -> Vec<String> {
        v.as_str()
            .unwrap_or("")
            .split(',')
            .filter(|l| !l.is_empty())
            .map(str::to_string)
            .collect()
    };
    match (method, rest) {
        ("GET", "") => {
            let wanted = names(&json!(query.get("labels").cloned().unwrap_or_default()));
            let mut list: Vec<Value> = st
                .issues
                .values()
                .filter(|i| {
                    query
                        .get("state")
                        .is_none_or(|s| s == "all" || i["state"] == s.as_str())
                })
                .filter(|i| {
                    let has = i["labels"].as_array().cloned().unwrap_or_default();
                    wanted.iter().all(|w| has.contains(&json!(w)))
                })
                .cloned()
                .collect();
            list.sort_by_key(|i| std::cmp::Reverse(i["iid"].as_u64()));
            axum::Json(Value::Array(list)).into_response()
        }
        ("GET", n) | ("PUT", n) => {
            let iid: u64 = n.trim_start_matches('/').parse().unwrap();
            let Some(issue) = st.issues.get_mut(&iid) else {
                return (
                    StatusCode::NOT_FOUND,
                    axum::Json(json!({"message": "404 Issue Not Found"})),
                )
                    .into_response();
            };
            if method == "PUT" {
                let mut labels: Vec<Value> =
                    issue["labels"].as_array().cloned().unwrap_or_default();
                for l in names(&json["add_labels"]) {
                    if !labels.contains(&json!(l)) {
                        labels.push(json!(l));
                    }
                }
                let gone = names(&json["remove_labels"]);
                labels.retain(|l| !gone.iter().any(|g| l == g.as_str()));
                issue["labels"] = Value::Array(labels);
            }
            axum::Json(issue.clone()).into_response()
        }
        _ => StatusCode::METHOD_NOT_ALLOWED.into_response(),
    }
}

/// Issues, their comments and commit statuses; `None` for the pull requests' paths.
fn issues_and_statuses(
    st: &mut ForgeState,
    method: &str,
    path: &str,
    json: &Value,
) -> Option<Response> {
    let segments: Vec<&str> = path.trim_start_matches("/repos/o/r/").split('/').collect();
    if !path.starts_with("/repos/o/r/") {
        return None;
    }
    let answer = match (method, segments.as_slice()) {
        ("POST", ["statuses", _sha]) => {
            (StatusCode::CREATED, axum::Json(json!({"id": 1}))).into_response()
        }
        ("GET", ["issues"]) => {
            // The label filter is the forge's; the list has a pull request in it, as GitHub's has.
            let mut list: Vec<Value> = st.issues.values().cloned().collect();
            list.sort_by_key(|i| i["number"].as_u64());
            list.push(
                json!({"number": 999, "title": "a pull request", "pull_request": {"url": "x"}}),
            );
            axum::Json(Value::Array(list)).into_response()
        }
        ("POST", ["issues", n, "labels"]) | ("PUT", ["issues", n, "labels"]) => {
            let issue = st.issues.get_mut(&n.parse::<u64>().unwrap()).unwrap();
            let mut labels: Vec<Value> = if method == "POST" {
                issue["labels"].as_array().cloned().unwrap_or_default()
            } else {
                vec![]
            };
            for l in json["labels"].as_array().into_iter().flatten() {
                labels.push(json!({"name": l}));
            }
            issue["labels"] = Value::Array(labels.clone());
            axum::Json(Value::Array(labels)).into_response()
        }
        ("GET", ["issues", n]) => match st.issues.get(&n.parse::<u64>().unwrap()) {
            Some(issue) => axum::Json(issue.clone()).into_response(),
            None => StatusCode::NOT_FOUND.into_response(),
        },
        ("GET", ["issues", n, "comments"]) => {
            let n: u64 = n.parse().unwrap();
            let list: Vec<Value> = st
                .comments
                .iter()
                .filter(|c| c["issue"] == n)
                .cloned()
                .collect();
            axum::Json(Value::Array(list)).into_response()
        }
        ("POST", ["issues", n, "comments"]) => {
            let id = 100 + st.comments.len() as u64;
            let c = json!({
                "id": id, "issue": n.parse::<u64>().unwrap(), "body": json["body"], "user": {"login": LOGIN},
            });
            st.comments.push(c.clone());
            (StatusCode::CREATED, axum::Json(c)).into_response()
        }
        ("PATCH", ["issues", "comments", id]) => {
            let id: u64 = id.parse().unwrap();
            let c = st.comments.iter_mut().find(|c| c["id"] == id).unwrap();
            c["body"] = json["body"].clone();
            axum::Json(c.clone()).into_response()
        }
        _ => return None,
    };
    Some(answer)
}

/// A repository with `origin` a bare repository holding `main`, and branch `vouch/t` one commit ahead,
/// with the run's records of a verified run (the repository stands in for the workspace).
pub(super) struct Fixture {
    pub repo: Repo,
    pub bare: PathBuf,
}

pub(super) fn fixture() -> Fixture {
    let repo = Repo::with_files(&[("README.md", "hello\n"), (".gitignore", ".vouch/\n")]);
    let bare = repo.tmp.path().join("remote.git");
    git(
        repo.tmp.path(),
        &["init", "-q", "--bare", "-b", "main", bare.to_str().unwrap()],
    );
    repo.git(&["remote", "add", "origin", bare.to_str().unwrap()]);
    repo.git(&["push", "-q", "origin", "main"]);
    repo.git(&["checkout", "-q", "-b", "vouch/t"]);
    repo.write("src.txt", "the fix\n");
    let commit = repo.commit("fix add");
    repo.git(&["checkout", "-q", "main"]);
    records(&repo, "verified", &commit);
    Fixture { repo, bare }
}

fn records(repo: &Repo, status: &str, commit: &str) {
    let report = json!({
        "task": "t", "title": "Fix add for negatives", "status": status, "stop_reason": "submitted",
        "claimed": null, "summary": "Handled negative numbers.", "gate": null, "branch": "vouch/t",
        "base": commit, "commit": commit, "workspace": repo.dir.display().to_string(), "turns": 3,
        "max_turns": 40, "tokens": {"prompt": 1, "cached": 0, "completion": 1}, "repairs": 0,
        "error": null, "duration_ms": 5,
        "task_text": "add() returns the wrong sign for negative numbers.", "model": "qwen-coder-test"
    });
    let dir = repo
        .data()
        .join("runs")
        .join(vouch::agent::records::repo_key(&repo.dir).unwrap())
        .join("t");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("report.json"), report.to_string()).unwrap();
}

pub(super) fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .envs(git_env())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

impl Fixture {
    fn pr(&self, forge: &FakeForge, kind: &str, extra: &[&str]) -> Run {
        self.pr_env(
            forge,
            kind,
            extra,
            &[
                ("GITHUB_TOKEN", TOKEN),
                ("GITEA_TOKEN", TOKEN),
                ("GITLAB_TOKEN", TOKEN),
            ],
        )
    }

    pub(super) fn pr_env(
        &self,
        forge: &FakeForge,
        kind: &str,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> Run {
        let ws = self.repo.dir.to_str().unwrap().to_string();
        let mut args = vec![
            "-vv",
            "pr",
            &ws,
            "--task",
            "t",
            "--forge",
            kind,
            "--forge-repo",
            "o/r",
            "--api-url",
            &forge.url,
        ];
        args.extend_from_slice(extra);
        let run = self.repo.vouch_env(
            &args,
            &[
                ("GH_TOKEN", ""),
                ("GITHUB_TOKEN", ""),
                ("GITEA_TOKEN", ""),
                ("GITLAB_TOKEN", ""),
            ]
            .iter()
            .copied()
            .filter(|(k, _)| !env.iter().any(|(e, _)| e == k))
            .chain(env.iter().copied())
            .collect::<Vec<_>>(),
        );
        assert_no_token(&run);
        run
    }

    pub(super) fn remote_sha(&self, branch: &str) -> String {
        git(&self.bare, &["rev-parse", branch])
    }
}

pub(super) fn assert_no_token(run: &Run) {
    for (name, text) in [("stdout", &run.stdout), ("stderr", &run.stderr)] {
        assert!(
            !text.contains(TOKEN),
            "the token leaked into {name}:\n{text}"
        );
    }
}

/// Every file under `dir` that holds the token.
pub(super) fn files_with_token(dir: &Path) -> Vec<PathBuf> {
    crate::util::snapshot_dir(dir)
        .into_iter()
        .filter(|(_, bytes)| String::from_utf8_lossy(bytes).contains(TOKEN))
        .map(|(p, _)| p)
        .collect()
}

#[test]
fn github_pull_request_is_opened_then_updated() {
    let f = fixture();
    f.repo.git(&["checkout", "-q", "vouch/t"]);
    f.repo.write(
        ".github/pull_request_template.md",
        "## Checklist\n\n- [ ] reviewed\n",
    );
    let tip = f.repo.commit("template");
    f.repo.git(&["checkout", "-q", "main"]);
    let forge = FakeForge::start();

    let run = f.pr(&forge, "github", &[]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stdout.contains("pushed vouch/t") && run.stdout.contains("opened pull request #1"),
        "{}",
        run.stdout
    );
    assert_eq!(f.remote_sha("vouch/t"), tip);
    let seen = forge.seen();
    let post = seen.iter().find(|s| s.method == "POST").unwrap();
    assert_eq!(post.path, "/repos/o/r/pulls");
    assert_eq!(
        post.auth.as_deref(),
        Some(format!("Bearer {TOKEN}").as_str())
    );
    assert_eq!(post.json["head"], "vouch/t");
    assert_eq!(post.json["base"], "main");
    assert_eq!(post.json["title"], "Fix add for negatives");
    assert_eq!(post.json["draft"], false);
    let body = post.json["body"].as_str().unwrap();
    assert!(
        body.starts_with("## Checklist\n\n- [ ] reviewed"),
        "template first: {body}"
    );
    assert!(
        body.contains("verified") && body.contains("Handled negative numbers."),
        "{body}"
    );
    assert!(
        body.contains("add() returns the wrong sign for negative numbers.")
            && body.contains("qwen-coder-test"),
        "the task text and the model from the run's report: {body}"
    );
    let list = &seen[0];
    assert_eq!(
        (list.method.as_str(), list.path.as_str()),
        (
            "GET",
            "/repos/o/r/pulls?state=open&head=o:vouch/t&per_page=100"
        )
    );

    // A second run updates the open pull request's body instead of opening another.
    let run = f.pr(&forge, "github", &["--issue", "12"]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stdout.contains("up to date")
            && run.stdout.contains("updated the body of pull request #1"),
        "{}",
        run.stdout
    );
    let seen = forge.seen();
    assert_eq!(
        seen.iter().filter(|s| s.method == "POST").count(),
        1,
        "{seen:?}"
    );
    let patch = seen.iter().find(|s| s.method == "PATCH").unwrap();
    assert_eq!(patch.path, "/repos/o/r/pulls/1");
    assert!(patch.json["body"].as_str().unwrap().contains("Fixes #12"));
    let records = f
        .repo
        .data()
        .join("runs")
        .join(vouch::agent::records::repo_key(&f.repo.dir).unwrap())
        .join("t");
    assert!(records.join("pr.md").exists());
    assert!(!f.repo.dir.join(".vouch").exists());
    assert_eq!(files_with_token(f.repo.tmp.path()), Vec::<PathBuf>::new());
}

#[test]
fn gitea_drafts_by_a_wip_title() {
    let f = fixture();
    records(&f.repo, "rejected", &f.repo.git(&["rev-parse", "vouch/t"]));
    let forge = FakeForge::start();
    let run = f.pr(&forge, "gitea", &[]);
    assert_eq!(run.code, 2, "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stderr.contains("not verified") && run.stderr.contains("--draft"),
        "{}",
        run.stderr
    );
    assert!(forge.seen().is_empty());

    let run = f.pr(&forge, "gitea", &["--draft", "--title", "Try"]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let post = forge
        .seen()
        .into_iter()
        .find(|s| s.method == "POST")
        .unwrap();
    assert_eq!(post.path, "/api/v1/repos/o/r/pulls");
    assert_eq!(
        post.auth.as_deref(),
        Some(format!("token {TOKEN}").as_str())
    );
    assert_eq!(post.json["title"], "WIP: Try");
    assert!(post.json.get("draft").is_none(), "{}", post.json);
}

#[test]
fn forge_errors_say_what_to_do_and_keep_the_body() {
    let f = fixture();
    let forge = FakeForge::start();
    let cases = [
        (
            401,
            "Bad credentials",
            "rejected the token from GITHUB_TOKEN",
        ),
        (
            403,
            "Resource not accessible by integration",
            "lacks the scope",
        ),
        (404, "Not Found", "o/r (opening the pull request) not found"),
        (
            422,
            "Validation Failed: base is invalid",
            "refused opening the pull request (422)",
        ),
    ];
    for (status, message, want) in cases {
        forge.fail(status, message);
        let run = f.pr(&forge, "github", &[]);
        assert_eq!(run.code, 3, "{status}: {}\n{}", run.stdout, run.stderr);
        assert!(run.stderr.contains(want), "{status}: {}", run.stderr);
        assert!(run.stderr.contains("pr.md"), "{status}: {}", run.stderr);
    }
    // 422 "already exists" means update: the open one is found again and its body replaced.
    forge.fail(422, "A pull request already exists for o:vouch/t.");
    forge
        .state
        .lock()
        .unwrap()
        .prs
        .push(json!({"number": 9, "html_url": "u", "title": "x", "head": {"ref": "other"}}));
    let run = f.pr(&forge, "github", &[]);
    assert_eq!(run.code, 3, "none open for the head: {}", run.stderr);
    assert!(run.stderr.contains("already exists"), "{}", run.stderr);

    // Network: nothing listens.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let dead = FakeForge {
        url,
        state: forge.state.clone(),
    };
    let run = f.pr(&dead, "github", &[]);
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert!(run.stderr.contains("cannot reach github"), "{}", run.stderr);

    // No token at all: said before anything is pushed.
    let run = f.pr_env(&forge, "gitea", &[], &[]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("no token for gitea: set GITEA_TOKEN"),
        "{}",
        run.stderr
    );
}

#[test]
fn the_lease_refuses_to_overwrite_commits_vouch_did_not_make() {
    let f = fixture();
    let forge = FakeForge::start();
    assert_eq!(f.pr(&forge, "github", &[]).code, 0);
    // Someone else pushes to the branch.
    let other = f.repo.tmp.path().join("other");
    git(
        f.repo.tmp.path(),
        &[
            "clone",
            "-q",
            "-b",
            "vouch/t",
            f.bare.to_str().unwrap(),
            other.to_str().unwrap(),
        ],
    );
    std::fs::write(other.join("theirs.txt"), "theirs\n").unwrap();
    git(&other, &["add", "-A"]);
    git(&other, &["commit", "-q", "-m", "theirs"]);
    git(&other, &["push", "-q", "origin", "vouch/t"]);
    let theirs = f.remote_sha("vouch/t");
    // vouch's branch moves on without their commit.
    f.repo.git(&["checkout", "-q", "vouch/t"]);
    f.repo.write("src.txt", "a better fix\n");
    f.repo.commit("better fix");
    f.repo.git(&["checkout", "-q", "main"]);
    let run = f.pr(&forge, "github", &[]);
    assert_eq!(run.code, 2, "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stderr.contains("commits vouch did not make"),
        "{}",
        run.stderr
    );
    assert_eq!(
        f.remote_sha("vouch/t"),
        theirs,
        "the remote branch was overwritten"
    );
}

/// Basic auth as git sends it for the token.
pub(super) fn basic(user: &str, password: &str) -> String {
    const ABC: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let bytes = format!("{user}:{password}").into_bytes();
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ABC[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    format!("Basic {out}")
}

/// Every request a [`GitServer`] saw: its path and query, and whether it was authorised.
pub(super) type GitLog = Arc<Mutex<Vec<(String, bool)>>>;

#[derive(Clone)]
pub(super) struct GitServer {
    pub root: PathBuf,
    pub expected: String,
    pub log: GitLog,
}

impl GitServer {
    /// `git http-backend` for the repositories under `root`, behind basic auth with the token; over TLS
    /// with `ca`'s certificate when given. The URL (repositories are under `/git/`) and the request log.
    pub(super) fn start(root: &Path, ca: Option<&TestCa>) -> (String, GitLog) {
        let srv = GitServer {
            root: root.to_path_buf(),
            expected: basic("x-access-token", TOKEN),
            log: Arc::new(Mutex::new(Vec::new())),
        };
        let log = srv.log.clone();
        let app = axum::Router::new().fallback(git_handler).with_state(srv);
        (crate::util::tls::serve_in_thread(app, ca), log)
    }
}

/// `git http-backend` as CGI behind basic auth.
async fn git_handler(
    State(srv): State<GitServer>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let authorised =
        headers.get("authorization").and_then(|v| v.to_str().ok()) == Some(srv.expected.as_str());
    srv.log.lock().unwrap().push((uri.to_string(), authorised));
    if !authorised {
        return (
            StatusCode::UNAUTHORIZED,
            [("WWW-Authenticate", "Basic realm=\"git\"")],
            "",
        )
            .into_response();
    }
    let header = |n: &str| {
        headers
            .get(n)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string()
    };
    let mut env: HashMap<&str, String> = HashMap::new();
    env.insert("GIT_PROJECT_ROOT", srv.root.display().to_string());
    env.insert("GIT_HTTP_EXPORT_ALL", "1".into());
    env.insert(
        "PATH_INFO",
        uri.path().trim_start_matches("/git").to_string(),
    );
    env.insert("QUERY_STRING", uri.query().unwrap_or("").to_string());
    env.insert("REQUEST_METHOD", method.to_string());
    env.insert("CONTENT_TYPE", header("content-type"));
    env.insert("CONTENT_LENGTH", body.len().to_string());
    env.insert("HTTP_CONTENT_ENCODING", header("content-encoding"));
    env.insert("GIT_PROTOCOL", header("git-protocol"));
    env.insert("REMOTE_USER", "vouch".into());
    env.insert("REMOTE_ADDR", "127.0.0.1".into());
    let out = tokio::task::spawn_blocking(move || {
        let mut child = Command::new("git")
            .arg("http-backend")
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap())
            .envs(git_env())
            .envs(env)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(&body).unwrap();
        child.wait_with_output().unwrap().stdout
    })
    .await
    .unwrap();
    let split = out
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|i| (i, 4))
        .or_else(|| out.windows(2).position(|w| w == b"\n\n").map(|i| (i, 2)))
        .unwrap();
    let (head, rest) = (
        String::from_utf8_lossy(&out[..split.0]).to_string(),
        out[split.0 + split.1..].to_vec(),
    );
    let mut resp = Response::builder();
    for line in head.lines() {
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        if k.eq_ignore_ascii_case("status") {
            let code: u16 = v.trim()[..3].parse().unwrap();
            resp = resp.status(code);
        } else {
            resp = resp.header(k.trim(), v.trim());
        }
    }
    resp.body(axum::body::Body::from(rest)).unwrap()
}

#[test]
fn push_over_smart_http_sends_the_token_through_the_credential_callback() {
    let f = fixture();
    let (url, log) = GitServer::start(f.repo.tmp.path(), None);
    f.repo.git(&[
        "remote",
        "set-url",
        "origin",
        &format!("{url}/git/remote.git"),
    ]);
    let forge = FakeForge::start();

    // A wrong token: the server refuses it, vouch says so and asks only once more.
    let run = f.pr_env(&forge, "github", &[], &[("GITHUB_TOKEN", "wrong-token")]);
    assert_eq!(run.code, 3, "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stderr.contains("refused the token from GITHUB_TOKEN"),
        "{}",
        run.stderr
    );
    assert!(log.lock().unwrap().iter().all(|(_, ok)| !ok));
    assert!(forge.seen().is_empty(), "no pull request without a push");

    let run = f.pr(&forge, "github", &[]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(
        f.remote_sha("vouch/t"),
        f.repo.git(&["rev-parse", "vouch/t"])
    );
    let log = log.lock().unwrap().clone();
    assert!(
        log.iter()
            .any(|(u, ok)| *ok && u.contains("git-receive-pack")),
        "{log:?}"
    );
    assert!(log.iter().all(|(u, _)| !u.contains(TOKEN)));
    let config = std::fs::read_to_string(f.repo.dir.join(".git/config")).unwrap();
    assert!(
        config.contains(&format!("url = {url}/git/remote.git")),
        "{config}"
    );
    assert_eq!(files_with_token(f.repo.tmp.path()), Vec::<PathBuf>::new());
}

#[test]
fn https_and_ssh_remotes_are_pushed_through_tls_and_ssh_transports() {
    let f = fixture();
    let forge = FakeForge::start();
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let repo = f.repo.dir.to_str().unwrap().to_string();
    for remote in [
        format!("https://127.0.0.1:{port}/o/r.git"),
        format!("ssh://git@127.0.0.1:{port}/o/r.git"),
    ] {
        let run = f.repo.vouch_env(
            &[
                "pr",
                "--branch",
                "vouch/t",
                "--repo",
                &repo,
                "--remote",
                &remote,
                "--forge",
                "github",
                "--forge-repo",
                "o/r",
                "--api-url",
                &forge.url,
            ],
            &[("GITHUB_TOKEN", TOKEN), ("SSH_AUTH_SOCK", "")],
        );
        assert_no_token(&run);
        assert_eq!(run.code, 3, "{remote}: {}\n{}", run.stdout, run.stderr);
        assert!(
            !run.stderr.contains("unsupported URL protocol"),
            "{remote}: this build has no transport for it: {}",
            run.stderr
        );
        assert!(
            run.stderr.contains("cannot reach the remote")
                && run.stderr.contains("failed to connect to 127.0.0.1"),
            "{remote}: {}",
            run.stderr
        );
    }
    assert!(forge.seen().is_empty(), "no pull request without a push");
}

#[test]
fn a_forge_behind_a_private_ca_is_trusted_only_with_its_ca_bundle() {
    let f = fixture();
    let ca = TestCa::new(&f.repo.tmp.path().join("tls"));
    let forge = FakeForge::start_tls(&ca);
    assert!(forge.url.starts_with("https://127.0.0.1:"), "{}", forge.url);
    let no_bundle = [
        ("GITHUB_TOKEN", TOKEN),
        ("GITEA_TOKEN", TOKEN),
        ("SSL_CERT_FILE", ""),
    ];

    // Not trusted: the certificate problem is named, with the way out; nothing reached the forge.
    let run = f.pr_env(&forge, "github", &[], &no_bundle);
    assert_eq!(run.code, 3, "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stderr
            .contains("cannot trust github at https://127.0.0.1")
            && run.stderr.contains("certificate")
            && run.stderr.contains("UnknownIssuer")
            && run.stderr.contains("--ca-file")
            && run.stderr.contains("SSL_CERT_FILE"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("pr.md"),
        "the body is kept: {}",
        run.stderr
    );
    assert!(forge.seen().is_empty(), "{:?}", forge.seen());

    // --ca-file: trusted, the pull request is opened.
    let ca_file = ca.ca.to_str().unwrap();
    let run = f.pr_env(&forge, "github", &["--ca-file", ca_file], &no_bundle);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stdout.contains("opened pull request #1"),
        "{}",
        run.stdout
    );

    // SSL_CERT_FILE: trusted too, the open one is updated.
    let run = f.pr_env(
        &forge,
        "github",
        &[],
        &[("GITHUB_TOKEN", TOKEN), ("SSL_CERT_FILE", ca_file)],
    );
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stdout.contains("updated the body of pull request #1"),
        "{}",
        run.stdout
    );

    // `ca_file` in the user's own vouch.toml: trusted (Gitea this time, the same server answers).
    let xdg = f.repo.tmp.path().join("xdg");
    std::fs::create_dir_all(xdg.join("vouch")).unwrap();
    std::fs::write(
        xdg.join("vouch/vouch.toml"),
        format!("[forge]\nca_file = \"{ca_file}\"\n"),
    )
    .unwrap();
    let run = f.pr_env(
        &forge,
        "gitea",
        &[],
        &[
            ("GITEA_TOKEN", TOKEN),
            ("SSL_CERT_FILE", ""),
            ("XDG_CONFIG_HOME", xdg.to_str().unwrap()),
        ],
    );
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(files_with_token(f.repo.tmp.path()), Vec::<PathBuf>::new());
}

#[test]
fn push_over_https_with_a_private_ca_needs_its_ca_bundle() {
    let f = fixture();
    let ca = TestCa::new(&f.repo.tmp.path().join("tls"));
    let (url, log) = GitServer::start(f.repo.tmp.path(), Some(&ca));
    assert!(url.starts_with("https://"), "{url}");
    f.repo.git(&[
        "remote",
        "set-url",
        "origin",
        &format!("{url}/git/remote.git"),
    ]);
    let forge = FakeForge::start();
    let no_bundle = [("GITHUB_TOKEN", TOKEN), ("SSL_CERT_FILE", "")];

    let run = f.pr_env(&forge, "github", &[], &no_bundle);
    assert_eq!(run.code, 3, "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stderr.contains("TLS certificate failed verification")
            && run.stderr.contains("--ca-file"),
        "{}",
        run.stderr
    );
    assert!(
        !run.stderr.contains("cannot reach the remote"),
        "a certificate problem is not a network one: {}",
        run.stderr
    );
    assert!(log.lock().unwrap().is_empty(), "no request got through TLS");
    assert!(forge.seen().is_empty(), "no pull request without a push");

    let ca_file = ca.ca.to_str().unwrap();
    let run = f.pr_env(&forge, "github", &["--ca-file", ca_file], &no_bundle);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(
        f.remote_sha("vouch/t"),
        f.repo.git(&["rev-parse", "vouch/t"])
    );
    assert!(
        log.lock()
            .unwrap()
            .iter()
            .any(|(u, ok)| *ok && u.contains("git-receive-pack")),
        "{:?}",
        log.lock().unwrap()
    );
    assert_eq!(files_with_token(f.repo.tmp.path()), Vec::<PathBuf>::new());
}

#[test]
fn a_configured_token_variable_is_used_and_a_rate_limit_is_waited_out_once() {
    let f = fixture();
    let forge = FakeForge::start();
    forge.state.lock().unwrap().rate_limit_once = Some(2);
    let started = std::time::Instant::now();
    let run = f.pr_env(
        &forge,
        "github",
        &["--token-env", "MY_FORGE_TOKEN"],
        &[("MY_FORGE_TOKEN", TOKEN)],
    );
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stdout.contains("opened pull request #1"),
        "{}",
        run.stdout
    );
    let posts: Vec<Seen> = forge
        .seen()
        .into_iter()
        .filter(|s| s.method == "POST")
        .collect();
    assert_eq!(posts.len(), 2, "one refused, one retried: {posts:?}");
    assert!(
        started.elapsed() >= std::time::Duration::from_secs(2),
        "Retry-After was not honoured: {:?}",
        started.elapsed()
    );
    let bearer = format!("Bearer {TOKEN}");
    assert!(posts
        .iter()
        .all(|p| p.auth.as_deref() == Some(bearer.as_str())));
    assert_eq!(forge.state.lock().unwrap().prs.len(), 1);

    // The variable named but not set: said, with its name.
    let run = f.pr_env(&forge, "github", &["--token-env", "MY_FORGE_TOKEN"], &[]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("no token for github: set MY_FORGE_TOKEN"),
        "{}",
        run.stderr
    );
}

#[test]
fn gitlab_merge_requests_are_opened_as_drafts_then_updated_with_a_private_token() {
    let f = fixture();
    let forge = FakeForge::start();
    let run = f.pr(&forge, "gitlab", &["--draft", "--title", "Try"]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stdout.contains("opened pull request #1"),
        "{}",
        run.stdout
    );
    assert_eq!(
        f.remote_sha("vouch/t"),
        f.repo.git(&["rev-parse", "vouch/t"])
    );
    let seen = forge.seen();
    assert_eq!(
        (seen[0].method.as_str(), seen[0].path.as_str()),
        (
            "GET",
            "/api/v4/projects/o%2Fr/merge_requests?state=opened&source_branch=vouch/t&per_page=100"
        )
    );
    let post = seen.iter().find(|s| s.method == "POST").unwrap();
    assert_eq!(post.path, "/api/v4/projects/o%2Fr/merge_requests");
    assert_eq!(post.private_token.as_deref(), Some(TOKEN));
    assert_eq!(post.auth, None, "GitLab's token goes in PRIVATE-TOKEN only");
    assert_eq!(post.json["title"], "Draft: Try");
    assert_eq!(post.json["source_branch"], "vouch/t");
    assert_eq!(post.json["target_branch"], "main");
    assert!(
        post.json["description"]
            .as_str()
            .unwrap()
            .contains("Handled negative numbers."),
        "{}",
        post.json
    );

    // A second run updates the open merge request's description.
    let run = f.pr(&forge, "gitlab", &["--draft", "--issue", "3"]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stdout.contains("updated the body of pull request #1"),
        "{}",
        run.stdout
    );
    let seen = forge.seen();
    assert_eq!(seen.iter().filter(|s| s.method == "POST").count(), 1);
    let put = seen.iter().find(|s| s.method == "PUT").unwrap();
    assert_eq!(put.path, "/api/v4/projects/o%2Fr/merge_requests/1");
    assert!(put.json["description"]
        .as_str()
        .unwrap()
        .contains("Fixes #3"));
    assert_eq!(files_with_token(f.repo.tmp.path()), Vec::<PathBuf>::new());
}
