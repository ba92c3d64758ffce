//! How bytes move between ranks. A transport owns the ranks' buffers and
//! can fill them with the seeded inputs, run one collective on all of them
//! through NCCL's primitives, time a loop of them, and count wrong output
//! elements. It knows no collective by name: each collective says how it
//! issues the primitives and where its outputs come from (collective.rs).
//! The registers of the amplitude exchange live in amplitudes/.

pub mod amplitudes;
pub mod collective;
pub mod cpu;
#[cfg(feature = "mpi")]
pub mod cpu_mpi;
pub mod nccl;
pub mod pattern_kernels;

use crate::error::Result;
use crate::record::collective::BufferSetup;
use crate::record::{LibraryInfo, RankInfo};
use crate::world::World;
pub use collective::{Buf, Call, Collective, Counts, Op, Primitives, Region, Source};

/// How a timed cell runs: nccl-tests' -w, -n, -G and -z.
#[derive(Debug, Clone, Copy, Default)]
pub struct Loop {
    /// Untimed iterations first.
    pub warmup: u32,
    pub iters: u32,
    /// Above 0: the timed iterations captured once, the capture launched
    /// this many times.
    pub graph: u32,
    /// 0 back to back; 1 wait for the GPUs and a barrier of every rank
    /// after each launch; 2 wait after each launch; 3 wait and a barrier
    /// after each iteration, the barrier left out of the time.
    pub blocking: u8,
}

/// Times of one timed cell.
#[derive(Debug, Clone, Default)]
pub struct Timing {
    /// Seconds per operation, one value per timing thread (a thread drives
    /// one or more ranks and contributes the slowest of them).
    pub per_thread: Vec<f64>,
    /// Host seconds spent launching, per operation, one value per timing
    /// thread (nccl-tests' cputime; the same as `per_thread` where every
    /// operation completes before the next is started).
    pub cpu_per_thread: Vec<f64>,
    /// Seconds per operation of each timed iteration (or graph launch), the
    /// slowest thread's (nccl: from a separate pass with events).
    pub iterations: Vec<f64>,
}

impl Timing {
    /// Times from one series of per-iteration seconds per thread, each
    /// operation complete when its time ends.
    pub fn from_threads(per_thread: &[Vec<f64>]) -> Timing {
        let iters = per_thread.first().map_or(0, Vec::len);
        let mean: Vec<f64> = per_thread.iter().map(|t| t.iter().sum::<f64>() / t.len().max(1) as f64).collect();
        Timing {
            cpu_per_thread: mean.clone(),
            per_thread: mean,
            iterations: (0..iters).map(|k| per_thread.iter().map(|t| t[k]).fold(0.0, f64::max)).collect(),
        }
    }
}

/// GPU memory taken by a transport's setup, the most on any one of its GPUs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SetupMemory {
    pub communicators: i64,
    pub buffers: i64,
}

/// What the collective sweep needs from a transport.
pub trait Transport {
    /// The ranks this process drives, in rank order.
    fn ranks(&self) -> &[RankInfo];
    /// Ranks in the whole job.
    fn nranks(&self) -> usize;
    fn library(&self) -> Option<&LibraryInfo>;
    /// The largest buffer, in bytes, each rank can hold given its memory.
    fn buffer_limit(&self) -> u64;
    /// Allocates every rank's buffers for operations up to `bytes`.
    fn allocate(&mut self, bytes: u64) -> Result<()>;
    /// Writes every rank's input and poisons the rest of its output region.
    fn fill(&mut self, op: &Op) -> Result<()>;
    /// Runs `l.warmup` untimed and `l.iters` timed iterations of `op.agg`
    /// operations each, as [`Loop`] says; `world` is the job whose ranks a
    /// blocking loop's barriers span.
    fn time(&mut self, op: &Op, l: &Loop, world: &dyn World) -> Result<Timing>;
    /// How [`Transport::time`] measures, in a sentence for the records.
    fn timing(&self) -> &'static str;
    /// Runs one operation and waits for it.
    fn run_once(&mut self, op: &Op) -> Result<()>;
    /// Flips every bit of output element `index` of `rank` (the fault hook).
    fn corrupt(&mut self, op: &Op, rank: usize, index: u64) -> Result<()>;
    /// Output elements on this process's ranks that differ from the expected values.
    fn count_wrong(&mut self, op: &Op) -> Result<u64>;
    /// How the buffers were allocated and registered (GPU transports).
    fn buffer_setup(&self) -> Option<BufferSetup> {
        None
    }
    /// GPU memory the communicators and the buffers took (GPU transports).
    fn setup_memory(&self) -> Option<SetupMemory> {
        None
    }
    /// Why this transport cannot run elements of `dtype` reduced by `op`
    /// (None: an operation that does not reduce), if it cannot.
    fn refuses(&self, _dtype: crate::dtype::DataType, _op: Option<crate::dtype::RedOp>) -> Option<String> {
        None
    }
    /// Free memory of each of this process's GPUs now, bytes.
    fn free_memory(&self) -> Result<Vec<i64>> {
        Ok(Vec::new())
    }
}
