//! `vouch probe`: what a model endpoint really does, with numbers, before an agent depends on it.
//!
//! A local model can look bad for reasons that have nothing to do with the model: calls the server could not
//! parse arrive as text, a chat template drops the arguments of every call, the context loaded is a fraction of
//! the model's, several slots split it, the prompt cache does not survive between turns, speculative decoding
//! makes speed vary from run to run. The probe checks each, in this order: what the server says
//! (`server.rs`), the chat template learned by rendering it (`toolcall::learn`), a tool-call round trip
//! (`tools.rs`), needles (`needle.rs`), speed and cache reuse (`speed.rs`), and turns the numbers into warnings
//! and a recommended tool mode (`warn.rs`). The report (`report.rs`) is types; the console and `--json` are
//! its two renderings.

pub mod cache;
pub mod first_look;
pub mod http;
pub mod needle;
pub mod report;
pub mod server;
pub mod speed;
pub mod stats;
pub mod text;
pub mod tools;
pub mod warn;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};
use serde_json::json;

use crate::model::ToolMode;
use crate::toolcall::learn;
pub use report::Report;
use report::{Cache, Template, Warning, WarningKind};

/// How a probe runs.
#[derive(Clone, Debug)]
pub struct Options {
    pub endpoint: String,
    /// The model to ask for; `None` takes the first one the server lists.
    pub model: Option<String>,
    pub api_key: Option<String>,
    /// Fewer depths and a shorter needle document (for `vouch run`'s first look at an endpoint).
    pub quick: bool,
    /// Repetitions per speed depth (at least 3).
    pub reps: usize,
    /// Longest wait for one request.
    pub request_timeout: Duration,
    /// Where learned templates are cached; `None` does not cache.
    pub cache_dir: Option<PathBuf>,
}

impl Options {
    pub fn new(endpoint: impl Into<String>) -> Options {
        Options {
            endpoint: endpoint.into(),
            model: None,
            api_key: None,
            quick: false,
            reps: 3,
            request_timeout: Duration::from_secs(300),
            cache_dir: learn::default_cache_dir(),
        }
    }
}

/// The context assumed when the server does not say.
const UNKNOWN_CONTEXT: u64 = 4096;

/// What the first checks found: the server's facts, its template and the tool-call round trips.
struct First {
    ep: http::Endpoint,
    facts: server::Facts,
    model: String,
    template: Option<Template>,
    tool_calls: report::ToolCalls,
}

/// The server's facts, the template learned and the tool-call round trip.
async fn first_checks(opts: &Options) -> Result<First> {
    let mut ep = http::Endpoint::new(
        &opts.endpoint,
        opts.model.as_deref().unwrap_or(crate::model::DEFAULT_MODEL),
        opts.api_key.clone(),
        opts.request_timeout,
    )?;
    let facts = server::facts(&ep).await.with_context(|| {
        format!(
            "the endpoint {} cannot be reached; is the server running?",
            opts.endpoint
        )
    })?;
    let model = opts
        .model
        .clone()
        .or_else(|| facts.models.first().cloned())
        .unwrap_or_else(|| crate::model::DEFAULT_MODEL.to_string());
    ep.model = model.clone();
    if facts.llama_server {
        ep.extra.insert("cache_prompt".into(), json!(true));
        if facts.context.slots.is_some_and(|s| s > 1) {
            ep.extra.insert("id_slot".into(), json!(0));
        }
    }
    let template = facts
        .chat_template
        .as_deref()
        .map(|t| template_report(t, opts.cache_dir.as_deref()));
    let learned = template.as_ref().and_then(|t| t.learned.clone());
    let tool_calls = tools::round_trips(&ep, learned.as_ref()).await;
    Ok(First {
        ep,
        facts,
        model,
        template,
        tool_calls,
    })
}

