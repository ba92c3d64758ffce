//! The nccl transport: each rank is one GPU with device buffers, and every
//! collective is its NCCL calls on every GPU inside one ncclGroupStart/End.
//! Timing is by the host clock around back-to-back launches ([`TIMING`]).

use super::{Buf, Loop, Op, Primitives, Region, SetupMemory, Timing, Transport};
use crate::dtype::{DataType, Element, RedOp};
use crate::error::{Error, Result};
use crate::gpu::{self, DeviceBuffer, Gpu, cuda_err};
use crate::interrupt::Halt;
use crate::libs::{self, Library};
use crate::record::collective::{BufferSetup, Registration};
use crate::record::{LibraryInfo, RankInfo};
use crate::transport::pattern_kernels::PatternKernels;
use crate::world::World;
use cudarc::driver::{CudaContext, CudaEvent, CudaStream};
use cudarc::nccl::result as nccl;
use cudarc::nccl::sys;
use std::ffi::{c_char, c_int, c_uint, c_void};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

const POISON: u8 = 0xff;

/// How the nccl transport times a cell, for --help and the records.
pub const TIMING: &str = "time: the host clock around -n back-to-back launches (-G: graph launches; -z: each followed by a wait, and a barrier for 1 and 3, -z 3 timing the launches and waits alone), until a stream query finds every GPU idle, divided by the operations, as nccl-tests times; cputime (-C): the same clock when the last launch returned; iterations: a separate pass with CUDA events around each launch, reported as percentiles (and -I's columns) only; buffers from ncclMemAlloc (NCCL 2.19 and later, else cuMemAlloc) and communicators as nccl-tests 2.19 makes them (NCCL 2.28 and later: ncclCommInitRankConfig with nvlinkCentricSched = 1)";

fn nccl_type(t: DataType) -> sys::ncclDataType_t {
    use sys::ncclDataType_t::*;
    match t {
        DataType::Int8 => ncclInt8,
        DataType::Uint8 => ncclUint8,
        DataType::Int32 => ncclInt32,
        DataType::Uint32 => ncclUint32,
        DataType::Int64 => ncclInt64,
        DataType::Uint64 => ncclUint64,
        DataType::Half => ncclFloat16,
        DataType::Float => ncclFloat32,
        DataType::Double => ncclFloat64,
        DataType::Bfloat16 => ncclBfloat16,
        DataType::F8e4m3 => ncclFloat8e4m3,
        DataType::F8e5m2 => ncclFloat8e5m2,
    }
}

/// NCCL's built-in op; None for mulsum, an op made per call (PreMulSum).
fn nccl_op(op: RedOp) -> Option<sys::ncclRedOp_t> {
    use sys::ncclRedOp_t::*;
    Some(match op {
        RedOp::Sum => ncclSum,
        RedOp::Prod => ncclProd,
        RedOp::Max => ncclMax,
        RedOp::Min => ncclMin,
        RedOp::Avg => ncclAvg,
        RedOp::MulSum => return None,
    })
}

/// NCCL's reductions with the op as a plain int, and the making of a
/// PreMulSum op (NCCL 2.11 and later): a made op is a value no enum of the
/// bindings lists, so it never passes through one.
#[derive(Clone, Copy)]
struct PreMulSum {
    /// ncclRedOpCreatePreMulSum(op, scalar, datatype, residence, comm).
    create:
        unsafe extern "C" fn(*mut c_int, *mut c_void, sys::ncclDataType_t, c_int, sys::ncclComm_t) -> sys::ncclResult_t,
    /// ncclRedOpDestroy(op, comm).
    destroy: unsafe extern "C" fn(c_int, sys::ncclComm_t) -> sys::ncclResult_t,
    /// ncclAllReduce(send, recv, count, datatype, op, comm, stream).
    all_reduce: unsafe extern "C" fn(
        *const c_void,
        *mut c_void,
        usize,
        sys::ncclDataType_t,
        c_int,
        sys::ncclComm_t,
        sys::cudaStream_t,
    ) -> sys::ncclResult_t,
    /// ncclReduce(send, recv, count, datatype, op, root, comm, stream).
    reduce: unsafe extern "C" fn(
        *const c_void,
        *mut c_void,
        usize,
        sys::ncclDataType_t,
        c_int,
        c_int,
        sys::ncclComm_t,
        sys::cudaStream_t,
    ) -> sys::ncclResult_t,
    /// ncclReduceScatter(send, recv, recvcount, datatype, op, comm, stream).
    reduce_scatter: unsafe extern "C" fn(
        *const c_void,
        *mut c_void,
        usize,
        sys::ncclDataType_t,
        c_int,
        sys::ncclComm_t,
        sys::cudaStream_t,
    ) -> sys::ncclResult_t,
}

/// ncclScalarHostImmediate: the scalar is read from host memory at the call.
const SCALAR_HOST_IMMEDIATE: c_int = 1;

impl PreMulSum {
    /// The functions, where the loaded NCCL has them (2.11 and later).
    fn load(version: i64) -> Option<PreMulSum> {
        Some(PreMulSum {
            create: nccl_symbol("ncclRedOpCreatePreMulSum", 21100, version)?,
            destroy: nccl_symbol("ncclRedOpDestroy", 21100, version)?,
            all_reduce: nccl_symbol("ncclAllReduce", 21100, version)?,
            reduce: nccl_symbol("ncclReduce", 21100, version)?,
            reduce_scatter: nccl_symbol("ncclReduceScatter", 21100, version)?,
        })
    }
}

/// An NCCL error with NCCL's own last-error text.
fn nccl_err(what: impl std::fmt::Display) -> impl FnOnce(nccl::NcclError) -> Error {
    move |e| {
        // SAFETY: ncclGetLastError accepts a null communicator and returns a
        // pointer to a NUL-terminated string owned by NCCL (or null).
        let last = unsafe {
            let p = sys::ncclGetLastError(std::ptr::null_mut());
            if p.is_null() { String::new() } else { std::ffi::CStr::from_ptr(p).to_string_lossy().into_owned() }
        };
        Error::Runtime(format!(
            "NCCL error while {what}: {:?}{}",
            e.0,
            if last.is_empty() { String::new() } else { format!(" ({last})") }
        ))
    }
}

/// A communicator handle that may move between threads.
#[derive(Clone, Copy)]
struct Comm(sys::ncclComm_t);

// SAFETY: NCCL communicators may be used from any thread; qbench uses each
// one from a single thread at a time (the thread driving its rank, or the
// main thread while no rank thread runs).
unsafe impl Send for Comm {}
// SAFETY: as for Send: a communicator is never used from two threads at once.
unsafe impl Sync for Comm {}

/// ncclConfig_t as NCCL 2.28's nccl.h lays it out, through its last field
/// that qbench sets. NCCL copies `size` bytes of it and gives every field
/// that `version` does not know its default, so the struct serves any NCCL
/// from 2.28 on; cudarc's bindings hold the 2.24 layout.
#[repr(C)]
struct CommConfig {
    size: usize,
    magic: c_uint,
    version: c_uint,
    blocking: c_int,
    cga_cluster_size: c_int,
    min_ctas: c_int,
    max_ctas: c_int,
    net_name: *const c_char,
    split_share: c_int,
    traffic_class: c_int,
    comm_name: *const c_char,
    collnet_enable: c_int,
    cta_policy: c_int,
    shrink_share: c_int,
    nvls_ctas: c_int,
    n_channels_per_net_peer: c_int,
    nvlink_centric_sched: c_int,
}

