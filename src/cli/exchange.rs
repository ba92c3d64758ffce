//! `qbench exchange` and `qbench compare`: the amplitude exchange's
//! options, the wires named from the list of wires.

use super::{OutputArgs, size_arg};
use crate::error::{Error, Result};
use crate::record::exchange::ExchangeRun;
use crate::statevec::layout::{GlobalOp, Layout, Precision};
use crate::statevec::schedule::Schedule;
use crate::statevec::spec::CircuitSpec;
use crate::transport::amplitudes::Wire;
use crate::workload::exchange::decision::Against;
use crate::workload::exchange::model::Machine;
use crate::workload::exchange::model::described::MachineFigures;
use crate::workload::exchange::plan::{
    ComparePlan, ExchangePlan, Forecasting, Timed, check_chunk, memories, parse_counts, parse_qubits, parse_wires,
};
use clap::Args;

/// `--transport`'s help, from the list of wires.
fn wires_help() -> String {
    let names: Vec<&str> = Wire::ALL.iter().map(|w| w.name()).collect();
    format!("Comma-separated: {}; all = every GPU transport (add ,cpu for host ranks)", names.join(", "))
}

#[derive(Args, Debug, Clone)]
pub struct ExchangeArgs {
    /// Qubits of the register: N, or a range A..B to run every size from A to B (default: an OpenQASM circuit's qreg, or with --plan --from the records' largest register)
    #[arg(long, value_name = "N|A..B")]
    pub qubits: Option<String>,
    /// GPUs per process (host ranks for --transport cpu, at most 1024: a thread each), or several counts, 1,2,4,8: each measured where this node can, projected where not (with --plan, total GPUs, all projected); a power of two
    #[arg(short = 'g', long = "ngpus", default_value = "1", value_name = "N|N,N,...")]
    pub ngpus: String,
    /// Bytes per amplitude: single (complex<float>, 8) or double (complex<double>, 16) (default: double, or with --plan --from the records')
    #[arg(long, value_parser = ["single", "double"])]
    pub precision: Option<String>,
    /// gate (whole chunk exchanged, as QuEST), swap (half, as cuStateVec) or both
    #[arg(long, default_value = "both")]
    pub pattern: String,
    #[arg(long, help = wires_help())]
    pub transport: Option<String>,
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
    /// Circuits run on every register, comma-separated: qft (QuEST's), random[:GATES[:SEED]] (mirrored), or an OpenQASM 2 file (mirrored); at most 1000000 gates, a file's once its gate definitions are expanded (default: qft, or with --plan --from the records' circuits)
    #[arg(long)]
    pub circuit: Option<String>,
    /// How circuits meet global qubits: quest (exchange for each gate on one), swap (swap it into a local position first), both
    #[arg(long, default_value = "both")]
    pub schedule: String,
    /// Print the gate classes' table too (every class timed and checked; the record holds it either way)
    #[arg(short = 'v', long)]
    pub classes: bool,
    /// Times each circuit runs (the median is reported)
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub rounds: u32,
    /// A simulator's own time of the circuit on one GPU, seconds (CIRCUIT=SECONDS,... for several circuits): the verdict prices that simulator spread, its local steps at its speed and the exchanges as measured (with --plan, as projected)
    #[arg(long, value_name = "[CIRCUIT=]SECONDS,...", allow_negative_numbers = true)]
    pub simulator_time: Option<String>,
    /// Records of `qbench exchange -g 1` on the same register whose circuits are the one-GPU time the verdict compares with (for ranks under mpirun, which do not measure it); taken over one measured here
    #[arg(long, value_name = "RUN.json", num_args = 1.., conflicts_with = "plan")]
    pub one_gpu_from: Vec<std::path::PathBuf>,
    /// Project every -g count (total ranks) from --profile's machine figures or --from records (neither: this node, measured briefly first), every schedule and wire asked for (default: all the source knows)
    #[arg(long)]
    pub plan: bool,
    /// With --plan: a built-in profile or a TOML file whose [machine] figures the projection uses (a file may hold [machine] alone)
    #[arg(long, value_name = "NAME|FILE", requires = "plan", conflicts_with = "from")]
    pub profile: Option<String>,
    /// With --plan: ranks sharing each GPU (processes on one GPU, as a test of the model on a single GPU)
    #[arg(long, value_name = "K", requires = "plan", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub ranks_per_gpu: u32,
    /// With --plan: GPUs in a node (host ranks in a node for --transport cpu), over the source's figure; rank bits past a node cross the fabric
    #[arg(long, value_name = "N", requires = "plan", value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub gpus_per_node: Option<u32>,
    /// With --plan: exchange records (-J) whose measured classes and wires the projection uses
    #[arg(long, value_name = "RUN.json", num_args = 1.., requires = "plan")]
    pub from: Vec<std::path::PathBuf>,
    #[command(flatten)]
    pub out: OutputArgs,
}

