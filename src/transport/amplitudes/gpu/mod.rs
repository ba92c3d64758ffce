//! The register on GPUs: each rank is one GPU holding its chunk and an
//! exchange buffer, gates run as kernels of kernels/statevec.cu, and the
//! wires of this folder move amplitudes between partners (NCCL, CUDA peer
//! access by SM kernel or copy engine, pinned host memory within a process,
//! MPI and RDMA between processes). Every operation is timed with events on
//! each GPU's stream (or on the host clock where the host takes part) and
//! ends with the GPUs idle, so the times of exchange and update are
//! separate and each is the slowest GPU's.

pub mod staging;
// The wires of this folder, as the list in ../mod.rs names them.
super::gpu_wire_modules!();

use super::{Kept, Local, Part, Register, Seconds, Wire};
use crate::error::{Error, Result};
use crate::gpu::kernels::{grid, load, pair_groups, streaming};
use crate::gpu::{self, DeviceBuffer, Gpu, cuda_err};
use crate::record::RankInfo;
use crate::statevec::layout::{Layout, Precision, SLOW_PARTNER_BYTES};
use crate::statevec::state::{ProductState, tolerance};
use crate::transport::nccl::{Communicators, Move};
use crate::world::World;
use cudarc::driver::{CudaContext, CudaEvent, CudaFunction, CudaStream, LaunchArgs, LaunchConfig, PushKernelArg};
use num_complex::Complex64;
use std::collections::HashMap;
use std::sync::Arc;

/// A wire's way of moving GPU registers' amplitudes.
pub trait GpuWire: Sync {
    /// Why it cannot run for this register, if it cannot.
    fn unavailable(&self, reg: &GpuRegister) -> Option<String>;
    /// Every rank's part of the exchange the register holds ([`GpuRegister::part`]).
    fn exchange(&self, reg: &mut GpuRegister) -> Result<Seconds>;
}

/// The precision-suffixed kernels of kernels/statevec.cu this register
/// launches (`sv_<kind>_single`, `sv_<kind>_double`).
const KINDS: [&str; 12] =
    ["init", "check", "h", "h_warp", "h_4k", "combine", "u", "phase", "pairs", "pack", "unpack", "mix"];

struct GpuRank {
    gpu: Gpu,
    /// Streams for device-to-host and host-to-device pieces.
    d2h: Arc<CudaStream>,
    h2d: Arc<CudaStream>,
    /// The chunk, then the exchange buffer, in one allocation (which an
    /// RDMA adapter registers whole); `state` and `xbuf` point into it.
    mem: DeviceBuffer,
    state: u64,
    xbuf: u64,
    wrong: DeviceBuffer,
    kernels: HashMap<String, CudaFunction>,
}

pub struct GpuRegister<'w> {
    // Dropped first: what wires keep covers the ranks' memory and the
    // stages, and the communicators need the GPUs' contexts alive.
    pub(super) kept: Kept,
    comms: Option<Communicators>,
    pub(super) layout: Layout,
    pub(super) world: &'w dyn World,
    pub(super) first_rank: usize,
    ranks: Vec<GpuRank>,
    info: Vec<RankInfo>,
    /// Why peer access is not possible, if it is not.
    no_peer: Option<String>,
    /// Processes on each GPU of this node (more processes than GPUs).
    sharing: usize,
    stages: Vec<staging::Stage>,
    piece: Option<u64>,
    /// Each local rank's part of the exchange under way.
    parts: Vec<Part>,
    /// Bytes of each rank's exchange buffer: a chunk, or less on one GPU.
    xbuf_bytes: u64,
}

