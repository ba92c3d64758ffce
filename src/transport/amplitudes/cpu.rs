//! The `cpu` wire: memcpy between the buffers of host-memory ranks that
//! are threads of one process, MPI_Sendrecv between processes (one rank
//! each).

use super::host_memory::{HostBuffers, HostMove, HostWire, write};
use super::{Seconds, WireImpl};
use crate::error::{Error, Result};
use crate::statevec::layout::Layout;
use crate::world::World;
use std::time::Instant;

pub struct Cpu;

impl WireImpl for Cpu {
    fn name(&self) -> &'static str {
        "cpu"
    }
    fn how(&self) -> &'static str {
        "host-memory ranks: memcpy between threads, MPI_Sendrecv between processes"
    }
    fn host(&self) -> Option<&dyn HostWire> {
        Some(self)
    }
}

impl HostWire for Cpu {
    fn unavailable(&self, _: &Layout, _: &dyn World, _: usize) -> Option<String> {
        None
    }

    fn exchange(&self, bufs: &mut HostBuffers, moves: &[HostMove]) -> Result<Seconds> {
        let mut guards: Vec<_> = bufs.mem.iter().map(write).collect();
        let (chunks, xbufs): (Vec<&[u8]>, Vec<&mut [u8]>) = guards
            .iter_mut()
            .map(|g| {
                let (c, x) = bytemuck::cast_slice_mut::<u64, u8>(g).split_at_mut(bufs.chunk);
                (&*c, x)
            })
            .unzip();
        if bufs.world.size() > 1 {
            // One rank per process (HostRegister::new): the rank is the process.
            let (m, x) =
                (moves[0], xbufs.into_iter().next().ok_or_else(|| Error::Runtime("internal: no rank".into()))?);
            let t0 = Instant::now();
            bufs.world.sendrecv(m.peer, &chunks[0][m.from..m.from + m.len], &mut x[..m.len])?;
            return Ok(t0.elapsed().as_secs_f64());
        }
        let times = crate::threads::each(xbufs, |i, x| {
            // What this rank's peer sends it.
            let p = moves[i].peer - bufs.first_rank;
            let m = moves[p];
            let t0 = Instant::now();
            x[..m.len].copy_from_slice(&chunks[p][m.from..m.from + m.len]);
            t0.elapsed().as_secs_f64()
        });
        Ok(times.into_iter().fold(0.0, f64::max))
    }
}
