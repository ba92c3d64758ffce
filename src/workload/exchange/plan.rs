//! What an exchange or a comparison runs, resolved and checked before any
//! GPU is touched.

use super::decision::Against;
use super::model::Machine;
use crate::error::{Error, Result};
use crate::fault::{self, Fault};
use crate::libs::Library;
use crate::record::exchange::Unavailable;
use crate::statevec::layout::{GlobalOp, Precision};
use crate::statevec::schedule::Schedule;
use crate::statevec::spec::CircuitSpec;
use crate::transport::amplitudes::{Memory, Wire};

/// `qbench exchange`.
#[derive(Debug, Clone)]
pub struct ExchangePlan {
    pub qubits: Vec<u32>,
    /// GPUs (or host ranks) per process: each count measured, or projected
    /// where this node cannot (several counts given).
    pub ngpus: Vec<usize>,
    pub precision: Precision,
    pub ops: Vec<GlobalOp>,
    pub wires: Vec<Wire>,
    /// Where the registers are held: each runs the wires that serve it.
    pub memories: Vec<Memory>,
    /// The largest message piece of NCCL and host transfers, bytes.
    pub chunk: Option<u64>,
    pub iters: u32,
    pub warmup: u32,
    /// The circuits run on every register.
    pub circuits: Vec<CircuitSpec>,
    /// How the circuits meet global qubits.
    pub schedules: Vec<Schedule>,
    /// Times each circuit runs (the median is reported).
    pub rounds: u32,
    /// Also run a spread register on one rank, where one holds it, so that
    /// the verdict compares with circuits measured there.
    pub one_rank_too: bool,
    /// `--classes`: the text shows the gate classes' table.
    pub classes_shown: bool,
    /// Which gate classes each register times.
    pub timed: Timed,
    pub fault: Option<Fault>,
    /// `--plan`: measure nothing, project every count from these figures.
    pub forecast: Option<Forecasting>,
    /// What the verdict holds spread runs against besides this run.
    pub against: Against,
    /// The memory and wires asked for that this machine cannot run, with
    /// why: left out of the plan, named in the record.
    pub unavailable: Vec<Unavailable>,
}

/// The gate classes a register times: every one (the command's table, the
/// circuits' projections), or only those a check step judges, so that a
/// Prolog's register is held for its few gates and not for the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Timed {
    #[default]
    Every,
    /// The H gates at the local positions (local bandwidth, its share of a
    /// copy), and no host link.
    LocalH,
    /// The global gates over each wire, and no host link.
    Global,
}

/// What `--plan` prices from and what it prices.
#[derive(Debug, Clone)]
pub struct Forecasting {
    /// None: this node's figures, measured briefly first.
    pub machine: Option<Machine>,
    /// The wires asked for by name; empty: every wire the machine has figures for.
    pub wires: Vec<String>,
    /// Ranks on each device (`--ranks-per-gpu`).
    pub sharing: usize,
    /// GPUs (host ranks) in a node (`--gpus-per-node`), over the source's figure.
    pub per_node: Option<usize>,
}

/// `qbench compare`.
#[derive(Debug, Clone)]
pub struct ComparePlan {
    /// Bytes each rank sends to its partner: a power of two.
    pub bytes: u64,
    /// Where the register is held: every wire that serves it is compared.
    pub memory: Memory,
    /// Ranks per process, as asked (-g); else two alone, one under MPI.
    pub ngpus: Option<usize>,
    pub iters: u32,
    pub warmup: u32,
    pub fault: Option<Fault>,
}

/// "4" or "1,2,4,8": counts of GPUs (ranks) of at least 1.
pub fn parse_counts(text: &str) -> Result<Vec<usize>> {
    let bad = || Error::Usage(format!("invalid -g '{text}': use a count or counts, 1,2,4,8"));
    let mut out: Vec<usize> =
        text.split(',').map(|c| c.trim().parse().ok().filter(|&n| n >= 1).ok_or_else(bad)).collect::<Result<_>>()?;
    out.dedup();
    Ok(out)
}

/// "33" or "20..33" (also "20-33").
pub fn parse_qubits(text: &str) -> Result<Vec<u32>> {
    let bad = || Error::Usage(format!("invalid --qubits '{text}': use N or A..B"));
    let num = |s: &str| s.trim().parse::<u32>().map_err(|_| bad());
    let (a, b) = match text.split_once("..").or_else(|| text.split_once('-')) {
        Some((a, b)) => (num(a)?, num(b)?),
        None => (num(text)?, num(text)?),
    };
    if a > b {
        return Err(bad());
    }
    if b > 63 {
        return Err(Error::Usage(format!(
            "--qubits {text}: 2^{b} amplitudes is past any machine (at most 59 qubits in double precision, 60 in single)"
        )));
    }
    Ok((a..=b).collect())
}

