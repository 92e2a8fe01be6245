use columns::{pad, truncate};

#[test]
fn short_text_is_kept_and_long_text_is_cut_with_an_ellipsis() {
    assert_eq!(truncate("cat", 5), "cat");
    assert_eq!(truncate("elephant", 5), "elep…");
    assert_eq!(truncate("elephant", 0), "");
}

#[test]
fn text_is_padded_to_the_width() {
    assert_eq!(pad("ab", 4), "ab  ");
    assert_eq!(pad("abcdef", 4), "abcdef");
}
