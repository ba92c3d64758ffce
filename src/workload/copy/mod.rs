//! `qbench copy`: how fast bytes move between host and GPUs, between GPUs,
//! within a GPU, through mapped host memory and through gdrcopy's BAR
//! mapping, measured as nvbandwidth and gdrcopy measure them. This file holds
//! the run and the measurement loop every test shares; registry.rs lists the
//! tests, one file per family says what each of its tests copies, flow.rs
//! how one copy is issued, device.rs the hold gate (the kernels are
//! `gpu::copy_kernels`).
//!
//! Every bandwidth is timed with CUDA events around `-n` back-to-back copies
//! after `-w` warm-up copies, over `--samples` samples, the median reported;
//! concurrent streams are held by a spin kernel until every copy is queued
//! and released together. After each size the destination of every copy is
//! compared with the seeded source data, word by word. `QBENCH_CORRUPT=copy`
//! (or `copy:WORD`) flips one word of each destination before that check, to
//! prove a corrupted copy is caught (exit 1).
//!
//! As nvbandwidth does, the host side of the copies to or from each GPU
//! (the thread that allocates, fills and times them, and its host buffers)
//! is bound to that GPU's NUMA node (`--numa`; [`crate::numa`]), and each
//! test records what the kernel says took effect.

mod buffer;
mod chase;
mod device;
mod flow;
mod gdrcopy;
mod host_device;
mod latency;
mod local;
mod peer;
mod registry;
mod zero_copy;

use crate::error::{Error, Result};
use crate::fault::{self, Fault};
use crate::gpu::copy_kernels::{CopyKernels, HOLD_TIMEOUT_NS};
use crate::gpu::{self, Gpu, cuda_err};
use crate::interrupt;
use crate::libs::Library;
use crate::numa::{self, Placement};
use crate::record::copy::{
    self as record, CopyRun, HostSide, KIND, LatencyRow, LatencySeries, Row, Status, TestInfo, TestRecord,
};
use crate::record::{Header, Observer, Outcome};
use crate::session::Session;
use crate::stats::Summary;
use crate::workload::Job;
use buffer::{Buffer, HostKind, Place};
use cudarc::driver::CudaEvent;
use device::{Gate, peer_access, spin};
use flow::{Flow, FlowMeta, row};
use registry::{DEFINITIONS, What, select};
pub use registry::{Engine, FAMILIES, TESTS, Test, latency_sizes};
use std::time::{Duration, Instant};

/// What `qbench copy` runs, resolved before any GPU is touched.
#[derive(Debug, Clone)]
pub struct CopyPlan {
    tests: Vec<&'static Test>,
    /// GPUs to use, the first ones visible (None: all).
    pub ngpus: Option<usize>,
    sizes: Vec<u64>,
    config: record::Config,
    pub fault: Option<Fault>,
}

impl CopyPlan {
    /// The fault `QBENCH_CORRUPT` asks of copy, if it can apply it.
    pub fn fault_asked() -> Result<Option<Fault>> {
        Fault::requested("copy", &[fault::Kind::Word])
    }

    /// The plan of a run configured as `config` says: its `tests` are names
    /// or families (or all), its `ngpus` 0 for every GPU.
    /// `fault`: what it injects (the command line's `QBENCH_CORRUPT`, see
    /// [`CopyPlan::fault_asked`]).
    pub fn new(mut config: record::Config, fault: Option<Fault>) -> Result<CopyPlan> {
        let tests = select(&config.tests.join(","))?;
        if config.minbytes == 0 {
            return Err(Error::Usage("the smallest size (-b) must be at least 1 byte".into()));
        }
        let sizes = if config.minbytes == config.maxbytes {
            vec![config.minbytes]
        } else {
            crate::units::sweep(config.minbytes, config.maxbytes, crate::units::Growth::Factor(config.stepfactor))?
        };
        if let Some(numa::Mode::Node(n)) = config.numa {
            numa::Host::this().has_node(n).map_err(|e| Error::Usage(format!("--numa {n}: {e}")))?;
        }
        config.tests = tests.iter().map(|t| t.name.to_string()).collect();
        config.corrupt_word = match fault {
            Some(Fault::Word(w)) => Some(w),
            _ => None,
        };
        if !Library::Driver.loadable() {
            return Err(Error::Missing(
                "qbench copy measures copies to and from GPUs, but the CUDA driver library (libcuda.so.1) is not on this machine: run it where an NVIDIA GPU and its driver are installed".into(),
            ));
        }
        let ngpus = (config.ngpus > 0).then_some(config.ngpus);
        Ok(CopyPlan { tests, ngpus, sizes, config, fault })
    }
}

