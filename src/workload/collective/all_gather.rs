//! all_gather: every rank ends with all ranks' blocks, in rank order.

use super::{Collective, Counts, Kind, OpUse, Source, aligned_block};
use crate::dtype::DataType;

pub struct AllGather;

impl Collective for AllGather {
    fn kind(&self) -> Kind {
        Kind::AllGather
    }
    fn counts(&self, count: u64, dtype: DataType, n: u64) -> Counts {
        let b = aligned_block(count, dtype, n);
        Counts { send: b, recv: b * n, param: b, send_inplace_offset: b, recv_inplace_offset: 0 }
    }
    fn bus_factor(&self, n: u64) -> f64 {
        (n as f64 - 1.0) / n as f64
    }
    fn source(&self, c: &Counts, _: usize, _: usize, _: usize, j: u64) -> Source {
        Source::Copied { rank: (j / c.param) as usize, index: j % c.param }
    }
    fn op_use(&self) -> OpUse {
        OpUse::Ignores
    }
}