impl ExchangeArgs {
    /// The exchange records `--from` names.
    fn records(&self) -> Result<Vec<(String, ExchangeRun)>> {
        self.from
            .iter()
            .map(|f| match crate::record::read(f)? {
                crate::record::AnyRecord::Exchange(r) => Ok((f.display().to_string(), r)),
                _ => Err(Error::Usage(format!("--from {}: not the record of a qbench exchange", f.display()))),
            })
            .collect()
    }

    /// The figures `--plan` projects from: a profile's `[machine]` or
    /// records; None: this node's, measured first.
    fn machine(&self, records: &[(String, ExchangeRun)]) -> Result<Option<Machine>> {
        if let Some(spec) = &self.profile {
            if let Some((name, text)) = crate::check::profile::BUILT_IN.iter().find(|(n, _)| n == spec) {
                let (m, _) = MachineFigures::from_toml(text, &format!("profiles/{name}.toml"))
                    .map_err(|e| Error::Usage(format!("profile {name}: {}", e.message())))?;
                return Ok(Some(Machine::of_figures(&format!("profile {name}"), &m)));
            }
            let text = crate::input::read(
                std::path::Path::new(spec),
                &format!("profile {spec}"),
                crate::input::PROFILE_BYTES,
            )?;
            let (m, name) = MachineFigures::from_toml(&text, spec)?;
            return Ok(Some(Machine::of_figures(&format!("profile {}", name.unwrap_or_else(|| spec.clone())), &m)));
        }
        if records.is_empty() {
            return Ok(None);
        }
        Machine::of_runs(records).map(Some)
    }

    pub fn plan(&self) -> Result<ExchangePlan> {
        let ops = GlobalOp::parse_list(&self.pattern)?;
        let records = if self.plan { self.records()? } else { Vec::new() };
        let circuits = self.circuits(&records)?;
        say_skips(&circuits)?;
        let precision = match &self.precision {
            Some(p) => Precision::parse(p)?,
            None => records
                .iter()
                .flat_map(|(_, r)| r.registers.iter().map(|g| g.precision))
                .next()
                .unwrap_or(Precision::Double),
        };
        let qubits = match &self.qubits {
            Some(q) => parse_qubits(q)?,
            None => self.default_qubits(&circuits, &records)?,
        };
        let ngpus = parse_counts(&self.ngpus)?;
        if !self.plan {
            held(&qubits, &ngpus, precision)?;
        }
        let transport = self.transport.clone().unwrap_or_else(|| "nccl".into());
        let wires = parse_wires(&transport, self.no_pipeline)?;
        let against = Against {
            simulator_s: match &self.simulator_time {
                Some(t) => Against::parse_simulator(t, &circuits)?,
                None => Vec::new(),
            },
            one_gpu_runs: Against::load_one_gpu(&self.one_gpu_from, &qubits)?,
        };
        let forecast = match self.plan {
            true => Some(Forecasting {
                machine: self.machine(&records)?,
                wires: match &self.transport {
                    Some(t) => t.split(',').map(|w| w.trim().to_string()).collect(),
                    None => Vec::new(),
                },
                sharing: self.ranks_per_gpu as usize,
                per_node: self.gpus_per_node.map(|n| n as usize),
            }),
            false => None,
        };
        let memories = memories(&wires, self.memory.as_deref())?;
        host_ranks_fit(&ngpus, &memories, self.plan)?;
        Ok(ExchangePlan {
            qubits,
            ngpus,
            forecast,
            precision,
            memories,
            wires,
            chunk: check_chunk(self.chunk)?,
            iters: self.iters,
            warmup: self.warmup_iters,
            circuits,
            schedules: Schedule::parse_list(&self.schedule)?,
            rounds: self.rounds,
            one_rank_too: true,
            classes_shown: self.classes,
            timed: Timed::Every,
            against,
            fault: ExchangePlan::fault_for(&ops)?,
            ops,
            unavailable: Vec::new(),
        }
        .within_reach())
    }

