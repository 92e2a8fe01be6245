//! The model client over real HTTP: a scripted OpenAI-compatible server that replays canned answers in order
//! and fails the test on any unexpected request, then the real llama-server with SmolLM2.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use pretty_assertions::assert_eq;
use serde_json::{json, Value};

use vouch::model::{
    ChatMessage, ChatRequest, Client, Mode, ModelConfig, ModelError, ServerKind, ToolCall, ToolMode,
};

use crate::util::llama;

// ---------------------------------------------------------------------------------------------------------
// The scripted server.

/// A canned answer.
enum Reply {
    Json(u16, Value),
    /// Status, extra headers, body.
    WithHeaders(u16, Vec<(&'static str, &'static str)>, Value),
    /// SSE events (`data:` payloads), each sent as its own chunk.
    Sse(Vec<String>),
    /// SSE events, then the connection is dropped without ending the stream.
    CutSse(Vec<String>),
    /// SSE events, then silence with the connection open.
    StalledSse(Vec<String>),
    /// A 200 that comes only after this long.
    Slow(Duration, Value),
    /// SSE content chunks, one every this long, for ever.
    Drip(Duration),
}

struct Step {
    method: &'static str,
    path: &'static str,
    reply: Reply,
}

fn post(reply: Reply) -> Step {
    Step {
        method: "POST",
        path: "/v1/chat/completions",
        reply,
    }
}

/// A request the server received.
#[derive(Debug)]
struct Seen {
    method: String,
    path: String,
    headers: HeaderMap,
    body: Value,
}

#[derive(Clone, Default)]
struct Script {
    steps: Arc<Mutex<VecDeque<Step>>>,
    seen: Arc<Mutex<Vec<Seen>>>,
    unexpected: Arc<Mutex<Vec<String>>>,
}

struct Scripted {
    url: String,
    script: Script,
    task: tokio::task::JoinHandle<()>,
}

impl Scripted {
    async fn start(steps: Vec<Step>) -> Scripted {
        let script = Script {
            steps: Arc::new(Mutex::new(steps.into())),
            ..Script::default()
        };
        let app = Router::new().fallback(answer).with_state(script.clone());
        let (url, task) = crate::util::serve(app).await;
        Scripted { url, script, task }
    }

    /// Every step was used and no request was unexpected; returns the requests.
    fn finish(self) -> Vec<Seen> {
        self.task.abort();
        let unexpected = self.script.unexpected.lock().unwrap().clone();
        assert!(
            unexpected.is_empty(),
            "unexpected requests: {unexpected:#?}"
        );
        let left: Vec<String> = self
            .script
            .steps
            .lock()
            .unwrap()
            .iter()
            .map(|s| format!("{} {}", s.method, s.path))
            .collect();
        assert!(left.is_empty(), "expected requests never came: {left:?}");
        std::mem::take(&mut *self.script.seen.lock().unwrap())
    }
}

async fn answer(State(script): State<Script>, req: Request) -> Response {
    let method = req.method().to_string();
    let path = req.uri().path().to_string();
    let headers = req.headers().clone();
    let bytes = axum::body::to_bytes(req.into_body(), usize::MAX)
        .await
        .unwrap_or_default();
    let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    let step = script.steps.lock().unwrap().pop_front();
    let step = match step {
        Some(s) if s.method == method && s.path == path => s,
        other => {
            script.unexpected.lock().unwrap().push(format!(
                "{method} {path} (expected {:?})",
                other.map(|s| format!("{} {}", s.method, s.path))
            ));
            return (StatusCode::IM_A_TEAPOT, "unexpected request").into_response();
        }
    };
    script.seen.lock().unwrap().push(Seen {
        method,
        path,
        headers,
        body,
    });
    match step.reply {
        Reply::Json(status, v) => json_reply(status, &[], v),
        Reply::WithHeaders(status, headers, v) => json_reply(status, &headers, v),
        Reply::Sse(events) => sse_reply(events, true),
        Reply::CutSse(events) => sse_reply(events, false),
        Reply::Slow(delay, v) => {
            tokio::time::sleep(delay).await;
            json_reply(200, &[], v)
        }
        Reply::Drip(every) => {
            let drip = futures::stream::unfold((), move |()| async move {
                tokio::time::sleep(every).await;
                let event = chunk(json!({"content": "."}));
                Some((
                    Ok::<_, std::io::Error>(Bytes::from(format!("data: {event}\n\n"))),
                    (),
                ))
            });
            Response::builder()
                .status(200)
                .header("content-type", "text/event-stream")
                .body(Body::from_stream(drip))
                .unwrap()
        }
        Reply::StalledSse(events) => {
            let head = futures::stream::iter(
                events
                    .into_iter()
                    .map(|e| Ok::<_, std::io::Error>(Bytes::from(format!("data: {e}\n\n")))),
            );
            Response::builder()
                .status(200)
                .header("content-type", "text/event-stream")
                .body(Body::from_stream(head.chain(futures::stream::pending())))
                .unwrap()
        }
    }
}

