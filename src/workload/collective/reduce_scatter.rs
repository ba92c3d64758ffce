//! reduce_scatter: rank r ends with block r of the reduction of all buffers.

use super::{Collective, Counts, Kind, OpUse, Source, aligned_block};
use crate::dtype::DataType;

pub struct ReduceScatter;

impl Collective for ReduceScatter {
    fn kind(&self) -> Kind {
        Kind::ReduceScatter
    }
    fn counts(&self, count: u64, dtype: DataType, n: u64) -> Counts {
        let b = aligned_block(count, dtype, n);
        Counts { send: b * n, recv: b, param: b, send_inplace_offset: 0, recv_inplace_offset: b }
    }
    fn bus_factor(&self, n: u64) -> f64 {
        (n as f64 - 1.0) / n as f64
    }
    fn source(&self, c: &Counts, rank: usize, _: usize, _: usize, j: u64) -> Source {
        Source::Reduced { index: rank as u64 * c.param + j }
    }
    fn op_use(&self) -> OpUse {
        OpUse::Reduces
    }
}
