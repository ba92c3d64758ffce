//! all_gather: every rank ends with all ranks' blocks, in rank order.

use super::{OpUse, Spec, aligned_block};
use crate::dtype::DataType;
use crate::error::Result;
use crate::transport::{Call, Collective, Counts, Primitives, Source};

pub struct AllGather;

impl Collective for AllGather {
    fn name(&self) -> &'static str {
        "all_gather"
    }
    fn issue(&self, p: &mut dyn Primitives, c: &Call) -> Result<()> {
        p.all_gather(c.input, c.output, c.count)
    }
    fn source(&self, c: &Counts, _: DataType, _: usize, _: usize, _: usize, j: u64) -> Source {
        Source::Copied { rank: (j / c.param) as usize, index: j % c.param }
    }
    fn source_cu(&self) -> &'static str {
        "return input<E>(c, (int)(j / blk), j % blk);"
    }
}

impl Spec for AllGather {
    fn command(&self) -> &'static str {
        "allgather"
    }
    fn about(&self) -> &'static str {
        "NCCL all_gather benchmark (nccl-tests all_gather_perf)"
    }
    fn counts(&self, count: u64, dtype: DataType, n: u64) -> Counts {
        let b = aligned_block(count, dtype, n);
        Counts { send: b, recv: b * n, param: b, send_inplace_offset: b, recv_inplace_offset: 0 }
    }
    fn bus_factor(&self, n: u64) -> f64 {
        (n as f64 - 1.0) / n as f64
    }
    fn op_use(&self) -> OpUse {
        OpUse::Ignores
    }
}
