//! gdrcopy mode: the CPU copying to and from GPU memory mapped into user
//! space, timed as gdrcopy's copybw and copylat. As gdrcopy 2.6 does, the
//! mapping is gdrdrv's BAR mapping (through libgdrapi, loaded at run time)
//! where /dev/gdrdrv exists, and otherwise the GPU memory exported as a
//! dma-buf and mmap'ed (which CUDA drivers allow from 13.3); without
//! either the tests are listed as unavailable, with the fix. The mapping
//! itself is `gpu::gdrcopy`'s.

use super::buffer::{Buffer, HostKind};
use super::{Bench, FlowMeta, cpu_latency_row, host_side, row};
use crate::error::{Error, Result};
use crate::gpu::gdrcopy::{Backend, GPU_PAGE, Gdr};
use crate::record::copy::{Endpoint, LatencySeries, TestRecord};
use std::rc::Rc;
use std::time::Instant;

/// The largest copy timed: CPU reads through the BAR run at a few hundred
/// MB/s at best.
const MAX_BYTES: u64 = 16 << 20;
/// Bytes a sample (bandwidth) or a size (latency) moves at most, so that
/// slow reads stay short.
const BUDGET: u64 = 64 << 20;

const FIX_DRIVER: &str = "load the gdrdrv module (modprobe gdrdrv, from NVIDIA/gdrcopy)";
const FIX_DMA_BUF: &str = "load the gdrdrv module (modprobe gdrdrv, from NVIDIA/gdrcopy), or use a CUDA driver of 13.3 or later, which lets the CPU map GPU memory's dma-buf";

/// gdrdrv where /dev/gdrdrv exists, else dma-buf where GPU 0 exports it,
/// as gdrcopy 2.6 chooses; or None with `rec` marked unavailable, why and
/// the fix.
fn open_backend(rec: &mut TestRecord, b: &Bench) -> Option<Backend> {
    if std::path::Path::new("/dev/gdrdrv").exists() {
        return Gdr::open()
            .map(|g| Backend::Gdrdrv(Rc::new(g)))
            .map_err(|(reason, fix)| rec.unavailable(reason, fix))
            .ok();
    }
    if !crate::gpu::memory::exports_dma_buf(&b.gpus[0].ctx) {
        rec.unavailable("/dev/gdrdrv absent and GPU 0 exports no dma-buf (DMA_BUF_SUPPORTED is 0)", FIX_DRIVER);
        return None;
    }
    rec.description.push_str("; here through the GPU memory's dma-buf, mmap'ed (no /dev/gdrdrv)");
    Some(Backend::DmaBuf)
}

/// `bytes` (rounded up to gdrdrv's page) of GPU 0's memory mapped through
/// `backend`; where the dma-buf cannot be mapped, None with `rec` marked
/// unavailable and the driver's words.
fn map(backend: &Backend, rec: &mut TestRecord, b: &Bench, bytes: u64) -> Result<Option<Buffer>> {
    let len = bytes.next_multiple_of(GPU_PAGE);
    let dev = Buffer::device(&b.gpus[0], 0, len, GPU_PAGE)?;
    match (dev.mapped(backend), backend) {
        (Ok(m), _) => Ok(Some(m)),
        (Err(e), Backend::DmaBuf) => {
            rec.unavailable(e.message(), FIX_DMA_BUF);
            Ok(None)
        }
        (Err(e), Backend::Gdrdrv(_)) => Err(e),
    }
}

/// One direction through the mapping: which way, its seed.
#[derive(Clone, Copy)]
struct Way {
    to_gpu: bool,
    seed: u64,
}

impl Way {
    fn both(b: &Bench) -> [Way; 2] {
        let s = b.config().seed;
        [
            Way { to_gpu: true, seed: crate::pattern::mix(s ^ 0x6d72) },
            Way { to_gpu: false, seed: crate::pattern::mix(s ^ 0x6d73) },
        ]
    }

    fn name(self) -> &'static str {
        if self.to_gpu { "gdr_copy_to_mapping" } else { "gdr_copy_from_mapping" }
    }

    fn meta(self) -> FlowMeta {
        let (src, dst, direction) = if self.to_gpu {
            (Endpoint::Host, Endpoint::Gpu(0), "h2d")
        } else {
            (Endpoint::Gpu(0), Endpoint::Host, "d2h")
        };
        FlowMeta {
            src,
            dst,
            direction,
            issuer: 0,
            engine: "cpu",
            host_memory: Some(HostKind::Pageable.name()),
            factor: 1,
        }
    }

    /// Seeds the source and poisons the destination of `bytes` bytes.
    fn prepare(self, b: &Bench, m: &mut Buffer, host: &mut Buffer, bytes: u64) -> Result<()> {
        b.fill(m, bytes, self.seed, self.to_gpu)?;
        b.fill(host, bytes, self.seed, !self.to_gpu)?;
        b.sync_gpus()
    }

    fn verify(self, b: &Bench, m: &mut Buffer, host: &mut Buffer, bytes: u64) -> Result<u64> {
        // The CPU's last writes through the write-combined BAR mapping reach
        // the GPU before its check kernel reads them.
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        b.verify(if self.to_gpu { m } else { host }, bytes, self.seed, 0)
    }
}

