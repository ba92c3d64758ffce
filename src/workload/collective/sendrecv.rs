//! sendrecv: a ring; rank r sends its buffer to r+1 and receives r−1's.

use super::{OpUse, Spec};
use crate::dtype::DataType;
use crate::error::Result;
use crate::transport::{Call, Collective, Counts, Primitives, Source};

pub struct SendRecv;

impl Collective for SendRecv {
    fn name(&self) -> &'static str {
        "sendrecv"
    }
    fn issue(&self, p: &mut dyn Primitives, c: &Call) -> Result<()> {
        let n = c.nranks;
        p.send(c.input, c.count, (c.rank + 1) % n)?;
        p.recv(c.output, c.count, (c.rank + n - 1) % n)
    }
    fn source(&self, _: &Counts, _: DataType, rank: usize, _: usize, n: usize, j: u64) -> Source {
        Source::Copied { rank: (rank + n - 1) % n, index: j }
    }
    fn source_cu(&self) -> &'static str {
        "return input<E>(c, (c.rank + c.nranks - 1) % c.nranks, j);"
    }
}

impl Spec for SendRecv {
    fn command(&self) -> &'static str {
        "sendrecv"
    }
    fn about(&self) -> &'static str {
        "NCCL send/recv ring benchmark (nccl-tests sendrecv_perf)"
    }
    fn counts(&self, count: u64, _: DataType, _: u64) -> Counts {
        Counts { send: count, recv: count, param: count, send_inplace_offset: 0, recv_inplace_offset: 0 }
    }
    fn bus_factor(&self, _: u64) -> f64 {
        1.0
    }
    fn op_use(&self) -> OpUse {
        OpUse::Labels
    }
    fn checks_in_place(&self) -> bool {
        false
    }
}