/// The wires asked for, in a stable order: names, `all` (every wire that
/// moves GPU memory; host-memory ranks are asked for by name), and `host`
/// meaning the unpipelined path when `no_pipeline`.
pub fn parse_wires(text: &str, no_pipeline: bool) -> Result<Vec<Wire>> {
    let mut wires = Vec::new();
    for part in text.split(',').map(str::trim) {
        let add: Vec<Wire> = match part {
            "all" => Wire::ALL.iter().copied().filter(|w| w.serves(Memory::Gpu)).collect(),
            "host" if no_pipeline => vec![Wire::HostUnpipelined],
            _ => vec![Wire::parse(part).ok_or_else(|| {
                let names: Vec<&str> = Wire::ALL.iter().map(|w| w.name()).collect();
                Error::Usage(format!("unknown transport '{part}': use {} or all", names.join(", ")))
            })?],
        };
        for w in add {
            if !wires.contains(&w) {
                wires.push(w);
            }
        }
    }
    Ok(wires)
}

/// `--memory`: gpu, host, or both (comma-separated).
fn parse_memories(text: &str) -> Result<Vec<Memory>> {
    let mut out = Vec::new();
    for part in text.split(',').map(str::trim) {
        let m = match part {
            "gpu" => Memory::Gpu,
            "host" => Memory::Host,
            _ => return Err(Error::Usage(format!("unknown --memory '{part}': use gpu, host or gpu,host"))),
        };
        if !out.contains(&m) {
            out.push(m);
        }
    }
    Ok(out)
}

/// Where the registers of `wires` are held: as `--memory` says, or where
/// the wires that serve one kind of memory only need them, or (every wire
/// serving both) on GPUs. Each memory must have a wire, and each wire a
/// memory it serves.
pub fn memories(wires: &[Wire], asked: Option<&str>) -> Result<Vec<Memory>> {
    let memories = match asked {
        Some(text) => parse_memories(text)?,
        None => {
            let only = |m: Memory, other: Memory| wires.iter().any(|w| w.serves(m) && !w.serves(other));
            let (gpu, host) = (only(Memory::Gpu, Memory::Host), only(Memory::Host, Memory::Gpu));
            [(Memory::Gpu, gpu || !host), (Memory::Host, host)].into_iter().filter(|m| m.1).map(|m| m.0).collect()
        }
    };
    let names = |ws: &[Wire]| ws.iter().map(|w| w.name()).collect::<Vec<_>>().join(", ");
    if let Some(m) = memories.iter().find(|&&m| !wires.iter().any(|w| w.serves(m))) {
        return Err(Error::Usage(format!(
            "--memory {}: none of the transports asked for ({}) moves {} memory",
            m.name(),
            names(wires),
            m.name()
        )));
    }
    if let Some(w) = wires.iter().find(|w| !memories.iter().any(|&m| w.serves(m))) {
        return Err(Error::Usage(format!(
            "--transport {} moves no {} memory: add it to --memory, or drop the transport",
            w.name(),
            memories.iter().map(|m| m.name()).collect::<Vec<_>>().join(" or ")
        )));
    }
    Ok(memories)
}

/// The message piece size: at least one byte.
pub fn check_chunk(chunk: Option<u64>) -> Result<Option<u64>> {
    match chunk {
        Some(0) => Err(Error::Usage("--chunk 0: a message piece must be at least 1 byte (e.g. 64M)".into())),
        c => Ok(c),
    }
}

impl ExchangePlan {
    /// The fault `QBENCH_CORRUPT` asks for, if this plan can show it.
    pub fn fault_for(patterns: &[GlobalOp]) -> Result<Option<Fault>> {
        let fault = Fault::requested("exchange", &[fault::Kind::WrongPartner, fault::Kind::WrongHalf])?;
        if fault == Some(Fault::WrongHalf) && !patterns.contains(&GlobalOp::Swap) {
            return Err(Error::Usage(format!(
                "{}=half changes the swap pattern only: add --pattern swap or both",
                fault::VAR
            )));
        }
        Ok(fault)
    }

    /// The plan with GPU memory left out where its libraries are missing
    /// and host memory is asked for too (`--transport all,cpu` on a node
    /// without a driver): the host registers run, and the GPU wires are
    /// named as unavailable. A plan of GPU memory alone stays as it is, so
    /// that the session says what is missing (exit 3).
    pub fn within_reach(mut self) -> ExchangePlan {
        if self.forecast.is_some() || !self.memories.contains(&Memory::Host) {
            return self;
        }
        let gpu = self.wires_on(Memory::Gpu);
        let Some(reason) = crate::libs::missing(&gpu_libraries(&gpu)) else { return self };
        self.memories.retain(|&m| m != Memory::Gpu);
        self.wires.retain(|w| w.serves(Memory::Host));
        let names: Vec<&str> = gpu.iter().map(|w| w.name()).collect();
        self.unavailable.push(Unavailable { transport: format!("{} on gpu memory", names.join(", ")), reason });
        self
    }