/// NCCL_VERSION(2, 28, 0): the first NCCL with nvlinkCentricSched.
const CONFIG_VERSION: i64 = 22800;

impl CommConfig {
    /// NCCL_CONFIG_INITIALIZER of NCCL 2.28 (every field undefined, so
    /// NCCL's default) with nvlinkCentricSched = 1, as nccl-tests 2.19
    /// creates its communicators with NCCL 2.28 and later.
    fn nccl_tests(cta_policy: Option<i32>) -> CommConfig {
        const UNDEF: c_int = c_int::MIN; // NCCL_CONFIG_UNDEF_INT
        CommConfig {
            size: std::mem::size_of::<CommConfig>(),
            magic: 0xcafe_beef, // NCCL_API_MAGIC
            version: CONFIG_VERSION as c_uint,
            blocking: UNDEF,
            cga_cluster_size: UNDEF,
            min_ctas: UNDEF,
            max_ctas: UNDEF,
            net_name: std::ptr::null(),
            split_share: UNDEF,
            traffic_class: UNDEF,
            comm_name: std::ptr::null(),
            collnet_enable: UNDEF,
            cta_policy: cta_policy.unwrap_or(UNDEF),
            shrink_share: UNDEF,
            nvls_ctas: UNDEF,
            n_channels_per_net_peer: UNDEF,
            nvlink_centric_sched: 1,
        }
    }
}

/// One NCCL communicator per GPU of this process, all ranks of one clique
/// over every process of the world: rank 0 makes the id and broadcasts it.
/// Created as nccl-tests 2.19 creates its own: with NCCL 2.28 and later,
/// ncclCommInitRankConfig with nvlinkCentricSched = 1 (NVLink-centric
/// scheduling of point-to-point operations) and every other field NCCL's
/// default; before 2.28, ncclCommInitRank.
pub struct Communicators {
    comms: Vec<Comm>,
    aborted: bool,
}

impl Communicators {
    /// `gpus` become ranks `world.rank() × gpus.len()` onwards of
    /// `world.size() × gpus.len()`; `cta_policy` is nccl-tests' `-x`
    /// (NCCL 2.28 and later), None NCCL's default.
    pub fn new(gpus: &[Gpu], world: &dyn World, cta_policy: Option<i32>) -> Result<Communicators> {
        let local = gpus.len();
        let mut id = if world.rank() == 0 {
            nccl::get_uniqueid().map_err(nccl_err("creating the communicator id"))?
        } else {
            sys::ncclUniqueId { internal: [0; 128] }
        };
        let mut id_bytes: Vec<u8> = id.internal.iter().map(|&c| c as u8).collect();
        world.broadcast(0, &mut id_bytes);
        id.internal.iter_mut().zip(&id_bytes).for_each(|(c, &b)| *c = b as std::ffi::c_char);
        let (first_rank, nranks) = (world.rank() * local, world.size() * local);
        let version = nccl::get_nccl_version().map_err(nccl_err("reading the NCCL version"))? as i64;
        let configured = version >= CONFIG_VERSION;
        if let (Some(p), false) = (cta_policy, configured) {
            return Err(Error::Missing(format!(
                "-x {p} (NCCL's CTA policy) needs NCCL 2.28 or later; this one is {}",
                libs::nccl_version_text(version)
            )));
        }
        let mut comms = vec![std::ptr::null_mut(); local];
        nccl::group_start().map_err(nccl_err("creating communicators"))?;
        for (i, g) in gpus.iter().enumerate() {
            g.ctx.bind_to_thread().map_err(cuda_err("binding a context"))?;
            let rank = (first_rank + i) as i32;
            let created = if configured {
                let mut config = CommConfig::nccl_tests(cta_policy);
                // SAFETY: `comms[i]` is a valid out-pointer; the id is shared
                // by every rank and ranks are distinct; `config` is the
                // NCCL 2.28 layout this library (2.28 or later) reads `size`
                // bytes of, and it outlives the call, which copies it.
                unsafe { sys::ncclCommInitRankConfig(&mut comms[i], nranks as i32, id, rank, (&raw mut config).cast()) }
                    .result()
            } else {
                // SAFETY: as above, without a config.
                unsafe { nccl::comm_init_rank(&mut comms[i], nranks as i32, id, rank) }
            };
            created.map_err(nccl_err(format!("creating the communicator of GPU {}", g.ordinal)))?;
        }
        nccl::group_end().map_err(nccl_err("creating communicators"))?;
        Ok(Communicators { comms: comms.into_iter().map(Comm).collect(), aborted: false })
    }

    fn get(&self, i: usize) -> sys::ncclComm_t {
        self.comms[i].0
    }

    /// An error any communicator reported asynchronously.
    fn async_error(&self) -> Result<()> {
        for (i, c) in self.comms.iter().enumerate() {
            let mut state = sys::ncclResult_t::ncclSuccess;
            // SAFETY: the communicator is live (not destroyed, not aborted).
            unsafe { sys::ncclCommGetAsyncError(c.0, &mut state) }
                .result()
                .and_then(|_| state.result())
                .map_err(nccl_err(format!("running on local GPU {i}")))?;
        }
        Ok(())
    }

    /// Waits for the given events, aborting every communicator on an
    /// asynchronous error, an interruption, or when `timeout` passes.
    pub fn wait(&mut self, events: &[&CudaEvent], timeout: Option<Duration>) -> Result<()> {
        let result = gpu::wait_events(events, timeout, || self.async_error());
        if result.is_err() {
            self.abort();
        }
        result
    }

    /// Aborts every communicator (once): a failed or interrupted operation
    /// leaves none waiting for its peers.
    pub fn abort(&mut self) {
        if !self.aborted {
            for c in &self.comms {
                // SAFETY: each communicator is aborted once and never used after.
                let _ = unsafe { nccl::comm_abort(c.0) };
            }
            self.aborted = true;
        }
    }

    /// Enqueues, as one group, for each local GPU i with `moves[i]` =
    /// (send, recv, bytes, to, from): `bytes` from `send` to rank `to` and
    /// `bytes` from rank `from` into `recv`, in pieces of at most `piece`.
    pub fn exchange(&self, gpus: &[&Gpu], moves: &[Move], piece: u64) -> Result<()> {
        let t = sys::ncclDataType_t::ncclUint8;
        nccl::group_start().map_err(nccl_err("starting a group"))?;
        for (i, (g, m)) in gpus.iter().zip(moves).enumerate() {
            let Move { send, recv, bytes, to, from } = *m;
            let s = g.stream.cu_stream() as sys::cudaStream_t;
            let mut off = 0;
            while off < bytes {
                let len = piece.min(bytes - off);
                // SAFETY: the ranges lie in this GPU's buffers (callers pass
                // their own allocations and sizes); stream and communicator
                // belong to this GPU.
                unsafe {
                    nccl::send((send + off) as *const c_void, len as usize, t, to as i32, self.get(i), s).and_then(
                        |_| nccl::recv((recv + off) as *mut c_void, len as usize, t, from as i32, self.get(i), s),
                    )
                }
                .map_err(nccl_err(format!("exchanging with ranks {to} and {from} on GPU {}", g.ordinal)))?;
                off += len;
            }
        }
        nccl::group_end().map_err(nccl_err("launching a group"))?;
        Ok(())
    }
}

