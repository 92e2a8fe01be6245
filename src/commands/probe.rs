//! `vouch probe`: flags to `probe::Options`, the probe on the command runtime (Ctrl-C ends it), the console
//! summary and the `--json` report.

use anyhow::Result;

use crate::cli::ProbeArgs;
use crate::error::VouchError;
use crate::probe::{self, report::CallOutcome, Report};

use super::{output, runtime};

pub fn run(args: ProbeArgs) -> Result<i32> {
    let mut opts = probe::Options::new(args.endpoint.clone());
    opts.model = args.model.clone();
    opts.quick = args.quick;
    opts.reps = args.reps.max(3);
    if let Some(var) = &args.api_key_env {
        opts.api_key = Some(std::env::var(var).map_err(|_| {
            VouchError::usage_hint(
                format!("the environment variable {var} is not set"),
                format!("export {var}=<key>, or leave out --api-key-env"),
            )
        })?);
    }
    let report = runtime::block_on(|cancel| async move {
        let out = tokio::select! {
            r = probe::run(&opts) => r,
            _ = cancel.cancelled() => Err(VouchError::Interrupted.into()),
        };
        runtime::unless_interrupted(&cancel, out)
    })
    .map_err(|e| {
        let hint = format!(
            "check that the server at {} is running and answers GET /v1/models (llama-server: \
             `vouch model serve`)",
            args.endpoint
        );
        if e.chain().any(|c| c.downcast_ref::<VouchError>().is_some()) {
            e
        } else {
            anyhow::Error::new(VouchError::infra_hint(format!("{e:#}"), hint))
        }
    })?;
    if let Some(path) = &args.json {
        super::write_file(path, &serde_json::to_string_pretty(&report)?)?;
    }
    // `vouch run` against this endpoint uses what was found.
    probe::first_look::remember(&report, args.model.as_deref(), &probe::cache::default_dir());
    let mut out = output::stdout();
    out.print(&console(&report))?;
    out.finish()?;
    Ok(0)
}

fn opt<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or_else(|| "?".to_string(), |v| v.to_string())
}

/// The summary a person reads.
pub fn console(r: &Report) -> String {
    let mut s = String::new();
    let mut line = |l: String| {
        s.push_str(&l);
        s.push('\n');
    };
    line(format!(
        "endpoint  {}  ({})",
        r.endpoint,
        if r.llama_server {
            "llama-server"
        } else {
            "OpenAI-compatible"
        }
    ));
    line(format!(
        "model     {}   listed: {}",
        r.model,
        if r.models.is_empty() {
            "none".to_string()
        } else {
            r.models.join(", ")
        }
    ));
    let c = &r.context;
    line(format!(
        "context   advertised {}  per slot {}  trained {}  slots {}  measured (needle) {}",
        opt(c.advertised),
        opt(c.n_ctx_slot),
        opt(c.n_ctx_train),
        opt(c.slots),
        opt(c.measured)
    ));
    line(format!(
        "tools     template supports tools: {}",
        opt(c.supports_tools)
    ));
    for run in &r.tool_calls.runs {
        let what = match run.outcome {
            CallOutcome::Structured => "structured tool_calls".to_string(),
            CallOutcome::Leaked => format!(
                "leaked as text ({}), recovered by vouch",
                run.leaked_format.as_deref().unwrap_or("?")
            ),
            CallOutcome::NoCall => "no call".to_string(),
            CallOutcome::Error => format!("error: {}", run.error.as_deref().unwrap_or("")),
        };
        line(format!(
            "          tool_choice {:<9} {what}",
            run.tool_choice
        ));
    }
    if let Some(t) = &r.template {
        let learned = match (&t.learned, &t.error) {
            (Some(l), _) => format!(
                "learned: opens {:?}, closes {:?}{}",
                l.open,
                l.close,
                l.known_format
                    .as_deref()
                    .map_or(String::new(), |f| format!(", read by vouch's {f} parser"))
            ),
            (None, Some(e)) => e.clone(),
            (None, None) => "nothing learned".to_string(),
        };
        line(format!(
            "template  {}  {learned}",
            &t.hash[..12.min(t.hash.len())]
        ));
    }
    for n in &r.needle {
        line(format!(
            "needle    at {:>6} tokens: {}",
            n.depth_tokens,
            match (&n.error, n.found) {
                (Some(e), _) => format!("error: {e}"),
                (None, true) => "found verbatim".to_string(),
                (None, false) => "NOT found".to_string(),
            }
        ));
    }
    line(format!(
        "{:<10}{:>7} {:>8} {:>22} {:>22}",
        "speed", "depth", "prompt", "prefill tok/s", "decode tok/s"
    ));
    for sp in &r.speed {
        line(format!(
            "{:<10}{:>7} {:>8.0} {:>13.1} ± {:<6.1} {:>13.1} ± {:<6.1}",
            "",
            sp.depth_tokens,
            sp.prompt_tokens,
            sp.prefill_tps_mean,
            sp.prefill_tps_stdev,
            sp.decode_tps_mean,
            sp.decode_tps_stdev
        ));
    }
    line(format!(
        "cache     reused {} of a repeated prefix ({} of {} prompt tokens)",
        r.cache
            .reused_fraction
            .map_or("?".to_string(), |f| format!("{:.0}%", f * 100.0)),
        opt(r.cache.cached_tokens),
        opt(r.cache.prompt_tokens)
    ));
    line(format!("tool_mode {} (recommended)", tool_mode_name(r)));
    if r.warnings.is_empty() {
        line("warnings  none".to_string());
    }
    for w in &r.warnings {
        line(format!("warning   {}", w.message));
    }
    line(format!("took      {:.1}s", r.elapsed_s));
    s
}

fn tool_mode_name(r: &Report) -> &'static str {
    match r.tool_mode {
        crate::model::ToolMode::Native => "native",
        crate::model::ToolMode::Constrained => "constrained",
        crate::model::ToolMode::Auto => "auto",
    }
}
