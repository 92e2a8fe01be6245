//! `vouch run --issue … --open-pr --comment`: the issue from a scripted forge becomes the task, a scripted
//! model fixes it, the gate verifies it, and the branch is pushed to a real bare repository and opened as a
//! pull request the way `vouch pr` does it; the verdict goes back on the issue. The fake token appears
//! nowhere: not in the output, the records, the transcript or the repository.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

use super::forge::{assert_no_token, files_with_token, git, serve, FakeForge, TOKEN};
use crate::util::model_server;
use crate::util::{Repo, Run};

const CALC: &str = "def add(a, b):\n    return a - b\n";
const FIXED: &str = "def add(a, b):\n    return a + b\n";
const OLD_TEST: &str =
    "from calc import add\n\n\ndef test_add_zero():\n    assert add(0, 0) == 0\n";
const NEW_TEST: &str = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n";

/// A model server that answers each chat request with the next scripted message, and records requests.
#[derive(Clone, Default)]
struct Model {
    answers: Arc<Mutex<VecDeque<Value>>>,
    seen: Arc<Mutex<Vec<Value>>>,
}

/// `@KEY@` in a scripted answer becomes the request's `Authorization` header: a server that reflects the key.
async fn model_handler(
    State(m): State<Model>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if method != Method::POST || uri.path() != "/v1/chat/completions" {
        return StatusCode::NOT_FOUND.into_response();
    }
    m.seen
        .lock()
        .unwrap()
        .push(serde_json::from_slice(&body).unwrap_or(Value::Null));
    let Some(message) = m.answers.lock().unwrap().pop_front() else {
        return (StatusCode::IM_A_TEAPOT, "script ended").into_response();
    };
    let auth = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("no key sent");
    let message: Value = serde_json::from_str(&message.to_string().replace("@KEY@", auth)).unwrap();
    axum::Json(model_server::completion(message)).into_response()
}

fn call(n: usize, name: &str, args: Value) -> Value {
    model_server::tool_calls(n, &[(name, args)])
}

fn model(answers: Vec<Value>) -> (String, Model) {
    let m = Model {
        answers: Arc::new(Mutex::new(answers.into())),
        ..Model::default()
    };
    let app = axum::Router::new()
        .fallback(model_handler)
        .with_state(m.clone());
    (serve(app), m)
}

fn fixing() -> Vec<Value> {
    vec![
        call(
            1,
            "write_file",
            json!({"path": "calc.py", "content": FIXED}),
        ),
        call(
            2,
            "write_file",
            json!({"path": "test_add.py", "content": NEW_TEST}),
        ),
        call(
            3,
            "submit",
            json!({"verdict": "GO", "summary": "add() adds now"}),
        ),
    ]
}

/// The user's repository with origin a bare repository.
fn project() -> (Repo, PathBuf) {
    let repo = Repo::with_files(&[
        (
            "pyproject.toml",
            "[project]\nname = \"calc\"\nversion = \"0.1.0\"\n",
        ),
        ("calc.py", CALC),
        ("test_calc.py", OLD_TEST),
    ]);
    let bare = repo.tmp.path().join("remote.git");
    git(
        repo.tmp.path(),
        &["init", "-q", "--bare", "-b", "main", bare.to_str().unwrap()],
    );
    repo.git(&["remote", "add", "origin", bare.to_str().unwrap()]);
    repo.git(&["push", "-q", "origin", "main"]);
    (repo, bare)
}

fn run(repo: &Repo, endpoint: &str, forge: &FakeForge, extra: &[&str]) -> Run {
    run_env(repo, endpoint, forge, extra, &[])
}

fn run_env(
    repo: &Repo,
    endpoint: &str,
    forge: &FakeForge,
    extra: &[&str],
    env: &[(&str, &str)],
) -> Run {
    let dir = repo.dir.to_str().unwrap().to_string();
    let mut args = vec![
        "run",
        "--repo",
        &dir,
        "--endpoint",
        endpoint,
        "--author",
        "Agent <agent@example.com>",
        "--tool-mode",
        "native",
        "--forge",
        "github",
        "--forge-repo",
        "o/r",
        "--api-url",
        &forge.url,
    ];
    args.extend_from_slice(extra);
    let config = repo.tmp.path().join("config");
    let run = repo.vouch_env(
        &args,
        &[
            ("GITHUB_TOKEN", TOKEN),
            ("GH_TOKEN", ""),
            ("XDG_CONFIG_HOME", config.to_str().unwrap()),
            ("VOUCH_ENDPOINT", ""),
            ("VOUCH_MODEL", ""),
        ]
        .into_iter()
        .chain(env.iter().copied())
        .collect::<Vec<_>>(),
    );
    assert_no_token(&run);
    run
}

