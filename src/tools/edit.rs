//! `edit`: replaces an exact, unique piece of a file's text.
//!
//! Exactness is what makes an edit safe to apply blind, but models copy text imperfectly: trailing spaces
//! lost, indentation shifted. So when `old_string` does not occur, a short cascade of looser comparisons is
//! tried, line by line, and the first that finds exactly one place wins: (1) trailing whitespace ignored,
//! (2) indentation ignored too, in which case `new_string` is re-indented to the file's real indentation when
//! the mapping is clear. Anything looser would guess. When nothing matches, the error shows the text
//! that comes closest (a window of lines scored by character bigrams), so the model can copy it.
//!
//! Line endings are the file's: a file whose lines all end in CRLF is edited as LF and written back as CRLF.

use std::fs;

use serde_json::{json, Value};

use super::text::{cut_line, excerpt, is_crlf, line_of, numbered, read_text};
use super::walk::{with_similar, GlobPath};
use super::{object, Args, CallFuture, Context, Tool, ToolError, Workspace};

pub struct Edit;

impl Tool for Edit {
    fn name(&self) -> &'static str {
        "edit"
    }

    fn description(&self) -> &'static str {
        "Replace an exact piece of text in a file with new text."
    }

    fn parameters(&self) -> Value {
        object(
            json!({
                "path": {"type": "string", "description": "The file's path, relative to the repository root."},
                "old_string": {"type": "string", "description": "The exact text to replace, whitespace included; it must occur exactly once unless replace_all is set."},
                "new_string": {"type": "string", "description": "The text to put in its place."},
                "replace_all": {"type": "boolean", "description": "Replace every occurrence instead of exactly one [default: false]."}
            }),
            &["path", "old_string", "new_string"],
        )
    }

    fn mutates(&self) -> bool {
        true
    }

    fn call<'a>(&'a self, ctx: &'a mut Context<'_>, args: &'a Value) -> CallFuture<'a> {
        Box::pin(async move { edit(ctx.workspace, Args::of(args)).map_err(ToolError::Failed) })
    }
}

fn edit(ws: &Workspace, args: Args) -> Result<String, String> {
    let asked = args.string("path")?;
    // A glob that names one file edits it (old_string must still match exactly); more are refused.
    let (path, _) = GlobPath::one_file(ws, asked, "edit")?;
    let old = args.string("old_string")?;
    let new = args.string("new_string")?;
    let all = args.flag("replace_all");
    let rel = &path.rel;
    if old.is_empty() {
        return Err(
            "old_string is empty. To add text, put a line next to the place in old_string and repeat it \
             in new_string with the new text; to create a file, use write_file."
                .to_string(),
        );
    }
    if old == new {
        return Err(
            "old_string and new_string are the same, so the edit would change nothing. Put the changed text \
             in new_string."
                .to_string(),
        );
    }
    let text = read_text(&path).map_err(|err| with_similar(ws, &path, err))?;
    if let Ok(meta) = fs::metadata(&path.abs) {
        super::text::writable(rel, &meta)?;
    }
    let crlf = is_crlf(&text);
    let body = if crlf {
        text.replace("\r\n", "\n")
    } else {
        text
    };
    let old = old.replace("\r\n", "\n");
    let new = new.replace("\r\n", "\n");

    let done = replace(&body, &old, &new, all, rel)?;
    if done.text == body {
        return Err(format!(
            "The edit would leave `{rel}` unchanged: the file already has new_string there. Read the file \
             with read_file to see its current text."
        ));
    }
    if let Some(refusal) = super::syntax_guard::refusal(rel, Some(&body), &done.text, "edit") {
        return Err(refusal);
    }
    let written = if crlf {
        done.text.replace('\n', "\r\n")
    } else {
        done.text.clone()
    };
    fs::write(&path.abs, written).map_err(|err| format!("Cannot write `{rel}`: {err}."))?;
    ws.record(rel);

    let mut report = if done.lines.len() == 1 {
        let (first, last) = done.lines[0];
        let at = if first == last {
            format!("line {first}")
        } else {
            format!("lines {first}-{last}")
        };
        format!("Edited {rel}: replaced 1 occurrence, now at {at}")
    } else {
        let firsts: Vec<String> = done
            .lines
            .iter()
            .map(|(first, _)| first.to_string())
            .collect();
        format!(
            "Edited {rel}: replaced {} occurrences, now at lines {}",
            done.lines.len(),
            cap_list(&firsts)
        )
    };
    report.push_str(done.how);
    report.push_str(".\n");
    let (first, last) = done.lines[0];
    report.push_str(&excerpt(&done.text, first, last, 2));
    Ok(report)
}

