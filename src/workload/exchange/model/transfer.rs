//! Moving an exchange's message: α for each piece it is sent in plus its
//! bytes over β, at the farthest level it crosses. Ranks that share a
//! device share that level's link: a rate found with k of them on it gives
//! each of k' ranks k/k' of it, or, where they share only part of the path
//! (a GPU's host link), the lesser of their own rate and 1/k' of that part's.

use super::{Level, Machine, Part, Placement, Term, WireFigures};
use crate::statevec::step::PhysicalGate;

pub struct Transfer;

impl Term for Transfer {
    fn name(&self) -> &'static str {
        "transfer"
    }
    fn part(&self) -> Part {
        Part::Transfer
    }
    fn seconds(&self, step: &PhysicalGate, at: &Placement, _m: &Machine, wire: Option<&WireFigures>) -> Option<f64> {
        if step.is_local() {
            return Some(0.0);
        }
        let w = wire?;
        let level = at.level(step);
        let at_level = w.at(level)?;
        let bytes = step.bytes(&at.layout) as f64;
        let pieces = match w.piece_amps {
            Some(a) => (bytes / (a * at.layout.precision.bytes()) as f64).ceil().max(1.0),
            None => 1.0,
        };
        let mut rate = at_level.rate;
        if level == Level::Device {
            let k = at.sharing.max(1) as f64;
            rate.gbps = match at_level.ceiling_gbps {
                Some(c) => rate.gbps.min(c / k),
                None => rate.gbps * at_level.sharing as f64 / k,
            };
        }
        Some(rate.seconds(pieces, bytes))
    }
}
