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

/// How many prompt tokens each check sends. Prefill dominates a probe's time on a CPU (SmolLM2-135M reads
/// about 85 tokens/s on one thread of a 2-core machine), so the quick look reads about 3,000 tokens in all:
/// one needle document of 768 tokens, speed at 256 and 384 tokens, a 128-token cache prefix. The smallest
/// speed depth stays well above the chat template's preamble (about 20 tokens), the one part of a cold
/// prompt the cache may hold.
struct Budget {
    needle_tokens: u64,
    needle_fracs: &'static [f64],
    speed_depths: &'static [u64],
    cache_tokens: u64,
}

impl Budget {
    fn new(quick: bool, usable: u64) -> Budget {
        if quick {
            Budget {
                needle_tokens: usable.min(768),
                needle_fracs: &[0.5],
                speed_depths: &[256, 384],
                cache_tokens: usable.min(128),
            }
        } else {
            Budget {
                needle_tokens: usable.min(32_768) * 9 / 10,
                needle_fracs: &[0.1, 0.35, 0.65, 0.9],
                speed_depths: &[512, 2048, 8192],
                cache_tokens: usable.min(1024),
            }
        }
    }

    /// Prompt tokens the needle, speed and cache checks send, at `reps` repetitions per speed depth.
    fn prompt_tokens(&self, reps: u64) -> u64 {
        let needles = self.needle_tokens * self.needle_fracs.len() as u64;
        let speed: u64 = self.speed_depths.iter().sum::<u64>() * reps;
        needles + speed + 2 * self.cache_tokens
    }
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

    let budget = Budget::new(opts.quick, usable);
    tracing::info!(
        "the needle, speed and cache checks send about {} prompt tokens",
        budget.prompt_tokens(opts.reps.max(3) as u64)
    );
    let (needle_total, needle_fracs) = (budget.needle_tokens, budget.needle_fracs);
    let needle_depths: Vec<u64> = needle_fracs
        .iter()
        .map(|f| (needle_total as f64 * f) as u64)
        .collect();
    let needles = needle::run(&ep, needle_total, &needle_depths, per_sentence).await;

    let speed_depths: Vec<u64> =
        budget
            .speed_depths
            .iter()
            .map(|&d| d.min(usable))
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

    let cache = match speed::cache_reuse(&ep, budget.cache_tokens, per_sentence).await {
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

#[cfg(test)]
mod tests {
    use super::Budget;

    #[test]
    fn the_quick_look_reads_a_minute_of_prompt_on_a_small_cpu_model() {
        let quick = Budget::new(true, 8192);
        // About 85 prompt tokens/s for SmolLM2 on one thread here: the quick look must stay under ~50 s of
        // prefill so that it ends within a minute with the tool-call checks and decoding.
        assert!(quick.prompt_tokens(3) <= 4200, "{}", quick.prompt_tokens(3));
        assert!(
            quick.speed_depths.len() >= 2,
            "the variance warning compares depths"
        );
        let full = Budget::new(false, 8192);
        assert!(full.prompt_tokens(3) > 4 * quick.prompt_tokens(3));
    }

    #[test]
    fn a_small_context_caps_every_check() {
        let b = Budget::new(true, 300);
        assert_eq!(b.needle_tokens, 300);
        assert_eq!(b.cache_tokens, 128);
        let b = Budget::new(false, 300);
        assert!(b.needle_tokens <= 300 && b.cache_tokens <= 300);
    }
}
