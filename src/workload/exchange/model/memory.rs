//! A local step's pass over the device's memory: the nearest class a record
//! measured, less its launch, scaled to the bytes this device holds (a
//! memory-bound kernel on 2^k times the amplitudes takes 2^k times as
//! long); without records, the bytes the step touches over the memory's
//! bandwidth. Ranks that share a device pass over all their chunks.

use super::{Machine, Part, Placement, Term, WireFigures, traffic};
use crate::statevec::step::PhysicalGate;
use crate::workload::exchange::projection::{Table, nearest};

pub struct Memory;

impl Term for Memory {
    fn name(&self) -> &'static str {
        "memory"
    }
    fn part(&self) -> Part {
        Part::Serial
    }
    fn seconds(&self, step: &PhysicalGate, at: &Placement, m: &Machine, _wire: Option<&WireFigures>) -> Option<f64> {
        if !step.is_local() {
            return Some(0.0);
        }
        let held = (at.layout.chunk_bytes() * at.sharing as u64) as f64;
        if let Some(t) = m.table_for(&at.layout, at.sharing)
            && let Some(c) = nearest(step, &at.layout, None, Table { classes: &t.classes, layout: t.layout })
        {
            let measured = (t.layout.chunk_bytes() * t.sharing as u64) as f64;
            let pass = (c.time_s - m.local.alpha_s * t.sharing as f64).max(0.0);
            return Some(pass * held / measured);
        }
        (m.local.gbps > 0.0).then(|| at.sharing as f64 * traffic(step, &at.layout) / (m.local.gbps * 1e9))
    }
}
