//! A scripted model server for many sessions at once: each conversation is keyed by the task title in its
//! first user message (`# Task: <title>`), gets its own queue of answers, and is checked on its own (each
//! request extends that session's previous one, tool results pair with the calls before them). A request
//! no script expects, or answers left unused, fail the test at [`ModelServer::finish`].

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Router;
use serde_json::{json, Value};

/// One canned answer to `POST /v1/chat/completions`.
#[derive(Clone, Debug)]
pub enum Answer {
    /// A 200 with this assistant message.
    Message(Value),
    /// A 200 with this message, after a delay.
    Slow(Duration, Value),
    /// A 503 to be retried at once, for every request of the session from now on: a server that is gone.
    DeadForever,
}

#[derive(Default)]
struct Session {
    answers: VecDeque<Answer>,
    /// Request bodies in order.
    seen: Vec<Value>,
}

#[derive(Default)]
struct Shared {
    sessions: BTreeMap<String, Session>,
    problems: Vec<String>,
    /// The answer to `GET /props` (llama-server's), else a 404.
    props: Option<Value>,
    /// Requests in flight right now, and the most there ever were.
    in_flight: usize,
    peak: usize,
}

/// The running server.
pub struct ModelServer {
    pub url: String,
    shared: Arc<Mutex<Shared>>,
    task: tokio::task::JoinHandle<()>,
}

impl ModelServer {
    /// Serves `scripts`: `(task title, answers)`.
    pub async fn start(scripts: Vec<(&str, Vec<Answer>)>) -> ModelServer {
        ModelServer::start_with_props(scripts, None).await
    }

    /// [`ModelServer::start`] answering `GET /props` with `props`, as llama-server does.
    pub async fn start_with_props(
        scripts: Vec<(&str, Vec<Answer>)>,
        props: Option<Value>,
    ) -> ModelServer {
        let mut shared = Shared {
            props,
            ..Shared::default()
        };
        for (title, answers) in scripts {
            shared.sessions.insert(
                title.to_string(),
                Session {
                    answers: answers.into(),
                    seen: vec![],
                },
            );
        }
        let shared = Arc::new(Mutex::new(shared));
        let app = Router::new().fallback(answer).with_state(shared.clone());
        let (url, task) = super::serve(app).await;
        ModelServer { url, shared, task }
    }

    /// The requests session `title` got so far.
    pub fn requests(&self, title: &str) -> Vec<Value> {
        let shared = self.shared.lock().unwrap();
        shared
            .sessions
            .get(title)
            .map(|s| s.seen.clone())
            .unwrap_or_default()
    }

    /// The sessions that got at least one request.
    pub fn started(&self) -> Vec<String> {
        let shared = self.shared.lock().unwrap();
        shared
            .sessions
            .iter()
            .filter(|(_, s)| !s.seen.is_empty())
            .map(|(k, _)| k.clone())
            .collect()
    }

    /// The most requests that were in flight at once.
    pub fn peak(&self) -> usize {
        self.shared.lock().unwrap().peak
    }

    /// Nothing unexpected (answers may be left: a run that was stopped); every session's requests by title.
    pub fn finish_stopped(self) -> BTreeMap<String, Vec<Value>> {
        self.task.abort();
        let shared = self.shared.lock().unwrap();
        assert!(
            shared.problems.is_empty(),
            "model server problems: {:#?}",
            shared.problems
        );
        shared
            .sessions
            .iter()
            .map(|(k, s)| (k.clone(), s.seen.clone()))
            .collect()
    }

    /// Nothing unexpected, every scripted answer used; every session's requests by title.
    pub fn finish(self) -> BTreeMap<String, Vec<Value>> {
        self.task.abort();
        let shared = self.shared.lock().unwrap();
        assert!(
            shared.problems.is_empty(),
            "model server problems: {:#?}",
            shared.problems
        );
        for (title, s) in &shared.sessions {
            let left = s
                .answers
                .iter()
                .filter(|a| !matches!(a, Answer::DeadForever))
                .count();
            assert_eq!(left, 0, "session `{title}`: {left} answers never asked for");
        }
        shared
            .sessions
            .iter()
            .map(|(k, s)| (k.clone(), s.seen.clone()))
            .collect()
    }
}

/// The title in the first user message, `# Task: <title>`.
fn title_of(body: &Value) -> Option<String> {
    let first = body["messages"]
        .as_array()?
        .iter()
        .find(|m| m["role"] == "user")?;
    let line = first["content"].as_str()?.lines().next()?;
    Some(line.strip_prefix("# Task: ")?.trim().to_string())
}

