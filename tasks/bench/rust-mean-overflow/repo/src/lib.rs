//! Summary statistics for sensor readings.

/// The mean of `values`, rounded down; `None` when there are no values.
pub fn mean(values: &[u32]) -> Option<u32> {
    if values.is_empty() {
        return None;
    }
    let mut total: u32 = 0;
    for v in values {
        total += v;
    }
    Some(total / values.len() as u32)
}

/// The largest and the smallest value; `None` when there are no values.
pub fn range(values: &[u32]) -> Option<(u32, u32)> {
    let min = *values.iter().min()?;
    let max = *values.iter().max()?;
    Some((min, max))
}