impl Job for CopyPlan {
    type Record = CopyRun;

    fn libraries(&self) -> Vec<Library> {
        vec![Library::Driver, Library::Nvrtc]
    }

    fn without_gpus(&self) -> Option<&'static str> {
        None
    }

    fn run(&self, session: &Session, obs: &mut dyn Observer<CopyRun>) -> Outcome<CopyRun> {
        run_tests(self, session, obs)
    }

    fn verdict(&self, record: &CopyRun, _rank: usize) -> Result<()> {
        record.verdict()
    }
}

/// Refuses several copy runs on one node: they would share the GPUs and
/// the host link and measure each other.
pub fn alone_on_this_node() -> Result<()> {
    match crate::world::launched_on_this_node() {
        Some((var, n)) => Err(Error::Usage(format!(
            "qbench copy was started {n} times on this node ({var}={n}): the copies would share the GPUs and the host link and measure each other; start one per node (mpirun --map-by ppr:1:node) or run it without a launcher"
        ))),
        None => Ok(()),
    }
}

/// Every test of the registry, for `qbench copy --list`.
pub fn catalogue() -> Vec<TestInfo> {
    TESTS
        .iter()
        .map(|t| TestInfo { name: t.name.into(), family: t.family.into(), description: t.description.into() })
        .collect()
}

/// Runs the plan's tests on the GPUs of this machine.
fn run_tests(plan: &CopyPlan, session: &Session, obs: &mut dyn Observer<CopyRun>) -> Outcome<CopyRun> {
    let mut out = CopyRun {
        header: Header::start(KIND, plan.fault),
        config: plan.config.clone(),
        devices: Vec::new(),
        kernels: None,
        definitions: DEFINITIONS
            .iter()
            .map(|&(name, text)| record::Definition { name: name.into(), text: text.into() })
            .collect(),
        tests: Vec::new(),
        wrong_words: 0,
        error: None,
    };
    obs.started(&out);
    let result = (|| {
        session.need(&Job::libraries(plan))?;
        let found = gpu::device_count()?;
        if found == 0 {
            return Err(Error::Missing(
                "qbench copy needs a CUDA GPU and none is visible (check nvidia-smi and CUDA_VISIBLE_DEVICES)".into(),
            ));
        }
        let n = match plan.ngpus {
            Some(n) if n > found => return Err(Error::Usage(format!("-g {n}: only {found} GPUs are visible"))),
            Some(n) => n,
            None => found,
        };
        Bench::open(plan, n, &mut out)?.run_all(&mut out, obs)
    })();
    Outcome::new(out, result)
}

/// Free device memory left untouched on every GPU.
const DEVICE_MARGIN: u64 = 512 << 20;

/// A test's record before it runs.
fn new_record(t: &Test) -> TestRecord {
    TestRecord {
        name: t.name.into(),
        family: t.family.into(),
        description: t.description.into(),
        figure: t.figure.into(),
        timing: t.timing.into(),
        status: Status::Ran,
        reason: None,
        fix: None,
        sizes_left_out: Vec::new(),
        skipped: Vec::new(),
        rows: Vec::new(),
        latency: Vec::new(),
        wrong_words: 0,
        numa: Vec::new(),
    }
}

/// The GPUs of the run and everything the tests share.
pub struct Bench {
    plan: CopyPlan,
    kernels: Vec<CopyKernels>,
    /// One u64 per GPU for the check kernel's count.
    counters: Vec<Buffer>,
    gate: Gate,
    /// `blocked[i][j]`: why GPU i cannot reach GPU j's memory, if it cannot.
    blocked: Vec<Vec<Option<String>>>,
    flows_made: u64,
    /// Last, so that the buffers above are freed while the contexts live.
    gpus: Vec<Gpu>,
}

