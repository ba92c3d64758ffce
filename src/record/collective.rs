//! The record of a collective run (schema `qbench.collective`): the
//! resolved options, the devices, one row per size with its out-of-place
//! and in-place cells. The nccl-tests table, JSON and CSV read it.

use super::{Header, LibraryInfo, RankInfo, Streamed};
use crate::dtype::{DataType, RedOp};
use crate::error::{Error, Result};
use crate::stats::Summary;
use crate::units::Step;
use crate::world::split::Split;
use serde::{Deserialize, Serialize};

pub const KIND: &str = "collective";

/// Where the ranks' buffers live and what moves them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TransportKind {
    /// GPU buffers, NCCL collectives.
    Nccl,
    /// Host buffers, ranks as threads or MPI processes, collectives on the CPU.
    Cpu,
}

impl TransportKind {
    /// Every transport of the collectives, as `--transport` lists them.
    pub const ALL: &'static [TransportKind] = &[TransportKind::Nccl, TransportKind::Cpu];

    pub fn name(self) -> &'static str {
        match self {
            TransportKind::Nccl => "nccl",
            TransportKind::Cpu => "cpu",
        }
    }

    /// What moves the data, in a phrase.
    pub fn how(self) -> &'static str {
        match self {
            TransportKind::Nccl => "GPU buffers, NCCL's collectives",
            TransportKind::Cpu => "host buffers, ranks as threads or MPI processes",
        }
    }

    pub fn parse(text: &str) -> Result<TransportKind> {
        TransportKind::ALL.iter().copied().find(|t| t.name() == text).ok_or_else(|| {
            let names: Vec<&str> = TransportKind::ALL.iter().map(|t| t.name()).collect();
            Error::Usage(format!("unknown transport '{text}': use {}", names.join(" or ")))
        })
    }
}

/// How per-rank times combine into the reported time (`-a`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Average {
    Rank0,
    Mean,
    Min,
    Max,
}

impl Average {
    /// nccl-tests' `-a` code: 0 rank 0, 1 mean, 2 minimum, 3 maximum.
    pub fn from_code(code: u8) -> Average {
        match code {
            0 => Average::Rank0,
            2 => Average::Min,
            3 => Average::Max,
            _ => Average::Mean,
        }
    }

    /// Combines per-thread times.
    pub fn reduce(self, per_thread: &[f64]) -> f64 {
        if per_thread.is_empty() {
            return 0.0;
        }
        match self {
            Average::Rank0 => per_thread[0],
            Average::Mean => per_thread.iter().sum::<f64>() / per_thread.len() as f64,
            Average::Min => per_thread.iter().copied().fold(f64::INFINITY, f64::min),
            Average::Max => per_thread.iter().copied().fold(0.0, f64::max),
        }
    }
}

/// The options of a run, as resolved (defaults applied, "all" expanded).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Config {
    pub nranks: usize,
    pub nthreads: usize,
    pub ngpus: usize,
    pub minbytes: u64,
    pub maxbytes: u64,
    pub step: Step,
    pub warmup_iters: u32,
    pub iters: u32,
    pub agg_iters: u32,
    pub run_cycles: u32,
    pub check: u32,
    pub cudagraph: u32,
    pub average: Average,
    pub timeout_s: u64,
    pub datatypes: Vec<DataType>,
    pub ops: Vec<RedOp>,
    pub root: i64,
    pub seed: u64,
}

/// One half of a table row: out-of-place or in-place.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Cell {
    pub time_us: f64,
    pub algbw_gbps: f64,
    pub busbw_gbps: f64,
    /// Wrong elements summed over all ranks; None when not checked.
    pub wrong: Option<u64>,
    /// Per-iteration times, µs.
    pub iterations: Summary,
}

impl Cell {
    /// The figure a readiness step names: `busbw`, `algbw` or `time_us`.
    pub fn figure(&self, metric: &str) -> Option<f64> {
        match metric {
            "busbw" => Some(self.busbw_gbps),
            "algbw" => Some(self.algbw_gbps),
            "time_us" => Some(self.time_us),
            _ => None,
        }
    }
}

/// One table row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SizeRecord {
    pub cycle: u32,
    /// Bytes, as nccl-tests' size column: the larger of send and receive.
    pub size: u64,
    /// Elements per rank passed to the library (nccl-tests' count column).
    pub count: u64,
    #[serde(rename = "type")]
    pub dtype: DataType,
    /// None prints as "none": the collective does not use an op.
    pub redop: Option<RedOp>,
    /// -1 for collectives without a root.
    pub root: i64,
    pub out_of_place: Cell,
    pub in_place: Cell,
    /// Under a split (`NCCL_TESTS_SPLIT`), each communicator's own row: the
    /// cells above combine every communicator's times, as nccl-tests does.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<GroupRow>,
}

