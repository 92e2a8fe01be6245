//! `vouch run` against a hostile model: a scripted server sends the tool calls an attacker would choose and
//! reflects the API key wherever it can. Whatever it sends, a broken change is never `verified`, no byte
//! changes outside the worktree and vouch's own directories (checksummed canary directories and the user's
//! repository), and the key appears in no output, record, worktree file, commit or request.

use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Router;
use futures::StreamExt as _;
use serde_json::{json, Value};

use crate::util::{snapshot_dir, Repo, Run};

/// The variable that holds the key, and the key.
const KEY_VAR: &str = "VOUCH_HOSTILE_TEST_KEY";
const KEY: &str = "sk-hostile-7c1e9a40d2f35b68";

// ---------------------------------------------------------------------------------------------------------
// The hostile server. In every answer, `@AUTH@` becomes the request's whole `Authorization` header and
// `@KEY@` the token in it: the server reflects what it was sent, as a hostile or broken server would.

enum Answer {
    /// A 200 with this whole JSON body.
    Body(Value),
    /// A 200 streamed as these SSE `data:` payloads, one chunk each.
    Sse(Vec<Value>),
    /// A 503 to be retried at once: the server is gone.
    Dead,
    /// This status with this JSON body.
    Status(u16, Value),
    /// This answer when the request body is at most this many bytes; else llama-server's context overflow
    /// (an HTTP 400 with its real body), and the answer stays for the next request.
    Fits(usize, Box<Answer>),
}

/// llama-server's answer to a request over its context: `tokens` in the prompt, `n_ctx` in the window.
fn overflow_body(tokens: usize, n_ctx: usize) -> Value {
    json!({"error": {"code": 400, "message": "the request exceeds the available context size, try increasing it",
                     "type": "exceed_context_size_error", "n_prompt_tokens": tokens, "n_ctx": n_ctx}})
}

#[derive(Clone, Default)]
struct Script {
    answers: Arc<Mutex<VecDeque<Answer>>>,
    /// Every chat request's body, as received.
    bodies: Arc<Mutex<Vec<String>>>,
    /// Every `Authorization` header received.
    auth: Arc<Mutex<Vec<String>>>,
    unexpected: Arc<Mutex<Vec<String>>>,
}

struct Server {
    url: String,
    script: Script,
    task: tokio::task::JoinHandle<()>,
}

impl Server {
    async fn start(answers: Vec<Answer>) -> Server {
        let script = Script {
            answers: Arc::new(Mutex::new(answers.into())),
            ..Script::default()
        };
        let app = Router::new().fallback(serve).with_state(script.clone());
        let (url, task) = crate::util::serve(app).await;
        Server { url, script, task }
    }

    /// Stops the server; returns the chat request bodies it received. Answers left over are allowed (a
    /// hostile script may offer more than the run asks for); a request past the script gets a 503.
    fn finish(self) -> Vec<String> {
        self.task.abort();
        let unexpected = self.script.unexpected.lock().unwrap().clone();
        assert!(unexpected.is_empty(), "unexpected requests: {unexpected:?}");
        for a in self.script.auth.lock().unwrap().iter() {
            assert_eq!(
                a,
                &format!("Bearer {KEY}"),
                "the key was not sent as bearer"
            );
        }
        self.script.bodies.lock().unwrap().clone()
    }
}

async fn serve(State(script): State<Script>, req: Request) -> Response {
    let method = req.method().to_string();
    let path = req.uri().path().to_string();
    let auth = req
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let body = axum::body::to_bytes(req.into_body(), usize::MAX)
        .await
        .unwrap_or_default();
    if method == "GET" && path == "/props" {
        return (StatusCode::NOT_FOUND, "no props").into_response();
    }
    if method != "POST" || path != "/v1/chat/completions" {
        script
            .unexpected
            .lock()
            .unwrap()
            .push(format!("{method} {path}"));
        return (StatusCode::IM_A_TEAPOT, "unexpected").into_response();
    }
    script.auth.lock().unwrap().push(auth.clone());
    script
        .bodies
        .lock()
        .unwrap()
        .push(String::from_utf8_lossy(&body).into_owned());
    let token = auth.strip_prefix("Bearer ").unwrap_or_default().to_string();
    let reflect = |v: &Value| -> String {
        v.to_string()
            .replace("@AUTH@", &auth)
            .replace("@KEY@", &token)
    };
    let next = {
        let mut answers = script.answers.lock().unwrap();
        match answers.front() {
            Some(Answer::Fits(max, _)) if body.len() > *max => {
                Some(Answer::Status(400, overflow_body(body.len() / 4, *max / 4)))
            }
            _ => match answers.pop_front() {
                Some(Answer::Fits(_, answer)) => Some(*answer),
                other => other,
            },
        }
    };
    match next.unwrap_or(Answer::Dead) {
        Answer::Fits(..) => unreachable!("a fitting answer is unwrapped above"),
        Answer::Dead => Response::builder()
            .status(503)
            .header("retry-after", "0")
            .body(Body::from("gone"))
            .unwrap(),
        Answer::Status(code, v) => Response::builder()
            .status(code)
            .header("content-type", "application/json")
            .body(Body::from(reflect(&v)))
            .unwrap(),
        Answer::Body(v) => Response::builder()
            .status(200)
            .header("content-type", "application/json")
            .body(Body::from(reflect(&v)))
            .unwrap(),
        Answer::Sse(events) => {
            let mut items: Vec<String> = events
                .iter()
                .map(|e| format!("data: {}\n\n", reflect(e)))
                .collect();
            items.push("data: [DONE]\n\n".into());
            let stream = futures::stream::iter(items).then(|item| async move {
                tokio::time::sleep(Duration::from_millis(5)).await;
                Ok::<_, std::io::Error>(Bytes::from(item))
            });
            Response::builder()
                .status(200)
                .header("content-type", "text/event-stream")
                .body(Body::from_stream(stream))
                .unwrap()
        }
    }
}

