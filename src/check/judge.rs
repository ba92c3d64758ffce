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

/// Holds a measured row against the same step, place and node of a
/// baseline: a bandwidth that dropped, or a time that grew, beyond the
/// tolerance is WARN or FAIL.
pub fn baseline(row: &mut Row, base: Option<&CheckRun>, tol: &Tolerance) {
    let Some(base) = base else { return };
    let Some(now) = row.measured else { return };
    let same = |b: &&Row| b.step == row.step && b.place == row.place && b.node == row.node;
    let Some(then) = base.rows.iter().find(same).and_then(|b| b.measured) else {
        return;
    };
    let vs = now / then;
    row.baseline = Some(then);
    row.vs_baseline = Some(vs);
    // How much worse than the baseline, as a fraction of it.
    let worse = if row.ceiling.is_some() { vs - 1.0 } else { 1.0 - vs };
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
        row.fix = format!(
            "{vs:.2}× the baseline ({} {}): something changed since it was taken{then_fix}",
            crate::record::check::figure(then),
            row.unit
        );
    }
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

    #[test]
    fn a_bandwidth_that_dropped_or_a_time_that_grew_is_a_regression() {
        let tol = Tolerance { warn: 0.05, fail: 0.10 };
        let base = CheckRun {
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
            rows: vec![measured("bw", 100.0, None), measured("lat", 10.0, Some(20.0))],
            verdict: None,
        };
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
}
