//! all_reduce: every rank ends with the reduction of all ranks' buffers.

use super::{Collective, Counts, Kind, OpUse, Source};
use crate::dtype::DataType;

pub struct AllReduce;

impl Collective for AllReduce {
    fn kind(&self) -> Kind {
        Kind::AllReduce
    }
    fn counts(&self, count: u64, _: DataType, _: u64) -> Counts {
        Counts { send: count, recv: count, param: count, send_inplace_offset: 0, recv_inplace_offset: 0 }
    }
    fn bus_factor(&self, n: u64) -> f64 {
        2.0 * (n as f64 - 1.0) / n as f64
    }
    fn source(&self, _: &Counts, _: usize, _: usize, _: usize, j: u64) -> Source {
        Source::Reduced { index: j }
    }
    fn op_use(&self) -> OpUse {
        OpUse::Reduces
    }
}
