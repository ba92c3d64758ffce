//! hypercube: an all-gather by recursive doubling, the pattern of a
//! distributed state vector's global qubits. Each rank first places its
//! own block at its place in the output (a device copy), then for mask =
//! 1, 2, 4, … exchanges with rank XOR mask everything it has gathered so
//! far, each exchange a group of its own (as nccl-tests' hypercube_perf).
//! The rank count must be a power of two.

use super::{OpUse, Spec, aligned_block};
use crate::dtype::DataType;
use crate::error::{Error, Result};
use crate::transport::{Buf, Call, Collective, Counts, Primitives, Region, Source};

pub struct HyperCube;

impl Collective for HyperCube {
    fn name(&self) -> &'static str {
        "hypercube"
    }
    /// Step 0 the copy (none in place, where the block is already there),
    /// step s ≥ 1 the exchange with rank XOR 2^(s-1).
    fn issue(&self, p: &mut dyn Primitives, c: &Call) -> Result<()> {
        let b = c.count;
        let block = |k: u64| Region { buffer: Buf::Recv, offset: c.output.offset + k * b };
        let rank = c.rank as u64;
        if c.step == 0 {
            return if c.input == block(rank) { Ok(()) } else { p.copy(c.input, block(rank), b, c.rank) };
        }
        let mask = 1u64 << (c.step - 1);
        let (mine, theirs) = (rank & !(mask - 1), (rank & !(mask - 1)) ^ mask);
        let peer = c.rank ^ mask as usize;
        p.send(block(mine), b * mask, peer)?;
        p.recv(block(theirs), b * mask, peer)
    }
    fn steps(&self, nranks: usize) -> usize {
        1 + nranks.max(1).ilog2() as usize
    }
    fn source(&self, c: &Counts, _: DataType, _: usize, _: usize, _: usize, j: u64) -> Source {
        Source::Copied { rank: (j / c.param) as usize, index: j % c.param }
    }
    fn source_cu(&self) -> &'static str {
        "return input<E>(c, (int)(j / blk), j % blk);"
    }
}

impl Spec for HyperCube {
    fn command(&self) -> &'static str {
        "hypercube"
    }
    fn about(&self) -> &'static str {
        "all-gather by rank XOR mask exchanges, the amplitude exchange's pattern (nccl-tests hypercube_perf)"
    }
    fn counts(&self, count: u64, dtype: DataType, n: u64) -> Counts {
        let b = aligned_block(count, dtype, n);
        Counts { send: b, recv: b * n, param: b, send_inplace_offset: b, recv_inplace_offset: 0 }
    }
    /// nccl-tests counts what each rank receives: n − 1 blocks of the size's n.
    fn alg_factor(&self, n: u64) -> f64 {
        (n as f64 - 1.0) / n as f64
    }
    fn bus_factor(&self, _: u64) -> f64 {
        1.0
    }
    fn op_use(&self) -> OpUse {
        OpUse::Ignores
    }
    /// nccl-tests' hypercube_perf leaves the redop column empty.
    fn no_op_label(&self) -> &'static str {
        ""
    }
    fn fits(&self, n: usize) -> Result<()> {
        if n.is_power_of_two() {
            return Ok(());
        }
        Err(Error::Usage(format!(
            "hypercube pairs rank r with r XOR 2^k: it needs a power-of-two rank count, not {n}"
        )))
    }
}
