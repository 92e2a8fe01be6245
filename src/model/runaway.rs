//! A streamed reply that repeats itself without end: small models fall into a loop (the 1.5B coder wrote
//! `src/lib.rs\n` until its 1,536-token limit, five minutes a reply). The tail of the text is checked for a
//! unit repeated back to back; the reply is cut after the unit's first copy, and the stream is dropped so
//! the server stops generating.

/// The longest repeated unit looked for, in bytes.
const MAX_PERIOD: usize = 256;
/// The tail that must be one unit over and over: at least this many bytes and four copies.
const MIN_RUN: usize = 512;
const MIN_COPIES: usize = 4;

/// Where to cut `text` if its tail is one unit repeated: the end of the unit's first copy, on a character
/// boundary.
pub(crate) fn cut(text: &str) -> Option<usize> {
    let b = text.as_bytes();
    let n = b.len();
    for p in 1..=MAX_PERIOD {
        let run = MIN_RUN.max(MIN_COPIES * p);
        if run > n {
            break;
        }
        if (n - run + p..n).all(|i| b[i] == b[i - p]) {
            // The whole run: back while the text still repeats with this period.
            let mut start = n - run;
            while start > 0 && b[start - 1] == b[start - 1 + p] {
                start -= 1;
            }
            let mut end = start + p;
            while !text.is_char_boundary(end) {
                end += 1;
            }
            return Some(end);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_repeated_to_the_limit_is_cut_after_its_first_copy() {
        // The quick start's third run: a call, an invented output, then one line over and over.
        let head =
            "<function name=\"search\" parameters=\"glob: **/*.rs, path: src/lib.rs\">\n<output>\n";
        let text = format!("{head}{}", "src/lib.rs\n".repeat(200));
        let at = cut(&text).expect("the repetition is found");
        // The run starts at the newline before the first copy (the unit read as `\nsrc/lib.rs`).
        assert_eq!(&text[..at], format!("{head}src/lib.rs"));
    }

    #[test]
    fn ordinary_code_and_short_repeats_are_not_cut() {
        let code: String = (0..80)
            .map(|i| format!("    assert_eq!(f({i}), {});\n", i * 2))
            .collect();
        assert_eq!(cut(&code), None);
        // Three copies of a long line are fewer than the four a unit needs.
        let line = format!("{}\n", "x = compute(a, b, c) + other(d) ".repeat(5));
        assert_eq!(cut(&line.repeat(3)), None);
        assert_eq!(cut("short"), None);
    }

    #[test]
    fn a_cut_falls_on_a_character_boundary() {
        let text = format!("start {}", "é—".repeat(300));
        let at = cut(&text).expect("found");
        assert!(text.is_char_boundary(at));
        assert!(text[..at].starts_with("start "));
    }
}