fn json_reply(status: u16, headers: &[(&str, &str)], v: Value) -> Response {
    let mut b = Response::builder()
        .status(status)
        .header("content-type", "application/json");
    for (k, v) in headers {
        b = b.header(*k, *v);
    }
    b.body(Body::from(v.to_string())).unwrap()
}

fn sse_reply(events: Vec<String>, complete: bool) -> Response {
    let mut items: Vec<Result<Bytes, std::io::Error>> = events
        .into_iter()
        .map(|e| Ok(Bytes::from(format!("data: {e}\n\n"))))
        .collect();
    if !complete {
        items.push(Err(std::io::Error::other("connection dropped")));
    }
    let stream = futures::stream::iter(items).then(|item| async move {
        tokio::time::sleep(Duration::from_millis(5)).await;
        item
    });
    Response::builder()
        .status(200)
        .header("content-type", "text/event-stream")
        .body(Body::from_stream(stream))
        .unwrap()
}

use futures::StreamExt as _;

// ---------------------------------------------------------------------------------------------------------
// Helpers.

fn config(url: &str) -> ModelConfig {
    let mut cfg = ModelConfig::new(url, "test-model");
    cfg.server = ServerKind::Other;
    cfg.tool_mode = ToolMode::Native;
    cfg.stream = false;
    cfg.backoff_base = Duration::from_millis(10);
    cfg.backoff_max = Duration::from_millis(50);
    cfg.request_timeout = Duration::from_secs(20);
    cfg.idle_timeout = Duration::from_secs(10);
    cfg
}

fn tools() -> Vec<Value> {
    vec![
        json!({"type": "function", "function": {"name": "read_file", "description": "Read a file.",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}}),
        json!({"type": "function", "function": {"name": "submit", "description": "Finish.",
            "parameters": {"type": "object", "properties": {"summary": {"type": "string"}}, "required": ["summary"]}}}),
    ]
}

fn ask(text: &str, tools: Vec<Value>) -> ChatRequest {
    ChatRequest {
        messages: vec![
            ChatMessage::system("You are a coding agent."),
            ChatMessage::user(text),
        ],
        tools,
        temperature: None,
    }
}

fn completion(message: Value, finish: &str) -> Value {
    json!({
        "id": "chatcmpl-1", "object": "chat.completion", "model": "test-model",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15},
    })
}

fn chunk(delta: Value) -> String {
    json!({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": null}]})
        .to_string()
}

fn finish_chunk(reason: &str) -> String {
    json!({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}, "finish_reason": reason}]})
        .to_string()
}

fn usage_chunk() -> String {
    json!({"object": "chat.completion.chunk", "choices": [],
        "usage": {"prompt_tokens": 20, "completion_tokens": 4, "prompt_tokens_details": {"cached_tokens": 16}},
        "timings": {"cache_n": 16, "prompt_n": 4, "predicted_n": 4}})
    .to_string()
}

// ---------------------------------------------------------------------------------------------------------
// The scripted cases.

#[tokio::test]
async fn a_plain_reply_is_read_with_its_usage() {
    let server = Scripted::start(vec![post(Reply::Json(
        200,
        completion(json!({"role": "assistant", "content": "Hello."}), "stop"),
    ))])
    .await;
    let client = Client::new(config(&server.url)).unwrap();
    let turn = client.chat(&ask("hi", vec![])).await.unwrap();
    assert_eq!(turn.content, "Hello.");
    assert_eq!(turn.finish_reason.as_deref(), Some("stop"));
    assert_eq!(turn.usage.map(|u| (u.prompt, u.completion)), Some((12, 3)));
    assert!(turn.calls.is_empty());
    let seen = server.finish();
    assert_eq!(
        seen[0].body,
        json!({
            "model": "test-model",
            "stream": false,
            "messages": [
                {"role": "system", "content": "You are a coding agent."},
                {"role": "user", "content": "hi"},
            ],
        })
    );
}

