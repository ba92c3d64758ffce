//! The price of a distributed register's steps on a machine the user may
//! not have: each step is the sum of its terms (one file each, listed in
//! [`TERMS`]), every figure a term uses comes from measured records
//! (`fit.rs`) or from a profile's `[machine]`, each with its source. The
//! model is latency plus bandwidth at every level a message can cross
//! (ranks sharing one device, devices of one node, nodes across the
//! fabric), as qHiPSTER and mpiQulacs price an exchange, on top of each
//! device's local pass.

pub mod described;
pub mod fit;
mod dispatch;
mod launch;
mod memory;
pub mod settings;
mod transfer;
mod update;

use crate::record::exchange::{ClassTime, Dispatch, Figure, PlanFigures};
use crate::statevec::layout::Layout;
use crate::statevec::step::{Class, PhysicalGate};
use serde::{Deserialize, Serialize};

/// Where an exchange's partner sits, from nearest to farthest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// Another rank on the same device (processes sharing a GPU, threads
    /// sharing a core).
    Device,
    /// Another device of the same node (NVLink, PCIe, host memory).
    Node,
    /// Another node, across the fabric.
    Fabric,
}

impl Level {
    pub fn name(self) -> &'static str {
        match self {
            Level::Device => "shared device",
            Level::Node => "within a node",
            Level::Fabric => "across nodes",
        }
    }
}

/// A cost of α per message plus bytes over β.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Rate {
    /// Seconds per message (or per step).
    pub alpha_s: f64,
    /// Bytes per second over 1e9.
    pub gbps: f64,
}

impl Rate {
    /// Seconds of `messages` messages carrying `bytes` in all.
    pub fn seconds(&self, messages: f64, bytes: f64) -> f64 {
        messages * self.alpha_s + bytes / (self.gbps * 1e9)
    }
}

/// One level of a wire: its rate per rank and direction with every rank
/// exchanging at once, and how many ranks shared the level's link when
/// that rate was found (a link shared by more ranks gives each less).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LevelRate {
    pub level: Level,
    pub rate: Rate,
    pub sharing: usize,
    /// At the shared device, where the ranks do not share all of the path:
    /// what all of them together reach through the part they share, per
    /// direction (processes staging a GPU's amplitudes share its host link,
    /// crossed twice, but each makes its own copies; transfer.rs). None:
    /// they share it all, and k ranks each get `sharing`/k of the rate.
    pub ceiling_gbps: Option<f64>,
}

/// What a wire costs at each level it reaches.
#[derive(Debug, Clone, PartialEq)]
pub struct WireFigures {
    pub name: String,
    pub levels: Vec<LevelRate>,
    /// Amplitudes in one message piece (QuEST's 2^28, NCCL's chunk); None:
    /// an exchange is one message.
    pub piece_amps: Option<u64>,
    /// Whether the wire updates amplitudes while later pieces still travel.
    pub overlaps: bool,
}

impl WireFigures {
    pub fn at(&self, level: Level) -> Option<&LevelRate> {
        self.levels.iter().find(|l| l.level == level)
    }
}

/// Measured gate classes: what the local pass costs, class by class, on a
/// register of `layout` whose devices each held `sharing` ranks.
#[derive(Debug, Clone, PartialEq)]
pub struct ClassTable {
    pub classes: Vec<ClassTime>,
    pub layout: Layout,
    pub sharing: usize,
}

/// What a plan prices from.
#[derive(Debug, Clone, PartialEq)]
pub struct Machine {
    /// Where the figures come from, in words.
    pub source: String,
    /// Bytes of one device's memory.
    pub gpu_memory: u64,
    /// Devices in a node: GPUs, or cores where `host`.
    pub gpus_per_node: usize,
    /// Host ranks: threads of one process on one node's cores, which take
    /// turns on a core when there are more of them.
    pub host: bool,
    /// A device's local pass: α per step (its launch and the wait for it),
    /// β its memory's read + write bandwidth, as the gate classes show them.
    pub local: Rate,
    /// What a step costs besides its work within a circuit, where steps of
    /// different kinds follow each other (the classes time one kind again
    /// and again): `local.alpha_s` unless circuits were measured.
    pub step_s: f64,
    /// What starting a step on k ranks of one process costs (host ranks'
    /// threads), (k, seconds); empty where nothing is started per step.
    pub dispatch: Vec<(usize, f64)>,
    /// Host ranks: whether a record ran ranks in several processes, whose
    /// messages (MPI) pay a latency that threads of one process do not.
    pub processes_measured: bool,
    /// What was not known and is priced at nothing (a latency no source
    /// states): said beside every answer that depends on it.
    pub unknown: Vec<String>,
    pub wires: Vec<WireFigures>,
    /// Measured classes, nearest register first when priced; empty for a
    /// profile's figures.
    pub tables: Vec<ClassTable>,
}