/// One communicator's half of a row of a split run: its own times
/// combined over its ranks (`-a`), its bandwidths with its own rank
/// count, its wrong elements.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupRow {
    /// The colour.
    pub group: usize,
    pub count: u64,
    pub out_of_place: Cell,
    pub in_place: Cell,
}

/// How a split run divided the job's processes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Groups {
    #[serde(flatten)]
    pub split: Split,
    /// Each colour and its ranks (job ranks), in colour order.
    pub groups: Vec<Group>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Group {
    pub group: usize,
    pub ranks: Vec<usize>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MinBandwidth {
    pub required_gbps: f64,
    pub ok: bool,
}

/// A whole collective run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CollectiveRun {
    #[serde(flatten)]
    pub header: Header,
    /// The collective's name, e.g. "all_reduce".
    pub collective: String,
    /// The nccl-tests binary it stands for, e.g. "all_reduce_perf".
    pub program: String,
    pub transport: TransportKind,
    pub config: Config,
    pub library: Option<LibraryInfo>,
    pub devices: Vec<RankInfo>,
    /// Set when `NCCL_TESTS_SPLIT` ran one communicator per colour.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split: Option<Groups>,
    /// How the time column and the per-iteration figures were measured.
    #[serde(default)]
    pub timing: String,
    /// Set when the sizes were cut to fit the devices' memory.
    pub max_bytes_reduced_to: Option<u64>,
    pub results: Vec<SizeRecord>,
    /// Cells with at least one wrong element (nccl-tests' "Out of bounds values").
    pub out_of_bounds: u64,
    pub wrong_elements: u64,
    /// Mean busbw over every cell, GB/s.
    pub avg_busbw_gbps: f64,
    pub min_bandwidth: Option<MinBandwidth>,
}

impl Streamed for CollectiveRun {
    type Part = SizeRecord;
    fn header(&self) -> &Header {
        &self.header
    }
    fn header_mut(&mut self) -> &mut Header {
        &mut self.header
    }
    fn parts(&self) -> &[Self::Part] {
        &self.results
    }
}

impl CollectiveRun {
    /// The hosts of job ranks `ranks`, each once, in rank order.
    pub fn hosts_of(&self, ranks: &[usize]) -> Vec<&str> {
        let mut hosts: Vec<&str> = Vec::new();
        for d in ranks.iter().filter_map(|&r| self.devices.iter().find(|d| d.rank == r)) {
            if !hosts.contains(&d.host.as_str()) {
                hosts.push(&d.host);
            }
        }
        hosts
    }

    /// Adds a row and its cells to the totals.
    pub fn push(&mut self, row: SizeRecord) {
        for c in [&row.out_of_place, &row.in_place] {
            if let Some(w) = c.wrong.filter(|&w| w > 0) {
                self.out_of_bounds += 1;
                self.wrong_elements += w;
            }
        }
        self.results.push(row);
        let cells: Vec<f64> =
            self.results.iter().flat_map(|r| [r.out_of_place.busbw_gbps, r.in_place.busbw_gbps]).collect();
        self.avg_busbw_gbps = cells.iter().sum::<f64>() / cells.len() as f64;
    }

    /// Sets the `NCCL_TESTS_MIN_BW` verdict from the average bus bandwidth.
    pub fn require_bandwidth(&mut self, required_gbps: f64) {
        self.min_bandwidth = Some(MinBandwidth { required_gbps, ok: self.avg_busbw_gbps >= 0.9 * required_gbps });
    }

    /// Whether the data was right and fast enough.
    pub fn verdict(&self) -> Result<()> {
        if self.wrong_elements > 0 {
            return Err(Error::CheckFailed(format!(
                "{} wrong elements in {} cells: the data the collective delivered is not what was sent",
                self.wrong_elements, self.out_of_bounds
            )));
        }
        if let Some(m) = self.min_bandwidth.as_ref().filter(|m| !m.ok) {
            return Err(Error::CheckFailed(format!(
                "average bus bandwidth {:.2} GB/s is below 90% of NCCL_TESTS_MIN_BW={}",
                self.avg_busbw_gbps, m.required_gbps
            )));
        }
        Ok(())
    }
}
