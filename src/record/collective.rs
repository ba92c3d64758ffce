//! The record of a collective run (schema `qbench.collective`): the
//! resolved options, the devices, one row per size with its out-of-place
//! and in-place cells. The nccl-tests table, JSON and CSV read it.

use super::split::Split;
use super::{Header, LibraryInfo, RankInfo, Streamed};
use crate::dtype::{DataType, RedOp};
use crate::error::{Error, Result};
use crate::stats::Summary;
use crate::units::Growth;
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
    /// The ranks the collective ran over (0 in a record stopped before its
    /// transport opened).
    pub nranks: usize,
    pub nthreads: usize,
    pub ngpus: usize,
    pub minbytes: u64,
    pub maxbytes: u64,
    pub step: Growth,
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
    /// -z: 0 launches back to back; 1 waits and barriers after each launch;
    /// 2 waits after each launch; 3 waits and barriers after each timed
    /// iteration, the barrier left out of the time.
    #[serde(default)]
    pub blocking: u8,
    /// -C: the time column is the host time spent launching.
    #[serde(default)]
    pub report_cputime: bool,
    /// -S: each row ends with the time it was measured.
    #[serde(default)]
    pub report_timestamps: bool,
    /// -u: both buffers start this many elements past their allocation.
    #[serde(default)]
    pub unalign: u64,
    /// -I: per-iteration columns; -K: iterations they leave out first.
    #[serde(default)]
    pub per_iter_timing: bool,
    #[serde(default)]
    pub per_iter_skip: u32,
    /// -M: the GPU memory the setup and the collectives took.
    #[serde(default)]
    pub memory_report: bool,
    /// -R: how the buffers are registered with the communicators.
    #[serde(default)]
    pub register: Registration,
    /// -x: NCCL's CTA policy for the communicators (NCCL's default when unset).
    #[serde(default)]
    pub cta_policy: Option<i32>,
}

/// nccl-tests' `-R`: the buffers left alone, registered with each
/// communicator (ncclCommRegister), or registered as symmetric windows
/// across all of them (ncclCommWindowRegister, NCCL 2.27 and later).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Registration {
    #[default]
    None,
    Local,
    Symmetric,
}

impl Registration {
    /// nccl-tests' `-R` code.
    pub fn from_code(code: u8) -> Option<Registration> {
        match code {
            0 => Some(Registration::None),
            1 => Some(Registration::Local),
            2 => Some(Registration::Symmetric),
            _ => None,
        }
    }

    pub fn code(self) -> u8 {
        self as u8
    }
}

/// Where the transport's buffers came from and how they were registered,
/// as it happened (a request the library could not honour says so).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BufferSetup {
    /// "ncclMemAlloc" (NCCL 2.19 and later, as nccl-tests) or "cuMemAlloc".
    pub allocator: String,
    /// The registration that took effect.
    pub register: Registration,
    /// Why the registration is not the one asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// nccl-tests' `-M` figures: GPU memory taken, the most on any one GPU of
/// the job, from the free memory the driver reports before and after.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MemoryUse {
    /// Creating the communicators.
    pub initialization_bytes: i64,
    /// The send and receive buffers and their registration.
    pub user_allocated_bytes: i64,
    /// The sweep's collectives (NCCL's lazily made connections and buffers).
    pub collective_bytes: i64,
}

/// nccl-tests' `-I` figures of one cell: each timed iteration's time (CUDA
/// events; the slowest process's), summarised after leaving out the first
/// `skipped` (-K) as nccl-tests does (p50 the upper median, p95 and p99 by
/// nearest rank, the population's standard deviation).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PerIter {
    pub skipped: u32,
    pub min_us: f64,
    pub max_us: f64,
    pub avg_us: f64,
    pub p50_us: f64,
    pub p95_us: f64,
    pub p99_us: f64,
    pub stdev_us: f64,
    pub cv_pct: f64,
    /// Every timed iteration, the skipped ones included.
    pub times_us: Vec<f64>,
    /// Under MPI, each process's own series (the slowest of its GPUs), so
    /// that a straggler shows; `times_us` is their maximum.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub per_process_times_us: Vec<Vec<f64>>,
}

