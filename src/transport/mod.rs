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
use crate::record::{LibraryInfo, RankInfo};
pub use collective::{Buf, Call, Collective, Counts, Op, Primitives, Region, Source};

/// Times of one timed cell.
#[derive(Debug, Clone, Default)]
pub struct Timing {
    /// Seconds per operation, one value per timing thread (a thread drives
    /// one or more ranks and contributes the slowest of them).
    pub per_thread: Vec<f64>,
    /// Seconds per operation of each timed iteration (or graph launch), the
    /// slowest thread's (nccl: from a separate pass with events).
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
    /// Runs `warmup` untimed and `iters` timed iterations of `op.agg`
    /// operations each; with `graph` > 0 the timed iterations are captured
    /// once and the capture launched `graph` times.
    fn time(&mut self, op: &Op, warmup: u32, iters: u32, graph: u32) -> Result<Timing>;
    /// How [`Transport::time`] measures, in a sentence for the records.
    fn timing(&self) -> &'static str;
    /// Runs one operation and waits for it.
    fn run_once(&mut self, op: &Op) -> Result<()>;
    /// Flips every bit of output element `index` of `rank` (the fault hook).
    fn corrupt(&mut self, op: &Op, rank: usize, index: u64) -> Result<()>;
    /// Output elements on this process's ranks that differ from the expected values.
    fn count_wrong(&mut self, op: &Op) -> Result<u64>;
}
