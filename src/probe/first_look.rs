//! `vouch run`'s look at an endpoint before anything is set up for a run.
//!
//! The first time a run meets an endpoint (with this model and this chat template), it runs the short part
//! of the probe: `/props`, the template learned, and the tool-call round trip (two requests; no needles, no
//! speed table). What it recommends is cached (`cache.rs`) and applied: the tool mode, unless one was
//! configured, and the call syntax learned from the template. A probe that shows the run cannot work (the
//! template drops tool-call arguments, no tool call comes back in a forced native mode, every round trip
//! failed) is an error that says what to do, before any worktree exists.
//!
//! What is not probed: an endpoint that does not answer at all (the run's own first request says so,
//! and records it); a server that is not llama-server (no `/props`, so no template to key the result by:
//! an entry written by `vouch probe` is still used); and the llama-server vouch manages itself, which is
//! known-good (vouch builds it, picks the model and its template, and its tool calls are tested end to
//! end), and listens on a new port each run, so a result keyed by endpoint would never be met again.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;
use serde_json::Value;

use super::cache::{self, Entry, Key};
use super::http::Endpoint;
use super::report::{CallOutcome, Report};
use super::Options;
use crate::error::VouchError;
use crate::model::{ModelConfig, ToolMode};
use crate::toolcall::learn;
use crate::ui::Ui;

/// How the run asked to be probed.
#[derive(Clone, Debug)]
pub struct Ask {
    /// `--no-probe`: use nothing, cached or not.
    pub skip: bool,
    /// The tool mode was configured (`--tool-mode`, `VOUCH_TOOL_MODE`, `tool_mode` in a `vouch.toml`): it
    /// wins over the probe's.
    pub explicit_mode: bool,
    pub cache_dir: PathBuf,
    /// Longest wait for one probe request.
    pub timeout: Duration,
}

impl Ask {
    pub fn new(skip: bool, explicit_mode: bool) -> Ask {
        Ask {
            skip,
            explicit_mode,
            cache_dir: cache::default_dir(),
            timeout: Duration::from_secs(120),
        }
    }
}

/// Where what the run uses came from.
#[derive(Clone, Debug, PartialEq)]
pub enum Source {
    /// Probed now, and cached.
    Probed(Entry),
    /// From an earlier probe of the same endpoint, model and template.
    Cached(Entry),
    /// Nothing probed, for this reason.
    Skipped(Skip),
}

/// Why nothing was probed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Skip {
    NoProbe,
    Unreachable,
    NotLlamaServer,
}

/// Why the endpoint is unfit for the run.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Unfit {
    #[error(
        "the chat template of {0} drops tool-call arguments: every call the model sees in its history \
         loses them, and a parser learned from it reads no argument"
    )]
    DropsArguments(String),
    #[error("no tool call came back from {0} with --tool-mode native ({1})")]
    NoToolCalls(String, String),
    #[error("the tool-call round trip with {0} failed: {1}")]
    RoundTripFailed(String, String),
}

impl Unfit {
    fn hint(&self) -> &'static str {
        match self {
            Unfit::DropsArguments(_) => {
                "serve the model with a corrected template (llama-server --jinja --chat-template-file FILE), \
                 or pass --no-probe to run anyway"
            }
            Unfit::NoToolCalls(..) => {
                "use --tool-mode constrained (or auto), or a chat template with tool support; \
                 `vouch probe --endpoint URL` shows the details"
            }
            Unfit::RoundTripFailed(..) => {
                "check the server's log; `vouch probe --endpoint URL` shows the details, \
                 --no-probe skips this check"
            }
        }
    }
}

