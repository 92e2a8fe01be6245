//! What the guided strategy shows and asks the model: the first message with the task's code, the ask for
//! a fix (pointed at the definitions the task names) and for a test (quoting the issue's own call), and
//! test results cut to what a small model reads.

use super::blocks::{fence, is_test_name};
use crate::tools::definitions;

/// The first message: the task and the files' text in fences (no line numbers: a small model copies
/// them into its code).
pub(in crate::agent) fn first_message(task: &str, files: &[(String, String)]) -> String {
    let mut out = task.trim_end().to_string();
    out.push_str("\n\nThe code the task is about:\n");
    for (rel, text) in files {
        out.push_str(&format!(
            "\n{rel}:\n```{}\n{}\n```\n",
            fence(rel),
            text.trim_end()
        ));
    }
    out
}

pub(super) fn ask_fix(lang: &str, focus: &str) -> String {
    format!(
        "Fix the issue{focus}. Reply with the corrected function or functions, complete, in one ```{lang} \
         block, and nothing else."
    )
}

/// The definitions of the sources that the task names most often (`median` in "`median([])` raises"), as
/// (file, definition); empty when it names none, or more than three equally.
pub(in crate::agent) fn focus_defs(
    task: &str,
    sources: &[(String, String)],
) -> Vec<(String, String)> {
    let words: Vec<&str> = task
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| w.len() > 2)
        .collect();
    // The definitions named most often: "median of no values ... `median([])` ... as `mean([])` raises"
    // is about median.
    let mut named: Vec<(usize, (String, String))> = Vec::new();
    for (rel, text) in sources {
        let Some(defs) = definitions::defined(rel, text) else {
            continue;
        };
        for d in defs {
            let last = d.rsplit(['.', ':']).next().unwrap_or(&d);
            let count = words.iter().filter(|w| **w == last).count();
            if count > 0 && !is_test_name(&d) {
                named.push((count, (rel.clone(), d)));
            }
        }
    }
    let most = named.iter().map(|(n, _)| *n).max().unwrap_or(0);
    named.retain(|(n, _)| *n == most);
    if named.len() > 3 {
        return Vec::new();
    }
    named.into_iter().map(|(_, d)| d).collect()
}

/// [`focus_defs`] as the ask says it: " in `median` (stats.py)"; empty for none.
pub(in crate::agent) fn focus(defs: &[(String, String)]) -> String {
    if defs.is_empty() {
        return String::new();
    }
    let named: Vec<String> = defs
        .iter()
        .map(|(rel, d)| format!("`{d}` ({rel})"))
        .collect();
    format!(" in {}", named.join(", "))
}

/// The code to fix, shown again just before the ask for the fix once a test shows the issue: a small model
/// answers with the last code it saw, and after a failing test that was its test (the 1.5B on the quick
/// start's task sent its test file nine times running, asked for the fix each time). Each item is what it
/// is (`` `word_count` as src/lib.rs has it now ``) and its code.
pub(super) fn show_code(lang: &str, items: &[(String, String)]) -> String {
    let mut out = String::new();
    for (what, code) in items {
        out.push_str(&format!("{what}:\n```{lang}\n{}\n```\n\n", code.trim_end()));
    }
    out
}

/// The first sentence of the task that shows the bug with a call in inline code (`` `topK([5, 40, 300], 1)`
/// returns `[5]`; the best score is 300.``), with the sentence after it in its paragraph, which usually
/// says what was expected: what a regression test should do, in the issue's words. The 0.5B, asked for
/// "the issue's symptom as an assertion", wrote tests of what the code did already; the issue's own call,
/// quoted beside the ask, is the test to write. Quoted alone, the sentence with the call misled the 1.5B
/// into asserting the bug (`pytest.raises(IndexError)`): the sentence after it names the `ValueError`.
pub(in crate::agent) fn symptom(task: &str) -> Option<String> {
    // The body: front matter and a title line are not the report.
    let body = match task.strip_prefix("---") {
        Some(rest) => rest.split_once("\n---").map_or(task, |(_, b)| b),
        None => task,
    };
    for paragraph in body
        .split("\n\n")
        .filter(|p| !p.trim_start().starts_with('#'))
    {
        let sentences = sentences(paragraph);
        let Some(at) = sentences.iter().position(|text| {
            text.split('`')
                .skip(1)
                .step_by(2)
                .any(|code| code.contains('(') && code.contains(')'))
                && text.chars().count() <= 400
        }) else {
            continue;
        };
        let first = sentences[at].clone();
        return Some(match sentences.get(at + 1) {
            Some(next) if first.chars().count() + next.chars().count() < 400 => {
                format!("{first} {next}")
            }
            _ => first,
        });
    }
    None
}

