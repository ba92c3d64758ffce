//! Every step launches its kernel and waits for it: α per step on its
//! device (as circuits show it, where measured), and ranks that share a
//! device take turns on it.

use super::{Machine, Part, Placement, Term, WireFigures};
use crate::statevec::step::PhysicalGate;

pub struct Launch;

impl Term for Launch {
    fn name(&self) -> &'static str {
        "launch"
    }
    fn part(&self) -> Part {
        Part::Serial
    }
    fn seconds(&self, _step: &PhysicalGate, at: &Placement, m: &Machine, _wire: Option<&WireFigures>) -> Option<f64> {
        Some(m.step_s * at.sharing as f64)
    }
}