#[tokio::test]
async fn a_streamed_reply_in_several_chunks_is_joined() {
    let server = Scripted::start(vec![post(Reply::Sse(vec![
        chunk(json!({"role": "assistant", "content": null})),
        chunk(json!({"reasoning_content": "Think "})),
        chunk(json!({"reasoning_content": "first."})),
        chunk(json!({"content": "Hel"})),
        chunk(json!({"content": "lo, "})),
        chunk(json!({"content": "world."})),
        finish_chunk("stop"),
        usage_chunk(),
        "[DONE]".into(),
    ]))])
    .await;
    let mut cfg = config(&server.url);
    cfg.stream = true;
    let client = Client::new(cfg).unwrap();
    let turn = client.chat(&ask("hi", vec![])).await.unwrap();
    assert_eq!(turn.content, "Hello, world.");
    assert_eq!(turn.reasoning, "Think first.");
    assert_eq!(turn.finish_reason.as_deref(), Some("stop"));
    let usage = turn.usage.unwrap();
    assert_eq!(
        (usage.prompt, usage.completion, usage.cached),
        (20, 4, Some(16))
    );
    assert_eq!(turn.timings.unwrap()["prompt_n"], 4);
    let seen = server.finish();
    assert_eq!(seen[0].body["stream"], true);
    assert_eq!(
        seen[0].body["stream_options"],
        json!({"include_usage": true})
    );
}

#[tokio::test]
async fn native_tool_call_fragments_across_sse_chunks_are_joined() {
    let call = |v: Value| chunk(json!({"tool_calls": [v]}));
    let server = Scripted::start(vec![post(Reply::Sse(vec![
        chunk(json!({"role": "assistant", "content": ""})),
        call(json!({"index": 0, "id": "Abc123", "type": "function",
            "function": {"name": "read_file", "arguments": ""}})),
        call(json!({"index": 0, "function": {"arguments": "{\"pa"}})),
        call(json!({"index": 0, "function": {"arguments": "th\": \"src/"}})),
        call(json!({"index": 0, "function": {"arguments": "main.rs\"}"}})),
        finish_chunk("tool_calls"),
        usage_chunk(),
        "[DONE]".into(),
    ]))])
    .await;
    let mut cfg = config(&server.url);
    cfg.stream = true;
    let client = Client::new(cfg).unwrap();
    let turn = client.chat(&ask("read main", tools())).await.unwrap();
    assert_eq!(
        turn.calls,
        vec![ToolCall {
            id: "Abc123".into(),
            name: "read_file".into(),
            arguments: json!({"path": "src/main.rs"}),
        }]
    );
    assert_eq!(turn.content, "");
    assert!(!turn.recovered);
    assert_eq!(turn.mode, Mode::Native);
    assert_eq!(turn.finish_reason.as_deref(), Some("tool_calls"));
    let seen = server.finish();
    assert_eq!(seen[0].body["tools"], Value::Array(tools()));
    assert!(seen[0].body.get("response_format").is_none());
}

#[tokio::test]
async fn a_laguna_call_leaked_into_the_content_is_recovered() {
    let leaked =
        "<tool_call>read_file<arg_key>path</arg_key><arg_value>a.go</arg_value></tool_call>";
    let server = Scripted::start(vec![post(Reply::Json(
        200,
        completion(json!({"role": "assistant", "content": leaked}), "stop"),
    ))])
    .await;
    let client = Client::new(config(&server.url)).unwrap();
    let turn = client.chat(&ask("read a.go", tools())).await.unwrap();
    assert_eq!(
        turn.calls,
        vec![ToolCall {
            id: "vouch_1".into(),
            name: "read_file".into(),
            arguments: json!({"path": "a.go"}),
        }]
    );
    assert!(turn.recovered);
    assert_eq!(turn.content, "");
    assert_eq!(turn.finish_reason.as_deref(), Some("stop"));
    server.finish();
}

#[tokio::test]
async fn a_500_is_retried_and_the_next_answer_used() {
    let server = Scripted::start(vec![
        post(Reply::Json(
            500,
            json!({"error": {"code": 500, "message": "slot busy", "type": "server_error"}}),
        )),
        post(Reply::Json(
            200,
            completion(json!({"role": "assistant", "content": "ok"}), "stop"),
        )),
    ])
    .await;
    let client = Client::new(config(&server.url)).unwrap();
    let turn = client.chat(&ask("hi", vec![])).await.unwrap();
    assert_eq!(turn.content, "ok");
    let seen = server.finish();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0].body, seen[1].body);
}

#[tokio::test]
async fn a_429_waits_for_retry_after() {
    let server = Scripted::start(vec![
        post(Reply::WithHeaders(
            429,
            vec![("retry-after", "1")],
            json!({"error": {"message": "too many requests"}}),
        )),
        post(Reply::Json(
            200,
            completion(json!({"role": "assistant", "content": "ok"}), "stop"),
        )),
    ])
    .await;
    let client = Client::new(config(&server.url)).unwrap();
    let started = Instant::now();
    let turn = client.chat(&ask("hi", vec![])).await.unwrap();
    assert_eq!(turn.content, "ok");
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
    server.finish();
}

