//! Per-iteration time distributions through an HDR histogram.

use super::record::IterStats;
use hdrhistogram::Histogram;

/// (median, min, max) of a set of samples (zeros when there are none).
pub fn median_min_max(values: &[f64]) -> (f64, f64, f64) {
    if values.is_empty() {
        return (0.0, 0.0, 0.0);
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let median = if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 };
    (median, v[0], v[n - 1])
}

/// Min, median, 99th percentile and max of per-iteration seconds, in µs.
pub fn iter_stats(seconds: &[f64]) -> IterStats {
    // Nanosecond resolution from 1 ns to one hour, 3 significant digits.
    let Ok(mut h) = Histogram::<u64>::new_with_bounds(1, 3_600_000_000_000, 3) else {
        return IterStats { samples: 0, min_us: 0.0, p50_us: 0.0, p99_us: 0.0, max_us: 0.0 };
    };
    for &s in seconds {
        h.saturating_record((s * 1e9).round().max(1.0) as u64);
    }
    let us = |ns: u64| ns as f64 / 1e3;
    IterStats {
        samples: h.len(),
        min_us: us(h.min()),
        p50_us: us(h.value_at_quantile(0.5)),
        p99_us: us(h.value_at_quantile(0.99)),
        max_us: us(h.max()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_known_samples() {
        let s: Vec<f64> = (1..=100).map(|i| i as f64 * 1e-6).collect();
        let st = iter_stats(&s);
        assert_eq!(st.samples, 100);
        assert!((st.min_us - 1.0).abs() < 0.01);
        assert!((st.p50_us - 50.0).abs() < 0.1);
        assert!((st.p99_us - 99.0).abs() < 0.1);
        assert!((st.max_us - 100.0).abs() < 0.1);
    }
}
