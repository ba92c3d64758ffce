//! The GPU side of the measurement besides the kernels (`gpu::copy_kernels`):
//! the gate that holds streams until every timed copy is queued, peer
//! access between GPUs, and busy-waiting on an event.

use super::buffer::{Buffer, HostKind};
use crate::error::{Error, Result};
use crate::gpu::{Gpu, Pinned, cuda_err};
use cudarc::driver::CudaEvent;
use std::time::{Duration, Instant};

/// Two u32 words of mapped pinned memory: [0] the host opens it, [1] the
/// hold kernel says it gave up waiting. The GPU reads and writes them too,
/// so the host's accesses are volatile.
pub(super) struct Gate {
    flag: Buffer,
    /// The flag's address on each GPU.
    pub(super) addr: Vec<u64>,
}

impl Gate {
    pub(super) fn new(gpus: &[Gpu]) -> Result<Gate> {
        let flag = Buffer::pinned(&gpus[0].ctx, HostKind::Pinned, 8)?;
        if flag.as_pinned().is_none_or(|p| p.size() < 8) {
            return Err(Error::Runtime("internal: the gate is not two words of pinned memory".into()));
        }
        let addr = gpus.iter().map(|g| flag.device_addr(g)).collect::<Result<Vec<_>>>()?;
        let gate = Gate { flag, addr };
        gate.arm();
        Ok(gate)
    }

    /// The flag's memory (two words, checked in `new`).
    fn words(&self) -> Option<&Pinned> {
        self.flag.as_pinned()
    }

    pub(super) fn arm(&self) {
        if let Some(w) = self.words() {
            w.store_u32(0, 0);
            w.store_u32(1, 0);
        }
    }

    pub(super) fn release(&self) {
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        if let Some(w) = self.words() {
            w.store_u32(0, 1);
        }
    }

    /// Read after the held streams completed.
    pub(super) fn timed_out(&self) -> bool {
        self.words().and_then(|w| w.load_u32(1)).is_some_and(|v| v != 0)
    }
}

/// Busy-waits for `ev` (a sleep would add to the latency), for 30 s at most.
pub(super) fn spin(ev: &CudaEvent, since: Instant) -> Result<()> {
    while !ev.try_is_complete().map_err(cuda_err("waiting for a copy"))? {
        if since.elapsed() > Duration::from_secs(30) {
            return Err(Error::Runtime("timeout: one copy did not finish within 30 s".into()));
        }
        std::hint::spin_loop();
    }
    Ok(())
}

/// Enables peer access both ways between every pair of GPUs that can have
/// it; returns, for each ordered pair, why GPU i cannot reach GPU j.
pub(super) fn peer_access(gpus: &[Gpu]) -> Vec<Vec<Option<String>>> {
    let mut blocked = vec![vec![None; gpus.len()]; gpus.len()];
    for (i, a) in gpus.iter().enumerate() {
        for (j, b) in gpus.iter().enumerate() {
            if i != j {
                blocked[i][j] = crate::gpu::enable_peer(a, b).err();
            }
        }
    }
    blocked
}