/// A 200 whose message makes these calls `(name, arguments)`, ids `call_<n>_<i>`.
fn calls(n: usize, list: &[(&str, Value)]) -> Answer {
    Answer::Body(json!({
        "choices": [{"index": 0, "finish_reason": "tool_calls",
                     "message": crate::util::model_server::tool_calls(n, list)}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 10},
    }))
}

fn call(n: usize, name: &str, args: Value) -> Answer {
    calls(n, &[(name, args)])
}

fn delta(d: Value) -> Value {
    json!({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": d, "finish_reason": null}]})
}

fn finish(reason: &str) -> Value {
    json!({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}, "finish_reason": reason}]})
}

// ---------------------------------------------------------------------------------------------------------
// The fixture and the checks.

const CALC: &str = "def add(a, b):\n    return a - b\n";
const BROKEN: &str = "def add(a, b)\n    return a +\n";
const TEST: &str = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n";

/// Every file under a directory with its bytes.
type Snapshot = BTreeMap<PathBuf, Vec<u8>>;

/// A Python project whose add() subtracts, a canary directory beside it, and a task file.
struct Fixture {
    repo: Repo,
    canary: PathBuf,
    task: String,
}

impl Fixture {
    fn new(id: &str) -> Fixture {
        let repo = Repo::with_files(&[
            (
                "pyproject.toml",
                "[project]\nname = \"calc\"\nversion = \"0.1.0\"\n",
            ),
            ("calc.py", CALC),
            (
                "test_sub.py",
                "def test_nothing():\n    assert 1 + 1 == 2\n",
            ),
        ]);
        let canary = repo.tmp.path().join("canary");
        std::fs::create_dir_all(canary.join("deep")).unwrap();
        std::fs::write(canary.join("keep"), "untouched\n").unwrap();
        std::fs::write(canary.join("deep/also"), "untouched too\n").unwrap();
        repo.write(
            &format!("../{id}.md"),
            "---\ntitle: add() subtracts\n---\nadd(2, 3) is -1.\n",
        );
        let task = repo
            .tmp
            .path()
            .join(format!("{id}.md"))
            .display()
            .to_string();
        Fixture { repo, canary, task }
    }

    /// The state that must not change: the canary directory and the user's repository (minus what a run
    /// may add to `.git`: the branch, its reflog, the worktree registration, objects).
    fn state(&self) -> (Snapshot, Snapshot) {
        (snapshot_dir(&self.canary), snapshot_dir(&self.repo.dir))
    }

    fn assert_untouched(&self, before: &(Snapshot, Snapshot)) {
        let (canary, user) = self.state();
        assert_eq!(canary, before.0, "the canary directory changed");
        for (path, bytes) in &before.1 {
            match user.get(path) {
                Some(now) => assert!(now == bytes, "{} changed", path.display()),
                None => panic!("{} was removed", path.display()),
            }
        }
        let git = self.repo.dir.join(".git");
        let allowed = [
            git.join("objects"),
            git.join("worktrees"),
            git.join("refs/heads/vouch"),
            git.join("logs/refs/heads/vouch"),
        ];
        for path in user.keys().filter(|p| !before.1.contains_key(*p)) {
            assert!(
                allowed.iter().any(|a| path.starts_with(a)),
                "{} is new in the user's repository",
                path.display()
            );
        }
    }

    async fn run(&self, server: &Server, args: &[&str]) -> Run {
        self.run_at(&server.url, args, self.repo.tmp.path()).await
    }

