//! perftest's arithmetic, on timestamps the loops took: average and peak
//! bandwidth and message rate of a bandwidth test, the latency summary
//! (min, median, average, deviation, 99th and 99.9th percentiles), and
//! what a timed run (-D, --run_infinitely) reports: the averages over the
//! time measured. Kept apart from the verbs so that the definitions are
//! tested without an adapter.

/// perftest's print_report_lat drops this many of the slowest samples.
const LAT_MEASURE_TAIL: usize = 2;

/// What a bandwidth loop recorded, in nanoseconds from one origin.
#[derive(Debug, Clone, Default)]
pub struct BwTimes {
    /// The post time of every message, in post order (empty when the peak
    /// is not computed).
    pub posted: Vec<u64>,
    /// `completed[k]` is when the (k+1)-th message was known complete; only
    /// the counts reached at a signaled completion are set.
    pub completed: Vec<Option<u64>>,
    pub first_post: u64,
    pub last_completion: u64,
}

/// Bandwidth figures in bytes per second and millions of messages per
/// second, over `messages` messages.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BwFigures {
    pub messages: u64,
    pub peak: Option<f64>,
    pub average: f64,
    pub msg_rate_mpps: f64,
}

/// perftest's definitions: average = size × messages ÷ (last completion −
/// first post); peak = size ÷ the shortest time per message over any run of
/// messages from a post to a later signaled completion.
pub fn bandwidth(size: u64, messages: u64, times: &BwTimes, cq_mod: u32) -> BwFigures {
    let span = times.last_completion.saturating_sub(times.first_post).max(1) as f64 / 1e9;
    let average = size as f64 * messages as f64 / span;
    let msg_rate_mpps = messages as f64 / span / 1e6;
    let n = times.posted.len().min(times.completed.len());
    let peak = (n > 0).then(|| {
        let step = cq_mod.max(1) as usize;
        let mut best = f64::INFINITY;
        let mut consider = |i: usize, j: usize| {
            if let Some(done) = times.completed[j] {
                let per_message = done.saturating_sub(times.posted[i]) as f64 / (j - i + 1) as f64;
                if per_message > 0.0 && per_message < best {
                    best = per_message;
                }
            }
        };
        for i in 0..n {
            let mut j = (i + 1).div_ceil(step) * step - 1;
            while j < n {
                consider(i, j);
                j += step;
            }
            if !n.is_multiple_of(step) {
                consider(i, n - 1);
            }
        }
        size as f64 / (best / 1e9)
    });
    BwFigures { messages, peak: peak.filter(|p| p.is_finite()), average, msg_rate_mpps }
}

/// A timed run's bandwidth (perftest's duration mode and each line of
/// --run_infinitely): `messages` of `size` bytes completed in `span_ns`,
/// no peak.
pub fn bandwidth_over(size: u64, messages: u64, span_ns: u64) -> BwFigures {
    let span = span_ns.max(1) as f64 / 1e9;
    BwFigures {
        messages,
        peak: None,
        average: size as f64 * messages as f64 / span,
        msg_rate_mpps: messages as f64 / span / 1e6,
    }
}

/// A latency test run for a duration, as perftest's
/// print_report_lat_duration: the iterations completed in the time
/// measured, the average latency (µs, that time over the iterations,
/// halved for write and send), and transactions (iterations) per second.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LatDurationFigures {
    pub iterations: u64,
    pub avg: f64,
    pub tps: f64,
}

/// `iterations` round trips in `span_ns`; `divisor` 2 for write and send, 1 for read.
pub fn latency_over(iterations: u64, span_ns: u64, divisor: u32) -> LatDurationFigures {
    let span_us = span_ns as f64 / 1e3;
    let n = iterations.max(1) as f64;
    LatDurationFigures {
        iterations,
        avg: span_us / divisor.max(1) as f64 / n,
        tps: if span_ns == 0 { 0.0 } else { iterations as f64 / (span_us / 1e6) },
    }
}

/// The latency summary, µs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LatFigures {
    pub samples: u64,
    pub min: f64,
    pub max: f64,
    pub typical: f64,
    pub avg: f64,
    pub stdev: f64,
    pub p99: f64,
    pub p99_9: f64,
}