impl Machine {
    /// Its figures, for the record.
    pub fn figures(&self) -> PlanFigures {
        let figure =
            |name: String, r: &Rate| Figure { name, alpha_s: r.alpha_s, gbps: r.gbps, sharing: None, host_link_gbps: None };
        PlanFigures {
            source: self.source.clone(),
            host: self.host,
            gpu_memory: self.gpu_memory,
            gpus_per_node: self.gpus_per_node,
            local: figure("local pass".into(), &self.local),
            step_s: self.step_s,
            dispatch: self.dispatch.iter().map(|&(ranks, seconds)| Dispatch { ranks, seconds }).collect(),
            wires: self
                .wires
                .iter()
                .flat_map(|w| {
                    w.levels.iter().map(move |l| {
                        // Host ranks' devices are cores: their figures stand as found.
                        let shared = l.level == Level::Device && !self.host;
                        Figure {
                            sharing: shared.then_some(l.sharing),
                            host_link_gbps: l.ceiling_gbps.filter(|_| shared),
                            ..figure(format!("{} {}", w.name, l.level.name()), &l.rate)
                        }
                    })
                })
                .collect(),
        }
    }

    pub fn wire(&self, name: &str) -> Option<&WireFigures> {
        self.wires.iter().find(|w| w.name == name)
    }

    /// The measured table nearest to `layout` with `sharing` ranks on each
    /// device: in the bytes a device holds (their chunks together) and in
    /// the ranks that take turns on it (processes sharing a GPU switch
    /// between their kernels), each factor of two as far as the other.
    pub fn table_for(&self, layout: &Layout, sharing: usize) -> Option<&ClassTable> {
        let bytes = (layout.chunk_bytes() * sharing as u64) as f64;
        self.tables.iter().min_by(|a, b| {
            let d = |t: &ClassTable| {
                ((t.layout.chunk_bytes() * t.sharing as u64) as f64 / bytes).ln().abs()
                    + (t.sharing as f64 / sharing as f64).ln().abs()
            };
            d(a).total_cmp(&d(b))
        })
    }
}

/// A register of `layout` on a machine: how many ranks share one device and
/// how many devices a node holds. Ranks are numbered node by node, device
/// by device, so that rank XOR 2^j stays on the device for the lowest bits,
/// within the node for the next, and crosses the fabric for the rest.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Placement {
    pub layout: Layout,
    pub sharing: usize,
    pub devices_per_node: usize,
    /// Ranks that run as threads of one process (host ranks), each step
    /// starting and joining them; 1 for processes of their own.
    pub threads: usize,
}

impl Placement {
    /// The level rank bit `j` crosses.
    pub fn level_of_bit(&self, j: u32) -> Level {
        let device_bits = self.sharing.max(1).trailing_zeros();
        let node_bits = device_bits + self.devices_per_node.max(1).trailing_zeros();
        if j < device_bits {
            Level::Device
        } else if j < node_bits {
            Level::Node
        } else {
            Level::Fabric
        }
    }

    /// The farthest level an exchanging step's messages cross.
    pub fn level(&self, step: &PhysicalGate) -> Level {
        let l = self.layout.local_qubits();
        let bit = |q: u32| self.level_of_bit(q - l);
        match step {
            PhysicalGate::GlobalU { t, .. } | PhysicalGate::GlobalSwap { t, .. } | PhysicalGate::GlobalCx { t, .. } => bit(*t),
            PhysicalGate::GlobalSwap2(a, b) => bit(*a).max(bit(*b)),
            _ => Level::Device,
        }
    }
}