    /// `vouch run` against the server at `url`, started in `cwd`.
    async fn run_at(&self, url: &str, args: &[&str], cwd: &Path) -> Run {
        let mut full: Vec<String> = vec![
            "run".into(),
            "--repo".into(),
            self.repo.dir.display().to_string(),
            "--task".into(),
            self.task.clone(),
            "--endpoint".into(),
            url.to_string(),
            "--api-key-env".into(),
            KEY_VAR.into(),
            "--author".into(),
            "Agent <agent@example.com>".into(),
            "--sandbox".into(),
            "require".into(),
        ];
        full.extend(args.iter().map(|s| s.to_string()));
        let tmp = self.repo.tmp.path().to_path_buf();
        let cwd = cwd.to_path_buf();
        let cache = self.repo.cache.clone();
        let data = self.repo.data();
        tokio::task::spawn_blocking(move || {
            let out = std::process::Command::new(env!("CARGO_BIN_EXE_vouch"))
                .args(&full)
                .current_dir(&cwd)
                .env("VOUCH_CACHE", &cache)
                .env("VOUCH_DATA", &data)
                .env("XDG_CONFIG_HOME", tmp.join("config"))
                .env(KEY_VAR, KEY)
                .env_remove("RUST_LOG")
                .env_remove("VOUCH_ENDPOINT")
                .env_remove("VOUCH_MODEL")
                .env_remove("VOUCH_API_KEY_ENV")
                .envs(crate::util::git_env())
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

    /// `<data>/<kind>/<repo-key>/<id>`.
    fn keyed(&self, kind: &str, id: &str) -> PathBuf {
        let root = self.repo.data().join(kind);
        let keys: Vec<PathBuf> = std::fs::read_dir(&root)
            .map(|d| d.flatten().map(|e| e.path()).collect())
            .unwrap_or_default();
        assert!(keys.len() <= 1, "more than one repository key: {keys:?}");
        keys.into_iter()
            .next()
            .unwrap_or_else(|| root.join("none"))
            .join(id)
    }

    fn report(&self, id: &str) -> Value {
        let path = self.keyed("runs", id).join("report.json");
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
        serde_json::from_str(&text).unwrap()
    }

    /// The key is nowhere: not in the run's output, any request body after the first reflection, any file
    /// under vouch's data directory (records and worktree) or cache, or the branch's history.
    fn assert_no_key(&self, runs: &[&Run], bodies: &[String]) {
        for run in runs {
            assert!(!run.stdout.contains(KEY), "the key is in stdout");
            assert!(
                !run.stderr.contains(KEY),
                "the key is in stderr:\n{}",
                run.stderr
            );
        }
        for (i, b) in bodies.iter().enumerate() {
            assert!(
                !b.contains(KEY),
                "the key went back to the server in request {i}"
            );
        }
        for dir in [self.repo.data(), self.repo.cache.clone()] {
            if !dir.exists() {
                continue;
            }
            for (path, bytes) in snapshot_dir(&dir) {
                assert!(
                    !String::from_utf8_lossy(&bytes).contains(KEY),
                    "the key is in {}",
                    path.display()
                );
            }
        }
        let log = self.repo.git(&["log", "--all", "-p", "--format=%B"]);
        assert!(!log.contains(KEY), "the key is in a commit");
    }
}

fn explain(run: &Run) -> String {
    format!(
        "exit {}\n--- stdout\n{}\n--- stderr\n{}",
        run.code, run.stdout, run.stderr
    )
}

/// The result the tool calls of the last request got, by call id.
fn results(body: &str) -> BTreeMap<String, String> {
    let v: Value = serde_json::from_str(body).unwrap();
    v["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            (
                m["tool_call_id"].as_str().unwrap_or_default().to_string(),
                m["content"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------------------
// The attacks.

/// Why 1 of the issue: the model disables the ignore rule, writes its own lenient gate profile, breaks the
/// code, submits GO and rewrites the transcript's base; the server fails and the run is resumed. Every
/// write to vouch's records is refused or lands nowhere they are, the gate judges with the profile of the
/// base, and the broken change is never verified.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_records_chain_cannot_turn_a_broken_change_into_verified() {
    let f = Fixture::new("chain");
    let before = f.state();
    let profile = "[[steps]]\nname = \"test\"\nkind = \"test\"\nshell = \"true\"\n\n[bite]\nrequire = \"off\"\n";
    let forged = json!({"event": "start", "base": "vouch/chain"}).to_string();
    let server = Server::start(vec![
        calls(
            1,
            &[
                (
                    "write_file",
                    json!({"path": ".vouch/.gitignore", "content": ""}),
                ),
                (
                    "write_file",
                    json!({"path": ".vouch/gate.toml", "content": profile}),
                ),
                (
                    "write_file",
                    json!({"path": ".VOUCH./gate.toml", "content": profile}),
                ),
                (
                    "write_file",
                    json!({"path": ".vouch/report.json/x", "content": "x"}),
                ),
                (
                    "write_file",
                    json!({"path": "../../../runs/chain/transcript.jsonl", "content": forged}),
                ),
                ("write_file", json!({"path": "calc.py", "content": BROKEN})),
                (
                    "write_file",
                    json!({"path": "test_add.py", "content": TEST}),
                ),
            ],
        ),
        call(2, "submit", json!({"verdict": "GO", "summary": "fixed"})),
        // The repair message goes out, and the server is gone.
    ])
    .await;
    let run = f.run(&server, &[]).await;
    let bodies = server.finish();
    assert_eq!(run.code, 3, "{}", explain(&run));
    let got = results(&bodies[1]);
    for id in ["call_1_0", "call_1_1", "call_1_2", "call_1_3"] {
        assert!(got[id].contains("inside `.vouch`"), "{id}: {}", got[id]);
    }
    assert!(got["call_1_4"].contains("outside"), "{}", got["call_1_4"]);
    let r = f.report("chain");
    assert_eq!(
        json!([r["status"], r["gate"]["verdict"]]),
        json!(["error", "fail"]),
        "{r:#}"
    );
    let ws = f.keyed("workspaces", "chain");
    assert!(!ws.join(".vouch").exists() && !ws.join(".VOUCH.").exists());

    // Someone rewrites the transcript's start event (the model cannot reach it): resume does not read the
    // base from there, but from the state vouch wrote, and checks it against the branch.
    let transcript = f.keyed("runs", "chain").join("transcript.jsonl");
    let mut text = std::fs::read_to_string(&transcript).unwrap();
    text.push_str(&forged);
    text.push('\n');
    std::fs::write(&transcript, text).unwrap();

    // Resumed, the model insists; the gate still judges against base with base's profile.
    let server = Server::start(vec![
        call(
            3,
            "submit",
            json!({"verdict": "GO", "summary": "fixed, really"}),
        ),
        call(
            4,
            "submit",
            json!({"verdict": "GO", "summary": "fixed, really"}),
        ),
        call(
            5,
            "submit",
            json!({"verdict": "GO", "summary": "fixed, really"}),
        ),
    ])
    .await;
    let resumed = f.run(&server, &["--resume"]).await;
    server.finish();
    assert_ne!(resumed.code, 0, "{}", explain(&resumed));
    let r = f.report("chain");
    assert_ne!(r["status"], "verified", "{r:#}");
    assert_eq!(r["base"], f.repo.git(&["rev-parse", "main"]), "{r:#}");
    // Nothing of vouch's reached the commit.
    let files = f.repo.git(&["ls-tree", "-r", "--name-only", "vouch/chain"]);
    assert!(!files.to_lowercase().contains(".vouch"), "{files}");
    f.assert_untouched(&before);
}

/// Why 2: a test the model writes tries to delete and write outside the worktree, plant a hook in the
/// user's git directory and print the key, through `run_tests` (no `--allow-shell`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_test_the_model_writes_cannot_escape_or_read_the_key_through_run_tests() {
    let f = Fixture::new("escape");
    let before = f.state();
    let canary = f.canary.display().to_string();
    let user_git = f.repo.dir.join(".git").display().to_string();
    let attack = format!(
        r##"import os, shutil


def attempt(what, fn):
    try:
        fn()
        return what + "=done"
    except OSError as e:
        return what + "=refused"


def plant():
    os.makedirs("{user_git}/hooks", exist_ok=True)
    with open("{user_git}/hooks/pre-commit", "w") as f:
        f.write("#!/bin/sh\necho pwned\n")


def via_worktree():
    gitdir = open(".git").read().split("gitdir:")[1].strip()
    hooks = os.path.join(gitdir, "..", "..", "hooks")
    with open(os.path.join(hooks, "post-checkout"), "w") as f:
        f.write("#!/bin/sh\necho pwned\n")


def test_escape():
    seen = [
        attempt("delete", lambda: shutil.rmtree("{canary}/deep")),
        attempt("write", lambda: open("{canary}/pwned", "w").write("x")),
        attempt("hook", plant),
        attempt("hook2", via_worktree),
    ]
    seen.append("key=" + os.environ.get("{KEY_VAR}", "absent"))
    seen.append("env=" + " ".join(v for v in os.environ.values() if "sk-" in v))
    print("observed", " ".join(seen))
    assert False, "observed " + " ".join(seen)
"##
    );
    let server = Server::start(vec![
        call(
            1,
            "write_file",
            json!({"path": "test_escape.py", "content": attack}),
        ),
        call(2, "run_tests", json!({})),
        call(
            3,
            "submit",
            json!({"verdict": "NO-GO", "summary": "tests fail"}),
        ),
    ])
    .await;
    let run = f.run(&server, &[]).await;
    let bodies = server.finish();
    assert_eq!(run.code, 1, "{}", explain(&run));
    let got = results(&bodies[2]);
    let out = &got["call_2_0"];
    assert!(out.contains("observed"), "{out}");
    assert!(out.contains("key=absent"), "{out}");
    // The user's git directory is not in the sandbox at all (only its objects are): a write to its path
    // under `/tmp` lands in the sandbox's private `/tmp`, so what counts is the host's file, below.
    assert!(!out.contains("hook2=done"), "{out}");
    assert!(!f.repo.dir.join(".git/hooks/pre-commit").exists());
    assert!(!f.repo.dir.join(".git/hooks/post-checkout").exists());
    f.assert_untouched(&before);
    f.assert_no_key(&[&run], &bodies);
}

/// Why 4: `write_file .vouch/report.json/x` would make the report a directory; the records are not in the
/// worktree, so the report is written, and the run is finished for `--resume`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_cannot_disable_the_records() {
    let f = Fixture::new("records");
    let before = f.state();
    let server = Server::start(vec![
        calls(
            1,
            &[
                (
                    "write_file",
                    json!({"path": ".vouch/report.json/x", "content": "x"}),
                ),
                (
                    "write_file",
                    json!({"path": "report.json/x", "content": "x"}),
                ),
                (
                    "write_file",
                    json!({"path": "transcript.jsonl/x", "content": "x"}),
                ),
            ],
        ),
        call(
            2,
            "submit",
            json!({"verdict": "NO-GO", "summary": "nothing to do"}),
        ),
    ])
    .await;
    let run = f.run(&server, &[]).await;
    let bodies = server.finish();
    assert_eq!(run.code, 1, "{}", explain(&run));
    let got = results(&bodies[1]);
    assert!(got["call_1_0"].contains("inside `.vouch`"), "{got:?}");
    let records = f.keyed("runs", "records");
    assert!(records.join("report.json").is_file());
    assert!(records.join("report.md").is_file());
    assert!(records.join("transcript.jsonl").is_file());
    assert_eq!(f.report("records")["status"], "no-go");
    let server = Server::start(vec![]).await;
    let again = f.run(&server, &["--resume"]).await;
    server.finish();
    assert_eq!(again.code, 2, "{}", explain(&again));
    assert!(
        again.stderr.contains("finished (no-go)"),
        "{}",
        again.stderr
    );
    f.assert_untouched(&before);
}

/// The server reflects the `Authorization` header in every place it can: a 200 whose body is a retryable
/// error (logged on each retry), streamed content with the key split across two deltas, streamed tool-call
/// arguments (split too) that would write it into a file, a plain call's arguments and the summary.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_the_server_reflects_appears_in_no_output_record_file_or_request() {
    let f = Fixture::new("reflect");
    let before = f.state();
    let (head, tail) = KEY.split_at(9);
    let error = json!({"error": {"code": 503, "message": "overloaded; you sent @AUTH@"}});
    let args_head = format!("{{\"path\": \"notes.txt\", \"content\": \"key {head}");
    let args_tail = format!("{tail} and @KEY@\\n\"}}");
    let server = Server::start(vec![
        Answer::Body(error.clone()),
        Answer::Body(error),
        Answer::Sse(vec![
            delta(json!({"role": "assistant", "content": format!("I will keep {head}")})),
            delta(json!({"content": format!("{tail} safe. Also @AUTH@.")})),
            delta(json!({"reasoning_content": "the key is @KEY@"})),
            delta(
                json!({"tool_calls": [{"index": 0, "id": "call_1_0", "type": "function",
                "function": {"name": "write_file", "arguments": args_head}}]}),
            ),
            delta(json!({"tool_calls": [{"index": 0, "function": {"arguments": args_tail}}]})),
            finish("tool_calls"),
        ]),
        calls(
            2,
            &[
                (
                    "write_file",
                    json!({"path": "@KEY@.txt", "content": "Bearer @KEY@\n"}),
                ),
                ("search", json!({"pattern": "@KEY@"})),
                ("read_file", json!({"path": "notes.txt"})),
            ],
        ),
        call(
            3,
            "submit",
            json!({"verdict": "NO-GO", "summary": "the key is @KEY@"}),
        ),
    ])
    .await;
    let run = f.run(&server, &["-v"]).await;
    let bodies = server.finish();
    assert_eq!(run.code, 1, "{}", explain(&run));
    assert_eq!(bodies.len(), 5, "{}", explain(&run));
    assert!(run.stderr.contains("retrying"), "{}", run.stderr);
    assert!(
        !run.stderr.contains('\x1b'),
        "colour off a terminal: {}",
        run.stderr
    );
    let ws = f.keyed("workspaces", "reflect");
    let notes = std::fs::read_to_string(ws.join("notes.txt")).unwrap();
    assert_eq!(notes, "key <redacted> and <redacted>\n");
    assert!(ws.join("<redacted>.txt").is_file());
    let r = f.report("reflect");
    assert_eq!(r["summary"], "the key is <redacted>", "{r:#}");
    f.assert_no_key(&[&run], &bodies);
    f.assert_untouched(&before);
}

/// A repository's `vouch.toml` that points the key at its own host is refused before anything is sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repository_cannot_choose_where_the_key_goes() {
    let f = Fixture::new("exfil");
    let evil = Server::start(vec![]).await;
    f.repo.write(
        "vouch.toml",
        &format!("endpoint = \"{}\"\napi_key_env = \"{KEY_VAR}\"\n", evil.url),
    );
    f.repo.commit("choose where keys go");
    let before = f.state();
    let mut full = vec![
        "run".to_string(),
        "--repo".into(),
        f.repo.dir.display().to_string(),
        "--task".into(),
        f.task.clone(),
    ];
    full.push("--max-turns".into());
    full.push("1".into());
    let tmp = f.repo.tmp.path().to_path_buf();
    let data = f.repo.data();
    let run = tokio::task::spawn_blocking(move || {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_vouch"))
            .args(&full)
            .current_dir(&tmp)
            .env("VOUCH_DATA", &data)
            .env("XDG_CONFIG_HOME", tmp.join("config"))
            .env(KEY_VAR, KEY)
            .env_remove("VOUCH_ENDPOINT")
            .env_remove("VOUCH_API_KEY_ENV")
            .envs(crate::util::git_env())
            .output()
            .unwrap();
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    })
    .await
    .unwrap();
    let bodies = evil.finish();
    assert_eq!(run.code, 2, "{}", explain(&run));
    assert!(run.stderr.contains("may not set"), "{}", run.stderr);
    assert!(bodies.is_empty(), "the repository's host got a request");
    assert!(!Path::new(&f.repo.data()).join("workspaces").exists());
    f.assert_untouched(&before);
}

/// A branch moved under a stopped run no longer descends from the base vouch recorded: it is not resumed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_branch_moved_off_its_recorded_base_is_not_resumed() {
    let f = Fixture::new("moved");
    let server = Server::start(vec![call(
        1,
        "write_file",
        json!({"path": "calc.py", "content": BROKEN}),
    )])
    .await;
    let run = f.run(&server, &[]).await;
    server.finish();
    assert_eq!(run.code, 3, "{}", explain(&run));
    // An unrelated history at the branch: what a forged base would have pointed the gate at.
    let ws = f.keyed("workspaces", "moved");
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(&ws)
            .envs(crate::util::git_env())
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
    };
    git(&["checkout", "-q", "--orphan", "forged"]);
    git(&["add", "-A"]);
    git(&["commit", "-q", "-m", "forged base"]);
    git(&["branch", "-f", "vouch/moved", "forged"]);
    git(&["checkout", "-q", "vouch/moved"]);
    let server = Server::start(vec![call(
        2,
        "submit",
        json!({"verdict": "GO", "summary": "fixed"}),
    )])
    .await;
    let resumed = f.run(&server, &["--resume"]).await;
    let bodies = server.finish();
    assert_eq!(resumed.code, 2, "{}", explain(&resumed));
    assert!(
        resumed.stderr.contains("does not descend from the base"),
        "{}",
        resumed.stderr
    );
    assert!(bodies.is_empty());
}

