//! broadcast: every rank ends with the root's buffer.

use super::{Collective, Counts, Kind, OpUse, Source};
use crate::dtype::DataType;

pub struct Broadcast;

impl Collective for Broadcast {
    fn kind(&self) -> Kind {
        Kind::Broadcast
    }
    fn counts(&self, count: u64, _: DataType, _: u64) -> Counts {
        Counts { send: count, recv: count, param: count, send_inplace_offset: 0, recv_inplace_offset: 0 }
    }
    fn bus_factor(&self, _: u64) -> f64 {
        1.0
    }
    fn source(&self, _: &Counts, _: usize, root: usize, _: usize, j: u64) -> Source {
        Source::Copied { rank: root, index: j }
    }
    fn op_use(&self) -> OpUse {
        OpUse::Ignores
    }
    fn rooted(&self) -> bool {
        true
    }
}