impl PerIter {
    /// The figures of `times_us` with the first `skip` left out (none when
    /// that leaves nothing).
    pub fn of(times_us: &[f64], skip: u32) -> Option<PerIter> {
        let mut v: Vec<f64> = times_us.get(skip as usize..).filter(|v| !v.is_empty())?.to_vec();
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let at = |pct: usize| v[(n * pct).div_ceil(100).clamp(1, n) - 1];
        let avg = v.iter().sum::<f64>() / n as f64;
        let stdev = (v.iter().map(|t| (t - avg) * (t - avg)).sum::<f64>() / n as f64).sqrt();
        Some(PerIter {
            skipped: skip,
            min_us: v[0],
            max_us: v[n - 1],
            avg_us: avg,
            p50_us: v[n / 2],
            p95_us: at(95),
            p99_us: at(99),
            stdev_us: stdev,
            cv_pct: if avg > 0.0 { stdev / avg * 100.0 } else { 0.0 },
            times_us: times_us.to_vec(),
            per_process_times_us: Vec::new(),
        })
    }
}

/// One half of a table row: out-of-place or in-place.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cell {
    pub time_us: f64,
    pub algbw_gbps: f64,
    pub busbw_gbps: f64,
    /// Wrong elements summed over all ranks; None when not checked.
    pub wrong: Option<u64>,
    /// Per-iteration times, µs.
    pub iterations: Summary,
    /// -C: the host time spent launching, per operation, combined over the
    /// ranks as the time is (`-a`); the bandwidths stay the time's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_time_us: Option<f64>,
    /// -I: the per-iteration figures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_iter: Option<PerIter>,
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
    /// -S: local time when the row was measured, "%Y-%m-%d %H:%M:%S".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
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
    /// The redop column of a collective that uses no op: nccl-tests'
    /// "none", or "" (hypercube_perf).
    #[serde(default = "none_label", skip_serializing_if = "is_none_label")]
    pub no_op_label: String,
    pub transport: TransportKind,
    pub config: Config,
    pub library: Option<LibraryInfo>,
    /// The NCCL variables (`NAME=value`) the run started with.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nccl_env: Vec<String>,
    pub devices: Vec<RankInfo>,
    /// Set when `NCCL_TESTS_SPLIT` ran one communicator per colour.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split: Option<Groups>,
    /// How the time column and the per-iteration figures were measured.
    #[serde(default)]
    pub timing: String,
    /// Set when the sizes were cut to fit the devices' memory.
    pub max_bytes_reduced_to: Option<u64>,
    /// Types and ops of `-d all` / `-o all` the transport cannot run, each
    /// with why (fp8 before NCCL 2.24 or on GPUs before compute capability 9.0).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<String>,
    /// How the GPU buffers were allocated and registered (GPU transports).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buffers: Option<BufferSetup>,
    /// -M: the GPU memory the run took.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<MemoryUse>,
    pub results: Vec<SizeRecord>,
    /// Cells with at least one wrong element (nccl-tests' "Out of bounds values").
    pub out_of_bounds: u64,
    pub wrong_elements: u64,
    /// Mean busbw over every cell, GB/s.
    pub avg_busbw_gbps: f64,
    pub min_bandwidth: Option<MinBandwidth>,
}

fn none_label() -> String {
    "none".into()
}

fn is_none_label(label: &str) -> bool {
    label == "none"
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

    /// What row `r`'s redop column says.
    pub fn op_label(&self, r: &SizeRecord) -> &str {
        r.redop.map_or(&self.no_op_label, |o| o.name())
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

#[cfg(test)]
mod tests {
    use super::PerIter;

    /// nccl-tests' computeIterStats: sorted[n/2], nearest-rank p95 and p99,
    /// the population's deviation.
    #[test]
    fn per_iteration_figures_are_nccl_tests() {
        let times: Vec<f64> = [100.0, 100.0, 5.0, 1.0, 2.0, 3.0, 4.0].to_vec();
        let p = PerIter::of(&times, 2).unwrap();
        assert_eq!((p.min_us, p.max_us, p.p50_us, p.p95_us, p.p99_us), (1.0, 5.0, 3.0, 5.0, 5.0));
        assert_eq!((p.avg_us, p.stdev_us), (3.0, 2f64.sqrt()));
        assert!((p.cv_pct - 100.0 * 2f64.sqrt() / 3.0).abs() < 1e-12);
        assert_eq!(p.times_us.len(), 7);
        let hundred: Vec<f64> = (1..=100).map(f64::from).collect();
        let p = PerIter::of(&hundred, 0).unwrap();
        assert_eq!((p.p50_us, p.p95_us, p.p99_us), (51.0, 95.0, 99.0));
        assert!(PerIter::of(&times, 7).is_none());
    }
}
