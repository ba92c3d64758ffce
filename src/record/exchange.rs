//! The record of an exchange run (schema `qbench.exchange`): per register
//! size and memory, the references, local gates, global gates over each
//! wire, the data checks, and the verdict. Its tables, JSON and CSV read it.

use super::{Header, LibraryInfo, RankInfo, Streamed};
use crate::error::{Error, Result};
use crate::statevec::layout::{GlobalOp, Precision};
use crate::statevec::schedule::Schedule;
use crate::statevec::step::Class;
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
    /// What starting one step on k host ranks of a process costs (its
    /// threads started and joined, the processes agreeing on its time),
    /// nothing done: host registers only.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub step_dispatch: Vec<Dispatch>,
}

/// The cost of starting an empty step on `ranks` threads, seconds (median).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Dispatch {
    pub ranks: usize,
    pub seconds: f64,
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

/// One class of step timed on a register, and checked: a row of the
/// gate-class table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClassTime {
    pub class: Class,
    /// The physical qubits it acted on (the global ones are the ranks' bits).
    pub qubits: Vec<u32>,
    /// The wire, for a class that exchanges.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport: Option<String>,
    /// Bytes each rank sent (and received); 0 for a local class.
    pub bytes: u64,
    /// Seconds of the exchange, for a class that exchanges.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exchange: Option<Summary>,
    /// Seconds of the local work: the gate, or the packing and update
    /// around an exchange.
    pub update: Summary,
    /// The medians' sum, seconds.
    pub time_s: f64,
    /// time_s over the time of a chunk copy within a rank (1 = a copy's time).
    pub vs_copy: f64,
    /// Every amplitude checked after the class's runs.
    pub amplitudes: u64,
    pub wrong: u64,
}

/// What a circuit's run spent on one class of step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClassShare {
    pub class: Class,
    pub steps: u64,
    /// Seconds, summed over the class's steps of the median round.
    pub seconds: f64,
}

/// One circuit run on a register, end to end, under a schedule and over a
/// wire, every amplitude checked at the end.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CircuitRun {
    /// qft, random:GATES:SEED, or the OpenQASM file.
    pub circuit: String,
    /// The circuit's gates.
    pub gates: u64,
    /// quest or swap; None on one rank (nothing is global).
    pub schedule: Option<Schedule>,
    /// The wire of its exchanges; None on one rank.
    pub transport: Option<String>,
    /// The register's steps: the gates, the swaps the schedule adds, less
    /// the SWAP gates it turns into relabellings.
    pub steps: u64,
    pub exchanges: u64,
    /// Bytes each rank sent over the whole circuit.
    pub bytes_per_rank: u64,
    /// Seconds end to end on the host clock, over the rounds.
    pub time: Summary,
    /// Where the median round's time went, class by class.
    pub by_class: Vec<ClassShare>,
    /// The same steps priced from the register's gate-class table, seconds
    /// (None where a step's class was not timed).
    pub projected_s: Option<f64>,
    pub amplitudes: u64,
    pub wrong: u64,
}

/// Whether spreading the register pays for a circuit: its time on one GPU
/// (measured, or projected from this register's local classes) against
/// the fastest schedule and wire measured on the spread register; and,
/// given a simulator's own one-GPU time, the same question for it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    pub circuit: String,
    pub qubits: u32,
    pub gpus: usize,
    /// The circuit on one GPU with qbench's kernels, seconds: measured in
    /// this run or in a record given, or projected.
    pub one_gpu_s: Option<f64>,
    /// Where `one_gpu_s` comes from, in words.
    pub one_gpu_from: String,
    /// Whether one GPU holds the register.
    pub one_gpu_fits: bool,
    /// The fastest run on the spread register, measured.
    pub spread_s: f64,
    pub schedule: Option<Schedule>,
    pub transport: Option<String>,
    /// one_gpu_s / spread_s: qbench's kernels on both sides.
    pub speedup: Option<f64>,
    /// Seconds of that run in steps that exchange nothing (its median
    /// round, as the rank that wrote the record timed them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local_s: Option<f64>,
    /// spread_s − local_s: the exchanges and the waits on them, the part
    /// that does not depend on whose kernels run the local gates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exchange_s: Option<f64>,
    /// The user's simulator priced on the spread register (`--simulator-time`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub simulator: Option<SimulatorPrice>,
    pub verdict: String,
}