#[tokio::test]
async fn a_400_is_not_retried_and_keeps_the_servers_message() {
    let server = Scripted::start(vec![post(Reply::Json(
        400,
        json!({"error": {"code": 400, "message": "'messages' must be an array", "type": "invalid_request_error"}}),
    ))])
    .await;
    let client = Client::new(config(&server.url)).unwrap();
    let err = client.chat(&ask("hi", vec![])).await.unwrap_err();
    assert!(
        matches!(&err, ModelError::BadRequest { status: 400, message } if message == "'messages' must be an array"),
        "{err:?}"
    );
    assert_eq!(server.finish().len(), 1);
}

#[tokio::test]
async fn a_stream_cut_mid_reply_is_a_clear_error() {
    let server = Scripted::start(vec![post(Reply::CutSse(vec![
        chunk(json!({"role": "assistant", "content": "Hel"})),
        chunk(json!({"content": "lo"})),
    ]))])
    .await;
    let mut cfg = config(&server.url);
    cfg.stream = true;
    let client = Client::new(cfg).unwrap();
    let err = client.chat(&ask("hi", vec![])).await.unwrap_err();
    assert!(matches!(err, ModelError::StreamCut { .. }), "{err:?}");
    assert!(err.to_string().contains("cut off"), "{err}");
    assert!(err.hint().is_some());
    assert_eq!(server.finish().len(), 1);
}

#[tokio::test]
async fn a_stream_that_goes_silent_times_out() {
    let server = Scripted::start(vec![post(Reply::StalledSse(vec![chunk(
        json!({"role": "assistant", "content": "Hel"}),
    )]))])
    .await;
    let mut cfg = config(&server.url);
    cfg.stream = true;
    cfg.idle_timeout = Duration::from_millis(300);
    let client = Client::new(cfg).unwrap();
    let err = client.chat(&ask("hi", vec![])).await.unwrap_err();
    assert!(
        matches!(err, ModelError::Timeout { after, .. } if after == Duration::from_millis(300)),
        "{err:?}"
    );
    assert!(err.to_string().contains("went silent"), "{err}");
    assert_eq!(server.finish().len(), 1);
}

#[tokio::test]
async fn a_stream_that_drips_for_ever_ends_at_the_overall_deadline() {
    let server = Scripted::start(vec![post(Reply::Drip(Duration::from_millis(50)))]).await;
    let mut cfg = config(&server.url);
    cfg.stream = true;
    cfg.idle_timeout = Duration::from_secs(5);
    cfg.stream_deadline = Duration::from_millis(600);
    let client = Client::new(cfg).unwrap();
    let started = Instant::now();
    let err = client.chat(&ask("hi", vec![])).await.unwrap_err();
    assert!(
        matches!(err, ModelError::Timeout { after, .. } if after == Duration::from_millis(600)),
        "{err:?}"
    );
    assert!(err.to_string().contains("overall deadline"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(4));
    assert_eq!(server.finish().len(), 1);
}

#[tokio::test]
async fn a_props_probe_that_timed_out_is_not_asked_again() {
    let props = Step {
        method: "GET",
        path: "/props",
        reply: Reply::Slow(Duration::from_secs(3), json!({})),
    };
    let ok = || {
        post(Reply::Json(
            200,
            completion(json!({"role": "assistant", "content": "hi"}), "stop"),
        ))
    };
    let server = Scripted::start(vec![props, ok(), ok()]).await;
    let mut cfg = config(&server.url);
    cfg.server = ServerKind::Detect;
    cfg.request_timeout = Duration::from_millis(400);
    let client = Client::new(cfg).unwrap();
    let started = Instant::now();
    client.chat(&ask("hi", vec![])).await.unwrap();
    client.chat(&ask("hi", vec![])).await.unwrap();
    // One probe's wait, not one per turn.
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    let seen = server.finish();
    assert_eq!(seen.iter().filter(|s| s.path == "/props").count(), 1);
}

#[tokio::test]
async fn a_retry_after_beyond_the_time_left_ends_the_request_at_once() {
    let server = Scripted::start(vec![post(Reply::WithHeaders(
        429,
        vec![("retry-after", "120")],
        json!({"error": {"message": "slow down"}}),
    ))])
    .await;
    let client = Client::new(config(&server.url)).unwrap();
    client.set_deadline(Some(std::time::Instant::now() + Duration::from_secs(5)));
    let started = Instant::now();
    let err = client.chat(&ask("hi", vec![])).await.unwrap_err();
    assert!(
        matches!(err, ModelError::RetryPastDeadline { retry_after, .. } if retry_after == Duration::from_secs(120)),
        "{err:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(server.finish().len(), 1);
}

#[tokio::test]
async fn a_call_with_unreadable_arguments_keeps_its_place_and_the_others_their_ids() {
    let message = json!({"role": "assistant", "content": "", "tool_calls": [
        {"id": "a", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\": \"x\"}"}},
        {"id": "b", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\": "}},
        {"id": "c", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\": \"z\"}"}},
    ]});
    let server = Scripted::start(vec![post(Reply::Json(
        200,
        completion(message, "tool_calls"),
    ))])
    .await;
    let mut cfg = config(&server.url);
    cfg.max_tokens = Some(77);
    let client = Client::new(cfg).unwrap();
    let turn = client.chat(&ask("hi", tools())).await.unwrap();
    let got: Vec<(String, Value)> = turn
        .calls
        .iter()
        .map(|c| (c.id.clone(), c.arguments.clone()))
        .collect();
    assert_eq!(
        got,
        vec![
            ("a".to_string(), json!({"path": "x"})),
            ("b".to_string(), json!("{\"path\": ")),
            ("c".to_string(), json!({"path": "z"})),
        ]
    );
    let seen = server.finish();
    assert_eq!(seen[0].body["max_tokens"], 77);
}