impl Drop for Communicators {
    fn drop(&mut self) {
        if !self.aborted {
            for c in &self.comms {
                // SAFETY: each live communicator is destroyed once, here.
                let _ = unsafe { nccl::comm_destroy(c.0) };
            }
        }
    }
}

/// One rank's part of a point-to-point exchange (device addresses, bytes,
/// the rank it sends to and the rank it receives from).
#[derive(Debug, Clone, Copy)]
pub struct Move {
    pub send: u64,
    pub recv: u64,
    pub bytes: u64,
    pub to: usize,
    pub from: usize,
}

/// The NCCL library in use, as the records describe it.
pub fn library_info() -> Result<LibraryInfo> {
    let code = nccl::get_nccl_version().map_err(nccl_err("reading the NCCL version"))? as i64;
    Ok(LibraryInfo {
        name: "NCCL".into(),
        version_code: code,
        version: libs::nccl_version_text(code),
        path: libs::loaded_path(Library::Nccl).map(|p| p.display().to_string()),
    })
}

/// A rank's send or receive buffer: from ncclMemAlloc where NCCL has it
/// (2.19 and later), as nccl-tests allocates, else from cuMemAlloc.
enum Allocation {
    Nccl { ptr: u64, ctx: Arc<CudaContext> },
    Cuda(DeviceBuffer),
}

/// NCCL_VERSION(2, 19, 0): ncclMemAlloc and ncclCommRegister.
const MEM_ALLOC_VERSION: i64 = 21900;
/// NCCL_VERSION(2, 27, 0): ncclCommWindowRegister.
const WINDOW_VERSION: i64 = 22700;
/// NCCL_WIN_COLL_SYMMETRIC.
const WIN_COLL_SYMMETRIC: c_int = 1;

impl Allocation {
    fn alloc(gpu: &Gpu, bytes: u64, nccl_alloc: bool) -> Result<Allocation> {
        if !nccl_alloc {
            return gpu.alloc(bytes).map(Allocation::Cuda);
        }
        gpu.ctx.bind_to_thread().map_err(cuda_err("binding a context"))?;
        let mut ptr = std::ptr::null_mut();
        // SAFETY: ncclMemAlloc (NCCL 2.19 and later, checked by the caller)
        // writes a fresh allocation on the current device to `ptr` or fails.
        unsafe { sys::ncclMemAlloc(&mut ptr, bytes.max(1) as usize) }.result().map_err(nccl_err(format!(
            "allocating {} on GPU {} (ncclMemAlloc)",
            crate::units::format_size(bytes),
            gpu.ordinal
        )))?;
        Ok(Allocation::Nccl { ptr: ptr as u64, ctx: gpu.ctx.clone() })
    }

    fn ptr(&self) -> u64 {
        match self {
            Allocation::Nccl { ptr, .. } => *ptr,
            Allocation::Cuda(b) => b.ptr(),
        }
    }
}

impl Drop for Allocation {
    fn drop(&mut self) {
        if let Allocation::Nccl { ptr, ctx } = self {
            let _ = ctx.bind_to_thread();
            // SAFETY: the pointer came from ncclMemAlloc and is freed once;
            // every registration of it was undone before (Nccl::deregister).
            let _ = unsafe { sys::ncclMemFree(*ptr as *mut c_void) };
        }
    }
}

/// A buffer's registration with its rank's communicator (`-R`): NCCL's
/// handle, kept as an address.
#[derive(Clone, Copy)]
enum Registered {
    Local(usize),
    Window(usize),
}

/// ncclCommWindowRegister(comm, buff, size, win, winFlags).
type WindowRegisterFn =
    unsafe extern "C" fn(sys::ncclComm_t, *mut c_void, usize, *mut *mut c_void, c_int) -> sys::ncclResult_t;
/// ncclCommWindowDeregister(comm, win).
type WindowDeregisterFn = unsafe extern "C" fn(sys::ncclComm_t, *mut c_void) -> sys::ncclResult_t;

struct Rank {
    gpu: Gpu,
    kernels: PatternKernels,
    send: Option<Allocation>,
    recv: Option<Allocation>,
    /// The registrations of `send` and `recv`, undone before they are freed.
    registered: Vec<Registered>,
    wrong: DeviceBuffer,
}

/// What a collective run asks of the transport besides its ranks.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// -T: abort the communicators when the GPUs take longer (0: never).
    pub timeout_s: u64,
    /// -R.
    pub register: Registration,
    /// -x.
    pub cta_policy: Option<i32>,
    /// -u: elements by which both buffers start past their allocation.
    pub unalign: u64,
}

pub struct Nccl {
    // Dropped first: the communicators need the GPUs' contexts alive.
    comms: Communicators,
    ranks: Vec<Rank>,
    /// Ranks per launching thread (nccl-tests -g); ranks.len() / this = -t.
    per_thread: usize,
    info: Vec<RankInfo>,
    first_rank: usize,
    nranks: usize,
    library: LibraryInfo,
    timeout: Option<Duration>,
    /// Bytes of each rank's send and receive buffers.
    allocated: u64,
    /// NCCL's own all-to-all, gather and scatter (NCCL 2.28 and later),
    /// looked up at run time.
    alltoall: Option<AllToAllFn>,
    gather: Option<RootedFn>,
    scatter: Option<RootedFn>,
    premul_sum: Option<PreMulSum>,
    /// Why the fp8 types cannot run here, if they cannot.
    fp8: Option<String>,
    unalign: u64,
    /// How the buffers are allocated and registered, as it will happen.
    setup: BufferSetup,
    memory: SetupMemory,
}

/// NCCL_VERSION(2, 24, 0): ncclFloat8e4m3 and ncclFloat8e5m2.
const FP8_VERSION: i64 = 22400;

/// Why NCCL `version` on `ranks`' GPUs cannot run the fp8 types, if it
/// cannot: they need NCCL 2.24 and, as nccl-tests filters them, GPUs of
/// compute capability 9.0 or later.
fn fp8_refused(version: i64, ranks: &[Rank]) -> Option<String> {
    if version < FP8_VERSION {
        return Some(format!("NCCL {} has no fp8 types (2.24 and later)", libs::nccl_version_text(version)));
    }
    ranks.iter().map(|r| &r.gpu).find(|g| g.compute_capability < (9, 0)).map(|g| {
        let (major, minor) = g.compute_capability;
        format!("fp8 collectives need compute capability 9.0 or later; GPU {} is {major}.{minor}", g.ordinal)
    })
}

/// ncclAlltoAll(sendbuff, recvbuff, count, datatype, comm, stream).
type AllToAllFn = unsafe extern "C" fn(
    *const c_void,
    *mut c_void,
    usize,
    sys::ncclDataType_t,
    sys::ncclComm_t,
    sys::cudaStream_t,
) -> sys::ncclResult_t;

/// ncclGather and ncclScatter(sendbuff, recvbuff, count, datatype, root, comm, stream).
type RootedFn = unsafe extern "C" fn(
    *const c_void,
    *mut c_void,
    usize,
    sys::ncclDataType_t,
    c_int,
    sys::ncclComm_t,
    sys::cudaStream_t,
) -> sys::ncclResult_t;

