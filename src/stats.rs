//! The one statistics type of every record: exact order statistics of
//! repeated measurements of one quantity (times, bandwidths), so that a
//! median in any table means the same thing.

use serde::{Deserialize, Serialize};

/// Count, extremes, mean and percentiles of a set of samples. The unit is
/// the containing field's (`time_us`, `gbps`, …). The median of an even
/// count is the mean of the two middle samples; percentiles are nearest-rank.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Summary {
    #[serde(default)]
    pub samples: u64,
    #[serde(alias = "min_us", alias = "min_s")]
    pub min: f64,
    #[serde(alias = "p50_us", alias = "median_s")]
    pub median: f64,
    #[serde(default)]
    pub mean: f64,
    #[serde(default, alias = "p99_us")]
    pub p99: f64,
    #[serde(default)]
    pub p999: f64,
    #[serde(alias = "max_us", alias = "max_s")]
    pub max: f64,
}

impl Summary {
    /// The summary of `values` (all zeros when there are none).
    pub fn of(values: &[f64]) -> Summary {
        if values.is_empty() {
            return Summary::default();
        }
        let mut v = values.to_vec();
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let rank = |q: f64| v[((q * n as f64).ceil() as usize).clamp(1, n) - 1];
        Summary {
            samples: n as u64,
            min: v[0],
            median: if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 },
            mean: v.iter().sum::<f64>() / n as f64,
            p99: rank(0.99),
            p999: rank(0.999),
            max: v[n - 1],
        }
    }

    /// The same summary with every figure multiplied by `k` (seconds to µs).
    pub fn scaled(self, k: f64) -> Summary {
        Summary {
            min: self.min * k,
            median: self.median * k,
            mean: self.mean * k,
            p99: self.p99 * k,
            p999: self.p999 * k,
            max: self.max * k,
            ..self
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_statistics_of_known_samples() {
        let s: Vec<f64> = (1..=100).rev().map(f64::from).collect();
        let st = Summary::of(&s);
        assert_eq!((st.samples, st.min, st.max), (100, 1.0, 100.0));
        assert_eq!((st.median, st.mean, st.p99, st.p999), (50.5, 50.5, 99.0, 100.0));
        let odd = Summary::of(&[3.0, 1.0, 2.0]);
        assert_eq!((odd.median, odd.p99), (2.0, 3.0));
        assert_eq!(Summary::of(&[]), Summary::default());
        assert_eq!(Summary::of(&[2e-6]).scaled(1e6).median, 2.0);
    }

    #[test]
    fn reads_the_three_earlier_layouts() {
        let iter: Summary =
            serde_json::from_str(r#"{"samples":20,"min_us":1.5,"p50_us":2.0,"p99_us":3.0,"max_us":4.0}"#).unwrap();
        assert_eq!((iter.samples, iter.min, iter.median, iter.p99, iter.max), (20, 1.5, 2.0, 3.0, 4.0));
        let secs: Summary = serde_json::from_str(r#"{"median_s":0.5,"min_s":0.25,"max_s":1.0,"samples":3}"#).unwrap();
        assert_eq!((secs.samples, secs.median, secs.min, secs.max), (3, 0.5, 0.25, 1.0));
        let gbps: Summary = serde_json::from_str(r#"{"median":50.0,"min":40.0,"max":55.0}"#).unwrap();
        assert_eq!((gbps.samples, gbps.median), (0, 50.0));
    }
}
