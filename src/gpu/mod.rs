//! A thin layer over cudarc's driver API, below the workloads and the
//! transports: the GPUs of this process with their identity, CUDA errors as
//! qbench errors, and waiting on events with a deadline; the memory the
//! driver allocates (`memory.rs`), its copies (`copy.rs`), its questions
//! about devices (`driver.rs`), gdrcopy's CPU mappings (`gdrcopy/`), the
//! kernels (`kernels.rs`) and the launches of the copy test's kernels
//! (`copy_kernels.rs`). Each raw call sits in one small function there,
//! with its invariant, so that the layers above call safe functions.

pub mod copy;
pub mod copy_kernels;
pub mod driver;
pub mod gdrcopy;
pub mod kernels;
pub mod memory;

pub use memory::{DeviceBuffer, Pinned};

use crate::error::{Error, Result};
use crate::libs::{self, Library};
use cudarc::driver::sys::CUdevice_attribute as Attr;
use cudarc::driver::{CudaContext, CudaEvent, CudaStream, DriverError, result};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// The primary contexts held while a [`KeepContexts`] lives: a context
/// whose last holder lets go is destroyed, and the next workload to open
/// the GPU makes it again (a fifth of a second or more under load).
static KEPT: Mutex<Option<Vec<Arc<CudaContext>>>> = Mutex::new(None);

/// While it lives, every GPU this process opens keeps its context until
/// the guard is dropped: for a run of several workloads (check's steps).
pub struct KeepContexts(());

impl KeepContexts {
    pub fn start() -> KeepContexts {
        *KEPT.lock().unwrap_or_else(PoisonError::into_inner) = Some(Vec::new());
        KeepContexts(())
    }
}

impl Drop for KeepContexts {
    fn drop(&mut self) {
        KEPT.lock().unwrap_or_else(PoisonError::into_inner).take();
    }
}

/// Holds `ctx` while a [`KeepContexts`] lives, unless its GPU's is held already.
fn keep(ctx: &Arc<CudaContext>) {
    if let Some(kept) = KEPT.lock().unwrap_or_else(PoisonError::into_inner).as_mut()
        && !kept.iter().any(|k| k.ordinal() == ctx.ordinal())
    {
        kept.push(ctx.clone());
    }
}

/// A CUDA error as a qbench runtime error naming what was being done.
pub fn cuda_err(what: impl std::fmt::Display) -> impl FnOnce(DriverError) -> Error {
    move |e| {
        let text = e.error_string().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        Error::Runtime(format!("CUDA error while {what}: {:?} ({text})", e.0))
    }
}

/// Loads the driver and counts the GPUs; a machine without them is exit 3.
pub fn device_count() -> Result<usize> {
    libs::require(&[Library::Driver], None)?;
    match result::init() {
        Ok(()) => {}
        Err(e) if e.0 == cudarc::driver::sys::cudaError_enum::CUDA_ERROR_NO_DEVICE => return Ok(0),
        Err(e) => return Err(cuda_err("initialising the CUDA driver")(e)),
    }
    let n = result::device::get_count().map_err(cuda_err("counting GPUs"))?;
    Ok(n.max(0) as usize)
}

/// Checks that `wanted` GPUs exist, in nccl-tests' words when they do not.
pub fn require_gpus(wanted: usize) -> Result<usize> {
    let found = device_count()?;
    if found == 0 {
        return Err(Error::Missing(
            "no CUDA GPU is visible (check nvidia-smi and CUDA_VISIBLE_DEVICES), or use --transport cpu".into(),
        ));
    }
    if wanted > found {
        return Err(Error::Usage(format!(
            "Invalid number of GPUs: {wanted} requested but only {found} were found (a process drives -t × -g GPUs)"
        )));
    }
    Ok(found)
}