/// Times `n` copies of `bytes` bytes between the mapped GPU memory `m` and
/// `host` by the host clock.
fn timed(way: Way, m: &Buffer, host: &mut Buffer, bytes: u64, n: u32) -> Result<f64> {
    let internal = || Error::Runtime("internal: a gdrcopy copy without its mapping or host memory".into());
    let map = m.cpu_mapping().ok_or_else(internal)?;
    // SAFETY: pageable memory that only this thread's copies through the
    // mapping touch while the slice lives (no GPU copy reaches it).
    let host = unsafe { host.host_slice(bytes) }.ok_or_else(internal)?;
    let t0 = Instant::now();
    for _ in 0..n {
        if way.to_gpu { map.copy_to(host)? } else { map.copy_from(host)? }
    }
    Ok(t0.elapsed().as_secs_f64())
}

/// copybw: the sweep's sizes up to 16 MiB, each way in turn, with at most
/// 64 MiB moved per sample (fewer than -n copies at the largest sizes).
pub fn bandwidth(b: &mut Bench, rec: &mut TestRecord) -> Result<()> {
    let Some(backend) = open_backend(rec, b) else { return Ok(()) };
    let (sizes, out): (Vec<u64>, Vec<u64>) = b.plan.sizes.iter().partition(|&&s| s <= MAX_BYTES);
    rec.sizes_left_out = out;
    let Some(&max) = sizes.last() else {
        rec.unavailable("every size of the sweep is above 16 MiB, the largest gdrcopy copy timed", "lower -b");
        return Ok(());
    };
    let bound = b.bind_host(0);
    let Some(mut m) = map(&backend, rec, b, max)? else { return Ok(()) };
    let mut host = Buffer::pageable(max)?;
    let cfg = b.config().clone();
    for way in Way::both(b) {
        for &size in &sizes {
            let n = cfg.iters.min((BUDGET / size).max(1) as u32);
            way.prepare(b, &mut m, &mut host, size)?;
            timed(way, &m, &mut host, size, cfg.warmup_iters.min(n))?;
            let samples =
                (0..cfg.samples).map(|_| Ok(vec![timed(way, &m, &mut host, size, n)?])).collect::<Result<Vec<_>>>()?;
            let wrong = way.verify(b, &mut m, &mut host, size)?;
            rec.rows.push(row(size, &format!("GPU 0 {}", way.name()), &[way.meta()], &samples, n, &[wrong]));
        }
    }
    host_side(rec, 0, bound.release(), [&host]);
    Ok(())
}

/// copylat: 1 B to 16 MiB, one copy at a time, each way in turn; at most
/// 64 MiB moved per size (at least 10 copies).
pub fn latency(b: &mut Bench, rec: &mut TestRecord) -> Result<()> {
    let Some(backend) = open_backend(rec, b) else { return Ok(()) };
    let cfg = b.config().clone();
    let max = cfg.lat_sizes.iter().copied().max().unwrap_or(1);
    let bound = b.bind_host(0);
    let Some(mut m) = map(&backend, rec, b, max)? else { return Ok(()) };
    let mut host = Buffer::pageable(max)?;
    for way in Way::both(b) {
        let mut rows = Vec::new();
        for &size in &cfg.lat_sizes {
            let n = (BUDGET / size).clamp(10, cfg.lat_iters.max(10) as u64);
            way.prepare(b, &mut m, &mut host, size)?;
            timed(way, &m, &mut host, size, cfg.warmup_iters.min(n as u32))?;
            let seconds = (0..n).map(|_| timed(way, &m, &mut host, size, 1)).collect::<Result<Vec<_>>>()?;
            rows.push(cpu_latency_row(size, &seconds, way.verify(b, &mut m, &mut host, size)?));
        }
        rec.latency.push(LatencySeries { label: way.name().into(), placement: "GPU 0".into(), rows });
    }
    host_side(rec, 0, bound.release(), [&host]);
    Ok(())
}
