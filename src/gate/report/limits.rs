//! How much of a report fits where it goes: a pull-request body (GitHub refuses one over 65,536 characters) and
//! a console line. Long lists show their first few items and how many more there are, long texts are clipped,
//! log tails keep their last lines; the JSON report keeps everything, so nothing here loses information the
//! user cannot find.
//!
//! Lengths are counted in characters (what GitHub counts), never cut inside one.

use std::borrow::Cow;

/// The most characters the Markdown report has: GitHub's limit for a pull-request body, with room to spare
/// for a caller that wraps it.
pub const MARKDOWN_LIMIT: usize = 60_000;
/// The most characters of one console line.
pub const CONSOLE_LINE: usize = 300;
/// The most lines of one reason on the console.
pub const CONSOLE_REASON_LINES: usize = 8;
/// How many notes, and how many reasons, the console shows.
pub const CONSOLE_NOTES: usize = 10;
/// How many items of a list the console shows, and the most characters of each.
pub const CONSOLE_ITEMS: usize = 4;
pub const CONSOLE_ID: usize = 50;
/// How many items of a list the Markdown shows.
pub const MARKDOWN_ITEMS: usize = 20;
/// How many reasons (and notes) the Markdown shows, and the most characters of each.
pub const MARKDOWN_REASONS: usize = 10;
pub const MARKDOWN_REASON: usize = 1_000;
/// The most characters of a short Markdown text: a test id, a step's name or note, a bite reason.
pub const MARKDOWN_ID: usize = 200;
pub const MARKDOWN_NOTE: usize = 300;
/// How many step rows and bite-table rows the Markdown shows.
pub const MARKDOWN_ROWS: usize = 30;
/// The most lines and characters of a failed step's output in the Markdown.
pub const LOG_TAIL_LINES: usize = 40;
pub const LOG_TAIL_CHARS: usize = 6_000;
/// The most characters of one drift diff in the Markdown, and how many diffs a step shows.
pub const DIFF_CHARS: usize = 3_000;
pub const DIFFS: usize = 5;

/// The text that ends a clipped one.
const ELLIPSIS: char = '…';

/// `text` with at most `max` characters: cut, and ending in `…`, when longer.
pub fn clip(text: &str, max: usize) -> Cow<'_, str> {
    match text.char_indices().nth(max) {
        None => Cow::Borrowed(text),
        Some(_) => {
            let keep = max.saturating_sub(1);
            let end = text.char_indices().nth(keep).map_or(text.len(), |(i, _)| i);
            Cow::Owned(format!("{}{ELLIPSIS}", &text[..end]))
        }
    }
}

/// The first `n` items, each shown by `show`, joined by `sep`, then ` and M more` when there are more.
pub fn first_n<T>(items: &[T], n: usize, sep: &str, show: impl Fn(&T) -> String) -> String {
    let mut out = items.iter().take(n).map(show).collect::<Vec<_>>().join(sep);
    if items.len() > n {
        out.push_str(&format!(" and {} more", items.len() - n));
    }
    out
}

/// A reason in at most `max` characters (about). A long one is cut after the last list item that fits
/// (items are separated by `; ` or `, `) and says how many of its `subjects` (the tests or files it names)
/// are left out: `new test failures: a; b; c … and 497 more`.
pub fn summarise(message: &str, subjects: &[String], max: usize) -> String {
    if message.chars().count() <= max {
        return message.to_owned();
    }
    let hard = message
        .char_indices()
        .nth(max.saturating_sub(24))
        .map_or(message.len(), |(i, _)| i);
    let window = &message[..hard];
    let cut = ["; ", ", "]
        .iter()
        .filter_map(|sep| window.rfind(sep))
        .max()
        .filter(|&at| at >= hard / 2)
        .unwrap_or(hard);
    let kept = &message[..cut];
    let shown = subjects
        .iter()
        .filter(|s| kept.contains(s.as_str()))
        .count();
    match subjects.len().saturating_sub(shown) {
        0 => format!("{kept} {ELLIPSIS}"),
        more => format!("{kept} {ELLIPSIS} and {more} more"),
    }
}

/// The last lines of a log: at most `lines` lines and about `chars` characters (a longer last line keeps
/// its end), with a first line saying how many were left out.
pub fn tail(text: &str, lines: usize, chars: usize) -> Cow<'_, str> {
    let all: Vec<&str> = text.lines().collect();
    if all.len() <= lines && text.chars().count() <= chars {
        return Cow::Borrowed(text);
    }
    let mut kept: Vec<String> = Vec::new();
    let mut used = 0;
    for line in all.iter().rev().take(lines) {
        let left = chars.saturating_sub(used);
        if left == 0 {
            break;
        }
        let n = line.chars().count();
        if n > left {
            // Keep the end of an overlong line: that is where a runner prints its summary.
            let skip = n - left.saturating_sub(1);
            kept.push(format!(
                "{ELLIPSIS}{}",
                line.chars().skip(skip).collect::<String>()
            ));
            used = chars;
        } else {
            kept.push((*line).to_owned());
            used += n + 1;
        }
    }
    let omitted = all.len() - kept.len();
    kept.reverse();
    let mut out = String::new();
    if omitted > 0 {
        out.push_str(&format!("{ELLIPSIS} ({omitted} earlier lines left out)\n"));
    }
    out.push_str(&kept.join("\n"));
    Cow::Owned(out)
}