    /// The wires run on registers held in `memory`.
    pub fn wires_on(&self, memory: Memory) -> Vec<Wire> {
        match self.memories.contains(&memory) {
            true => self.wires.iter().copied().filter(|w| w.serves(memory)).collect(),
            false => Vec::new(),
        }
    }
}

/// What a register on GPUs and the wires it runs need loaded.
pub(super) fn gpu_libraries(wires: &[Wire]) -> Vec<Library> {
    if wires.is_empty() {
        return Vec::new();
    }
    let mut libs = vec![Library::Driver, Library::Nvrtc];
    libs.extend(wires.iter().flat_map(|w| w.imp().libraries().iter().copied()));
    libs.sort();
    libs.dedup();
    libs
}

impl ComparePlan {
    pub fn new(bytes: u64, memory: Option<&str>, ngpus: Option<usize>, iters: u32, warmup: u32) -> Result<ComparePlan> {
        let memory = match memory.map(parse_memories).transpose()?.as_deref() {
            None => Memory::Gpu,
            Some([m]) => *m,
            Some(_) => {
                return Err(Error::Usage("compare holds its register in one memory: --memory gpu or host".into()));
            }
        };
        let amps = bytes / Precision::Single.bytes();
        if !amps.is_power_of_two() || amps < 4 || !bytes.is_multiple_of(Precision::Single.bytes()) {
            return Err(Error::Usage(format!(
                "-b {bytes}: compare moves a register chunk, so use a power of two of at least 32 bytes"
            )));
        }
        let fault = Fault::requested("compare", &[fault::Kind::WrongPartner])?;
        Ok(ComparePlan { bytes, memory, ngpus, iters, warmup, fault })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_arguments() {
        assert_eq!(parse_qubits("33").unwrap(), vec![33]);
        assert_eq!(parse_qubits("20..23").unwrap(), vec![20, 21, 22, 23]);
        assert_eq!(parse_qubits("20-21").unwrap(), vec![20, 21]);
        assert!(parse_qubits("23..20").is_err() && parse_qubits("x").is_err());
        assert_eq!(parse_wires("host", true).unwrap(), vec![Wire::HostUnpipelined]);
        assert_eq!(parse_wires("all", false).unwrap().len(), 10);
        assert_eq!(parse_wires("all,cpu", false).unwrap().len(), 11);
        assert_eq!(parse_wires("nccl,p2p,nccl", false).unwrap(), vec![Wire::Nccl, Wire::P2p]);
        assert!(parse_wires("warp", false).is_err());
        assert_eq!(check_chunk(Some(0)).unwrap_err().exit_code(), 2);
        assert_eq!(check_chunk(Some(1)).unwrap(), Some(1));
    }

    #[test]
    fn registers_go_where_their_wires_need_them() {
        let m = |wires: &str, asked: Option<&str>| memories(&parse_wires(wires, false).unwrap(), asked);
        assert_eq!(m("nccl", None).unwrap(), vec![Memory::Gpu]);
        assert_eq!(m("cpu", None).unwrap(), vec![Memory::Host]);
        assert_eq!(m("rdma", None).unwrap(), vec![Memory::Gpu]);
        assert_eq!(m("cpu,rdma", None).unwrap(), vec![Memory::Host]);
        assert_eq!(m("all,cpu", None).unwrap(), vec![Memory::Gpu, Memory::Host]);
        assert_eq!(m("rdma", Some("host")).unwrap(), vec![Memory::Host]);
        assert_eq!(m("rdma", Some("gpu,host")).unwrap(), vec![Memory::Gpu, Memory::Host]);
        assert_eq!(m("nccl", Some("host")).unwrap_err().exit_code(), 2);
        assert_eq!(m("cpu,nccl", Some("host")).unwrap_err().exit_code(), 2);
        assert_eq!(m("cpu", Some("disk")).unwrap_err().exit_code(), 2);
    }

    #[test]
    fn compare_holds_its_register_in_one_memory() {
        let plan = |memory: Option<&str>| ComparePlan::new(1 << 20, memory, None, 1, 0);
        assert_eq!(plan(None).unwrap().memory, Memory::Gpu);
        assert_eq!(plan(Some("host")).unwrap().memory, Memory::Host);
        assert!(
            crate::workload::Job::libraries(&plan(Some("host")).unwrap()).is_empty(),
            "host memory needs no GPU library"
        );
        assert_eq!(plan(Some("gpu,host")).unwrap_err().exit_code(), 2);
        assert_eq!(plan(Some("tape")).unwrap_err().exit_code(), 2);
    }
}