async fn answer(State(shared): State<Arc<Mutex<Shared>>>, req: Request) -> Response {
    let method = req.method().to_string();
    let path = req.uri().path().to_string();
    let bytes = axum::body::to_bytes(req.into_body(), usize::MAX)
        .await
        .unwrap_or_default();
    if method == "GET" && path == "/props" {
        // Without props, not llama-server: the client asks once and remembers; the backlog uses the cores.
        let props = shared.lock().unwrap().props.clone();
        return match props {
            Some(p) => axum::Json(p).into_response(),
            None => (StatusCode::NOT_FOUND, "no props").into_response(),
        };
    }
    if method != "POST" || path != "/v1/chat/completions" {
        shared
            .lock()
            .unwrap()
            .problems
            .push(format!("unexpected {method} {path}"));
        return (StatusCode::IM_A_TEAPOT, "unexpected").into_response();
    }
    let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    let next = {
        let mut sh = shared.lock().unwrap();
        let Some(title) = title_of(&body) else {
            sh.problems.push("a request without a task title".into());
            return (StatusCode::IM_A_TEAPOT, "no title").into_response();
        };
        let Some(session) = sh.sessions.get_mut(&title) else {
            sh.problems
                .push(format!("a request for unscripted task `{title}`"));
            return (StatusCode::IM_A_TEAPOT, "unscripted").into_response();
        };
        let problem = check(&body, session.seen.last());
        session.seen.push(body.clone());
        let next = match session.answers.front() {
            Some(Answer::DeadForever) => Some(Answer::DeadForever),
            _ => session.answers.pop_front(),
        };
        if let Some(p) = problem {
            sh.problems.push(format!("`{title}`: {p}"));
        }
        if next.is_none() {
            sh.problems
                .push(format!("`{title}`: a request after its script ended"));
        }
        sh.in_flight += 1;
        sh.peak = sh.peak.max(sh.in_flight);
        next
    };
    let response = match next {
        None => (StatusCode::IM_A_TEAPOT, "script ended").into_response(),
        Some(Answer::DeadForever) => Response::builder()
            .status(503)
            .header("retry-after", "0")
            .body(Body::from("gone"))
            .unwrap(),
        Some(Answer::Slow(delay, message)) => {
            tokio::time::sleep(delay).await;
            reply(message)
        }
        Some(Answer::Message(message)) => reply(message),
    };
    shared.lock().unwrap().in_flight -= 1;
    response
}

fn reply(message: Value) -> Response {
    Response::builder()
        .status(200)
        .header("content-type", "application/json")
        .body(Body::from(completion(message).to_string()))
        .unwrap()
}

/// The body of a `POST /v1/chat/completions` answer carrying `message` (100 prompt tokens, 10 completion).
pub fn completion(message: Value) -> Value {
    json!({
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 10},
    })
}

/// A new conversation (system and user message only), or one that extends the session's previous request;
/// tool results pair one to one with the calls of the assistant message before them.
fn check(body: &Value, previous: Option<&Value>) -> Option<String> {
    let messages = body["messages"].as_array()?;
    let mut expected: VecDeque<String> = VecDeque::new();
    for (i, m) in messages.iter().enumerate() {
        if m["role"] == "tool" {
            let id = m["tool_call_id"].as_str().unwrap_or_default();
            if expected.pop_front().as_deref() != Some(id) {
                return Some(format!("message {i}: tool result {id} pairs with no call"));
            }
        } else {
            if !expected.is_empty() {
                return Some(format!(
                    "message {i} comes before the results of {expected:?}"
                ));
            }
            if m["role"] == "assistant" {
                expected = m["tool_calls"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|c| c["id"].as_str().unwrap_or_default().to_string())
                    .collect();
            }
        }
    }
    let fresh = messages.iter().filter(|m| m["role"] != "system").count() == 1;
    match previous.and_then(|p| p["messages"].as_array()) {
        Some(prev) if !fresh => {
            let extends = messages.len() > prev.len()
                && messages
                    .iter()
                    .zip(prev)
                    .all(|(a, b)| a == b || a["role"] == "tool");
            (!extends).then(|| "the request does not extend the session's previous one".into())
        }
        _ => None,
    }
}

/// An assistant message with native tool calls `(name, arguments)`, ids `call_<n>_<i>`: the message every
/// scripted model server of the tests answers a tool call with.
pub fn tool_calls(n: usize, list: &[(&str, Value)]) -> Value {
    json!({
        "role": "assistant",
        "content": "",
        "tool_calls": list.iter().enumerate().map(|(i, (name, args))| json!({
            "id": format!("call_{n}_{i}"),
            "type": "function",
            "function": {"name": name, "arguments": args.to_string()},
        })).collect::<Vec<_>>(),
    })
}

/// An answer with native tool calls `(name, arguments)`, ids `call_<n>_<i>`.
pub fn calls(n: usize, list: &[(&str, Value)]) -> Answer {
    Answer::Message(tool_calls(n, list))
}

pub fn call(n: usize, name: &str, args: Value) -> Answer {
    calls(n, &[(name, args)])
}

/// The first user message of a request: the task as the model read it.
pub fn task_text(request: &Value) -> String {
    request["messages"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["role"] == "user"))
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_string()
}

/// The Python project most scripted runs work on: `calc.py` whose `add()` subtracts, its test of `sub()`,
/// the fix, a test that bites the bug and one that does not.
pub mod calc {
    use serde_json::{json, Value};

    pub const CALC: &str =
        "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n";
    pub const FIXED: &str =
        "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n";
    pub const OLD_TEST: &str =
        "from calc import sub\n\n\ndef test_sub():\n    assert sub(3, 1) == 2\n";
    pub const NEW_TEST: &str =
        "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n";
    pub const INERT_TEST: &str =
        "from calc import add\n\n\ndef test_add_zero():\n    assert add(0, 0) == 0\n";

    /// The three answers of a run that fixes `add()`, writes `test` as `path` and says GO (calls
    /// `call_1_0` to `call_3_0`).
    pub fn fix_with(path: &str, test: &str) -> Vec<Value> {
        vec![
            super::tool_calls(
                1,
                &[("write_file", json!({"path": "calc.py", "content": FIXED}))],
            ),
            super::tool_calls(2, &[("write_file", json!({"path": path, "content": test}))]),
            super::tool_calls(
                3,
                &[("submit", json!({"verdict": "GO", "summary": "fixed"}))],
            ),
        ]
    }
}
