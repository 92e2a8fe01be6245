use sensors::{mean, range};

#[test]
fn the_mean_is_rounded_down() {
    assert_eq!(mean(&[1, 2]), Some(1));
    assert_eq!(mean(&[]), None);
}

#[test]
fn the_range_is_min_and_max() {
    assert_eq!(range(&[3, 9, 1]), Some((1, 9)));
}
