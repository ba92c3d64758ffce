//! The `quest` wire: QuEST v4's own exchange between the GPUs of two
//! processes (comm_routines.cpp, exchangeGpuAmpsToGpuBuffers and
//! exchangeArrays). Without a CUDA-aware MPI, one synchronous copy of the
//! whole span to a pageable host buffer (QuEST's `cpuAmps`), every message
//! of 2^28 amplitudes posted at once as MPI_Isend and MPI_Irecv into a
//! second pageable buffer (`cpuCommBuffer`) and one wait for all, then one
//! synchronous copy into the GPU; with a CUDA-aware MPI, the same messages
//! of the GPU buffers themselves. Each step waits for the last: nothing
//! overlaps, as in QuEST.

use super::mpi::unavailable;
use super::{GpuRegister, GpuWire};
use crate::error::{Error, Result};
use crate::gpu::{self, cuda_err};
use crate::transport::amplitudes::{Seconds, Wire, WireImpl};
use std::time::Instant;

/// QuEST's largest message: 2^28 amplitudes (comm_routines.cpp, MAX_MESSAGE_LENGTH).
const MESSAGE_AMPLITUDES: usize = 1 << 28;

pub struct Quest;

impl WireImpl for Quest {
    fn name(&self) -> &'static str {
        "quest"
    }
    fn how(&self) -> &'static str {
        "QuEST v4: GPU→pageable host, every 2^28-amplitude MPI_Isend/Irecv at once, MPI_Waitall, host→GPU (the GPU buffers where MPI is CUDA-aware)"
    }
    // Without a CUDA-aware MPI, as on every machine measured here.
    fn through_host(&self) -> bool {
        true
    }
    fn gpu(&self) -> Option<&dyn GpuWire> {
        Some(self)
    }
}

/// QuEST's two host buffers of a rank: what it sends, what it receives.
struct Buffers {
    send: Vec<u8>,
    recv: Vec<u8>,
}

impl GpuWire for Quest {
    fn unavailable(&self, reg: &GpuRegister) -> Option<String> {
        unavailable(reg)
    }

    fn exchange(&self, reg: &mut GpuRegister) -> Result<Seconds> {
        let (p, (send, recv)) = (reg.part(0), reg.ends(0));
        let (len, unit) = (p.len as usize, reg.layout.precision.bytes() as usize);
        let message = MESSAGE_AMPLITUDES * unit;
        reg.sync_all()?;
        if reg.world.cuda_aware().is_ok() {
            let t0 = Instant::now();
            // SAFETY: the parts lie in this GPU's allocation, sent and
            // received regions disjoint; the GPU is idle; the MPI takes GPU
            // memory (asked just above).
            unsafe { reg.world.exchange_messages_raw(p.peer, send as *const u8, recv as *mut u8, len, message, unit) }?;
            return Ok(t0.elapsed().as_secs_f64());
        }
        // QuEST allocates its host buffers with the register, as large as a
        // chunk: made once, outside the timing, and written through once so
        // that their pages are mapped before the first timed exchange (a
        // zeroed allocation maps them on first touch, which made an H100's
        // first exchange of 26 qubits four times as long as the next).
        let chunk = reg.layout.chunk_bytes() as usize;
        let ctx = reg.ranks[0].gpu.ctx.clone();
        let slot = reg.kept.slot::<Buffers>(Wire::Quest);
        if slot.as_ref().is_none_or(|b| b.send.len() < chunk) {
            let mapped = || vec![0xA5u8; chunk];
            *slot = Some(Buffers { send: mapped(), recv: mapped() });
        }
        let b = slot.as_mut().ok_or_else(|| Error::Runtime("internal: no host buffers".into()))?;
        // Each host buffer holds a chunk, at least `len`.
        let (host_send, host_recv) = (&mut b.send[..len], &mut b.recv[..len]);
        ctx.bind_to_thread().map_err(cuda_err("binding a context"))?;
        let t0 = Instant::now();
        // `send..send+len` lies in this GPU's allocation; the copy returns when done.
        gpu::copy::from_device(host_send, send).map_err(cuda_err("copying the amplitudes to host memory"))?;
        // SAFETY: two host buffers of at least `len` bytes, distinct, held
        // until the exchange returns.
        unsafe {
            reg.world.exchange_messages_raw(p.peer, host_send.as_ptr(), host_recv.as_mut_ptr(), len, message, unit)
        }?;
        // As the copy out, the other way.
        gpu::copy::to_device(recv, host_recv).map_err(cuda_err("copying the amplitudes into the GPU"))?;
        Ok(t0.elapsed().as_secs_f64())
    }
}
