//! `vouch probe` against scripted servers, one per serving trap (and a steady one where no warning fires),
//! then against the real llama-server with SmolLM2.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use axum::Router;
use serde_json::{json, Value};

use vouch::probe::report::{CallOutcome, TimingSource, WarningKind};
use vouch::probe::{self, Options, Report};

use crate::util::llama;

/// How a scripted server's tool-call replies come back.
#[derive(Clone, Copy, PartialEq)]
enum Calls {
    Structured,
    Hermes,
    Qwen3Coder,
    None,
}

/// The knobs of a scripted server.
#[derive(Clone)]
struct Behaviour {
    calls: Calls,
    /// Answer `/props` (llama-server) with this template and these capabilities.
    llama: bool,
    supports_tools: bool,
    template: String,
    slots: u64,
    n_ctx: u64,
    n_ctx_train: u64,
    /// Prompts longer than this many tokens lose the needle (LM Studio's 4096).
    loaded_ctx: u64,
    /// Decode speed alternates between two values from run to run.
    speculative: bool,
    /// The second of two requests with a shared prefix reuses the cache.
    cache_reuse: bool,
}

impl Default for Behaviour {
    fn default() -> Self {
        Behaviour {
            calls: Calls::Structured,
            llama: true,
            supports_tools: true,
            template: "{% for m in messages %}{{ m.content }}{% endfor %}".into(),
            slots: 1,
            n_ctx: 8192,
            n_ctx_train: 8192,
            loaded_ctx: u64::MAX,
            speculative: false,
            cache_reuse: true,
        }
    }
}

#[derive(Clone)]
struct Server {
    b: Arc<Behaviour>,
    n: Arc<AtomicU64>,
    seen: Arc<Mutex<Vec<Value>>>,
    unexpected: Arc<Mutex<Vec<String>>>,
    /// The last cache-check prefix seen.
    last_prefix: Arc<Mutex<Option<String>>>,
}

fn tokens(text: &str) -> u64 {
    text.len() as u64 / 4
}

fn reply(message: Value, timings: Option<Value>, prompt: u64) -> Response {
    let mut body = json!({
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": 32, "total_tokens": prompt + 32},
    });
    if let Some(t) = timings {
        body["timings"] = t;
    }
    axum::Json(body).into_response()
}

async fn answer(State(s): State<Server>, req: Request) -> Response {
    let method = req.method().to_string();
    let path = req.uri().path().to_string();
    let bytes = axum::body::to_bytes(req.into_body(), usize::MAX)
        .await
        .unwrap();
    let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    let b = &s.b;
    match (method.as_str(), path.as_str()) {
        ("GET", "/v1/models") => axum::Json(
            json!({"data": [{"id": "scripted", "meta": {"n_ctx_train": b.n_ctx_train}}]}),
        )
        .into_response(),
        ("GET", "/props") if b.llama => axum::Json(json!({
            "default_generation_settings": {"n_ctx": b.n_ctx},
            "total_slots": b.slots,
            "chat_template": b.template,
            "chat_template_caps": {"supports_tools": b.supports_tools},
        }))
        .into_response(),
        ("GET", "/props") => (axum::http::StatusCode::NOT_FOUND, "no").into_response(),
        ("POST", "/tokenize") if b.llama => {
            let n = tokens(body["content"].as_str().unwrap_or(""));
            axum::Json(json!({"tokens": vec![1; n as usize]})).into_response()
        }
        ("POST", "/v1/chat/completions") => {
            s.seen.lock().unwrap().push(body.clone());
            chat(&s, &body)
        }
        _ => {
            s.unexpected
                .lock()
                .unwrap()
                .push(format!("{method} {path}"));
            (axum::http::StatusCode::IM_A_TEAPOT, "unexpected").into_response()
        }
    }
}

