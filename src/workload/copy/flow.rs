//! A flow: one stream of copies from a source buffer to a destination on a
//! stream of the GPU that issues them, how one copy is issued, and how a
//! flow's sample times become a row of GB/s.

use super::Bench;
use super::buffer::{Buffer, HostKind, Place};
use super::registry::Engine;
use crate::error::{Error, Result};
use crate::gpu::{copy, cuda_err};
use crate::record::copy::{DirResult, Endpoint, FlowResult, Row};
use crate::stats::Summary;
use cudarc::driver::{CudaEvent, CudaStream};
use std::sync::Arc;

/// How one copy of a flow is issued.
#[derive(Clone, Copy)]
enum Op {
    HtoD { dst: u64, src: *const u8 },
    DtoH { dst: *mut u8, src: u64 },
    DtoD { dst: u64, src: u64 },
    Peer { dst: u64, src: u64 },
    Kernel { dst: u64, src: u64 },
}

/// One stream of copies from `src` to `dst`, issued on a stream of GPU `issuer`.
pub struct Flow {
    pub(super) issuer: usize,
    pub(super) direction: &'static str,
    pub(super) engine: Engine,
    /// Bytes a copy counts for, per byte copied: 2 for read + write figures.
    pub(super) factor: u64,
    /// Copy kernels of this many flows share the issuing GPU at once.
    pub(super) share: u32,
    pub(super) src: Buffer,
    pub(super) dst: Buffer,
    op: Op,
    pub(super) stream: Arc<CudaStream>,
    pub(super) start: CudaEvent,
    pub(super) end: CudaEvent,
    pub(super) seed: u64,
}

impl Flow {
    pub(super) fn pageable(&self) -> bool {
        [&self.src, &self.dst].iter().any(|b| b.place() == Place::Host(HostKind::Pageable))
    }

    fn endpoint(b: &Buffer) -> Endpoint {
        match b.place() {
            Place::Device(g) => Endpoint::Gpu(g),
            Place::Host(_) => Endpoint::Host,
        }
    }

    pub(super) fn meta(&self) -> FlowMeta {
        let host = [&self.src, &self.dst].iter().find_map(|b| match b.place() {
            Place::Host(k) => Some(k.name()),
            Place::Device(_) => None,
        });
        FlowMeta {
            src: Flow::endpoint(&self.src),
            dst: Flow::endpoint(&self.dst),
            direction: self.direction,
            issuer: self.issuer,
            engine: self.engine.name(),
            host_memory: host,
            factor: self.factor,
        }
    }

    /// Its two buffers, for those that are host memory.
    pub(super) fn buffers(&self) -> [&Buffer; 2] {
        [&self.src, &self.dst]
    }

    /// Its copy kernel keeps to 1/`flows` of the GPU, for `flows` copy
    /// kernels side by side on one GPU.
    pub(super) fn sharing(mut self, flows: u32) -> Flow {
        self.share = flows;
        self
    }

    /// Counts each copy as read + write bytes.
    pub(super) fn read_write(mut self) -> Flow {
        self.factor = 2;
        self
    }
}

/// What a row says about a flow besides its times.
#[derive(Debug, Clone)]
pub(super) struct FlowMeta {
    pub(super) src: Endpoint,
    pub(super) dst: Endpoint,
    pub(super) direction: &'static str,
    pub(super) issuer: usize,
    pub(super) engine: &'static str,
    pub(super) host_memory: Option<&'static str>,
    pub(super) factor: u64,
}

/// A row from per-sample times: `samples[s][i]` is flow i's own time of
/// `iters` copies in sample s. Each flow's bytes are divided by the time of
/// the whole sample (its slowest flow), so that concurrent flows are
/// measured over the same interval.
pub(super) fn row(
    size: u64,
    placement: &str,
    metas: &[FlowMeta],
    samples: &[Vec<f64>],
    iters: u32,
    wrong: &[u64],
) -> Row {
    let n = iters as f64;
    let window: Vec<f64> = samples.iter().map(|t| t.iter().copied().fold(0.0, f64::max)).collect();
    let gbps = |i: usize, s: usize| {
        if window[s] > 0.0 { n * (size * metas[i].factor) as f64 / window[s] / 1e9 } else { 0.0 }
    };
    let per_sample = |pick: &dyn Fn(usize) -> bool| -> Vec<f64> {
        (0..samples.len()).map(|s| (0..metas.len()).filter(|&i| pick(i)).map(|i| gbps(i, s)).sum()).collect()
    };
    let flows = metas
        .iter()
        .enumerate()
        .map(|(i, m)| FlowResult {
            src: m.src,
            dst: m.dst,
            direction: m.direction.into(),
            issued_by: m.issuer,
            engine: m.engine.into(),
            host_memory: m.host_memory.map(String::from),
            bytes_counted: size * m.factor,
            gbps: Summary::of(&per_sample(&|k| k == i)),
            own_time_us: Summary::of(&samples.iter().map(|t| t[i] / n * 1e6).collect::<Vec<_>>()),
            wrong_words: wrong.get(i).copied().unwrap_or(0),
        })
        .collect();
    let mut names: Vec<&'static str> = Vec::new();
    for m in metas {
        if !names.contains(&m.direction) {
            names.push(m.direction);
        }
    }
    let directions = names
        .into_iter()
        .map(|d| DirResult { direction: d.into(), gbps: Summary::of(&per_sample(&|i| metas[i].direction == d)) })
        .collect();
    Row {
        size,
        placement: placement.to_string(),
        flows,
        directions,
        total_gbps: Summary::of(&per_sample(&|_| true)),
        time_us: Summary::of(&window.iter().map(|w| w / n * 1e6).collect::<Vec<_>>()),
        wrong_words: wrong.iter().sum(),
    }
}

