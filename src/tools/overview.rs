//! The repository as a task's first message shows it: the list of its files, and the text of the files the
//! task is about, numbered as `read_file` shows them.
//!
//! A small local model spends its first turns finding and reading the code, and a turn of a 1.5B model on a
//! CPU is a minute. Shown the code at once, it can edit on its first turn. Which files: those the task names
//! (a path or a file name), then those that define a name the task mentions (`median`, `parse_ports`), then
//! those that use it (its tests), within a byte budget; a repository whose text fits the budget is shown
//! whole. A file too large for the budget is shown around the definition the task is about (from its top
//! when the task names it and it defines nothing the task mentions).

use std::collections::BTreeSet;
use std::fs;
use std::sync::LazyLock;

use regex::Regex;

use super::read_file;
use super::text::{line_count, looks_binary, plural};
use super::walk::files;
use super::Workspace;

/// The default budget of shown file text, in bytes (about 2,500 tokens).
pub const DEFAULT_BUDGET: usize = 10_000;
/// At most this many paths in the list.
const MAX_LISTED: usize = 100;
/// Larger files are never read for the overview.
const MAX_FILE: u64 = 512 * 1024;
/// Lines shown before and after a definition when its file is too large to show whole.
const BEFORE: usize = 10;
const AFTER: usize = 40;
/// At most this many names are taken from the task.
const MAX_TERMS: usize = 60;

/// Files never shown: what a build or a package manager writes, of no use to read.
const NEVER_SHOWN: &[&str] = &[
    "Cargo.lock",
    "package-lock.json",
    "yarn.lock",
    "pnpm-lock.yaml",
    "poetry.lock",
    "uv.lock",
    "Pipfile.lock",
    "go.sum",
];

/// Manifests: small, and they hold what a new test needs (the crate's or the module's name).
const MANIFESTS: &[&str] = &[
    "Cargo.toml",
    "package.json",
    "pyproject.toml",
    "setup.py",
    "setup.cfg",
    "go.mod",
    "tsconfig.json",
];

/// The first message's view of the repository.
#[derive(Debug)]
pub struct Overview {
    /// The text appended to the task.
    pub text: String,
    /// The files whose text is shown (whole or around a definition), most relevant first.
    pub shown: Vec<String>,
    /// How many files the repository has.
    pub files: usize,
    /// Bytes of file text shown.
    pub bytes: usize,
}

/// The overview of `ws` for a task whose text is `task`, showing at most `budget` bytes of file text.
/// `None` for an empty repository or a zero budget. Shown files count as seen by the model.
pub fn overview(ws: &Workspace, task: &str, budget: usize) -> Option<Overview> {
    if budget == 0 {
        return None;
    }
    let root = ws.resolve(".").ok()?;
    let all = files(ws, &root, None);
    if all.is_empty() {
        return None;
    }
    let terms = Terms::of(task);
    let mut candidates: Vec<Candidate> = all
        .iter()
        .filter_map(|f| Candidate::read(&f.rel, &f.abs, task, &terms))
        .collect();
    candidates.sort_by(|a, b| b.score.cmp(&a.score).then_with(|| a.rel.cmp(&b.rel)));
    let whole = candidates.iter().map(Candidate::cost).sum::<usize>() <= budget;

    let mut shown = Vec::new();
    let mut texts = Vec::new();
    let mut used = 0;
    for c in &candidates {
        if !whole && c.score == 0 {
            break;
        }
        let window = if used + c.cost() <= budget {
            None
        } else if let Some(line) = c.definition.or(c.named.then_some(1)) {
            let first = line.saturating_sub(BEFORE).max(1);
            let last = (line + AFTER).min(c.lines);
            if used + c.window_cost(first, last) > budget {
                continue;
            }
            Some((first, last))
        } else {
            continue;
        };
        let Ok(text) = read_file::show(ws, &c.rel, window) else {
            continue;
        };
        used += text.len();
        shown.push(c.rel.clone());
        texts.push(text);
    }

    let mut text = format!("\nThe repository's files ({}):\n", all.len());
    for f in all.iter().take(MAX_LISTED) {
        text.push_str(&f.rel);
        text.push('\n');
    }
    if all.len() > MAX_LISTED {
        text.push_str(&format!(
            "and {} more (list_files shows them)\n",
            all.len() - MAX_LISTED
        ));
    }
    if !texts.is_empty() {
        text.push_str(&format!(
            "\n{} as read_file shows {} (the line numbers are not part of the text):\n",
            if whole && shown.len() == all.len() {
                "All of them".to_string()
            } else {
                format!(
                    "The {} the task is about",
                    plural(shown.len(), "file", "files")
                )
            },
            if shown.len() == 1 { "it" } else { "them" }
        ));
        for t in &texts {
            text.push('\n');
            text.push_str(t);
            text.push('\n');
        }
    }
    Some(Overview {
        text,
        shown,
        files: all.len(),
        bytes: used,
    })
}

/// The names a task mentions: in backticks (strong: `median([])`, `Parser::parse`) or as plain words
/// (weak: they count only where code defines them).
struct Terms {
    strong: BTreeSet<String>,
    /// Paths and file names the task mentions (`src/lib.rs`, `ports.go`).
    paths: BTreeSet<String>,
    definition: Option<Regex>,
    mention: Option<Regex>,
}

