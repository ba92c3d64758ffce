//! The MPI world: the processes of an mpirun/srun launch, through rsmpi;
//! point-to-point exchanges bounded in time, and whether this MPI takes GPU
//! memory (CUDA-aware).

use super::{PEER_TIMEOUT, World};
use crate::error::{Error, Result};
use mpi::collective::SystemOperation;
use mpi::datatype::PartitionMut;
use mpi::environment::Universe;
use mpi::ffi;
use mpi::raw::AsRaw;
use mpi::topology::{Color, Communicator, SimpleCommunicator};
use mpi::traits::*;
use std::ffi::{c_int, c_void};
use std::time::{Duration, Instant};

/// MPI counts are 32-bit: longer messages go in pieces of this many bytes.
const MAX_MESSAGE: usize = 1 << 30;
/// The tag of qbench's point-to-point exchanges.
const TAG: c_int = 0x5142;
/// Bounded exchanges take tags from here up (MPI promises 32767).
const BOUNDED_TAGS: c_int = 0x6000;

pub struct Mpi {
    comm: SimpleCommunicator,
    local_rank: usize,
    local_size: usize,
    // Finalises MPI when dropped, after the communicators above; None in
    // a world split from the job's, which the job's outlives.
    _universe: Option<Universe>,
}

impl Mpi {
    pub fn init() -> Result<Mpi> {
        let universe = mpi::initialize().ok_or_else(|| Error::Runtime("MPI was initialised twice".into()))?;
        let comm = universe.world();
        let node = comm.split_shared(comm.rank());
        let (local_rank, local_size) = (node.rank() as usize, node.size() as usize);
        Ok(Mpi { comm, local_rank, local_size, _universe: Some(universe) })
    }

    /// The processes of this job whose colour is `colour` (every process
    /// calls it together), ranked in job order: nccl-tests'
    /// MPI_Comm_split(MPI_COMM_WORLD, color, proc). Its local rank and size
    /// stay this process's among all of the job's on its node, so that
    /// each process still takes its own GPUs (nccl-tests' localRank).
    pub fn split(&self, colour: usize) -> Result<Mpi> {
        let comm = self
            .comm
            .split_by_color_with_key(Color::with_value(colour as c_int), self.comm.rank())
            .ok_or_else(|| Error::Runtime(format!("MPI gave no communicator for colour {colour}")))?;
        Ok(Mpi { comm, local_rank: self.local_rank, local_size: self.local_size, _universe: None })
    }

    pub fn comm(&self) -> &SimpleCommunicator {
        &self.comm
    }

    /// OSU's window: `window` receives of `count` elements into `recv`
    /// from `peer` posted first, then `window` sends from `send` to it,
    /// then one wait for all (the single buffer of OSU's default `-b
    /// single`); either side may be absent. A peer silent for
    /// [`PEER_TIMEOUT`] ends the job.
    ///
    /// # Safety
    ///
    /// `send` must be readable and `recv` writable for `count` elements of
    /// `element` (host memory; GPU memory only where [`World::cuda_aware`]
    /// says so), and nothing else may touch them until this returns.
    pub unsafe fn window(
        &self,
        peer: usize,
        recv: Option<*mut u8>,
        send: Option<*const u8>,
        count: usize,
        element: Element,
        window: usize,
    ) -> Result<()> {
        self.fits(peer, count)?;
        let (comm, datatype) = (self.comm.as_raw(), element.raw());
        // SAFETY: MPI's own null request.
        let null = unsafe { ffi::RSMPI_REQUEST_NULL };
        let total = window * (recv.is_some() as usize + send.is_some() as usize);
        // A ping-pong's one request lives on the stack: no allocation in its timed loop.
        let (mut few, mut many) = ([null; 2], Vec::new());
        let reqs: &mut [ffi::MPI_Request] = if total <= few.len() {
            &mut few[..total]
        } else {
            many.resize(total, null);
            &mut many
        };
        let mut posted = reqs.iter_mut();
        for _ in 0..window {
            if let (Some(buf), Some(req)) = (recv, recv.and_then(|_| posted.next())) {
                // SAFETY: the caller vouches for `count` elements at `buf`;
                // the request is completed below.
                unsafe {
                    ffi::MPI_Irecv(buf.cast::<c_void>(), count as c_int, datatype, peer as c_int, TAG, comm, req)
                };
            }
        }
        for _ in 0..window {
            if let (Some(buf), Some(req)) = (send, send.and_then(|_| posted.next())) {
                // SAFETY: as above, for reading.
                unsafe {
                    ffi::MPI_Isend(buf.cast::<c_void>(), count as c_int, datatype, peer as c_int, TAG, comm, req)
                };
            }
        }
        self.complete(reqs, peer);
        Ok(())
    }

