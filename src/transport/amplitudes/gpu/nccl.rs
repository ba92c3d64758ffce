//! The `nccl` wire: grouped ncclSend/ncclRecv between partner ranks, in
//! messages of at most 2^28 amplitudes as QuEST v4 sends them.

use super::{GpuRegister, GpuWire};
use crate::error::Result;
use crate::libs::Library;
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
        if reg.sharing > 1 {
            let n = reg.sharing;
            return Some(format!("{n} ranks share each GPU of this node (more processes than GPUs): NCCL needs a GPU per rank"));
        }
        reg.comms.is_none().then(|| "NCCL was not set up for this run".to_string())
    }

    fn exchange(&self, reg: &mut GpuRegister) -> Result<Seconds> {
        let moves: Vec<Move> = (0..reg.ranks.len())
            .map(|i| {
                let (p, (send, recv)) = (reg.part(i), reg.ends(i));
                Move { send, recv, bytes: p.len, to: p.peer, from: p.peer }
            })
            .collect();
        let piece = reg.piece.unwrap_or((1 << 28) * reg.layout.precision.bytes());
        reg.nccl(&moves, piece)
    }
}