fn chat(s: &Server, body: &Value) -> Response {
    let b = &s.b;
    let text: String = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_str())
        .collect::<Vec<_>>()
        .join("\n");
    let prompt = tokens(&text);
    let timings = |prompt_n: u64, cache_n: u64, decode: f64| {
        b.llama.then(|| {
            json!({
                "cache_n": cache_n, "prompt_n": prompt_n, "prompt_ms": prompt_n as f64 / 2.0,
                "prompt_per_second": 2000.0, "predicted_n": 32, "predicted_ms": 32000.0 / decode,
                "predicted_per_second": decode,
            })
        })
    };
    if body.get("tools").is_some() {
        let message = match b.calls {
            Calls::Structured => json!({"role": "assistant", "content": "", "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"src/main.rs\"}"}}
            ]}),
            Calls::Hermes => json!({"role": "assistant", "content":
                "<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"src/main.rs\"}}\n</tool_call>"}),
            Calls::Qwen3Coder => json!({"role": "assistant", "content":
                "<tool_call>\n<function=read_file>\n<parameter=path>\nsrc/main.rs\n</parameter>\n</function>\n</tool_call>"}),
            Calls::None => {
                json!({"role": "assistant", "content": "I would read src/main.rs first."})
            }
        };
        return reply(message, timings(prompt, 0, 50.0), prompt);
    }
    if text.contains("secret access code is") {
        let code = text
            .split("secret access code is ")
            .nth(1)
            .and_then(|r| r.split('.').next())
            .unwrap_or("")
            .to_string();
        let answer = if prompt <= b.loaded_ctx {
            code
        } else {
            "I cannot find a code.".into()
        };
        return reply(
            json!({"role": "assistant", "content": answer}),
            timings(prompt, 0, 50.0),
            prompt,
        );
    }
    if text.contains("How many records") || text.contains("Which place") {
        let prefix = text.split('\n').next().unwrap_or("").to_string();
        let mut last = s.last_prefix.lock().unwrap();
        let reused = last.as_deref() == Some(prefix.as_str()) && b.cache_reuse;
        *last = Some(prefix);
        let cache_n = if reused { prompt - 8 } else { 0 };
        return reply(
            json!({"role": "assistant", "content": "Ten."}),
            timings(prompt - cache_n, cache_n, 50.0),
            prompt,
        );
    }
    let k = s.n.fetch_add(1, Ordering::Relaxed);
    let decode = if b.speculative {
        if k.is_multiple_of(2) {
            30.0
        } else {
            90.0
        }
    } else {
        50.0 + (k % 3) as f64 * 0.1
    };
    reply(
        json!({"role": "assistant", "content": "Once upon a time"}),
        timings(prompt, 0, decode),
        prompt,
    )
}

async fn probe_with(b: Behaviour) -> (Report, Vec<Value>) {
    let s = Server {
        b: Arc::new(b),
        n: Arc::default(),
        seen: Arc::default(),
        unexpected: Arc::default(),
        last_prefix: Arc::default(),
    };
    let app = Router::new().fallback(answer).with_state(s.clone());
    let (url, task) = crate::util::serve(app).await;
    let mut opts = Options::new(url);
    opts.quick = true;
    opts.cache_dir = None;
    let report = probe::run(&opts).await.unwrap();
    task.abort();
    assert_eq!(
        *s.unexpected.lock().unwrap(),
        Vec::<String>::new(),
        "unexpected requests"
    );
    let seen = s.seen.lock().unwrap().clone();
    (report, seen)
}

fn kinds(r: &Report) -> Vec<WarningKind> {
    r.warnings.iter().map(|w| w.kind).collect()
}

