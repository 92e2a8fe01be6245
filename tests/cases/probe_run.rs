//! `vouch run`'s first look at an endpoint: the quick probe against a scripted llama-server, its result
//! cached and used (the tool mode, the call syntax learned from the chat template), and an unfit endpoint
//! stopped before any worktree or branch exists.

use std::sync::{Arc, Mutex};

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Router;
use serde_json::{json, Value};

use crate::util::{Repo, Run};

/// A template with a call syntax none of vouch's parsers knows.
const LEARNABLE: &str = r#"{%- for m in messages -%}
<|{{ m.role }}|>
{%- if m.tool_calls %}{% for tc in m.tool_calls %}<<invoke>>{{ tc.function.name }}<<with>>{{ tc.function.arguments | tojson }}<</invoke>>{% endfor %}{% else %}{{ m.content }}{% endif %}
{% endfor -%}"#;

/// Renders the wrapper and the name, never the arguments.
const DROPS_ARGUMENTS: &str = r#"{%- for m in messages -%}
<|im_start|>{{ m.role }}
{% if m.tool_calls %}{% for tc in m.tool_calls %}<tool_call>{{ tc.function.name }}</tool_call>{% endfor %}{% else %}{{ m.content }}{% endif %}<|im_end|>
{% endfor -%}"#;

#[derive(Clone)]
struct Server {
    template: &'static str,
    /// The agent's turns, in order; after the last, a 400 ends the run.
    turns: Vec<&'static str>,
    /// Chat request bodies, in order.
    seen: Arc<Mutex<Vec<Value>>>,
}

/// The probe's round trip asks for this; the agent never does.
fn is_probe(body: &Value) -> bool {
    body.to_string()
        .contains("Use the read_file tool to read the file src/main.rs")
}

async fn answer(State(s): State<Server>, req: Request) -> Response {
    let method = req.method().to_string();
    let path = req.uri().path().to_string();
    let bytes = axum::body::to_bytes(req.into_body(), usize::MAX)
        .await
        .unwrap_or_default();
    match (method.as_str(), path.as_str()) {
        ("GET", "/props") => axum::Json(json!({
            "default_generation_settings": {"n_ctx": 8192},
            "total_slots": 1,
            "chat_template": s.template,
            "chat_template_caps": {"supports_tools": true},
        }))
        .into_response(),
        ("GET", "/v1/models") => {
            axum::Json(json!({"data": [{"id": "scripted", "meta": {"n_ctx_train": 8192}}]}))
                .into_response()
        }
        ("POST", "/v1/chat/completions") => {
            let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
            let agent_turns = {
                let mut seen = s.seen.lock().unwrap();
                seen.push(body.clone());
                seen.iter().filter(|b| !is_probe(b)).count()
            };
            let content = if is_probe(&body) {
                "<<invoke>>read_file<<with>>{\"path\": \"src/main.rs\"}<</invoke>>"
            } else if let Some(turn) = s.turns.get(agent_turns - 1) {
                turn
            } else {
                // Ends the run: a 400 is not retried.
                return (
                    StatusCode::BAD_REQUEST,
                    axum::Json(json!({"error": {"message": "scripted end"}})),
                )
                    .into_response();
            };
            axum::Json(json!({
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": content}}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20},
            }))
            .into_response()
        }
        _ => (StatusCode::NOT_FOUND, "no").into_response(),
    }
}

const LOOK: &str = "Looking around.\n<<invoke>>list_files<<with>>{\"path\": \".\"}<</invoke>>";

async fn start(template: &'static str) -> (String, Server, tokio::task::JoinHandle<()>) {
    start_with(template, vec![LOOK]).await
}

async fn start_with(
    template: &'static str,
    turns: Vec<&'static str>,
) -> (String, Server, tokio::task::JoinHandle<()>) {
    let s = Server {
        template,
        turns,
        seen: Arc::default(),
    };
    let app = Router::new().fallback(answer).with_state(s.clone());
    let (url, task) = crate::util::serve(app).await;
    (url, s, task)
}

fn repo() -> Repo {
    Repo::with_files(&[
        ("NOTES_FILE.md", "notes\n"),
        ("src/main.rs", "fn main() {}\n"),
    ])
}