/// A simulator's one-GPU time of a circuit, as its user gave it, and its
/// spread time priced from it: the local steps scaled by its speed against
/// qbench's (its one-GPU seconds / qbench's), the exchange seconds as
/// measured, since the wire moves the same bytes whoever computes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SimulatorPrice {
    /// Given, seconds.
    pub one_gpu_s: f64,
    /// one_gpu_s × local_s / the decision's one_gpu_s + exchange_s.
    pub spread_s: f64,
    /// one_gpu_s / spread_s.
    pub speedup: f64,
}

/// What a circuit would cost on a number of GPUs this run did not
/// measure, under one schedule over one wire: projected, from measured runs
/// or a profile's figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Forecast {
    pub circuit: String,
    pub qubits: u32,
    /// Ranks (processes, or GPUs of one process) the register spreads over.
    pub gpus: usize,
    /// The precision the circuit is priced in.
    pub precision: Precision,
    /// Ranks sharing one device, and the nodes the devices fill.
    #[serde(default = "one")]
    pub sharing: usize,
    #[serde(default = "one")]
    pub nodes: usize,
    /// None on one rank (nothing is global).
    pub schedule: Option<Schedule>,
    pub transport: Option<String>,
    /// Bytes a device holds under the schedule: its ranks' chunks and their
    /// exchange buffers (QuEST's as large as the chunk, the swap schedule's half).
    pub bytes_per_gpu: u64,
    /// Bytes a node holds: its devices' together (what host ranks must fit in).
    #[serde(default)]
    pub bytes_per_node: u64,
    #[serde(default)]
    pub fits: bool,
    /// The circuit's projected seconds; None where it does not fit or a
    /// step has no figure.
    pub projected_s: Option<f64>,
    /// Those seconds by term of the model (launch, memory, transfer, update).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub terms: Vec<Share>,
    /// The exchanging steps' seconds by the level their messages crossed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub levels: Vec<Share>,
    /// This row's seconds over the fastest row's of the circuit that fits
    /// (1 for the fastest).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vs_best: Option<f64>,
    /// The projected time on one rank over this one.
    pub speedup: Option<f64>,
    /// `--simulator-time`: that simulator's time here, its local steps at
    /// its own speed and the exchanging steps as projected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub simulator_s: Option<f64>,
    pub verdict: String,
    /// Where every figure of the row comes from.
    pub source: String,
}

fn one() -> usize {
    1
}

/// A named part of a projected time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Share {
    pub name: String,
    pub seconds: f64,
}

/// A plan's answer for one circuit: the count to run on, in one line, and
/// the settings each simulator needs for it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanAnswer {
    pub circuit: String,
    pub qubits: u32,
    pub precision: Precision,
    /// The fastest row's count, schedule and wire; None where nothing fits.
    pub gpus: Option<usize>,
    pub schedule: Option<Schedule>,
    pub transport: Option<String>,
    /// "spreading qft(34) pays from 4 GPUs; 8 is 1.9× faster than 4; …"
    pub answer: String,
    /// What the plan could not know, priced at nothing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unknown: Vec<String>,
    /// Wires not asked for by name that do not reach a count's level, left
    /// out of its rows.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<String>,
    pub settings: Vec<SimulatorSettings>,
}

/// The figures a plan prices from, with their source: the local pass and
/// each wire at each level, α per message (or step) and β.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanFigures {
    pub source: String,
    /// Host ranks: a node's cores, sharing its memory (`gpu_memory` is then
    /// the node's, `gpus_per_node` its cores).
    #[serde(default)]
    pub host: bool,
    pub gpu_memory: u64,
    pub gpus_per_node: usize,
    pub local: Figure,
    /// A step's cost within a circuit besides its work (the local pass's α
    /// where no circuit was measured).
    #[serde(default)]
    pub step_s: f64,
    /// Starting a step on k host ranks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dispatch: Vec<Dispatch>,
    pub wires: Vec<Figure>,
}

