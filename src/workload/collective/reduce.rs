//! reduce: the root ends with the reduction of all ranks' buffers; the
//! other ranks' output buffers are left as they were.

use super::{OpUse, Spec};
use crate::dtype::DataType;
use crate::error::Result;
use crate::transport::{Call, Collective, Counts, Primitives, Source};

pub struct Reduce;

impl Collective for Reduce {
    fn name(&self) -> &'static str {
        "reduce"
    }
    fn issue(&self, p: &mut dyn Primitives, c: &Call) -> Result<()> {
        p.reduce(c.input, c.output, c.count, c.root)
    }
    fn source(&self, _: &Counts, _: DataType, rank: usize, root: usize, _: usize, j: u64) -> Source {
        if rank == root { Source::Reduced { index: j } } else { Source::Unchecked }
    }
    fn source_cu(&self) -> &'static str {
        "return reduced<E>(c, j);"
    }
}

impl Spec for Reduce {
    fn command(&self) -> &'static str {
        "reduce"
    }
    fn about(&self) -> &'static str {
        "NCCL reduce benchmark (nccl-tests reduce_perf)"
    }
    fn counts(&self, count: u64, _: DataType, _: u64) -> Counts {
        Counts { send: count, recv: count, param: count, send_inplace_offset: 0, recv_inplace_offset: 0 }
    }
    fn bus_factor(&self, _: u64) -> f64 {
        1.0
    }
    fn op_use(&self) -> OpUse {
        OpUse::Reduces
    }
    fn rooted(&self) -> bool {
        true
    }
}