/// A replacement made: the new text, the (first, last) line of each replacement in it, and how old_string
/// was found.
struct Done {
    text: String,
    lines: Vec<(usize, usize)>,
    how: &'static str,
}

fn replace(body: &str, old: &str, new: &str, all: bool, rel: &str) -> Result<Done, String> {
    let starts: Vec<usize> = body.match_indices(old).map(|(at, _)| at).collect();
    if starts.len() > 1 && !all {
        let lines: Vec<String> = starts
            .iter()
            .map(|&at| line_of(body, at).to_string())
            .collect();
        return Err(format!(
            "old_string occurs {} times in `{rel}` (at lines {}). Add surrounding lines to old_string so it \
             occurs exactly once, or set replace_all to true to replace every occurrence.",
            starts.len(),
            cap_list(&lines)
        ));
    }
    if !starts.is_empty() {
        let mut text = String::with_capacity(body.len());
        let mut lines = Vec::new();
        let mut from = 0;
        for &at in &starts {
            text.push_str(&body[from..at]);
            let first = line_of(&text, text.len());
            text.push_str(new);
            lines.push((
                first,
                first + new.trim_end_matches('\n').matches('\n').count(),
            ));
            from = at + old.len();
        }
        text.push_str(&body[from..]);
        return Ok(Done {
            text,
            lines,
            how: "",
        });
    }
    for stage in [Stage::TrailingSpace, Stage::Indentation] {
        if let Some(done) = near_miss(body, old, new, stage, rel)? {
            return Ok(done);
        }
    }
    if let Some(at) = applied(body, new) {
        return Err(format!(
            "old_string does not occur in `{rel}`, but new_string does, at {at}: this edit looks applied \
             already. Do not make it again: run the tests with run_tests, or read the file with read_file to \
             see its current text."
        ));
    }
    Err(not_found(body, old, rel))
}

/// Where `new` (an edit's replacement) already is in `body`, when it is there once: the lines a model that
/// repeats an edit it made already is told about. A replacement of blank lines or of one short word says
/// nothing.
fn applied(body: &str, new: &str) -> Option<String> {
    let key = new.trim();
    if key.len() < 8 {
        return None;
    }
    let mut found = body.match_indices(key);
    let (at, _) = found.next()?;
    if found.next().is_some() {
        return None;
    }
    let first = line_of(body, at);
    let last = first + key.matches('\n').count();
    Some(if first == last {
        format!("line {first}")
    } else {
        format!("lines {first}-{last}")
    })
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Stage {
    TrailingSpace,
    Indentation,
}

impl Stage {
    fn normal(self, line: &str) -> &str {
        match self {
            Stage::TrailingSpace => line.trim_end(),
            Stage::Indentation => line.trim(),
        }
    }

    fn ignoring(self) -> &'static str {
        match self {
            Stage::TrailingSpace => "trailing whitespace",
            Stage::Indentation => "indentation and trailing whitespace",
        }
    }
}

/// The byte range of each line of `body`, without its `\n`; a final newline does not start another line.
fn spans(body: &str) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut start = 0;
    for (at, _) in body.match_indices('\n') {
        spans.push((start, at));
        start = at + 1;
    }
    if start < body.len() {
        spans.push((start, body.len()));
    }
    spans
}

/// The lines of `old`, without one final newline.
fn old_lines(old: &str) -> Vec<&str> {
    old.strip_suffix('\n').unwrap_or(old).split('\n').collect()
}