/// Run from inside the user's checkout (the usual way), vouch leaves its `git status` as it was; against a
/// dead endpoint it makes no worktree and no branch at all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_users_checkout_stays_as_it_was_and_a_dead_endpoint_leaves_nothing() {
    let f = Fixture::new("inside");
    let before = f.state();
    let dead = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", l.local_addr().unwrap())
    };
    let run = f.run_at(&dead, &[], &f.repo.dir).await;
    assert_eq!(run.code, 3, "{}", explain(&run));
    assert!(
        run.stderr.contains("no worktree or branch was made"),
        "{}",
        explain(&run)
    );
    assert_eq!(f.repo.git(&["branch", "--list", "vouch/*"]), "");
    assert!(!f.keyed("workspaces", "inside").exists());
    assert_eq!(f.report("inside")["status"], "error");

    let server = Server::start(vec![
        call(
            1,
            "write_file",
            json!({"path": "notes.txt", "content": "n\n"}),
        ),
        call(2, "submit", json!({"verdict": "NO-GO", "summary": "no"})),
    ])
    .await;
    let run = f.run_at(&server.url, &[], &f.repo.dir).await;
    server.finish();
    assert_eq!(run.code, 1, "{}", explain(&run));
    assert_eq!(f.repo.git(&["status", "--porcelain", "--ignored"]), "");
    assert!(f.keyed("workspaces", "inside").join("notes.txt").is_file());
    f.assert_untouched(&before);
}