impl Bench {
    fn open(plan: &CopyPlan, n: usize, out: &mut CopyRun) -> Result<Bench> {
        interrupt::step("opening the GPUs");
        let gpus = (0..n).map(Gpu::open).collect::<Result<Vec<_>>>()?;
        let kernels = gpus.iter().map(CopyKernels::load).collect::<Result<Vec<_>>>()?;
        let counters = gpus.iter().enumerate().map(|(i, g)| Buffer::device(g, i, 8, 8)).collect::<Result<Vec<_>>>()?;
        let gate = Gate::new(&gpus)?;
        let blocked = peer_access(&gpus);
        let mut plan = plan.clone();
        plan.config.ngpus = n;
        out.config.ngpus = n;
        out.kernels = crate::gpu::kernels::built("kernels/copy.cu", gpus[0].compute_capability).map(|b| b.to_string());
        out.devices = gpus
            .iter()
            .enumerate()
            .map(|(i, g)| record::Device {
                index: i,
                name: g.name.clone(),
                bus_id: g.bus_id.clone(),
                total_mem: g.total_mem,
            })
            .collect();
        Ok(Bench { plan, gpus, kernels, counters, gate, blocked, flows_made: 0 })
    }

    /// Runs every test of the plan, each one's record handed to `obs` as it ends.
    fn run_all(mut self, out: &mut CopyRun, obs: &mut dyn Observer<CopyRun>) -> Result<()> {
        obs.begin(out);
        for t in self.plan.tests.clone() {
            interrupt::check()?;
            interrupt::step(format!("copy test {}", t.name));
            let mut rec = new_record(t);
            let r = self.run_test(t, &mut rec);
            out.push(rec);
            obs.part(out, out.tests.last().expect("pushed"));
            if let Err(e) = r {
                out.error = Some(format!("{}: {e}", t.name));
                return Err(e);
            }
        }
        Ok(())
    }

    fn run_test(&mut self, t: &Test, rec: &mut TestRecord) -> Result<()> {
        match t.what {
            What::HostOneWay { to_gpu, host } => host_device::one_way(self, rec, to_gpu, host)?,
            What::HostBothWays => host_device::both_ways(self, rec, Engine::Ce)?,
            What::HostAllGpus { h2d, d2h } => host_device::all_gpus(self, rec, h2d, d2h)?,
            What::PeerOneWay { engine, by_destination } => peer::one_way(self, rec, engine, by_destination)?,
            What::PeerBothWays { engine } => peer::both_ways(self, rec, engine)?,
            What::Local { engine } => local::run(self, rec, engine)?,
            What::ZeroCopy { to_gpu } => zero_copy::run(self, rec, to_gpu)?,
            What::LatencyHost { to_gpu } => latency::host(self, rec, to_gpu)?,
            What::LatencyPeer => latency::peer(self, rec)?,
            What::LatencyMapped { to_gpu } => latency::mapped(self, rec, to_gpu)?,
            What::Chase { target } => chase::run(self, rec, target)?,
            What::ZeroCopyBothWays => host_device::both_ways(self, rec, Engine::Sm)?,
            What::GdrBandwidth => gdrcopy::bandwidth(self, rec)?,
            What::GdrLatency => gdrcopy::latency(self, rec)?,
        }
        if rec.status == Status::Ran && rec.rows.is_empty() && rec.latency.is_empty() {
            let why = rec.skipped.first().map(|s| s.reason.clone()).unwrap_or_else(|| "nothing was measured".into());
            rec.status = Status::Unavailable;
            rec.reason = Some(why);
        }
        Ok(())
    }

    fn ngpus(&self) -> usize {
        self.gpus.len()
    }

    /// Whether the run has a second GPU; if not, marks the test unavailable.
    fn has_peer(&self, rec: &mut TestRecord) -> bool {
        let two = self.ngpus() >= 2;
        if !two {
            rec.unavailable(
                format!("needs two GPUs ({} in this run)", self.ngpus()),
                "run on a machine with two or more GPUs (and -g 2 or more)",
            );
        }
        two
    }

    fn config(&self) -> &record::Config {
        &self.plan.config
    }

    /// Why GPU `from` cannot reach GPU `to`'s memory, if it cannot.
    fn blocked(&self, from: usize, to: usize) -> Option<&str> {
        self.blocked.get(from).and_then(|r| r.get(to)).and_then(|b| b.as_deref())
    }

