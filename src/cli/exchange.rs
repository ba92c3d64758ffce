//! `qbench exchange` and `qbench compare`: the amplitude exchange's
//! options, the wires named from the list of wires.

use super::{OutputArgs, size_arg};
use crate::error::{Error, Result};
use crate::statevec::layout::{GlobalOp, Precision};
use crate::statevec::schedule::Schedule;
use crate::statevec::spec::CircuitSpec;
use crate::transport::amplitudes::Wire;
use crate::workload::exchange::decision::Against;
use crate::workload::exchange::forecast::Machine;
use crate::workload::exchange::plan::{
    ComparePlan, ExchangePlan, check_chunk, memories, parse_counts, parse_qubits, parse_wires,
};
use clap::Args;

/// `--transport`'s help, from the list of wires.
fn wires_help() -> String {
    let names: Vec<&str> = Wire::ALL.iter().map(|w| w.name()).collect();
    format!("Comma-separated: {}; all = every GPU transport (add ,cpu for host ranks)", names.join(", "))
}

#[derive(Args, Debug, Clone)]
pub struct ExchangeArgs {
    /// Qubits of the register: N, or a range A..B to run every size from A to B
    #[arg(long, value_name = "N|A..B")]
    pub qubits: String,
    /// GPUs per process (host ranks for --transport cpu), or several counts, 1,2,4,8: each measured where this node can, projected where not (with --plan, total GPUs, all projected); a power of two
    #[arg(short = 'g', long = "ngpus", default_value = "1", value_name = "N|N,N,...")]
    pub ngpus: String,
    /// Bytes per amplitude: single (complex<float>, 8) or double (complex<double>, 16)
    #[arg(long, default_value = "double", value_parser = ["single", "double"])]
    pub precision: String,
    /// gate (whole chunk exchanged, as QuEST), swap (half, as cuStateVec) or both
    #[arg(long, default_value = "both")]
    pub pattern: String,
    #[arg(long, default_value = "nccl", help = wires_help())]
    pub transport: String,
    /// Where the registers are held: gpu, host or gpu,host (default: what the transports move; GPUs for rdma alone)
    #[arg(long, value_name = "gpu|host|gpu,host")]
    pub memory: Option<String>,
    /// Largest message piece for nccl and host transfers (default: 2^28 amplitudes for nccl, as QuEST; 64M for host)
    #[arg(long, value_parser = size_arg)]
    pub chunk: Option<u64>,
    /// Stage --transport host one step after the other, nothing overlapping (host-unpipelined; QuEST's own exchange between processes is --transport quest)
    #[arg(long)]
    pub no_pipeline: bool,
    /// Timed repetitions of each operation (the median is reported)
    #[arg(short = 'n', long = "iters", default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    pub iters: u32,
    /// Untimed repetitions before them
    #[arg(short = 'w', long = "warmup_iters", alias = "warmup-iters", default_value_t = 1)]
    pub warmup_iters: u32,
    /// Circuits run on every register, comma-separated: qft (QuEST's), random[:GATES[:SEED]] (mirrored), or an OpenQASM 2 file (mirrored)
    #[arg(long, default_value = "qft")]
    pub circuit: String,
    /// How circuits meet global qubits: quest (exchange for each gate on one), swap (swap it into a local position first), both
    #[arg(long, default_value = "both")]
    pub schedule: String,
    /// Times each circuit runs (the median is reported)
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub rounds: u32,
    /// A simulator's own time of the circuit on one GPU, seconds (CIRCUIT=SECONDS,... for several circuits): the verdict prices that simulator spread, its local steps at its speed and the exchanges as measured
    #[arg(long, value_name = "[CIRCUIT=]SECONDS,...", conflicts_with = "plan")]
    pub simulator_time: Option<String>,
    /// Records of `qbench exchange -g 1` on the same register whose circuits are the one-GPU time the verdict compares with (for ranks under mpirun, which do not measure it); taken over one measured here
    #[arg(long, value_name = "RUN.json", num_args = 1.., conflicts_with = "plan")]
    pub one_gpu_from: Vec<std::path::PathBuf>,
    /// Measure nothing: project every -g count from --profile's machine figures or --from records
    #[arg(long, requires = "qubits")]
    pub plan: bool,
    /// With --plan: a built-in profile or a TOML file whose [machine] figures the projection uses
    #[arg(long, value_name = "NAME|FILE", requires = "plan", conflicts_with = "from")]
    pub profile: Option<String>,
    /// With --plan: exchange records (-J) whose measured classes and wires the projection uses
    #[arg(long, value_name = "RUN.json", num_args = 1.., requires = "plan")]
    pub from: Vec<std::path::PathBuf>,
    #[command(flatten)]
    pub out: OutputArgs,
}