#[test]
fn an_issue_becomes_the_task_and_a_verified_run_opens_its_pull_request_and_comments() {
    let (repo, bare) = project();
    let forge = FakeForge::start();
    forge.state.lock().unwrap().issues.insert(
        5,
        json!({"number": 5, "title": "add() subtracts", "body": "add(2, 3) gives -1.",
               "labels": [{"name": "bug"}, {"name": "good first issue"}]}),
    );
    let (endpoint, m) = model(fixing());
    let run = run(
        &repo,
        &endpoint,
        &forge,
        &["--issue", "o/r#5", "--open-pr", "--comment"],
    );
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);

    // The task the model got: the issue's title, body and labels, and Fixes #5.
    let first = m.seen.lock().unwrap()[0].to_string();
    for want in [
        "add() subtracts",
        "add(2, 3) gives -1.",
        "Labels: bug, good first issue",
        "Fixes #5",
    ] {
        assert!(first.contains(want), "{want} not in the task: {first}");
    }
    let seen = forge.seen();
    assert_eq!(
        (seen[0].method.as_str(), seen[0].path.as_str()),
        ("GET", "/repos/o/r/issues/5")
    );
    let post = seen
        .iter()
        .find(|s| s.method == "POST" && s.path == "/repos/o/r/pulls")
        .unwrap_or_else(|| panic!("no pull request opened: {seen:?}"));
    assert_eq!(
        post.auth.as_deref(),
        Some(format!("Bearer {TOKEN}").as_str())
    );
    assert_eq!(post.json["title"], "add() subtracts");
    assert_eq!(post.json["draft"], false);
    let branch = post.json["head"].as_str().unwrap();
    assert!(branch.starts_with("vouch/"), "{branch}");
    let body = post.json["body"].as_str().unwrap();
    for want in [
        "verified",
        "## Task",
        "add(2, 3) gives -1.",
        "Fixes #5",
        "with the model",
        "vouch 0.",
    ] {
        assert!(body.contains(want), "{want} not in the body: {body}");
    }
    assert_eq!(
        git(&bare, &["rev-parse", branch]),
        repo.git(&["rev-parse", branch]),
        "the branch was not pushed"
    );
    let comment = seen
        .iter()
        .find(|s| s.method == "POST" && s.path == "/repos/o/r/issues/5/comments")
        .unwrap_or_else(|| panic!("no comment on the issue: {seen:?}"));
    assert!(
        comment.json["body"].as_str().unwrap().contains("verified"),
        "{}",
        comment.json
    );
    assert!(
        run.stdout.contains("opened pull request #1"),
        "{}",
        run.stdout
    );
    assert_eq!(files_with_token(repo.tmp.path()), Vec::<PathBuf>::new());
}

#[test]
fn open_pr_waits_for_a_verified_run_unless_always_which_opens_a_draft() {
    let (repo, _bare) = project();
    let forge = FakeForge::start();
    let no_go = || {
        vec![
            call(
                1,
                "write_file",
                json!({"path": "notes.txt", "content": "cannot fix\n"}),
            ),
            call(
                2,
                "submit",
                json!({"verdict": "NO-GO", "summary": "unclear"}),
            ),
        ]
    };
    let (endpoint, _m) = model(no_go());
    let r = run(
        &repo,
        &endpoint,
        &forge,
        &["--prompt", "unclear task", "--open-pr"],
    );
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("no pull request: the run is no-go"),
        "{}",
        r.stderr
    );
    assert!(forge.seen().is_empty(), "{:?}", forge.seen());

    let (endpoint, _m) = model(no_go());
    let r = run(
        &repo,
        &endpoint,
        &forge,
        &["--prompt", "unclear task", "--fresh", "--open-pr=always"],
    );
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    let post = forge
        .seen()
        .into_iter()
        .find(|s| s.method == "POST")
        .unwrap_or_else(|| panic!("no draft opened: {}", r.stderr));
    assert_eq!(post.json["draft"], true);
    assert!(
        post.json["body"].as_str().unwrap().contains("no-go"),
        "{}",
        post.json
    );
}

const KEY_VAR: &str = "VOUCH_TEST_MODEL_KEY";
const KEY: &str = "sk-model-key-7d3b0e91";

/// Neither secret in a run's output, nor in anything under `dir`.
fn assert_no_secret(what: &str, run: &Run) {
    assert_no_token(run);
    for (name, text) in [("stdout", &run.stdout), ("stderr", &run.stderr)] {
        assert!(
            !text.contains(KEY),
            "{what}: the model key leaked into {name}:\n{text}"
        );
    }
}