    /// The sweep's sizes that fit when each GPU holds `device_buffers`
    /// buffers of that size and the host `host_buffers` (half of the
    /// available host memory at most); the rest are noted in `rec`, and a
    /// test with no size left is unavailable.
    fn sizes_within(&self, rec: &mut TestRecord, device_buffers: u64, host_buffers: u64) -> Result<Vec<u64>> {
        let mut cap = u64::MAX;
        for g in &self.gpus {
            if let Some(c) = g.free_mem()?.saturating_sub(DEVICE_MARGIN).checked_div(device_buffers) {
                cap = cap.min(c);
            }
        }
        if let Some(c) = (crate::host::mem_available().unwrap_or(u64::MAX) / 2).checked_div(host_buffers) {
            cap = cap.min(c);
        }
        let (keep, out): (Vec<u64>, Vec<u64>) = self.plan.sizes.iter().partition(|&&s| s <= cap);
        if keep.is_empty() {
            rec.unavailable(
                format!("free memory holds buffers of {cap} bytes, less than the smallest size (-b)"),
                "lower -b, or free GPU and host memory",
            );
        }
        rec.sizes_left_out = out;
        Ok(keep)
    }

    fn device(&self, gpu: usize, bytes: u64) -> Result<Buffer> {
        Buffer::device(&self.gpus[gpu], gpu, bytes, 256)
    }

    fn host(&self, kind: HostKind, bytes: u64) -> Result<Buffer> {
        match kind {
            HostKind::Pageable => Buffer::pageable(bytes),
            _ => Buffer::pinned(&self.gpus[0].ctx, kind, bytes),
        }
    }

    /// Binds this thread's CPUs and memory policy for the host side of the
    /// copies to or from GPU `gpu`, as `--numa` asks (its node by default),
    /// before their host buffers are allocated: pinned memory is placed when
    /// cuMemHostAlloc allocates it, pageable memory when it is first
    /// written, and the fill and check threads started meanwhile inherit
    /// the binding. Dropping or releasing the result undoes it.
    fn bind_host(&self, gpu: usize) -> numa::Bound {
        let file = numa::pci_node_file(&format!("{}.0", self.gpus[gpu].bus_id));
        numa::Host::this().bind_for(self.plan.config.numa.unwrap_or_default(), &format!("GPU {gpu}"), &file)
    }

    /// Waits for every GPU's own stream (fills and checks).
    fn sync_gpus(&self) -> Result<()> {
        for g in &self.gpus {
            g.stream.synchronize().map_err(cuda_err(format!("waiting for GPU {}", g.ordinal)))?;
        }
        Ok(())
    }

    /// Waits for the end events of `flows`, giving up after `limit`.
    fn wait(&self, flows: &[&Flow], limit: Duration) -> Result<()> {
        let ends: Vec<&CudaEvent> = flows.iter().map(|f| &f.end).collect();
        gpu::wait_events(&ends, Some(limit), || Ok(()))
    }

    /// Writes the seeded data (or the poison) into the first `bytes` bytes of `buf`.
    fn fill(&self, buf: &mut Buffer, bytes: u64, seed: u64, invert: bool) -> Result<()> {
        match buf.place() {
            Place::Device(g) => {
                let gpu = &self.gpus[g];
                self.kernels[g].fill(gpu, buf.device_addr(gpu)?, bytes, seed, invert)
            }
            Place::Host(_) => {
                // SAFETY: no copy touches `buf` now: fills come before a
                // size's copies are queued and after the last one finished.
                let s =
                    unsafe { buf.host_slice(bytes) }.ok_or_else(|| Error::Runtime("internal: no host slice".into()))?;
                buffer::fill_host(s, seed, invert);
                Ok(())
            }
        }
    }

    /// Applies the test hook, then counts the wrong words of the first
    /// `bytes` bytes of `buf`: on its GPU for device memory, on GPU `via`
    /// for write-combined memory (which the CPU reads very slowly), on the
    /// host for other host memory.
    fn verify(&self, buf: &mut Buffer, bytes: u64, seed: u64, via: usize) -> Result<u64> {
        if let Some(w) = self.plan.config.corrupt_word {
            self.corrupt(buf, bytes, w)?;
        }
        let on = match buf.place() {
            Place::Device(g) => Some(g),
            Place::Host(HostKind::WriteCombined) => Some(via),
            Place::Host(_) => None,
        };
        let Some(g) = on else {
            // SAFETY: the copies into `buf` have finished (their events completed).
            let s = unsafe { buf.host_slice(bytes) }.ok_or_else(|| Error::Runtime("internal: no host slice".into()))?;
            return Ok(buffer::count_wrong_host(s, seed));
        };
        let gpu = &self.gpus[g];
        let counter = self.counters[g].device_addr(gpu)?;
        gpu.memset(counter, 0, 8)?;
        self.kernels[g].check(gpu, buf.device_addr(gpu)?, bytes, seed, counter)?;
        gpu.stream.synchronize().map_err(cuda_err(format!("checking data on GPU {g}")))?;
        let mut wrong = 0u64;
        // `counter` is one u64 on this GPU, written by the check kernel the
        // synchronisation above waited for.
        crate::gpu::copy::from_device(bytemuck::bytes_of_mut(&mut wrong), counter)
            .map_err(cuda_err("reading the wrong-word count"))?;
        Ok(wrong)
    }