#[tokio::test]
async fn a_reply_slower_than_the_request_timeout_is_a_timeout_and_not_retried() {
    let server = Scripted::start(vec![post(Reply::Slow(
        Duration::from_secs(2),
        completion(json!({"role": "assistant", "content": "late"}), "stop"),
    ))])
    .await;
    let mut cfg = config(&server.url);
    cfg.request_timeout = Duration::from_millis(300);
    let client = Client::new(cfg).unwrap();
    let err = client.chat(&ask("hi", vec![])).await.unwrap_err();
    assert!(matches!(err, ModelError::Timeout { .. }), "{err:?}");
    assert_eq!(server.finish().len(), 1);
}

#[tokio::test]
async fn context_overflow_and_unknown_models_are_classified_and_not_retried() {
    let server = Scripted::start(vec![
        post(Reply::Json(
            500,
            json!({"error": {"code": 500, "message": "the request exceeds the available context size, try increasing it", "type": "server_error"}}),
        )),
        post(Reply::Json(
            404,
            json!({"error": {"message": "model 'qwen3' not found", "type": "not_found_error"}}),
        )),
    ])
    .await;
    let client = Client::new(config(&server.url)).unwrap();
    let err = client.chat(&ask("hi", vec![])).await.unwrap_err();
    assert!(matches!(err, ModelError::ContextOverflow { .. }), "{err:?}");
    assert!(err.hint().unwrap().contains("-c"));
    let err = client.chat(&ask("hi", vec![])).await.unwrap_err();
    assert!(matches!(err, ModelError::ModelNotFound { .. }), "{err:?}");
    assert!(err.to_string().contains("test-model"), "{err}");
    assert_eq!(server.finish().len(), 2);
}

/// A port nothing listens on.
fn closed_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

#[tokio::test]
async fn an_unreachable_server_is_named_with_what_to_do() {
    let port = closed_port();
    let mut cfg = config(&format!("http://127.0.0.1:{port}"));
    cfg.max_retries = 2;
    let client = Client::new(cfg).unwrap();
    let err = client.chat(&ask("hi", vec![])).await.unwrap_err();
    assert!(matches!(err, ModelError::Unreachable { .. }), "{err:?}");
    assert!(
        err.to_string().contains(&format!(
            "cannot reach the model server at 127.0.0.1:{port}"
        )),
        "{err}"
    );
    let hint = err.hint().unwrap();
    assert!(
        hint.contains("start the model server") && hint.contains("--endpoint"),
        "{hint}"
    );
}

#[tokio::test]
async fn the_constrained_mode_sends_a_schema_and_no_tools() {
    let server = Scripted::start(vec![post(Reply::Json(
        200,
        completion(
            json!({"role": "assistant", "content": "{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.go\"}}"}),
            "stop",
        ),
    ))])
    .await;
    let mut cfg = config(&server.url);
    cfg.tool_mode = ToolMode::Constrained;
    let client = Client::new(cfg).unwrap();
    assert_eq!(client.mode(), Mode::Constrained);
    let turn = client.chat(&ask("read a.go", tools())).await.unwrap();
    assert_eq!(turn.mode, Mode::Constrained);
    assert_eq!(turn.calls.len(), 1);
    assert_eq!(turn.calls[0].name, "read_file");
    assert_eq!(turn.calls[0].arguments, json!({"path": "a.go"}));
    let seen = server.finish();
    let body = &seen[0].body;
    assert!(body.get("tools").is_none(), "{body}");
    assert_eq!(
        body["response_format"],
        json!({
            "type": "json_schema",
            "json_schema": {
                "name": "tool_call",
                "schema": {"oneOf": [
                    {"type": "object",
                     "properties": {"name": {"const": "read_file"},
                                    "arguments": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}},
                     "required": ["name", "arguments"]},
                    {"type": "object",
                     "properties": {"name": {"const": "submit"},
                                    "arguments": {"type": "object", "properties": {"summary": {"type": "string"}}, "required": ["summary"]}},
                     "required": ["name", "arguments"]},
                ]},
            },
        })
    );
    let system = body["messages"][0]["content"].as_str().unwrap();
    assert!(system.starts_with("You are a coding agent."), "{system}");
    assert!(system.contains("- read_file: Read a file."), "{system}");
}