/// Every line of `text` clipped to `max` characters, and at most `lines` lines (then `… and M more lines`).
pub fn clip_lines(text: &str, max: usize, lines: usize) -> String {
    let all: Vec<&str> = text.split('\n').collect();
    let mut out: Vec<String> = all
        .iter()
        .take(lines)
        .map(|l| clip(l, max).into_owned())
        .collect();
    if all.len() > lines {
        out.push(format!("{ELLIPSIS} and {} more lines", all.len() - lines));
    }
    out.join("\n")
}

/// Markdown of at most `limit` characters: a longer text is cut at a line boundary, an open code block and
/// folded section are closed, and a last line says the JSON report has everything.
pub fn fit_markdown(md: String, limit: usize) -> String {
    if md.chars().count() <= limit {
        return md;
    }
    const CUT: &str =
        "\n*The report was cut to fit here; the JSON report (`--json`) has all of it.*\n";
    let room = limit.saturating_sub(CUT.chars().count() + "```\n</details>\n".len());
    let end = md.char_indices().nth(room).map_or(md.len(), |(i, _)| i);
    let end = md[..end].rfind('\n').map_or(end, |i| i + 1);
    let mut out = md[..end].to_owned();
    if out.matches("```").count() % 2 == 1 {
        out.push_str("```\n");
    }
    if out.matches("<details>").count() > out.matches("</details>").count() {
        out.push_str("</details>\n");
    }
    out.push_str(CUT);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(n: usize) -> Vec<String> {
        (0..n)
            .map(|i| format!("tests/test_a.py::test_{i}"))
            .collect()
    }

    #[test]
    fn a_clipped_text_keeps_its_characters_whole_and_ends_in_an_ellipsis() {
        assert_eq!(clip("short", 10), "short");
        assert!(matches!(clip("short", 5), Cow::Borrowed(_)));
        assert_eq!(clip("abcdef", 4), "abc…");
        assert_eq!(clip("ääääää", 3), "ää…");
        assert_eq!(clip("ääääää", 3).chars().count(), 3);
    }

    #[test]
    fn a_long_list_shows_its_first_items_and_how_many_more() {
        let items = ids(500);
        assert_eq!(
            first_n(&items[..2], 5, ", ", |s| format!("`{s}`")),
            "`tests/test_a.py::test_0`, `tests/test_a.py::test_1`"
        );
        assert_eq!(
            first_n(&items, 2, ", ", |s| s.clone()),
            "tests/test_a.py::test_0, tests/test_a.py::test_1 and 498 more"
        );
    }

    #[test]
    fn a_reason_naming_500_tests_shows_a_handful_and_counts_the_rest() {
        let subjects = ids(500);
        let message = format!(
            "new test failures (passing or absent at base): {}",
            subjects.join("; ")
        );
        let short = summarise(&message, &subjects, CONSOLE_LINE);
        assert!(short.chars().count() <= CONSOLE_LINE, "{short}");
        assert!(
            short.starts_with("new test failures (passing or absent at base): tests/test_a.py::test_0; tests/test_a.py::test_1; "),
            "{short}"
        );
        let shown = subjects
            .iter()
            .filter(|s| short.contains(&format!("{s};")) || short.contains(&format!("{s} …")))
            .count();
        assert!((3..20).contains(&shown), "{short}");
        assert!(
            short.ends_with(&format!(" … and {} more", 500 - shown)),
            "{short}"
        );
        assert_eq!(summarise("fine", &subjects, 10), "fine");
    }

    #[test]
    fn a_long_reason_without_a_list_is_cut_at_the_limit() {
        let message = "x".repeat(1000);
        let short = summarise(&message, &[], 100);
        assert!(short.chars().count() <= 100, "{short}");
        assert!(short.ends_with(" …"), "{short}");
    }

    #[test]
    fn a_log_tail_keeps_its_last_lines_and_the_end_of_an_overlong_one() {
        let log = (0..100)
            .map(|i| format!("line {i}"))
            .collect::<Vec<_>>()
            .join("\n");
        let t = tail(&log, 3, 1000);
        assert_eq!(
            t,
            "… (97 earlier lines left out)\nline 97\nline 98\nline 99"
        );
        let huge = format!("start\n{}END", "y".repeat(1_000_000));
        let t = tail(&huge, 60, 500);
        assert!(t.chars().count() < 600, "{}", t.len());
        assert!(
            t.ends_with("yyyEND") && t.starts_with("… (1 earlier lines left out)\n…"),
            "{t}"
        );
        assert!(matches!(tail("a\nb", 3, 100), Cow::Borrowed(_)));
    }

    #[test]
    fn every_line_is_clipped_and_the_lines_counted() {
        assert_eq!(
            clip_lines("abcdef\nxy\nz", 4, 2),
            "abc…\nxy\n… and 1 more lines"
        );
        assert_eq!(clip_lines("a\nb", 4, 2), "a\nb");
    }

    #[test]
    fn markdown_over_the_limit_is_cut_at_a_line_with_its_blocks_closed() {
        let md = format!(
            "## title\n\n<details><summary>out</summary>\n\n```\n{}```\n</details>\n",
            "0123456789\n".repeat(1000)
        );
        let fit = fit_markdown(md.clone(), 2_000);
        assert!(fit.chars().count() <= 2_000, "{}", fit.chars().count());
        assert!(fit.starts_with("## title\n"));
        assert!(fit.ends_with("```\n</details>\n\n*The report was cut to fit here; the JSON report (`--json`) has all of it.*\n"), "{fit}");
        assert_eq!(fit_markdown("short\n".into(), 2_000), "short\n");
    }
}
