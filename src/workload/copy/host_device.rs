//! Host<->GPU copies by the copy engine: one direction from or into pinned,
//! write-combined or pageable host memory on each GPU alone, both directions
//! at once on one GPU (by the copy engines or by copy kernels), and every
//! GPU at once over the shared host link.
//! The host side of each GPU's copies is bound to that GPU's NUMA node
//! (`--numa`); every GPU at once binds each GPU's buffers to its node as
//! they are allocated and times from the thread as it was started.

use super::buffer::HostKind;
use super::{Bench, Engine, host_side};
use crate::error::Result;
use crate::record::copy::TestRecord;

/// `to_gpu` (H2D) or not (D2H), each GPU in turn.
pub fn one_way(b: &mut Bench, rec: &mut TestRecord, to_gpu: bool, host: HostKind) -> Result<()> {
    let sizes = b.sizes_within(rec, 1, 1)?;
    let Some(&max) = sizes.last() else { return Ok(()) };
    for g in 0..b.ngpus() {
        let bound = b.bind_host(g);
        let flow = if to_gpu {
            b.flow(g, "h2d", Engine::Ce, b.host(host, max)?, b.device(g, max)?)?
        } else {
            b.flow(g, "d2h", Engine::Ce, b.device(g, max)?, b.host(host, max)?)?
        };
        let mut flows = [flow];
        b.bandwidth(rec, &format!("GPU {g}"), &sizes, &mut flows)?;
        host_side(rec, g, bound.release(), flows.iter().flat_map(|f| f.buffers()));
    }
    Ok(())
}

/// H2D and D2H at once on two streams of one GPU, pinned memory, each GPU
/// in turn: by the copy engines, or by two copy kernels, each on half the
/// GPU's resident blocks (as nvbandwidth's bidirectional SM tests give each
/// direction half of one kernel's warps).
pub fn both_ways(b: &mut Bench, rec: &mut TestRecord, engine: Engine) -> Result<()> {
    let sizes = b.sizes_within(rec, 2, 2)?;
    let Some(&max) = sizes.last() else { return Ok(()) };
    let share = if engine == Engine::Sm { 2 } else { 1 };
    for g in 0..b.ngpus() {
        let bound = b.bind_host(g);
        let mut flows = [
            b.flow(g, "h2d", engine, b.host(HostKind::Pinned, max)?, b.device(g, max)?)?.sharing(share),
            b.flow(g, "d2h", engine, b.device(g, max)?, b.host(HostKind::Pinned, max)?)?.sharing(share),
        ];
        b.bandwidth(rec, &format!("GPU {g}"), &sizes, &mut flows)?;
        host_side(rec, g, bound.release(), flows.iter().flat_map(|f| f.buffers()));
    }
    Ok(())
}

/// Every GPU at once, H2D and/or D2H, pinned memory: one placement.
pub fn all_gpus(b: &mut Bench, rec: &mut TestRecord, h2d: bool, d2h: bool) -> Result<()> {
    let per_gpu = h2d as u64 + d2h as u64;
    let sizes = b.sizes_within(rec, per_gpu, per_gpu * b.ngpus() as u64)?;
    let Some(&max) = sizes.last() else { return Ok(()) };
    let mut flows = Vec::new();
    let mut placements = Vec::new();
    for g in 0..b.ngpus() {
        let bound = b.bind_host(g);
        if h2d {
            flows.push(b.flow(g, "h2d", Engine::Ce, b.host(HostKind::Pinned, max)?, b.device(g, max)?)?);
        }
        if d2h {
            flows.push(b.flow(g, "d2h", Engine::Ce, b.device(g, max)?, b.host(HostKind::Pinned, max)?)?);
        }
        placements.push(bound.release());
    }
    b.bandwidth(rec, &format!("all {} GPUs", b.ngpus()), &sizes, &mut flows)?;
    for (g, placement) in placements.into_iter().enumerate() {
        host_side(rec, g, placement, flows.iter().filter(|f| f.issuer == g).flat_map(|f| f.buffers()));
    }
    Ok(())
}