#[tokio::test]
async fn auto_switches_to_constrained_when_props_says_the_template_has_no_tools() {
    let server = Scripted::start(vec![
        Step {
            method: "GET",
            path: "/props",
            reply: Reply::Json(
                200,
                json!({"default_generation_settings": {"n_ctx": 8192}, "total_slots": 4,
                    "chat_template_caps": {"supports_tools": false, "supports_tool_calls": false}}),
            ),
        },
        post(Reply::Json(
            200,
            completion(
                json!({"role": "assistant", "content": "{\"name\": \"submit\", \"arguments\": {\"summary\": \"done\"}}"}),
                "stop",
            ),
        )),
    ])
    .await;
    let mut cfg = config(&server.url);
    cfg.server = ServerKind::Detect;
    cfg.tool_mode = ToolMode::Auto;
    let client = Client::new(cfg).unwrap();
    assert_eq!(client.mode(), Mode::Native);
    let turn = client.chat(&ask("finish", tools())).await.unwrap();
    assert_eq!(client.mode(), Mode::Constrained);
    assert_eq!(turn.mode, Mode::Constrained);
    assert_eq!(turn.calls[0].arguments, json!({"summary": "done"}));
    let info = client.server().unwrap();
    assert!(info.llama_server);
    assert_eq!((info.supports_tools, info.n_ctx), (Some(false), Some(8192)));
    let seen = server.finish();
    assert_eq!(
        (seen[0].method.as_str(), seen[0].path.as_str()),
        ("GET", "/props")
    );
    assert_eq!(
        (seen[1].method.as_str(), seen[1].path.as_str()),
        ("POST", "/v1/chat/completions")
    );
    let body = &seen[1].body;
    assert!(body.get("tools").is_none());
    assert!(body.get("response_format").is_some());
    assert_eq!(body["cache_prompt"], true, "llama-server gets cache_prompt");
}

#[tokio::test]
async fn auto_switches_to_constrained_only_after_three_replies_in_a_row_without_a_call() {
    let prose = || {
        post(Reply::Json(
            200,
            completion(
                json!({"role": "assistant", "content": "I will read the file now."}),
                "stop",
            ),
        ))
    };
    let server = Scripted::start(vec![
        prose(),
        prose(),
        prose(),
        post(Reply::Json(
            200,
            completion(
                json!({"role": "assistant", "content": "{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.go\"}}"}),
                "stop",
            ),
        )),
    ])
    .await;
    let mut cfg = config(&server.url);
    cfg.tool_mode = ToolMode::Auto;
    let client = Client::new(cfg).unwrap();
    let mut req = ask("read a.go", tools());
    for i in 0..3 {
        let turn = client.chat(&req).await.unwrap();
        assert_eq!((turn.mode, turn.calls.len()), (Mode::Native, 0));
        // One reply without a call, or two, is no reason to change how the history is sent.
        let want = if i < 2 {
            Mode::Native
        } else {
            Mode::Constrained
        };
        assert_eq!(client.mode(), want, "after reply {}", i + 1);
        req.messages
            .push(ChatMessage::assistant(turn.content, vec![]));
        req.messages.push(ChatMessage::user("Call a tool."));
    }
    let fourth = client.chat(&req).await.unwrap();
    assert_eq!((fourth.mode, fourth.calls.len()), (Mode::Constrained, 1));
    let seen = server.finish();
    assert!(seen[0].body.get("tools").is_some());
    assert!(
        seen[0].body.get("cache_prompt").is_none(),
        "not llama-server"
    );
    assert!(seen[2].body.get("tools").is_some());
    assert!(seen[3].body.get("tools").is_none());
    assert!(seen[3].body.get("response_format").is_some());
}