/// The GPUs this process drives: `local` of them, after those of the
/// processes before it on its node (nccl-tests' choice).
pub fn open_local_gpus(local: usize, world: &dyn crate::world::World) -> Result<Vec<Gpu>> {
    let first = world.local_rank() * local;
    let found = require_gpus(local)?;
    if first + local > found {
        return Err(Error::Usage(format!(
            "this process (local rank {}) needs GPUs {first}..{} but the node has {found}: start fewer processes per node or lower -g",
            world.local_rank(),
            first + local - 1
        )));
    }
    (first..first + local).map(Gpu::open).collect()
}

/// The GPUs this process drives, as [`open_local_gpus`]; but where each
/// process drives one GPU and the node's processes outnumber its GPUs, they
/// take the GPUs in turn (two ranks on one GPU), and the second value says
/// how many processes share each (1 when none does).
pub fn open_local_gpus_shared(local: usize, world: &dyn crate::world::World) -> Result<(Vec<Gpu>, usize)> {
    let found = require_gpus(local)?;
    let procs = world.local_size();
    if local == 1 && procs > found {
        return Ok((vec![Gpu::open(world.local_rank() % found)?], procs.div_ceil(found)));
    }
    Ok((open_local_gpus(local, world)?, 1))
}

/// One GPU of this process: its primary context, one stream, its identity.
pub struct Gpu {
    pub ordinal: usize,
    pub ctx: Arc<CudaContext>,
    pub stream: Arc<CudaStream>,
    pub name: String,
    /// "dddd:bb:dd", as nccl-tests prints it.
    pub bus_id: String,
    pub total_mem: u64,
    pub compute_capability: (i32, i32),
}

impl Gpu {
    pub fn open(ordinal: usize) -> Result<Gpu> {
        let what = format!("opening GPU {ordinal}");
        let ctx = CudaContext::new(ordinal).map_err(cuda_err(&what))?;
        keep(&ctx);
        // SAFETY: qbench orders its own work explicitly with streams and
        // events; cudarc's per-buffer events would add work to every launch.
        unsafe { ctx.disable_event_tracking() };
        let attr = |a| ctx.attribute(a).map_err(cuda_err(&what));
        let bus_id = format!(
            "{:04x}:{:02x}:{:02x}",
            attr(Attr::CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID)?,
            attr(Attr::CU_DEVICE_ATTRIBUTE_PCI_BUS_ID)?,
            attr(Attr::CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID)?
        );
        let compute_capability = ctx.compute_capability().map_err(cuda_err(&what))?;
        let stream = ctx.new_stream().map_err(cuda_err(&what))?;
        Ok(Gpu {
            ordinal,
            name: ctx.name().map_err(cuda_err(&what))?,
            total_mem: ctx.total_mem().map_err(cuda_err(&what))? as u64,
            ctx,
            stream,
            bus_id,
            compute_capability,
        })
    }

    /// This GPU as rank `rank` of the `# Using devices` block.
    pub fn rank_info(&self, rank: usize) -> crate::record::RankInfo {
        crate::record::RankInfo {
            rank,
            group: 0,
            pid: std::process::id(),
            host: crate::host::short_hostname(),
            device: self.ordinal,
            bus_id: self.bus_id.clone(),
            name: self.name.clone(),
        }
    }

    /// Free device memory now, in bytes.
    pub fn free_mem(&self) -> Result<u64> {
        Ok(self.ctx.mem_get_info().map_err(cuda_err("reading free GPU memory"))?.0 as u64)
    }

    /// An uninitialised device buffer of `bytes` bytes.
    pub fn alloc(&self, bytes: u64) -> Result<DeviceBuffer> {
        self.ctx.bind_to_thread().map_err(cuda_err("binding a context"))?;
        DeviceBuffer::new(&self.ctx, bytes as usize).map_err(|e| {
            cuda_err(format!("allocating {} on GPU {}", crate::units::format_size(bytes), self.ordinal))(e)
        })
    }

