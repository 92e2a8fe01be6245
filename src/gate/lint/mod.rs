//! Findings of format, vet, lint and build tools read as data, so that a step failing at head and at base is
//! compared by what it flags, not by how its output happens to be printed.
//!
//! A tool's output is read in the most structured shape it has: cargo's `--message-format=json`
//! ([`cargo`]), `ruff check --output-format=json` ([`ruff`]), `go vet -json` ([`govet`]), eslint's `-f json`
//! ([`eslint`]); everything else (rustfmt's diffs, file lists, plain text) by the [`text`] fallback. The shape
//! is recognised from the output itself, so a profile that asks for JSON gets the structured comparison without
//! saying so. Before anything is read, machine-specific paths become placeholders ([`scrub`]): a room, a cache
//! or a home directory differs between head and base and must never make two findings differ.
//!
//! Two runs are compared by [`new_findings`]: each finding's key is its rule, its file and the source text it
//! flags (never its line number, which any edit above it moves), and the keys are counted as a multiset.
//! Summary lines ("could not compile ... due to 2 previous errors", "1 warning emitted") are never findings,
//! and a finding cargo reports once per target (`(bin "fd")` and `(bin "fd" test)`) counts once.
//! Whether a repository configures a tool at all is [`config`].

pub mod cargo;
pub mod config;
pub mod eslint;
pub mod govet;
pub mod ruff;
pub mod scrub;
pub mod text;

use std::collections::BTreeMap;
use std::path::Path;

pub use scrub::Scrub;

/// How serious a finding is, as its tool says.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Error,
    Warning,
}

/// A compilation target (cargo's `target` of a message): its kind (`lib`, `bin`, `test`, `bench`, ...), its
/// name and its root file.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Target {
    pub kind: String,
    pub name: String,
    pub root: String,
}

/// One thing a tool flags.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// The lint code, error code or analyzer (`clippy::needless_return`, `E0425`, `F401`, `printf`,
    /// `rustfmt`); empty for a text line.
    pub rule: String,
    /// The file, relative to the room (placeholders for files outside it); empty when none is named.
    pub file: String,
    pub line: Option<u32>,
    pub column: Option<u32>,
    /// The last line of the flagged span, when the tool says (the text is read from the room up to it).
    pub end_line: Option<u32>,
    /// The flagged source text: the lines of the primary span, each trimmed, joined by newlines. For a text
    /// line, the line itself normalised.
    pub text: String,
    pub message: String,
    pub level: Level,
    /// The targets it was reported for (cargo), in the order first seen.
    pub targets: Vec<Target>,
}

impl Finding {
    /// What two runs are compared by: rule, file and flagged text, never the position.
    pub fn key(&self) -> (&str, &str, &str) {
        (&self.rule, &self.file, &self.text)
    }

    /// `file:line:col`, as far as it is known.
    pub fn location(&self) -> String {
        let mut out = self.file.clone();
        for n in [self.line, self.column].into_iter().flatten() {
            out.push_str(&format!(":{n}"));
        }
        out
    }

    /// The finding in one line, as a reason quotes it: `src/lib.rs:4:11: cannot add ... [E0277]`.
    pub fn describe(&self) -> String {
        let message = self.message.lines().next().unwrap_or_default().trim();
        let mut out = String::new();
        if !self.file.is_empty() {
            out.push_str(&self.location());
            out.push_str(": ");
        }
        out.push_str(message);
        if !self.rule.is_empty() {
            out.push_str(&format!(" [{}]", self.rule));
        }
        out
    }

    /// Whether it fails a step: an error does, a warning where the step fails on warnings.
    pub fn fails(&self, warnings_fail: bool) -> bool {
        self.level == Level::Error || warnings_fail
    }

    /// A finding read from a line of text (the fallback): its key is the normalised line.
    pub fn text_line(line: &str, level: Level) -> Finding {
        Finding {
            rule: String::new(),
            file: String::new(),
            line: None,
            column: None,
            end_line: None,
            text: text::normalize(line),
            message: line.trim().to_owned(),
            level,
            targets: Vec::new(),
        }
    }
}