impl<'w> GpuRegister<'w> {
    /// `local` GPUs of this process, as ranks of `layout`'s register over
    /// every process of `world`; NCCL communicators when `nccl`; `piece`
    /// overrides the message piece size of NCCL and host transfers.
    pub fn new(layout: Layout, local: usize, world: &'w dyn World, nccl: bool, piece: Option<u64>) -> Result<Self> {
        if local * world.size() != layout.ranks() {
            return Err(Error::Usage(format!(
                "{} ranks ({} processes × {local} GPUs) do not match the layout's {}",
                local * world.size(),
                world.size(),
                layout.ranks()
            )));
        }
        let (gpus, sharing) = gpu::open_local_gpus_shared(local, world)?;
        let xbuf_bytes = exchange_buffer_bytes(&layout, &gpus, sharing)?;
        let comms = if nccl && sharing == 1 { Some(Communicators::new(&gpus, world, None)?) } else { None };
        let first_rank = world.rank() * local;
        let (ranks, info) = open_ranks(&layout, gpus, first_rank, xbuf_bytes)?;
        let no_peer = peer_access(&layout, world, &ranks);
        Ok(GpuRegister {
            kept: Kept::default(),
            comms,
            layout,
            world,
            first_rank,
            ranks,
            info,
            no_peer,
            sharing,
            stages: Vec::new(),
            piece,
            parts: Vec::new(),
            xbuf_bytes,
        })
    }

    /// The ranks (GPUs) of this process.
    pub(super) fn local(&self) -> usize {
        self.ranks.len()
    }

    /// Each rank's memory, its chunk then its exchange buffer: (address,
    /// bytes, GPU ordinal, context).
    pub(super) fn memory(&self) -> Vec<(u64, u64, u32, Arc<CudaContext>)> {
        self.ranks
            .iter()
            .map(|r| {
                (r.mem.ptr(), self.layout.chunk_bytes() + self.xbuf_bytes, r.gpu.ordinal as u32, r.gpu.ctx.clone())
            })
            .collect()
    }

    /// Amplitudes in one 16-byte vector of the streaming kernels.
    fn per_vector(&self) -> u64 {
        16 / self.layout.precision.bytes()
    }

    fn fname(&self, kind: &str) -> String {
        debug_assert!(KINDS.contains(&kind), "{kind} is not loaded");
        format!("sv_{kind}_{}", self.layout.precision.name())
    }

    /// Runs `enqueue` between start and end events on every GPU's main
    /// stream, waits for all, and returns this process's slowest GPU's
    /// seconds. Where processes share a GPU their kernels take turns on it,
    /// and a stream's events time its own alone while it is shorter than
    /// the GPU's time slice: there the span is the host's, from a barrier
    /// to this process's end; the slowest process's is the GPU's time for
    /// every process's work as a circuit meets it.
    fn span(&mut self, enqueue: impl FnOnce(&Self) -> Result<()>) -> Result<Seconds> {
        if self.sharing > 1 {
            self.world.barrier();
            let t0 = std::time::Instant::now();
            enqueue(self)?;
            let end = self.ranks.iter().map(|r| record(&r.gpu.stream, false)).collect::<Result<Vec<_>>>()?;
            self.wait(&end)?;
            return Ok(t0.elapsed().as_secs_f64());
        }
        let start = self.ranks.iter().map(|r| record(&r.gpu.stream, true)).collect::<Result<Vec<_>>>()?;
        enqueue(self)?;
        let end = self.ranks.iter().map(|r| record(&r.gpu.stream, true)).collect::<Result<Vec<_>>>()?;
        self.wait(&end)?;
        let mut slowest = 0f64;
        for (s, e) in start.iter().zip(&end) {
            slowest = slowest.max(s.elapsed_ms(e).map_err(cuda_err("reading event times"))? as f64 * 1e-3);
        }
        Ok(slowest)
    }

    fn wait(&mut self, events: &[CudaEvent]) -> Result<()> {
        let refs: Vec<&CudaEvent> = events.iter().collect();
        match &mut self.comms {
            Some(c) => c.wait(&refs, None),
            None => gpu::wait_events(&refs, None, || Ok(())),
        }
    }