    /// The test hook: flips word `word` of the first `bytes` bytes of `buf`.
    fn corrupt(&self, buf: &mut Buffer, bytes: u64, word: u64) -> Result<()> {
        match buf.place() {
            Place::Device(g) => {
                let gpu = &self.gpus[g];
                let w = word.min(bytes.saturating_sub(1) / 8);
                let at = buf.device_addr(gpu)? + w * 8;
                let mut tmp = vec![0u8; (bytes - w * 8).min(8) as usize];
                gpu.ctx.bind_to_thread().map_err(cuda_err("binding a context"))?;
                // `at..at+tmp.len()` lies inside the buffer's first `bytes`
                // bytes; the copies into it have finished.
                crate::gpu::copy::from_device(&mut tmp, at).map_err(cuda_err("reading a word"))?;
                buffer::flip_word(&mut tmp, 0);
                crate::gpu::copy::to_device(at, &tmp).map_err(cuda_err("writing a word"))?;
            }
            Place::Host(_) => {
                // SAFETY: the copies into `buf` have finished.
                let s =
                    unsafe { buf.host_slice(bytes) }.ok_or_else(|| Error::Runtime("internal: no host slice".into()))?;
                buffer::flip_word(s, word);
            }
        }
        Ok(())
    }

    /// Measures every size of `sizes` for the flows of one placement,
    /// adding a row per size to `rec`.
    fn bandwidth(&self, rec: &mut TestRecord, placement: &str, sizes: &[u64], flows: &mut [Flow]) -> Result<()> {
        for &size in sizes {
            interrupt::check()?;
            rec.rows.push(self.measure(placement, size, flows)?);
        }
        Ok(())
    }

    fn measure(&self, placement: &str, size: u64, flows: &mut [Flow]) -> Result<Row> {
        let cfg = &self.plan.config;
        for f in flows.iter_mut() {
            if size > f.src.bytes() || size > f.dst.bytes() {
                return Err(Error::Runtime(format!("internal: {size} bytes copied between smaller buffers")));
            }
            self.fill(&mut f.src, size, f.seed, false)?;
            self.fill(&mut f.dst, size, f.seed, true)?;
        }
        self.sync_gpus()?;
        let samples = self.time(size, flows)?;
        let wrong =
            flows.iter_mut().map(|f| self.verify(&mut f.dst, size, f.seed, f.issuer)).collect::<Result<Vec<_>>>()?;
        let metas: Vec<FlowMeta> = flows.iter().map(Flow::meta).collect();
        Ok(row(size, placement, &metas, &samples, cfg.iters, &wrong))
    }

    /// Warms up, then times `--samples` samples of `-n` copies per flow:
    /// each flow's own time per sample, in seconds.
    fn time(&self, size: u64, flows: &[Flow]) -> Result<Vec<Vec<f64>>> {
        let cfg = &self.plan.config;
        let all: Vec<&Flow> = flows.iter().collect();
        let limit = |copies: u32| Duration::from_secs(60) + Duration::from_secs_f64(copies as f64 * size as f64 / 1e9);
        for _ in 0..cfg.warmup_iters {
            for f in flows {
                self.enqueue(f, size)?;
            }
        }
        for f in flows {
            f.end.record(&f.stream).map_err(cuda_err("recording an event"))?;
        }
        self.wait(&all, limit(cfg.warmup_iters))?;
        let hold = flows.iter().all(|f| !f.pageable());
        let mut samples = Vec::with_capacity(cfg.samples as usize);
        for _ in 0..cfg.samples {
            let queued = self.queue_sample(flows, size, hold);
            if hold {
                self.gate.release();
            }
            queued?;
            self.wait(&all, limit(cfg.iters))?;
            if hold && self.gate.timed_out() {
                return Err(Error::Runtime(format!(
                    "the hold kernel stopped waiting after {} s before all {} copies were queued: lower -n",
                    HOLD_TIMEOUT_NS / 1_000_000_000,
                    cfg.iters as usize * flows.len()
                )));
            }
            let times = flows
                .iter()
                .map(|f| Ok(f.start.elapsed_ms(&f.end).map_err(cuda_err("reading event times"))? as f64 * 1e-3))
                .collect::<Result<Vec<f64>>>()?;
            samples.push(times);
        }
        Ok(samples)
    }