/// Which part of a step a term's seconds belong to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// Paid by every step, before anything else.
    Serial,
    /// Moving the message.
    Transfer,
    /// Updating amplitudes after (or, on a wire that overlaps, while) they travel.
    Update,
}

/// One term of a step's price.
pub trait Term: Sync {
    /// How the record and tables name it.
    fn name(&self) -> &'static str;
    fn part(&self) -> Part;
    /// Its seconds for `step` placed at `at` over `wire` (None for a local
    /// step); None when the machine has no figure for it.
    fn seconds(&self, step: &PhysicalGate, at: &Placement, m: &Machine, wire: Option<&WireFigures>) -> Option<f64>;
}

/// Every term of a step's price: a new term is a file and a line here.
pub const TERMS: &[&dyn Term] =
    &[&launch::Launch, &dispatch::Dispatch, &memory::Memory, &transfer::Transfer, &update::Update];

/// Why a step could not be priced.
#[derive(Debug, Clone, PartialEq)]
pub enum Unpriced {
    /// The wire has no figure at this level.
    NoWire { wire: String, level: Level },
    /// A local class no table holds, and no memory figure to price it.
    NoClass(Class),
}

impl Unpriced {
    pub fn describe(&self) -> String {
        match self {
            Unpriced::NoWire { wire, level } => format!("no figure for {wire} {}", level.name()),
            Unpriced::NoClass(c) => format!("no measured {} and no memory figure", c.name()),
        }
    }
}

