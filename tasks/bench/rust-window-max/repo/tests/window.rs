use readings::window_max;

#[test]
fn a_window_larger_than_the_series_has_no_maximum() {
    assert_eq!(window_max(&[1, 2], 3), Vec::<i64>::new());
}

#[test]
fn a_window_of_size_zero_has_no_maximum() {
    assert_eq!(window_max(&[1, 2], 0), Vec::<i64>::new());
}
