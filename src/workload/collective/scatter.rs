//! scatter: rank r ends with block r of the root's buffer. NCCL's scatter
//! where it has one (2.28 and later), else, on the root, a send to every
//! rank and on every rank a receive from the root (as nccl-tests issues it).

use super::{OpUse, Spec, aligned_block};
use crate::dtype::DataType;
use crate::error::Result;
use crate::transport::{Call, Collective, Counts, Primitives, Source};

pub struct Scatter;

impl Collective for Scatter {
    fn name(&self) -> &'static str {
        "scatter"
    }
    fn issue(&self, p: &mut dyn Primitives, c: &Call) -> Result<()> {
        p.scatter(c.input, c.output, c.count, c.root, c.rank, c.nranks)
    }
    fn source(&self, c: &Counts, _: DataType, rank: usize, root: usize, _: usize, j: u64) -> Source {
        Source::Copied { rank: root, index: rank as u64 * c.param + j }
    }
    fn source_cu(&self) -> &'static str {
        "return input<E>(c, c.root, (u64)c.rank * blk + j);"
    }
}

impl Spec for Scatter {
    fn command(&self) -> &'static str {
        "scatter"
    }
    fn about(&self) -> &'static str {
        "NCCL scatter benchmark (nccl-tests scatter_perf)"
    }
    fn counts(&self, count: u64, dtype: DataType, n: u64) -> Counts {
        let b = aligned_block(count, dtype, n);
        Counts { send: b * n, recv: b, param: b, send_inplace_offset: 0, recv_inplace_offset: b }
    }
    fn bus_factor(&self, n: u64) -> f64 {
        (n as f64 - 1.0) / n as f64
    }
    fn op_use(&self) -> OpUse {
        OpUse::Ignores
    }
    fn rooted(&self) -> bool {
        true
    }
}
