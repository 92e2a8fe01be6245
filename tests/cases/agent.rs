//! `vouch run` end to end: the real binary, real git, real pytest and ruff, against a scripted model server
//! that replays one answer per request and fails the test on any unexpected or missing request, on a tool
//! result that does not pair with a call of the previous answer, and on history that was rewritten.

use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Router;
use pretty_assertions::assert_eq;
use serde_json::{json, Value};

use crate::util::model_server::calc::{self, CALC, FIXED, INERT_TEST, NEW_TEST, OLD_TEST};
use crate::util::{snapshot_dir, Repo, Run};

mod next_step;
mod rails;

// ---------------------------------------------------------------------------------------------------------
// The scripted model server.

/// One canned answer to `POST /v1/chat/completions`.
enum Answer {
    /// A 200 with this assistant message.
    Message(Value),
    /// An error status (the client retries 5xx).
    Status(u16),
    /// A 200 with this message, after a delay.
    Slow(std::time::Duration, Value),
    /// A 200 with this message, reporting this many prompt tokens.
    Tokens(u64, Value),
    /// A 503 to be retried at once: a server that went away (five in a row exhaust the client's retries).
    Dead,
}

#[derive(Clone, Default)]
struct Script {
    answers: Arc<Mutex<VecDeque<Answer>>>,
    /// Request bodies, with the answer each got (null for an error status).
    seen: Arc<Mutex<Vec<(Value, Value)>>>,
    problems: Arc<Mutex<Vec<String>>>,
}

struct Model {
    url: String,
    script: Script,
    task: tokio::task::JoinHandle<()>,
}

impl Model {
    async fn start(answers: Vec<Answer>) -> Model {
        let script = Script {
            answers: Arc::new(Mutex::new(answers.into())),
            ..Script::default()
        };
        let app = Router::new().fallback(answer).with_state(script.clone());
        let (url, task) = crate::util::serve(app).await;
        Model { url, script, task }
    }

    /// Every answer was used, nothing was unexpected; returns every chat request, failed ones too.
    fn finish_all(self) -> Vec<Value> {
        self.task.abort();
        let problems = self.script.problems.lock().unwrap().clone();
        assert!(problems.is_empty(), "model server problems: {problems:#?}");
        let left = self.script.answers.lock().unwrap().len();
        assert_eq!(left, 0, "{left} scripted answers were never asked for");
        let seen = self.script.seen.lock().unwrap();
        seen.iter().map(|(r, _)| r.clone()).collect()
    }

    /// Every answer was used, nothing was unexpected; returns the chat requests that got a 200.
    fn finish(self) -> Vec<Value> {
        self.task.abort();
        let problems = self.script.problems.lock().unwrap().clone();
        assert!(problems.is_empty(), "model server problems: {problems:#?}");
        let left = self.script.answers.lock().unwrap().len();
        assert_eq!(left, 0, "{left} scripted answers were never asked for");
        let seen = self.script.seen.lock().unwrap();
        seen.iter()
            .filter(|(_, a)| !a.is_null())
            .map(|(r, _)| r.clone())
            .collect()
    }
}

async fn answer(State(script): State<Script>, req: Request) -> Response {
    let method = req.method().to_string();
    let path = req.uri().path().to_string();
    let bytes = axum::body::to_bytes(req.into_body(), usize::MAX)
        .await
        .unwrap_or_default();
    if method == "GET" && path == "/props" {
        // Not llama-server: the client asks once and remembers.
        return (StatusCode::NOT_FOUND, "no props").into_response();
    }
    if method != "POST" || path != "/v1/chat/completions" {
        script
            .problems
            .lock()
            .unwrap()
            .push(format!("unexpected {method} {path}"));
        return (StatusCode::IM_A_TEAPOT, "unexpected").into_response();
    }
    let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    let previous = script
        .seen
        .lock()
        .unwrap()
        .iter()
        .rev()
        .find(|(_, a)| !a.is_null())
        .cloned();
    // A request the same as an earlier one is a restart from it: its messages are a prefix the server has
    // cached (the guided strategy goes back to its last step when the model repeats itself).
    let restart = script
        .seen
        .lock()
        .unwrap()
        .iter()
        .any(|(b, _)| b["messages"] == body["messages"]);
    // A new conversation: the first request's system prompt and one user message (the guided strategy
    // starts afresh when restarts do not stop the model repeating itself).
    let afresh = body["messages"].as_array().is_some_and(|m| {
        m.len() == 2
            && m[1]["role"] == "user"
            && script
                .seen
                .lock()
                .unwrap()
                .first()
                .is_some_and(|(b, _)| b["messages"][0] == m[0])
    });
    match check_history(&body, previous.as_ref()) {
        Err(problem) if !restart && !afresh => script.problems.lock().unwrap().push(problem),
        _ => {}
    }
    let next = script.answers.lock().unwrap().pop_front();
    match next {
        None => {
            script.problems.lock().unwrap().push(format!(
                "a request after the script ended; last message: {}",
                body["messages"]
                    .as_array()
                    .and_then(|m| m.last())
                    .cloned()
                    .unwrap_or_default()
            ));
            (StatusCode::IM_A_TEAPOT, "script ended").into_response()
        }
        Some(Answer::Status(code)) => {
            script.seen.lock().unwrap().push((body, Value::Null));
            Response::builder()
                .status(code)
                .header("content-type", "application/json")
                .body(Body::from(
                    json!({"error": {"message": "scripted failure"}}).to_string(),
                ))
                .unwrap()
        }
        Some(Answer::Dead) => {
            script.seen.lock().unwrap().push((body, Value::Null));
            Response::builder()
                .status(503)
                .header("retry-after", "0")
                .body(Body::from("gone"))
                .unwrap()
        }
        Some(Answer::Slow(delay, message)) => {
            script.seen.lock().unwrap().push((body, message.clone()));
            tokio::time::sleep(delay).await;
            Response::builder()
                .status(200)
                .header("content-type", "application/json")
                .body(Body::from(
                    json!({"choices": [{"index": 0, "message": message}]}).to_string(),
                ))
                .unwrap()
        }
        Some(Answer::Message(message)) => reply(&script, body, message, 100),
        Some(Answer::Tokens(prompt, message)) => reply(&script, body, message, prompt),
    }
}

/// A 200 with `message`, reporting `prompt` prompt tokens (80 of them cached).
fn reply(script: &Script, body: Value, message: Value, prompt: u64) -> Response {
    script.seen.lock().unwrap().push((body, message.clone()));
    let reply = json!({
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": 10,
                  "prompt_tokens_details": {"cached_tokens": 80}},
    });
    Response::builder()
        .status(200)
        .header("content-type", "application/json")
        .body(Body::from(reply.to_string()))
        .unwrap()
}

