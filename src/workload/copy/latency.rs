//! Latency of one copy at a time, 1 B to 16 MiB, as gdrcopy's copylat
//! prints it: cuMemcpy H2D and D2H from pinned memory, a peer copy, and the
//! copy kernel through mapped host memory. On the first GPU (and the second
//! for the peer copy).

use super::buffer::HostKind;
use super::{Bench, Engine, host_side};
use crate::error::Result;
use crate::record::copy::TestRecord;

fn largest(b: &Bench) -> u64 {
    b.config().lat_sizes.iter().copied().max().unwrap_or(1)
}

/// cuMemcpyHtoDAsync (`to_gpu`) or cuMemcpyDtoHAsync, pinned memory.
pub fn host(b: &mut Bench, rec: &mut TestRecord, to_gpu: bool) -> Result<()> {
    let label = if to_gpu { "cuMemcpyHtoDAsync" } else { "cuMemcpyDtoHAsync" };
    pinned_and_gpu0(b, rec, Engine::Ce, to_gpu, label)
}

/// A copy by GPU 0's copy engine into GPU 1's memory.
pub fn peer(b: &mut Bench, rec: &mut TestRecord) -> Result<()> {
    if !b.has_peer(rec) {
        return Ok(());
    }
    if let Some(why) = b.blocked(0, 1) {
        rec.unavailable(why.to_string(), "use GPUs joined by NVLink or a PCIe switch that allows peer access");
        return Ok(());
    }
    let max = largest(b);
    let mut flow = b.flow(0, "d2d", Engine::Ce, b.device(0, max)?, b.device(1, max)?)?;
    rec.latency.push(b.latency("cuMemcpyAsync peer", "GPU 0 -> GPU 1", &mut flow)?);
    Ok(())
}

/// The copy kernel on GPU 0 reading (`to_gpu`) or writing mapped pinned memory.
pub fn mapped(b: &mut Bench, rec: &mut TestRecord, to_gpu: bool) -> Result<()> {
    let label = if to_gpu { "kernel reads host" } else { "kernel writes host" };
    pinned_and_gpu0(b, rec, Engine::Sm, to_gpu, label)
}

/// One latency table of copies by `engine` between pinned host memory and
/// GPU 0, towards the GPU when `to_gpu`.
fn pinned_and_gpu0(b: &mut Bench, rec: &mut TestRecord, engine: Engine, to_gpu: bool, label: &str) -> Result<()> {
    let max = largest(b);
    let bound = b.bind_host(0);
    let (host, gpu) = (b.host(HostKind::Pinned, max)?, b.device(0, max)?);
    let mut flow = if to_gpu { b.flow(0, "h2d", engine, host, gpu)? } else { b.flow(0, "d2h", engine, gpu, host)? };
    rec.latency.push(b.latency(label, "GPU 0", &mut flow)?);
    host_side(rec, 0, bound.release(), flow.buffers());
    Ok(())
}
