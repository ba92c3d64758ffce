//! The `cpu` wire: memcpy between the buffers of host-memory ranks that
//! are threads of one process, MPI_Sendrecv between processes (one rank
//! each).

use super::host_memory::{Cut, HostBuffers, HostMove, HostWire, write};
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
        let mut cuts = Vec::new();
        let mut regions = Vec::new();
        for (g, m) in guards.iter_mut().zip(moves) {
            let (cut, region) = Cut::new(bytemuck::cast_slice_mut::<u64, u8>(g), m.to, m.len)?;
            cuts.push(cut);
            regions.push(region);
        }
        if bufs.world.size() > 1 {
            // One rank per process (HostRegister::new): the rank is the process.
            let (m, region) =
                (moves[0], regions.into_iter().next().ok_or_else(|| Error::Runtime("internal: no rank".into()))?);
            let send = cuts[0].sent(m.from, m.len)?;
            let t0 = Instant::now();
            bufs.world.sendrecv(m.peer, send, region)?;
            return Ok(t0.elapsed().as_secs_f64());
        }
        // What each rank's peer sends it.
        let sent: Vec<&[u8]> = moves
            .iter()
            .map(|m| {
                let p = moves[m.peer - bufs.first_rank];
                cuts[p.rank - bufs.first_rank].sent(p.from, p.len)
            })
            .collect::<Result<_>>()?;
        let t0 = Instant::now();
        crate::threads::each(regions, |i, region| region.copy_from_slice(sent[i]));
        Ok(t0.elapsed().as_secs_f64())
    }
}
