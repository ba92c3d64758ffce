//! The amplitudes an exchange updates once its message is in: the nearest
//! exchange class a record measured (its update, less its launch), scaled
//! to the bytes this device holds; without records, the bytes the update
//! moves over the memory's bandwidth.

use super::{Machine, Part, Placement, Term, WireFigures, update_traffic};
use crate::statevec::step::PhysicalGate;
use crate::workload::exchange::projection::{Table, nearest};

pub struct Update;

impl Term for Update {
    fn name(&self) -> &'static str {
        "update"
    }
    fn part(&self) -> Part {
        Part::Update
    }
    fn seconds(&self, step: &PhysicalGate, at: &Placement, m: &Machine, wire: Option<&WireFigures>) -> Option<f64> {
        if step.is_local() {
            return Some(0.0);
        }
        let held = (at.layout.chunk_bytes() * at.sharing as u64) as f64;
        if let Some(t) = m.table_for(&at.layout, at.sharing) {
            let table = Table { classes: &t.classes, layout: t.layout };
            // The update is the same kernels whichever wire brought the
            // message: the wire's own class first, else any wire's.
            let mut wires: Vec<Option<&str>> = vec![wire.map(|w| w.name.as_str())];
            wires.extend(t.classes.iter().map(|c| c.transport.as_deref()));
            if let Some(c) = wires.into_iter().find_map(|w| nearest(step, &at.layout, w, table)) {
                let measured = (t.layout.chunk_bytes() * t.sharing as u64) as f64;
                let pass = (c.update.median - m.local.alpha_s * t.sharing as f64).max(0.0);
                return Some(pass * held / measured);
            }
        }
        (m.local.gbps > 0.0).then(|| at.sharing as f64 * update_traffic(step, &at.layout) / (m.local.gbps * 1e9))
    }
}