/// `-q` leaves only errors on stderr: a retried request's warning is not printed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quiet_prints_no_warnings() {
    let f = Fixture::new("quiet");
    let server = Server::start(vec![
        Answer::Body(json!({"error": {"code": 503, "message": "busy"}})),
        call(1, "submit", json!({"verdict": "NO-GO", "summary": "no"})),
    ])
    .await;
    let run = f.run(&server, &["-q"]).await;
    assert_eq!(server.finish().len(), 2);
    assert_eq!(run.code, 1, "{}", explain(&run));
    assert!(
        !run.stderr.contains("retrying") && !run.stderr.contains("WARN"),
        "{}",
        run.stderr
    );
}

/// A call too large to run is answered, not run, and the records keep its size and hash, not its bytes; a
/// call whose arguments are not JSON, among others, gets its own error result and the others theirs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_and_unreadable_calls_are_answered_each_under_its_own_id() {
    let f = Fixture::new("sizes");
    let huge = "x".repeat(3 * 1024 * 1024);
    let raw = |id: &str, name: &str, args: &str| json!({"id": id, "type": "function", "function": {"name": name, "arguments": args}});
    let server = Server::start(vec![
        call(1, "write_file", json!({"path": "big.txt", "content": huge})),
        Answer::Body(json!({
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": "",
                "tool_calls": [
                    raw("r1", "read_file", "{\"path\": \"calc.py\"}"),
                    raw("r2", "write_file", "{\"path\": \"x.txt\", \"content\": "),
                    raw("r3", "read_file", "{\"path\": \"test_sub.py\"}"),
                ],
            }}],
        })),
        call(3, "submit", json!({"verdict": "NO-GO", "summary": "no"})),
    ])
    .await;
    let run = f.run(&server, &[]).await;
    let bodies = server.finish();
    assert_eq!(run.code, 1, "{}", explain(&run));
    let got = results(&bodies[1]);
    assert!(
        got["call_1_0"].contains("larger than"),
        "{}",
        got["call_1_0"]
    );
    // Nor do its bytes go back to the server.
    assert!(bodies[1].len() < 256 * 1024, "{} bytes", bodies[1].len());
    let got = results(&bodies[2]);
    assert!(got["r1"].contains("return a - b"), "{}", got["r1"]);
    assert!(got["r2"].contains("not valid JSON"), "{}", got["r2"]);
    assert!(got["r3"].contains("test_nothing"), "{}", got["r3"]);
    let ws = f.keyed("workspaces", "sizes");
    assert!(!ws.join("big.txt").exists() && !ws.join("x.txt").exists());
    let transcript = f.keyed("runs", "sizes").join("transcript.jsonl");
    let size = std::fs::metadata(&transcript).unwrap().len();
    assert!(size < 512 * 1024, "the transcript is {size} bytes");
    assert!(std::fs::read_to_string(&transcript)
        .unwrap()
        .contains("sha256"));
}

