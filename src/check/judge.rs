//! How a measurement becomes PASS, WARN or FAIL: against its floor (or
//! ceiling) with a warn band just above it (below it), and against a
//! baseline within the profile's tolerance, stated as a ratio.

use super::profile::Tolerance;
use crate::record::check::{CheckRun, Row, Status};

/// A bandwidth at least `floor` passes, within `warn` above it warns; a
/// time at most `ceiling` passes, within `warn` below it warns.
pub fn bound(value: f64, floor: Option<f64>, ceiling: Option<f64>, warn: f64) -> Status {
    let mut s = Status::Pass;
    if let Some(f) = floor {
        s = s.max(if value.is_nan() || value < f {
            Status::Fail
        } else if value < f * (1.0 + warn) {
            Status::Warn
        } else {
            Status::Pass
        });
    }
    if let Some(c) = ceiling {
        s = s.max(if value.is_nan() || value > c {
            Status::Fail
        } else if value > c * (1.0 - warn) {
            Status::Warn
        } else {
            Status::Pass
        });
    }
    s
}

/// Holds a measured row against the same step and place of a baseline, on
/// the same node where the baseline has it, else on the first of its
/// nodes that has it (a node of the same kind: the profile is the same):
/// a bandwidth that fell, or a time that grew, beyond the
/// tolerance and beyond both runs' spread (every sample now worse than
/// every sample then) is WARN or FAIL, so that a machine's own spread
/// from sample to sample is not a regression; the ratio shown is median
/// against median.
pub fn baseline(row: &mut Row, base: Option<&CheckRun>, tol: &Tolerance) {
    let Some(base) = base else { return };
    let (Some(now), Some(best)) = (row.measured, row.best_sample()) else { return };
    let step = |b: &&Row| b.step == row.step && b.place == row.place && b.measured.is_some();
    let Some(base_row) =
        base.rows.iter().filter(step).find(|b| b.node == row.node).or_else(|| base.rows.iter().find(step))
    else {
        return;
    };
    let (Some(then), Some(then_worst)) = (base_row.measured, base_row.worst_sample()) else { return };
    let vs = now / then;
    row.baseline = Some(then);
    row.vs_baseline = Some(vs);
    // How much worse the best sample now is than the worst one then, as a fraction of it.
    let worse = if row.is_time() { best / then_worst - 1.0 } else { 1.0 - best / then_worst };
    let status = if worse.is_nan() || worse > tol.fail {
        Status::Fail
    } else if worse > tol.warn {
        Status::Warn
    } else {
        return;
    };
    if status > row.status {
        row.status = status;
        let then_fix = if row.fix.is_empty() { String::new() } else { format!("; {}", row.fix) };
        let (n, m) = (row.samples.len().max(1), base_row.samples.len().max(1));
        let every = if n * m > 1 {
            format!(", each of {n} samples {} worse than the worst of its {m}", percent(worse))
        } else {
            String::new()
        };
        row.fix = format!(
            "{vs:.2}× the baseline ({} {}{every}): something changed since it was taken{then_fix}",
            crate::record::check::figure(then),
            row.unit
        );
    }
}

fn percent(x: f64) -> String {
    format!("{:.0}%", x * 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floors_ceilings_and_the_warn_band() {
        assert_eq!(bound(100.0, Some(90.0), None, 0.05), Status::Pass);
        assert_eq!(bound(92.0, Some(90.0), None, 0.05), Status::Warn);
        assert_eq!(bound(89.0, Some(90.0), None, 0.05), Status::Fail);
        assert_eq!(bound(f64::NAN, Some(90.0), None, 0.05), Status::Fail);
        assert_eq!(bound(5.0, None, Some(9.0), 0.05), Status::Pass);
        assert_eq!(bound(8.8, None, Some(9.0), 0.05), Status::Warn);
        assert_eq!(bound(9.5, None, Some(9.0), 0.05), Status::Fail);
    }

    fn measured(step: &str, value: f64, ceiling: Option<f64>) -> Row {
        Row {
            step: step.into(),
            place: None,
            kind: "copy".into(),
            node: "n".into(),
            found: String::new(),
            measured: Some(value),
            samples: Vec::new(),
            unit: "GB/s".into(),
            expected: None,
            expected_from: None,
            floor: None,
            ceiling,
            ratio: None,
            baseline: None,
            vs_baseline: None,
            status: Status::Pass,
            fix: String::new(),
            attempts: 1,
            missing: false,
        }
    }

    /// A baseline record of one node holding `rows`.
    fn baseline_of(rows: Vec<Row>) -> CheckRun {
        CheckRun {
            header: crate::record::Header::start("check", None),
            profile: "p".into(),
            profile_from: "test".into(),
            source: String::new(),
            measured_here: true,
            level: "quick".into(),
            budget_s: 60,
            elapsed_s: 1.0,
            baseline: None,
            nodes: vec!["n".into()],
            rank_nodes: Vec::new(),
            rows,
            spent: Vec::new(),
            tolerance: Default::default(),
            verdict: None,
            init: None,
        }
    }

    #[test]
    fn a_bandwidth_that_dropped_or_a_time_that_grew_is_a_regression() {
        let tol = Tolerance { warn: 0.05, fail: 0.10 };
        let base = baseline_of(vec![measured("bw", 100.0, None), measured("lat", 10.0, Some(20.0))]);
        let judged = |step: &str, v: f64, ceiling| {
            let mut r = measured(step, v, ceiling);
            baseline(&mut r, Some(&base), &tol);
            (r.status, r.vs_baseline)
        };
        assert_eq!(judged("bw", 97.0, None), (Status::Pass, Some(0.97)));
        assert_eq!(judged("bw", 93.0, None).0, Status::Warn);
        assert_eq!(judged("bw", 89.0, None).0, Status::Fail);
        // A baseline 20% faster than now (100 against 80) is a regression.
        assert_eq!(judged("bw", 80.0, None), (Status::Fail, Some(0.8)));
        assert_eq!(judged("bw", 150.0, None).0, Status::Pass);
        assert_eq!(judged("lat", 5.0, Some(20.0)), (Status::Pass, Some(0.5)));
        assert_eq!(judged("lat", 10.7, Some(20.0)).0, Status::Warn);
        assert_eq!(judged("lat", 11.5, Some(20.0)).0, Status::Fail);
        assert_eq!(judged("other", 1.0, None), (Status::Pass, None));
    }

    #[test]
    fn a_drop_counts_only_where_every_sample_taken_now_shows_it() {
        let tol = Tolerance { warn: 0.05, fail: 0.10 };
        let base = baseline_of(vec![Row { samples: vec![100.0, 90.0, 104.0], ..measured("bw", 100.0, None) }]);
        let judged = |samples: &[f64]| {
            let mut r = measured("bw", samples[samples.len() / 2], None);
            r.samples = samples.to_vec();
            baseline(&mut r, Some(&base), &tol);
            r
        };
        // A median of 30 on a loaded machine whose best sample still reaches the baseline's: noise.
        let r = judged(&[25.0, 30.0, 30.0, 98.0, 31.0]);
        assert_eq!((r.status, r.vs_baseline), (Status::Pass, Some(0.3)));
        // Every sample half the baseline: a regression, said so.
        let r = judged(&[48.0, 50.0, 51.0]);
        assert_eq!(r.status, Status::Fail);
        assert!(r.fix.contains("each of 3 samples 43% worse than the worst of its 3"), "{}", r.fix);
    }
}