#[tokio::test]
async fn a_steady_server_with_structured_calls_gets_no_warning() {
    let (r, _) = probe_with(Behaviour::default()).await;
    assert_eq!(kinds(&r), Vec::<WarningKind>::new(), "{:#?}", r.warnings);
    assert!(r.tool_calls.structured);
    assert_eq!(r.tool_calls.leaked_format, None);
    assert!(!r.tool_calls.recovered);
    assert_eq!(
        r.tool_calls
            .runs
            .iter()
            .map(|t| (t.tool_choice.as_str(), t.outcome))
            .collect::<Vec<_>>(),
        [
            ("auto", CallOutcome::Structured),
            ("required", CallOutcome::Structured)
        ]
    );
    assert_eq!(r.tool_mode, vouch::model::ToolMode::Native);
    assert_eq!(r.models, ["scripted"]);
    assert_eq!(r.context.advertised, Some(8192));
    // The quick look plants one needle.
    assert!(
        r.needle.len() == 1 && r.needle.iter().all(|n| n.found),
        "{:?}",
        r.needle
    );
    assert!(r.speed.len() >= 2);
    for s in &r.speed {
        assert_eq!(s.reps, 3);
        assert_eq!(s.source, TimingSource::Timings);
        assert_eq!(s.prefill_tps_mean, 2000.0);
        assert!(
            (s.decode_tps_mean - 50.1).abs() < 0.2,
            "{}",
            s.decode_tps_mean
        );
        assert!(s.decode_tps_stdev > 0.0 && s.decode_tps_stdev < 0.2);
        assert!(s.samples.iter().all(|x| x.cache_n == 0), "cold prompts");
    }
    assert!(r.cache.reused_fraction.unwrap() > 0.9, "{:?}", r.cache);
    let json = serde_json::to_value(&r).unwrap();
    for key in [
        "/endpoint",
        "/model",
        "/tool_calls/structured",
        "/tool_calls/leaked_format",
        "/tool_calls/recovered",
        "/context/advertised",
        "/needle/0/depth_tokens",
        "/needle/0/found",
        "/speed/0/prefill_tps_mean",
        "/speed/0/prefill_tps_stdev",
        "/speed/0/decode_tps_mean",
        "/speed/0/decode_tps_stdev",
        "/cache/reused_fraction",
        "/tool_mode",
        "/warnings",
    ] {
        assert!(json.pointer(key).is_some(), "{key} missing in {json:#}");
    }
    assert_eq!(json["tool_mode"], "native");
}

#[tokio::test]
async fn hermes_calls_leaked_as_text_are_named_and_recovered() {
    let (r, _) = probe_with(Behaviour {
        calls: Calls::Hermes,
        ..Behaviour::default()
    })
    .await;
    assert!(!r.tool_calls.structured);
    assert_eq!(r.tool_calls.leaked_format.as_deref(), Some("hermes"));
    assert!(r.tool_calls.recovered);
    assert_eq!(kinds(&r), [WarningKind::LeakedCalls]);
}

#[tokio::test]
async fn qwen3_coder_calls_leaked_as_text_are_named_and_recovered() {
    let (r, _) = probe_with(Behaviour {
        calls: Calls::Qwen3Coder,
        ..Behaviour::default()
    })
    .await;
    assert_eq!(r.tool_calls.leaked_format.as_deref(), Some("qwen3-coder"));
    assert!(r.tool_calls.recovered);
    assert_eq!(r.tool_calls.runs[0].name.as_deref(), Some("read_file"));
}

#[tokio::test]
async fn a_template_without_tool_support_recommends_the_constrained_mode() {
    let (r, _) = probe_with(Behaviour {
        calls: Calls::None,
        supports_tools: false,
        ..Behaviour::default()
    })
    .await;
    assert_eq!(r.context.supports_tools, Some(false));
    assert_eq!(r.tool_mode, vouch::model::ToolMode::Constrained);
    assert_eq!(
        kinds(&r),
        [WarningKind::ToolsDropped, WarningKind::NoToolCalls]
    );
}

#[tokio::test]
async fn a_speculative_server_whose_decode_speed_alternates_gets_the_variance_warning() {
    let (r, _) = probe_with(Behaviour {
        speculative: true,
        ..Behaviour::default()
    })
    .await;
    assert!(
        kinds(&r).contains(&WarningKind::SpeculativeDecoding),
        "{:#?}",
        r.warnings
    );
    let w = r
        .warnings
        .iter()
        .find(|w| w.kind == WarningKind::SpeculativeDecoding)
        .unwrap();
    assert!(
        w.message.contains("speculative decoding is probably on"),
        "{}",
        w.message
    );
    assert!(w.message.contains("% of the mean"), "{}", w.message);
}

#[tokio::test]
async fn several_slots_and_a_short_context_are_warned_with_numbers_and_requests_pinned() {
    let (r, seen) = probe_with(Behaviour {
        slots: 4,
        n_ctx: 2048,
        n_ctx_train: 8192,
        ..Behaviour::default()
    })
    .await;
    assert_eq!(kinds(&r), [WarningKind::SmallContext, WarningKind::Slots]);
    assert!(r.warnings[0].message.contains("2048") && r.warnings[0].message.contains("8192"));
    assert!(r.warnings[1].message.contains("4 slots"));
    assert!(
        seen.iter().all(|b| b["id_slot"] == 0),
        "every request pinned to slot 0"
    );
}

