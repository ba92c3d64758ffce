//! reduce_scatter: rank r ends with block r of the reduction of all buffers.

use super::{OpUse, Spec, aligned_block};
use crate::dtype::DataType;
use crate::error::Result;
use crate::transport::{Call, Collective, Counts, Primitives, Source};

pub struct ReduceScatter;

impl Collective for ReduceScatter {
    fn name(&self) -> &'static str {
        "reduce_scatter"
    }
    fn issue(&self, p: &mut dyn Primitives, c: &Call) -> Result<()> {
        p.reduce_scatter(c.input, c.output, c.count)
    }
    fn source(&self, c: &Counts, _: DataType, rank: usize, _: usize, _: usize, j: u64) -> Source {
        Source::Reduced { index: rank as u64 * c.param + j }
    }
    fn source_cu(&self) -> &'static str {
        "return reduced<E>(c, (u64)c.rank * blk + j);"
    }
}

impl Spec for ReduceScatter {
    fn command(&self) -> &'static str {
        "reducescatter"
    }
    fn about(&self) -> &'static str {
        "NCCL reduce_scatter benchmark (nccl-tests reduce_scatter_perf)"
    }
    fn counts(&self, count: u64, dtype: DataType, n: u64) -> Counts {
        let b = aligned_block(count, dtype, n);
        Counts { send: b * n, recv: b, param: b, send_inplace_offset: 0, recv_inplace_offset: b }
    }
    fn bus_factor(&self, n: u64) -> f64 {
        (n as f64 - 1.0) / n as f64
    }
    fn op_use(&self) -> OpUse {
        OpUse::Reduces
    }
}
