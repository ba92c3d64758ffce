//! The `nccl` wire: grouped ncclSend/ncclRecv between partner ranks, in
//! messages of at most 2^28 amplitudes as QuEST v4 sends them.

use super::{GpuRegister, GpuWire};
use crate::error::Result;
use crate::fault::Fault;
use crate::libs::Library;
use crate::statevec::layout::GlobalOp;
use crate::transport::amplitudes::{Seconds, WireImpl};
use crate::transport::nccl::Move;

pub struct Nccl;

impl WireImpl for Nccl {
    fn name(&self) -> &'static str {
        "nccl"
    }
    fn how(&self) -> &'static str {
        "grouped ncclSend/ncclRecv between partners"
    }
    fn libraries(&self) -> &'static [Library] {
        &[Library::Nccl]
    }
    fn gpu(&self) -> Option<&dyn GpuWire> {
        Some(self)
    }
}

impl GpuWire for Nccl {
    fn unavailable(&self, reg: &GpuRegister) -> Option<String> {
        reg.shared.clone().or_else(|| reg.comms.is_none().then(|| "NCCL was not set up for this run".to_string()))
    }

    fn exchange(&self, reg: &mut GpuRegister, pattern: GlobalOp, t: u32, fault: Option<Fault>) -> Result<Seconds> {
        let moves: Vec<Move> = (0..reg.ranks.len())
            .map(|i| {
                let (off, bytes) = reg.message(i, pattern, t, fault);
                let r = &reg.ranks[i];
                let peer = reg.layout.peer(reg.first_rank + i, t, fault);
                Move { send: r.state + off, recv: r.xbuf, bytes, to: peer, from: peer }
            })
            .collect();
        let piece = reg.piece.unwrap_or((1 << 28) * reg.layout.precision.bytes());
        reg.nccl(&moves, piece)
    }
}
