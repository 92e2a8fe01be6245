//! cargo's `--message-format=json`: one JSON object per line on stdout, `compiler-message` objects carrying
//! rustc's (or clippy's) diagnostic with its code, level, spans and rendering, and the target it was compiled
//! for; cargo's own lines (`Checking ...`, `error: could not compile ...`) stay text on stderr.
//!
//! A finding is a diagnostic with a primary span (or an error without one that is not a summary, such as a
//! linker failure); its rule is the lint or error code, its file and position those of the primary span (the
//! outermost macro call site inside the workspace when the span points into a macro), its text the span's
//! source lines. The other lines are kept for people, and the error lines among them (a failed build script,
//! a manifest error) are findings of the text fallback, so a failure without diagnostics still compares.

use serde::Deserialize;

use super::{text, Finding, Findings, Format, Level, Target};

#[derive(Deserialize)]
struct Line {
    reason: String,
    #[serde(default)]
    message: Option<Diagnostic>,
    #[serde(default)]
    target: Option<RawTarget>,
}

#[derive(Deserialize)]
struct RawTarget {
    #[serde(default)]
    kind: Vec<String>,
    #[serde(default)]
    name: String,
    #[serde(default)]
    src_path: String,
}

#[derive(Deserialize)]
struct Diagnostic {
    message: String,
    #[serde(default)]
    code: Option<Code>,
    level: String,
    #[serde(default)]
    spans: Vec<Span>,
    #[serde(default)]
    rendered: Option<String>,
}

#[derive(Deserialize)]
struct Code {
    code: String,
}

#[derive(Clone, Deserialize)]
struct Span {
    file_name: String,
    line_start: u32,
    column_start: u32,
    #[serde(default)]
    is_primary: bool,
    #[serde(default)]
    text: Vec<SpanText>,
    #[serde(default)]
    expansion: Option<Box<Expansion>>,
}

#[derive(Clone, Deserialize)]
struct SpanText {
    text: String,
}

#[derive(Clone, Deserialize)]
struct Expansion {
    span: Span,
}

/// Reads cargo's JSON output, or None when `log` has none (not a cargo JSON run).
pub fn read(log: &str) -> Option<Findings> {
    let mut items = Vec::new();
    let mut human = String::new();
    let mut any_json = false;
    for line in log.lines() {
        let parsed = line
            .starts_with('{')
            .then(|| serde_json::from_str::<Line>(line).ok())
            .flatten();
        let Some(msg) = parsed else {
            human.push_str(line);
            human.push('\n');
            if !text::is_summary(line) {
                items.extend(text::read(line).items);
            }
            continue;
        };
        any_json = true;
        if msg.reason != "compiler-message" {
            continue;
        }
        let Some(d) = msg.message else { continue };
        if let Some(r) = &d.rendered {
            human.push_str(r.trim_end());
            human.push('\n');
        }
        let target = msg.target.map(|t| Target {
            kind: t.kind.first().cloned().unwrap_or_default(),
            name: t.name,
            root: t.src_path,
        });
        if let Some(f) = finding(&d, target) {
            items.push(f);
        }
    }
    any_json.then_some(Findings {
        format: Format::Cargo,
        items,
        human,
    })
}

/// The finding of one diagnostic, None for notes and summaries.
fn finding(d: &Diagnostic, target: Option<Target>) -> Option<Finding> {
    let level = match d.level.as_str() {
        "error" | "error: internal compiler error" => Level::Error,
        "warning" => Level::Warning,
        _ => return None,
    };
    let primary = d.spans.iter().find(|s| s.is_primary).or(d.spans.first());
    if primary.is_none() && text::is_summary(&format!("{}: {}", d.level, d.message)) {
        return None;
    }
    let span = primary.map(in_workspace);
    Some(Finding {
        rule: d
            .code
            .as_ref()
            .map(|c| c.code.clone())
            .unwrap_or_else(|| d.message.clone()),
        file: span
            .as_ref()
            .map(|s| s.file_name.clone())
            .unwrap_or_default(),
        line: span.as_ref().map(|s| s.line_start),
        column: span.as_ref().map(|s| s.column_start),
        end_line: None,
        text: span
            .as_ref()
            .map(|s| {
                s.text
                    .iter()
                    .map(|t| t.text.trim())
                    .collect::<Vec<_>>()
                    .join("\n")
            })
            .unwrap_or_default(),
        message: d.message.clone(),
        level,
        targets: target.into_iter().collect(),
    })
}