    /// An event that records time.
    pub fn timing_event(&self) -> Result<CudaEvent> {
        self.ctx
            .new_event(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(cuda_err("creating an event"))
    }

    /// Sets every byte of `len` bytes at `ptr` to `value`, in stream order.
    pub fn memset(&self, ptr: u64, value: u8, len: u64) -> Result<()> {
        if len == 0 {
            return Ok(());
        }
        self.ctx.bind_to_thread().map_err(cuda_err("binding a context"))?;
        // SAFETY: `ptr..ptr+len` lies inside a live allocation of this GPU
        // (callers pass offsets within their own buffers).
        unsafe { result::memset_d8_async(ptr, value, len as usize, self.stream.cu_stream()) }
            .map_err(cuda_err("setting device memory"))
    }
}

/// Waits until `done`, spinning for the first 10 ms (a sleep would add to
/// the time of short operations, as nccl-tests' stream query loop avoids),
/// then polling every 20 µs. Every half millisecond it checks `poll`
/// (asynchronous library errors) and an interruption, and gives up after
/// `timeout`.
fn wait_until(
    timeout: Option<Duration>,
    mut poll: impl FnMut() -> Result<()>,
    mut done: impl FnMut() -> Result<bool>,
) -> Result<()> {
    let start = Instant::now();
    let mut polled = start;
    loop {
        if done()? {
            return Ok(());
        }
        let now = Instant::now();
        if now - polled > Duration::from_micros(500) {
            polled = now;
            poll()?;
            crate::interrupt::check()?;
            if let Some(t) = timeout
                && now - start > t
            {
                return Err(Error::Runtime(format!("timeout: the GPUs did not finish within {} s (-T)", t.as_secs())));
            }
        }
        if now - start > Duration::from_millis(10) {
            std::thread::sleep(Duration::from_micros(20));
        } else {
            std::hint::spin_loop();
        }
    }
}

/// Waits until every event has completed (see [`wait_until`]).
pub fn wait_events(events: &[&CudaEvent], timeout: Option<Duration>, poll: impl FnMut() -> Result<()>) -> Result<()> {
    wait_until(timeout, poll, || {
        let mut all = true;
        for e in events {
            all &= e.try_is_complete().map_err(cuda_err("waiting for the GPU"))?;
        }
        Ok(all)
    })
}

/// Waits until every stream has run out of work, by cuStreamQuery as
/// nccl-tests' completeColl does (see [`wait_until`]).
pub fn wait_streams(
    streams: &[&CudaStream],
    timeout: Option<Duration>,
    poll: impl FnMut() -> Result<()>,
) -> Result<()> {
    use cudarc::driver::sys::CUresult;
    wait_until(timeout, poll, || {
        for s in streams {
            // SAFETY: a plain query of a live stream of this process.
            match unsafe { cudarc::driver::sys::cuStreamQuery(s.cu_stream()) } {
                CUresult::CUDA_SUCCESS => {}
                CUresult::CUDA_ERROR_NOT_READY => return Ok(false),
                e => return Err(cuda_err("waiting for the GPU")(DriverError(e))),
            }
        }
        Ok(true)
    })
}

/// Enables direct access from `from`'s kernels and copies to `to`'s memory,
/// or says why it is not possible.
pub fn enable_peer(from: &Gpu, to: &Gpu) -> std::result::Result<(), String> {
    use cudarc::driver::sys;
    if !matches!(driver::can_access_peer(from.ctx.cu_device(), to.ctx.cu_device()), Ok(true)) {
        return Err(format!(
            "GPU {} cannot reach GPU {}'s memory (no NVLink or PCIe peer path, see nvidia-smi topo -m)",
            from.ordinal, to.ordinal
        ));
    }
    from.ctx.bind_to_thread().map_err(|e| format!("{e:?}"))?;
    // SAFETY: enables access from the current context (from's) to to's; an
    // already-enabled pair answers PEER_ACCESS_ALREADY_ENABLED.
    match unsafe { sys::cuCtxEnablePeerAccess(to.ctx.cu_ctx(), 0) } {
        sys::CUresult::CUDA_SUCCESS | sys::CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED => Ok(()),
        e => Err(format!("enabling peer access from GPU {} to GPU {} failed: {e:?}", from.ordinal, to.ordinal)),
    }
}