static BACKTICKS: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new(r"`([^`\n]+)`").ok());
static IDENT: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"[A-Za-z_][A-Za-z0-9_]*").ok());
static PATH: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"[A-Za-z0-9_./-]*[A-Za-z0-9_-]\.[A-Za-z0-9]{1,5}\b").ok());

/// The matches of `re` in `text` (none if the pattern did not compile, which a test rules out).
fn matches<'t>(re: &LazyLock<Option<Regex>>, text: &'t str) -> Vec<&'t str> {
    re.as_ref()
        .map(|re| re.find_iter(text).map(|m| m.as_str()).collect())
        .unwrap_or_default()
}

impl Terms {
    fn of(task: &str) -> Terms {
        let mut strong = BTreeSet::new();
        for span in matches(&BACKTICKS, task) {
            for ident in matches(&IDENT, span.trim_matches('`')) {
                if ident.len() >= 2 {
                    strong.insert(ident.to_string());
                }
            }
        }
        let weak: BTreeSet<String> = matches(&IDENT, task)
            .into_iter()
            .filter(|w| w.len() >= 4 && !strong.contains(*w))
            .map(str::to_string)
            .collect();
        let paths = matches(&PATH, task)
            .into_iter()
            .map(|m| m.trim_start_matches("./").to_string())
            .collect();
        let strong: BTreeSet<String> = strong.into_iter().take(MAX_TERMS).collect();
        let weak: BTreeSet<String> = weak.into_iter().take(MAX_TERMS).collect();
        let alternation = |set: &BTreeSet<String>| {
            set.iter()
                .map(|t| regex::escape(t))
                .collect::<Vec<_>>()
                .join("|")
        };
        let names: BTreeSet<String> = strong.union(&weak).cloned().collect();
        let definition = (!names.is_empty()).then(|| alternation(&names)).and_then(|alt| {
            // `def median`, `fn mean`, `func (p *Parser) Parse`, `function sortScores`, `class Tags`,
            // `const escape = (`, `exports.escape = function`, `median: function`.
            Regex::new(&format!(
                r"(?m)(?:\b(?:def|fn|func|function|class|struct|enum|trait|type|interface|impl|const|let|var|static|mod)\s+(?:\([^)]*\)\s*)?(?P<a>{alt})\b)|(?:\b(?P<b>{alt})\s*(?:=\s*(?:function\b|async\b|\()|:\s*function\b))"
            ))
            .ok()
        });
        let mention = (!strong.is_empty())
            .then(|| alternation(&strong))
            .and_then(|alt| Regex::new(&format!(r"\b(?:{alt})\b")).ok());
        Terms {
            strong,
            paths,
            definition,
            mention,
        }
    }
}

/// A file that could be shown, with how much the task is about it.
struct Candidate {
    rel: String,
    bytes: usize,
    lines: usize,
    score: u32,
    /// The line of the first definition of a name the task mentions.
    definition: Option<usize>,
    /// The task names the file.
    named: bool,
}

impl Candidate {
    fn read(rel: &str, abs: &std::path::Path, task: &str, terms: &Terms) -> Option<Candidate> {
        let name = rel.rsplit('/').next().unwrap_or(rel);
        if NEVER_SHOWN.contains(&name) || name.starts_with('.') {
            return None;
        }
        let meta = fs::metadata(abs).ok()?;
        if !meta.is_file() || meta.len() > MAX_FILE {
            return None;
        }
        let bytes = fs::read(abs).ok()?;
        if looks_binary(&bytes) {
            return None;
        }
        let text = String::from_utf8(bytes).ok()?;
        let mut score = 0;
        let named = terms
            .paths
            .iter()
            .any(|p| p == rel || p == name || rel.ends_with(&format!("/{p}")))
            || (name.len() > 3 && task.contains(&format!("`{name}`")));
        if named {
            score += 100;
        }
        let (mut strong_line, mut any_line) = (None, None);
        if let Some(re) = &terms.definition {
            let mut defined = BTreeSet::new();
            for caps in re.captures_iter(&text) {
                let Some(m) = caps.name("a").or_else(|| caps.name("b")) else {
                    continue;
                };
                let strong = terms.strong.contains(m.as_str());
                if defined.insert(m.as_str().to_string()) {
                    score += if strong { 30 } else { 10 };
                }
                let line = text[..m.start()].matches('\n').count() + 1;
                if strong {
                    strong_line.get_or_insert(line);
                }
                any_line.get_or_insert(line);
            }
        }
        let definition = strong_line.or(any_line);
        if let Some(re) = &terms.mention {
            let mentioned: BTreeSet<&str> = re.find_iter(&text).map(|m| m.as_str()).collect();
            score += 5 * mentioned.len() as u32;
        }
        if MANIFESTS.contains(&name) {
            score += 1;
        }
        Some(Candidate {
            rel: rel.to_string(),
            bytes: text.len(),
            lines: line_count(&text),
            score,
            definition,
            named,
        })
    }

    /// About how many bytes the file takes as `read_file` shows it: its text, a number column per line and a
    /// header.
    fn cost(&self) -> usize {
        self.bytes + 7 * self.lines + self.rel.len() + 24
    }

    /// The same for lines `first..=last`, taking the file's mean line length.
    fn window_cost(&self, first: usize, last: usize) -> usize {
        let per_line = self.bytes / self.lines.max(1) + 8;
        (last + 1 - first) * per_line + self.rel.len() + 32
    }
}
