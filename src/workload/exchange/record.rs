//! The records of an exchange run; every rendering reads these.

use super::layout::{Pattern, Precision};
use super::register::Wire;
use crate::transport::{LibraryInfo, RankInfo};
use serde::Serialize;

pub const SCHEMA: &str = "qbench.exchange.v1";

/// Seconds of repeated samples of one operation.
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct Stats {
    pub median_s: f64,
    pub min_s: f64,
    pub max_s: f64,
    pub samples: usize,
}

impl Stats {
    pub fn of(samples: &[f64]) -> Stats {
        let mut v = samples.to_vec();
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = match n {
            0 => 0.0,
            _ if n % 2 == 1 => v[n / 2],
            _ => (v[n / 2 - 1] + v[n / 2]) / 2.0,
        };
        Stats {
            median_s: median,
            min_s: v.first().copied().unwrap_or(0.0),
            max_s: v.last().copied().unwrap_or(0.0),
            samples: n,
        }
    }
}

/// What the hardware under this register can do, measured in the run.
#[derive(Debug, Clone, Default, Serialize)]
pub struct References {
    /// A chunk copied within each rank's memory, read+write bytes / s.
    pub local_copy_gbps: f64,
    /// Device-to-host and host-to-device at once through pinned memory, per direction.
    pub host_link_gbps: Option<f64>,
    pub host_link_bytes: Option<u64>,
    /// nccl-tests' sendrecv (ring) of the gate pattern's bytes, per direction.
    pub nccl_sendrecv_gbps: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct LocalGate {
    pub qubit: u32,
    pub time: Stats,
    /// 2 × chunk bytes (each amplitude read and written once) / median time.
    pub gbps: f64,
    pub of_copy: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct GlobalGate {
    pub transport: Wire,
    pub pattern: Pattern,
    pub qubit: u32,
    /// Bytes each rank sent (and received).
    pub bytes: u64,
    pub exchange: Stats,
    /// The update after the exchange: combine (gate), or placing the half
    /// and the H on the swapped qubit (swap).
    pub update: Stats,
    pub gbps_per_direction: f64,
    /// (exchange + update) / local gate, medians.
    pub vs_local: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Unavailable {
    pub transport: Wire,
    pub reason: String,
}

/// A transport's correctness check: every amplitude of every rank after
/// all its operations, against the exact state.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    pub transport: Option<Wire>,
    pub amplitudes: u64,
    pub wrong: u64,
}

/// One register size on one kind of memory.
#[derive(Debug, Clone, Serialize)]
pub struct RegisterRun {
    pub qubits: u32,
    pub local_qubits: u32,
    pub ranks: usize,
    pub precision: Precision,
    /// "gpu" or "host".
    pub memory: &'static str,
    pub chunk_bytes: u64,
    pub references: References,
    pub local_gates: Vec<LocalGate>,
    pub global_gates: Vec<GlobalGate>,
    pub checks: Vec<Check>,
    pub unavailable: Vec<Unavailable>,
}

impl RegisterRun {
    /// The mean of the local gates' median times.
    pub fn local_gate_s(&self) -> f64 {
        self.local_gates.iter().map(|g| g.time.median_s).sum::<f64>() / self.local_gates.len().max(1) as f64
    }

    pub fn wrong(&self) -> u64 {
        self.checks.iter().map(|c| c.wrong).sum()
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct ExchangeRun {
    #[serde(flatten)]
    pub header: crate::harness::record::RunHeader,
    pub devices: Vec<RankInfo>,
    pub library: Option<LibraryInfo>,
    pub iters: u32,
    pub warmup_iters: u32,
    pub registers: Vec<RegisterRun>,
    pub verdict: Option<super::verdict::Verdict>,
}