    /// A launch of kernel `name` on rank `r`'s stream, arguments to follow.
    fn kernel(&self, r: usize, name: &str) -> Result<LaunchArgs<'_>> {
        let rank = &self.ranks[r];
        let f =
            rank.kernels.get(name).ok_or_else(|| Error::Runtime(format!("internal: kernel {name} was not loaded")))?;
        Ok(rank.gpu.stream.launch_builder(f))
    }

    /// Uploads the product state's tables to every GPU.
    fn tables(&self, state: &ProductState) -> Result<(u32, Vec<(DeviceBuffer, DeviceBuffer)>)> {
        let (split, lo, hi) = state.tables();
        let bytes = |v: &[num_complex::Complex64]| -> Vec<u8> {
            v.iter().flat_map(|c| [c.re.to_le_bytes(), c.im.to_le_bytes()]).flatten().collect()
        };
        let (lo, hi) = (bytes(&lo), bytes(&hi));
        let mut out = Vec::new();
        for r in &self.ranks {
            let (dl, dh) = (r.gpu.alloc(lo.len() as u64)?, r.gpu.alloc(hi.len() as u64)?);
            r.gpu.ctx.bind_to_thread().map_err(cuda_err("binding a context"))?;
            // On the rank's stream, so that the kernels that read the tables
            // come after them: a synchronous copy from pageable memory may
            // return before its DMA lands, and the stream does not wait for
            // the legacy stream (two processes on one GPU read half-written
            // tables). A pageable source is staged before the call returns,
            // so `lo` and `hi` may go at the end of this function.
            // Each destination holds exactly the bytes copied.
            let s = &r.gpu.stream;
            gpu::copy::to_device_queued(dl.ptr(), &lo, s).map_err(cuda_err("uploading a table"))?;
            gpu::copy::to_device_queued(dh.ptr(), &hi, s).map_err(cuda_err("uploading a table"))?;
            out.push((dl, dh));
        }
        Ok((split, out))
    }

    /// The ranks of this exchange whose partner is local, as (local index,
    /// partner local index), or why the transfer cannot be done in this process.
    fn local_pairs(&self) -> Result<Vec<(usize, usize)>> {
        (0..self.ranks.len())
            .map(|i| {
                let p = self.parts[i].peer;
                p.checked_sub(self.first_rank)
                    .filter(|&j| j < self.ranks.len())
                    .map(|j| (i, j))
                    .ok_or_else(|| Error::Usage("the partner GPU is in another process".into()))
            })
            .collect()
    }

    /// Local rank `i`'s part of this exchange.
    pub(super) fn part(&self, i: usize) -> Part {
        self.parts[i]
    }

    /// The device addresses local rank `i` sends from and receives into.
    pub(super) fn ends(&self, i: usize) -> (u64, u64) {
        let (base, p) = (self.ranks[i].state, self.parts[i]);
        (base + p.send, base + p.recv)
    }

    /// `slots` send slots (and as many receive slots when `receive`) of
    /// `piece` bytes per rank, made anew when their shape changes (the
    /// connections over the old ones go first).
    fn ensure_stages(&mut self, slots: usize, piece: u64, receive: bool) -> Result<()> {
        if self.stages.len() == self.ranks.len() && self.stages.iter().all(|s| s.shaped(slots, piece, receive)) {
            return Ok(());
        }
        self.kept.clear();
        self.stages.clear();
        for r in &self.ranks {
            self.stages.push(staging::Stage::new(&r.gpu, slots, piece, receive)?);
        }
        Ok(())
    }

    fn nccl(&mut self, moves: &[Move], piece: u64) -> Result<Seconds> {
        self.span(|me| {
            let gpus: Vec<&Gpu> = me.ranks.iter().map(|r| &r.gpu).collect();
            me.comms.as_ref().map_or(Ok(()), |c| c.exchange(&gpus, moves, piece))
        })
    }

    /// What nccl-tests' sendrecv_perf measures, on the same buffers: every
    /// rank sends `bytes` of its chunk to rank + 1 and receives rank − 1's,
    /// one message each.
    fn sendrecv_ring(&mut self, bytes: u64) -> Result<Seconds> {
        let n = self.layout.ranks();
        let moves: Vec<Move> = self
            .ranks
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let rank = self.first_rank + i;
                Move { send: r.state, recv: r.xbuf, bytes, to: (rank + 1) % n, from: (rank + n - 1) % n }
            })
            .collect();
        self.nccl(&moves, bytes)
    }

    /// Device-to-host and host-to-device copies of `bytes` at once on every
    /// GPU, through pinned memory: the host link's ceiling for staging.
    fn both_directions(&mut self, bytes: u64) -> Result<Seconds> {
        self.ensure_stages(1, bytes, true)?;
        self.span(|me| {
            for (r, st) in me.ranks.iter().zip(&me.stages) {
                let fork = record(&r.gpu.stream, false)?;
                r.d2h.wait(&fork).map_err(cuda_err("ordering streams"))?;
                r.h2d.wait(&fork).map_err(cuda_err("ordering streams"))?;
                copy_d2h(st.send(0), r.state, bytes, &r.d2h)?;
                copy_h2d(r.xbuf, st.recv(0), bytes, &r.h2d)?;
                r.gpu.stream.wait(&record(&r.d2h, false)?).map_err(cuda_err("ordering streams"))?;
                r.gpu.stream.wait(&record(&r.h2d, false)?).map_err(cuda_err("ordering streams"))?;
            }
            Ok(())
        })
    }

    fn sync_streams(&mut self, which: impl Fn(&GpuRank) -> &Arc<CudaStream>) -> Result<()> {
        let ev = self.ranks.iter().map(|r| record(which(r), false)).collect::<Result<Vec<_>>>()?;
        self.wait(&ev)
    }

    pub(super) fn sync_all(&mut self) -> Result<()> {
        self.sync_streams(|r| &r.gpu.stream)
    }
}