    /// The circuits asked for; else those of the records planned from, each
    /// once; else QFT.
    fn circuits(&self, records: &[(String, ExchangeRun)]) -> Result<Vec<CircuitSpec>> {
        let circuit = match &self.circuit {
            Some(c) => c.clone(),
            None => {
                let mut names: Vec<String> = Vec::new();
                let all = records.iter().flat_map(|(_, r)| &r.registers).flat_map(|g| &g.circuits);
                for c in all {
                    if !names.contains(&c.circuit) {
                        names.push(c.circuit.clone());
                    }
                }
                if names.is_empty() { "qft".into() } else { names.join(",") }
            }
        };
        circuit.split(',').map(|c| CircuitSpec::parse(c.trim())).collect()
    }

    /// The register size when --qubits is not given: an OpenQASM file's
    /// qreg, else (planning from records) their largest register.
    fn default_qubits(&self, circuits: &[CircuitSpec], records: &[(String, ExchangeRun)]) -> Result<Vec<u32>> {
        let mut declared = Vec::new();
        for c in circuits {
            if let Some(n) = c.qubits()? {
                declared.push(n);
            }
        }
        declared.dedup();
        match declared.as_slice() {
            [n] => return Ok(vec![*n]),
            [_, _, ..] => {
                return Err(Error::Usage(
                    "the OpenQASM files declare registers of different sizes: give --qubits N for one of them".into(),
                ));
            }
            [] => {}
        }
        records
            .iter()
            .flat_map(|(_, r)| r.registers.iter().map(|g| g.qubits))
            .max()
            .map(|n| vec![n])
            .ok_or_else(|| Error::Usage("--qubits N (or A..B): the size of the register".into()))
    }
}

/// Every register and count to be measured, checked before the first
/// runs: a count that cannot hold a register is refused, not reached.
fn held(qubits: &[u32], ngpus: &[usize], precision: Precision) -> Result<()> {
    for &n in qubits {
        for &g in ngpus {
            Layout::new(n, g, precision).map_err(|e| Error::Usage(format!("-g {g}: {}", e.message())))?;
        }
    }
    Ok(())
}

/// Says once what the files' circuits skip (`measure`, `barrier`).
fn say_skips(circuits: &[CircuitSpec]) -> Result<()> {
    for c in circuits {
        if let Some(skips) = c.skips()?
            && first_of_job()
        {
            eprintln!("qbench: {skips}");
        }
    }
    Ok(())
}

/// Err unless every count of ranks held in host memory runs as threads of
/// this process, at most the cpu transport's (a plan starts none).
fn host_ranks_fit(ngpus: &[usize], memories: &[crate::transport::amplitudes::Memory], plan: bool) -> Result<()> {
    let most = crate::transport::cpu::MAX_RANKS;
    match ngpus.iter().find(|&&n| n > most) {
        Some(n) if !plan && memories.contains(&crate::transport::amplitudes::Memory::Host) => Err(Error::Usage(
            format!("-g {n}: host ranks run as threads of this process, at most {most} (use --plan to project more)"),
        )),
        _ => Ok(()),
    }
}

/// Whether this process is the first of its job's (or runs alone), so that
/// a note every process would print is printed once.
fn first_of_job() -> bool {
    ["OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"]
        .iter()
        .all(|v| std::env::var(v).is_ok_and(|r| r.trim() == "0") || std::env::var_os(v).is_none())
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