    /// Queues one sample: on every flow's stream the hold kernel (when
    /// `hold`), the start event, `-n` copies interleaved across flows, the
    /// end event. The caller opens the gate whatever this returns.
    fn queue_sample(&self, flows: &[Flow], size: u64, hold: bool) -> Result<()> {
        if hold {
            self.gate.arm();
        }
        for f in flows {
            if hold {
                self.kernels[f.issuer].hold(&f.stream, self.gate.addr[f.issuer])?;
            }
            f.start.record(&f.stream).map_err(cuda_err("recording an event"))?;
        }
        for _ in 0..self.plan.config.iters {
            for f in flows {
                self.enqueue(f, size)?;
            }
        }
        for f in flows {
            f.end.record(&f.stream).map_err(cuda_err("recording an event"))?;
        }
        Ok(())
    }

    /// One latency table: every latency size, `--lat_iters` copies each,
    /// one at a time, timed by the host clock and by events.
    fn latency(&self, label: &str, placement: &str, f: &mut Flow) -> Result<LatencySeries> {
        let cfg = &self.plan.config;
        let mut rows = Vec::new();
        for &size in &cfg.lat_sizes {
            interrupt::check()?;
            if size > f.src.bytes() || size > f.dst.bytes() {
                return Err(Error::Runtime(format!("internal: {size} bytes copied between smaller buffers")));
            }
            self.fill(&mut f.src, size, f.seed, false)?;
            self.fill(&mut f.dst, size, f.seed, true)?;
            self.sync_gpus()?;
            for _ in 0..cfg.warmup_iters {
                self.enqueue(f, size)?;
            }
            f.end.record(&f.stream).map_err(cuda_err("recording an event"))?;
            spin(&f.end, Instant::now())?;
            // The host clock around one copy and the wait for its stream,
            // nothing else in the loop. The timed copies wait in the
            // driver (cuStreamSynchronize, cuEventSynchronize: a spin while
            // the GPUs are fewer than the cores), as a runtime program's
            // cudaStreamSynchronize does, not by polling with a timeout:
            // the warm-up above has shown that these copies finish.
            let mut host = Vec::with_capacity(cfg.lat_iters as usize);
            for _ in 0..cfg.lat_iters {
                let t0 = Instant::now();
                self.enqueue(f, size)?;
                f.stream.synchronize().map_err(cuda_err("waiting for a copy"))?;
                host.push(t0.elapsed().as_secs_f64());
            }
            // The device's own time of each copy, in a pass of its own.
            let mut device = Vec::with_capacity(cfg.lat_iters as usize);
            for _ in 0..cfg.lat_iters {
                f.start.record(&f.stream).map_err(cuda_err("recording an event"))?;
                self.enqueue(f, size)?;
                f.end.record(&f.stream).map_err(cuda_err("recording an event"))?;
                f.end.synchronize().map_err(cuda_err("waiting for a copy"))?;
                device.push(f.start.elapsed_ms(&f.end).map_err(cuda_err("reading event times"))? as f64 * 1e-3);
            }
            let wrong_words = self.verify(&mut f.dst, size, f.seed, f.issuer)?;
            rows.push(LatencyRow {
                size,
                host: Summary::of(&host).scaled(1e6),
                device: Some(Summary::of(&device).scaled(1e6)),
                wrong_words,
            });
        }
        Ok(LatencySeries { label: label.to_string(), placement: placement.to_string(), rows })
    }
}

/// Records where the host side of GPU `gpu`'s copies ran: `placement`, with
/// where the pages of the host `buffers` are now that they were written.
fn host_side<'a>(
    rec: &mut TestRecord,
    gpu: usize,
    mut placement: Placement,
    buffers: impl IntoIterator<Item = &'a Buffer>,
) {
    let ranges: Vec<(usize, usize)> =
        buffers.into_iter().filter_map(|b| Some((b.host_ptr()? as usize, b.bytes() as usize))).collect();
    placement.count_pages(&ranges);
    rec.numa.push(HostSide { gpu, placement });
}

/// A latency row timed on the host alone (CPU copies).
fn cpu_latency_row(size: u64, seconds: &[f64], wrong_words: u64) -> LatencyRow {
    LatencyRow { size, host: Summary::of(seconds).scaled(1e6), device: None, wrong_words }
}
