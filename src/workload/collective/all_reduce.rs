//! all_reduce: every rank ends with the reduction of all ranks' buffers.

use super::{OpUse, Spec};
use crate::dtype::DataType;
use crate::error::Result;
use crate::transport::{Call, Collective, Counts, Primitives, Source};

pub struct AllReduce;

impl Collective for AllReduce {
    fn name(&self) -> &'static str {
        "all_reduce"
    }
    fn issue(&self, p: &mut dyn Primitives, c: &Call) -> Result<()> {
        p.all_reduce(c.input, c.output, c.count)
    }
    fn source(&self, _: &Counts, _: DataType, _: usize, _: usize, _: usize, j: u64) -> Source {
        Source::Reduced { index: j }
    }
    fn source_cu(&self) -> &'static str {
        "return reduced<E>(c, j);"
    }
}

impl Spec for AllReduce {
    fn command(&self) -> &'static str {
        "allreduce"
    }
    fn about(&self) -> &'static str {
        "NCCL all_reduce benchmark (nccl-tests all_reduce_perf)"
    }
    fn counts(&self, count: u64, _: DataType, _: u64) -> Counts {
        Counts { send: count, recv: count, param: count, send_inplace_offset: 0, recv_inplace_offset: 0 }
    }
    fn bus_factor(&self, n: u64) -> f64 {
        2.0 * (n as f64 - 1.0) / n as f64
    }
    fn op_use(&self) -> OpUse {
        OpUse::Reduces
    }
}