/// Bytes of each rank's exchange buffer: a chunk, or on one GPU (which
/// exchanges nothing, its second buffer only serving the copy reference)
/// as large as fits; or why the GPUs, each shared by `sharing` processes,
/// cannot hold the register.
fn exchange_buffer_bytes(layout: &Layout, gpus: &[Gpu], sharing: usize) -> Result<u64> {
    let chunk = layout.chunk_bytes();
    let mut xbuf_bytes = chunk;
    for g in gpus {
        let free = g.free_mem()?;
        let (need, what) = if layout.ranks() > 1 {
            (2 * chunk, "chunk and exchange buffer")
        } else {
            (chunk, "the whole state vector")
        };
        // Processes sharing a GPU each need their part of it.
        // In u128: a 2^63-byte chunk shared or doubled passes u64.
        if u128::from(need) * sharing as u128 + (1 << 30) > u128::from(free) {
            return Err(Error::Usage(format!(
                "{} qubits over {} GPU{} need {} per GPU ({what}) but GPU {} has {} free: use fewer qubits or more GPUs",
                layout.qubits,
                layout.ranks(),
                if layout.ranks() > 1 { "s" } else { "" },
                crate::units::format_size(need),
                g.ordinal,
                crate::units::format_size(free)
            )));
        }
        if layout.ranks() == 1 && 2 * u128::from(chunk) + (1 << 30) > u128::from(free) {
            xbuf_bytes = chunk.min(1 << 30);
        }
    }
    Ok(xbuf_bytes)
}

/// Each GPU as a rank from `first_rank` on: its kernels, its two copy
/// streams, its chunk and exchange buffer in one allocation, its counter;
/// and the ranks' `# Using devices` lines.
fn open_ranks(
    layout: &Layout,
    gpus: Vec<Gpu>,
    first_rank: usize,
    xbuf_bytes: u64,
) -> Result<(Vec<GpuRank>, Vec<RankInfo>)> {
    let chunk = layout.chunk_bytes();
    let p = layout.precision.name();
    let names: Vec<String> =
        KINDS.iter().map(|k| format!("sv_{k}_{p}")).chain(std::iter::once("sv_copy16".to_string())).collect();
    let mut ranks = Vec::with_capacity(gpus.len());
    let mut info = Vec::with_capacity(gpus.len());
    for (i, gpu) in gpus.into_iter().enumerate() {
        info.push(gpu.rank_info(first_rank + i));
        let kernels = load(&gpu, "kernels/statevec.cu", include_str!("../../../../kernels/statevec.cu"), &names)?;
        let new_stream = || gpu.ctx.new_stream().map_err(cuda_err("creating a stream"));
        // Whole pages: an adapter registers (dma-buf exports) whole pages.
        let mem = gpu.alloc((chunk + xbuf_bytes).next_multiple_of(4096))?;
        ranks.push(GpuRank {
            d2h: new_stream()?,
            h2d: new_stream()?,
            state: mem.ptr(),
            xbuf: mem.ptr() + chunk,
            mem,
            wrong: gpu.alloc(8)?,
            kernels,
            gpu,
        });
    }
    Ok((ranks, info))
}