impl ExchangeArgs {
    /// The figures `--plan` projects from.
    fn machine(&self) -> Result<Option<Machine>> {
        if !self.plan {
            return Ok(None);
        }
        if let Some(spec) = &self.profile {
            let (p, from) = crate::check::profile::load(spec)?;
            let m = p.machine.as_ref().ok_or_else(|| {
                Error::Usage(format!(
                    "profile {from} has no [machine] figures to project from: use another, or --from a run"
                ))
            })?;
            return Ok(Some(Machine::of_profile(&p.profile.name, m)));
        }
        if self.from.is_empty() {
            return Err(Error::Usage(
                "--plan projects from something: --profile NAME (a machine's figures) or --from RUN.json (a measured run)".into(),
            ));
        }
        let mut runs = Vec::new();
        for f in &self.from {
            match crate::record::read(f)? {
                crate::record::AnyRecord::Exchange(r) => runs.push((f.display().to_string(), r)),
                _ => return Err(Error::Usage(format!("--from {}: not the record of a qbench exchange", f.display()))),
            }
        }
        Machine::of_runs(&runs).map(Some)
    }

    pub fn plan(&self) -> Result<ExchangePlan> {
        let ops = GlobalOp::parse_list(&self.pattern)?;
        let wires = parse_wires(&self.transport, self.no_pipeline)?;
        let circuits: Vec<CircuitSpec> =
            self.circuit.split(',').map(|c| CircuitSpec::parse(c.trim())).collect::<Result<_>>()?;
        let against = Against {
            simulator_s: match &self.simulator_time {
                Some(t) => Against::parse_simulator(t, &circuits)?,
                None => Vec::new(),
            },
            one_gpu_runs: Against::load_one_gpu(&self.one_gpu_from)?,
        };
        Ok(ExchangePlan {
            qubits: parse_qubits(&self.qubits)?,
            ngpus: parse_counts(&self.ngpus)?,
            forecast: self.machine()?,
            precision: Precision::parse(&self.precision)?,
            memories: memories(&wires, self.memory.as_deref())?,
            wires,
            chunk: check_chunk(self.chunk)?,
            iters: self.iters,
            warmup: self.warmup_iters,
            circuits,
            schedules: Schedule::parse_list(&self.schedule)?,
            rounds: self.rounds,
            one_rank_too: true,
            against,
            fault: ExchangePlan::fault_for(&ops)?,
            ops,
            unavailable: Vec::new(),
        }
        .within_reach())
    }
}

#[derive(Args, Debug, Clone)]
pub struct CompareArgs {
    /// Bytes each rank sends to its partner (and receives)
    #[arg(short = 'b', long = "bytes", default_value = "1G", value_parser = size_arg)]
    pub bytes: u64,
    /// GPUs per process (host ranks with --memory host; default 2 alone, 1 per process under MPI); the total must be a power of two
    #[arg(short = 'g', long = "ngpus", value_parser = clap::value_parser!(u32).range(1..))]
    pub ngpus: Option<u32>,
    /// Where the register is held: gpu (every GPU transport) or host (cpu and rdma)
    #[arg(long, value_name = "gpu|host")]
    pub memory: Option<String>,
    /// Timed repetitions per transport (the median is reported)
    #[arg(short = 'n', long = "iters", default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..))]
    pub iters: u32,
    #[arg(short = 'w', long = "warmup_iters", alias = "warmup-iters", default_value_t = 2)]
    pub warmup_iters: u32,
    #[command(flatten)]
    pub out: OutputArgs,
}

impl CompareArgs {
    pub fn plan(&self) -> Result<ComparePlan> {
        ComparePlan::new(
            self.bytes,
            self.memory.as_deref(),
            self.ngpus.map(|g| g as usize),
            self.iters,
            self.warmup_iters,
        )
    }
}