/// A function of the loaded NCCL that cudarc's bindings (NCCL 2.24's) do
/// not carry, where that NCCL has it (`since` and later).
fn nccl_symbol<F: Copy>(name: &str, since: i64, version: i64) -> Option<F> {
    if version < since {
        return None;
    }
    let path = libs::loaded_path(Library::Nccl)?;
    // SAFETY: the library is already loaded in this process, so opening it
    // again only takes a reference; its initialisers have run.
    let lib = unsafe { libloading::Library::new(&path) }.ok()?;
    let symbol = format!("{name}\0");
    // SAFETY: callers name F as nccl.h declares `name` in the versions
    // from `since` on.
    let f: F = unsafe { *lib.get::<F>(symbol.as_bytes()).ok()? };
    // The library stays loaded for the process: NCCL is never unloaded.
    std::mem::forget(lib);
    Some(f)
}

/// How NCCL `version` allocates and registers the buffers for `-R register`,
/// as nccl-tests 2.19 does: ncclMemAlloc from NCCL 2.19 on; -R needs 2.19;
/// -R 2 before NCCL 2.27 registers locally, with nccl-tests' own words.
fn buffer_setup(register: Registration, version: i64) -> Result<BufferSetup> {
    let nccl_alloc = version >= MEM_ALLOC_VERSION;
    if register != Registration::None && !nccl_alloc {
        return Err(Error::Missing(format!(
            "-R {} (buffer registration) needs NCCL 2.19 or later; this one is {}",
            register.code(),
            libs::nccl_version_text(version)
        )));
    }
    let (register, note) = if register == Registration::Symmetric && version < WINDOW_VERSION {
        (
            Registration::Local,
            Some("Option -R 2 (symmetric) is not supported before NCCL 2.27. Defaulting to local registration".into()),
        )
    } else {
        (register, None)
    };
    Ok(BufferSetup { allocator: if nccl_alloc { "ncclMemAlloc" } else { "cuMemAlloc" }.into(), register, note })
}

/// Free memory of each GPU, bytes.
fn free_of(gpus: &[&Gpu]) -> Result<Vec<i64>> {
    gpus.iter().map(|g| g.free_mem().map(|m| m as i64)).collect()
}

/// The most memory any one GPU lost between two readings.
fn most_taken(before: &[i64], after: &[i64]) -> i64 {
    before.iter().zip(after).map(|(b, a)| b - a).max().unwrap_or(0)
}

impl Nccl {
    /// Opens `threads` × `per_thread` GPUs of this process as its ranks of
    /// one communicator over every process of `world` (the GPUs after those
    /// of the processes before this one on the node, as nccl-tests picks
    /// them); each of `threads` threads launches on its `per_thread` GPUs.
    /// The check kernels are built for `collectives`.
    pub fn new(
        threads: usize,
        per_thread: usize,
        options: Options,
        world: &dyn World,
        collectives: &[&dyn super::Collective],
    ) -> Result<Nccl> {
        let local = threads * per_thread;
        // Each part of the setup can take seconds on a node's first run: a
        // signal is honoured between them.
        crate::interrupt::step("opening the GPUs");
        let gpus = gpu::open_local_gpus(local, world)?;
        let library = library_info()?;
        let version = library.version_code;
        let setup = buffer_setup(options.register, version)?;
        crate::world::check_interrupt(world)?;
        crate::interrupt::step("creating the NCCL communicators");
        let before = free_of(&gpus.iter().collect::<Vec<_>>())?;
        let comms = Communicators::new(&gpus, world, options.cta_policy)?;
        let communicators = most_taken(&before, &free_of(&gpus.iter().collect::<Vec<_>>())?);
        crate::world::check_interrupt(world)?;
        let (first_rank, nranks) = (world.rank() * local, world.size() * local);
        let mut ranks = Vec::with_capacity(local);
        let mut info = Vec::with_capacity(local);
        for (i, gpu) in gpus.into_iter().enumerate() {
            info.push(gpu.rank_info(first_rank + i));
            crate::interrupt::step(format!("building the check kernels on GPU {}", gpu.ordinal));
            crate::world::check_interrupt(world)?;
            let kernels = PatternKernels::load(&gpu, collectives)?;
            let wrong = gpu.alloc(8)?;
            ranks.push(Rank { gpu, kernels, send: None, recv: None, registered: Vec::new(), wrong });
        }
        let fp8 = fp8_refused(version, &ranks);
        Ok(Nccl {
            ranks,
            comms,
            per_thread,
            info,
            first_rank,
            nranks,
            alltoall: nccl_symbol("ncclAlltoAll", 22800, version),
            gather: nccl_symbol("ncclGather", 22800, version),
            scatter: nccl_symbol("ncclScatter", 22800, version),
            premul_sum: PreMulSum::load(version),
            fp8,
            library,
            timeout: (options.timeout_s > 0).then(|| Duration::from_secs(options.timeout_s)),
            allocated: 0,
            unalign: options.unalign,
            setup,
            memory: SetupMemory { communicators, buffers: 0 },
        })
    }

    /// Registers every rank's buffers as `self.setup` says, in one group
    /// (a window registration is collective over the communicator).
    fn register(&mut self, bytes: u64) -> Result<()> {
        let version = self.library.version_code;
        let window: Option<WindowRegisterFn> = match self.setup.register {
            Registration::None => return Ok(()),
            Registration::Local => None,
            Registration::Symmetric => Some(
                nccl_symbol("ncclCommWindowRegister", WINDOW_VERSION, version)
                    .ok_or_else(|| Error::Missing("this NCCL lacks ncclCommWindowRegister (-R 2)".into()))?,
            ),
        };
        nccl::group_start().map_err(nccl_err("starting a group"))?;
        let mut result = Ok(());
        for (i, r) in self.ranks.iter_mut().enumerate() {
            let comm = self.comms.get(i);
            for m in [&r.send, &r.recv].into_iter().flatten() {
                let mut handle = std::ptr::null_mut();
                let buff = m.ptr() as *mut c_void;
                // SAFETY: `buff` is this rank's live allocation of at least
                // `bytes` bytes on its GPU, `comm` its communicator; the
                // handle is kept and undone before the buffer is freed.
                let done = unsafe {
                    match window {
                        Some(f) => f(comm, buff, bytes as usize, &mut handle, WIN_COLL_SYMMETRIC),
                        None => sys::ncclCommRegister(comm, buff, bytes as usize, &mut handle),
                    }
                }
                .result();
                if let Err(e) = done {
                    result = Err(nccl_err(format!("registering a buffer on GPU {}", r.gpu.ordinal))(e));
                    break;
                }
                let handle = handle as usize;
                r.registered.push(if window.is_some() {
                    Registered::Window(handle)
                } else {
                    Registered::Local(handle)
                });
            }
        }
        let ended = nccl::group_end().map(|_| ()).map_err(nccl_err("registering the buffers"));
        result.and(ended)
    }

    /// Undoes every registration (before the buffers are freed or the
    /// communicators destroyed; an aborted communicator has none left).
    fn deregister(&mut self) {
        let deregister_window: Option<WindowDeregisterFn> =
            nccl_symbol("ncclCommWindowDeregister", WINDOW_VERSION, self.library.version_code);
        for (i, r) in self.ranks.iter_mut().enumerate() {
            let comm = self.comms.get(i);
            for h in r.registered.drain(..) {
                if self.comms.aborted {
                    continue;
                }
                // SAFETY: each handle came from registering with this
                // communicator, which is live, and is undone once.
                let _ = unsafe {
                    match (h, deregister_window) {
                        (Registered::Local(p), _) => sys::ncclCommDeregister(comm, p as *mut c_void),
                        (Registered::Window(w), Some(f)) => f(comm, w as *mut c_void),
                        (Registered::Window(_), None) => continue,
                    }
                };
            }
        }
    }