/// A run that stopped because its prompt overflowed the context is resumed: old tool outputs are elided
/// before the request goes out again, and the run says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_context_overflow_is_resumed_by_eliding_old_outputs_first() {
    let f = Fixture::new("overflow");
    let big: String = (0..300)
        .map(|i| format!("line {i} of filler text\n"))
        .collect();
    let server = Server::start(vec![
        call(1, "write_file", json!({"path": "big.txt", "content": big})),
        call(2, "read_file", json!({"path": "big.txt"})),
        Answer::Status(
            500,
            json!({"error": {"message": "the request exceeds the available context size"}}),
        ),
    ])
    .await;
    let run = f.run(&server, &["--context", "4000"]).await;
    server.finish();
    assert_eq!(run.code, 3, "{}", explain(&run));
    let server = Server::start(vec![call(
        3,
        "submit",
        json!({"verdict": "NO-GO", "summary": "no"}),
    )])
    .await;
    let resumed = f.run(&server, &["--context", "4000", "--resume"]).await;
    let bodies = server.finish();
    assert_eq!(resumed.code, 1, "{}", explain(&resumed));
    assert!(resumed.stderr.contains("eliding"), "{}", resumed.stderr);
    let got = results(&bodies[0]);
    assert!(
        got["call_2_0"].starts_with("[output of ") && got["call_2_0"].contains(" elided "),
        "{}",
        got["call_2_0"]
    );
}