/// A paragraph's sentences, whitespace squashed; a full stop inside inline code ends none.
pub(super) fn sentences(paragraph: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut sentence = String::new();
    let mut in_code = false;
    let mut chars = paragraph.trim().chars().peekable();
    while let Some(c) = chars.next() {
        if c == '`' {
            in_code = !in_code;
        }
        sentence.push(c);
        let end = !in_code
            && matches!(c, '.' | '!' | '?')
            && chars.peek().is_none_or(|n| n.is_whitespace());
        if end || chars.peek().is_none() {
            out.push(sentence.split_whitespace().collect::<Vec<_>>().join(" "));
            sentence.clear();
        }
    }
    out
}

pub(super) fn ask_test(test_file: &str, lang: &str, symptom: Option<&str>) -> String {
    let shown = symptom
        .map(|s| {
            format!(
                " The bug, as the issue reports it: \"{s}\" Call the function as the issue does and assert \
                 what the issue expects instead, so that the test fails on the old code."
            )
        })
        .unwrap_or_default();
    format!(
        "The tests pass with your change. Now write one new test function for `{test_file}` that fails \
         on the old code and passes with your fix: the issue's symptom as an assertion.{shown} Reply with \
         the new test function alone (and any import it needs), in one ```{lang} block, and nothing else."
    )
}

/// The start of a test run's result a small model can read: `run_tests` puts the failing tests and the
/// first error with its location first, the output's tail after them.
pub(super) fn short_output(text: &str) -> String {
    const MAX: usize = 1200;
    if text.len() <= MAX {
        return text.trim_end().to_string();
    }
    let mut end = MAX;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", text[..end].trim_end())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_test_result_keeps_its_start_where_the_failures_are() {
        let text = format!(
            "Tests failed (exit 1).\nFirst error: boom at a.go:3\n{}",
            "x".repeat(5000)
        );
        let short = short_output(&text);
        assert!(short.starts_with("Tests failed (exit 1).\nFirst error: boom at a.go:3"));
        assert!(
            short.len() < 1300 && short.ends_with('…'),
            "{}",
            short.len()
        );
    }

    #[test]
    fn the_symptom_is_the_first_sentence_that_shows_a_call() {
        let task = "# Task: the leaderboard puts 5 points above 300\n\n`topK([5, 40, 300], 1)` returns `[5]`; \
                    the best\nscore is 300. `sortedNumbers([10, 9, 1])` returns `[1, 10, 9]`.\n\nFix it.\n";
        assert_eq!(
            symptom(task).as_deref(),
            Some(
                "`topK([5, 40, 300], 1)` returns `[5]`; the best score is 300. `sortedNumbers([10, 9, 1])` \
                 returns `[1, 10, 9]`."
            )
        );
        // The sentence after the call, in its paragraph, says what was expected.
        let median =
            "`median([])` raises `IndexError`. Its docstring promises a `ValueError`.\n\nFix it.\n";
        assert_eq!(
            symptom(median).as_deref(),
            Some("`median([])` raises `IndexError`. Its docstring promises a `ValueError`.")
        );
        // A full stop inside inline code does not end the sentence; prose without a call has no symptom.
        assert_eq!(
            symptom("Since 2.0, `v.parse::<f64>()` fails on `1.5e3`.\n\nPlease fix.").as_deref(),
            Some("Since 2.0, `v.parse::<f64>()` fails on `1.5e3`.")
        );
        assert_eq!(symptom("The report is slow. Make it fast."), None);
        assert_eq!(
            symptom("---\ntitle: `f()` in the title\n---\nIt breaks.\n"),
            None
        );
    }
}