#[tokio::test]
async fn a_prompt_cache_that_does_not_survive_between_turns_is_warned() {
    let (r, _) = probe_with(Behaviour {
        cache_reuse: false,
        ..Behaviour::default()
    })
    .await;
    assert_eq!(r.cache.reused_fraction, Some(0.0));
    assert_eq!(kinds(&r), [WarningKind::NoCacheReuse]);
}

#[tokio::test]
async fn a_context_loaded_smaller_than_advertised_loses_the_needle() {
    // LM Studio: no /props, 4096 loaded whatever the model says; the needle finds out. Scaled down to the
    // quick look's 768-token document: a server that keeps only 600 tokens loses its middle.
    let (r, _) = probe_with(Behaviour {
        llama: false,
        loaded_ctx: 600,
        ..Behaviour::default()
    })
    .await;
    assert!(!r.llama_server);
    assert!(r.needle.iter().any(|n| !n.found));
    assert!(
        kinds(&r).contains(&WarningKind::NeedleLost),
        "{:#?}",
        r.warnings
    );
    assert!(r.speed.iter().all(|s| s.source == TimingSource::Wall));
}

#[tokio::test]
async fn a_template_that_drops_arguments_is_reported_with_the_issues_words() {
    let template = "{% for m in messages %}{% if m.tool_calls %}{% for tc in m.tool_calls %}<tool_call>{{ tc.function.name }}</tool_call>{% endfor %}{% else %}{{ m.content }}{% endif %}{% endfor %}";
    let (r, _) = probe_with(Behaviour {
        template: template.into(),
        ..Behaviour::default()
    })
    .await;
    let t = r.template.as_ref().unwrap();
    assert!(t.drops_arguments);
    assert!(r
        .warnings
        .iter()
        .any(|w| w.message
            == "this chat template drops tool-call arguments; use a corrected template"));
    assert_eq!(r.tool_mode, vouch::model::ToolMode::Constrained);
}

#[test]
fn an_unreachable_endpoint_is_a_clear_error_with_what_to_do() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let repo = crate::util::Repo::new();
    let run = repo.vouch(&[
        "probe",
        "--endpoint",
        &format!("http://127.0.0.1:{port}"),
        "--quick",
    ]);
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert!(run.stderr.contains("cannot be reached"), "{}", run.stderr);
    assert!(run.stderr.contains("hint:"), "{}", run.stderr);
}

// ---------------------------------------------------------------------------------------------------------
// The real llama-server with SmolLM2.

#[tokio::test]
async fn llama_server_quick_probe_reports_the_servers_own_timings() {
    let server = llama::smollm2().await;
    let mut opts = Options::new(server.url.clone());
    opts.quick = true;
    opts.cache_dir = None;
    let started = std::time::Instant::now();
    let r = probe::run(&opts).await.unwrap();
    let took = started.elapsed();
    eprintln!(
        "quick probe took {took:?}\n{}",
        serde_json::to_string_pretty(&r).unwrap()
    );
    assert!(r.llama_server);
    assert_eq!(r.models, ["smollm2"]);
    assert_eq!(r.context.advertised, Some(8192));
    assert_eq!(r.tool_calls.runs.len(), 2);
    assert!(r.template.is_some());
    assert!(r.speed.len() >= 2);
    for s in &r.speed {
        assert_eq!(s.source, TimingSource::Timings);
        assert_eq!(s.reps, 3);
        // The report's numbers are the server's own timings: mean of the samples, within 5%.
        let mean = s.samples.iter().map(|x| x.decode_tps).sum::<f64>() / s.samples.len() as f64;
        assert!((s.decode_tps_mean - mean).abs() <= 0.05 * mean);
        assert!(s
            .samples
            .iter()
            .all(|x| x.prefill_tps > 0.0 && x.decode_tps > 0.0));
        // Only the chat template's preamble, before the nonce, may come from the cache.
        assert!(
            s.samples.iter().all(|x| x.cache_n * 10 < x.prompt_n),
            "cold prompts: {:?}",
            s.samples
        );
    }
    assert!(
        r.cache.reused_fraction.is_some_and(|f| f > 0.5),
        "{:?}",
        r.cache
    );
    assert!(r.needle.iter().all(|n| n.error.is_none()), "{:?}", r.needle);
}
