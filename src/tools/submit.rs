//! `submit`: the model's claim that it is done (GO) or cannot do it (NO-GO), with a summary.
//!
//! The tool only records the [`Submission`] in the call's context; what follows (the commit, the gate, a
//! repair cycle) is the loop's business, after the turn's other calls.

use serde_json::{json, Value};

use super::{object, CallFuture, Context, Tool, ToolError};
use crate::gate::outcome::Claim;

/// What the model submitted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Submission {
    pub claim: Claim,
    pub summary: String,
}

pub struct Submit;

impl Tool for Submit {
    fn name(&self) -> &'static str {
        "submit"
    }

    fn description(&self) -> &'static str {
        "Finish the task with a verdict and a summary of the change."
    }

    fn parameters(&self) -> Value {
        object(
            json!({
                "verdict": {"type": "string", "enum": ["GO", "NO-GO"], "description": "GO if the change is complete and the tests pass, NO-GO otherwise."},
                "summary": {"type": "string", "description": "What was changed and why, for the pull request."}
            }),
            &["verdict", "summary"],
        )
    }

    fn mutates(&self) -> bool {
        false
    }

    /// `go`, `NOGO` and `NO_GO` are read too, and a missing summary is empty.
    fn strict(&self) -> bool {
        false
    }

    fn call<'a>(&'a self, ctx: &'a mut Context<'_>, args: &'a Value) -> CallFuture<'a> {
        Box::pin(async move {
            let submission = read(args)?;
            let text = match submission.claim {
                Claim::Go => "Submitted GO. The change is being verified by the gate.",
                Claim::NoGo => "Submitted NO-GO.",
            };
            ctx.submission = Some(submission);
            Ok(text.to_string())
        })
    }
}

fn read(args: &Value) -> Result<Submission, ToolError> {
    let verdict = args.get("verdict").and_then(Value::as_str).map(str::trim);
    let claim = match verdict.map(str::to_ascii_uppercase).as_deref() {
        Some("GO") => Claim::Go,
        Some("NO-GO") | Some("NOGO") | Some("NO_GO") => Claim::NoGo,
        _ => {
            return Err(ToolError::failed(
                "submit needs verdict \"GO\" or \"NO-GO\" and a summary.",
            ))
        }
    };
    let summary = args
        .get("summary")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    Ok(Submission { claim, summary })
}
