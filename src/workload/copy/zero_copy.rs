//! Zero-copy: the copy kernel reading or writing mapped pinned host memory
//! directly over PCIe, the path a CPU-visible buffer takes when gdrdrv is
//! not there to map GPU memory for the CPU (both ways at once:
//! host_device::both_ways).

use super::buffer::HostKind;
use super::{Bench, Engine, host_side};
use crate::error::Result;
use crate::record::copy::TestRecord;

/// Each GPU in turn: reading host memory into the GPU (`to_gpu`) or writing it.
pub fn run(b: &mut Bench, rec: &mut TestRecord, to_gpu: bool) -> Result<()> {
    let sizes = b.sizes_within(rec, 1, 1)?;
    let Some(&max) = sizes.last() else { return Ok(()) };
    for g in 0..b.ngpus() {
        let bound = b.bind_host(g);
        let flow = if to_gpu {
            b.flow(g, "h2d", Engine::Sm, b.host(HostKind::Pinned, max)?, b.device(g, max)?)?
        } else {
            b.flow(g, "d2h", Engine::Sm, b.device(g, max)?, b.host(HostKind::Pinned, max)?)?
        };
        let mut flows = [flow];
        b.bandwidth(rec, &format!("GPU {g}"), &sizes, &mut flows)?;
        host_side(rec, g, bound.release(), flows.iter().flat_map(|f| f.buffers()));
    }
    Ok(())
}