/// Why the ranks cannot reach their partners' memory for the top qubit's
/// exchange, if they cannot; peer access turned on where they can.
fn peer_access(layout: &Layout, world: &dyn World, ranks: &[GpuRank]) -> Option<String> {
    if world.size() > 1 {
        Some(
            "partners are in different processes: peer copies need every GPU in one process (use -g, not mpirun)"
                .into(),
        )
    } else if ranks.len() < 2 {
        Some("needs two GPUs".into())
    } else {
        (0..ranks.len()).find_map(|r| {
            let p = layout.partner(r, layout.qubits - 1);
            gpu::enable_peer(&ranks[r].gpu, &ranks[p].gpu)
                .and_then(|_| gpu::enable_peer(&ranks[p].gpu, &ranks[r].gpu))
                .err()
        })
    }
}

/// Submits a kernel launch whose arguments the caller pushed.
fn go(mut l: LaunchArgs<'_>, cfg: LaunchConfig, name: &str) -> Result<()> {
    // SAFETY: every caller pushes the argument list of `name` in
    // kernels/statevec.cu, with pointers into this rank's buffers (or a
    // peer's, with peer access enabled) sized for the element counts.
    unsafe { l.launch(cfg) }.map(|_| ()).map_err(cuda_err(format!("launching {name}")))
}

fn record(stream: &Arc<CudaStream>, timing: bool) -> Result<CudaEvent> {
    let flags = if timing { Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT) } else { None };
    stream.record_event(flags).map_err(cuda_err("recording an event"))
}

fn copy_d2h(host: *mut u8, src: u64, len: u64, stream: &Arc<CudaStream>) -> Result<()> {
    stream.context().bind_to_thread().map_err(cuda_err("binding a context"))?;
    // SAFETY: `host` is a slot of a stage of at least `len` bytes, held by
    // the register until its streams are idle; `src..src+len` lies in a
    // device buffer of this stream's GPU.
    unsafe { gpu::copy::device_to_host(host, src, len as usize, stream) }.map_err(cuda_err("copying device to host"))
}

fn copy_h2d(dst: u64, host: *const u8, len: u64, stream: &Arc<CudaStream>) -> Result<()> {
    stream.context().bind_to_thread().map_err(cuda_err("binding a context"))?;
    // SAFETY: as in `copy_d2h`, the other way.
    unsafe { gpu::copy::host_to_device(dst, host, len as usize, stream) }.map_err(cuda_err("copying host to device"))
}