/// What a plan counts: GPUs, or host ranks (a node's cores share its memory).
pub fn noun(host: bool, n: usize) -> &'static str {
    match (host, n == 1) {
        (false, true) => "GPU",
        (false, false) => "GPUs",
        (true, true) => "rank",
        (true, false) => "ranks",
    }
}

/// α + bytes/β of one part of a machine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Figure {
    /// "local pass", or a wire's name and level.
    pub name: String,
    pub alpha_s: f64,
    pub gbps: f64,
    /// At a shared device: how many ranks shared it when the rate was found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sharing: Option<usize>,
    /// At a shared device, for a wire that stages through host memory: what
    /// those ranks together reached through the GPU's host link, GB/s a
    /// direction (other counts pay their share of it; model/transfer.rs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_link_gbps: Option<f64>,
}

/// The settings a simulator needs to run the plan's answer, with the rule
/// they follow and whether qbench can check them here.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SimulatorSettings {
    pub simulator: String,
    pub lines: Vec<String>,
    pub rule: String,
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
    /// Every class of step, timed and checked (records before the classes
    /// have the local and global gates above instead).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub classes: Vec<ClassTime>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub circuits: Vec<CircuitRun>,
}

impl RegisterRun {
    /// The mean of the local gates' median times.
    pub fn local_gate_s(&self) -> f64 {
        self.local_gates.iter().map(|g| g.time.median).sum::<f64>() / self.local_gates.len().max(1) as f64
    }

    pub fn wrong(&self) -> u64 {
        self.checks.iter().map(|c| c.wrong).sum::<u64>()
            + self.classes.iter().map(|c| c.wrong).sum::<u64>()
            + self.circuits.iter().map(|c| c.wrong).sum::<u64>()
    }

    /// The local H's (qubit, GB/s, share of a copy), from the classes or,
    /// in records before them, the local gates.
    pub fn local_rates(&self) -> Vec<(u32, f64, f64)> {
        if self.classes.is_empty() {
            return self.local_gates.iter().map(|g| (g.qubit, g.gbps, g.of_copy)).collect();
        }
        let chunk = self.chunk_bytes as f64;
        self.classes
            .iter()
            .filter(|c| c.class == Class::H)
            .map(|c| (c.qubits[0], 2.0 * chunk / c.time_s / 1e9, 1.0 / c.vs_copy))
            .collect()
    }

    /// Every exchange's (wire, GB/s per direction), from the classes or,
    /// in records before them, the global gates.
    pub fn exchange_rates(&self) -> Vec<(String, f64)> {
        if self.classes.is_empty() {
            return self.global_gates.iter().map(|g| (g.transport.clone(), g.gbps_per_direction)).collect();
        }
        self.classes
            .iter()
            .filter_map(|c| Some((c.transport.clone()?, c.bytes as f64 / c.exchange?.median / 1e9)))
            .collect()
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
    /// The verdict of records before circuits ran: projections from the
    /// gates on the largest register.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Verdict>,
    /// Whether spreading pays, circuit by circuit, from the circuits run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub decisions: Vec<Decision>,
    /// Bytes of one rank's device (a GPU's memory), for forecasts made
    /// from this record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_memory: Option<u64>,
    /// GPU counts this run did not measure, projected (`--plan`, or `-g`
    /// counts beyond this node).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub forecasts: Vec<Forecast>,
    /// The plan's answer per circuit, from the forecasts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub plans: Vec<PlanAnswer>,
    /// The figures the forecasts priced from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_figures: Option<Box<PlanFigures>>,
    /// Cores of the node that ran host ranks (what shares them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_cores: Option<usize>,
    /// What was asked for and could not run on this machine at all (GPU
    /// wires where the GPU libraries are missing), with why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unavailable: Vec<Unavailable>,
    /// How the text shows this run, not kept: the gate classes' table
    /// (`--classes`), which the record holds either way.
    #[serde(skip)]
    pub classes_shown: bool,
}

impl Streamed for ExchangeRun {
    type Part = RegisterRun;
    fn header(&self) -> &Header {
        &self.header
    }
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