/// Looks for `old` line by line, comparing lines as `stage` says: `Ok(None)` if it is not there, an error if
/// it is there more than once.
fn near_miss(
    body: &str,
    old: &str,
    new: &str,
    stage: Stage,
    rel: &str,
) -> Result<Option<Done>, String> {
    let want = old_lines(old);
    if want.iter().all(|line| line.trim().is_empty()) {
        return Ok(None);
    }
    let spans = spans(body);
    let have: Vec<&str> = spans.iter().map(|&(s, e)| &body[s..e]).collect();
    let n = want.len();
    if n > have.len() {
        return Ok(None);
    }
    let found: Vec<usize> = (0..=have.len() - n)
        .filter(|&i| (0..n).all(|k| stage.normal(have[i + k]) == stage.normal(want[k])))
        .collect();
    match found.as_slice() {
        [] => Ok(None),
        [i] => {
            let i = *i;
            let start = spans[i].0;
            let mut end = spans[i + n - 1].1;
            let mut replacement = new.to_string();
            let mut how = match stage {
                Stage::TrailingSpace => " (old_string matched with trailing whitespace ignored)",
                Stage::Indentation => {
                    " (old_string matched with indentation ignored; new_string was re-indented to the file's \
                     indentation)"
                }
            };
            if stage == Stage::Indentation {
                match reindent(new, &want, &have[i..i + n]) {
                    Some(text) => replacement = text,
                    None => {
                        how = " (old_string matched with indentation ignored; the file's indentation differs \
                               irregularly, so new_string was inserted as given: check its indentation)"
                    }
                }
            }
            if old.ends_with('\n') {
                if body[end..].starts_with('\n') {
                    end += 1;
                } else if let Some(cut) = replacement.strip_suffix('\n') {
                    replacement = cut.to_string();
                }
            }
            let text = format!("{}{}{}", &body[..start], replacement, &body[end..]);
            let first = i + 1;
            let last = first + replacement.trim_end_matches('\n').matches('\n').count();
            Ok(Some(Done {
                text,
                lines: vec![(first, last)],
                how,
            }))
        }
        many => {
            let lines: Vec<String> = many.iter().map(|i| (i + 1).to_string()).collect();
            Err(format!(
                "old_string does not occur exactly in `{rel}`, and with {} ignored it occurs {} times (at \
                 lines {}). Copy old_string exactly from the file (read_file shows it) and add surrounding \
                 lines so it occurs once.",
                stage.ignoring(),
                many.len(),
                cap_list(&lines)
            ))
        }
    }
}

fn indent(line: &str) -> &str {
    &line[..line.len() - line.trim_start().len()]
}

/// `new` moved to the file's indentation, learned from `want` (old_string's lines) and `have` (the file's
/// lines they matched). Each indentation of `new` is mapped by the first rule that applies: an indentation
/// seen in old_string becomes the file's; a constant shift (`    ` → `        `) moves the rest; a change of
/// unit (four spaces → one tab) scales the rest. `None` when old_string's indentation maps to the file's in
/// two ways, or a line of `new` fits no rule: then nothing is guessed.
fn reindent(new: &str, want: &[&str], have: &[&str]) -> Option<String> {
    let pairs: Vec<(&str, &str)> = want
        .iter()
        .zip(have)
        .filter(|(w, _)| !w.trim().is_empty())
        .map(|(w, h)| (indent(w), indent(h)))
        .collect();
    let &(from, to) = pairs.first()?;
    let mut table: Vec<(&str, &str)> = Vec::new();
    for &(w, h) in &pairs {
        match table.iter().find(|(seen, _)| *seen == w) {
            Some(&(_, mapped)) if mapped != h => return None,
            Some(_) => {}
            None => table.push((w, h)),
        }
    }
    let shift = pairs.iter().all(|&(w, h)| {
        w.strip_prefix(from)
            .is_some_and(|rest| h.strip_prefix(to) == Some(rest))
    });
    // With one repeated character (spaces only, or tabs only), a shift also moves lines outdented past `from`.
    let unit = from.chars().chain(to.chars()).next().unwrap_or(' ');
    let uniform = from.chars().chain(to.chars()).all(|c| c == unit);
    let scale = Scale::of(&table);
    let mut lines = Vec::new();
    for line in new.split('\n') {
        if line.trim().is_empty() {
            lines.push(line.to_string());
            continue;
        }
        let own = indent(line);
        let mapped = if let Some(&(_, h)) = table.iter().find(|(w, _)| *w == own) {
            h.to_string()
        } else if let Some(rest) = own.strip_prefix(from).filter(|_| shift) {
            format!("{to}{rest}")
        } else if shift && uniform && own.chars().all(|c| c == unit) {
            unit.to_string()
                .repeat((own.len() + to.len()).saturating_sub(from.len()))
        } else {
            scale.as_ref()?.apply(own)?
        };
        lines.push(format!("{mapped}{}", line.trim_start()));
    }
    Some(lines.join("\n"))
}

