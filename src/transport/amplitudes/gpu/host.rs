//! The host-staging wires between GPUs of one process: `host`, GPU →
//! pinned host → partner GPU in pieces through several slots so that the
//! device-to-host and host-to-device copies overlap; and `host-unpipelined`,
//! QuEST's path without GPU-aware MPI: device to host, the host hand-over
//! (a copy, as MPI would make), host to device, one after the other.

use super::{Flow, GpuRegister, GpuWire, copy_d2h, copy_h2d, record};
use crate::error::Result;
use crate::fault::Fault;
use crate::gpu::cuda_err;
use crate::statevec::layout::Pattern;
use crate::transport::amplitudes::{Memory, Seconds, WireImpl};
use std::time::Instant;

/// Pipelined host transfers move pieces of this size through this many
/// pinned slots per direction.
const HOST_PIECE: u64 = 64 << 20;
const HOST_SLOTS: usize = 4;
/// The unpipelined path stages whole pieces of up to this size (QuEST
/// copies the whole chunk; the bound keeps pinned memory reasonable).
const UNPIPELINED_PIECE: u64 = 1 << 30;

pub struct Pipelined;
pub struct Unpipelined;

/// Why host staging cannot run for this register, if it cannot.
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
    fn memory(&self) -> Memory {
        Memory::Gpu
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
        "GPU→host, host copy, host→GPU, one after the other (QuEST)"
    }
    fn memory(&self) -> Memory {
        Memory::Gpu
    }
    fn gpu(&self) -> Option<&dyn GpuWire> {
        Some(self)
    }
}

impl GpuWire for Pipelined {
    fn unavailable(&self, reg: &GpuRegister) -> Option<String> {
        across_processes(reg)
    }

    /// Each flow's slots are reused once the partner has copied them out.
    fn exchange(&self, reg: &mut GpuRegister, pattern: Pattern, t: u32, fault: Option<Fault>) -> Result<Seconds> {
        let pairs = reg.local_pairs(t, fault)?;
        let piece = reg.piece.unwrap_or(HOST_PIECE);
        reg.ensure_flows(HOST_SLOTS, piece)?;
        let msgs: Vec<(u64, u64)> = (0..reg.ranks.len()).map(|i| reg.message(i, pattern, t, fault)).collect();
        reg.span(|me| {
            // Fork the copy streams from each main stream.
            for r in &me.ranks {
                let fork = record(&r.gpu.stream, false)?;
                r.d2h.wait(&fork).map_err(cuda_err("ordering streams"))?;
                r.h2d.wait(&fork).map_err(cuda_err("ordering streams"))?;
            }
            let pieces = msgs[0].1.div_ceil(piece);
            for k in 0..pieces {
                for &(i, j) in &pairs {
                    let (src, dst) = (&me.ranks[i], &me.ranks[j]);
                    let flow = &me.flows[i];
                    let slot = k as usize % HOST_SLOTS;
                    let off = k * piece;
                    let len = piece.min(msgs[i].1 - off);
                    let host = flow.slots[slot].addr();
                    src.d2h.wait(&flow.freed[slot][j]).map_err(cuda_err("ordering streams"))?;
                    copy_d2h(host, src.state.ptr() + msgs[i].0 + off, len, &src.d2h)?;
                    flow.filled[slot].record(&src.d2h).map_err(cuda_err("recording an event"))?;
                    dst.h2d.wait(&flow.filled[slot]).map_err(cuda_err("ordering streams"))?;
                    copy_h2d(dst.xbuf.ptr() + off, host, len, &dst.h2d)?;
                    flow.freed[slot][j].record(&dst.h2d).map_err(cuda_err("recording an event"))?;
                }
            }
            // Join them back.
            for r in &me.ranks {
                r.gpu.stream.wait(&record(&r.d2h, false)?).map_err(cuda_err("ordering streams"))?;
                r.gpu.stream.wait(&record(&r.h2d, false)?).map_err(cuda_err("ordering streams"))?;
            }
            Ok(())
        })
    }
}

impl GpuWire for Unpipelined {
    fn unavailable(&self, reg: &GpuRegister) -> Option<String> {
        across_processes(reg)
    }

    /// Host-clock timed, since the host copy is part of it.
    fn exchange(&self, reg: &mut GpuRegister, pattern: Pattern, t: u32, fault: Option<Fault>) -> Result<Seconds> {
        let pairs = reg.local_pairs(t, fault)?;
        let msgs: Vec<(u64, u64)> = (0..reg.ranks.len()).map(|i| reg.message(i, pattern, t, fault)).collect();
        let piece = reg.piece.unwrap_or(UNPIPELINED_PIECE).min(msgs[0].1);
        reg.ensure_flows(2, piece)?;
        reg.sync_all()?;
        let t0 = Instant::now();
        let pieces = msgs[0].1.div_ceil(piece);
        for k in 0..pieces {
            let off = k * piece;
            let len = piece.min(msgs[0].1 - off) as usize;
            for (i, r) in reg.ranks.iter().enumerate() {
                copy_d2h(reg.flows[i].slots[0].addr(), r.state.ptr() + msgs[i].0 + off, len as u64, &r.d2h)?;
            }
            reg.sync_streams(|r| &r.d2h)?;
            host_hop(&mut reg.flows, &pairs, len);
            for &(_, j) in &pairs {
                let dst = &reg.ranks[j];
                copy_h2d(dst.xbuf.ptr() + off, reg.flows[j].slots[1].addr(), len as u64, &dst.h2d)?;
            }
            reg.sync_streams(|r| &r.h2d)?;
        }
        Ok(reg.world.max_f64(&[t0.elapsed().as_secs_f64()])[0])
    }
}

/// The host hand-over: `len` bytes of slot 0 of each sender's flow into
/// slot 1 of its receiver's, a thread per pair.
fn host_hop(flows: &mut [Flow], pairs: &[(usize, usize)], len: usize) {
    let (sends, recvs): (Vec<&[u8]>, Vec<&mut [u8]>) = flows
        .iter_mut()
        .map(|f| {
            let (a, b) = f.slots.split_at_mut(1);
            (a[0].as_slice(), b[0].as_mut_slice())
        })
        .unzip();
    let mut recvs: Vec<Option<&mut [u8]>> = recvs.into_iter().map(Some).collect();
    let hops: Vec<(&[u8], &mut [u8])> =
        pairs.iter().filter_map(|&(i, j)| recvs[j].take().map(|dst| (&sends[i][..len], dst))).collect();
    crate::threads::each(hops, |_, (src, dst)| dst[..len].copy_from_slice(src));
}