/// The request extends the previous one (nothing rewritten), its tool results pair one to one, in order,
/// with the calls of the assistant message before them, and that message carries the previous answer's calls.
fn check_history(body: &Value, previous: Option<&(Value, Value)>) -> Result<(), String> {
    let messages = body["messages"]
        .as_array()
        .ok_or("a request without messages")?;
    let mut expected: VecDeque<String> = VecDeque::new();
    for (i, m) in messages.iter().enumerate() {
        match m["role"].as_str() {
            Some("tool") => {
                let id = m["tool_call_id"].as_str().unwrap_or_default();
                match expected.pop_front() {
                    Some(want) if want == id => {}
                    other => {
                        return Err(format!(
                            "message {i}: tool result {id} does not pair with a call (expected {other:?})"
                        ))
                    }
                }
            }
            role => {
                if !expected.is_empty() {
                    return Err(format!(
                        "message {i} ({role:?}) comes before the results of calls {expected:?}"
                    ));
                }
                if role == Some("assistant") {
                    expected = m["tool_calls"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(|c| c["id"].as_str().unwrap_or_default().to_string())
                        .collect();
                }
            }
        }
    }
    if !expected.is_empty() {
        return Err(format!("calls {expected:?} have no results"));
    }
    if let Some((prev_body, prev_answer)) = previous {
        let prev = prev_body["messages"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        // The one rewrite allowed: an old tool output replaced by vouch's placeholder.
        let same = |(new, old): (&Value, &Value)| {
            new == old
                || (new["role"] == "tool"
                    && new["tool_call_id"] == old["tool_call_id"]
                    && new["content"]
                        .as_str()
                        .is_some_and(|c| c.starts_with("[output of ") && c.contains(" elided ")))
        };
        // The other: an empty answer is asked for again with the same messages.
        let empty = prev_answer["content"]
            .as_str()
            .unwrap_or_default()
            .trim()
            .is_empty()
            && prev_answer["tool_calls"]
                .as_array()
                .is_none_or(|c| c.is_empty());
        if empty && messages[..] == prev[..] {
            return Ok(());
        }
        if messages.len() <= prev.len() || !messages.iter().zip(prev.iter()).all(same) {
            return Err(
                "the history was rewritten: the request does not extend the previous one".into(),
            );
        }
        let assistant = &messages[prev.len()];
        if assistant["role"] != "assistant" {
            return Err(format!(
                "the previous answer is not next in the history: {assistant}"
            ));
        }
        let ids = |v: &Value| -> Vec<String> {
            v["tool_calls"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|c| c["id"].as_str().unwrap_or_default().to_string())
                .collect()
        };
        // Every call in the history is one the previous answer made (a call to a tool that was not offered
        // is dropped by the client, and then has no result either).
        let native = ids(prev_answer);
        let kept = ids(assistant);
        if !native.is_empty() && kept.iter().any(|id| !native.contains(id)) {
            return Err(format!(
                "the calls {kept:?} in the history are not the previous answer's {native:?}"
            ));
        }
    }
    Ok(())
}

/// An answer with native tool calls `(name, arguments)`, ids `call_<n>_<i>`.
fn calls(n: usize, list: &[(&str, Value)]) -> Answer {
    Answer::Message(crate::util::model_server::tool_calls(n, list))
}

fn call(n: usize, name: &str, args: Value) -> Answer {
    calls(n, &[(name, args)])
}

fn text(content: &str) -> Answer {
    Answer::Message(json!({"role": "assistant", "content": content}))
}

// ---------------------------------------------------------------------------------------------------------
// The fixture: a Python project whose add() subtracts.

/// [`calc::fix_with`] as this server's answers.
fn fix_with(path: &str, test: &str) -> Vec<Answer> {
    calc::fix_with(path, test)
        .into_iter()
        .map(Answer::Message)
        .collect()
}

fn calc_repo() -> Repo {
    let repo = Repo::with_files(&[
        (
            "pyproject.toml",
            "[project]\nname = \"calc\"\nversion = \"0.1.0\"\n",
        ),
        ("calc.py", CALC),
        ("test_calc.py", OLD_TEST),
    ]);
    repo.git(&["branch", "feature"]);
    repo
}

/// The user's repository as the tests compare it: every file under the checkout and `.git`, minus what a
/// run may add (the new branch, its reflog, the worktree registration and new objects).
fn user_state(repo: &Repo) -> BTreeMap<PathBuf, Vec<u8>> {
    snapshot_dir(&repo.dir)
}

fn assert_untouched(repo: &Repo, before: &BTreeMap<PathBuf, Vec<u8>>) {
    let after = user_state(repo);
    for (path, bytes) in before {
        match after.get(path) {
            Some(now) => assert!(now == bytes, "{} changed", path.display()),
            None => panic!("{} was removed", path.display()),
        }
    }
    let git = repo.dir.join(".git");
    let allowed = [
        git.join("objects"),
        git.join("worktrees"),
        git.join("refs/heads/vouch"),
        git.join("logs/refs/heads/vouch"),
    ];
    for path in after.keys().filter(|p| !before.contains_key(*p)) {
        assert!(
            allowed.iter().any(|a| path.starts_with(a)),
            "{} is new in the user's repository",
            path.display()
        );
    }
}

/// Runs `vouch run` against the scripted model, off the async runtime that serves it.
async fn vouch_run(repo: &Repo, model: &Model, args: &[&str]) -> Run {
    vouch_run_env(repo, model, args, &[]).await
}

/// [`vouch_run`] with extra environment variables for vouch.
async fn vouch_run_env(repo: &Repo, model: &Model, args: &[&str], env: &[(&str, &str)]) -> Run {
    let env: Vec<(String, String)> = env
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let mut full: Vec<String> = vec![
        "run".into(),
        "--repo".into(),
        repo.dir.to_string_lossy().into_owned(),
        "--endpoint".into(),
        model.url.clone(),
        "--author".into(),
        "Agent <agent@example.com>".into(),
    ];
    full.extend(args.iter().map(|s| s.to_string()));
    let tmp = repo.tmp.path().to_path_buf();
    let cache = repo.cache.clone();
    let data = repo.data();
    tokio::task::spawn_blocking(move || {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_vouch"))
            .args(&full)
            .current_dir(&tmp)
            .env("VOUCH_CACHE", &cache)
            .env("VOUCH_DATA", &data)
            .env("XDG_CONFIG_HOME", tmp.join("config"))
            .env_remove("RUST_LOG")
            .env_remove("VOUCH_ENDPOINT")
            .env_remove("VOUCH_MODEL")
            .env_remove("VOUCH_API_KEY_ENV")
            .envs(crate::util::git_env())
            .envs(env)
            .output()
            .unwrap();
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    })
    .await
    .unwrap()
}

/// The one directory `<data>/<kind>/<repo-key>/<id>` (a test has one repository).
fn keyed(repo: &Repo, kind: &str, id: &str) -> PathBuf {
    let root = repo.data().join(kind);
    let keys: Vec<PathBuf> = std::fs::read_dir(&root)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(keys.len() <= 1, "more than one repository key: {keys:?}");
    keys.into_iter()
        .next()
        .unwrap_or_else(|| root.join("none"))
        .join(id)
}

fn workspace(repo: &Repo, id: &str) -> PathBuf {
    keyed(repo, "workspaces", id)
}

/// The run's records, outside the worktree.
fn records(repo: &Repo, id: &str) -> PathBuf {
    keyed(repo, "runs", id)
}

fn report(repo: &Repo, id: &str) -> Value {
    let path = records(repo, id).join("report.json");
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

fn transcript(repo: &Repo, id: &str) -> Vec<Value> {
    std::fs::read_to_string(records(repo, id).join("transcript.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The tool results of a request, after its last assistant message: `(name, content)`.
fn tool_results(request: &Value) -> Vec<(String, String)> {
    let messages = request["messages"].as_array().unwrap();
    let last = messages
        .iter()
        .rposition(|m| m["role"] == "assistant")
        .unwrap();
    messages[last + 1..]
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            (
                m["name"].as_str().unwrap_or_default().to_string(),
                m["content"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

fn last_user(request: &Value) -> String {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_string()
}

fn explain(run: &Run) -> String {
    format!("exit {}\nstderr:\n{}", run.code, run.stderr)
}

// ---------------------------------------------------------------------------------------------------------
// The cases.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fix_with_a_biting_test_is_committed_on_its_branch_and_verified() {
    let repo = calc_repo();
    let before = user_state(&repo);
    let refs_before = repo.git(&["for-each-ref", "--format=%(refname) %(objectname)"]);
    let model = Model::start(vec![
        call(1, "read_file", json!({"path": "calc.py"})),
        call(
            2,
            "edit",
            json!({"path": "calc.py", "old_string": "return a - b\n\n\ndef sub", "new_string": "return a + b\n\n\ndef sub"}),
        ),
        call(3, "write_file", json!({"path": "test_add.py", "content": NEW_TEST})),
        call(4, "run_tests", json!({})),
        call(
            5,
            "submit",
            json!({"verdict": "GO", "summary": "add() added with a minus; it adds now."}),
        ),
    ])
    .await;
    let json_out = repo.tmp.path().join("out/run.json");
    let run = vouch_run(
        &repo,
        &model,
        &[
            "--prompt",
            "add() subtracts",
            "--json",
            json_out.to_str().unwrap(),
        ],
    )
    .await;
    let requests = model.finish();
    assert_eq!(run.code, 0, "{}", explain(&run));
    assert_eq!(requests.len(), 5);

    // The tool results the model saw.
    assert!(tool_results(&requests[1])[0].1.contains("return a - b"));
    let tests = &tool_results(&requests[4])[0].1;
    assert!(tests.contains("Tests passed"), "{tests}");
    // The system prompt is byte-stable: no paths, no dates.
    let system = requests[0]["messages"][0]["content"].as_str().unwrap();
    assert!(!system.contains(repo.tmp.path().to_str().unwrap()));
    assert_eq!(requests[0]["messages"][1]["role"], "user");

    let r = report(&repo, "add-subtracts");
    let want = json!({
        "status": "verified",
        "stop_reason": "submitted",
        "claimed": "GO",
        "branch": "vouch/add-subtracts",
        "turns": 5,
        "tokens": {"prompt": 500, "cached": 400, "completion": 50},
        "gate_verdict": "pass",
        "bite": "bites",
    });
    let got = json!({
        "status": r["status"],
        "stop_reason": r["stop_reason"],
        "claimed": r["claimed"],
        "branch": r["branch"],
        "turns": r["turns"],
        "tokens": r["tokens"],
        "gate_verdict": r["gate"]["verdict"],
        "bite": r["gate"]["bite"]["status"],
    });
    assert_eq!(got, want);
    let extra: Value = serde_json::from_str(&std::fs::read_to_string(&json_out).unwrap()).unwrap();
    assert_eq!(extra, r);
    assert!(records(&repo, "add-subtracts").join("report.md").is_file());
    // The records are outside the worktree, and the worktree holds no `.vouch/`.
    assert!(!workspace(&repo, "add-subtracts").join(".vouch").exists());
    assert_eq!(
        r["records"],
        records(&repo, "add-subtracts").display().to_string()
    );

    // One commit on the branch, with the fix, the new test and the trailer, and none of vouch's records.
    let base = repo.git(&["rev-parse", "main"]);
    assert_eq!(
        repo.git(&[
            "rev-list",
            "--count",
            &format!("{base}..vouch/add-subtracts")
        ]),
        "1"
    );
    assert_eq!(
        repo.git(&[
            "diff",
            "--name-only",
            &format!("{base}..vouch/add-subtracts")
        ]),
        "calc.py\ntest_add.py"
    );
    assert_eq!(
        repo.git(&["show", "vouch/add-subtracts:calc.py"]),
        FIXED.trim()
    );
    let message = repo.git(&["log", "-1", "--format=%B", "vouch/add-subtracts"]);
    assert!(message.contains("Agent-Verdict: GO"), "{message}");
    assert_eq!(
        repo.git(&["log", "-1", "--format=%an <%ae>", "vouch/add-subtracts"]),
        "Agent <agent@example.com>"
    );
    assert_eq!(r["commit"], repo.git(&["rev-parse", "vouch/add-subtracts"]));

    // The transcript has every event.
    let events = transcript(&repo, "add-subtracts");
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(kinds.iter().filter(|k| **k == "request").count(), 5);
    assert_eq!(kinds.iter().filter(|k| **k == "tool").count(), 5);
    assert!(kinds.contains(&"gate") && kinds.contains(&"commit"));
    let response = events.iter().find(|e| e["event"] == "response").unwrap();
    assert_eq!(response["usage"]["cached"], 80);
    assert_eq!(response["mode"], "native");
    assert!(run.stderr.contains("turn 1/50"), "{}", run.stderr);
    assert!(
        run.stderr.contains("claimed: GO; gate: pass"),
        "{}",
        run.stderr
    );

    // The user's checkout: untouched but for the new branch and the worktree registration.
    assert_untouched(&repo, &before);
    let refs_after = repo.git(&["for-each-ref", "--format=%(refname) %(objectname)"]);
    let new_branch = format!(
        "refs/heads/vouch/add-subtracts {}",
        repo.git(&["rev-parse", "vouch/add-subtracts"])
    );
    let mut want: Vec<&str> = refs_before.lines().collect();
    want.push(&new_branch);
    want.sort();
    let mut got: Vec<&str> = refs_after.lines().collect();
    got.sort();
    assert_eq!(got, want);
    assert_eq!(repo.git(&["status", "--porcelain"]), "");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_test_that_does_not_bite_goes_back_for_repair_and_is_rejected_when_resubmitted_unchanged()
{
    let repo = calc_repo();
    let before = user_state(&repo);
    let mut answers = fix_with("test_add.py", INERT_TEST);
    answers.push(call(
        4,
        "submit",
        json!({"verdict": "GO", "summary": "fixed, really"}),
    ));
    let model = Model::start(answers).await;
    let run = vouch_run(
        &repo,
        &model,
        &["--prompt", "add subtracts", "--repair-cycles", "1"],
    )
    .await;
    let requests = model.finish();
    assert_eq!(run.code, 1, "{}", explain(&run));
    assert_eq!(requests.len(), 4);
    let repair = last_user(&requests[3]);
    assert!(repair.contains("The gate rejected your change"), "{repair}");
    assert!(repair.contains("no-bite"), "{repair}");
    assert!(repair.contains("Bite check: no-bite"), "{repair}");
    assert!(
        repair.contains("test_add.py::test_add_zero: inert"),
        "{repair}"
    );
    assert_eq!(tool_results(&requests[3])[0].0, "submit");
    let r = report(&repo, "add-subtracts");
    assert_eq!(
        json!([
            r["status"],
            r["stop_reason"],
            r["claimed"],
            r["gate"]["verdict"],
            r["repairs"]
        ]),
        json!(["rejected", "submitted", "GO", "fail", 1])
    );
    assert!(
        run.stderr.contains("claimed: GO; gate: fail"),
        "{}",
        run.stderr
    );
    assert_untouched(&repo, &before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_leaked_as_laguna_text_is_recovered_and_run() {
    let repo = calc_repo();
    let before = user_state(&repo);
    let model = Model::start(vec![
        text(
            "<tool_call>read_file<arg_key>path</arg_key><arg_value>calc.py</arg_value></tool_call>",
        ),
        call(
            2,
            "submit",
            json!({"verdict": "NO-GO", "summary": "not sure"}),
        ),
    ])
    .await;
    let run = vouch_run(&repo, &model, &["--prompt", "look at add"]).await;
    let requests = model.finish();
    assert_eq!(run.code, 1, "{}", explain(&run));
    let results = tool_results(&requests[1]);
    assert_eq!(results.len(), 1);
    assert_eq!(results[0].0, "read_file");
    assert!(results[0].1.contains("def add(a, b):"), "{results:?}");
    let r = report(&repo, "look-at-add");
    assert_eq!(
        json!([r["status"], r["stop_reason"], r["claimed"], r["gate"]]),
        json!(["no-go", "submitted", "NO-GO", null])
    );
    let events = transcript(&repo, "look-at-add");
    let first = events.iter().find(|e| e["event"] == "response").unwrap();
    assert_eq!(first["recovered"], true);
    assert_untouched(&repo, &before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paths_that_escape_the_worktree_are_refused_and_nothing_is_written_outside() {
    let repo = calc_repo();
    let outside = repo.tmp.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, repo.dir.join("link")).unwrap();
    repo.commit("a link out");
    let before = user_state(&repo);
    let abs = repo.tmp.path().join("abs.txt");
    let model = Model::start(vec![
        calls(
            1,
            &[
                ("write_file", json!({"path": "../escape.txt", "content": "x"})),
                ("write_file", json!({"path": abs.to_str().unwrap(), "content": "x"})),
                ("write_file", json!({"path": "link/evil.txt", "content": "x"})),
                ("edit", json!({"path": "../../repo/calc.py", "old_string": "a - b", "new_string": "a + b"})),
            ],
        ),
        call(2, "submit", json!({"verdict": "NO-GO", "summary": "cannot"})),
    ])
    .await;
    let run = vouch_run(&repo, &model, &["--prompt", "escape"]).await;
    let requests = model.finish();
    assert_eq!(run.code, 1, "{}", explain(&run));
    let results = tool_results(&requests[1]);
    assert_eq!(results.len(), 4);
    let events = transcript(&repo, "escape");
    let oks: Vec<Value> = events
        .iter()
        .filter(|e| e["event"] == "tool")
        .map(|e| e["ok"].clone())
        .collect();
    assert_eq!(oks, [false, false, false, false, true].map(Value::from));
    assert!(
        results[0].1.contains("..") || results[0].1.contains("outside"),
        "{results:?}"
    );
    assert!(
        results[2].1.contains("outside the workspace"),
        "{results:?}"
    );
    assert!(!workspace(&repo, "escape")
        .parent()
        .unwrap()
        .join("escape.txt")
        .exists());
    assert!(!repo.tmp.path().join("escape.txt").exists());
    assert!(!abs.exists());
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
    assert_eq!(
        std::fs::read_to_string(repo.dir.join("calc.py")).unwrap(),
        CALC
    );
    assert_untouched(&repo, &before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_error_is_retried_and_an_existing_workspace_needs_fresh() {
    let repo = calc_repo();
    let before = user_state(&repo);
    let model = Model::start(vec![
        Answer::Status(500),
        call(1, "submit", json!({"verdict": "NO-GO", "summary": "no"})),
    ])
    .await;
    let run = vouch_run(&repo, &model, &["--prompt", "retry"]).await;
    let requests = model.finish();
    assert_eq!(run.code, 1, "{}", explain(&run));
    assert_eq!(requests.len(), 1);
    assert_eq!(report(&repo, "retry")["status"], "no-go");

    // Again without --fresh: refused before any request, the run's records kept.
    let model = Model::start(vec![]).await;
    let again = vouch_run(&repo, &model, &["--prompt", "retry"]).await;
    model.finish();
    assert_eq!(again.code, 2, "{}", explain(&again));
    assert!(again.stderr.contains("--fresh"), "{}", again.stderr);
    assert!(again.stderr.contains("resum"), "{}", again.stderr);
    assert_eq!(report(&repo, "retry")["status"], "no-go");

    // With --fresh: a new worktree and branch from base.
    let model = Model::start(vec![call(
        1,
        "submit",
        json!({"verdict": "NO-GO", "summary": "still no"}),
    )])
    .await;
    let fresh = vouch_run(&repo, &model, &["--prompt", "retry", "--fresh"]).await;
    model.finish();
    assert_eq!(fresh.code, 1, "{}", explain(&fresh));
    assert_eq!(report(&repo, "retry")["summary"], "still no");
    assert_untouched(&repo, &before);
}

#[test]
fn a_model_error_is_exit_3_with_a_report() {
    let repo = calc_repo();
    let run = repo.vouch(&[
        "run",
        "--repo",
        repo.dir.to_str().unwrap(),
        "--prompt",
        "unreachable",
        "--endpoint",
        "http://127.0.0.1:9",
    ]);
    assert_eq!(run.code, 3, "{}", explain(&run));
    let r = report(&repo, "unreachable");
    assert_eq!(
        json!([r["status"], r["stop_reason"]]),
        json!(["error", "model-error"])
    );
}

#[test]
fn run_help_documents_every_flag_the_examples_and_the_exit_codes() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_vouch"))
        .args(["run", "--help"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let lines: Vec<&str> = text.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        let t = line.trim_start();
        if t.starts_with("--")
            || (t.starts_with('-') && t.chars().nth(1).is_some_and(|c| c.is_ascii_alphabetic()))
        {
            let has_text = t.split("  ").filter(|p| !p.trim().is_empty()).count() >= 2;
            let next = lines.get(i + 1).copied().unwrap_or("");
            assert!(
                has_text || next.starts_with("          "),
                "flag without help: {line}"
            );
        }
    }
    for flag in [
        "--task",
        "--prompt",
        "--repo",
        "--base",
        "--endpoint",
        "--model",
        "--max-turns",
        "--profile",
        "--json",
        "--fresh",
        "--resume",
        "--api-key-env",
        "--tool-mode",
        "--repair-cycles",
        "--wall-time",
        "--token-budget",
        "--author",
    ] {
        assert!(text.contains(flag), "{flag} missing:\n{text}");
    }
    for env in ["VOUCH_ENDPOINT", "VOUCH_MODEL", "VOUCH_API_KEY_ENV"] {
        assert!(text.contains(env), "{env} missing:\n{text}");
    }
    assert!(text.contains("Examples:"), "{text}");
    assert!(
        text.contains("Exit codes: 0 verified, 1 rejected, no-go or incomplete, 2 usage error"),
        "{text}"
    );
}

#[test]
fn run_needs_a_task_or_a_prompt_and_a_bad_task_file_is_a_usage_error() {
    let repo = calc_repo();
    let run = repo.vouch(&["run", "--repo", repo.dir.to_str().unwrap()]);
    assert_eq!(run.code, 2, "{}", explain(&run));
    repo.write("../bad.md", "---\ntitel: typo\n---\nbody\n");
    let bad = repo.tmp.path().join("bad.md");
    let run = repo.vouch(&[
        "run",
        "--repo",
        repo.dir.to_str().unwrap(),
        "--task",
        bad.to_str().unwrap(),
    ]);
    assert_eq!(run.code, 2, "{}", explain(&run));
    assert!(
        run.stderr.contains("unknown field `titel`"),
        "{}",
        run.stderr
    );
}

#[test]
fn issue_is_checked_for_form_and_needs_a_forge() {
    let repo = calc_repo();
    let dir = repo.dir.to_str().unwrap();
    // No remote and no --forge: which forge serves the issue is unknown (fetching it: cases::forge_run).
    let run = repo.vouch(&["run", "--repo", dir, "--issue", "acme/calc#12"]);
    assert_eq!(run.code, 2, "{}", explain(&run));
    assert!(
        run.stderr.contains("cannot tell the forge") && run.stderr.contains("--forge"),
        "{}",
        run.stderr
    );
    let run = repo.vouch(&["run", "--repo", dir, "--issue", "calc-12"]);
    assert_eq!(run.code, 2, "{}", explain(&run));
    assert!(run.stderr.contains("OWNER/REPO#N"), "{}", run.stderr);
    let run = repo.vouch(&[
        "run",
        "--repo",
        dir,
        "--issue",
        "acme/calc#12",
        "--prompt",
        "x",
    ]);
    assert_eq!(run.code, 2, "{}", explain(&run));
}

fn offered_tools(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t.pointer("/function/name").and_then(Value::as_str))
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shell_is_offered_only_with_allow_shell() {
    let repo = calc_repo();
    let model = Model::start(vec![call(
        1,
        "submit",
        json!({"verdict": "NO-GO", "summary": "no"}),
    )])
    .await;
    let run = vouch_run(&repo, &model, &["--prompt", "no shell"]).await;
    let requests = model.finish();
    assert_eq!(run.code, 1, "{}", explain(&run));
    let tools = offered_tools(&requests[0]);
    assert!(tools.contains(&"edit".to_string()), "{tools:?}");
    assert!(!tools.contains(&"shell".to_string()), "{tools:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_shell_runs_in_the_worktree_without_secrets_and_is_killed_on_timeout() {
    let repo = calc_repo();
    let before = user_state(&repo);
    let model = Model::start(vec![
        call(
            1,
            "shell",
            json!({"command": "echo token=$MY_API_TOKEN; echo key=$LLM_SERVER; pwd; sleep 30"}),
        ),
        call(2, "submit", json!({"verdict": "NO-GO", "summary": "no"})),
    ])
    .await;
    let started = std::time::Instant::now();
    let run = vouch_run_env(
        &repo,
        &model,
        &[
            "--prompt",
            "shell",
            "--allow-shell",
            "--shell-timeout",
            "2s",
            "--api-key-env",
            "LLM_SERVER",
        ],
        &[
            ("MY_API_TOKEN", "s3cr3t-value"),
            ("LLM_SERVER", "k3y-value"),
        ],
    )
    .await;
    let requests = model.finish();
    assert_eq!(run.code, 1, "{}", explain(&run));
    assert!(started.elapsed() < std::time::Duration::from_secs(25));
    assert!(offered_tools(&requests[0]).contains(&"shell".to_string()));
    let results = tool_results(&requests[1]);
    let out = &results[0].1;
    assert!(out.contains("token=\n"), "{out}");
    assert!(!out.contains("s3cr3t-value"), "{out}");
    assert!(!out.contains("k3y-value"), "{out}");
    let wt = workspace(&repo, "shell").canonicalize().unwrap();
    assert!(out.contains(wt.to_str().unwrap()), "{out}");
    assert!(out.contains("timed out after 2s"), "{out}");
    assert_untouched(&repo, &before);
}

fn slow(secs: u64, answer: Answer) -> Answer {
    match answer {
        Answer::Message(m) => Answer::Slow(std::time::Duration::from_secs(secs), m),
        other => other,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_wall_time_budget_cuts_a_slow_turn_short() {
    let repo = calc_repo();
    let model = Model::start(vec![slow(20, call(1, "list_files", json!({})))]).await;
    let started = std::time::Instant::now();
    let run = vouch_run(&repo, &model, &["--prompt", "slow", "--wall-time", "1s"]).await;
    model.finish();
    assert!(started.elapsed() < std::time::Duration::from_secs(15));
    assert_eq!(run.code, 1, "{}", explain(&run));
    let r = report(&repo, "slow");
    assert_eq!(
        json!([r["status"], r["stop_reason"]]),
        json!(["incomplete", "wall-time"])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_stops_the_run_with_a_report_and_exit_130() {
    let repo = calc_repo();
    let before = user_state(&repo);
    let model = Model::start(vec![slow(20, call(1, "list_files", json!({})))]).await;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_vouch"))
        .args([
            "run",
            "--repo",
            repo.dir.to_str().unwrap(),
            "--prompt",
            "interrupt",
            "--endpoint",
            &model.url,
        ])
        .current_dir(repo.tmp.path())
        .env("VOUCH_CACHE", &repo.cache)
        .env("VOUCH_DATA", repo.data())
        .envs(crate::util::git_env())
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(repo.tmp.path().join("stderr.log")).unwrap())
        .spawn()
        .unwrap();
    // Wait for the request to arrive, then interrupt.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    while model.script.seen.lock().unwrap().is_empty() {
        assert!(std::time::Instant::now() < deadline, "no request came");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let status = tokio::task::spawn_blocking(move || child.wait().unwrap())
        .await
        .unwrap();
    model.finish();
    let stderr = std::fs::read_to_string(repo.tmp.path().join("stderr.log")).unwrap_or_default();
    assert_eq!(status.code(), Some(130), "{stderr}");
    let r = report(&repo, "interrupt");
    assert_eq!(
        json!([r["status"], r["stop_reason"]]),
        json!(["incomplete", "cancelled"])
    );
    assert_untouched(&repo, &before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_whose_server_died_is_resumed_with_the_same_conversation_and_verified() {
    let repo = calc_repo();
    let before = user_state(&repo);
    repo.write(
        "../resume-me.md",
        "---\ntitle: add() subtracts\n---\nadd(2, 3) is -1.\n",
    );
    let task = repo.tmp.path().join("resume-me.md");
    let task = task.to_str().unwrap();
    let mut answers = vec![
        call(1, "read_file", json!({"path": "calc.py"})),
        call(
            2,
            "edit",
            json!({"path": "calc.py", "old_string": "return a - b\n\n\ndef sub", "new_string": "return a + b\n\n\ndef sub"}),
        ),
    ];
    answers.extend((0..5).map(|_| Answer::Dead));
    let model = Model::start(answers).await;
    let run = vouch_run(&repo, &model, &["--task", task]).await;
    let first = model.finish_all();
    assert_eq!(run.code, 3, "{}", explain(&run));
    let r = report(&repo, "resume-me");
    assert_eq!(
        json!([r["status"], r["stop_reason"]]),
        json!(["error", "model-error"])
    );
    let ws = workspace(&repo, "resume-me");
    assert_eq!(std::fs::read_to_string(ws.join("calc.py")).unwrap(), FIXED);
    let died = first.last().unwrap().clone();

    // --resume and --fresh do not go together.
    let model = Model::start(vec![]).await;
    let both = vouch_run(&repo, &model, &["--task", task, "--resume", "--fresh"]).await;
    model.finish();
    assert_eq!(both.code, 2, "{}", explain(&both));

    // A new server: the run goes on from the conversation as it was sent, and finishes.
    let model = Model::start(vec![
        call(
            3,
            "write_file",
            json!({"path": "test_add.py", "content": NEW_TEST}),
        ),
        call(
            4,
            "submit",
            json!({"verdict": "GO", "summary": "add() adds now."}),
        ),
    ])
    .await;
    let resumed = vouch_run(&repo, &model, &["--task", task, "--resume"]).await;
    let requests = model.finish();
    assert_eq!(resumed.code, 0, "{}", explain(&resumed));
    assert_eq!(requests.len(), 2);
    // Nothing rewritten, nothing added: the server's prompt cache holds the whole prefix.
    assert_eq!(requests[0]["messages"], died["messages"]);
    let sent = died["messages"].as_array().unwrap();
    let next = requests[1]["messages"].as_array().unwrap();
    assert_eq!(&next[..sent.len()], &sent[..]);
    let r = report(&repo, "resume-me");
    assert_eq!(
        json!([
            r["status"],
            r["turns"],
            r["tokens"]["prompt"],
            r["gate"]["verdict"]
        ]),
        json!(["verified", 4, 400, "pass"])
    );
    assert_eq!(repo.git(&["show", "vouch/resume-me:calc.py"]), FIXED.trim());
    let events = transcript(&repo, "resume-me");
    assert_eq!(events.iter().filter(|e| e["event"] == "resume").count(), 1);

    // A finished run is not resumed.
    let model = Model::start(vec![]).await;
    let again = vouch_run(&repo, &model, &["--task", task, "--resume"]).await;
    model.finish();
    assert_eq!(again.code, 2, "{}", explain(&again));
    assert!(
        again.stderr.contains("finished (verified)"),
        "{}",
        again.stderr
    );
    assert_untouched(&repo, &before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_resumed_after_a_failed_gate_reports_the_whole_gate_report() {
    let repo = calc_repo();
    repo.write(
        "../resume-gate.md",
        "---\ntitle: add() subtracts\n---\nadd(2, 3) is -1.\n",
    );
    let task = repo.tmp.path().join("resume-gate.md");
    let task = task.to_str().unwrap();
    let mut answers = fix_with("test_add.py", INERT_TEST);
    // The repair message goes out, and the server is gone.
    answers.extend((0..5).map(|_| Answer::Dead));
    let model = Model::start(answers).await;
    let run = vouch_run(&repo, &model, &["--task", task]).await;
    model.finish_all();
    assert_eq!(run.code, 3, "{}", explain(&run));
    let first = report(&repo, "resume-gate");
    assert_eq!(
        json!([first["status"], first["gate"]["verdict"], first["repairs"]]),
        json!(["error", "fail", 1])
    );

    let model = Model::start(vec![call(
        4,
        "submit",
        json!({"verdict": "NO-GO", "summary": "cannot make it bite"}),
    )])
    .await;
    let resumed = vouch_run(&repo, &model, &["--task", task, "--resume"]).await;
    model.finish();
    assert_eq!(resumed.code, 1, "{}", explain(&resumed));
    let r = report(&repo, "resume-gate");
    // The same shape as before the resume: the gate's own report, not a transcript event.
    assert_eq!(
        json!([
            r["status"],
            r["repairs"],
            r["gate"]["verdict"],
            r["gate"]["bite"]["status"],
            r["gate"].get("event"),
        ]),
        json!(["no-go", 1, "fail", "no-bite", null])
    );
    assert!(
        r["gate"]["steps"].as_array().is_some_and(|s| !s.is_empty()),
        "{r:#}"
    );
    assert_eq!(r["gate"], first["gate"]);
}

#[test]
fn resume_without_a_workspace_is_a_usage_error() {
    let repo = calc_repo();
    let run = repo.vouch(&[
        "run",
        "--repo",
        repo.dir.to_str().unwrap(),
        "--prompt",
        "never ran",
        "--resume",
        "--endpoint",
        "http://127.0.0.1:9",
    ]);
    assert_eq!(run.code, 2, "{}", explain(&run));
    assert!(run.stderr.contains("no workspace"), "{}", run.stderr);
}

/// A run that fixes add() with a biting test and is verified, as task `id`.
async fn verified_run(repo: &Repo, id: &str) {
    verified_run_with(repo, id, &[]).await;
}

async fn verified_run_with(repo: &Repo, id: &str, args: &[&str]) {
    let model = Model::start(fix_with("test_add.py", NEW_TEST)).await;
    let mut full = vec!["--prompt", id];
    full.extend_from_slice(args);
    let run = vouch_run(repo, &model, &full).await;
    model.finish();
    assert_eq!(run.code, 0, "{}", explain(&run));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signoff_adds_a_signed_off_by_trailer_with_the_author() {
    let repo = calc_repo();
    verified_run_with(&repo, "signed", &["--signoff"]).await;
    let message = repo.git(&["log", "-1", "--format=%B", "vouch/signed"]);
    assert!(
        message.contains("Agent-Verdict: GO\nSigned-off-by: Agent <agent@example.com>"),
        "{message}"
    );
    // From vouch.toml too; without either there is no trailer.
    repo.write("vouch.toml", "signoff = true\n");
    verified_run(&repo, "signed-by-file").await;
    let message = repo.git(&["log", "-1", "--format=%B", "vouch/signed-by-file"]);
    assert!(
        message.contains("Signed-off-by: Agent <agent@example.com>"),
        "{message}"
    );
    std::fs::remove_file(repo.dir.join("vouch.toml")).unwrap();
    verified_run(&repo, "unsigned").await;
    let message = repo.git(&["log", "-1", "--format=%B", "vouch/unsigned"]);
    assert!(!message.contains("Signed-off-by"), "{message}");
}

/// One run that stops after its only turn; returns the model name the request carried and the report.
async fn one_turn_model(
    repo: &Repo,
    id: &str,
    args: &[&str],
    env: &[(&str, &str)],
) -> (String, Value) {
    let model = Model::start(vec![call(1, "list_files", json!({}))]).await;
    let mut full = vec!["--prompt", id];
    full.extend_from_slice(args);
    let run = vouch_run_env(repo, &model, &full, env).await;
    let requests = model.finish();
    assert_eq!(run.code, 1, "{}", explain(&run));
    let name = requests[0]["model"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    (name, report(repo, id))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vouch_toml_sits_below_the_environment_and_the_flags() {
    let repo = calc_repo();
    repo.write("vouch.toml", "max_turns = 1\nmodel = \"from-file\"\n");
    let (model, r) = one_turn_model(&repo, "file", &[], &[]).await;
    assert_eq!(model, "from-file");
    assert_eq!(
        json!([r["max_turns"], r["stop_reason"]]),
        json!([1, "max-turns"])
    );
    let (model, _) = one_turn_model(&repo, "env", &[], &[("VOUCH_MODEL", "from-env")]).await;
    assert_eq!(model, "from-env");
    let (model, _) = one_turn_model(
        &repo,
        "flag",
        &["--model", "from-flag"],
        &[("VOUCH_MODEL", "from-env")],
    )
    .await;
    assert_eq!(model, "from-flag");
    // The user's file is below the repository's.
    let user = repo.tmp.path().join("config/vouch/vouch.toml");
    std::fs::create_dir_all(user.parent().unwrap()).unwrap();
    std::fs::write(&user, "model = \"from-user\"\nstall_turns = 9\n").unwrap();
    let (model, _) = one_turn_model(&repo, "user", &[], &[]).await;
    assert_eq!(model, "from-file");
    std::fs::remove_file(repo.dir.join("vouch.toml")).unwrap();
    let model_server = Model::start(vec![call(1, "list_files", json!({}))]).await;
    let run = vouch_run(
        &repo,
        &model_server,
        &["--prompt", "user-only", "--max-turns", "1"],
    )
    .await;
    let requests = model_server.finish();
    assert_eq!(run.code, 1, "{}", explain(&run));
    assert_eq!(requests[0]["model"], "from-user");
}

#[test]
fn an_unknown_key_in_vouch_toml_is_a_usage_error_naming_it() {
    let repo = calc_repo();
    repo.write("vouch.toml", "max_turn = 3\n");
    let config = repo.tmp.path().join("config");
    let run = repo.vouch_env(
        &["run", "--repo", repo.dir.to_str().unwrap(), "--prompt", "x"],
        &[("XDG_CONFIG_HOME", config.to_str().unwrap())],
    );
    assert_eq!(run.code, 2, "{}", explain(&run));
    assert!(run.stderr.contains("max_turn"), "{}", run.stderr);
    assert!(run.stderr.contains("vouch.toml"), "{}", run.stderr);
}

fn vouch_clean(repo: &Repo, args: &[&str]) -> Run {
    let mut full = vec!["clean", "--repo", repo.dir.to_str().unwrap()];
    full.extend_from_slice(args);
    repo.vouch(&full)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clean_keeps_unmerged_work_without_force_and_removes_merged_workspaces() {
    let repo = calc_repo();
    let before = user_state(&repo);
    verified_run(&repo, "unmerged").await;
    let ws = workspace(&repo, "unmerged");
    assert!(ws.is_dir());

    // Unmerged: kept, and the reason is given.
    let run = vouch_clean(&repo, &[]);
    assert_eq!(run.code, 0, "{}", explain(&run));
    assert!(
        run.stdout
            .contains("kept     unmerged: branch vouch/unmerged has 1 commit not in main"),
        "{}",
        run.stdout
    );
    assert!(ws.is_dir());
    assert!(repo
        .git(&["branch", "--list", "vouch/unmerged"])
        .contains("vouch/unmerged"));

    // Uncommitted changes are kept too.
    std::fs::write(ws.join("calc.py"), CALC).unwrap();
    let run = vouch_clean(&repo, &["unmerged"]);
    assert!(
        run.stdout.contains("1 uncommitted change in"),
        "{}",
        run.stdout
    );
    assert!(ws.is_dir());

    // --force removes the worktree, its registration and the branch.
    let run = vouch_clean(&repo, &["--force", "unmerged"]);
    assert_eq!(run.code, 0, "{}", explain(&run));
    assert!(run.stdout.contains("removed  unmerged"), "{}", run.stdout);
    assert!(!ws.exists());
    assert_eq!(repo.git(&["branch", "--list", "vouch/*"]), "");
    assert_eq!(
        repo.git(&["worktree", "list", "--porcelain"])
            .matches("worktree ")
            .count(),
        1
    );
    assert_untouched(&repo, &before);

    // Merged: removed without --force; the checkout stays as it was.
    verified_run(&repo, "merged").await;
    repo.git(&["merge", "--ff-only", "vouch/merged"]);
    let merged = user_state(&repo);
    let run = vouch_clean(&repo, &[]);
    assert_eq!(run.code, 0, "{}", explain(&run));
    assert!(run.stdout.contains("removed  merged"), "{}", run.stdout);
    assert!(run.stdout.contains("1 removed, 0 kept"), "{}", run.stdout);
    assert!(!workspace(&repo, "merged").exists());
    assert_eq!(repo.git(&["branch", "--list", "vouch/*"]), "");
    let after = user_state(&repo);
    for (path, bytes) in merged
        .iter()
        .filter(|(p, _)| !p.starts_with(repo.dir.join(".git")))
    {
        assert!(after.get(path) == Some(bytes), "{} changed", path.display());
    }

    // A task without a workspace is a usage error.
    let run = vouch_clean(&repo, &["nothing-here"]);
    assert_eq!(run.code, 2, "{}", explain(&run));
    assert!(run.stderr.contains("nothing-here"), "{}", run.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_context_elides_the_oldest_big_tool_output_once_and_keeps_the_prefix_after() {
    let repo = calc_repo();
    let line = |i: usize| format!("VALUE_{i:05} = \"{}\"\n", "x".repeat(30));
    let big1: String = (0..500).map(line).collect();
    let big2: String = (0..200).map(line).collect();
    repo.write("big1.py", &big1);
    repo.write("big2.py", &big2);
    repo.commit("big files");
    let tokens = |n: u64, answer: Answer| match answer {
        Answer::Message(m) => Answer::Tokens(n, m),
        other => other,
    };
    let model = Model::start(vec![
        tokens(100, call(1, "read_file", json!({"path": "big1.py"}))),
        tokens(200, call(2, "read_file", json!({"path": "big2.py"}))),
        // 81% of the context: before the next request the oldest big output goes.
        tokens(810, call(3, "list_files", json!({}))),
        tokens(400, call(4, "search", json!({"pattern": "add"}))),
        tokens(
            450,
            call(5, "submit", json!({"verdict": "NO-GO", "summary": "no"})),
        ),
    ])
    .await;
    let run = vouch_run(
        &repo,
        &model,
        &[
            "--prompt",
            "elide",
            "--context",
            "1000",
            "--tool-mode",
            "native",
        ],
    )
    .await;
    let requests = model.finish();
    assert_eq!(run.code, 1, "{}", explain(&run));
    assert_eq!(requests.len(), 5);
    let tool = |req: &Value, id: &str| -> String {
        req["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["tool_call_id"] == id)
            .and_then(|m| m["content"].as_str())
            .unwrap()
            .to_string()
    };
    assert!(tool(&requests[2], "call_1_0").contains("VALUE_00499"));
    assert_eq!(
        tool(&requests[3], "call_1_0"),
        "[output of read_file big1.py elided to save context; call it again if you need it]"
    );
    // One step: the newer big output stays, since eliding the oldest frees enough.
    assert!(tool(&requests[3], "call_2_0").contains("VALUE_00199"));
    // After the step the prefix holds again.
    let third = requests[3]["messages"].as_array().unwrap();
    let fourth = requests[4]["messages"].as_array().unwrap();
    assert_eq!(&fourth[..third.len()], &third[..]);
    let events = transcript(&repo, "elide");
    let elided: Vec<&Value> = events.iter().filter(|e| e["event"] == "elided").collect();
    assert_eq!(elided.len(), 1, "{elided:#?}");
    assert_eq!(elided[0]["context"], 1000);
    assert_eq!(elided[0]["messages"][0]["name"], "read_file");
    assert!(
        run.stderr.contains("elided 1 old tool output"),
        "{}",
        run.stderr
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_near_miss_edit_succeeds_through_the_cascade_and_an_ambiguous_one_fails_with_the_places()
{
    let repo = calc_repo();
    let before = user_state(&repo);
    let model = Model::start(vec![
        // `return a - b` stands in add() and in sub(): ambiguous.
        call(
            1,
            "edit",
            json!({"path": "calc.py", "old_string": "    return a - b", "new_string": "    return a + b"}),
        ),
        // Trailing spaces and the wrong indentation: found by the cascade, and unique there.
        call(
            2,
            "edit",
            json!({"path": "calc.py", "old_string": "def add(a, b):  \n  return a - b", "new_string": "def add(a, b):\n  return a + b"}),
        ),
        call(
            3,
            "submit",
            json!({"verdict": "NO-GO", "summary": "edited, not tested"}),
        ),
    ])
    .await;
    let run = vouch_run(&repo, &model, &["--prompt", "fix add by editing"]).await;
    let requests = model.finish();
    assert_eq!(run.code, 1, "{}", explain(&run));
    let first = tool_results(&requests[1]);
    assert!(
        first[0]
            .1
            .contains("old_string occurs 2 times in `calc.py` (at lines 2, 6)"),
        "{first:?}"
    );
    let second = tool_results(&requests[2]);
    assert!(second[0].1.starts_with("Edited calc.py"), "{second:?}");
    let edited =
        std::fs::read_to_string(workspace(&repo, "fix-add-by-editing").join("calc.py")).unwrap();
    assert_eq!(edited, FIXED);
    assert_untouched(&repo, &before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gate_checks_given_to_vouch_run_judge_its_change() {
    // The inert test that goes back for repair above is verified when the run turns the bite check off.
    let repo = calc_repo();
    let model = Model::start(fix_with("test_add.py", INERT_TEST)).await;
    let run = vouch_run(
        &repo,
        &model,
        &["--prompt", "add subtracts", "--no-bite", "--reruns", "0"],
    )
    .await;
    model.finish();
    assert_eq!(run.code, 0, "{}", explain(&run));
    let r = report(&repo, "add-subtracts");
    assert_eq!(
        json!([
            r["status"],
            r["gate"]["verdict"],
            r["gate"]["bite"]["status"],
            r["gate"]["bite"]["reasons"]
        ]),
        json!([
            "verified",
            "pass",
            "skipped",
            ["the bite check was turned off"]
        ])
    );
}

// ---------------------------------------------------------------------------------------------------------
// What a real small coder did wrong (issue 11), each failure scripted.

/// A text reply with Hermes-style `<tool_call>` blocks, as a small coder writes them without native calls.
fn hermes(list: &[(&str, Value)]) -> Answer {
    let body: Vec<String> = list
        .iter()
        .map(|(name, args)| {
            format!(
                "<tool_call>\n{}\n</tool_call>",
                json!({"name": name, "arguments": args})
            )
        })
        .collect();
    text(&body.join("\n"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_recovered_from_text_stop_at_the_first_change_and_a_blind_submit_is_not_run() {
    let repo = calc_repo();
    let before = user_state(&repo);
    let model = Model::start(vec![
        hermes(&[
            ("read_file", json!({"path": "calc.py"})),
            ("write_file", json!({"path": "calc.py", "content": FIXED})),
            ("run_tests", json!({})),
            ("submit", json!({"verdict": "GO", "summary": "fixed"})),
        ]),
        call(
            2,
            "submit",
            json!({"verdict": "NO-GO", "summary": "not tested"}),
        ),
    ])
    .await;
    let run = vouch_run(&repo, &model, &["--prompt", "blind plan"]).await;
    let requests = model.finish();
    assert_eq!(run.code, 1, "{}", explain(&run));
    let results = tool_results(&requests[1]);
    let names: Vec<&str> = results.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["read_file", "write_file", "run_tests", "submit"]);
    assert!(results[0].1.contains("def add(a, b):"), "{results:?}");
    assert!(results[1].1.starts_with("Replaced calc.py"), "{results:?}");
    for (name, result) in &results[2..] {
        assert!(
            result.starts_with("Not run: wait for the result of the earlier call"),
            "{name}: {result}"
        );
    }
    let r = report(&repo, "blind-plan");
    assert_eq!(
        json!([r["status"], r["stop_reason"], r["claimed"], r["commit"]]),
        json!(["no-go", "submitted", "NO-GO", null])
    );
    assert_untouched(&repo, &before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_planned_submit_after_a_failing_test_run_is_not_run() {
    // Qwen2.5-Coder 1.5B on py-median-empty, turn 1: list_files, a run_tests of a name pytest cannot find,
    // then submit GO, all fenced, with no file changed. The submit used to run blind and the repair turn
    // that followed was spent on "nothing to verify".
    let repo = calc_repo();
    let fenced = |name: &str, args: Value| {
        format!(
            "```json\n{}\n```",
            serde_json::to_string_pretty(&json!({"name": name, "arguments": args})).unwrap()
        )
    };
    let plan = [
        fenced("list_files", json!({"glob": "*.py"})),
        fenced("run_tests", json!({"selector": "test_no_such_name"})),
        fenced("submit", json!({"verdict": "GO", "summary": "done"})),
    ]
    .join("\n\n");
    let lone_submit = [
        fenced("list_files", json!({})),
        fenced("submit", json!({"verdict": "GO", "summary": "done"})),
    ]
    .join("\n\n");
    let model = Model::start(vec![
        text(&format!("{plan}\n\nThis approach fixes the issue.")),
        text(&lone_submit),
        call(3, "submit", json!({"verdict": "NO-GO", "summary": "x"})),
    ])
    .await;
    let run = vouch_run(&repo, &model, &["--prompt", "failing plan"]).await;
    let requests = model.finish();
    assert_eq!(run.code, 1, "{}", explain(&run));
    let first = tool_results(&requests[1]);
    let names: Vec<&str> = first.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        ["list_files", "run_tests", "submit"],
        "{first:?} {}",
        explain(&run)
    );
    assert!(first[0].1.contains("calc.py"), "{first:?}");
    assert!(!first[1].1.starts_with("Not run"), "{first:?}");
    assert!(
        first[2].1.starts_with("Not run: wait for the result"),
        "{first:?}"
    );
    // A submit after a call that succeeded is held too: it was written before that call's result.
    let second = tool_results(&requests[2]);
    assert!(
        second
            .last()
            .is_some_and(|(n, r)| n == "submit" && r.starts_with("Not run: wait")),
        "{second:?}"
    );
    let r = report(&repo, "failing-plan");
    assert_eq!(
        json!([r["status"], r["claimed"], r["commit"]]),
        json!(["no-go", "NO-GO", null])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_written_many_times_in_one_reply_runs_once_and_stops_nothing() {
    // Qwen2.5-Coder 1.5B on js-sort-numbers, turn 1: 24 calls, most of them the same list_files. The
    // repeated-call rail took them for a model stuck in a loop and stopped the run on its first turn.
    let repo = calc_repo();
    let list = "{\"name\": \"list_files\", \"arguments\": {}}";
    let read = "{\"name\": \"read_file\", \"arguments\": {\"path\": \"calc.py\"}}";
    let reply = [list, read, list, list, list, read, list]
        .iter()
        .map(|c| format!("```json\n{c}\n```"))
        .collect::<Vec<_>>()
        .join("\n\n");
    let model = Model::start(vec![
        text(&reply),
        call(2, "submit", json!({"verdict": "NO-GO", "summary": "x"})),
    ])
    .await;
    let run = vouch_run(&repo, &model, &["--prompt", "many lists"]).await;
    let requests = model.finish();
    assert_eq!(run.code, 1, "{}", explain(&run));
    let results = tool_results(&requests[1]);
    assert_eq!(results.len(), 7, "{results:?}");
    assert!(results[0].1.contains("calc.py"), "{results:?}");
    assert!(results[1].1.contains("def add(a, b):"), "{results:?}");
    for i in [2, 3, 4, 6] {
        assert_eq!(
            results[i].1,
            "Not run: the same call as call 1 of this reply; its result is above."
        );
    }
    assert_eq!(
        results[5].1,
        "Not run: the same call as call 2 of this reply; its result is above."
    );
    let r = report(&repo, "many-lists");
    assert_eq!(
        json!([r["status"], r["stop_reason"], r["claimed"]]),
        json!(["no-go", "submitted", "NO-GO"])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn native_calls_in_one_reply_all_run_as_before() {
    let repo = calc_repo();
    let model = Model::start(vec![
        calls(
            1,
            &[
                ("write_file", json!({"path": "calc.py", "content": FIXED})),
                ("read_file", json!({"path": "calc.py"})),
            ],
        ),
        call(2, "submit", json!({"verdict": "NO-GO", "summary": "x"})),
    ])
    .await;
    let run = vouch_run(&repo, &model, &["--prompt", "native pair"]).await;
    let requests = model.finish();
    assert_eq!(run.code, 1, "{}", explain(&run));
    let results = tool_results(&requests[1]);
    assert!(results[1].1.contains("return a + b"), "{results:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_reply_without_a_call_keeps_the_native_mode_and_the_history() {
    let repo = calc_repo();
    let model = Model::start(vec![
        text("Let me think about where add() is defined."),
        call(2, "read_file", json!({"path": "calc.py"})),
        call(3, "submit", json!({"verdict": "NO-GO", "summary": "x"})),
    ])
    .await;
    // The scripted server fails the test when a request rewrites the history it was sent before.
    let run = vouch_run(&repo, &model, &["--prompt", "think aloud"]).await;
    let requests = model.finish();
    assert_eq!(run.code, 1, "{}", explain(&run));
    for r in &requests {
        assert!(r.get("tools").is_some() && r.get("response_format").is_none());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_turn_gets_a_progress_line_and_every_request_has_a_generation_limit() {
    let repo = calc_repo();
    let model = Model::start(vec![Answer::Slow(
        std::time::Duration::from_millis(1500),
        json!({"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function",
            "function": {"name": "submit", "arguments": "{\"verdict\": \"NO-GO\", \"summary\": \"x\"}"}}]}),
    )])
    .await;
    let run = vouch_run_env(
        &repo,
        &model,
        &["--prompt", "slow turn"],
        &[("VOUCH_TURN_PROGRESS_MS", "400")],
    )
    .await;
    let requests = model.finish();
    assert_eq!(run.code, 1, "{}", explain(&run));
    assert!(
        run.stderr
            .contains("turn 1/50: the model is still replying"),
        "{}",
        run.stderr
    );
    assert!(requests[0]["max_tokens"].as_u64().is_some_and(|n| n > 0));
}

const CRATE_TOML: &str =
    "[package]\nname = \"calc\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n";
const CRATE_LIB: &str = "/// The absolute value.\npub fn abs(x: i64) -> i64 {\n    if x < 0 {\n        x\n    } else {\n        x\n    }\n}\n";
const CRATE_API_TEST: &str =
    "#[test]\nfn abs_of_positive() {\n    assert_eq!(calc::abs(3), 3);\n}\n";
const CRATE_ABS_TEST: &str =
    "#[test]\nfn abs_of_negative_is_positive() {\n    assert_eq!(calc::abs(-3), 3);\n}\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_commit_holds_the_files_the_tools_wrote_and_not_the_cargo_lock_the_tests_made() {
    let repo = Repo::with_files(&[
        ("Cargo.toml", CRATE_TOML),
        (".gitignore", "/target\n"),
        ("src/lib.rs", CRATE_LIB),
        ("tests/api.rs", CRATE_API_TEST),
    ]);
    let fixed = CRATE_LIB.replace(
        "    if x < 0 {\n        x\n",
        "    if x < 0 {\n        -x\n",
    );
    let model = Model::start(vec![
        calls(
            1,
            &[
                (
                    "write_file",
                    json!({"path": "src/lib.rs", "content": fixed}),
                ),
                (
                    "write_file",
                    json!({"path": "tests/abs.rs", "content": CRATE_ABS_TEST}),
                ),
            ],
        ),
        call(2, "run_tests", json!({})),
        call(
            3,
            "submit",
            json!({"verdict": "GO", "summary": "abs negates"}),
        ),
    ])
    .await;
    let run = vouch_run(&repo, &model, &["--prompt", "fix abs"]).await;
    let requests = model.finish();
    let results = tool_results(&requests[2]);
    assert!(results[0].1.contains("Tests passed"), "{results:?}");
    assert!(
        workspace(&repo, "fix-abs").join("Cargo.lock").is_file(),
        "run_tests made a Cargo.lock"
    );
    assert_eq!(run.code, 0, "{}", explain(&run));
    let files = repo.git(&["show", "--name-only", "--format=", "vouch/fix-abs"]);
    assert_eq!(files.trim(), "src/lib.rs\ntests/abs.rs");
    assert_eq!(report(&repo, "fix-abs")["status"], "verified");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_tests_that_ran_no_test_is_a_failure_that_says_so() {
    let repo = Repo::with_files(&[
        ("Cargo.toml", CRATE_TOML),
        (".gitignore", "/target\n"),
        ("src/lib.rs", CRATE_LIB),
        ("tests/api.rs", CRATE_API_TEST),
    ]);
    // `all`, copied from a description: cargo runs `cargo test all`, which matches no test and exits 0.
    let model = Model::start(vec![
        call(1, "run_tests", json!({"selector": "all"})),
        call(2, "run_tests", json!({})),
        call(
            3,
            "submit",
            json!({"verdict": "NO-GO", "summary": "looked"}),
        ),
    ])
    .await;
    let run = vouch_run(&repo, &model, &["--prompt", "zero tests"]).await;
    let requests = model.finish();
    assert_eq!(run.code, 1, "{}", explain(&run));
    // The default per-reply limit: long enough for a whole-file write, short enough for a slow model.
    assert_eq!(requests[0]["max_tokens"], 1536);
    let first = tool_results(&requests[1]);
    assert_eq!(first.len(), 1);
    assert!(
        first[0].1.contains("Tests failed: 0 tests ran")
            && first[0].1.contains("the selector `all` matched no test"),
        "{first:?}"
    );
    assert!(!first[0].1.contains("Tests passed"), "{first:?}");
    let tool = transcript(&repo, "zero-tests")
        .into_iter()
        .find(|e| e["event"] == "tool")
        .unwrap();
    assert_eq!(tool["ok"], false);
    // Without the selector the same tests run and pass.
    let second = tool_results(&requests[2]);
    assert!(second[0].1.contains("Tests passed"), "{second:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_go_test_reaches_the_model_by_name_and_as_go_prints_it() {
    // The go profile runs `go test -json`: the model must get the failing test's name and go's own lines,
    // not a page of escaped JSON events without a name in the summary.
    let repo = Repo::with_files(&[
        ("go.mod", "module ports\n\ngo 1.19\n"),
        (
            "ports.go",
            "package ports\n\n// Count is how many ports the range lo..hi holds.\nfunc Count(lo, hi int) int {\n\treturn hi - lo\n}\n",
        ),
        (
            "ports_test.go",
            "package ports\n\nimport \"testing\"\n\nfunc TestCount(t *testing.T) {\n\tif got := Count(80, 81); got != 2 {\n\t\tt.Errorf(\"Count(80, 81) = %d, want 2\", got)\n\t}\n}\n",
        ),
    ]);
    let model = Model::start(vec![
        call(1, "run_tests", json!({})),
        call(
            2,
            "submit",
            json!({"verdict": "NO-GO", "summary": "looked"}),
        ),
    ])
    .await;
    let run = vouch_run(&repo, &model, &["--prompt", "count is off by one"]).await;
    let requests = model.finish();
    assert_eq!(run.code, 1, "{}", explain(&run));
    let result = &tool_results(&requests[1])[0].1;
    assert!(result.contains("Failing tests: TestCount\n"), "{result}");
    assert!(
        result.contains("First error: ports_test.go:7: Count(80, 81) = 1, want 2"),
        "{result}"
    );
    assert!(result.contains("--- FAIL: TestCount ("), "{result}");
    assert!(!result.contains("\"Action\""), "{result}");
}

/// The first `run_tests` result of a run that runs the tests once and gives up.
async fn first_test_result(repo: &Repo) -> String {
    let model = Model::start(vec![
        call(1, "run_tests", json!({})),
        call(
            2,
            "submit",
            json!({"verdict": "NO-GO", "summary": "looked"}),
        ),
    ])
    .await;
    let run = vouch_run(repo, &model, &["--prompt", "abs is wrong"]).await;
    let requests = model.finish();
    assert_eq!(run.code, 1, "{}", explain(&run));
    tool_results(&requests[1])[0].1.clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_assertion_reaches_the_model_with_the_values_it_compared() {
    // The 1.5B, told only "assertion `left == right` failed", guessed at what its code returned; the
    // values are on the lines after it (cargo), or in the YAML block of node's TAP, not on that line.
    let rust = Repo::with_files(&[
        ("Cargo.toml", CRATE_TOML),
        (".gitignore", "/target\n"),
        ("src/lib.rs", CRATE_LIB),
        ("tests/abs.rs", CRATE_ABS_TEST),
    ]);
    let result = first_test_result(&rust).await;
    assert!(
        result.contains("First error: thread 'abs_of_negative_is_positive' (")
            && result.contains("panicked at tests/abs.rs:3:5: assertion `left == right` failed left: -3 right: 3\n"),
        "{result}"
    );
    let node = Repo::with_files(&[
        (
            "package.json",
            "{\"name\": \"m\", \"private\": true, \"scripts\": {\"test\": \"node --test\"}}\n",
        ),
        ("abs.js", "exports.abs = (x) => x;\n"),
        (
            "test/abs.test.js",
            "const test = require(\"node:test\");\nconst assert = require(\"node:assert\");\nconst { abs } = require(\"../abs.js\");\n\ntest(\"abs of -3\", () => {\n  assert.strictEqual(abs(-3), 3);\n});\n",
        ),
    ]);
    let result = first_test_result(&node).await;
    assert!(result.contains("Failing tests: abs of -3\n"), "{result}");
    assert!(
        result.contains("First error: Expected values to be strictly equal: -3 !== 3 at ")
            && result.contains("test/abs.test.js:5:1"),
        "{result}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_file_refuses_tool_calls_and_unread_rewrites_and_says_unchanged_for_the_same_content()
{
    let repo = calc_repo();
    // A script, not part of the file: a statement at the top means it does not merge by definition.
    let short = "def add(a, b):\n    return a + b\n\n\nprint(add(1, 2))\n";
    let model = Model::start(vec![
        call(
            1,
            "write_file",
            json!({"path": "calc.py", "content": r#"{"name": "edit", "arguments": {"path": "calc.py"}}"#}),
        ),
        call(2, "write_file", json!({"path": "calc.py", "content": short})),
        call(3, "write_file", json!({"path": "calc.py", "content": CALC})),
        call(
            4,
            "submit",
            json!({"verdict": "NO-GO", "summary": "nothing changed"}),
        ),
    ])
    .await;
    // Nothing shown in the first message: the model has read no file when it writes.
    let run = vouch_run(&repo, &model, &["--prompt", "rewrite", "--preload", "0"]).await;
    let requests = model.finish();
    assert_eq!(run.code, 1, "{}", explain(&run));
    let result = |n: usize| tool_results(&requests[n])[0].1.clone();
    assert!(
        result(1).starts_with("Not written: the content is a tool call"),
        "{}",
        result(1)
    );
    assert!(
        result(2).starts_with("Not written: this would remove 3 of the 4 lines of `calc.py`")
            && result(2).contains("Use edit"),
        "{}",
        result(2)
    );
    assert_eq!(
        result(3),
        "Unchanged: `calc.py` already has this content; nothing was written."
    );
    let ws = workspace(&repo, "rewrite");
    assert_eq!(std::fs::read_to_string(ws.join("calc.py")).unwrap(), CALC);
    let oks: Vec<Value> = transcript(&repo, "rewrite")
        .into_iter()
        .filter(|e| e["event"] == "tool")
        .map(|e| e["ok"].clone())
        .collect();
    assert_eq!(oks, [json!(false), json!(false), json!(true), json!(true)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_message_shows_the_code_the_task_is_about_so_turn_one_can_edit_it() {
    let repo = calc_repo();
    let edit = || {
        call(
            1,
            "edit",
            json!({
                "path": "calc.py",
                "old_string": "def add(a, b):\n    return a - b",
                "new_string": "def add(a, b):\n    return a + b"
            }),
        )
    };
    let submit = || call(2, "submit", json!({"verdict": "NO-GO", "summary": "fixed"}));
    let model = Model::start(vec![edit(), submit()]).await;
    let run = vouch_run(&repo, &model, &["--prompt", "`add()` subtracts"]).await;
    let requests = model.finish();
    assert_eq!(run.code, 1, "{}", explain(&run));
    let first = requests[0]["messages"][1]["content"].as_str().unwrap();
    // The file names, then the file that defines `add` as read_file shows it, then its test.
    assert!(
        first.contains("\nThe repository's files (3):\ncalc.py\npyproject.toml\ntest_calc.py\n"),
        "{first}"
    );
    let shown = first.find("\ncalc.py (").unwrap();
    assert!(first[shown..].contains("     1\tdef add(a, b):"), "{first}");
    assert!(first.find("\ntest_calc.py (").unwrap() > shown, "{first}");
    // The edit on turn one applied: the model had seen the file.
    let result = &tool_results(&requests[1])[0].1;
    assert!(result.starts_with("Edited calc.py"), "{result}");
    assert!(run
        .stderr
        .contains("first message: the 3 file names and the text of calc.py"));

    // With --preload 0 the first message is the task alone.
    let repo = calc_repo();
    let model = Model::start(vec![submit()]).await;
    let run = vouch_run(
        &repo,
        &model,
        &["--prompt", "`add()` subtracts", "--preload", "0"],
    )
    .await;
    let requests = model.finish();
    assert_eq!(run.code, 1, "{}", explain(&run));
    let first = requests[0]["messages"][1]["content"].as_str().unwrap();
    assert_eq!(first, "# Task: `add()` subtracts\n\n`add()` subtracts\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_reply_is_asked_for_again_once_with_the_same_messages() {
    // The 1.5B coder ended its turn at once after a tool result, five times in one quick start; each empty
    // reply went into the history with a nudge, and the next replies were empty too.
    let repo = calc_repo();
    let model = Model::start(vec![
        text(""),
        text(""),
        call(1, "submit", json!({"verdict": "NO-GO", "summary": "stuck"})),
    ])
    .await;
    let run = vouch_run(&repo, &model, &["--prompt", "empty replies"]).await;
    let requests = model.finish();
    assert_eq!(run.code, 1, "{}", explain(&run));
    assert_eq!(requests.len(), 3);
    // The second request is the first again; only after the second empty reply comes the nudge.
    assert_eq!(requests[1]["messages"], requests[0]["messages"]);
    let third = requests[2]["messages"].as_array().unwrap();
    assert_eq!(
        third.len(),
        requests[0]["messages"].as_array().unwrap().len() + 2
    );
    assert_eq!(third[third.len() - 2]["role"], "assistant");
    assert!(third[third.len() - 1]["content"]
        .as_str()
        .unwrap()
        .starts_with("Your reply had no tool call."));
    assert!(run
        .stderr
        .contains("an empty reply; asking again with the same messages"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_transcript_keeps_the_raw_reply_text_of_recovered_calls() {
    let repo = calc_repo();
    let raw = "I will read it.\n<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"calc.py\"}}\n</tool_call>";
    let model = Model::start(vec![
        text(raw),
        call(
            2,
            "submit",
            json!({"verdict": "NO-GO", "summary": "not sure"}),
        ),
    ])
    .await;
    let run = vouch_run(&repo, &model, &["--prompt", "raw text"]).await;
    model.finish();
    assert_eq!(run.code, 1, "{}", explain(&run));
    let responses: Vec<Value> = transcript(&repo, "raw-text")
        .into_iter()
        .filter(|e| e["event"] == "response")
        .collect();
    assert_eq!(responses[0]["recovered"], true);
    assert_eq!(responses[0]["raw_content"], raw);
    assert_ne!(responses[0]["content"], raw);
    // A native call's reply has no text to keep.
    assert!(
        responses[1].get("raw_content").is_none(),
        "{}",
        responses[1]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_no_call_reminder_shows_a_real_call_not_wording_or_placeholders_to_copy() {
    let repo = calc_repo();
    let model = Model::start(vec![
        text("I will look around first."),
        text("Still thinking."),
        text("Thinking more."),
        call(4, "list_files", json!({})),
        call(
            5,
            "submit",
            json!({"verdict": "NO-GO", "summary": "looked"}),
        ),
    ])
    .await;
    let run = vouch_run(
        &repo,
        &model,
        &["--prompt", "reminders", "--tool-mode", "native"],
    )
    .await;
    let requests = model.finish();
    assert_eq!(run.code, 1, "{}", explain(&run));
    let example = r#"{"name": "list_files", "arguments": {}}"#;
    for n in [1, 3] {
        let reminder = last_user(&requests[n]);
        assert!(reminder.contains("no tool call"), "{reminder}");
        assert!(reminder.contains(example), "{reminder}");
        assert!(
            !reminder.contains("look around with") && !reminder.contains("with a path"),
            "{reminder}"
        );
    }
    // The example is a call the model can send as it is.
    let call: Value = serde_json::from_str(example).unwrap();
    assert_eq!(call, json!({"name": "list_files", "arguments": {}}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_function_of_the_code_called_as_a_tool_is_answered_with_the_tools_and_a_search() {
    let repo = calc_repo();
    let model = Model::start(vec![
        hermes(&[
            ("add", json!({"a": 1, "b": 2})),
            ("read_file", json!({"path": "calc.py"})),
        ]),
        hermes(&[("calc.add", json!({}))]),
        call(
            3,
            "submit",
            json!({"verdict": "NO-GO", "summary": "gave up"}),
        ),
    ])
    .await;
    let run = vouch_run(&repo, &model, &["--prompt", "function as tool"]).await;
    let requests = model.finish();
    assert_eq!(run.code, 1, "{}", explain(&run));
    // Beside a real call: the real call runs, and the dropped one is explained after its result.
    let results = tool_results(&requests[1]);
    assert_eq!(results.len(), 1, "{results:?}");
    assert!(results[0].1.contains("def add(a, b):"), "{results:?}");
    let said = last_user(&requests[1]);
    assert!(
        said.starts_with("Not run: There is no tool called `add`. The tools are: read_file, edit,"),
        "{said}"
    );
    assert!(
        said.contains(r#"{"name": "search", "arguments": {"pattern": "add"}}"#),
        "{said}"
    );
    // Alone: that explanation, not "your reply had no tool call".
    let said = last_user(&requests[2]);
    assert!(
        said.starts_with("Not run: There is no tool called `calc.add`."),
        "{said}"
    );
    assert!(!said.contains("Your reply had no tool call"), "{said}");
    let kinds: Vec<Value> = transcript(&repo, "function-as-tool")
        .into_iter()
        .filter(|e| e["event"] == "nudge")
        .map(|e| e["kind"].clone())
        .collect();
    assert_eq!(kinds, [json!("unknown-tool"), json!("unknown-tool")]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_tests_shows_the_command_as_the_model_would_type_it() {
    let repo = calc_repo();
    let model = Model::start(vec![
        call(1, "run_tests", json!({"selector": "test_calc.py"})),
        call(
            2,
            "submit",
            json!({"verdict": "NO-GO", "summary": "looked"}),
        ),
    ])
    .await;
    let run = vouch_run(&repo, &model, &["--prompt", "shown command"]).await;
    let requests = model.finish();
    assert_eq!(run.code, 1, "{}", explain(&run));
    let results = tool_results(&requests[1]);
    let first = results[0].1.lines().next().unwrap_or_default().to_string();
    // The JUnit report flags and the records' paths are vouch's, not the model's.
    assert_eq!(
        first,
        "$ python3 -m pytest -q -p no:cacheprovider --continue-on-collection-errors test_calc.py"
    );
}

// ---------------------------------------------------------------------------------------------------------
// The guided strategy: the model writes code blocks, vouch places them, runs the tests and the gate.

/// A guided run of `prompt` whose model answers each request with the next of `blocks`, fenced as `lang`:
/// the run and the requests the model got.
async fn guided_run(repo: &Repo, lang: &str, blocks: &[&str], prompt: &str) -> (Run, Vec<Value>) {
    let answers = blocks
        .iter()
        .map(|code| text(&format!("```{lang}\n{code}```")))
        .collect();
    let model = Model::start(answers).await;
    let run = vouch_run(repo, &model, &["--strategy", "guided", "--prompt", prompt]).await;
    (run, model.finish())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guided_run_takes_the_fix_then_a_test_that_bites_and_the_gate_verifies_it() {
    let repo = calc_repo();
    let before = user_state(&repo);
    let (run, requests) = guided_run(
        &repo,
        "python",
        &[
            // A wrong fix the existing tests do not notice: kept, for now.
            "def add(a, b):\n    return a * b\n",
            // An existing test rewritten, weaker: kept as it was, the rewrite taken as a new test, which
            // passes on the old code too and is taken out again.
            "def test_sub():\n    assert True\n",
            // A test that passes on the old code as well: it proves nothing and is taken out.
            INERT_TEST,
            // The same again: the last step is asked again without the failed tries, sampled hotter.
            INERT_TEST,
            // A test that fails with the wrong fix: the test or the fix is wrong.
            NEW_TEST,
            // The right fix, the function alone, merged into calc.py.
            "def add(a, b):\n    return a + b\n",
        ],
        "add subtracts",
    )
    .await;
    assert_eq!(run.code, 0, "{}", explain(&run));
    // No tools are offered: the model writes code.
    assert!(
        requests.iter().all(|r| r.get("tools").is_none()),
        "{requests:?}"
    );
    let asks: Vec<String> = requests.iter().map(last_user).collect();
    assert!(
        asks[0].contains("calc.py:\n```python\ndef add(a, b):"),
        "{}",
        asks[0]
    );
    assert!(
        asks[0].contains("Fix the issue in `add` (calc.py)"),
        "{}",
        asks[0]
    );
    assert!(
        asks[1].starts_with(
            "The tests pass with your change. Now write one new test function for `test_calc.py`"
        ),
        "{}",
        asks[1]
    );
    assert!(
        asks[2].starts_with(
            "vouch kept the existing test `test_sub` as it was (existing tests stay as they are) and \
             added your version of it as the new test `test_sub_2`."
        ) && asks[2].contains("Your new test passes on the old code too"),
        "{}",
        asks[2]
    );
    assert!(
        asks[3].starts_with("Your new test passes on the old code too"),
        "{}",
        asks[3]
    );
    // The same test again: back to the ask for a test, the failed tries out of the history, sampled hotter.
    assert_eq!(requests[4]["messages"], requests[1]["messages"]);
    assert_eq!(requests[4]["temperature"], json!(1.0));
    assert!(requests[3].get("temperature").is_none(), "{}", requests[3]);
    assert!(
        asks[5].starts_with("With your test the tests fail"),
        "{}",
        asks[5]
    );
    assert!(asks[5].contains("test_add"), "{}", asks[5]);
    let r = report(&repo, "add-subtracts");
    assert_eq!(
        json!([
            r["status"],
            r["claimed"],
            r["gate"]["verdict"],
            r["gate"]["bite"]["status"]
        ]),
        json!(["verified", "GO", "pass", "bites"])
    );
    let branch = r["branch"].as_str().unwrap();
    assert_eq!(
        repo.git(&["show", &format!("{branch}:calc.py")]).trim_end(),
        FIXED.trim_end()
    );
    let tests = repo.git(&["show", &format!("{branch}:test_calc.py")]);
    assert!(
        tests.contains("def test_sub():") && tests.contains("def test_add():"),
        "{tests}"
    );
    assert!(
        !tests.contains("test_add_zero") && !tests.contains("test_sub_2"),
        "{tests}"
    );
    assert!(tests.contains("assert sub(3, 1) == 2"), "{tests}");
    assert_untouched(&repo, &before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guided_run_gets_past_the_mistakes_the_small_coder_made_and_is_verified() {
    // Each answer is a shape of reply the 0.5B coder sent on the benchmark's tasks.
    let repo = calc_repo();
    let (run, requests) = guided_run(
        &repo,
        "python",
        &[
            // The function as it was, with a docstring added: no fix. Asked again at once, hotter.
            "def add(a, b):\n    \"\"\"The sum of a and b.\"\"\"\n    return a - b\n",
            // A wrong fix the existing tests do not notice.
            "def add(a, b):\n    return a * b\n",
            // Asked for a test, a plain function: it would go into calc.py, where nothing calls it.
            // Refused.
            "def check_add():\n    assert add(2, 3) == 5\n",
            // An existing test rewritten beside a new test with a wrong expectation: the existing test is
            // kept as it was, the new one goes in, fails with the fix, and is taken out again.
            "from calc import add\n\n\ndef test_sub():\n    assert True\n\n\ndef test_add_two():\n    assert add(2, 3) == 7\n",
            // The same test corrected: a new test again, since it was taken out. It fails with the wrong
            // fix.
            "from calc import add\n\n\ndef test_add_two():\n    assert add(2, 3) == 5\n",
            // The right fix alone: the test goes back in with it.
            "def add(a, b):\n    return a + b\n",
        ],
        "add subtracts. `add(2, 3)` returns `-1`, not `5`.",
    )
    .await;
    assert_eq!(run.code, 0, "{}", explain(&run));
    assert_eq!(requests.len(), 6, "{}", explain(&run));
    let asks: Vec<String> = requests.iter().map(last_user).collect();
    // Nothing changed: the same request again, sampled hotter, with no message about it in between.
    assert_eq!(requests[1]["messages"], requests[0]["messages"]);
    assert_eq!(requests[1]["temperature"], json!(1.0));
    // The ask for a test quotes the task's sentence with the call that shows the bug.
    assert!(
        asks[2].starts_with("The tests pass with your change.")
            && asks[2].contains(
                "The bug, as the issue reports it: \"`add(2, 3)` returns `-1`, not `5`.\" Call the \
                 function"
            ),
        "{}",
        asks[2]
    );
    assert!(
        asks[3].starts_with(
            "Not applied: `check_add` is a new function in the code, not a test: a test goes in \
             `test_calc.py`"
        ),
        "{}",
        asks[3]
    );
    assert!(
        asks[4].starts_with("vouch kept the existing test `test_sub` as it was"),
        "{}",
        asks[4]
    );
    assert!(
        asks[4].contains("With your test the tests fail")
            && asks[4].contains("test_add_two")
            && asks[4].contains("vouch took your test out again"),
        "{}",
        asks[4]
    );
    // The corrected test was not refused as a rewrite of an existing test: it ran, and failed.
    assert!(
        asks[5].starts_with("With your test the tests fail"),
        "{}",
        asks[5]
    );
    let r = report(&repo, "add-subtracts-add-2-3-returns-1-not-5");
    assert_eq!(
        json!([
            r["status"],
            r["gate"]["verdict"],
            r["gate"]["bite"]["status"]
        ]),
        json!(["verified", "pass", "bites"])
    );
    let branch = r["branch"].as_str().unwrap();
    assert_eq!(
        repo.git(&["show", &format!("{branch}:calc.py")]).trim_end(),
        FIXED.trim_end()
    );
    let tests = repo.git(&["show", &format!("{branch}:test_calc.py")]);
    assert!(
        tests.contains("def test_sub():\n    assert sub(3, 1) == 2\n"),
        "{tests}"
    );
    assert!(tests.contains("assert add(2, 3) == 5"), "{tests}");
    assert!(
        !tests.contains("== 7") && !tests.contains("assert True"),
        "{tests}"
    );
    let calc = repo.git(&["show", &format!("{branch}:calc.py")]);
    assert!(!calc.contains("check_add"), "{calc}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guided_run_with_a_failing_test_asks_for_the_fix_with_the_code_and_takes_no_more_tests() {
    // The 1.5B on the quick start's task: asked for the fix, it wrote a failing test, and then, asked for
    // the fix again after each, its test file again, nine times running.
    let repo = calc_repo();
    let (run, requests) = guided_run(
        &repo,
        "python",
        &[
            NEW_TEST,
            "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\ndef test_add_more():\n    assert add(1, 1) == 2\n",
            "def add(a, b):\n    return a + b\n",
        ],
        "add subtracts. `add(2, 3)` returns `-1`, not `5`.",
    )
    .await;
    assert_eq!(run.code, 0, "{}", explain(&run));
    assert_eq!(requests.len(), 3, "{}", explain(&run));
    let asks: Vec<String> = requests.iter().map(last_user).collect();
    // The ask for the fix ends with the function to fix, nearest the ask, not with the test's failure.
    assert!(
        asks[1].starts_with("Good: your test fails on the current code")
            && asks[1].contains(
                "`add` as calc.py has it now:\n```python\ndef add(a, b):\n    return a - b\n```\n\nFix the \
                 issue in `add` (calc.py)."
            ),
        "{}",
        asks[1]
    );
    // Another test instead of the fix: not applied, the fix asked for again with the code.
    assert!(
        asks[2].starts_with("Not applied: vouch has your test already")
            && asks[2].contains(
                "`add` as calc.py has it now:\n```python\ndef add(a, b):\n    return a - b\n```"
            ),
        "{}",
        asks[2]
    );
    // The console says what each reply was and how each test run ended, not the command it ran.
    assert!(
        run.stderr.contains("(code reply)")
            && run
                .stderr
                .contains("turn 1: run_tests: Tests failed (exit 1). Failing tests: ")
            && run
                .stderr
                .contains("turn 3: run_tests: Tests passed (exit 0).")
            && !run.stderr.contains("(no tool call)"),
        "{}",
        run.stderr
    );
    let r = report(&repo, "add-subtracts-add-2-3-returns-1-not-5");
    assert_eq!(
        json!([r["status"], r["gate"]["bite"]["status"]]),
        json!(["verified", "bites"])
    );
    let branch = r["branch"].as_str().unwrap();
    let tests = repo.git(&["show", &format!("{branch}:test_calc.py")]);
    assert!(
        tests.contains("def test_add():") && !tests.contains("test_add_more"),
        "{tests}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guided_test_that_calls_what_the_code_does_not_have_shows_no_issue() {
    // The 1.5B's first reply on the quick start's task, once: a test of a `line_count` the crate never had.
    // It failed to compile, and was taken as the test that shows the issue.
    let repo = calc_repo();
    let (run, requests) = guided_run(
        &repo,
        "python",
        &[
            "from calc import add, add_all\n\n\ndef test_add_all():\n    assert add_all([2, 3]) == 5\n",
            "def add(a, b):\n    return a + b\n",
            "from calc import add\n\n\ndef test_add_mean():\n    assert mean_of([2])\n",
            NEW_TEST,
        ],
        "add subtracts. `add(2, 3)` returns `-1`, not `5`.",
    )
    .await;
    assert_eq!(run.code, 0, "{}", explain(&run));
    let asks: Vec<String> = requests.iter().map(last_user).collect();
    assert!(
        asks[1].starts_with("Not applied: your test fails before it tests anything: ImportError")
            && asks[1].contains("Fix the issue in `add` (calc.py)"),
        "{}",
        asks[1]
    );
    // After the fix, a test that calls a name nowhere defined: the test, not the fix, is what is wrong.
    assert!(
        asks[3].starts_with("Not applied: your test fails before it tests anything: NameError")
            && asks[3].contains("Now write one new test function"),
        "{}",
        asks[3]
    );
    let r = report(&repo, "add-subtracts-add-2-3-returns-1-not-5");
    assert_eq!(
        json!([r["status"], r["gate"]["bite"]["status"]]),
        json!(["verified", "bites"])
    );
    let branch = r["branch"].as_str().unwrap();
    let tests = repo.git(&["show", &format!("{branch}:test_calc.py")]);
    assert!(
        !tests.contains("add_all") && !tests.contains("mean_of"),
        "{tests}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guided_run_stuck_on_the_same_reply_starts_a_new_conversation_with_the_code_as_it_is() {
    // The 1.5B on the quick start's task sent the same code fourteen times, at temperatures up to 1.4:
    // what it copies is in the conversation.
    let repo = calc_repo();
    let fix = "def add(a, b):\n    return a + b\n";
    let (run, requests) = guided_run(
        &repo,
        "python",
        &[fix, fix, fix, fix, NEW_TEST],
        "add subtracts. `add(2, 3)` returns `-1`, not `5`.",
    )
    .await;
    assert_eq!(run.code, 0, "{}", explain(&run));
    assert_eq!(requests.len(), 5, "{}", explain(&run));
    // Two restarts, hotter, from the ask for a test ...
    assert_eq!(requests[2]["messages"], requests[1]["messages"]);
    assert_eq!(requests[3]["messages"], requests[1]["messages"]);
    // ... then a new conversation: the system prompt and one message with the code as it is now.
    let messages = requests[4]["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2, "{messages:?}");
    let first = messages[1]["content"].as_str().unwrap();
    assert!(
        first.contains("calc.py:\n```python\ndef add(a, b):\n    return a + b\n")
            && first.contains("The code above holds your fix, and the tests pass with it.")
            && first.contains("Now write one new test function for `test_calc.py`"),
        "{first}"
    );
    assert!(
        run.stderr
            .contains("starting a new conversation with the code as it is now"),
        "{}",
        run.stderr
    );
    let r = report(&repo, "add-subtracts-add-2-3-returns-1-not-5");
    assert_eq!(r["status"], "verified", "{}", explain(&run));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guided_js_test_written_as_a_plain_function_with_a_require_is_placed_and_registered() {
    // The 0.5B's test on js-escape-all: a `require` of the module it tests, and a function that asserts
    // but that no runner calls. Its require line went into html.js, which then declared `escapeHtml` twice.
    let repo = Repo::with_files(&[
        (
            "package.json",
            "{\"name\": \"m\", \"private\": true, \"scripts\": {\"test\": \"node --test\"}}\n",
        ),
        (
            "html.js",
            "\"use strict\";\n\nfunction escapeHtml(text) {\n  return String(text).replace(\"&\", \"&amp;\").replace(\"<\", \"&lt;\");\n}\n\nmodule.exports = { escapeHtml };\n",
        ),
        (
            "test/html.test.js",
            "\"use strict\";\nconst test = require(\"node:test\");\nconst assert = require(\"node:assert\");\nconst { escapeHtml } = require(\"../html.js\");\n\ntest(\"one special character is escaped\", () => {\n  assert.strictEqual(escapeHtml(\"a < b\"), \"a &lt; b\");\n});\n",
        ),
    ]);
    let (run, requests) = guided_run(
        &repo,
        "javascript",
        &[
            "function escapeHtml(text) {\n  return String(text).replace(/&/g, \"&amp;\").replace(/</g, \"&lt;\");\n}\n",
            "const escapeHtml = require(\"../html.js\");\n\nfunction testEscapesAll() {\n  assert.strictEqual(escapeHtml(\"a < b < c\"), \"a &lt; b &lt; c\");\n}\n",
        ],
        "escapeHtml escapes only the first one",
    )
    .await;
    assert_eq!(run.code, 0, "{}", explain(&run));
    assert_eq!(requests.len(), 2, "{}", explain(&run));
    let r = report(&repo, "escapehtml-escapes-only-the-first-one");
    assert_eq!(
        json!([
            r["status"],
            r["gate"]["verdict"],
            r["gate"]["bite"]["status"]
        ]),
        json!(["verified", "pass", "bites"])
    );
    let branch = r["branch"].as_str().unwrap();
    let html = repo.git(&["show", &format!("{branch}:html.js")]);
    assert!(
        !html.contains("require") && !html.contains("testEscapesAll"),
        "{html}"
    );
    let tests = repo.git(&["show", &format!("{branch}:test/html.test.js")]);
    assert_eq!(
        tests.matches("require(\"../html.js\")").count(),
        1,
        "{tests}"
    );
    assert!(
        tests
            .trim_end()
            .ends_with("}\ntest(\"testEscapesAll\", testEscapesAll);"),
        "{tests}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unformatted_fix_is_formatted_before_the_commit_and_the_gate_passes_it() {
    // The 1.5B's fix on the quick start's task passed the tests and bit, and the gate failed it on
    // `cargo fmt --check`; fourteen replies later it was still the same code.
    let repo = Repo::with_files(&[
        ("Cargo.toml", CRATE_TOML),
        (".gitignore", "/target\n"),
        ("src/lib.rs", CRATE_LIB),
        ("tests/api.rs", CRATE_API_TEST),
    ]);
    let (run, requests) = guided_run(
        &repo,
        "rust",
        &[
            "pub fn abs(x: i64) -> i64 { if x < 0 { -x } else { x } }\n",
            "#[test]\nfn abs_of_negative_is_positive() { assert_eq!(calc::abs(-3), 3); }\n",
        ],
        "abs of a negative number is negative",
    )
    .await;
    assert_eq!(run.code, 0, "{}", explain(&run));
    assert_eq!(requests.len(), 2, "{}", explain(&run));
    assert!(
        run.stderr
            .contains("formatted src/lib.rs, tests/api.rs (fmt)"),
        "{}",
        run.stderr
    );
    let r = report(&repo, "abs-of-a-negative-number-is-negative");
    assert_eq!(
        json!([
            r["status"],
            r["gate"]["verdict"],
            r["gate"]["bite"]["status"]
        ]),
        json!(["verified", "pass", "bites"])
    );
    let branch = r["branch"].as_str().unwrap();
    let lib = repo.git(&["show", &format!("{branch}:src/lib.rs")]);
    assert!(
        lib.contains("pub fn abs(x: i64) -> i64 {\n    if x < 0 {\n        -x\n    } else {\n        x\n    }\n}"),
        "{lib}"
    );
    let test = repo.git(&["show", &format!("{branch}:tests/api.rs")]);
    assert!(
        test.contains("fn abs_of_negative_is_positive() {\n    assert_eq!(calc::abs(-3), 3);\n}"),
        "{test}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guided_rust_fix_with_a_test_in_the_crates_own_tests_module_is_verified() {
    // The test goes into `mod tests` of src/lib.rs, the only Rust file: putting the sources back at base
    // would take the test out with the fix, so the gate's bite check (which keeps tests) decides.
    let lib = format!(
        "{CRATE_LIB}\n#[cfg(test)]\nmod tests {{\n    use super::*;\n\n    #[test]\n    fn abs_of_positive() {{\n        assert_eq!(abs(3), 3);\n    }}\n}}\n"
    );
    let repo = Repo::with_files(&[
        ("Cargo.toml", CRATE_TOML),
        (".gitignore", "/target\n"),
        ("src/lib.rs", &lib),
    ]);
    let (run, requests) = guided_run(
        &repo,
        "rust",
        &[
        "pub fn abs(x: i64) -> i64 {\n    if x < 0 {\n        -x\n    } else {\n        x\n    }\n}\n",
        "#[cfg(test)]\nmod tests {\n    use super::*;\n\n    #[test]\n    fn abs_of_negative_is_positive() {\n        assert_eq!(abs(-3), 3);\n    }\n}\n",
        ],
        "abs of a negative number is negative",
    )
    .await;
    assert_eq!(run.code, 0, "{}", explain(&run));
    assert_eq!(requests.len(), 2);
    let r = report(&repo, "abs-of-a-negative-number-is-negative");
    assert_eq!(
        json!([
            r["status"],
            r["gate"]["verdict"],
            r["gate"]["bite"]["status"]
        ]),
        json!(["verified", "pass", "bites"])
    );
    let branch = r["branch"].as_str().unwrap();
    let lib = repo.git(&["show", &format!("{branch}:src/lib.rs")]);
    assert!(lib.contains("        -x\n"), "{lib}");
    assert!(
        lib.contains("fn abs_of_positive()") && lib.contains("fn abs_of_negative_is_positive()"),
        "{lib}"
    );
    // Merged into the module member by member: one tests module, both tests in it.
    assert_eq!(lib.matches("mod tests").count(), 1, "{lib}");
}

/// A test the model writes rewrites the worktree's `.git` file to point at the user's own git directory
/// when `run_tests` runs it: vouch's commit must still go to the run's branch, and the user's checkout must
/// show nothing staged or changed (before, the commit staged the change in the user's index).
#[tokio::test(flavor = "multi_thread")]
async fn a_test_that_retargets_the_worktrees_git_file_cannot_make_vouch_commit_in_the_users_checkout(
) {
    let repo = calc_repo();
    let status_before = repo.git(&["status", "--porcelain"]);
    let user_git = repo.dir.join(".git");
    let retarget = format!(
        "from calc import add\n\n\
         try:\n    with open(\".git\", \"w\") as f:\n        f.write(\"gitdir: {}\\n\")\nexcept OSError:\n    pass\n\n\n\
         def test_add():\n    assert add(2, 3) == 5\n",
        user_git.display()
    );
    let model = Model::start(vec![
        call(
            1,
            "write_file",
            json!({"path": "calc.py", "content": FIXED}),
        ),
        call(
            2,
            "write_file",
            json!({"path": "test_add.py", "content": retarget}),
        ),
        call(3, "run_tests", json!({})),
        call(
            4,
            "submit",
            json!({"verdict": "GO", "summary": "add() adds now."}),
        ),
    ])
    .await;
    let run = vouch_run(
        &repo,
        &model,
        &["--prompt", "add() subtracts", "--sandbox", "require"],
    )
    .await;
    let _ = model.finish();
    assert_eq!(
        repo.git(&["status", "--porcelain"]),
        status_before,
        "the user's checkout changed: {}",
        explain(&run)
    );
    let wt_git = std::fs::read_to_string(workspace(&repo, "add-subtracts").join(".git")).unwrap();
    assert!(
        !wt_git.contains(&format!("gitdir: {}\n", user_git.display())),
        "the worktree's .git file was rewritten: {wt_git}"
    );
    let on_branch = repo.git(&["show", "vouch/add-subtracts:calc.py"]);
    assert!(on_branch.contains("a + b"), "{}", explain(&run));
}