    /// MPI_Send of `count` elements to `peer`, blocking, as OSU's
    /// ping-pong sends (its cost is part of what osu_latency measures; a
    /// job whose process died is ended by the launcher).
    ///
    /// # Safety
    ///
    /// As [`Mpi::window`], for `send`.
    pub unsafe fn send(&self, peer: usize, send: *const u8, count: usize, element: Element) -> Result<()> {
        self.fits(peer, count)?;
        // SAFETY: the caller vouches for `count` elements at `send`.
        unsafe {
            ffi::MPI_Send(send.cast::<c_void>(), count as c_int, element.raw(), peer as c_int, TAG, self.comm.as_raw())
        };
        Ok(())
    }

    /// MPI_Recv of `count` elements from `peer`, blocking, as [`Mpi::send`].
    ///
    /// # Safety
    ///
    /// As [`Mpi::window`], for `recv`.
    pub unsafe fn recv(&self, peer: usize, recv: *mut u8, count: usize, element: Element) -> Result<()> {
        self.fits(peer, count)?;
        // SAFETY: the caller vouches for `count` elements at `recv`.
        unsafe {
            ffi::MPI_Recv(
                recv.cast::<c_void>(),
                count as c_int,
                element.raw(),
                peer as c_int,
                TAG,
                self.comm.as_raw(),
                ffi::RSMPI_STATUS_IGNORE,
            )
        };
        Ok(())
    }

    /// Err unless `peer` is a process of this world and `count` an MPI count.
    fn fits(&self, peer: usize, count: usize) -> Result<()> {
        if peer >= self.size() || count > c_int::MAX as usize {
            return Err(Error::Runtime(format!("internal: {count} elements with process {peer} of {}", self.size())));
        }
        Ok(())
    }

    /// MPI_Allreduce with MPI_SUM of `count` elements, blocking, as OSU
    /// calls it (a job whose process died is ended by the launcher).
    ///
    /// # Safety
    ///
    /// As [`Mpi::window`], for `send` and `recv` both.
    pub unsafe fn all_reduce_sum(&self, send: *const u8, recv: *mut u8, count: usize, element: Element) -> Result<()> {
        if count > c_int::MAX as usize {
            return Err(Error::Runtime(format!("internal: an all-reduce of {count} elements")));
        }
        // SAFETY: the caller vouches for both buffers; MPI's own sum.
        unsafe {
            ffi::MPI_Allreduce(
                send.cast::<c_void>(),
                recv.cast::<c_void>(),
                count as c_int,
                element.raw(),
                ffi::RSMPI_SUM,
                self.comm.as_raw(),
            )
        };
        Ok(())
    }

    /// Tests `reqs` until all have completed; past [`PEER_TIMEOUT`], or
    /// when interrupted, ends the job.
    fn complete(&self, reqs: &mut [ffi::MPI_Request], peer: usize) {
        if !self.wait(reqs, PEER_TIMEOUT) {
            super::fail_job(
                self,
                &Error::Runtime(format!(
                    "process {peer} did not exchange its part within {} s: it stopped or hangs",
                    PEER_TIMEOUT.as_secs()
                )),
            );
        }
    }

    /// Tests `reqs` until all have completed (true) or `limit` has passed
    /// (false, the requests still live); an interruption ends the job.
    fn wait(&self, reqs: &mut [ffi::MPI_Request], limit: Duration) -> bool {
        // The clock starts at the first poll that finds work left, so that
        // a message done at once (a small one) costs one call.
        let mut started = None;
        loop {
            let mut done: c_int = 0;
            // SAFETY: live requests of this process; statuses ignored.
            unsafe { ffi::MPI_Testall(reqs.len() as c_int, reqs.as_mut_ptr(), &mut done, ffi::RSMPI_STATUSES_IGNORE) };
            if done != 0 {
                return true;
            }
            let start = *started.get_or_insert_with(Instant::now);
            if let Err(e) = crate::interrupt::check() {
                super::fail_job(self, &e);
            }
            let waited = start.elapsed();
            if waited > limit {
                return false;
            }
            // Open MPI moves a large host message between processes only
            // while it is polled (shared-memory fragments), as MPI_Waitall
            // polls: sleeping here would slow the transfer itself. Yielding
            // leaves the core to a process that shares it.
            if waited > Duration::from_millis(10) {
                std::thread::yield_now();
            }
        }
    }
}