async fn run(repo: &Repo, url: &str, args: &[&str]) -> Run {
    let mut full: Vec<String> = [
        "run",
        "--repo",
        repo.dir.to_str().unwrap(),
        "--endpoint",
        url,
        "--author",
        "Agent <agent@example.com>",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
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
            .env_remove("VOUCH_TOOL_MODE")
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

fn probe_entries(repo: &Repo) -> Vec<Value> {
    std::fs::read_dir(repo.cache.join("probe"))
        .map(|d| {
            d.flatten()
                .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
                .map(|e| serde_json::from_str(&std::fs::read_to_string(e.path()).unwrap()).unwrap())
                .collect()
        })
        .unwrap_or_default()
}

/// The agent's requests after the first one: what the run sent back to the model.
fn followups(s: &Server) -> Vec<String> {
    let seen = s.seen.lock().unwrap();
    seen.iter()
        .filter(|b| !is_probe(b))
        .skip(1)
        .map(|b| b["messages"].to_string())
        .collect()
}

fn probes(s: &Server) -> usize {
    s.seen
        .lock()
        .unwrap()
        .iter()
        .filter(|b| is_probe(b))
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_run_probes_caches_and_recovers_calls_in_the_learned_syntax() {
    let repo = repo();
    let (url, server, task) = start(LEARNABLE).await;
    let first = run(&repo, &url, &["--prompt", "look around"]).await;
    assert_eq!(probes(&server), 2, "{}", first.stderr);
    assert!(first.stderr.contains("probed"), "{}", first.stderr);
    assert!(
        first.stderr.contains("(from the probe)"),
        "{}",
        first.stderr
    );
    assert!(
        first
            .stderr
            .contains("syntax learned from the chat template"),
        "{}",
        first.stderr
    );
    // The call in the learned syntax ran: its listing went back to the model.
    let sent = followups(&server);
    assert!(
        sent.first().is_some_and(|m| m.contains("NOTES_FILE.md")),
        "{sent:?}\n{}",
        first.stderr
    );
    let entries = probe_entries(&repo);
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert_eq!(entries[0]["version"], 1);
    assert_eq!(entries[0]["endpoint"], url.as_str());
    assert_eq!(entries[0]["learned"]["open"], "<<invoke>>");

    // The same endpoint and template again: no probe, the cached result.
    server.seen.lock().unwrap().clear();
    let second = run(&repo, &url, &["--prompt", "look again"]).await;
    assert_eq!(probes(&server), 0, "{}", second.stderr);
    assert!(
        second.stderr.contains("(from the cached probe)"),
        "{}",
        second.stderr
    );
    let sent = followups(&server);
    assert!(
        sent.first().is_some_and(|m| m.contains("NOTES_FILE.md")),
        "{sent:?}\n{}",
        second.stderr
    );

    // A configured tool mode wins, and the console says what the probe recommended.
    server.seen.lock().unwrap().clear();
    let third = run(
        &repo,
        &url,
        &["--prompt", "look once more", "--tool-mode", "native"],
    )
    .await;
    assert!(
        third
            .stderr
            .contains("tool mode native (configured; the cached probe recommends auto)"),
        "{}",
        third.stderr
    );
    task.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_template_that_drops_arguments_stops_the_run_before_any_worktree() {
    let repo = repo();
    let (url, server, task) = start(DROPS_ARGUMENTS).await;
    let before = repo.git(&["branch", "--list"]);
    let out = run(&repo, &url, &["--prompt", "look around"]).await;
    assert_eq!(out.code, 3, "{}", out.stderr);
    assert!(
        out.stderr.contains("drops tool-call arguments"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("--chat-template-file"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("--no-probe"), "{}", out.stderr);
    // Nothing was set up: no branch, no worktree, no agent request, nothing cached.
    assert_eq!(repo.git(&["branch", "--list"]), before);
    assert_eq!(
        repo.git(&["worktree", "list", "--porcelain"])
            .lines()
            .filter(|l| l.starts_with("worktree "))
            .count(),
        1
    );
    assert!(!repo.data().join("workspaces").exists());
    assert_eq!(
        server
            .seen
            .lock()
            .unwrap()
            .iter()
            .filter(|b| !is_probe(b))
            .count(),
        0
    );
    assert!(probe_entries(&repo).is_empty());

    // --no-probe runs anyway.
    let skipped = run(&repo, &url, &["--prompt", "look around", "--no-probe"]).await;
    assert!(skipped.stderr.contains("--no-probe"), "{}", skipped.stderr);
    assert!(
        server.seen.lock().unwrap().iter().any(|b| !is_probe(b)),
        "{}",
        skipped.stderr
    );
    task.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_with_an_eaten_opening_tag_or_glued_together_are_run() {
    let repo = repo();
    let eaten = "I will list the files.\n{\"name\": \"list_files\", \"arguments\": {\"path\": \".\"}}\n</tool_call>";
    let glued = "<tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\": \"NOTES_FILE.md\"}}</tool_call><tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\": \"src/main.rs\"}}</tool_call>";
    let (url, server, task) = start_with(LEARNABLE, vec![eaten, glued]).await;
    let out = run(
        &repo,
        &url,
        &[
            "--prompt",
            "look around",
            "--no-probe",
            "--tool-mode",
            "native",
        ],
    )
    .await;
    let sent = followups(&server);
    assert_eq!(sent.len(), 2, "{sent:?}\n{}", out.stderr);
    // The eaten-tag call ran: the listing went back to the model.
    assert!(sent[0].contains("NOTES_FILE.md"), "{}", sent[0]);
    // ...and its stray closing tag was cut from the reply the model sees again.
    assert!(!sent[0].contains("</tool_call>"), "{}", sent[0]);
    // Both glued calls ran: each file's text went back.
    assert!(sent[1].contains("notes"), "{}", sent[1]);
    assert!(sent[1].contains("fn main() {}"), "{}", sent[1]);
    task.abort();
}