impl GpuRegister<'_> {
    /// H on local qubit `q` of every rank (its own kernels).
    fn local_h(&self, q: u32) -> Result<Vec<Launch>> {
        let n = self.layout.local_amps();
        let vectors = n / self.per_vector();
        // sv_h_warp: partners within a warp, whole warps load contiguous
        // amplitudes and trade them by shuffles. sv_h_4k: partners 4 KiB
        // apart, where sv_h's two runs 4 KiB apart in each warp stream at
        // 0.95 of the copy engine on an H200: a block for each contiguous
        // pair group (docs/kernels-roofline.md). sv_h: each warp takes 16
        // pairs as two runs of 256 bytes.
        let groups = (q == self.layout.precision.qubit_with_partners(SLOW_PARTNER_BYTES))
            .then(|| pair_groups(vectors))
            .flatten();
        let warp = q < 5 && n >= 32 * 4;
        let kind = match (groups, warp) {
            (Some(_), _) => "h_4k",
            (None, true) => "h_warp",
            (None, false) => "h",
        };
        // sv_h_warp counts amplitudes, sv_h pairs.
        let count = if warp { n } else { n / 2 };
        Ok(vec![match groups {
            Some(cfg) => Launch::kernel(kind, cfg, vec![Arg::Amps]),
            None => Launch::kernel(
                kind,
                streaming(&self.ranks[0].gpu, vectors),
                vec![Arg::Amps, Arg::U64(count), Arg::U32(q)],
            ),
        }])
    }

    /// The launches of `op` on local rank `i`.
    fn launches(&self, i: usize, op: Local) -> Result<Vec<Launch>> {
        let n = self.layout.local_amps();
        let gpu = &self.ranks[i].gpu;
        let c = |z: Complex64| [Arg::F64(z.re), Arg::F64(z.im)];
        let half = self.layout.chunk_bytes() / 2;
        Ok(match op {
            Local::Idle => Vec::new(),
            Local::H(q) => self.local_h(q)?,
            Local::U { q, m } => {
                let mut args = vec![Arg::Amps, Arg::U64(n / 2), Arg::U32(q)];
                args.extend(m.iter().flat_map(|&z| c(z)));
                vec![Launch::kernel("u", grid(gpu, n / 2), args)]
            }
            Local::Phase { ones, phase } => {
                let count = n >> ones.count_ones();
                let [re, im] = c(phase);
                vec![Launch::kernel(
                    "phase",
                    grid(gpu, count),
                    vec![Arg::Amps, Arg::U64(count), Arg::U64(ones), re, im],
                )]
            }
            Local::Pairs { ones, zeros, flip } => {
                let count = n >> (ones | zeros).count_ones();
                let args = vec![Arg::Amps, Arg::U64(count), Arg::U64(ones), Arg::U64(zeros), Arg::U64(flip)];
                vec![Launch::kernel("pairs", grid(gpu, count), args)]
            }
            Local::Pack { bit, value } => {
                let args = vec![Arg::Buffer(half), Arg::Amps, Arg::U64(n / 2), Arg::U32(bit), Arg::I32(value as i32)];
                vec![Launch::kernel("pack", grid(gpu, n / 2), args)]
            }
            // The top local qubit's half is contiguous: a copy engine's copy.
            Local::Unpack { bit, value } if bit == self.layout.local_qubits() - 1 => {
                vec![Launch::Copy { to: value as u64 * half, from: self.layout.chunk_bytes(), bytes: half }]
            }
            Local::Unpack { bit, value } => {
                let args = vec![Arg::Amps, Arg::Buffer(0), Arg::U64(n / 2), Arg::U32(bit), Arg::I32(value as i32)];
                vec![Launch::kernel("unpack", grid(gpu, n / 2), args)]
            }
            Local::CombineH { one } => {
                let args = vec![Arg::Amps, Arg::Buffer(0), Arg::U64(n), Arg::I32(one as i32)];
                vec![Launch::kernel("combine", streaming(gpu, n.div_ceil(self.per_vector())), args)]
            }
            Local::Mix { own, received } => {
                let mut args = vec![Arg::Amps, Arg::Buffer(0), Arg::U64(n)];
                args.extend(c(own));
                args.extend(c(received));
                vec![Launch::kernel("mix", grid(gpu, n), args)]
            }
            Local::Take => {
                vec![Launch::Copy { to: 0, from: self.layout.chunk_bytes(), bytes: self.layout.chunk_bytes() }]
            }
        })
    }

    /// Submits one launch on local rank `i`'s stream.
    fn submit(&self, i: usize, l: &Launch) -> Result<()> {
        let r = &self.ranks[i];
        match l {
            Launch::Copy { to, from, bytes } => {
                r.gpu.ctx.bind_to_thread().map_err(cuda_err("binding a context"))?;
                // Both ranges lie in this rank's allocation (chunk and
                // exchange buffer, each `chunk` bytes; the callers copy at
                // most a chunk between them) and do not overlap.
                gpu::copy::within_device(r.state + to, r.state + from, *bytes as usize, &r.gpu.stream)
                    .map_err(cuda_err("copying within a GPU"))
            }
            Launch::Kernel { kind, cfg, args } => {
                let name = self.fname(kind);
                let mut k = self.kernel(i, &name)?;
                // The values live until the launch below has been submitted.
                let values: Vec<Value> = args
                    .iter()
                    .map(|a| match *a {
                        Arg::Amps => Value::U64(r.state),
                        Arg::Buffer(off) => Value::U64(r.xbuf + off),
                        Arg::U64(v) => Value::U64(v),
                        Arg::U32(v) => Value::U32(v),
                        Arg::I32(v) => Value::I32(v),
                        Arg::F64(v) => Value::F64(v),
                    })
                    .collect();
                for v in &values {
                    match v {
                        Value::U64(x) => k.arg(x),
                        Value::U32(x) => k.arg(x),
                        Value::I32(x) => k.arg(x),
                        Value::F64(x) => k.arg(x),
                    };
                }
                go(k, *cfg, &name)
            }
        }
    }
}

