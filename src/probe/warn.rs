//! The serving traps that look like a bad model, each a [`Warning`] with its number, decided from the
//! report alone (pure), and the tool mode to recommend.

use super::report::{CallOutcome, Report, Warning, WarningKind};
use super::stats::{self, Spread, Unsteady};
use crate::model::ToolMode;

/// Below this share of the shared prefix reused, the cache is said not to survive between turns.
pub const MIN_REUSE: f64 = 0.5;

fn w(kind: WarningKind, message: String) -> Warning {
    Warning { kind, message }
}

/// Every warning the report's numbers call for.
pub fn warnings(r: &Report) -> Vec<Warning> {
    let mut out = Vec::new();
    let c = &r.context;
    if let (Some(slot), Some(train)) = (c.n_ctx_slot.or(c.advertised), c.n_ctx_train) {
        if slot < train {
            out.push(w(
                WarningKind::SmallContext,
                format!(
                    "the context loaded is {slot} tokens per request, the model's is {train}: \
                     long agent sessions will be cut (raise the server's context size, e.g. llama-server -c)"
                ),
            ));
        }
    }
    if let Some(slots) = c.slots.filter(|s| *s > 1) {
        let per = c
            .n_ctx_slot
            .map_or(String::new(), |n| format!(" ({n} tokens each)"));
        out.push(w(
            WarningKind::Slots,
            format!(
                "llama-server runs {slots} slots: each request gets only n_ctx / {slots}{per}, and a shared \
                 cache may evict a slot between turns; vouch pins its requests to slot 0 (id_slot), or \
                 start the server with --parallel 1"
            ),
        ));
    }
    let deepest_lost = r
        .needle
        .iter()
        .filter(|n| !n.found)
        .map(|n| n.depth_tokens)
        .min();
    if let Some(depth) = deepest_lost {
        let loaded = c.measured.map_or(String::new(), |m| {
            format!("; retrieval worked up to about {m} tokens")
        });
        out.push(w(
            WarningKind::NeedleLost,
            format!(
                "a code planted {depth} tokens deep was not retrieved verbatim{loaded}: the context actually \
                 loaded may be smaller than advertised (LM Studio loads 4096 by default), or the model loses \
                 track at that length"
            ),
        ));
    }
    if let Some(f) = r.cache.reused_fraction {
        if f < MIN_REUSE * r.cache.shared_fraction {
            out.push(w(
                WarningKind::NoCacheReuse,
                format!(
                    "the prompt cache did not survive from one turn to the next: {:.0}% of a prompt whose \
                     first {:.0}% was just sent came from the cache, so every agent turn pays the whole prefill",
                    f * 100.0,
                    r.cache.shared_fraction * 100.0
                ),
            ));
        }
    }
    if r.template.as_ref().is_some_and(|t| t.drops_arguments) {
        out.push(w(
            WarningKind::TemplateDropsArguments,
            "this chat template drops tool-call arguments; use a corrected template".to_string(),
        ));
    }
    if c.supports_tools == Some(false) {
        out.push(w(
            WarningKind::ToolsDropped,
            "the chat template does not render tools (chat_template_caps.supports_tools: false): the \
             server drops them silently; use --tool-mode constrained or a template with tool support"
                .to_string(),
        ));
    }
    let leaked: Vec<&str> = r
        .tool_calls
        .runs
        .iter()
        .filter(|t| t.outcome == CallOutcome::Leaked)
        .map(|t| t.tool_choice.as_str())
        .collect();
    if !leaked.is_empty() {
        out.push(w(
            WarningKind::LeakedCalls,
            format!(
                "tool calls came back as text in the {} format (tool_choice {}); vouch recovers them, \
                 other clients will see a model that talks instead of acting",
                r.tool_calls.leaked_format.as_deref().unwrap_or("unknown"),
                leaked.join(", ")
            ),
        ));
    }
    if r.tool_calls
        .runs
        .iter()
        .all(|t| t.outcome == CallOutcome::NoCall)
    {
        out.push(w(
            WarningKind::NoToolCalls,
            "no tool call came back, structured or as text: use --tool-mode constrained"
                .to_string(),
        ));
    }
    let decode: Vec<Spread> = r
        .speed
        .iter()
        .map(|s| Spread {
            mean: s.decode_tps_mean,
            stdev: s.decode_tps_stdev,
        })
        .collect();
    for (i, why) in stats::unsteady(&decode) {
        let s = &r.speed[i];
        let number = match why {
            Unsteady::Relative(rel) => format!("{:.1}% of the mean", rel * 100.0),
            Unsteady::Ratio(x) => format!("{x:.0}x the spread at the other depths"),
        };
        out.push(w(
            WarningKind::SpeculativeDecoding,
            format!(
                "decode speed at {} tokens varies from run to run: {:.1} ± {:.1} tok/s ({number}); \
                 speculative decoding is probably on, so benchmarks compare configurations, not models",
                s.depth_tokens, s.decode_tps_mean, s.decode_tps_stdev
            ),
        ));
    }
    out
}

/// The tool mode to use: native when calls come back (structured, or as text vouch recovers), constrained
/// when the template has no tools or nothing came back.
pub fn tool_mode(r: &Report) -> ToolMode {
    let outcomes: Vec<CallOutcome> = r.tool_calls.runs.iter().map(|t| t.outcome).collect();
    if r.context.supports_tools == Some(false)
        || r.template.as_ref().is_some_and(|t| t.drops_arguments)
    {
        return ToolMode::Constrained;
    }
    if outcomes.contains(&CallOutcome::Structured) && !outcomes.contains(&CallOutcome::NoCall) {
        return ToolMode::Native;
    }
    if outcomes
        .iter()
        .any(|o| matches!(o, CallOutcome::Structured | CallOutcome::Leaked))
    {
        return ToolMode::Auto;
    }
    ToolMode::Constrained
}
