//! Host ranks that are threads of one process are started and joined for
//! every step: what that costs for as many threads as a process runs, from the
//! records' measured dispatch (between measured thread counts, in
//! proportion; past the largest, as the largest). Nothing for GPUs.

use super::{Machine, Part, Placement, Term, WireFigures};
use crate::statevec::step::PhysicalGate;

pub struct Dispatch;

/// The cost for `k` threads from `(threads, seconds)` sorted by threads.
fn at(table: &[(usize, f64)], k: usize) -> f64 {
    let Some(&(first_k, first_s)) = table.first() else { return 0.0 };
    if k <= first_k {
        return first_s;
    }
    for w in table.windows(2) {
        let ((k0, s0), (k1, s1)) = (w[0], w[1]);
        if k <= k1 {
            return s0 + (s1 - s0) * (k - k0) as f64 / (k1 - k0) as f64;
        }
    }
    table.last().map_or(0.0, |l| l.1)
}

impl Term for Dispatch {
    fn name(&self) -> &'static str {
        "dispatch"
    }
    fn part(&self) -> Part {
        Part::Serial
    }
    fn seconds(&self, _step: &PhysicalGate, at_: &Placement, m: &Machine, _wire: Option<&WireFigures>) -> Option<f64> {
        Some(if m.host { at(&m.dispatch, at_.threads) } else { 0.0 })
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn between_measured_counts_in_proportion() {
        let t = [(1, 1e-6), (2, 20e-6), (4, 60e-6)];
        assert_eq!(super::at(&t, 1), 1e-6);
        assert!((super::at(&t, 3) - 40e-6).abs() < 1e-12);
        assert_eq!(super::at(&t, 8), 60e-6);
        assert_eq!(super::at(&[], 8), 0.0);
    }
}
