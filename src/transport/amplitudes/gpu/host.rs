//! The host-staging wires between GPUs of one process: `host`, GPU →
//! pinned host → partner GPU in pieces through several slots so that the
//! device-to-host and host-to-device copies overlap; and `host-unpipelined`,
//! the same in pieces of up to 1 GiB one step after the other: device to
//! host, the host hand-over (a copy, as MPI would make), host to device,
//! what staging costs when nothing overlaps. Both are the shared staging of
//! staging.rs with the in-process hop.

use super::staging::{self, InProcess};
use super::{GpuRegister, GpuWire};
use crate::error::Result;
use crate::transport::amplitudes::{Seconds, WireImpl};

/// Pipelined host transfers move pieces of this size through this many
/// pinned slots per rank (the mpi and rdma-staged wires too).
pub const HOST_PIECE: u64 = 64 << 20;
pub const HOST_SLOTS: usize = 4;
/// The unpipelined path stages pieces of up to this size (the bound keeps
/// pinned memory reasonable).
const UNPIPELINED_PIECE: u64 = 1 << 30;

pub struct Pipelined;
pub struct Unpipelined;

/// Why host staging within a process cannot run for this register, if it cannot.
fn across_processes(reg: &GpuRegister) -> Option<String> {
    (reg.world.size() > 1).then(|| {
        "partners are in different processes: host staging between processes goes through MPI (the mpi wire)".into()
    })
}

impl WireImpl for Pipelined {
    fn name(&self) -> &'static str {
        "host"
    }
    fn how(&self) -> &'static str {
        "GPU→pinned host→GPU, pipelined in 64M pieces"
    }
    fn through_host(&self) -> bool {
        true
    }
    fn gpu(&self) -> Option<&dyn GpuWire> {
        Some(self)
    }
}

impl WireImpl for Unpipelined {
    fn name(&self) -> &'static str {
        "host-unpipelined"
    }
    fn how(&self) -> &'static str {
        "GPU→host, host copy, host→GPU, one after the other"
    }
    fn through_host(&self) -> bool {
        true
    }
    fn gpu(&self) -> Option<&dyn GpuWire> {
        Some(self)
    }
}

impl GpuWire for Pipelined {
    fn unavailable(&self, reg: &GpuRegister) -> Option<String> {
        across_processes(reg)
    }

    fn exchange(&self, reg: &mut GpuRegister) -> Result<Seconds> {
        let piece = reg.piece.unwrap_or(HOST_PIECE);
        staging::pipelined(reg, &mut InProcess, piece, HOST_SLOTS)
    }
}

impl GpuWire for Unpipelined {
    fn unavailable(&self, reg: &GpuRegister) -> Option<String> {
        across_processes(reg)
    }

    fn exchange(&self, reg: &mut GpuRegister) -> Result<Seconds> {
        let piece = reg.piece.unwrap_or(UNPIPELINED_PIECE);
        staging::unpipelined(reg, &mut InProcess, piece)
    }
}
