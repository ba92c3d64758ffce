//! reduce: the root ends with the reduction of all ranks' buffers; the
//! other ranks' output buffers are left as they were.

use super::{Collective, Counts, Kind, OpUse, Source};
use crate::dtype::DataType;

pub struct Reduce;

impl Collective for Reduce {
    fn kind(&self) -> Kind {
        Kind::Reduce
    }
    fn counts(&self, count: u64, _: DataType, _: u64) -> Counts {
        Counts { send: count, recv: count, param: count, send_inplace_offset: 0, recv_inplace_offset: 0 }
    }
    fn bus_factor(&self, _: u64) -> f64 {
        1.0
    }
    fn source(&self, _: &Counts, rank: usize, root: usize, _: usize, j: u64) -> Source {
        if rank == root { Source::Reduced { index: j } } else { Source::Unchecked }
    }
    fn op_use(&self) -> OpUse {
        OpUse::Reduces
    }
    fn rooted(&self) -> bool {
        true
    }
}