/// A context overflow whose old tool outputs are all small (under the size a fresh turn elides) is still
/// resumable: the oldest outputs go anyway, so the request resent is smaller than the refused one and the
/// server, which refuses anything as large, answers it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumed_overflow_elides_small_outputs_and_sends_a_smaller_request() {
    let f = Fixture::new("overflow-small");
    let text = |c: char| -> String {
        (0..40)
            .map(|i| format!("{c} line {i:02} of filler\n"))
            .collect()
    };
    let server = Server::start(vec![
        call(
            1,
            "write_file",
            json!({"path": "a.txt", "content": text('a')}),
        ),
        call(
            2,
            "write_file",
            json!({"path": "b.txt", "content": text('b')}),
        ),
        call(3, "read_file", json!({"path": "a.txt"})),
        call(4, "read_file", json!({"path": "b.txt"})),
        Answer::Status(400, overflow_body(5000, 4096)),
    ])
    .await;
    let run = f.run(&server, &[]).await;
    let bodies = server.finish();
    assert_eq!(run.code, 3, "{}", explain(&run));
    let refused = bodies.last().unwrap().len();
    let outputs = results(bodies.last().unwrap());
    assert!(
        outputs["call_3_0"].len() < 2048 && outputs["call_3_0"].contains("a line 39"),
        "{}",
        outputs["call_3_0"]
    );
    // The resumed run's server refuses a request as large as the refused one.
    let server = Server::start(vec![Answer::Fits(
        refused - 512,
        Box::new(call(
            5,
            "submit",
            json!({"verdict": "NO-GO", "summary": "no"}),
        )),
    )])
    .await;
    let resumed = f.run(&server, &["--resume"]).await;
    let bodies = server.finish();
    assert_eq!(resumed.code, 1, "{}", explain(&resumed));
    assert_eq!(bodies.len(), 1, "{}", explain(&resumed));
    assert!(
        bodies[0].len() < refused - 512,
        "{} of {refused} bytes",
        bodies[0].len()
    );
    let got = results(&bodies[0]);
    assert!(
        got["call_3_0"].starts_with("[output of read_file a.txt elided"),
        "{}",
        got["call_3_0"]
    );
}

