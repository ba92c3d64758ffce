//! The MPI wires between GPUs of different processes (one GPU each): `mpi`
//! stages amplitudes through pinned host memory (GPU → host → MPI_Sendrecv
//! → host → GPU) in pieces that overlap the copies with MPI;
//! `mpi-cuda-aware` hands the GPU buffers straight to MPI, where the MPI
//! says it takes them. QuEST's own way is the `quest` wire (quest.rs).

use super::host::{HOST_PIECE, HOST_SLOTS};
use super::staging::{self, Hop, Piece};
use super::{GpuRegister, GpuWire};
use crate::error::Result;
use crate::transport::amplitudes::{Seconds, WireImpl};

pub struct Pipelined;
pub struct CudaAware;

impl WireImpl for Pipelined {
    fn name(&self) -> &'static str {
        "mpi"
    }
    fn how(&self) -> &'static str {
        "GPU→pinned host→MPI_Sendrecv→host→GPU, pipelined in 64M pieces"
    }
    fn through_host(&self) -> bool {
        true
    }
    fn gpu(&self) -> Option<&dyn GpuWire> {
        Some(self)
    }
}

impl WireImpl for CudaAware {
    fn name(&self) -> &'static str {
        "mpi-cuda-aware"
    }
    fn how(&self) -> &'static str {
        "MPI_Sendrecv of the GPU buffers themselves (CUDA-aware MPI)"
    }
    fn gpu(&self) -> Option<&dyn GpuWire> {
        Some(self)
    }
}

/// Why MPI cannot move this register's amplitudes, if it cannot.
pub(super) fn unavailable(reg: &GpuRegister) -> Option<String> {
    if reg.world.size() == 1 {
        let build = if cfg!(feature = "mpi") { "" } else { " (with a qbench built with --features mpi)" };
        return Some(format!(
            "it moves amplitudes between processes: start one process per GPU under mpirun or srun{build}"
        ));
    }
    (reg.local() > 1).then(|| "it moves one GPU per process: use -g 1 and a process per GPU".into())
}

impl GpuWire for Pipelined {
    fn unavailable(&self, reg: &GpuRegister) -> Option<String> {
        unavailable(reg)
    }

    fn exchange(&self, reg: &mut GpuRegister) -> Result<Seconds> {
        let piece = reg.piece.unwrap_or(HOST_PIECE);
        staging::pipelined(reg, &mut Sendrecv, piece, HOST_SLOTS)
    }
}

impl GpuWire for CudaAware {
    fn unavailable(&self, reg: &GpuRegister) -> Option<String> {
        unavailable(reg).or_else(|| reg.world.cuda_aware().err())
    }

    /// The message straight from the chunk into the partner's exchange
    /// buffer; host-clock timed: MPI returns when the GPU buffers have moved.
    fn exchange(&self, reg: &mut GpuRegister) -> Result<Seconds> {
        reg.sync_all()?;
        let (p, (send, recv)) = (reg.part(0), reg.ends(0));
        let t0 = std::time::Instant::now();
        // SAFETY: the parts lie in this GPU's allocation (the register
        // checked them), sent and received regions disjoint; the GPU is
        // idle; the MPI says it is CUDA-aware (`unavailable`, checked
        // before any exchange).
        unsafe { reg.world.sendrecv_raw(p.peer, send as *const u8, recv as *mut u8, p.len as usize) }?;
        Ok(t0.elapsed().as_secs_f64())
    }
}

/// MPI_Sendrecv of a piece from the send slot to the partner's receive slot.
struct Sendrecv;

impl Hop for Sendrecv {
    fn carry(&mut self, reg: &GpuRegister, piece: &Piece) -> Result<()> {
        let st = &reg.stages[0];
        // SAFETY: a send and a receive slot of at least `piece.len` bytes of
        // pinned host memory this register holds, distinct; the staging has
        // the piece in place and nothing else uses either slot until the
        // exchange returns.
        unsafe { reg.world.sendrecv_raw(piece.peers[0], st.send(piece.slot), st.recv(piece.slot), piece.len as usize) }
    }
}
