//! Small statistics about text.

/// The number of words in `text`.
pub fn word_count(text: &str) -> usize {
    text.split(' ').filter(|w| !w.is_empty()).count()
}

/// The number of lines in `text` (a final line without a newline counts).
pub fn line_count(text: &str) -> usize {
    text.lines().count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_lines() {
        assert_eq!(line_count("a\nb\nc"), 3);
    }
}