/// The shape a tool's output was read in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Cargo,
    Ruff,
    GoVet,
    Eslint,
    Text,
}

impl Format {
    /// Whether the tool's output was data (its findings carry rule, file and position).
    pub fn structured(self) -> bool {
        self != Format::Text
    }
}

/// What a step's output says, read once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Findings {
    pub format: Format,
    /// In the order the tool reported them, duplicates (the same finding for another target) merged.
    pub items: Vec<Finding>,
    /// The output as a person would have seen it: JSON replaced by the tools' own rendering (cargo) or by one
    /// line per finding, placeholders in place of machine paths.
    pub human: String,
}

impl Findings {
    /// The first error, else the first finding.
    pub fn first_error(&self) -> Option<&Finding> {
        self.items
            .iter()
            .find(|f| f.level == Level::Error)
            .or(self.items.first())
    }

    /// Findings a structured reader found (not text lines) that fail a step: errors, and warnings too when
    /// the step fails on them.
    pub fn structured_failures(&self, warnings_fail: bool) -> impl Iterator<Item = &Finding> {
        self.items
            .iter()
            .filter(move |f| !f.rule.is_empty() && f.fails(warnings_fail))
    }

    /// The findings a comparison with base counts: for a structured output those that fail the step (a
    /// warning of a build that fails for an error elsewhere is not the failure), for text every finding.
    pub fn compared(&self, warnings_fail: bool) -> Vec<Finding> {
        if !self.format.structured() {
            return self.items.clone();
        }
        self.items
            .iter()
            .filter(|f| f.fails(warnings_fail))
            .cloned()
            .collect()
    }
}

/// Reads a step's output (`log`, the whole of it) into findings. `room` is where the step ran: files named
/// relative to it, and read for the flagged text when the tool does not print it.
pub fn read(log: &str, scrub: &Scrub, room: &Path) -> Findings {
    let log = scrub.apply(&text::strip_ansi(log));
    let mut findings = if let Some(f) = cargo::read(&log) {
        f
    } else if let Some(f) = govet::read(&log) {
        f
    } else if let Some(f) = ruff::read(&log) {
        f
    } else if let Some(f) = eslint::read(&log) {
        f
    } else {
        text::read(&log)
    };
    for f in &mut findings.items {
        f.file = scrub::relative(&f.file);
        for t in &mut f.targets {
            t.root = scrub::relative(&t.root);
        }
        if f.text.is_empty() && !f.file.is_empty() {
            f.text = source_text(room, &f.file, f.line, f.end_line).unwrap_or_default();
        }
    }
    findings.items = merge_duplicates(std::mem::take(&mut findings.items));
    findings.human = scrub::relative_in_text(&findings.human);
    findings
}

/// The first JSON array in `log` that starts a line, and the text around it (other output of the tool).
pub(crate) fn json_array(log: &str) -> Option<(Vec<serde_json::Value>, String)> {
    let mut offset = 0;
    for line in log.split_inclusive('\n') {
        if line.starts_with('[') {
            let mut stream =
                serde_json::Deserializer::from_str(&log[offset..]).into_iter::<serde_json::Value>();
            if let Some(Ok(serde_json::Value::Array(items))) = stream.next() {
                let end = offset + stream.byte_offset();
                let rest = format!("{}{}", &log[..offset], log[end..].trim_start_matches('\n'));
                return Some((items, rest));
            }
        }
        offset += line.len();
    }
    None
}

/// The lines `from..=to` (1-based) of a room file, each trimmed, joined by newlines.
pub fn source_text(room: &Path, file: &str, from: Option<u32>, to: Option<u32>) -> Option<String> {
    let from = from? as usize;
    let to = to.map_or(from, |t| t as usize).max(from);
    if file.starts_with('{') || file.starts_with('/') {
        return None;
    }
    let text = std::fs::read_to_string(room.join(file)).ok()?;
    let lines: Vec<&str> = text
        .lines()
        .skip(from.saturating_sub(1))
        .take(to - from + 1)
        .map(str::trim)
        .collect();
    Some(lines.join("\n"))
}

