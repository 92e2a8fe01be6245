//! Speed and cache checks: prefill and decode tokens/s at a few depths, from cold prompts (a nonce opens
//! each one, so nothing is taken from the prompt cache), several repetitions each; and prompt-cache reuse
//! when the same prefix is sent twice.

use std::time::Duration;

use serde_json::{json, Value};

use super::http::{Endpoint, Reply};
use super::report::{Cache, Speed, SpeedSample, TimingSource};
use super::stats::Spread;
use super::text;

/// Tokens generated per speed request.
pub const DECODE_TOKENS: u64 = 32;

fn ask(document: &str, max_tokens: u64, ignore_eos: bool) -> Value {
    let mut f = json!({
        "messages": [
            {"role": "user", "content": format!("{document}\nWrite a long story about the records above.")}
        ],
        "temperature": 0,
        "max_tokens": max_tokens,
    });
    if ignore_eos {
        f["ignore_eos"] = json!(true);
    }
    f
}

/// One request's numbers: from `timings` when the server sent them, else usage over wall time.
pub fn sample(reply: &Reply) -> (SpeedSample, TimingSource) {
    let u = |k: &str| {
        reply
            .body
            .pointer(&format!("/usage/{k}"))
            .and_then(Value::as_u64)
    };
    match (
        reply.timing("prompt_per_second"),
        reply.timing("predicted_per_second"),
    ) {
        (Some(prefill), Some(decode)) => (
            SpeedSample {
                prompt_n: reply.timing("prompt_n").unwrap_or(0.0) as u64,
                prefill_tps: prefill,
                predicted_n: reply.timing("predicted_n").unwrap_or(0.0) as u64,
                decode_tps: decode,
                cache_n: reply.timing("cache_n").unwrap_or(0.0) as u64,
            },
            TimingSource::Timings,
        ),
        _ => {
            let secs = reply.elapsed.as_secs_f64().max(1e-6);
            let prompt = u("prompt_tokens").unwrap_or(0);
            let completion = u("completion_tokens").unwrap_or(0);
            (
                SpeedSample {
                    prompt_n: prompt,
                    // Wall time covers both phases: it only bounds each from below.
                    prefill_tps: prompt as f64 / secs,
                    predicted_n: completion,
                    decode_tps: completion as f64 / secs,
                    cache_n: reply
                        .body
                        .pointer("/usage/prompt_tokens_details/cached_tokens")
                        .and_then(Value::as_u64)
                        .unwrap_or(0),
                },
                TimingSource::Wall,
            )
        }
    }
}

/// The speed at each depth; a depth whose requests fail is left out and its error returned.
pub async fn measure(
    ep: &Endpoint,
    depths: &[u64],
    reps: usize,
    per_sentence: f64,
    llama_server: bool,
) -> (Vec<Speed>, Vec<(u64, String)>) {
    let mut out = Vec::new();
    let mut errors = Vec::new();
    'depth: for &depth in depths {
        let mut samples = Vec::new();
        let mut source = TimingSource::Timings;
        for _ in 0..reps {
            let doc = format!(
                "Session {}.\n{}",
                text::nonce(),
                text::filler(depth, per_sentence, 0)
            );
            match ep.chat(ask(&doc, DECODE_TOKENS, llama_server)).await {
                Ok(reply) => {
                    let (s, src) = sample(&reply);
                    source = src;
                    samples.push(s);
                }
                Err(e) => {
                    errors.push((depth, format!("{e:#}")));
                    continue 'depth;
                }
            }
        }
        out.push(summarize(depth, samples, source));
    }
    (out, errors)
}

/// Mean and stdev over the samples of one depth.
pub fn summarize(depth: u64, samples: Vec<SpeedSample>, source: TimingSource) -> Speed {
    let prefill = Spread::of(&samples.iter().map(|s| s.prefill_tps).collect::<Vec<_>>());
    let decode = Spread::of(&samples.iter().map(|s| s.decode_tps).collect::<Vec<_>>());
    let prompt = Spread::of(
        &samples
            .iter()
            .map(|s| s.prompt_n as f64)
            .collect::<Vec<_>>(),
    );
    Speed {
        depth_tokens: depth,
        reps: samples.len(),
        prompt_tokens: prompt.mean,
        prefill_tps_mean: prefill.mean,
        prefill_tps_stdev: prefill.stdev,
        decode_tps_mean: decode.mean,
        decode_tps_stdev: decode.stdev,
        samples,
        source,
    }
}

/// The same prefix of about `prefix_tokens` sent twice with different questions; how much of the second
/// prompt came from the cache (`timings.cache_n`, else `usage.prompt_tokens_details.cached_tokens`).
pub async fn cache_reuse(
    ep: &Endpoint,
    prefix_tokens: u64,
    per_sentence: f64,
) -> anyhow::Result<Cache> {
    let prefix = format!(
        "Session {}.\n{}",
        text::nonce(),
        text::filler(prefix_tokens, per_sentence, 0)
    );
    let turn = |q: &str| {
        json!({
            "messages": [{"role": "user", "content": format!("{prefix}\n{q}")}],
            "temperature": 0,
            "max_tokens": 4,
        })
    };
    ep.chat(turn("How many records are there?")).await?;
    // Give a server that saves its cache asynchronously a moment.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let second = ep.chat(turn("Which place appears first?")).await?;
    Ok(reuse(&second, prefix_tokens))
}

/// The reuse a second reply shows.
pub fn reuse(second: &Reply, prefix_tokens: u64) -> Cache {
    let cached = second.timing("cache_n").map(|c| c as u64).or_else(|| {
        second
            .body
            .pointer("/usage/prompt_tokens_details/cached_tokens")
            .and_then(Value::as_u64)
    });
    // llama-server's `prompt_n` counts only the tokens it processed; usage counts the whole prompt.
    let total = match (second.timing("prompt_n"), second.timing("cache_n")) {
        (Some(p), Some(c)) => Some(p as u64 + c as u64),
        _ => second
            .body
            .pointer("/usage/prompt_tokens")
            .and_then(Value::as_u64),
    };
    let reused_fraction = match (cached, total) {
        (Some(c), Some(t)) if t > 0 => Some(c as f64 / t as f64),
        _ => None,
    };
    Cache {
        reused_fraction,
        shared_fraction: total
            .filter(|t| *t > 0)
            .map_or(0.0, |t| (prefix_tokens as f64 / t as f64).min(1.0)),
        cached_tokens: cached,
        prompt_tokens: total,
    }
}