#[tokio::test]
async fn the_api_key_is_sent_as_bearer_but_never_shown() {
    const VAR: &str = "VOUCH_TEST_MODEL_KEY_BEARER";
    const KEY: &str = "sk-vouch-secret-0123456789";
    let env = |name: &str| (name == VAR).then(|| KEY.to_string());
    let echo = format!("invalid api key {KEY}");
    let server = Scripted::start(vec![
        post(Reply::Json(401, json!({"error": {"message": echo}}))),
        post(Reply::Json(400, json!({"error": {"message": echo}}))),
        post(Reply::Json(500, json!({"error": {"message": echo}}))),
        post(Reply::Json(
            500,
            json!({"error": {"message": format!("the request exceeds the available context size {KEY}")}}),
        )),
        post(Reply::CutSse(vec![chunk(json!({"content": KEY}))])),
        post(Reply::Sse(vec![json!({"error": {"code": 503, "message": echo}}).to_string()])),
        post(Reply::Json(200, json!({"unexpected": KEY}))),
    ])
    .await;
    let mut cfg = config(&server.url);
    cfg.api_key_env = Some(VAR.into());
    cfg.max_retries = 0;
    let client = Client::with_env(cfg.clone(), env).unwrap();
    let mut shown = vec![format!("{client:?}")];
    let mut errors = Vec::new();
    for stream in [false, false, false, false, true, true, false] {
        let mut c = cfg.clone();
        c.stream = stream;
        let client = Client::with_env(c, env).unwrap();
        errors.push(client.chat(&ask("hi", vec![])).await.unwrap_err());
    }
    let mut unreachable = config(&format!("http://127.0.0.1:{}", closed_port()));
    unreachable.api_key_env = Some(VAR.into());
    unreachable.max_retries = 0;
    errors.push(
        Client::with_env(unreachable, env)
            .unwrap()
            .chat(&ask("hi", vec![]))
            .await
            .unwrap_err(),
    );
    assert!(matches!(
        errors[0],
        ModelError::Unauthorized { status: 401, .. }
    ));
    assert!(matches!(errors[3], ModelError::ContextOverflow { .. }));
    assert!(matches!(errors[4], ModelError::StreamCut { .. }));
    assert!(matches!(errors[7], ModelError::Unreachable { .. }));
    for e in &errors {
        shown.push(format!("{e}"));
        shown.push(format!("{e:?}"));
        shown.push(format!("{e:#?}"));
        shown.extend(e.hint());
    }
    for s in &shown {
        assert!(!s.contains(KEY), "the key leaked: {s}");
    }
    let seen = server.finish();
    assert_eq!(seen.len(), 7);
    for s in &seen {
        assert_eq!(s.headers["authorization"], format!("Bearer {KEY}"));
    }
}

#[tokio::test]
async fn a_missing_key_variable_is_a_configuration_error_naming_it() {
    let mut cfg = config("http://127.0.0.1:1");
    cfg.api_key_env = Some("VOUCH_TEST_MODEL_KEY_NEVER_SET".into());
    let err = Client::new(cfg).unwrap_err();
    assert!(matches!(err, ModelError::Config { .. }));
    assert!(
        err.to_string().contains("VOUCH_TEST_MODEL_KEY_NEVER_SET"),
        "{err}"
    );
}

// ---------------------------------------------------------------------------------------------------------
// The real llama-server with SmolLM2 (built by tests/llama/build.sh; CI runs it before the tests).

fn real_config(server: &llama::LlamaServer, stream: bool) -> ModelConfig {
    let mut cfg = ModelConfig::new(server.url.clone(), "smollm2");
    cfg.stream = stream;
    cfg.temperature = Some(0.0);
    cfg.max_tokens = Some(48);
    cfg.cache_prompt = Some(false);
    cfg.max_retries = 0;
    cfg.tool_mode = ToolMode::Native;
    cfg.request_timeout = Duration::from_secs(120);
    cfg.idle_timeout = Duration::from_secs(60);
    cfg
}

/// A history that already holds a call and its result: SmolLM2 makes structured calls only then.
fn seeded_history() -> ChatRequest {
    ChatRequest {
        messages: vec![
            ChatMessage::system("You are a coding agent. Use the tools."),
            ChatMessage::user("Read the file a.go."),
            ChatMessage::assistant(
                "",
                vec![ToolCall {
                    id: "call_1".into(),
                    name: "read_file".into(),
                    arguments: json!({"path": "a.go"}),
                }],
            ),
            ChatMessage::tool("call_1", "read_file", "package main\n\nfunc main() {}\n"),
            ChatMessage::user("Now read the file b.go."),
        ],
        tools: tools(),
        temperature: None,
    }
}

#[tokio::test]
async fn llama_server_plain_and_streamed_replies_have_usage_and_timings() {
    let server = llama::smollm2().await;
    for stream in [false, true] {
        let client = Client::new(real_config(&server, stream)).unwrap();
        let turn = client.chat(&ask("Say hello.", vec![])).await.unwrap();
        assert!(!turn.content.trim().is_empty(), "stream={stream}: {turn:?}");
        assert!(
            matches!(turn.finish_reason.as_deref(), Some("stop" | "length")),
            "{turn:?}"
        );
        let usage = turn.usage.unwrap();
        assert!(usage.prompt > 0 && usage.completion > 0, "{usage:?}");
        let timings = turn.timings.unwrap();
        assert!(timings["prompt_n"].as_u64().unwrap() > 0, "{timings}");
        let info = client.server().unwrap();
        assert!(info.llama_server);
        assert_eq!(info.supports_tools, Some(true));
    }
}

