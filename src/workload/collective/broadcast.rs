//! broadcast: every rank ends with the root's buffer.

use super::{OpUse, Spec};
use crate::dtype::DataType;
use crate::error::Result;
use crate::transport::{Call, Collective, Counts, Primitives, Source};

pub struct Broadcast;

impl Collective for Broadcast {
    fn name(&self) -> &'static str {
        "broadcast"
    }
    fn issue(&self, p: &mut dyn Primitives, c: &Call) -> Result<()> {
        p.broadcast(c.input, c.output, c.count, c.root)
    }
    fn source(&self, _: &Counts, _: DataType, _: usize, root: usize, _: usize, j: u64) -> Source {
        Source::Copied { rank: root, index: j }
    }
    fn source_cu(&self) -> &'static str {
        "return input<E>(c, c.root, j);"
    }
}

impl Spec for Broadcast {
    fn command(&self) -> &'static str {
        "broadcast"
    }
    fn about(&self) -> &'static str {
        "NCCL broadcast benchmark (nccl-tests broadcast_perf)"
    }
    fn counts(&self, count: u64, _: DataType, _: u64) -> Counts {
        Counts { send: count, recv: count, param: count, send_inplace_offset: 0, recv_inplace_offset: 0 }
    }
    fn bus_factor(&self, _: u64) -> f64 {
        1.0
    }
    fn op_use(&self) -> OpUse {
        OpUse::Ignores
    }
    fn rooted(&self) -> bool {
        true
    }
}
