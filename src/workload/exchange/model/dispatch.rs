//! Host ranks that are threads of one process are started and joined for
//! every step, twice for a step that exchanges (the move, then the update;
//! transport/amplitudes/cpu.rs): what that costs for as many threads as a
//! process runs, from the records' measured dispatch (between measured
//! thread counts, in proportion; past the largest, as the largest).
//! Nothing for GPUs.

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
    fn seconds(&self, step: &PhysicalGate, at_: &Placement, m: &Machine, _wire: Option<&WireFigures>) -> Option<f64> {
        if !m.host {
            return Some(0.0);
        }
        // An exchanging step starts the threads twice: to move the
        // messages, then to update the amplitudes.
        let starts = if step.is_local() { 1.0 } else { 2.0 };
        Some(starts * at(&m.dispatch, at_.threads))
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Machine, Placement, Rate, Term};
    use crate::statevec::circuit::hadamard;
    use crate::statevec::layout::{Layout, Precision};
    use crate::statevec::step::PhysicalGate;

    /// 4 threads: a local step starts them once, an exchanging step twice.
    #[test]
    fn an_exchanging_step_starts_the_threads_twice() {
        let m = Machine {
            source: "test".into(),
            gpu_memory: 1 << 30,
            gpus_per_node: 2,
            host: true,
            local: Rate { alpha_s: 0.0, gbps: 10.0 },
            step_s: 0.0,
            dispatch: vec![(1, 1e-6), (4, 50e-6)],
            processes_measured: false,
            unknown: Vec::new(),
            wires: Vec::new(),
            tables: Vec::new(),
        };
        let at = Placement { layout: Layout::new(12, 4, Precision::Double).unwrap(), sharing: 2, devices_per_node: 2, threads: 4 };
        let local = super::Dispatch.seconds(&PhysicalGate::H(0), &at, &m, None);
        let global = super::Dispatch.seconds(&PhysicalGate::GlobalU { t: 11, m: hadamard() }, &at, &m, None);
        assert_eq!((local, global), (Some(50e-6), Some(100e-6)));
        let gpus = Machine { host: false, ..m };
        assert_eq!(super::Dispatch.seconds(&PhysicalGate::H(0), &at, &gpus, None), Some(0.0));
    }

    #[test]
    fn between_measured_counts_in_proportion() {
        let t = [(1, 1e-6), (2, 20e-6), (4, 60e-6)];
        assert_eq!(super::at(&t, 1), 1e-6);
        assert!((super::at(&t, 3) - 40e-6).abs() < 1e-12);
        assert_eq!(super::at(&t, 8), 60e-6);
        assert_eq!(super::at(&[], 8), 0.0);
    }
}