#[tokio::test]
async fn llama_server_native_calls_arrive_whole_and_streamed() {
    let server = llama::smollm2().await;
    for stream in [false, true] {
        let client = Client::new(real_config(&server, stream)).unwrap();
        let turn = client.chat(&seeded_history()).await.unwrap();
        assert_eq!(
            turn.finish_reason.as_deref(),
            Some("tool_calls"),
            "{turn:?}"
        );
        assert_eq!(turn.content, "", "content is \"\" beside tool calls");
        assert!(!turn.recovered);
        assert!(!turn.calls.is_empty(), "{turn:?}");
        for call in &turn.calls {
            assert!(
                ["read_file", "submit"].contains(&call.name.as_str()),
                "{call:?}"
            );
            assert!(call.arguments.is_object(), "{call:?}");
            assert!(
                !call.id.is_empty() && !call.id.starts_with("vouch_"),
                "{call:?}"
            );
        }
    }
}

#[tokio::test]
async fn llama_server_constrained_replies_are_calls_on_the_first_turn() {
    let server = llama::smollm2().await;
    for stream in [false, true] {
        let mut cfg = real_config(&server, stream);
        cfg.tool_mode = ToolMode::Constrained;
        cfg.max_tokens = Some(96);
        let client = Client::new(cfg).unwrap();
        let turn = client
            .chat(&ask("Read the file a.go.", tools()))
            .await
            .unwrap();
        assert_eq!(turn.mode, Mode::Constrained);
        assert_eq!(turn.calls.len(), 1, "{turn:?}");
        assert!(["read_file", "submit"].contains(&turn.calls[0].name.as_str()));
        assert!(turn.calls[0].arguments.is_object());
    }
}

#[tokio::test]
async fn llama_server_errors_are_read_as_that_server_shapes_them() {
    let server = llama::smollm2().await;
    // A body that is not JSON: HTTP 500 with llama-server's error object.
    let resp = reqwest::Client::new()
        .post(format!("{}/v1/chat/completions", server.url))
        .header("content-type", "application/json")
        .body(r#"{"messages":"#)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 500);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["error"]["code"], 500, "{body}");
    assert_eq!(body["error"]["type"], "server_error", "{body}");
    assert!(body["error"]["message"]
        .as_str()
        .is_some_and(|m| !m.is_empty()));
    // A request the server understands but rejects (a tool whose parameters are no schema): HTTP 400 with
    // the server's own message, classified as a bad request.
    let mut req = ask("hi", vec![]);
    req.tools = vec![json!({"type": "function", "function": {"name": "x", "parameters": "bad"}})];
    let client = Client::new(real_config(&server, false)).unwrap();
    let err = client.chat(&req).await.unwrap_err();
    assert!(
        matches!(&err, ModelError::BadRequest { status: 400, message } if message.contains("schema")),
        "{err:?}"
    );
}

/// The raw SSE events of one streamed request, parsed.
async fn raw_events(server: &llama::LlamaServer, body: Value) -> Vec<Value> {
    let text = reqwest::Client::new()
        .post(format!("{}/v1/chat/completions", server.url))
        .json(&body)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    text.split("\n\n")
        .filter_map(|e| e.trim().strip_prefix("data: "))
        .filter(|d| *d != "[DONE]")
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

#[tokio::test]
async fn llama_server_streams_call_ids_first_then_argument_fragments_then_usage() {
    let server = llama::smollm2().await;
    let req = seeded_history();
    let events = raw_events(
        &server,
        json!({
            "messages": req.messages.iter().map(ChatMessage::to_openai).collect::<Vec<_>>(),
            "tools": req.tools,
            "stream": true,
            "stream_options": {"include_usage": true},
            "temperature": 0.0,
            "max_tokens": 48,
            "cache_prompt": false,
        }),
    )
    .await;
    let calls: Vec<&Value> = events
        .iter()
        .filter_map(|e| e.pointer("/choices/0/delta/tool_calls/0"))
        .collect();
    assert!(calls.len() > 2, "{events:#?}");
    let first = calls[0];
    assert!(
        first["id"].as_str().is_some_and(|id| id.len() == 32),
        "{first}"
    );
    assert!(first["function"]["name"].is_string(), "{first}");
    let fragments = calls
        .iter()
        .filter(|c| c.get("id").is_none() && c["function"]["arguments"].is_string())
        .count();
    assert!(fragments > 1, "arguments come in fragments: {calls:#?}");
    let last = events.last().unwrap();
    assert!(
        last["usage"]["prompt_tokens"].as_u64().unwrap() > 0,
        "{last}"
    );
    assert!(last["timings"].is_object(), "{last}");
}