    /// Where rank `i`'s send and receive buffers start for `op`: `-u`
    /// elements of its type past their allocations.
    fn buffers(&self, i: usize, op: &Op) -> Result<(u64, u64)> {
        let r = &self.ranks[i];
        let skew = self.unalign * op.dtype.size() as u64;
        match (&r.send, &r.recv) {
            (Some(s), Some(v)) => Ok((s.ptr() + skew, v.ptr() + skew)),
            _ => Err(Error::Runtime("internal: buffers used before allocation".into())),
        }
    }

    /// Bytes by which iteration `iter` moves its buffers, as nccl-tests
    /// does, so that back-to-back iterations do not find their data in the
    /// cache: whole operations' worth, wrapping within the allocation.
    fn shift(&self, op: &Op, iter: u64) -> u64 {
        let bytes = op.counts.bytes(op.dtype);
        let steps = self.allocated.checked_div(bytes).unwrap_or(1).max(1);
        bytes * (iter % steps)
    }

    /// Enqueues `op.agg` operations of `op` on the GPUs of local ranks
    /// `local`, as one group (a collective of several steps: each step of
    /// each operation a group of its own, in order); `iter` counts the
    /// launches of a timed loop (0 for one whose data is filled or checked).
    fn launch(&self, op: &Op, local: std::ops::Range<usize>, iter: u64) -> Result<()> {
        let shift = |a: u64| if iter == 0 && a == 0 { 0 } else { self.shift(op, iter * op.agg as u64 + a) };
        let group = |ops: std::ops::Range<u64>, step: usize| -> Result<()> {
            nccl::group_start().map_err(nccl_err("starting a group"))?;
            for a in ops {
                local.clone().try_for_each(|i| self.issue(op, i, shift(a), step))?;
            }
            nccl::group_end().map_err(nccl_err("launching a group"))?;
            Ok(())
        };
        let (agg, steps) = (op.agg as u64, op.collective.steps(self.nranks));
        if steps == 1 {
            return group(0..agg, 0);
        }
        (0..agg).try_for_each(|a| (0..steps).try_for_each(|step| group(a..a + 1, step)))
    }

    /// Issues local rank `i`'s part of step `step` of `op`, its buffers
    /// moved by `shift` bytes.
    fn issue(&self, op: &Op, i: usize, shift: u64, step: usize) -> Result<()> {
        let r = &self.ranks[i];
        let rank = self.first_rank + i;
        let (send, recv) = self.buffers(i, op)?;
        let mut calls = Calls {
            comm: self.comms.get(i),
            stream: r.gpu.stream.cu_stream() as sys::cudaStream_t,
            cuda_stream: &r.gpu.stream,
            send: send + shift,
            recv: recv + shift,
            alltoall: self.alltoall,
            gather: self.gather,
            scatter: self.scatter,
            premul_sum: self.premul_sum,
            rank,
            dtype: op.dtype,
            redop: op.redop,
            what: format!("launching {} on GPU {}", op.collective.name(), r.gpu.ordinal),
        };
        op.collective.issue(&mut calls, &op.call(rank, self.nranks, step))
    }

    /// Waits for the given events, aborting every communicator on timeout.
    fn wait(&mut self, events: &[&CudaEvent]) -> Result<()> {
        self.comms.wait(events, self.timeout)
    }

    /// Records an event on every GPU's stream and waits for all of them.
    fn sync(&mut self) -> Result<()> {
        let events = self.ranks.iter().map(|r| record(&r.gpu)).collect::<Result<Vec<_>>>()?;
        self.wait(&events.iter().collect::<Vec<_>>())
    }

    /// The local rank ranges of the launching threads.
    fn thread_ranges(&self) -> Vec<std::ops::Range<usize>> {
        (0..self.ranks.len()).step_by(self.per_thread).map(|a| a..a + self.per_thread).collect()
    }

    /// Runs `f` for every launching thread's ranks: inline for one thread,
    /// else on scoped threads started together. `f` gets the barrier of
    /// the launching threads and `before`, to call before its launch `k`
    /// of a loop: after a signal every thread stops after the same launch.
    fn on_threads<R: Send>(
        &self,
        f: impl Fn(std::ops::Range<usize>, &Barrier, &dyn Fn(u64) -> Result<()>) -> Result<R> + Sync,
    ) -> Result<Vec<R>> {
        let ranges = self.thread_ranges();
        let (barrier, halt) = (Barrier::new(ranges.len()), Halt::new(ranges.len()));
        crate::threads::each(ranges, |t, r| f(r, &barrier, &|k| halt.before(t, k))).into_iter().collect()
    }

    /// `result`, the communicators aborted when it is an error: a loop of
    /// launches that stopped early leaves kernels waiting for the launches
    /// that will not come.
    fn abort_on_error<R>(&mut self, result: Result<R>) -> Result<R> {
        if result.is_err() {
            self.comms.abort();
        }
        result
    }

    /// The timed loop on every launching thread, as nccl-tests runs it:
    /// `l.iters` iterations of `op.agg` operations back to back (or `l.graph`
    /// launches of their capture), each followed by what `-z` asks.
    /// `mark(i, k, stop)` runs on local rank `i`'s stream before (false) and
    /// after (true) launch `k`. Per thread: seconds from the start to the
    /// last launch's return, and to every GPU idle (under -z 3 both are the
    /// launches and their waits alone, the barriers left out), per operation.
    /// The caller aborts the communicators on an error.
    fn pass(
        &self,
        op: &Op,
        l: &Loop,
        world: &dyn World,
        mark: &(dyn Fn(usize, usize, bool) -> Result<()> + Sync),
    ) -> Result<Vec<(f64, f64)>> {
        let (samples, per_sample_ops) = if l.graph > 0 { (l.graph, l.iters * op.agg) } else { (l.iters, op.agg) };
        let timeout = self.timeout;
        let job = self.job_barrier(l, world)?;
        self.on_threads(|local, barrier, before| {
            // Graphs stay on the thread that captured them.
            let graphs = if l.graph > 0 { Some(self.capture(op, l.iters, local.clone())?) } else { None };
            let streams: Vec<&cudarc::driver::CudaStream> =
                self.ranks[local.clone()].iter().map(|r| r.gpu.stream.as_ref()).collect();
            let idle = || gpu::wait_streams(&streams, timeout, || self.comms.async_error());
            // Every rank of the job: the launching threads, then the processes.
            let everyone = || {
                barrier.wait();
                if let Some(j) = &job {
                    j.0.barrier();
                }
                barrier.wait();
            };
            barrier.wait();
            let t0 = Instant::now();
            let mut alone = Duration::ZERO;
            for k in 0..samples as usize {
                before(k as u64)?;
                // The clock is read per launch only where -z 3 needs it.
                let started = (l.blocking == 3).then(Instant::now);
                local.clone().try_for_each(|i| mark(i, k, false))?;
                match &graphs {
                    Some(gs) => gs.iter().try_for_each(|g| g.launch()).map_err(cuda_err("launching a CUDA graph"))?,
                    None => self.launch(op, local.clone(), k as u64 + 1)?,
                }
                local.clone().try_for_each(|i| mark(i, k, true))?;
                match l.blocking {
                    1 => {
                        idle()?;
                        everyone();
                    }
                    2 => idle()?,
                    3 => {
                        idle()?;
                        alone += started.map_or(Duration::ZERO, |t| t.elapsed());
                        everyone();
                    }
                    _ => {}
                }
            }
            let launched = t0.elapsed();
            idle()?;
            let (done, launched) = if l.blocking == 3 { (alone, alone) } else { (t0.elapsed(), launched) };
            let ops = (samples * per_sample_ops) as f64;
            Ok((done.as_secs_f64() / ops, launched.as_secs_f64() / ops))
        })
    }

