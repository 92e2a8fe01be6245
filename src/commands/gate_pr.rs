//! `vouch gate --pr`: re-verifies a pull request. The forge names its base and head; both are fetched under
//! `refs/vouch/pr/N/` (the checkout, index, branches and status are not touched) and the gate judges
//! merge-base..head. With `--post`, the verdict goes back as the `vouch/gate` commit status and one sticky
//! report comment, edited on the next run, and nothing at all when the head has not changed since the last
//! report.

use anyhow::Result;

use crate::cli::GateArgs;
use crate::forge::client::Sticky;
use crate::forge::fetch::{self, Fetched};
use crate::forge::{body, Client, Numbered, Target, STICKY_MARKER_ROOM};
use crate::gate::outcome::Verdict;
use crate::gate::report::Report;

use super::pr::{fetch_error, forge_error, ForgeSetup};
use super::{output, runtime};

/// A pull request fetched for the gate.
pub(super) struct PrGate {
    client: Client,
    number: u64,
    fetched: Fetched,
}

/// Fetches the pull request `spec` names and points the gate's `--base`/`--head` at it.
pub(super) fn prepare(args: &mut GateArgs, spec: &str) -> Result<PrGate> {
    let spec = Numbered::parse(spec).map_err(forge_error)?;
    let setup = ForgeSetup::load(&args.repo, &args.forge, false)?;
    let (target, remote_url) = setup.target(&args.repo, spec.repo.as_deref())?;
    let (token, var) = if args.post {
        let (t, v) = setup.need_token(&target)?;
        (Some((t, v.clone())), v)
    } else {
        let (t, _) = setup.token(&target);
        let var = t.as_ref().map(|(_, v)| v.clone()).unwrap_or_default();
        (t, var)
    };
    let mut client = Client::with_token(
        target.clone(),
        token.clone().map(|(t, _)| t),
        var,
        &setup.trust,
    )
    .map_err(forge_error)?;
    let number = spec.number;
    let (head, client) = runtime::block_on(|_cancel| async move {
        let head = client.fetch_pr(number).await.map_err(forge_error)?;
        Ok((head, client))
    })?;
    let creds = setup.credentials(&target, token);
    let shown = remote_url.unwrap_or_else(|| setup.remote.clone());
    let fetched = fetch::fetch_pr(&args.repo, &setup.remote, number, &head, &creds)
        .map_err(|e| fetch_error(e, &shown))?;
    if !args.quiet {
        let mut err = output::stderr();
        err.line(&format!(
            "pull request {}#{number}: {} <- {} ({:.12}..{:.12}, fetched under refs/vouch/pr/{number}/)",
            repo_name(&target),
            head.base_ref,
            head.head_ref,
            fetched.base.to_string(),
            fetched.head.to_string(),
        ))?;
        err.finish()?;
    }
    args.base = Some(fetched.base.to_string());
    args.head = fetched.head.to_string();
    Ok(PrGate {
        client,
        number,
        fetched,
    })
}

/// With `--post`: the sticky report comment, then the status, unless the report for this head is there.
pub(super) fn post(args: &GateArgs, pr: PrGate, report: &Report) -> Result<()> {
    if !args.post {
        return Ok(());
    }
    let PrGate {
        mut client,
        number,
        fetched,
    } = pr;
    let head = fetched.head.to_string();
    let line = one_line(report);
    // Redacted before the comment is cut to fit (the client redacts what it sends again, whole).
    let text = body::comment(
        &format!("**vouch gate: {line}**"),
        &crate::secret::redact(&report.markdown()),
        STICKY_MARKER_ROOM,
    );
    let success = report.verdict == Verdict::Pass;
    let said = runtime::block_on(|_cancel| async move {
        let sticky = client
            .post_sticky_comment(number, &head, &text)
            .await
            .map_err(forge_error)?;
        if !matches!(sticky, Sticky::Unchanged(_)) {
            client
                .post_status(&head, success, &line)
                .await
                .map_err(forge_error)?;
        }
        Ok(sticky)
    })?;
    let head = fetched.head.to_string();
    let mut out = output::stdout();
    out.line(&match said {
        Sticky::Posted(_) => {
            format!("posted the report on #{number} and status vouch/gate on {head:.12}")
        }
        Sticky::Edited(_) => {
            format!("edited the report on #{number} and posted status vouch/gate on {head:.12}")
        }
        Sticky::Unchanged(_) => {
            format!("the report on #{number} is for head {head:.12} already: nothing posted")
        }
    })?;
    out.finish()
}

/// The status's one line: the verdict and the first reason.
fn one_line(report: &Report) -> String {
    let verdict = match report.verdict {
        Verdict::Pass => "PASS",
        Verdict::Fail => "FAIL",
        Verdict::Error => "ERROR",
    };
    match report.reasons.first() {
        Some(reason) => format!("{verdict}: {reason}"),
        None => verdict.to_string(),
    }
}

fn repo_name(target: &Target) -> String {
    format!("{}/{}", target.owner, target.repo)
}