/// Whether a fresh probe's report shows the run cannot work.
pub fn unfit(report: &Report, mode: ToolMode, explicit_mode: bool) -> Option<Unfit> {
    let ep = report.endpoint.clone();
    if report.template.as_ref().is_some_and(|t| t.drops_arguments) {
        return Some(Unfit::DropsArguments(ep));
    }
    let runs = &report.tool_calls.runs;
    if !runs.is_empty() && runs.iter().all(|r| r.outcome == CallOutcome::Error) {
        let why = runs
            .iter()
            .find_map(|r| r.error.clone())
            .unwrap_or_default();
        return Some(Unfit::RoundTripFailed(ep, why));
    }
    let no_call = runs
        .iter()
        .all(|r| matches!(r.outcome, CallOutcome::NoCall | CallOutcome::Error));
    if explicit_mode && mode == ToolMode::Native && no_call {
        let why = if report.context.supports_tools == Some(false) {
            "the chat template does not render tools"
        } else {
            "the model answered in prose"
        };
        return Some(Unfit::NoToolCalls(ep, why.to_string()));
    }
    None
}

/// [`prepare`], ended by Ctrl-C.
pub async fn prepare_or_cancel(
    model: &mut ModelConfig,
    ask: &Ask,
    ui: &Ui,
    cancel: &tokio_util::sync::CancellationToken,
) -> Result<Source> {
    tokio::select! {
        r = prepare(model, ask, ui) => r,
        _ = cancel.cancelled() => Err(VouchError::Interrupted.into()),
    }
}

/// Probes the run's endpoint or reads the cache, applies the result to `model`, and tells the console
/// where each setting came from. Errors only for an unfit endpoint.
pub async fn prepare(model: &mut ModelConfig, ask: &Ask, ui: &Ui) -> Result<Source> {
    if ask.skip {
        ui.line("  --no-probe: the endpoint is not probed; configured settings only");
        return Ok(Source::Skipped(Skip::NoProbe));
    }
    let api_key = model
        .api_key_env
        .as_deref()
        .and_then(|v| std::env::var(v).ok());
    let ep = Endpoint::new(&model.endpoint, &model.model, api_key.clone(), ask.timeout)?;
    let props = match ep.get("/props").await {
        Ok(p) => p,
        // The run's first request says so, with its report.
        Err(_) => return Ok(Source::Skipped(Skip::Unreachable)),
    };
    let template = props
        .as_ref()
        .and_then(|p| p.get("chat_template"))
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty());
    let llama = props.as_ref().is_some_and(|p| {
        [
            "default_generation_settings",
            "chat_template",
            "total_slots",
        ]
        .iter()
        .any(|k| p.get(k).is_some())
    });
    let key = Key::new(
        &model.endpoint,
        &model.model,
        template.map(learn::template_hash),
    );
    if let Some(entry) = cache::load(&ask.cache_dir, &key) {
        apply(model, &entry, ask, ui, "cached probe");
        return Ok(Source::Cached(entry));
    }
    if !llama {
        ui.line(&format!(
            "  {} is not llama-server (no /props): not probed; `vouch probe --endpoint {}` checks it \
             and the next runs use what it finds",
            model.endpoint, model.endpoint
        ));
        return Ok(Source::Skipped(Skip::NotLlamaServer));
    }
    let mut opts = Options::new(model.endpoint.clone());
    opts.model = Some(model.model.clone());
    opts.api_key = api_key;
    opts.quick = true;
    opts.request_timeout = ask.timeout;
    let pb = ui.start(&format!(
        "probing {} (chat template, tool-call round trip)",
        model.endpoint
    ));
    let report = super::tools_only(&opts).await;
    pb.finish_and_clear();
    let report = report?;
    if let Some(why) = unfit(&report, model.tool_mode, ask.explicit_mode) {
        let hint = why.hint();
        return Err(VouchError::infra_hint(why.to_string(), hint).into());
    }
    let entry = Entry::from_report(key, &report);
    match cache::store(&ask.cache_dir, &entry) {
        Ok(path) => tracing::debug!("probe result cached at {}", path.display()),
        Err(e) => tracing::debug!("cannot cache the probe result: {e:#}"),
    }
    ui.line(&format!(
        "  probed {} in {:.1}s: {}",
        model.endpoint,
        report.elapsed_s,
        calls_text(&entry)
    ));
    apply(model, &entry, ask, ui, "probe");
    Ok(Source::Probed(entry))
}