/// A circuit's price: its seconds and how they split among the terms.
#[derive(Debug, Clone, PartialEq)]
pub struct Price {
    pub seconds: f64,
    /// (term, seconds), in [`TERMS`]' order.
    pub terms: Vec<(&'static str, f64)>,
    /// Seconds of the exchanging steps at each level they crossed.
    pub levels: Vec<(Level, f64)>,
}

/// The price of `steps` placed at `at` over `wire` (None on one rank).
pub fn price(
    steps: &[PhysicalGate],
    at: &Placement,
    m: &Machine,
    wire: Option<&WireFigures>,
) -> std::result::Result<Price, Unpriced> {
    let mut p = Price { seconds: 0.0, terms: TERMS.iter().map(|t| (t.name(), 0.0)).collect(), levels: Vec::new() };
    for s in steps {
        let w = if s.is_local() { None } else { wire };
        let mut part = [0.0f64; 3];
        for (i, t) in TERMS.iter().enumerate() {
            let secs = t.seconds(s, at, m, w).ok_or_else(|| match w {
                Some(w) if t.part() == Part::Transfer => Unpriced::NoWire { wire: w.name.clone(), level: at.level(s) },
                _ => Unpriced::NoClass(s.class()),
            })?;
            p.terms[i].1 += secs;
            part[t.part() as usize] += secs;
        }
        let [serial, transfer, update] = part;
        let overlaps = w.is_some_and(|w| w.overlaps);
        let step = serial + if overlaps { transfer.max(update) } else { transfer + update };
        if !s.is_local() {
            let level = at.level(s);
            match p.levels.iter_mut().find(|(l, _)| *l == level) {
                Some(e) => e.1 += step,
                None => p.levels.push((level, step)),
            }
        }
        p.seconds += step;
    }
    p.levels.sort_by_key(|(l, _)| *l);
    Ok(p)
}

/// The bytes a memory-bound step moves on a rank, read and written: what
/// it touches, in whole 32-byte sectors.
pub fn traffic(step: &PhysicalGate, layout: &Layout) -> f64 {
    let l = layout.local_qubits();
    let chunk = layout.chunk_bytes() as f64;
    let b = layout.precision.bytes() as f64;
    let locals: Vec<u32> = step.qubits().into_iter().filter(|&q| q < l).collect();
    let lowest = locals.iter().copied().min().unwrap_or(l);
    // A run of 2^lowest amplitudes shorter than a sector moves the sector.
    let sector = |share: f64| (share * (32.0 / (f64::powi(2.0, lowest as i32) * b)).max(1.0)).min(1.0);
    let share = match step.class() {
        Class::Phase => sector(f64::powi(0.5, locals.len() as i32)),
        Class::Swap | Class::Cx => sector(0.5),
        _ => 1.0,
    };
    2.0 * chunk * share
}

/// The bytes the update around an exchange moves on a rank: reading both
/// halves of a pair and writing one (a gate), or packing and placing half a
/// chunk (a swap, a CNOT).
pub fn update_traffic(step: &PhysicalGate, layout: &Layout) -> f64 {
    let chunk = layout.chunk_bytes() as f64;
    let packed = step.qubits().iter().any(|&q| q + 1 < layout.local_qubits());
    match step.class() {
        Class::GlobalGate => 3.0 * chunk,
        Class::GlobalSwap2 => 2.0 * chunk,
        _ if packed => 2.0 * chunk,
        _ => chunk,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::statevec::circuit::hadamard;
    use crate::statevec::layout::Precision;

    pub fn machine(launch_us: f64, link: Option<(f64, f64)>, fabric: Option<(f64, f64)>) -> Machine {
        let mut levels = Vec::new();
        if let Some((a, g)) = link {
            levels.push(LevelRate { level: Level::Node, rate: Rate { alpha_s: a * 1e-6, gbps: g }, sharing: 1, ceiling_gbps: None });
        }
        if let Some((a, g)) = fabric {
            levels.push(LevelRate { level: Level::Fabric, rate: Rate { alpha_s: a * 1e-6, gbps: g }, sharing: 1, ceiling_gbps: None });
        }
        Machine {
            source: "test".into(),
            gpu_memory: 141 << 30,
            gpus_per_node: 8,
            host: false,
            local: Rate { alpha_s: launch_us * 1e-6, gbps: 4000.0 },
            step_s: launch_us * 1e-6,
            dispatch: Vec::new(),
            processes_measured: false,
            unknown: Vec::new(),
            wires: vec![WireFigures { name: "nccl".into(), levels, piece_amps: None, overlaps: false }],
            tables: Vec::new(),
        }
    }

    #[test]
    fn the_rank_bits_cross_device_node_and_fabric_in_turn() {
        let at = Placement { layout: Layout::new(20, 64, Precision::Double).unwrap(), sharing: 2, devices_per_node: 4, threads: 1 };
        let levels: Vec<Level> = (0..6).map(|j| at.level_of_bit(j)).collect();
        assert_eq!(levels, [Level::Device, Level::Node, Level::Node, Level::Fabric, Level::Fabric, Level::Fabric]);
        let l = at.layout.local_qubits();
        assert_eq!(at.level(&PhysicalGate::GlobalU { t: l + 2, m: hadamard() }), Level::Node);
        assert_eq!(at.level(&PhysicalGate::GlobalSwap2(l, l + 5)), Level::Fabric);
    }

    #[test]
    fn a_small_register_pays_the_latencies_and_a_large_one_the_bandwidth() {
        let m = machine(5.0, Some((20.0, 400.0)), None);
        let at =
            |n, g| Placement { layout: Layout::new(n, g, Precision::Double).unwrap(), sharing: 1, devices_per_node: 8, threads: 1 };
        let w = m.wire("nccl");
        // 14 qubits: 256 KiB, every step about its launch.
        let small = at(14, 2);
        let h = price(&[PhysicalGate::H(0)], &small, &m, None).unwrap().seconds;
        assert!((h - 5e-6).abs() < 0.2e-6, "{h}");
        let g = price(&[PhysicalGate::GlobalU { t: 13, m: hadamard() }], &small, &m, w).unwrap();
        assert!(g.seconds > 25e-6 && g.seconds < 27e-6, "{g:?}");
        assert_eq!(g.levels, vec![(Level::Node, g.seconds)]);
        // 33 qubits on 2: 64 GiB each way at 400 GB/s, latencies nothing.
        let big = at(33, 2);
        let g = price(&[PhysicalGate::GlobalU { t: 32, m: hadamard() }], &big, &m, w).unwrap().seconds;
        let bytes = big.layout.chunk_bytes() as f64;
        assert!((g - (bytes / 400e9 + 3.0 * bytes / 4000e9)).abs() / g < 1e-3, "{g}");
        // No fabric figure: a step across nodes has no price.
        let far =
            Placement { layout: Layout::new(30, 16, Precision::Double).unwrap(), sharing: 1, devices_per_node: 8, threads: 1 };
        let e = price(&[PhysicalGate::GlobalU { t: 29, m: hadamard() }], &far, &m, w).unwrap_err();
        assert_eq!(e, Unpriced::NoWire { wire: "nccl".into(), level: Level::Fabric });
    }

    #[test]
    fn ranks_sharing_a_device_share_its_link_or_only_the_part_they_share() {
        let rate = Rate { alpha_s: 0.0, gbps: 4.0 };
        let at = |k| Placement { layout: Layout::new(26, k, Precision::Double).unwrap(), sharing: k, devices_per_node: 1, threads: 1 };
        let seconds = |ceiling_gbps, k: usize| {
            let level = LevelRate { level: Level::Device, rate, sharing: 2, ceiling_gbps };
            let w = WireFigures { name: "mpi".into(), levels: vec![level], piece_amps: None, overlaps: false };
            let p = at(k);
            let step = PhysicalGate::GlobalU { t: p.layout.local_qubits(), m: hadamard() };
            let bytes = step.bytes(&p.layout) as f64;
            transfer::Transfer.seconds(&step, &p, &machine(5.0, None, None), Some(&w)).unwrap() * 1e9 / bytes
        };
        // A rate found with 2 ranks on the device: 4 ranks get half of it.
        assert!((seconds(None, 4) - 1.0 / 2.0).abs() < 1e-9);
        // Staged through a host link of 50 GB/s, 4 GB/s found with 2 on it:
        // 0.25 ns a byte, 0.08 of it the link's (twice 2/50), 0.17 their own.
        // 2 keep it, 4 pay the link twice over, 32 sixteen times.
        assert!((seconds(Some(50.0), 2) - 0.25).abs() < 1e-9);
        assert!((seconds(Some(50.0), 4) - (0.17 + 0.16)).abs() < 1e-9);
        assert!((seconds(Some(50.0), 32) - (0.17 + 1.28)).abs() < 1e-9);
        // A rate the link alone explains: every rank's time is the link's.
        let slow_link = |k| seconds(Some(10.0), k);
        assert!((slow_link(4) - 0.8).abs() < 1e-9);
    }

    #[test]
    fn a_table_of_as_many_ranks_on_a_device_is_nearer_than_one_of_the_same_bytes() {
        let table = |qubits, ranks, sharing| ClassTable {
            classes: Vec::new(),
            layout: Layout::new(qubits, ranks, Precision::Double).unwrap(),
            sharing,
        };
        let m = Machine { tables: vec![table(26, 1, 1), table(26, 2, 2), table(30, 1, 1)], ..machine(5.0, None, None) };
        let two = Layout::new(26, 2, Precision::Double).unwrap();
        assert_eq!(m.table_for(&two, 2), Some(&m.tables[1]));
        assert_eq!(m.table_for(&Layout::new(26, 1, Precision::Double).unwrap(), 1), Some(&m.tables[0]));
        assert_eq!(m.table_for(&Layout::new(31, 1, Precision::Double).unwrap(), 1), Some(&m.tables[2]));
    }

    #[test]
    fn a_phase_moves_what_it_touches() {
        let l = Layout::new(30, 1, Precision::Double).unwrap();
        let chunk = l.chunk_bytes() as f64;
        let p = num_complex::Complex64::new(0.0, 1.0);
        assert_eq!(traffic(&PhysicalGate::H(3), &l), 2.0 * chunk);
        assert_eq!(traffic(&PhysicalGate::Phase { qubits: vec![5, 4], phase: p }, &l), chunk / 2.0);
        // Every other 16-byte amplitude: each 32-byte sector still moves.
        assert_eq!(traffic(&PhysicalGate::Phase { qubits: vec![5, 0], phase: p }, &l), chunk);
    }
}