/// The report of the first checks alone (no needles, no speed): what `vouch run` asks of an endpoint it
/// has not met, in two short requests.
pub async fn tools_only(opts: &Options) -> Result<Report> {
    let start = Instant::now();
    let First {
        facts,
        model,
        template,
        tool_calls,
        ..
    } = first_checks(opts).await?;
    let mut report = Report {
        endpoint: opts.endpoint.clone(),
        model,
        models: facts.models.clone(),
        llama_server: facts.llama_server,
        tool_calls,
        context: facts.context.clone(),
        template,
        needle: Vec::new(),
        speed: Vec::new(),
        cache: Cache::default(),
        tool_mode: ToolMode::Auto,
        warnings: Vec::new(),
        elapsed_s: 0.0,
    };
    report.tool_mode = warn::tool_mode(&report);
    report.warnings = warn::warnings(&report);
    report.elapsed_s = start.elapsed().as_secs_f64();
    Ok(report)
}

/// Runs every check. Only an unreachable endpoint is an error; a check that fails is a warning.
pub async fn run(opts: &Options) -> Result<Report> {
    let start = Instant::now();
    let First {
        ep,
        facts,
        model,
        template,
        tool_calls,
    } = first_checks(opts).await?;
    let mut check_failures: Vec<Warning> = Vec::new();

    let context_size = facts
        .context
        .advertised
        .or(facts.context.n_ctx_train)
        .unwrap_or(UNKNOWN_CONTEXT);
    let per_sentence = text::tokens_per_sentence(&ep, facts.llama_server).await;
    // Room for the question, the chat template and the answer.
    let usable = context_size.saturating_sub(256).max(256);

    let (needle_total, needle_fracs): (u64, &[f64]) = if opts.quick {
        (usable.min(2048), &[0.1, 0.9])
    } else {
        (usable.min(32_768) * 9 / 10, &[0.1, 0.35, 0.65, 0.9])
    };
    let needle_depths: Vec<u64> = needle_fracs
        .iter()
        .map(|f| (needle_total as f64 * f) as u64)
        .collect();
    let needles = needle::run(&ep, needle_total, &needle_depths, per_sentence).await;

    let speed_depths: Vec<u64> = if opts.quick {
        vec![256, 1024]
    } else {
        vec![512, 2048, 8192]
    }
    .into_iter()
    .map(|d| d.min(usable))
    .fold(Vec::new(), |mut v, d| {
        if !v.contains(&d) {
            v.push(d);
        }
        v
    });
    let (speed, speed_errors) = speed::measure(
        &ep,
        &speed_depths,
        opts.reps.max(3),
        per_sentence,
        facts.llama_server,
    )
    .await;
    for (depth, e) in speed_errors {
        check_failures.push(Warning {
            kind: WarningKind::CheckFailed,
            message: format!("the speed check at {depth} tokens failed: {e}"),
        });
    }

    let cache = match speed::cache_reuse(&ep, usable.min(1024), per_sentence).await {
        Ok(c) => c,
        Err(e) => {
            check_failures.push(Warning {
                kind: WarningKind::CheckFailed,
                message: format!("the prompt-cache check failed: {e:#}"),
            });
            Cache::default()
        }
    };

    let mut context = facts.context.clone();
    context.measured = needle::measured(&needles);
    let mut report = Report {
        endpoint: opts.endpoint.clone(),
        model,
        models: facts.models.clone(),
        llama_server: facts.llama_server,
        tool_calls,
        context,
        template,
        needle: needles,
        speed,
        cache,
        tool_mode: ToolMode::Auto,
        warnings: Vec::new(),
        elapsed_s: 0.0,
    };
    report.tool_mode = warn::tool_mode(&report);
    report.warnings = warn::warnings(&report);
    report.warnings.extend(check_failures);
    report.elapsed_s = start.elapsed().as_secs_f64();
    Ok(report)
}

/// What template learning made of the server's chat template.
pub fn template_report(template: &str, cache_dir: Option<&std::path::Path>) -> Template {
    let hash = learn::template_hash(template);
    match learn::learn_cached(template, cache_dir) {
        Ok(l) => Template {
            hash,
            format: l.known_format.clone(),
            drops_arguments: false,
            learned: Some(l),
            error: None,
        },
        Err(learn::LearnError::DropsArguments) => Template {
            hash,
            format: None,
            learned: None,
            drops_arguments: true,
            error: Some(learn::LearnError::DropsArguments.to_string()),
        },
        Err(e) => Template {
            hash,
            format: None,
            learned: None,
            drops_arguments: false,
            error: Some(e.to_string()),
        },
    }
}
