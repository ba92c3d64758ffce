//! Moving an exchange's message: α for each piece it is sent in plus its
//! bytes over β, at the farthest level it crosses. Ranks that share a
//! device share that level's link: a rate found with k of them on it gives
//! each of k' ranks k/k' of it, or, where they share only part of the path
//! (a GPU's host link, which a staged byte crosses twice), their own part's
//! time and k'/k of the shared part's.

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
                Some(c) => staged(rate.gbps, at_level.sharing as f64, k, c),
                None => rate.gbps * at_level.sharing as f64 / k,
            };
        }
        Some(rate.seconds(pieces, bytes))
    }
}

/// Each of `k` ranks' rate where they stage through a host link that all
/// of them together cross at `c` GB/s a direction, from `gbps` measured
/// with `s` of them: a byte crosses the link to the host and back, 2k/c
/// ns with k ranks on it, and each rank's own copies take what is left of
/// its measured time (nothing, where the link alone explains it).
fn staged(gbps: f64, s: f64, k: f64, c: f64) -> f64 {
    let own = (1.0 / gbps - 2.0 * s / c).max(0.0);
    1.0 / (own + 2.0 * k / c)
}