/// A span inside the workspace: a span in a file outside it (a macro from a dependency or the standard library)
/// is replaced by the call site it was expanded from, outermost last.
fn in_workspace(span: &Span) -> Span {
    let outside = |s: &Span| s.file_name.starts_with('/') || s.file_name.starts_with('{');
    let mut s = span.clone();
    while outside(&s) {
        match s.expansion.take() {
            Some(e) => s = e.span,
            None => return span.clone(),
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::lint::new_findings;

    /// A compiler-message line as cargo prints it.
    fn message(
        kind: &str,
        level: &str,
        code: Option<&str>,
        msg: &str,
        span: Option<(&str, u32, u32, &str)>,
    ) -> String {
        let spans = match span {
            Some((file, line, col, text)) => serde_json::json!([{
                "file_name": file, "line_start": line, "line_end": line, "column_start": col,
                "column_end": col + 1, "is_primary": true,
                "text": [{"text": text, "highlight_start": col, "highlight_end": col + 1}],
                "expansion": null
            }]),
            None => serde_json::json!([]),
        };
        serde_json::json!({
            "reason": "compiler-message",
            "package_id": "path+file:///r#m@0.1.0",
            "target": {"kind": [kind], "crate_types": [kind], "name": "m", "src_path": "/r/src/lib.rs"},
            "message": {
                "message": msg, "level": level, "spans": spans,
                "code": code.map(|c| serde_json::json!({"code": c, "explanation": null})),
                "children": [], "rendered": format!("{level}: {msg}\n")
            }
        })
        .to_string()
    }

    #[test]
    fn a_clippy_finding_has_its_lint_code_location_and_flagged_text() {
        let log = [
            "    Checking m v0.1.0 (/r)".to_string(),
            message(
                "lib",
                "error",
                Some("clippy::needless_return"),
                "unneeded `return` statement",
                Some(("src/lib.rs", 12, 5, "    return x * 2;")),
            ),
            message(
                "lib",
                "error",
                None,
                "aborting due to 1 previous error",
                None,
            ),
            "error: could not compile `m` (lib) due to 1 previous error".into(),
            "{\"reason\":\"build-finished\",\"success\":false}".into(),
        ]
        .join("\n");
        let f = read(&log).unwrap();
        assert_eq!(f.format, Format::Cargo);
        assert_eq!(f.items.len(), 1, "{:?}", f.items);
        let x = &f.items[0];
        assert_eq!(
            x.key(),
            ("clippy::needless_return", "src/lib.rs", "return x * 2;")
        );
        assert_eq!(
            x.describe(),
            "src/lib.rs:12:5: unneeded `return` statement [clippy::needless_return]"
        );
        assert_eq!(x.targets[0].kind, "lib");
        assert!(f.human.contains("Checking m v0.1.0"), "{}", f.human);
        assert!(
            f.human.contains("error: unneeded `return` statement"),
            "{}",
            f.human
        );
        assert!(!f.human.contains("\"reason\""), "{}", f.human);
    }

    #[test]
    fn removing_one_of_two_warnings_leaves_nothing_new_whatever_the_summaries_say() {
        let finding = |line: u32, text: &str| {
            message(
                "lib",
                "error",
                Some("clippy::needless_return"),
                "unneeded `return` statement",
                Some(("src/lib.rs", line, 5, text)),
            )
        };
        let base = [
            finding(17, "    return x * 2;"),
            finding(22, "    return x * 3;"),
            "error: could not compile `m` (lib) due to 2 previous errors".into(),
        ]
        .join("\n");
        let head = [
            finding(20, "    return x * 3;"),
            "error: could not compile `m` (lib test) due to 1 previous error".into(),
        ]
        .join("\n");
        let (head, base) = (read(&head).unwrap(), read(&base).unwrap());
        assert!(new_findings(&head.items, &base.items).is_empty());
        assert_eq!(new_findings(&base.items, &head.items).len(), 1);
    }

    #[test]
    fn a_span_inside_a_foreign_macro_is_located_at_its_call_site_in_the_workspace() {
        let line = serde_json::json!({
            "reason": "compiler-message",
            "target": {"kind": ["lib"], "name": "m", "src_path": "/r/src/lib.rs"},
            "message": {
                "message": "cannot add `&str` to `i64`", "level": "error",
                "code": {"code": "E0277"}, "rendered": "error[E0277]: cannot add",
                "spans": [{
                    "file_name": "/rustc/abc/library/core/src/ops/arith.rs", "line_start": 99, "column_start": 8,
                    "is_primary": true, "text": [{"text": "macro body"}],
                    "expansion": {"span": {
                        "file_name": "src/lib.rs", "line_start": 4, "column_start": 11, "is_primary": false,
                        "text": [{"text": "    a + b + \"one\""}], "expansion": null
                    }}
                }]
            }
        })
        .to_string();
        let f = read(&line).unwrap();
        assert_eq!(f.items[0].location(), "src/lib.rs:4:11");
        assert_eq!(f.items[0].text, "a + b + \"one\"");
    }

    #[test]
    fn an_error_line_outside_the_json_is_a_finding_and_a_summary_is_not() {
        let log = [
            "error: failed to run custom build command for `m v0.1.0 (/r)`".to_string(),
            "warning: build failed, waiting for other jobs to finish...".into(),
            message(
                "bench",
                "error",
                Some("E0554"),
                "`#![feature]` may not be used on the stable release channel",
                Some(("benches/b.rs", 1, 1, "#![feature(test)]")),
            ),
            message(
                "bench",
                "failure-note",
                None,
                "For more information about this error, try `rustc --explain E0554`.",
                None,
            ),
        ]
        .join("\n");
        let f = read(&log).unwrap();
        let described: Vec<String> = f.items.iter().map(|i| i.describe()).collect();
        assert_eq!(
            described,
            vec![
                "error: failed to run custom build command for `m v0.1.0 (/r)`",
                "benches/b.rs:1:1: `#![feature]` may not be used on the stable release channel [E0554]",
            ]
        );
        assert_eq!(f.items[1].targets[0].kind, "bench");
    }

    #[test]
    fn output_without_cargo_json_is_not_read_here() {
        assert!(read("error: something\n{\"a\": 1}\n").is_none());
    }
}
