//! Mean and standard deviation of repeated measurements, and the rule that calls a spread suspicious.

use serde::Serialize;

/// The mean and sample standard deviation of some measurements.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Spread {
    pub mean: f64,
    pub stdev: f64,
}

impl Spread {
    /// Of `xs`; a single value has a stdev of 0, none gives zeros.
    pub fn of(xs: &[f64]) -> Spread {
        if xs.is_empty() {
            return Spread::default();
        }
        let n = xs.len() as f64;
        let mean = xs.iter().sum::<f64>() / n;
        let stdev = if xs.len() < 2 {
            0.0
        } else {
            (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
        };
        Spread { mean, stdev }
    }

    /// stdev / mean, 0 for a zero mean.
    pub fn relative(&self) -> f64 {
        if self.mean > 0.0 {
            self.stdev / self.mean
        } else {
            0.0
        }
    }
}

/// The relative spread above which decode speed is called unsteady.
pub const MAX_RELATIVE_SPREAD: f64 = 0.05;
/// How many times the other depths' spread a depth's spread may reach.
pub const MAX_SPREAD_RATIO: f64 = 10.0;

/// Why one depth's decode speed looks like speculative decoding.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Unsteady {
    /// stdev above 5% of the mean.
    Relative(f64),
    /// stdev at least 10 times the largest stdev of the other depths.
    Ratio(f64),
}

/// The depths (by index) whose decode spread is far above the usual: stdev ≥ 10× the largest stdev of the
/// other depths, or above 5% of the mean.
pub fn unsteady(decode: &[Spread]) -> Vec<(usize, Unsteady)> {
    let mut out = Vec::new();
    for (i, s) in decode.iter().enumerate() {
        if s.relative() > MAX_RELATIVE_SPREAD {
            out.push((i, Unsteady::Relative(s.relative())));
            continue;
        }
        let others = decode
            .iter()
            .enumerate()
            .filter(|(j, _)| *j != i)
            .map(|(_, o)| o.stdev)
            .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))));
        if let Some(other) = others.filter(|o| *o > 0.0) {
            if s.stdev >= MAX_SPREAD_RATIO * other {
                out.push((i, Unsteady::Ratio(s.stdev / other)));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spread_of_known_values_is_the_sample_stdev() {
        let s = Spread::of(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]);
        assert!((s.mean - 5.0).abs() < 1e-9);
        assert!((s.stdev - 2.138_089_935).abs() < 1e-6);
        assert_eq!(
            Spread::of(&[3.0]),
            Spread {
                mean: 3.0,
                stdev: 0.0
            }
        );
        assert_eq!(Spread::of(&[]), Spread::default());
    }

    #[test]
    fn steady_depths_are_not_unsteady() {
        let d = [
            Spread::of(&[100.0, 101.0, 99.0]),
            Spread::of(&[80.0, 80.5, 79.5]),
        ];
        assert!(unsteady(&d).is_empty());
    }

    #[test]
    fn a_spread_above_five_percent_is_unsteady() {
        let d = [
            Spread::of(&[100.0, 101.0, 99.0]),
            Spread::of(&[40.0, 90.0, 40.0]),
        ];
        let u = unsteady(&d);
        assert_eq!(u.len(), 1);
        assert_eq!(u[0].0, 1);
        assert!(matches!(u[0].1, Unsteady::Relative(_)));
    }

    #[test]
    fn a_spread_ten_times_the_others_is_unsteady_even_under_five_percent() {
        let d = [
            Spread::of(&[100.0, 100.01, 99.99]),
            Spread::of(&[100.0, 104.0, 96.0]),
        ];
        let u = unsteady(&d);
        assert_eq!(u.len(), 1);
        assert!(matches!(u[0], (1, Unsteady::Ratio(r)) if r >= 10.0));
    }
}