/// What a local operation launches on a rank.
enum Launch {
    /// A kernel of kernels/statevec.cu (`sv_<kind>_<precision>`).
    Kernel { kind: &'static str, cfg: LaunchConfig, args: Vec<Arg> },
    /// A copy within the rank's memory, byte offsets from its chunk's start.
    Copy { to: u64, from: u64, bytes: u64 },
}

impl Launch {
    fn kernel(kind: &'static str, cfg: LaunchConfig, args: Vec<Arg>) -> Launch {
        Launch::Kernel { kind, cfg, args }
    }
}

/// A kernel argument, made a rank's own when launched.
#[derive(Debug, Clone, Copy)]
enum Arg {
    /// The rank's chunk.
    Amps,
    /// The rank's exchange buffer, this many bytes in.
    Buffer(u64),
    U64(u64),
    U32(u32),
    I32(i32),
    F64(f64),
}

/// An argument's value, held for the launch.
enum Value {
    U64(u64),
    U32(u32),
    I32(i32),
    F64(f64),
}

impl Register for GpuRegister<'_> {
    fn layout(&self) -> &Layout {
        &self.layout
    }

    fn ranks(&self) -> &[RankInfo] {
        &self.info
    }

    fn world(&self) -> &dyn World {
        self.world
    }

    fn device_memory(&self) -> u64 {
        self.ranks.iter().map(|r| r.gpu.total_mem).min().unwrap_or(0)
    }

    fn kernel_build(&self) -> Option<String> {
        let cc = self.ranks.first()?.gpu.compute_capability;
        crate::gpu::kernels::built("kernels/statevec.cu", cc).map(|b| b.to_string())
    }

    fn init(&mut self, state: &ProductState) -> Result<()> {
        let (split, tables) = self.tables(state)?;
        let n = self.layout.local_amps();
        let name = self.fname("init");
        for (i, r) in self.ranks.iter().enumerate() {
            let base = (self.first_rank + i) as u64 * n;
            let (amp, lo, hi) = (r.state, tables[i].0.ptr(), tables[i].1.ptr());
            let mut l = self.kernel(i, &name)?;
            l.arg(&amp).arg(&n).arg(&base).arg(&lo).arg(&hi).arg(&split);
            go(l, grid(&r.gpu, n), &name)?;
        }
        self.sync_all()
    }