/// One finding per position and message: cargo reports a finding once for every target that compiles its
/// file (the library and its unit tests, a binary and its tests).
fn merge_duplicates(items: Vec<Finding>) -> Vec<Finding> {
    let mut out: Vec<Finding> = Vec::with_capacity(items.len());
    for f in items {
        let same = out.iter_mut().find(|o| {
            o.rule == f.rule
                && o.file == f.file
                && o.line == f.line
                && o.column == f.column
                && o.message == f.message
                && o.text == f.text
                && o.line.is_some()
        });
        match same {
            Some(o) => {
                for t in f.targets {
                    if !o.targets.contains(&t) {
                        o.targets.push(t);
                    }
                }
            }
            None => out.push(f),
        }
    }
    out
}

/// Findings of `head` whose key does not occur in `base`, counted as multisets (two equal findings at head
/// and one at base leave one new).
pub fn new_findings<'a>(head: &'a [Finding], base: &[Finding]) -> Vec<&'a Finding> {
    let mut counts: BTreeMap<(&str, &str, &str), usize> = BTreeMap::new();
    for f in base {
        *counts.entry(f.key()).or_insert(0) += 1;
    }
    let mut out = Vec::new();
    for f in head {
        match counts.get_mut(&f.key()) {
            Some(n) if *n > 0 => *n -= 1,
            _ => out.push(f),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(rule: &str, file: &str, line: u32, text: &str) -> Finding {
        Finding {
            rule: rule.into(),
            file: file.into(),
            line: Some(line),
            column: Some(5),
            end_line: None,
            text: text.into(),
            message: format!("{rule} here"),
            level: Level::Error,
            targets: Vec::new(),
        }
    }

    #[test]
    fn findings_are_compared_by_rule_file_and_text_as_a_multiset_never_by_line() {
        let base = [
            finding("r", "a.rs", 3, "return x;"),
            finding("r", "a.rs", 9, "return y;"),
        ];
        let head = [
            finding("r", "a.rs", 30, "return y;"),
            finding("r", "a.rs", 40, "return y;"),
            finding("q", "a.rs", 9, "return x;"),
        ];
        let new = new_findings(&head, &base);
        assert_eq!(new.len(), 2);
        assert_eq!(new[0].line, Some(40));
        assert_eq!(new[1].rule, "q");
        assert!(new_findings(&base[1..], &base).is_empty());
    }

    #[test]
    fn a_finding_describes_itself_with_its_location_message_and_rule() {
        let f = finding("clippy::needless_return", "src/lib.rs", 12, "return x;");
        assert_eq!(f.location(), "src/lib.rs:12:5");
        assert_eq!(
            f.describe(),
            "src/lib.rs:12:5: clippy::needless_return here [clippy::needless_return]"
        );
        let line = Finding::text_line("  error: something odd  ", Level::Error);
        assert_eq!(line.describe(), "error: something odd");
    }

    #[test]
    fn the_same_finding_for_two_targets_is_one_finding_with_both_targets() {
        let t = |kind: &str| Target {
            kind: kind.into(),
            name: "fd".into(),
            root: "src/main.rs".into(),
        };
        let mut a = finding("r", "src/main.rs", 3, "x");
        a.targets = vec![t("bin")];
        let mut b = a.clone();
        b.targets = vec![t("test")];
        let merged = merge_duplicates(vec![a.clone(), b, a]);
        assert_eq!(merged.len(), 1);
        assert_eq!(merged[0].targets, vec![t("bin"), t("test")]);
    }

    #[test]
    fn a_finding_without_its_text_gets_the_flagged_lines_from_the_room() {
        let room = tempfile::tempdir().unwrap();
        std::fs::write(room.path().join("a.py"), "import os\n  x = 1  \ny\n").unwrap();
        assert_eq!(
            source_text(room.path(), "a.py", Some(2), Some(3)).as_deref(),
            Some("x = 1\ny")
        );
        assert_eq!(
            source_text(room.path(), "a.py", Some(1), None).as_deref(),
            Some("import os")
        );
        assert_eq!(source_text(room.path(), "{home}/x.rs", Some(1), None), None);
        assert_eq!(source_text(room.path(), "missing.py", Some(1), None), None);
    }
}
