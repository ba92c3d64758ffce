//! alltoall: block d of rank s's buffer lands as block s of rank d's, by
//! NCCL's all-to-all where it has one, else a send and a receive to and
//! from every rank (as nccl-tests issues it).

use super::{OpUse, Spec, aligned_block};
use crate::dtype::DataType;
use crate::error::Result;
use crate::transport::{Call, Collective, Counts, Primitives, Source};

pub struct AllToAll;

impl Collective for AllToAll {
    fn name(&self) -> &'static str {
        "alltoall"
    }
    fn issue(&self, p: &mut dyn Primitives, c: &Call) -> Result<()> {
        p.all_to_all(c.input, c.output, c.count, c.nranks)
    }
    fn source(&self, c: &Counts, _: DataType, rank: usize, _: usize, _: usize, j: u64) -> Source {
        Source::Copied { rank: (j / c.param) as usize, index: rank as u64 * c.param + j % c.param }
    }
    fn source_cu(&self) -> &'static str {
        "return input<E>(c, (int)(j / blk), (u64)c.rank * blk + j % blk);"
    }
}

impl Spec for AllToAll {
    fn command(&self) -> &'static str {
        "alltoall"
    }
    fn about(&self) -> &'static str {
        "NCCL alltoall benchmark (nccl-tests alltoall_perf)"
    }
    fn counts(&self, count: u64, dtype: DataType, n: u64) -> Counts {
        let b = aligned_block(count, dtype, n);
        Counts { send: b * n, recv: b * n, param: b, send_inplace_offset: 0, recv_inplace_offset: 0 }
    }
    fn bus_factor(&self, n: u64) -> f64 {
        (n as f64 - 1.0) / n as f64
    }
    fn op_use(&self) -> OpUse {
        OpUse::Ignores
    }
    fn checks_in_place(&self) -> bool {
        false
    }
}