    /// The processes' barrier of a blocking loop (-z 1 and 3) under MPI,
    /// which the process's one launching thread calls (MPI is started for
    /// one thread); None where no other process takes part.
    fn job_barrier<'w>(&self, l: &Loop, world: &'w dyn World) -> Result<Option<MainThreadWorld<'w>>> {
        if !matches!(l.blocking, 1 | 3) || world.size() == 1 {
            return Ok(None);
        }
        if self.thread_ranges().len() > 1 {
            return Err(Error::Usage(format!(
                "-z {} under MPI takes one launching thread per process (-t 1): the barrier between processes is called from the main thread",
                l.blocking
            )));
        }
        Ok(Some(MainThreadWorld(world)))
    }

    /// The per-iteration times, from a separate pass with CUDA events
    /// around each launch of a sample (reported as percentiles and -I's
    /// columns only, so that recording events does not enter the time
    /// column): the slowest GPU's time of each sample, per operation.
    fn timed_events(&mut self, op: &Op, l: &Loop, world: &dyn World) -> Result<Vec<f64>> {
        let (samples, per_sample_ops) = if l.graph > 0 { (l.graph, l.iters * op.agg) } else { (l.iters, op.agg) };
        // Two events per sample (start, stop) on every GPU.
        let events: Vec<Vec<CudaEvent>> = self
            .ranks
            .iter()
            .map(|r| (0..2 * samples).map(|_| r.gpu.timing_event()).collect::<Result<Vec<_>>>())
            .collect::<Result<_>>()?;
        let ranks = &self.ranks;
        let mark = |i: usize, k: usize, stop: bool| {
            events[i][2 * k + stop as usize].record(&ranks[i].gpu.stream).map_err(cuda_err("recording an event"))
        };
        let passed = self.pass(op, l, world, &mark);
        self.abort_on_error(passed)?;
        let last: Vec<&CudaEvent> = events.iter().map(|e| &e[2 * samples as usize - 1]).collect();
        self.wait(&last)?;
        let mut per_gpu = Vec::with_capacity(events.len());
        for ev in &events {
            let times = (0..samples as usize)
                .map(|k| {
                    Ok(ev[2 * k].elapsed_ms(&ev[2 * k + 1]).map_err(cuda_err("reading event times"))? as f64 * 1e-3
                        / per_sample_ops as f64)
                })
                .collect::<Result<Vec<f64>>>()?;
            per_gpu.push(times);
        }
        Ok((0..samples as usize).map(|k| per_gpu.iter().map(|t| t[k]).fold(0.0, f64::max)).collect())
    }

    /// Captures `iters` iterations on the streams of local ranks `local`
    /// into one graph per GPU.
    fn capture(&self, op: &Op, iters: u32, local: std::ops::Range<usize>) -> Result<Vec<cudarc::driver::CudaGraph>> {
        use cudarc::driver::sys::{CUgraphInstantiate_flags, CUstreamCaptureMode};
        // As nccl-tests: global capture for one launching thread, thread-local for several.
        let mode = if local.len() == self.ranks.len() {
            CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_GLOBAL
        } else {
            CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL
        };
        for r in &self.ranks[local.clone()] {
            r.gpu.stream.begin_capture(mode).map_err(cuda_err("starting a graph capture"))?;
        }
        let launched = (0..iters as u64).try_for_each(|k| self.launch(op, local.clone(), k + 1));
        let mut graphs = Vec::new();
        for r in &self.ranks[local.clone()] {
            let g = r
                .gpu
                .stream
                .end_capture(CUgraphInstantiate_flags::CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH)
                .map_err(cuda_err("ending a graph capture"))?;
            graphs.extend(g);
        }
        launched?;
        if graphs.len() != local.len() {
            return Err(Error::Runtime("CUDA graph capture produced no graph".into()));
        }
        Ok(graphs)
    }
}

impl Drop for Nccl {
    /// Registrations are undone while the communicators and buffers live.
    fn drop(&mut self) {
        self.deregister();
    }
}

/// The job's world where only the process's main thread reaches it: a
/// blocking loop's barrier between processes.
struct MainThreadWorld<'w>(&'w dyn World);

// SAFETY: made only when the process has one launching thread, which
// `threads::each` runs inline on the calling (main) thread, so the world
// is never used from another thread.
unsafe impl Sync for MainThreadWorld<'_> {}

fn record(gpu: &Gpu) -> Result<CudaEvent> {
    let e = gpu.ctx.new_event(None).map_err(cuda_err("creating an event"))?;
    e.record(&gpu.stream).map_err(cuda_err("recording an event"))?;
    Ok(e)
}

impl Transport for Nccl {
    fn ranks(&self) -> &[RankInfo] {
        &self.info
    }

    fn refuses(&self, dtype: DataType, op: Option<RedOp>) -> Option<String> {
        if !dtype.is_fp8() {
            return None;
        }
        if let Some(o @ (RedOp::Avg | RedOp::MulSum)) = op {
            return Some(format!(
                "NCCL takes no {} of {} (ncclInvalidArgument with NCCL 2.28, where nccl-tests' -o all stops)",
                if o == RedOp::Avg { "avg" } else { "PreMulSum op (mulsum)" },
                dtype.name()
            ));
        }
        self.fp8.clone()
    }

    fn nranks(&self) -> usize {
        self.nranks
    }

    fn library(&self) -> Option<&LibraryInfo> {
        Some(&self.library)
    }

    fn buffer_limit(&self) -> u64 {
        // nccl-tests' rule: keep 1 GiB per 16 GiB (at most 4 GiB) and 1 GiB
        // more for the library; two buffers (send, receive) share the rest.
        // Memory other processes already hold is not available either.
        const GIB: u64 = 1 << 30;
        self.ranks
            .iter()
            .map(|r| {
                let total = r.gpu.total_mem;
                let reserve = (total.div_ceil(16 * GIB) * GIB).min(4 * GIB);
                let by_total = total.saturating_sub(reserve + GIB) / 2;
                let by_free = r.gpu.free_mem().unwrap_or(total).saturating_sub(GIB) / 2;
                by_total.min(by_free)
            })
            .min()
            .unwrap_or(0)
    }

    /// nccl-tests' buffers: ncclMemAlloc (NCCL 2.19 and later) of the
    /// largest size and 8 bytes per element of `-u`, registered as `-R` asks.
    fn allocate(&mut self, bytes: u64) -> Result<()> {
        self.deregister();
        let gpus: Vec<&Gpu> = self.ranks.iter().map(|r| &r.gpu).collect();
        let before = free_of(&gpus)?;
        let nccl_alloc = self.setup.allocator == "ncclMemAlloc";
        let padded = bytes + 8 * self.unalign;
        for r in &mut self.ranks {
            r.send = None;
            r.recv = None;
            r.send = Some(Allocation::alloc(&r.gpu, padded, nccl_alloc)?);
            r.recv = Some(Allocation::alloc(&r.gpu, padded, nccl_alloc)?);
        }
        self.allocated = bytes;
        self.register(bytes)?;
        let gpus: Vec<&Gpu> = self.ranks.iter().map(|r| &r.gpu).collect();
        self.memory.buffers = most_taken(&before, &free_of(&gpus)?);
        Ok(())
    }