impl Bench {
    /// A flow of copies from `src` to `dst` issued on a new stream of GPU `issuer`.
    pub(super) fn flow(
        &mut self,
        issuer: usize,
        direction: &'static str,
        engine: Engine,
        src: Buffer,
        dst: Buffer,
    ) -> Result<Flow> {
        let gpu = &self.gpus[issuer];
        let host = |b: &Buffer| {
            b.host_ptr().ok_or_else(|| Error::Runtime("internal: a host copy was given device memory".into()))
        };
        let op = match (engine, src.place(), dst.place()) {
            (Engine::Sm, _, _) => Op::Kernel { dst: dst.device_addr(gpu)?, src: src.device_addr(gpu)? },
            (Engine::Ce, Place::Host(_), Place::Device(_)) => {
                Op::HtoD { dst: dst.device_addr(gpu)?, src: host(&src)?.cast_const() }
            }
            (Engine::Ce, Place::Device(_), Place::Host(_)) => Op::DtoH { dst: host(&dst)?, src: src.device_addr(gpu)? },
            (Engine::Ce, Place::Device(a), Place::Device(b)) if a == b => {
                Op::DtoD { dst: dst.device_addr(gpu)?, src: src.device_addr(gpu)? }
            }
            (Engine::Ce, Place::Device(_), Place::Device(_)) => {
                Op::Peer { dst: dst.device_addr(gpu)?, src: src.device_addr(gpu)? }
            }
            (Engine::Ce, Place::Host(_), Place::Host(_)) => {
                return Err(Error::Runtime("internal: a host-to-host copy flow".into()));
            }
        };
        self.flows_made += 1;
        let stream = gpu.ctx.new_stream().map_err(cuda_err(format!("creating a stream on GPU {issuer}")))?;
        Ok(Flow {
            issuer,
            direction,
            engine,
            factor: 1,
            share: 1,
            src,
            dst,
            op,
            stream,
            start: gpu.timing_event()?,
            end: gpu.timing_event()?,
            seed: crate::pattern::mix(self.plan.config.seed ^ self.flows_made),
        })
    }

    /// Queues one copy of `bytes` bytes of a flow.
    pub(super) fn enqueue(&self, f: &Flow, bytes: u64) -> Result<()> {
        let gpu = &self.gpus[f.issuer];
        let what = || format!("copying {bytes} bytes on GPU {}", gpu.ordinal);
        gpu.ctx.bind_to_thread().map_err(cuda_err(what()))?;
        let (s, n) = (&f.stream, bytes as usize);
        // Both ends address at least `bytes` bytes of the flow's own live
        // buffers (measure checks sizes against them), and the stream
        // belongs to the bound context.
        let r = match f.op {
            // SAFETY: the host end is the flow's own buffer, which lives as
            // long as the flow and which nothing else touches while its
            // copies are queued (fills and checks wait for them).
            Op::HtoD { dst, src } => unsafe { copy::host_to_device(dst, src, n, s) },
            // SAFETY: as above.
            Op::DtoH { dst, src } => unsafe { copy::device_to_host(dst, src, n, s) },
            Op::DtoD { dst, src } => copy::within_device(dst, src, n, s),
            Op::Peer { dst, src } => copy::between_devices(dst, src, n, s),
            Op::Kernel { dst, src } => {
                return self.kernels[f.issuer].copy(gpu, &f.stream, dst, src, bytes, f.share);
            }
        };
        r.map_err(cuda_err(what()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(direction: &'static str, factor: u64) -> FlowMeta {
        FlowMeta {
            src: Endpoint::Host,
            dst: Endpoint::Gpu(0),
            direction,
            issuer: 0,
            engine: "ce",
            host_memory: Some("pinned"),
            factor,
        }
    }

    #[test]
    fn one_flow_is_bytes_over_time() {
        // 10 copies of 1 GB in 0.2 s, 0.25 s, 0.2 s: median 50 GB/s.
        let r = row(1_000_000_000, "GPU 0", &[meta("h2d", 1)], &[vec![0.2], vec![0.25], vec![0.2]], 10, &[0]);
        assert!((r.total_gbps.median - 50.0).abs() < 1e-9);
        assert!((r.total_gbps.min - 40.0).abs() < 1e-9);
        assert!((r.time_us.median - 20_000.0).abs() < 1e-6);
        assert_eq!(r.directions.len(), 1);
        assert_eq!(r.flows[0].bytes_counted, 1_000_000_000);
    }

    #[test]
    fn concurrent_flows_share_the_slowest_time() {
        // h2d took 0.1 s, d2h 0.2 s: both over 0.2 s.
        let r = row(1_000_000_000, "GPU 0", &[meta("h2d", 1), meta("d2h", 1)], &[vec![0.1, 0.2]], 4, &[0, 2]);
        assert_eq!(r.directions.iter().map(|d| d.gbps.median).collect::<Vec<_>>(), vec![20.0, 20.0]);
        assert_eq!(r.total_gbps.median, 40.0);
        assert!((r.flows[0].own_time_us.median - 25_000.0).abs() < 1e-6);
        assert_eq!(r.wrong_words, 2);
    }

    #[test]
    fn read_write_figures_count_twice_the_size() {
        let r = row(1 << 30, "GPU 0", &[meta("r+w", 2)], &[vec![1.0]], 1, &[0]);
        assert!((r.total_gbps.median - 2.0 * (1u64 << 30) as f64 / 1e9).abs() < 1e-9);
    }
}
