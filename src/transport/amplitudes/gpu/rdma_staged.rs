//! The `rdma-staged` wire: host staging over RDMA, for GPUs whose memory
//! the adapter cannot reach (no dma-buf, no nvidia_peermem) or to compare
//! with GPUDirect: GPU → pinned host → RDMA WRITE into the partner's pinned
//! host → GPU, pipelined as the host wire, over the rdma wire's connections
//! (cargo feature `rdma`).

use super::host::{HOST_PIECE, HOST_SLOTS};
use super::staging::{self, Hop, Piece};
use super::{GpuRegister, GpuWire};
use crate::error::Result;
use crate::transport::amplitudes::rdma::{self, Peers, Put, Span};
use crate::transport::amplitudes::{Seconds, Wire, WireImpl};

pub struct Pipelined;

impl WireImpl for Pipelined {
    fn name(&self) -> &'static str {
        "rdma-staged"
    }
    fn how(&self) -> &'static str {
        "GPU→pinned host→RDMA WRITE→host→GPU, pipelined in 64M pieces"
    }
    fn through_host(&self) -> bool {
        true
    }
    fn gpu(&self) -> Option<&dyn GpuWire> {
        Some(self)
    }
}

/// The pieces as RDMA WRITEs from each rank's send slot into its partner's
/// receive slot, over connections between the ranks' stages.
struct Writes {
    peers: Option<Peers>,
}

impl GpuWire for Pipelined {
    fn unavailable(&self, reg: &GpuRegister) -> Option<String> {
        rdma::unavailable(reg.world, reg.local())
    }

    fn exchange(&self, reg: &mut GpuRegister) -> Result<Seconds> {
        let piece = reg.piece.unwrap_or(HOST_PIECE);
        // The stages first, so that the connections cover them; they keep
        // their shape through the exchange.
        reg.ensure_stages(HOST_SLOTS, piece, true)?;
        let mut hop = Writes { peers: reg.kept.slot::<Peers>(Wire::RdmaStaged).take() };
        let r = staging::pipelined(reg, &mut hop, piece, HOST_SLOTS);
        *reg.kept.slot(Wire::RdmaStaged) = hop.peers;
        r
    }
}

impl Hop for Writes {
    fn carry(&mut self, reg: &GpuRegister, piece: &Piece) -> Result<()> {
        let spans = reg.stages.iter().map(|st| Span { addr: st.span().0, len: st.span().1, gpu: None }).collect();
        let puts: Vec<Put> = piece
            .peers
            .iter()
            .enumerate()
            .map(|(i, &peer)| {
                let st = &reg.stages[i];
                let (from, to) = (st.send_offset(piece.slot), st.recv_offset(piece.slot));
                Put { local: i, peer, from, to, len: piece.len }
            })
            .collect();
        Peers::reuse(&mut self.peers, reg.first_rank, spans)?.swap(reg.world, &puts)
    }
}
