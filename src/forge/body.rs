//! The pull-request body: the repository's pull-request template when it has one, then the evidence (the
//! task, the gate's Markdown report, `Fixes #N`, the model and vouch's version), always under
//! [`MAX_BODY_CHARS`]. When the whole report does not fit, the summary stays and the report goes in a
//! collapsed section cut to fit, pointing at the full report in the run's records.

/// The forges' limit on a pull-request body, in characters.
pub const MAX_BODY_CHARS: usize = 65_536;
/// Where the evidence goes in a template that holds this marker; after the template otherwise.
pub const TEMPLATE_MARKER: &str = "<!-- vouch -->";
/// The templates looked for, in order, at the branch's commit.
pub const TEMPLATE_PATHS: &[&str] = &[
    ".github/pull_request_template.md",
    ".github/PULL_REQUEST_TEMPLATE.md",
    ".gitea/pull_request_template.md",
    ".gitea/PULL_REQUEST_TEMPLATE.md",
    "docs/pull_request_template.md",
    "pull_request_template.md",
    "PULL_REQUEST_TEMPLATE.md",
];

/// What a body is made of.
#[derive(Clone, Debug, Default)]
pub struct Parts {
    /// The run's summary (status, claim, verdict): short, always kept whole.
    pub summary: String,
    /// The gate's Markdown report: cut when it does not fit.
    pub report: String,
    /// The task text.
    pub task: Option<String>,
    /// The issue it fixes.
    pub issue: Option<u64>,
    pub model: Option<String>,
    /// The repository's pull-request template.
    pub template: Option<String>,
}

/// The body, under [`MAX_BODY_CHARS`].
pub fn compose(parts: &Parts) -> String {
    compose_within(parts, MAX_BODY_CHARS)
}

/// [`compose`] under any limit (the tests use small ones).
pub fn compose_within(parts: &Parts, limit: usize) -> String {
    let (head, tail) = frame(parts);
    let full = format!("{head}{}{tail}", parts.report);
    if full.chars().count() <= limit {
        return full;
    }
    let open = "<details><summary>The gate's report (cut to fit; the full report is in the run's records, \
                .vouch/report.md)</summary>\n\n";
    let close = "\n\n…\n</details>\n";
    let fixed =
        head.chars().count() + tail.chars().count() + open.chars().count() + close.chars().count();
    let room = limit.saturating_sub(fixed);
    let cut: String = parts.report.chars().take(room).collect();
    let body = format!("{head}{open}{cut}{close}{tail}");
    if body.chars().count() <= limit {
        body
    } else {
        body.chars().take(limit).collect()
    }
}

/// The text of vouch's report comment on a pull request: the one-line headline, then the gate's report,
/// in a collapsed section cut to fit when the whole does not fit under [`MAX_BODY_CHARS`] (less `reserve`,
/// the room the caller's marker takes).
pub fn comment(headline: &str, report: &str, reserve: usize) -> String {
    let limit = MAX_BODY_CHARS.saturating_sub(reserve);
    let tail = format!(
        "\n\n<sub>Checked by vouch {}.</sub>\n",
        env!("CARGO_PKG_VERSION")
    );
    let full = format!("{headline}\n\n{report}{tail}");
    if full.chars().count() <= limit {
        return full;
    }
    let open = "<details><summary>The gate's report (cut to fit)</summary>\n\n";
    let close = "\n\n…\n</details>";
    let fixed = headline.chars().count() + 2 + open.len() + close.len() + tail.chars().count();
    let cut: String = report.chars().take(limit.saturating_sub(fixed)).collect();
    let body = format!("{headline}\n\n{open}{cut}{close}{tail}");
    body.chars().take(limit).collect()
}

/// The text before and after the report.
fn frame(parts: &Parts) -> (String, String) {
    let mut head = String::new();
    head.push_str(parts.summary.trim_end());
    head.push_str("\n\n");
    if let Some(task) = parts.task.as_deref().filter(|t| !t.trim().is_empty()) {
        head.push_str("## Task\n\n");
        head.push_str(task.trim_end());
        head.push_str("\n\n");
    }
    let mut tail = String::from("\n\n");
    if let Some(n) = parts.issue {
        tail.push_str(&format!("Fixes #{n}\n\n"));
    }
    tail.push_str(&format!(
        "<sub>Opened by vouch {}{}.</sub>\n",
        env!("CARGO_PKG_VERSION"),
        parts
            .model
            .as_deref()
            .map_or_else(String::new, |m| format!(" with the model {m}"))
    ));
    match parts.template.as_deref().filter(|t| !t.trim().is_empty()) {
        Some(t) => match t.split_once(TEMPLATE_MARKER) {
            Some((before, after)) => (format!("{before}{head}"), format!("{tail}{after}")),
            None => (format!("{}\n\n---\n\n{head}", t.trim_end()), tail),
        },
        None => (head, tail),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(report: &str) -> Parts {
        Parts {
            summary: "# Fix add\n\nstatus **verified**".into(),
            report: report.into(),
            task: Some("add() ignores negatives".into()),
            issue: Some(7),
            model: Some("qwen".into()),
            template: None,
        }
    }

    #[test]
    fn a_body_holds_the_evidence() {
        let body = compose(&parts("## Gate: PASS"));
        for want in [
            "# Fix add",
            "## Task",
            "add() ignores",
            "## Gate: PASS",
            "Fixes #7",
            "qwen",
            "vouch 0.",
        ] {
            assert!(body.contains(want), "{want} missing in {body}");
        }
    }

    #[test]
    fn a_long_report_is_cut_into_a_collapsed_section() {
        let report = "é".repeat(100_000);
        let body = compose(&parts(&report));
        assert!(body.chars().count() <= MAX_BODY_CHARS);
        assert!(
            body.contains("<details>") && body.contains("Fixes #7") && body.contains("# Fix add")
        );
        let small = compose_within(&parts(&report), 300);
        assert!(small.chars().count() <= 300, "{}", small.chars().count());
    }

    #[test]
    fn a_comment_holds_the_headline_and_fits() {
        let c = comment("**PASS**", "## Gate: PASS", 40);
        assert!(
            c.starts_with("**PASS**\n\n## Gate: PASS") && c.contains("vouch 0."),
            "{c}"
        );
        let c = comment("**FAIL**", &"x".repeat(100_000), 40);
        assert!(c.chars().count() <= MAX_BODY_CHARS - 40);
        assert!(
            c.starts_with("**FAIL**") && c.contains("<details>"),
            "{}",
            &c[..80]
        );
    }

    #[test]
    fn the_template_is_honoured() {
        let mut p = parts("R");
        p.template = Some("## Checklist\n- [ ] tests".into());
        let body = compose(&p);
        assert!(
            body.starts_with("## Checklist\n- [ ] tests\n\n---\n\n# Fix add"),
            "{body}"
        );
        p.template = Some(format!("Intro\n{TEMPLATE_MARKER}\nOutro"));
        let body = compose(&p);
        assert!(
            body.starts_with("Intro\n# Fix add") && body.ends_with("\nOutro"),
            "{body}"
        );
    }
}
