use releases::{newest, parse};

#[test]
fn versions_parse_into_three_numbers() {
    assert_eq!(parse("1.2.3"), Some((1, 2, 3)));
    assert_eq!(parse("1.2"), None);
    assert_eq!(parse("1.2.3.4"), None);
}

#[test]
fn the_newest_version_is_found_and_bad_ones_are_ignored() {
    assert_eq!(newest(&["1.2.0", "1.3.0", "x"]), Some("1.3.0"));
    assert_eq!(newest(&["x"]), None);
}