/// A change of indentation unit: `old` of character `old_char` become `file` of `file_char`.
struct Scale {
    old_char: char,
    old: usize,
    file_char: char,
    file: usize,
}

impl Scale {
    /// The unit change that explains every pair of `table`, if one does.
    fn of(table: &[(&str, &str)]) -> Option<Scale> {
        let &(w, h) = table
            .iter()
            .filter(|(w, _)| !w.is_empty())
            .min_by_key(|(w, _)| w.len())?;
        let scale = Scale {
            old_char: w.chars().next()?,
            old: w.chars().count(),
            file_char: h.chars().next()?,
            file: h.chars().count(),
        };
        let fits = table.iter().all(|&(w, h)| {
            w.chars().all(|c| c == scale.old_char)
                && h.chars().all(|c| c == scale.file_char)
                && w.chars().count() * scale.file == h.chars().count() * scale.old
        });
        fits.then_some(scale)
    }

    fn apply(&self, own: &str) -> Option<String> {
        let n = own.chars().count();
        (own.chars().all(|c| c == self.old_char) && (n * self.file).is_multiple_of(self.old))
            .then(|| self.file_char.to_string().repeat(n * self.file / self.old))
    }
}

/// The error when old_string is nowhere: the closest window of lines, if any comes close.
fn not_found(body: &str, old: &str, rel: &str) -> String {
    let want = old_lines(old);
    let numbered_input = want.iter().filter(|l| !l.trim().is_empty()).all(|l| {
        l.trim_start()
            .split_once('\t')
            .is_some_and(|(n, _)| n.chars().all(|c| c.is_ascii_digit()) && !n.is_empty())
    });
    let hint = if numbered_input {
        " old_string seems to include read_file's line numbers; leave them out and copy only the text after \
         the tab."
    } else {
        ""
    };
    let spans = spans(body);
    let have: Vec<&str> = spans.iter().map(|&(s, e)| &body[s..e]).collect();
    match closest(&have, &want).or_else(|| closest_joined(&have, &want)) {
        Some((first, last, _)) => {
            let mut shown: Vec<String> = (first..=last)
                .take(MAX_SHOWN)
                .map(|n| numbered(n, &cut_line(have[n - 1], 500)))
                .collect();
            if last + 1 - first > MAX_SHOWN {
                shown.push(format!("[… {} more lines]", last + 1 - first - MAX_SHOWN));
            }
            let at = if first == last { format!("line {first}") } else { format!("lines {first}-{last}") };
            format!(
                "old_string does not occur in `{rel}`, not even with whitespace ignored.{hint} The closest \
                 text is at {at}:\n{}\nCopy old_string exactly from the file's current text \
                 (without line numbers) and try again.",
                shown.join("\n")
            )
        }
        None => format!(
            "old_string does not occur in `{rel}`, and nothing in the file looks like it.{hint} Read the \
             file with read_file and copy old_string exactly from it."
        ),
    }
}

/// At most this many lines of the closest text are shown.
const MAX_SHOWN: usize = 40;
/// Below this mean similarity a window is not shown as the closest text.
const CLOSE_ENOUGH: f64 = 0.5;
/// A bound on line comparisons, so a long file and a long old_string cannot take long.
const MAX_COMPARISONS: usize = 2_000_000;

