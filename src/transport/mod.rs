//! How bytes move between ranks. A transport owns the ranks' buffers and can
//! fill them with the seeded inputs, launch one collective on all of them,
//! time a loop of launches, and count wrong output elements. The harness
//! above it is the same for every transport.

pub mod amplitudes;
pub mod cpu;
#[cfg(feature = "mpi")]
pub mod cpu_mpi;
pub mod nccl;

use crate::dtype::{DataType, RedOp};
use crate::error::Result;
use crate::pattern::Pattern;
use crate::workload::collective::{Collective, Counts, Kind, Source};
use serde::Serialize;

/// One rank as the `# Using devices` block lists it.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct RankInfo {
    pub rank: usize,
    pub group: usize,
    pub pid: u32,
    pub host: String,
    /// The CUDA device ordinal, or the thread index for host ranks.
    pub device: usize,
    /// PCI address "dddd:bb:dd", or "host" for host memory.
    pub bus_id: String,
    pub name: String,
}

/// The communication library under a transport, when there is one.
#[derive(Debug, Clone, Serialize)]
pub struct LibraryInfo {
    pub name: String,
    /// As the library reports it, e.g. 22803 for NCCL 2.28.3.
    pub version_code: i64,
    pub version: String,
    pub path: Option<String>,
}

/// One collective operation as launched: what, on which data, where.
#[derive(Clone, Copy)]
pub struct Op {
    pub spec: &'static dyn Collective,
    pub dtype: DataType,
    /// The reduction; `Sum` for collectives that do not reduce.
    pub redop: RedOp,
    pub root: usize,
    pub counts: Counts,
    pub in_place: bool,
    /// Operations per group launch (nccl-tests -m).
    pub agg: u32,
    pub pattern: Pattern,
}

impl Op {
    pub fn kind(&self) -> Kind {
        self.spec.kind()
    }

    /// Element offset of `rank`'s input: in the send buffer, or in the
    /// receive buffer when in place.
    pub fn input_offset(&self, rank: usize) -> u64 {
        if self.in_place { self.counts.send_inplace_offset * rank as u64 } else { 0 }
    }

    /// Element offset of `rank`'s output in its receive buffer.
    pub fn output_offset(&self, rank: usize) -> u64 {
        if self.in_place { self.counts.recv_inplace_offset * rank as u64 } else { 0 }
    }

    /// Whether `rank`'s output is defined by the collective at all.
    pub fn checks_rank(&self, rank: usize, nranks: usize) -> bool {
        self.counts.recv > 0 && self.spec.source(&self.counts, rank, self.root, nranks, 0) != Source::Unchecked
    }
}

/// Times of one timed cell.
#[derive(Debug, Clone, Default)]
pub struct Timing {
    /// Seconds per operation, one value per timing thread (a thread drives
    /// one or more ranks and contributes the slowest of them).
    pub per_thread: Vec<f64>,
    /// Seconds per operation of each timed iteration (or graph launch), the
    /// slowest thread's.
    pub iterations: Vec<f64>,
}

impl Timing {
    /// Times from one series of per-iteration seconds per thread.
    pub fn from_threads(per_thread: &[Vec<f64>]) -> Timing {
        let iters = per_thread.first().map_or(0, Vec::len);
        Timing {
            per_thread: per_thread.iter().map(|t| t.iter().sum::<f64>() / t.len().max(1) as f64).collect(),
            iterations: (0..iters).map(|k| per_thread.iter().map(|t| t[k]).fold(0.0, f64::max)).collect(),
        }
    }
}

/// What the harness needs from a transport.
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
    /// Runs `warmup` untimed and `iters` timed iterations of `op.agg`
    /// operations each; with `graph` > 0 the timed iterations are captured
    /// once and the capture launched `graph` times.
    fn time(&mut self, op: &Op, warmup: u32, iters: u32, graph: u32) -> Result<Timing>;
    /// Runs one operation and waits for it.
    fn run_once(&mut self, op: &Op) -> Result<()>;
    /// Flips every bit of output element `index` of `rank` (a test hook).
    fn corrupt(&mut self, op: &Op, rank: usize, index: u64) -> Result<()>;
    /// Output elements on this process's ranks that differ from the expected values.
    fn count_wrong(&mut self, op: &Op) -> Result<u64>;
}

/// The host name as nccl-tests prints it: up to the first dot.
pub fn short_hostname() -> String {
    let h = gethostname::gethostname().to_string_lossy().into_owned();
    h.split('.').next().unwrap_or("").to_string()
}
