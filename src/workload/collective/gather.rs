//! gather: the root ends with every rank's block, in rank order; the other
//! ranks' output buffers are left as they were. NCCL's gather where it has
//! one (2.28 and later), else a send to the root and, on the root, a
//! receive from every rank (as nccl-tests issues it).

use super::{OpUse, Spec, aligned_block};
use crate::dtype::DataType;
use crate::error::Result;
use crate::transport::{Call, Collective, Counts, Primitives, Source};

pub struct Gather;

impl Collective for Gather {
    fn name(&self) -> &'static str {
        "gather"
    }
    fn issue(&self, p: &mut dyn Primitives, c: &Call) -> Result<()> {
        p.gather(c.input, c.output, c.count, c.root, c.rank, c.nranks)
    }
    fn source(&self, c: &Counts, _: DataType, rank: usize, root: usize, _: usize, j: u64) -> Source {
        if rank != root {
            return Source::Unchecked;
        }
        Source::Copied { rank: (j / c.param) as usize, index: j % c.param }
    }
    fn source_cu(&self) -> &'static str {
        "return input<E>(c, (int)(j / blk), j % blk);"
    }
}

impl Spec for Gather {
    fn command(&self) -> &'static str {
        "gather"
    }
    fn about(&self) -> &'static str {
        "NCCL gather benchmark (nccl-tests gather_perf)"
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
    fn rooted(&self) -> bool {
        true
    }
}
