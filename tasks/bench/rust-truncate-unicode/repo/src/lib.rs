//! Text helpers for fixed-width terminal columns.

/// `text` cut to at most `width` characters; a cut text ends in `…`, which counts as one character.
pub fn truncate(text: &str, width: usize) -> String {
    if text.len() <= width {
        return text.to_string();
    }
    if width == 0 {
        return String::new();
    }
    let mut out = text[..width - 1].to_string();
    out.push('…');
    out
}

/// `text` padded with spaces on the right to `width` characters; longer text is returned as is.
pub fn pad(text: &str, width: usize) -> String {
    let mut out = text.to_string();
    while out.chars().count() < width {
        out.push(' ');
    }
    out
}