/// Caches what `vouch probe` found for later runs (under the model asked for, as `vouch run` sends it),
/// unless it shows an unfit endpoint: a run must probe that one again and stop.
pub fn remember(
    report: &Report,
    asked_model: Option<&str>,
    dir: &std::path::Path,
) -> Option<PathBuf> {
    if unfit(report, ToolMode::Auto, false).is_some() {
        return None;
    }
    let key = Key::new(
        &report.endpoint,
        asked_model.unwrap_or(crate::model::DEFAULT_MODEL),
        report.template.as_ref().map(|t| t.hash.clone()),
    );
    cache::store(dir, &Entry::from_report(key, report))
        .map_err(|e| tracing::debug!("cannot cache the probe result: {e:#}"))
        .ok()
}

fn calls_text(entry: &Entry) -> String {
    match (&entry.leaked_format, entry.structured) {
        (_, true) => "tool calls come back structured".to_string(),
        (Some(f), false) => format!("tool calls leak as text ({f}); vouch recovers them"),
        (None, false) => "no tool call came back".to_string(),
    }
}

fn mode_name(m: ToolMode) -> &'static str {
    match m {
        ToolMode::Native => "native",
        ToolMode::Constrained => "constrained",
        ToolMode::Auto => "auto",
    }
}

/// Uses what the probe found, except a configured tool mode.
fn apply(model: &mut ModelConfig, entry: &Entry, ask: &Ask, ui: &Ui, from: &str) {
    if ask.explicit_mode {
        if model.tool_mode != entry.tool_mode {
            ui.line(&format!(
                "  tool mode {} (configured; the {from} recommends {})",
                mode_name(model.tool_mode),
                mode_name(entry.tool_mode)
            ));
        }
    } else {
        model.tool_mode = entry.tool_mode;
        ui.line(&format!(
            "  tool mode {} (from the {from})",
            mode_name(entry.tool_mode)
        ));
    }
    if let Some(l) = &entry.learned {
        model.learned = Some(l.clone());
        ui.line(&format!(
            "  tool calls in the syntax learned from the chat template are recovered (from the {from}: \
             opens {:?})",
            l.open
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::report::{Context, Template, ToolCalls, ToolRun};

    fn report(outcomes: &[CallOutcome]) -> Report {
        Report {
            endpoint: "http://x".into(),
            model: "m".into(),
            models: vec![],
            llama_server: true,
            tool_calls: ToolCalls {
                runs: outcomes
                    .iter()
                    .map(|o| ToolRun {
                        tool_choice: "auto".into(),
                        outcome: *o,
                        leaked_format: None,
                        name: None,
                        error: (*o == CallOutcome::Error).then(|| "HTTP 500".to_string()),
                    })
                    .collect(),
                ..ToolCalls::default()
            },
            context: Context::default(),
            template: None,
            needle: vec![],
            speed: vec![],
            cache: Default::default(),
            tool_mode: ToolMode::Auto,
            warnings: vec![],
            elapsed_s: 0.0,
        }
    }

    #[test]
    fn a_template_that_drops_arguments_is_unfit_in_any_mode() {
        let mut r = report(&[CallOutcome::Structured]);
        r.template = Some(Template {
            hash: "h".into(),
            format: None,
            learned: None,
            drops_arguments: true,
            error: None,
        });
        assert!(matches!(
            unfit(&r, ToolMode::Auto, false),
            Some(Unfit::DropsArguments(_))
        ));
    }

    #[test]
    fn no_call_is_unfit_only_when_native_was_configured() {
        let r = report(&[CallOutcome::NoCall, CallOutcome::NoCall]);
        assert_eq!(unfit(&r, ToolMode::Auto, false), None);
        assert_eq!(unfit(&r, ToolMode::Native, false), None);
        assert!(matches!(
            unfit(&r, ToolMode::Native, true),
            Some(Unfit::NoToolCalls(..))
        ));
    }

    #[test]
    fn every_round_trip_failing_is_unfit() {
        let r = report(&[CallOutcome::Error, CallOutcome::Error]);
        assert!(matches!(
            unfit(&r, ToolMode::Auto, false),
            Some(Unfit::RoundTripFailed(_, why)) if why == "HTTP 500"
        ));
        let r = report(&[CallOutcome::Error, CallOutcome::Structured]);
        assert_eq!(unfit(&r, ToolMode::Auto, false), None);
    }
}