    fn buffer_setup(&self) -> Option<BufferSetup> {
        Some(self.setup.clone())
    }

    fn setup_memory(&self) -> Option<SetupMemory> {
        Some(self.memory)
    }

    fn free_memory(&self) -> Result<Vec<i64>> {
        free_of(&self.ranks.iter().map(|r| &r.gpu).collect::<Vec<_>>())
    }

    fn fill(&mut self, op: &Op) -> Result<()> {
        let ws = op.dtype.size() as u64;
        let c = op.counts;
        for i in 0..self.ranks.len() {
            let rank = self.first_rank + i;
            let (send, recv) = self.buffers(i, op)?;
            let (in_ptr, poison_len) = if op.in_place {
                let end = (op.input_offset(rank) + c.send).max(op.output_offset(rank) + c.recv);
                (recv + op.input_offset(rank) * ws, end)
            } else {
                (send, c.recv)
            };
            let r = &self.ranks[i];
            r.gpu.memset(recv, POISON, poison_len * ws)?;
            r.kernels.fill(&r.gpu, in_ptr, c.send, &op.pattern, rank)?;
        }
        self.sync()
    }

    fn time(&mut self, op: &Op, l: &Loop, world: &dyn World) -> Result<Timing> {
        let warmed = self.on_threads(|local, _, before| {
            (0..l.warmup as u64).try_for_each(|k| {
                before(k)?;
                self.launch(op, local.clone(), k + 1)
            })
        });
        self.abort_on_error(warmed)?;
        self.sync()?;
        let timed = self.pass(op, l, world, &|_, _, _| Ok(()));
        let (per_thread, cpu_per_thread) = self.abort_on_error(timed)?.into_iter().unzip();
        let iterations = self.timed_events(op, l, world)?;
        Ok(Timing { per_thread, cpu_per_thread, iterations })
    }

    fn timing(&self) -> &'static str {
        TIMING
    }

    fn run_once(&mut self, op: &Op) -> Result<()> {
        let once = Op { agg: 1, ..*op };
        self.on_threads(|local, _, _| self.launch(&once, local, 0))?;
        self.sync()
    }

    fn corrupt(&mut self, op: &Op, rank: usize, index: u64) -> Result<()> {
        let Some(i) = rank.checked_sub(self.first_rank).filter(|&i| i < self.ranks.len()) else { return Ok(()) };
        if index >= op.counts.recv {
            return Ok(());
        }
        let ws = op.dtype.size();
        let (_, recv) = self.buffers(i, op)?;
        let at = recv + (op.output_offset(rank) + index) * ws as u64;
        let mut bytes = vec![0u8; ws];
        self.ranks[i].gpu.ctx.bind_to_thread().map_err(cuda_err("binding a context"))?;
        // `at..at+ws` is one element inside this rank's receive buffer; the
        // GPU is idle (run_once synchronised).
        gpu::copy::from_device(&mut bytes, at).map_err(cuda_err("reading an element"))?;
        bytes.iter_mut().for_each(|b| *b = !*b);
        gpu::copy::to_device(at, &bytes).map_err(cuda_err("writing an element"))?;
        Ok(())
    }

    fn count_wrong(&mut self, op: &Op) -> Result<u64> {
        let ws = op.dtype.size() as u64;
        for i in 0..self.ranks.len() {
            let rank = self.first_rank + i;
            let (_, recv) = self.buffers(i, op)?;
            let r = &self.ranks[i];
            let counter = r.wrong.ptr();
            r.gpu.memset(counter, 0, 8)?;
            if op.checks_rank(rank, self.nranks) {
                let out = recv + op.output_offset(rank) * ws;
                r.kernels.check(&r.gpu, out, op.received(rank, self.nranks), op, rank, self.nranks, counter)?;
            }
        }
        self.sync()?;
        let mut total = 0;
        for r in &self.ranks {
            let mut w = 0u64;
            r.gpu.ctx.bind_to_thread().map_err(cuda_err("binding a context"))?;
            // The counter is one u64 on this GPU, written by the check
            // kernel that the sync above waited for.
            gpu::copy::from_device(bytemuck::bytes_of_mut(&mut w), r.wrong.ptr())
                .map_err(cuda_err("reading the wrong-element count"))?;
            total += w;
        }
        Ok(total)
    }
}

/// One rank's NCCL calls of one operation, inside the group its launch opened.
struct Calls<'a> {
    comm: sys::ncclComm_t,
    stream: sys::cudaStream_t,
    /// The same stream, for the driver's copies.
    cuda_stream: &'a CudaStream,
    /// Device addresses of the rank's send and receive buffers.
    send: u64,
    recv: u64,
    alltoall: Option<AllToAllFn>,
    gather: Option<RootedFn>,
    scatter: Option<RootedFn>,
    premul_sum: Option<PreMulSum>,
    /// The rank issuing: mulsum's scalar is its.
    rank: usize,
    dtype: DataType,
    redop: RedOp,
    what: String,
}

impl Calls<'_> {
    fn addr(&self, at: Region) -> u64 {
        let base = match at.buffer {
            Buf::Send => self.send,
            Buf::Recv => self.recv,
        };
        base + at.offset * self.dtype.size() as u64
    }

    fn ptrs(&self, input: Region, output: Region) -> (*const c_void, *mut c_void) {
        (self.addr(input) as *const c_void, self.addr(output) as *mut c_void)
    }

    fn done(&self, r: std::result::Result<nccl::NcclStatus, nccl::NcclError>) -> Result<()> {
        r.map(|_| ()).map_err(nccl_err(&self.what))
    }

    /// `call` with a PreMulSum op of this rank's scalar, made for it and
    /// destroyed once it is enqueued, as nccl-tests does for `mulsum`.
    fn with_premul_sum(&self, call: impl FnOnce(&PreMulSum, c_int) -> sys::ncclResult_t) -> Result<()> {
        let f = self
            .premul_sum
            .as_ref()
            .ok_or_else(|| Error::Missing("-o mulsum needs NCCL 2.11 or later (ncclRedOpCreatePreMulSum)".into()))?;
        let scalar = RedOp::premul_scalar(self.rank);
        let mut bytes = [0u8; 8];
        let one = crate::with_element!(self.dtype, T => bytemuck::bytes_of(&T::from_i64(scalar)).to_vec());
        bytes[..one.len()].copy_from_slice(&one);
        let mut op: c_int = 0;
        // SAFETY: `op` is a valid out-pointer; the scalar is one element of
        // the datatype, read at the call (host immediate); the communicator is live.
        let made = unsafe {
            (f.create)(&mut op, bytes.as_mut_ptr().cast(), nccl_type(self.dtype), SCALAR_HOST_IMMEDIATE, self.comm)
        };
        self.done(made.result())?;
        let called = call(f, op);
        // SAFETY: `op` was made above for this communicator and its last use
        // is enqueued; NCCL allows destroying it now.
        let destroyed = unsafe { (f.destroy)(op, self.comm) };
        self.done(called.result())?;
        self.done(destroyed.result())
    }
}

