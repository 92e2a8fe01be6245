//! Sliding-window statistics over a series of readings.

/// The maximum of every window of `size` consecutive values, in order.
///
/// A series of `n` values has `n - size + 1` windows; a window larger than the series (or of size 0) has
/// none.
pub fn window_max(values: &[i64], size: usize) -> Vec<i64> {
    if size == 0 || size > values.len() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for start in 0..values.len() - size {
        let window = &values[start..start + size];
        if let Some(max) = window.iter().max() {
            out.push(*max);
        }
    }
    out
}
