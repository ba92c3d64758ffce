//! The record of an exchange run (schema `qbench.exchange`): per register
//! size and memory, the references, local gates, global gates over each
//! wire, the data checks, and the verdict. Its tables, JSON and CSV read it.

use super::{Header, LibraryInfo, RankInfo, Streamed};
use crate::error::{Error, Result};
use crate::statevec::layout::{GlobalOp, Precision};
use crate::stats::Summary;
use serde::{Deserialize, Serialize};

pub const KIND: &str = "exchange";

/// What the hardware under this register can do, measured in the run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct References {
    /// A chunk copied within each rank's memory, read+write bytes / s.
    pub local_copy_gbps: f64,
    /// Bytes of that copy when less than a chunk (one GPU holding the
    /// whole register has no room for a second one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local_copy_bytes: Option<u64>,
    /// Device-to-host and host-to-device at once through pinned memory, per direction.
    pub host_link_gbps: Option<f64>,
    pub host_link_bytes: Option<u64>,
    /// nccl-tests' sendrecv (ring) of the gate pattern's bytes, per direction.
    pub nccl_sendrecv_gbps: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LocalGate {
    pub qubit: u32,
    /// Seconds.
    pub time: Summary,
    /// 2 × chunk bytes (each amplitude read and written once) / median time.
    pub gbps: f64,
    pub of_copy: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GlobalGate {
    /// The wire's name.
    pub transport: String,
    pub pattern: GlobalOp,
    pub qubit: u32,
    /// Bytes each rank sent (and received).
    pub bytes: u64,
    /// Seconds.
    pub exchange: Summary,
    /// The update after the exchange, seconds: combine (gate), or placing
    /// the half and the H on the swapped qubit (swap).
    pub update: Summary,
    pub gbps_per_direction: f64,
    /// (exchange + update) / local gate, medians.
    pub vs_local: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Unavailable {
    pub transport: String,
    pub reason: String,
}

/// A correctness check: every amplitude of every rank after all the
/// operations of one wire (or the local gates), against the exact state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Check {
    /// The wire; None for the local gates.
    pub transport: Option<String>,
    pub amplitudes: u64,
    pub wrong: u64,
}

/// One register size on one kind of memory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RegisterRun {
    pub qubits: u32,
    pub local_qubits: u32,
    pub ranks: usize,
    pub precision: Precision,
    /// "gpu" or "host".
    pub memory: String,
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
        self.local_gates.iter().map(|g| g.time.median).sum::<f64>() / self.local_gates.len().max(1) as f64
    }

    pub fn wrong(&self) -> u64 {
        self.checks.iter().map(|c| c.wrong).sum()
    }
}

/// A circuit model the verdict projects.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", tag = "kind")]
pub enum Circuit {
    /// The quantum Fourier transform: n H, n(n−1)/2 controlled phases
    /// (diagonal, never communicating), ⌊n/2⌋ swaps.
    Qft,
    /// One-qubit gates on random qubits, `global_fraction` of them global
    /// (NaN: k/n, gates on uniformly random qubits).
    Random { global_fraction: f64 },
}

impl Circuit {
    /// "qft", "random" (gates on uniformly random qubits) or "random:F".
    pub fn parse(text: &str) -> Result<Circuit> {
        let bad = || Error::Usage(format!("unknown circuit '{text}': use qft, random or random:FRACTION (0..1)"));
        match text.split_once(':') {
            None if text == "qft" => Ok(Circuit::Qft),
            None if text == "random" => Ok(Circuit::Random { global_fraction: f64::NAN }),
            Some(("random", f)) => {
                let f: f64 = f.parse().map_err(|_| bad())?;
                (0.0..=1.0).contains(&f).then_some(Circuit::Random { global_fraction: f }).ok_or_else(bad)
            }
            _ => Err(bad()),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Projection {
    pub circuit: Circuit,
    pub gates: u64,
    pub one_gpu_s: f64,
    pub spread_s: f64,
    /// one_gpu_s / spread_s.
    pub speedup: f64,
    pub verdict: String,
}

/// Whether spreading the register pays, from the measured gate times.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    pub qubits: u32,
    pub gpus: usize,
    /// A local gate on one rank's chunk, measured, seconds.
    pub local_gate_s: f64,
    /// A gate on the whole register held by one GPU, seconds: measured
    /// when `one_gpu_measured`, else the local gate × 2^k (projected).
    #[serde(default)]
    pub one_gpu_gate_s: Option<f64>,
    #[serde(default)]
    pub one_gpu_measured: bool,
    /// The wire of the fastest global gate; None on one GPU.
    pub best_transport: Option<String>,
    pub global_gate_s: Option<f64>,
    pub swap_s: Option<f64>,
    pub global_vs_local: Option<f64>,
    pub largest_on_one_gpu: u32,
    pub largest_spread: u32,
    pub projections: Vec<Projection>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExchangeRun {
    #[serde(flatten)]
    pub header: Header,
    pub devices: Vec<RankInfo>,
    pub library: Option<LibraryInfo>,
    /// What NVRTC built kernels/statevec.cu as, e.g. "sm_90 cubin (NVRTC 13.0)".
    #[serde(default)]
    pub kernels: Option<String>,
    pub iters: u32,
    pub warmup_iters: u32,
    pub registers: Vec<RegisterRun>,
    pub verdict: Option<Verdict>,
}

impl Streamed for ExchangeRun {
    type Part = RegisterRun;
    fn header_mut(&mut self) -> &mut Header {
        &mut self.header
    }
    fn parts(&self) -> &[Self::Part] {
        &self.registers
    }
}

impl ExchangeRun {
    /// Whether every amplitude was right.
    pub fn verdict(&self) -> Result<()> {
        let wrong: u64 = self.registers.iter().map(RegisterRun::wrong).sum();
        if wrong > 0 {
            return Err(Error::CheckFailed(format!(
                "{wrong} amplitudes differ from the exact state: the exchange delivered the wrong data"
            )));
        }
        Ok(())
    }
}