/// The world communicator where MPI runs in this process (initialised,
/// not yet finalised), for a panic to end the job from wherever it struck.
pub fn running() -> Option<SimpleCommunicator> {
    (mpi::environment::is_initialized() && !mpi::environment::is_finalized()).then(SimpleCommunicator::world)
}

/// An element type of [`Mpi::window`] and [`Mpi::all_reduce_sum`]: OSU's
/// `-T mpi_char|mpi_int|mpi_float`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Element {
    Char,
    Int,
    Float,
}

impl Element {
    fn raw(self) -> ffi::MPI_Datatype {
        match self {
            Element::Char => i8::equivalent_datatype().as_raw(),
            Element::Int => i32::equivalent_datatype().as_raw(),
            Element::Float => f32::equivalent_datatype().as_raw(),
        }
    }
}

/// Counts and displacements (in elements) of blocks of the given sizes.
pub fn partition(sizes: &[usize]) -> (Vec<i32>, Vec<i32>) {
    let counts: Vec<i32> = sizes.iter().map(|&s| s as i32).collect();
    let displs = counts.iter().scan(0i32, |acc, &c| Some(std::mem::replace(acc, *acc + c))).collect();
    (counts, displs)
}

impl World for Mpi {
    fn rank(&self) -> usize {
        self.comm.rank() as usize
    }
    fn size(&self) -> usize {
        self.comm.size() as usize
    }
    fn local_rank(&self) -> usize {
        self.local_rank
    }
    fn local_size(&self) -> usize {
        self.local_size
    }
    fn barrier(&self) {
        self.comm.barrier();
    }
    fn broadcast(&self, root: usize, buf: &mut [u8]) {
        self.comm.process_at_rank(root as i32).broadcast_into(buf);
    }
    fn all_gather(&self, mine: &[u8]) -> Vec<Vec<u8>> {
        let mut lens = vec![0i32; self.size()];
        self.comm.all_gather_into(&(mine.len() as i32), &mut lens[..]);
        let sizes: Vec<usize> = lens.iter().map(|&l| l as usize).collect();
        let mut all = vec![0u8; sizes.iter().sum()];
        let (counts, displs) = partition(&sizes);
        let mut part = PartitionMut::new(&mut all[..], counts, &displs[..]);
        self.comm.all_gather_varcount_into(mine, &mut part);
        let mut out = Vec::with_capacity(sizes.len());
        let mut at = 0;
        for s in sizes {
            out.push(all[at..at + s].to_vec());
            at += s;
        }
        out
    }
    fn sum_u64(&self, v: u64) -> u64 {
        let mut out = 0u64;
        self.comm.all_reduce_into(&v, &mut out, SystemOperation::sum());
        out
    }
    fn min_u64(&self, v: u64) -> u64 {
        let mut out = 0u64;
        self.comm.all_reduce_into(&v, &mut out, SystemOperation::min());
        out
    }
    fn max_f64(&self, v: &[f64]) -> Vec<f64> {
        let mut out = vec![0f64; v.len()];
        self.comm.all_reduce_into(v, &mut out[..], SystemOperation::max());
        out
    }
    fn abort(&self, code: i32) -> ! {
        self.comm.abort(code)
    }
    /// In pieces of at most 1 GiB, each waited for at most
    /// [`PEER_TIMEOUT`]. A timeout or an interruption ends the whole job:
    /// the requests still in flight cannot be taken back from MPI.
    unsafe fn sendrecv_raw(&self, peer: usize, send: *const u8, recv: *mut u8, len: usize) -> Result<()> {
        if peer >= self.size() {
            return Err(Error::Runtime(format!("internal: no process {peer} among {}", self.size())));
        }
        let comm = self.comm.as_raw();
        let mut at = 0;
        while at < len {
            let n = (len - at).min(MAX_MESSAGE);
            // SAFETY: the handles are MPI's own constants.
            let (byte, null) = unsafe { (ffi::RSMPI_UINT8_T, ffi::RSMPI_REQUEST_NULL) };
            let mut reqs = [null; 2];
            // SAFETY: the caller vouches for both ranges; `at + n <= len`.
            // The requests are completed below before the ranges are left.
            unsafe {
                ffi::MPI_Irecv(recv.add(at).cast::<c_void>(), n as c_int, byte, peer as c_int, TAG, comm, &mut reqs[0]);
                ffi::MPI_Isend(send.add(at).cast::<c_void>(), n as c_int, byte, peer as c_int, TAG, comm, &mut reqs[1]);
            }
            self.complete(&mut reqs, peer);
            at += n;
        }
        Ok(())
    }
    /// One message each way under tag `BOUNDED_TAGS + tag`; past `limit`
    /// both requests are cancelled and freed, and the buffers they name
    /// are leaked rather than freed under an MPI that may still write
    /// into them.
    fn sendrecv_within(
        &self,
        peer: usize,
        send: &mut Vec<u8>,
        recv: &mut Vec<u8>,
        tag: u16,
        limit: Duration,
    ) -> Result<bool> {
        let len = send.len();
        if peer >= self.size() || recv.len() != len || len > MAX_MESSAGE || BOUNDED_TAGS + tag as c_int > 32767 {
            return Err(Error::Runtime(format!(
                "internal: a bounded exchange of {len} bytes (tag {tag}) with process {peer} of {}",
                self.size()
            )));
        }
        let (comm, tag) = (self.comm.as_raw(), BOUNDED_TAGS + tag as c_int);
        // SAFETY: the handles are MPI's own constants.
        let (byte, null) = unsafe { (ffi::RSMPI_UINT8_T, ffi::RSMPI_REQUEST_NULL) };
        let mut reqs = [null; 2];
        // SAFETY: two live vectors of `len` bytes; they are either waited
        // for below or leaked with their requests.
        unsafe {
            ffi::MPI_Irecv(recv.as_mut_ptr().cast::<c_void>(), len as c_int, byte, peer as c_int, tag, comm, &mut reqs[0]);
            ffi::MPI_Isend(send.as_ptr().cast::<c_void>(), len as c_int, byte, peer as c_int, tag, comm, &mut reqs[1]);
        }
        if self.wait(&mut reqs, limit) {
            return Ok(true);
        }
        for r in &mut reqs {
            // SAFETY: live requests of this process (a cancel of one that
            // completed does nothing); freed, they are never touched again.
            unsafe {
                ffi::MPI_Cancel(r);
                ffi::MPI_Request_free(r);
            }
        }
        let kept = send.clone();
        std::mem::replace(send, kept).leak();
        std::mem::replace(recv, vec![0; len]).leak();
        Ok(false)
    }
    /// MPI_Iallgather, waited for at most `limit`. Past it the collective
    /// cannot be taken back (MPI forbids cancelling or freeing one): the
    /// caller ends the job, and the buffers are leaked until it does.
    fn all_gather_f64_within(&self, mine: &[f64], limit: Duration) -> Result<Option<Vec<f64>>> {
        let n = mine.len();
        let mine = mine.to_vec();
        let mut all = vec![0f64; n * self.size()];
        // SAFETY: MPI's own constants.
        let (double, mut req) = unsafe { (ffi::RSMPI_DOUBLE, ffi::RSMPI_REQUEST_NULL) };
        // SAFETY: `mine` holds n doubles and `all` n for each process; both
        // live until the request completes, or are leaked below.
        unsafe {
            ffi::MPI_Iallgather(
                mine.as_ptr().cast::<c_void>(),
                n as c_int,
                double,
                all.as_mut_ptr().cast::<c_void>(),
                n as c_int,
                double,
                self.comm.as_raw(),
                &mut req,
            )
        };
        if self.wait(std::slice::from_mut(&mut req), limit) {
            return Ok(Some(all));
        }
        all.leak();
        mine.leak();
        Ok(None)
    }
    /// As QuEST v4's exchangeArrays: the messages of `unit`-byte elements
    /// (a derived datatype, so that a count fits MPI's int), each message's
    /// MPI_Isend and MPI_Irecv posted in turn with its index as the tag,
    /// then one wait for all of them.
    unsafe fn exchange_messages_raw(
        &self,
        peer: usize,
        send: *const u8,
        recv: *mut u8,
        len: usize,
        message: usize,
        unit: usize,
    ) -> Result<()> {
        if peer >= self.size()
            || unit == 0
            || message == 0
            || !message.is_multiple_of(unit)
            || !len.is_multiple_of(unit)
        {
            return Err(Error::Runtime(format!(
                "internal: messages of {message} bytes in units of {unit} for {len} bytes to process {peer}"
            )));
        }
        let comm = self.comm.as_raw();
        // SAFETY: MPI's own byte type; `elem` is made, committed and freed here.
        let mut elem = unsafe { ffi::RSMPI_DATATYPE_NULL };
        // SAFETY: a contiguous type of `unit` bytes, written into `elem`.
        unsafe {
            ffi::MPI_Type_contiguous(unit as c_int, ffi::RSMPI_UINT8_T, &mut elem);
            ffi::MPI_Type_commit(&mut elem);
        }
        let messages = len.div_ceil(message);
        // SAFETY: MPI's own null request.
        let mut reqs = vec![unsafe { ffi::RSMPI_REQUEST_NULL }; 2 * messages];
        for m in 0..messages {
            let (at, n) = (m * message, message.min(len - m * message));
            let count = (n / unit) as c_int;
            // SAFETY: the caller vouches for both ranges; `at + n <= len`.
            // Every request is completed below before the ranges are left.
            unsafe {
                ffi::MPI_Isend(
                    send.add(at).cast::<c_void>(),
                    count,
                    elem,
                    peer as c_int,
                    m as c_int,
                    comm,
                    &mut reqs[2 * m],
                );
                ffi::MPI_Irecv(
                    recv.add(at).cast::<c_void>(),
                    count,
                    elem,
                    peer as c_int,
                    m as c_int,
                    comm,
                    &mut reqs[2 * m + 1],
                );
            }
        }
        self.complete(&mut reqs, peer);
        // SAFETY: no request uses the type any more.
        unsafe { ffi::MPI_Type_free(&mut elem) };
        Ok(())
    }
    /// Whether this MPI takes GPU memory in its calls (CUDA-aware), asked
    /// of the MPI library itself at run time: Open MPI's
    /// `MPIX_Query_cuda_support()` (mpi-ext.h), MPICH's
    /// `MPIX_GPU_query_support(MPIX_GPU_SUPPORT_CUDA, …)`. Err says why not.
    fn cuda_aware(&self) -> std::result::Result<(), String> {
        let this = libloading::os::unix::Library::this();
        // SAFETY: a symbol lookup in the MPI library this process is linked
        // with; Open MPI's query takes nothing and returns 0 or 1.
        if let Ok(query) = unsafe { this.get::<unsafe extern "C" fn() -> c_int>(b"MPIX_Query_cuda_support\0") } {
            // SAFETY: callable at any time after MPI_Init, which `init` made.
            return match unsafe { query() } {
                1 => Ok(()),
                _ => Err(
                    "this MPI is not CUDA-aware: Open MPI's MPIX_Query_cuda_support() says 0 at run time (`ompi_info --parsable --all | grep built_with_cuda_support:value` tells whether it was built with CUDA; a CUDA-aware build with UCX needs its cuda transports)"
                        .into(),
                ),
            };
        }
        type GpuQuery = unsafe extern "C" fn(c_int, *mut c_int) -> c_int;
        // SAFETY: as above; MPICH's query takes a GPU type and an out-pointer.
        if let Ok(query) = unsafe { this.get::<GpuQuery>(b"MPIX_GPU_query_support\0") } {
            const MPIX_GPU_SUPPORT_CUDA: c_int = 0;
            let mut yes: c_int = 0;
            // SAFETY: `yes` is a live c_int the query writes.
            let rc = unsafe { query(MPIX_GPU_SUPPORT_CUDA, &mut yes) };
            return match (rc, yes) {
                (0, 1) => Ok(()),
                _ => Err("this MPI is not CUDA-aware: MPICH's MPIX_GPU_query_support(MPIX_GPU_SUPPORT_CUDA) says 0 (`mpichversion` shows how it was configured; it needs --with-cuda)".into()),
            };
        }
        Err("this MPI does not say whether it is CUDA-aware (it has neither Open MPI's MPIX_Query_cuda_support nor MPICH's MPIX_GPU_query_support), so no GPU memory is handed to it".into())
    }
    fn mpi(&self) -> Option<&Mpi> {
        Some(self)
    }
}