/// perftest's print_report_lat on the post times of a ping-pong (ns): each
/// sample is the time between two consecutive posts (one round trip),
/// divided by `divisor` (2 for write and send, 1 for read); the two slowest
/// samples are dropped before the statistics.
pub fn latency(posts_ns: &[u64], divisor: u32) -> LatFigures {
    let us = |ns: u64| ns as f64 / 1e3 / divisor.max(1) as f64;
    let mut delta: Vec<u64> = posts_ns.windows(2).map(|w| w[1].saturating_sub(w[0])).collect();
    delta.sort_unstable();
    if delta.is_empty() {
        return LatFigures { samples: 0, min: 0.0, max: 0.0, typical: 0.0, avg: 0.0, stdev: 0.0, p99: 0.0, p99_9: 0.0 };
    }
    let cnt = if delta.len() > LAT_MEASURE_TAIL { delta.len() - LAT_MEASURE_TAIL } else { delta.len() };
    let last = delta.len() - 1;
    let at = |i: usize| us(delta[i.min(last)]);
    let typical = if cnt >= 2 && (cnt - 1) % 2 == 1 { (at(cnt / 2) + at(cnt / 2 - 1)) / 2.0 } else { at(cnt / 2) };
    let avg = delta[..cnt].iter().map(|&d| us(d)).sum::<f64>() / cnt as f64;
    let var = delta[..cnt].iter().map(|&d| (us(d) - avg).powi(2)).sum::<f64>() / cnt as f64;
    LatFigures {
        samples: delta.len() as u64,
        min: at(0),
        max: at(cnt),
        typical,
        avg,
        stdev: var.sqrt(),
        p99: at((cnt as f64 * 0.99).ceil() as usize),
        p99_9: at((cnt as f64 * 0.999).ceil() as usize),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steady_stream_peaks_at_its_rate() {
        // 1000 messages of 1000 B, one posted every µs, each done 5 µs later,
        // every completion signaled.
        let n = 1000;
        let times = BwTimes {
            posted: (0..n).map(|i| i * 1000).collect(),
            completed: (0..n).map(|i| Some(i * 1000 + 5000)).collect(),
            first_post: 0,
            last_completion: (n - 1) * 1000 + 5000,
        };
        let f = bandwidth(1000, n, &times, 1);
        // 1000 B per µs over the whole run, a little less for the 5 µs tail.
        assert!((f.average - 1e9 * 1e6 / 1.004e6).abs() < 1e3, "{f:?}");
        let peak = f.peak.unwrap();
        assert!(peak >= f.average * 0.999 && peak <= 1e9, "{f:?}");
        assert!((f.msg_rate_mpps - 1e6 / 1.004e6).abs() < 1e-3);
    }

    #[test]
    fn moderated_completions_only_count_where_signaled() {
        let n = 250u64;
        let mut completed = vec![None; n as usize];
        for k in [99usize, 199, 249] {
            completed[k] = Some(k as u64 * 10 + 100);
        }
        let times =
            BwTimes { posted: (0..n).map(|i| i * 10).collect(), completed, first_post: 0, last_completion: 2590 };
        let f = bandwidth(8, n, &times, 100);
        let peak = f.peak.unwrap();
        // Best: all 250 from the first post (0 ns) to the last completion
        // (2590 ns), 10.36 ns each; windows ending where nothing was
        // signaled do not count.
        assert!((peak - 8.0 / 10.36 * 1e9).abs() < 1.0, "{peak}");
    }

    #[test]
    fn no_peak_without_post_times() {
        let times = BwTimes { first_post: 0, last_completion: 1_000_000_000, ..Default::default() };
        let f = bandwidth(1 << 20, 100, &times, 1);
        assert_eq!(f.peak, None);
        assert!((f.average - 100.0 * (1 << 20) as f64).abs() < 1e-3);
    }

    #[test]
    fn latency_as_perftest_reports_it() {
        // Round trips of 10, 20, … 1000 ns, shuffled by construction order,
        // and two huge outliers that are dropped.
        let mut rtts: Vec<u64> = (1..=100).map(|i| i * 10).collect();
        rtts.extend([1_000_000, 2_000_000]);
        let mut posts = vec![0u64];
        for r in rtts.iter().rev() {
            posts.push(posts.last().unwrap() + r);
        }
        let f = latency(&posts, 2);
        assert_eq!(f.samples, 102);
        assert!((f.min - 0.005).abs() < 1e-9);
        // 100 kept samples: (n-1) odd, the median averages the middle two.
        assert!((f.typical - (0.250 + 0.255) / 2.0).abs() < 1e-9, "{f:?}");
        assert!((f.avg - 0.2525).abs() < 1e-9);
        assert!((f.p99 - 0.5).abs() < 1e-9, "{f:?}");
        // perftest's t_max is the sample just above the kept ones.
        assert!((f.max - 500.0).abs() < 1e-9, "{f:?}");
        let read = latency(&posts, 1);
        assert!((read.min - 0.010).abs() < 1e-9);
    }

    #[test]
    fn timed_runs_average_over_the_time_measured() {
        // 3000 messages of 64 KiB in 2 s.
        let f = bandwidth_over(65536, 3000, 2_000_000_000);
        assert_eq!((f.messages, f.peak), (3000, None));
        assert!((f.average - 65536.0 * 1500.0).abs() < 1e-6, "{f:?}");
        assert!((f.msg_rate_mpps - 0.0015).abs() < 1e-12, "{f:?}");
        // 1000 write round trips in 1 s: 500 µs each way, 1000 per second.
        let l = latency_over(1000, 1_000_000_000, 2);
        assert!((l.avg - 500.0).abs() < 1e-9 && (l.tps - 1000.0).abs() < 1e-9, "{l:?}");
        assert!((latency_over(1000, 1_000_000_000, 1).avg - 1000.0).abs() < 1e-9);
    }

    #[test]
    fn latency_of_too_few_posts_is_empty() {
        assert_eq!(latency(&[5], 2).samples, 0);
    }
}
