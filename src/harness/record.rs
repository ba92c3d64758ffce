//! The typed records a collective run produces. Every renderer (the
//! nccl-tests table, JSON, CSV) reads these and nothing else.

use crate::cli::{Average, TransportKind};
use crate::dtype::{DataType, RedOp};
use crate::transport::{LibraryInfo, RankInfo};
use crate::units::Step;
use crate::workload::collective::Kind;
use serde::Serialize;

pub const SCHEMA: &str = "qbench.collective.v1";

/// What every run's record starts with: which schema, which qbench, the
/// command line, where and when.
#[derive(Debug, Clone, Serialize)]
pub struct RunHeader {
    pub schema: &'static str,
    pub qbench_version: &'static str,
    pub args: Vec<String>,
    pub host: String,
    pub start_time: String,
    pub end_time: Option<String>,
}

impl RunHeader {
    pub fn start(schema: &'static str) -> RunHeader {
        RunHeader {
            schema,
            qbench_version: env!("CARGO_PKG_VERSION"),
            args: std::env::args().collect(),
            host: crate::transport::short_hostname(),
            start_time: super::now(),
            end_time: None,
        }
    }

    pub fn finish(&mut self) {
        self.end_time = Some(super::now());
    }
}

/// The options of a run, as resolved (defaults applied, "all" expanded).
#[derive(Debug, Clone, Serialize)]
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

/// Per-iteration time distribution of one cell, from an HDR histogram.
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct IterStats {
    pub samples: u64,
    pub min_us: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub max_us: f64,
}

/// One half of a table row: out-of-place or in-place.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Cell {
    pub time_us: f64,
    pub algbw_gbps: f64,
    pub busbw_gbps: f64,
    /// Wrong elements summed over all ranks; None when not checked.
    pub wrong: Option<u64>,
    pub iterations: IterStats,
}

/// One table row.
#[derive(Debug, Clone, Serialize)]
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
}

#[derive(Debug, Clone, Serialize)]
pub struct MinBandwidth {
    pub required_gbps: f64,
    pub ok: bool,
}

/// A whole collective run.
#[derive(Debug, Clone, Serialize)]
pub struct CollectiveRun {
    #[serde(flatten)]
    pub header: RunHeader,
    pub collective: Kind,
    pub program: &'static str,
    pub transport: TransportKind,
    pub config: Config,
    pub library: Option<LibraryInfo>,
    pub devices: Vec<RankInfo>,
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