/// The window of `have` most like `want`: (first line, last line, score), lines 1-based.
fn closest(have: &[&str], want: &[&str]) -> Option<(usize, usize, f64)> {
    if have.is_empty() {
        return None;
    }
    let n = want.len().min(have.len());
    let scored = n.min((MAX_COMPARISONS / have.len()).max(1));
    let have_grams: Vec<Vec<(char, char)>> = have.iter().map(|l| bigrams(l)).collect();
    let want_grams: Vec<Vec<(char, char)>> = want.iter().take(scored).map(|l| bigrams(l)).collect();
    let mut best: Option<(usize, f64)> = None;
    for i in 0..=have.len() - n {
        let score = (0..scored)
            .map(|k| dice(&have_grams[i + k], &want_grams[k], have[i + k], want[k]))
            .sum::<f64>()
            / scored as f64;
        if best.is_none_or(|(_, b)| score > b) {
            best = Some((i, score));
        }
    }
    let (i, score) = best?;
    (score >= CLOSE_ENOUGH).then_some((i + 1, i + n, score))
}

/// The window of `have` most like `want` with line breaks and indentation ignored: small models write a
/// function of ten lines as one (`pub fn mean(..) { if values.is_empty() { return None; } ... }`), which no
/// single line of the file resembles. Windows start at the few lines most like the start of `want`, and
/// grow to half again its length once whitespace is collapsed.
fn closest_joined(have: &[&str], want: &[&str]) -> Option<(usize, usize, f64)> {
    let want = collapse(&want.join(" "));
    // Bounded: 5 starts, windows of at most 200 lines and 6,000 bytes.
    if want.len() < 16 || want.len() > 4_000 {
        return None;
    }
    let want_grams = bigrams(&want);
    let lines: Vec<String> = have.iter().map(|l| collapse(l)).collect();
    // The start of `want` as long as each line, compared with the line.
    let start_score = |line: &str| {
        let mut end = line.len().min(want.len());
        while !want.is_char_boundary(end) {
            end -= 1;
        }
        let head = &want[..end];
        dice(&bigrams(line), &bigrams(head), line, head)
    };
    let mut starts: Vec<(usize, f64)> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| !l.is_empty())
        .map(|(i, l)| (i, start_score(l)))
        .collect();
    starts.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut best: Option<(usize, usize, f64)> = None;
    for &(i, _) in starts.iter().take(5) {
        let mut window = String::new();
        for (j, line) in lines.iter().enumerate().skip(i).take(200) {
            if window.len() > want.len() * 3 / 2 {
                break;
            }
            if !window.is_empty() {
                window.push(' ');
            }
            window.push_str(line);
            let score = dice(&bigrams(&window), &want_grams, &window, &want);
            if best.is_none_or(|(_, _, b)| score > b) {
                best = Some((i + 1, j + 1, score));
            }
        }
    }
    best.filter(|(_, _, score)| *score >= CLOSE_ENOUGH)
}

/// `text` with every run of whitespace one space, and none at the ends.
fn collapse(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The sorted character bigrams of a line, whitespace at the ends left out.
fn bigrams(line: &str) -> Vec<(char, char)> {
    let chars: Vec<char> = line.trim().chars().collect();
    let mut grams: Vec<(char, char)> = chars.windows(2).map(|w| (w[0], w[1])).collect();
    grams.sort_unstable();
    grams
}

/// The Dice coefficient of two bigram lists (1.0 for the same line).
fn dice(a: &[(char, char)], b: &[(char, char)], line_a: &str, line_b: &str) -> f64 {
    if a.is_empty() || b.is_empty() {
        return if line_a.trim() == line_b.trim() {
            1.0
        } else {
            0.0
        };
    }
    let (mut i, mut j, mut common) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                common += 1;
                i += 1;
                j += 1;
            }
        }
    }
    2.0 * common as f64 / (a.len() + b.len()) as f64
}

/// A list of numbers for a message, at most 20 of them.
fn cap_list(items: &[String]) -> String {
    if items.len() <= 20 {
        items.join(", ")
    } else {
        format!("{}, … ({} more)", items[..20].join(", "), items.len() - 20)
    }
}