// SAFETY (every call below): the regions lie in this rank's buffers, which
// hold the operation's send and receive counts (allocated for the largest
// size, counts from the collective's own Counts); the communicator and the
// stream belong to this rank's GPU, and the calls run inside a group.
impl Primitives for Calls<'_> {
    fn all_reduce(&mut self, input: Region, output: Region, count: u64) -> Result<()> {
        let (s, r) = self.ptrs(input, output);
        let (t, (comm, stream)) = (nccl_type(self.dtype), (self.comm, self.stream));
        match nccl_op(self.redop) {
            // SAFETY: see above.
            Some(op) => self.done(unsafe { nccl::all_reduce(s, r, count as usize, t, op, comm, stream) }),
            // SAFETY: see above; `op` is the PreMulSum op made for this call.
            None => self.with_premul_sum(|f, op| unsafe { (f.all_reduce)(s, r, count as usize, t, op, comm, stream) }),
        }
    }
    fn all_gather(&mut self, input: Region, output: Region, count: u64) -> Result<()> {
        let (s, r) = self.ptrs(input, output);
        // SAFETY: see above.
        self.done(unsafe { nccl::all_gather(s, r, count as usize, nccl_type(self.dtype), self.comm, self.stream) })
    }
    fn reduce_scatter(&mut self, input: Region, output: Region, count: u64) -> Result<()> {
        let (s, r) = self.ptrs(input, output);
        let (t, (comm, stream)) = (nccl_type(self.dtype), (self.comm, self.stream));
        match nccl_op(self.redop) {
            // SAFETY: see above.
            Some(op) => self.done(unsafe { nccl::reduce_scatter(s, r, count as usize, t, op, comm, stream) }),
            None => self.with_premul_sum(|f, op| {
                // SAFETY: see above; `op` is the PreMulSum op made for this call.
                unsafe { (f.reduce_scatter)(s, r, count as usize, t, op, comm, stream) }
            }),
        }
    }
    fn broadcast(&mut self, input: Region, output: Region, count: u64, root: usize) -> Result<()> {
        let (s, r) = self.ptrs(input, output);
        let t = nccl_type(self.dtype);
        // SAFETY: see above.
        self.done(unsafe { nccl::broadcast(s, r, count as usize, t, root as i32, self.comm, self.stream) })
    }
    fn reduce(&mut self, input: Region, output: Region, count: u64, root: usize) -> Result<()> {
        let (s, r) = self.ptrs(input, output);
        let (t, (comm, stream)) = (nccl_type(self.dtype), (self.comm, self.stream));
        match nccl_op(self.redop) {
            // SAFETY: see above.
            Some(op) => self.done(unsafe { nccl::reduce(s, r, count as usize, t, op, root as i32, comm, stream) }),
            // SAFETY: see above; `op` is the PreMulSum op made for this call.
            None => self.with_premul_sum(|f, op| unsafe {
                (f.reduce)(s, r, count as usize, t, op, root as c_int, comm, stream)
            }),
        }
    }
    fn all_to_all(&mut self, input: Region, output: Region, count: u64, nranks: usize) -> Result<()> {
        let (s, r) = self.ptrs(input, output);
        let t = nccl_type(self.dtype);
        match self.alltoall {
            // SAFETY: see above; `f` is ncclAlltoAll of the loaded NCCL.
            Some(f) => self.done(unsafe { f(s, r, count as usize, t, self.comm, self.stream) }.result()),
            None => super::collective::all_to_all_in_pairs(self, input, output, count, nranks),
        }
    }
    fn gather(&mut self, input: Region, output: Region, count: u64, root: usize, rank: usize, n: usize) -> Result<()> {
        let (s, r) = self.ptrs(input, output);
        match self.gather {
            // SAFETY: see above; `f` is ncclGather of the loaded NCCL.
            Some(f) => self.done(
                unsafe { f(s, r, count as usize, nccl_type(self.dtype), root as c_int, self.comm, self.stream) }
                    .result(),
            ),
            None => super::collective::gather_in_pairs(self, input, output, count, root, rank, n),
        }
    }
    fn scatter(&mut self, input: Region, output: Region, count: u64, root: usize, rank: usize, n: usize) -> Result<()> {
        let (s, r) = self.ptrs(input, output);
        match self.scatter {
            // SAFETY: see above; `f` is ncclScatter of the loaded NCCL.
            Some(f) => self.done(
                unsafe { f(s, r, count as usize, nccl_type(self.dtype), root as c_int, self.comm, self.stream) }
                    .result(),
            ),
            None => super::collective::scatter_in_pairs(self, input, output, count, root, rank, n),
        }
    }
    fn copy(&mut self, input: Region, output: Region, count: u64, _rank: usize) -> Result<()> {
        let bytes = count as usize * self.dtype.size();
        // A device-to-device copy between two ranges of this rank's
        // buffers, enqueued on its stream in issue order.
        gpu::copy::within_device(self.addr(output), self.addr(input), bytes, self.cuda_stream)
            .map_err(cuda_err(&self.what))
    }
    fn send(&mut self, input: Region, count: u64, peer: usize) -> Result<()> {
        let s = self.addr(input) as *const c_void;
        let t = nccl_type(self.dtype);
        // SAFETY: see above.
        self.done(unsafe { nccl::send(s, count as usize, t, peer as i32, self.comm, self.stream) })
    }
    fn recv(&mut self, output: Region, count: u64, peer: usize) -> Result<()> {
        let r = self.addr(output) as *mut c_void;
        let t = nccl_type(self.dtype);
        // SAFETY: see above.
        self.done(unsafe { nccl::recv(r, count as usize, t, peer as i32, self.comm, self.stream) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    #[test]
    fn comm_config_has_nccl_2_28s_layout() {
        // nccl.h 2.28: size_t, two unsigned, four int, a pointer, two int,
        // a pointer, six int.
        assert_eq!(offset_of!(CommConfig, net_name), 32);
        assert_eq!(offset_of!(CommConfig, comm_name), 48);
        assert_eq!(offset_of!(CommConfig, nvlink_centric_sched), 76);
        assert_eq!(size_of::<CommConfig>(), 80);
        let c = CommConfig::nccl_tests(None);
        assert_eq!((c.size, c.magic, c.version), (80, 0xcafe_beef, 22800));
        assert_eq!((c.nvlink_centric_sched, c.blocking, c.cta_policy), (1, i32::MIN, i32::MIN));
        assert_eq!(CommConfig::nccl_tests(Some(1)).cta_policy, 1);
    }

    #[test]
    fn buffers_are_allocated_and_registered_as_nccl_tests_does() {
        let b = buffer_setup(Registration::None, 22803).unwrap();
        assert_eq!((b.allocator.as_str(), b.register, b.note), ("ncclMemAlloc", Registration::None, None));
        assert_eq!(buffer_setup(Registration::None, 21805).unwrap().allocator, "cuMemAlloc");
        assert_eq!(buffer_setup(Registration::Symmetric, 22803).unwrap().register, Registration::Symmetric);
        let old = buffer_setup(Registration::Symmetric, 22600).unwrap();
        assert_eq!(old.register, Registration::Local);
        assert!(old.note.unwrap().contains("not supported before NCCL 2.27"));
        assert_eq!(buffer_setup(Registration::Local, 21805).unwrap_err().exit_code(), 3);
    }
}