/// An overflow with no tool output left to elide (the task alone is too long) stops the resumed run with
/// that reason before it sends the same request again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumed_overflow_with_nothing_to_elide_stops_without_resending() {
    let f = Fixture::new("overflow-none");
    let server = Server::start(vec![Answer::Status(400, overflow_body(9000, 4096))]).await;
    let run = f.run(&server, &[]).await;
    assert_eq!(server.finish().len(), 1);
    assert_eq!(run.code, 3, "{}", explain(&run));
    let server = Server::start(vec![]).await;
    let resumed = f.run(&server, &["--resume"]).await;
    let bodies = server.finish();
    assert_eq!(resumed.code, 3, "{}", explain(&resumed));
    assert_eq!(
        bodies.len(),
        0,
        "the same request went out again: {}",
        explain(&resumed)
    );
    assert!(
        resumed.stderr.contains("no tool output is left to elide"),
        "{}",
        explain(&resumed)
    );
    assert_eq!(f.report("overflow-none")["stop_reason"], "model-error");
}

/// `--wall-time` stops a `run_tests` call whose tests would run for minutes, and the run with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_wall_time_stops_a_run_tests_call_that_would_run_for_minutes() {
    let f = Fixture::new("slowtests");
    let server = Server::start(vec![
        call(
            1,
            "write_file",
            json!({"path": "test_slow.py", "content": "import time\n\n\ndef test_slow():\n    time.sleep(300)\n"}),
        ),
        call(2, "run_tests", json!({})),
    ])
    .await;
    let started = std::time::Instant::now();
    let run = f.run(&server, &["--wall-time", "6s"]).await;
    server.finish();
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(run.code, 1, "{}", explain(&run));
    assert_eq!(f.report("slowtests")["stop_reason"], "wall-time");
}

/// A passing Rust test that writes bytes that are not UTF-8 to the real stdout (past libtest's capture) is
/// read lossily: its results are all there, and the change passes.
#[test]
fn a_test_printing_bytes_that_are_not_utf8_still_has_its_results_read() {
    let lib = "pub fn abs(x: i64) -> i64 {\n    if x < 0 {\n        x\n    } else {\n        x\n    }\n}\n";
    let repo = Repo::with_files(&[
        (
            "Cargo.toml",
            "[package]\nname = \"calc\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n",
        ),
        (".gitignore", "/target\n"),
        ("src/lib.rs", lib),
    ]);
    repo.write(
        "src/lib.rs",
        &lib.replacen("        x\n", "        -x\n", 1),
    );
    repo.write(
        "tests/abs.rs",
        "use std::io::Write;\n\n#[test]\nfn abs_of_negative_is_positive() {\n    let mut out = std::io::stdout();\n    out.write_all(b\"\\xff\\xfe\\n\").unwrap();\n    assert_eq!(calc::abs(-3), 3);\n}\n",
    );
    repo.commit("fix abs, with a noisy test");
    let g = repo.gate(&["--base", "HEAD~1", "--sandbox", "require"]);
    assert_eq!(g.verdict(), "pass", "{}", g.explain());
    assert_eq!(g.step("test")["tests"]["passed"], 1, "{}", g.explain());
}