#[test]
fn neither_the_forge_token_nor_the_model_key_appears_in_anything_run_pr_or_gate_writes() {
    let (repo, bare) = project();
    let forge = FakeForge::start();
    // The forge reflects the token into the issue, the model reflects its key into the summary.
    forge.state.lock().unwrap().issues.insert(
        5,
        json!({"number": 5, "title": "add() subtracts", "body": "add(2, 3) gives -1. You sent @AUTH@.",
               "labels": []}),
    );
    let mut answers = fixing();
    answers[2] = call(
        3,
        "submit",
        json!({"verdict": "GO", "summary": "add() adds now; the key was @KEY@"}),
    );
    let (endpoint, m) = model(answers);
    let key_env = [(KEY_VAR, KEY)];
    let r = run_env(
        &repo,
        &endpoint,
        &forge,
        &[
            "--issue",
            "o/r#5",
            "--open-pr",
            "--comment",
            "--api-key-env",
            KEY_VAR,
        ],
        &key_env,
    );
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert_no_secret("vouch run --open-pr", &r);
    let post = forge
        .seen()
        .into_iter()
        .find(|s| s.method == "POST" && s.path == "/repos/o/r/pulls")
        .unwrap_or_else(|| panic!("no pull request opened: {}", r.stderr));
    let body = post.json["body"].as_str().unwrap();
    assert!(
        body.contains("You sent Bearer <redacted>")
            && body.contains("the key was Bearer <redacted>"),
        "both secrets are replaced where they were: {body}"
    );
    let branch = post.json["head"].as_str().unwrap().to_string();
    let tasks = m.seen.lock().unwrap().clone();
    assert!(
        tasks.iter().all(|t| !t.to_string().contains(TOKEN)),
        "the token reached the model"
    );

    // vouch pr, against a forge that quotes the token in its error.
    forge.state.lock().unwrap().fail = Some((422, "Validation Failed for @AUTH@".into()));
    let dir = repo.dir.to_str().unwrap().to_string();
    let forge_flags = [
        "--forge",
        "github",
        "--forge-repo",
        "o/r",
        "--api-url",
        forge.url.as_str(),
    ];
    let mut args = vec![
        "-vv",
        "pr",
        "--branch",
        branch.as_str(),
        "--repo",
        dir.as_str(),
    ];
    args.extend(forge_flags);
    let env = [("GITHUB_TOKEN", TOKEN), ("GH_TOKEN", ""), (KEY_VAR, KEY)];
    let r = repo.vouch_env(&args, &env);
    assert_no_secret("vouch pr", &r);
    assert_eq!(r.code, 3, "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("Validation Failed for Bearer <redacted>"),
        "{}",
        r.stderr
    );
    forge.state.lock().unwrap().fail = None;

    // vouch gate --pr --post on the pull request the run opened.
    let head = git(&bare, &["rev-parse", &branch]);
    git(&bare, &["update-ref", "refs/pull/1/head", &head]);
    let main = git(&bare, &["rev-parse", "main"]);
    let clone = bare.to_str().unwrap();
    forge.state.lock().unwrap().pulls.insert(
        1,
        json!({"number": 1,
               "base": {"ref": "main", "sha": main, "repo": {"clone_url": clone}},
               "head": {"ref": branch, "sha": head, "repo": {"clone_url": clone}}}),
    );
    let json_out = repo.tmp.path().join("gate.json");
    let mut args = vec![
        "-vv",
        "gate",
        "--repo",
        dir.as_str(),
        "--json",
        json_out.to_str().unwrap(),
        "--pr",
        "o/r#1",
        "--post",
    ];
    args.extend(forge_flags);
    let r = repo.vouch_env(&args, &env);
    assert_no_secret("vouch gate --pr --post", &r);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("posted the report on #1"), "{}", r.stdout);

    for s in forge.seen() {
        let sent = format!("{} {}", s.path, s.json);
        assert!(
            !sent.contains(TOKEN) && !sent.contains(KEY),
            "a secret was sent to the forge: {sent}"
        );
    }
    assert_eq!(files_with_token(repo.tmp.path()), Vec::<PathBuf>::new());
    let with_key: Vec<PathBuf> = crate::util::snapshot_dir(repo.tmp.path())
        .into_iter()
        .filter(|(_, bytes)| String::from_utf8_lossy(bytes).contains(KEY))
        .map(|(p, _)| p)
        .collect();
    assert_eq!(with_key, Vec::<PathBuf>::new());
}