    fn count_wrong(&mut self, state: &ProductState, floor: f64) -> Result<u64> {
        let (split, tables) = self.tables(state)?;
        let n = self.layout.local_amps();
        let rel = tolerance(self.layout.precision == Precision::Single);
        let floor2 = floor * floor;
        let name = self.fname("check");
        for (i, r) in self.ranks.iter().enumerate() {
            let base = (self.first_rank + i) as u64 * n;
            let (amp, lo, hi, wrong) = (r.state, tables[i].0.ptr(), tables[i].1.ptr(), r.wrong.ptr());
            r.gpu.memset(wrong, 0, 8)?;
            let mut l = self.kernel(i, &name)?;
            l.arg(&amp).arg(&n).arg(&base).arg(&lo).arg(&hi).arg(&split).arg(&rel).arg(&floor2).arg(&wrong);
            go(l, grid(&r.gpu, n), &name)?;
        }
        self.sync_all()?;
        let mut total = 0;
        for r in &self.ranks {
            let mut w = 0u64;
            r.gpu.ctx.bind_to_thread().map_err(cuda_err("binding a context"))?;
            // The counter is one u64 written by the check kernel, which the
            // sync above waited for.
            gpu::copy::from_device(bytemuck::bytes_of_mut(&mut w), r.wrong.ptr())
                .map_err(cuda_err("reading a count"))?;
            total += w;
        }
        Ok(self.world.sum_u64(total))
    }

    fn apply(&mut self, op: &dyn Fn(usize) -> Local) -> Result<Seconds> {
        let launches: Vec<Vec<Launch>> =
            (0..self.ranks.len()).map(|i| self.launches(i, op(self.first_rank + i))).collect::<Result<_>>()?;
        self.span(|me| {
            for (i, ls) in launches.iter().enumerate() {
                for l in ls {
                    me.submit(i, l)?;
                }
            }
            Ok(())
        })
    }

    fn copy_bytes(&self) -> u64 {
        self.xbuf_bytes
    }

    fn local_copy(&mut self) -> Result<Seconds> {
        let bytes = self.xbuf_bytes as usize;
        self.span(|me| {
            for r in &me.ranks {
                r.gpu.ctx.bind_to_thread().map_err(cuda_err("binding a context"))?;
                // Both buffers hold `xbuf_bytes` on this GPU.
                gpu::copy::within_device(r.xbuf, r.state, bytes, &r.gpu.stream).map_err(cuda_err("copying a chunk"))?;
            }
            Ok(())
        })
    }

    fn exchange(&mut self, wire: Wire, parts: &dyn Fn(usize) -> Part) -> Result<Seconds> {
        if let Some(why) = self.unavailable(wire) {
            return Err(Error::Usage(format!("{}: {why}", wire.name())));
        }
        let memory = self.layout.chunk_bytes() + self.xbuf_bytes;
        self.parts = (0..self.ranks.len()).map(|i| parts(self.first_rank + i)).collect();
        if let Some(p) = self.parts.iter().find(|p| p.send.max(p.recv) + p.len > memory) {
            return Err(Error::Runtime(format!("internal: an exchange part {p:?} overruns a rank's {memory} bytes")));
        }
        let gpu = wire.imp().gpu().ok_or_else(|| Error::Runtime("internal: not a GPU wire".into()))?;
        gpu.exchange(self)
    }

    fn unavailable(&self, wire: Wire) -> Option<String> {
        match wire.imp().gpu() {
            Some(g) => g.unavailable(self),
            None => Some(format!("{} moves host-memory ranks; this register is on GPUs", wire.name())),
        }
    }

    fn host_link(&mut self, bytes: u64) -> Result<Option<Seconds>> {
        self.both_directions(bytes).map(Some)
    }

    fn nccl_sendrecv(&mut self, bytes: u64) -> Result<Option<Seconds>> {
        if self.comms.is_none() || self.layout.ranks() < 2 {
            return Ok(None);
        }
        self.sendrecv_ring(bytes).map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::KINDS;

    /// Every precision-suffixed kernel in kernels/statevec.cu is loaded, and
    /// every kind loaded exists there.
    #[test]
    fn loaded_kernels_match_the_source() {
        let src = include_str!("../../../../kernels/statevec.cu");
        let defined: Vec<&str> = src
            .lines()
            .filter(|l| l.contains("__global__ void"))
            .filter_map(|l| l.split(" sv_").nth(1))
            .filter_map(|rest| rest.split("_##NAME").next().filter(|k| !k.contains('(')))
            .collect();
        let mut want: Vec<&str> = KINDS.to_vec();
        let mut got = defined.clone();
        want.sort();
        got.sort();
        assert_eq!(got, want);
    }
}
