//! The command line: one subcommand per job, each turned into a validated
//! plan that knows nothing of clap. The collective subcommands are made
//! from the list of collectives and take nccl-tests' letters and long
//! names, so that existing habits and scripts carry over.

use crate::dtype::{DataType, RedOp};
use crate::error::{Error, Result};
use crate::output::OutputPlan;
use crate::record::collective::{Average, Config, TransportKind};
use crate::record::exchange::Circuit;
use crate::statevec::layout::{Pattern, Precision};
use crate::units::{Step, parse_size};
use crate::workload::collective::Kind;
use crate::workload::collective::plan::CollectivePlan;
use crate::workload::copy::{CopyOptions, CopyPlan};
use crate::workload::exchange::plan::{ComparePlan, ExchangePlan, check_chunk, memories, parse_qubits, parse_wires};
use clap::{ArgMatches, Args, FromArgMatches, Parser, Subcommand};
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(
    name = "qbench",
    version,
    about = "Cluster communication diagnostics and benchmarks for distributed GPU state-vector simulation",
    long_about = None,
)]
pub struct Cli {
    /// No progress on stderr while a run works (it is drawn only when stderr is a terminal); for check, nothing when ready and one line per failure otherwise (Slurm Prolog and HealthCheckProgram)
    #[arg(long, global = true)]
    pub quiet: bool,
    #[command(subcommand)]
    pub command: Command,
}

impl Cli {
    /// The terminal settings of this run: --quiet, and what stdout and stderr are.
    pub fn ui(&self) -> crate::ui::Ui {
        crate::ui::Ui::detect(self.quiet)
    }
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Report this node's GPUs, RDMA adapters, GPUDirect and NCCL setup, with a verdict and fixes
    Probe(ProbeArgs),
    #[command(flatten)]
    Collective(CollectiveCommand),
    /// A distributed state vector's amplitude exchange: timed, checked amplitude by amplitude, judged
    Exchange(ExchangeArgs),
    /// The same bytes over every transport between partner GPUs, side by side
    Compare(CompareArgs),
    /// Is this node ready for the simulation? The profile's facts and measurements, judged, one verdict
    #[command(after_help = CHECK_HELP)]
    Check(CheckArgs),
    /// Copy bandwidth and latency: host<->GPU, GPU<->GPU, zero-copy, gdrcopy (nvbandwidth, gdrcopy's copylat)
    #[command(
        after_help = "Every destination is compared with its source after each size; wrong data exits 1.\nQBENCH_CORRUPT=copy[:WORD] flips word WORD (default 0) of every destination before that check, to prove it."
    )]
    Copy(CopyArgs),
    /// Draw qbench's JSON records as SVG or PNG: bandwidth against size, copy matrices, transports side by side
    Plot(PlotArgs),
    /// RDMA WRITE/READ/SEND bandwidth and latency between two adapters (perftest's ib_*_bw, ib_*_lat)
    Rdma(crate::rdma::options::RdmaArgs),
}

/// What check's exit status says, under its --help.
const CHECK_HELP: &str = "Exit status: 0 ready, 1 not ready (a FAIL), 2 bad profile or usage, 3 hardware the profile requires is missing, 4 runtime failure.\nBuilt-in profiles: cpu, h200x1, h200x2-nvlink, h100x8-ndr, h200x8-ndr, a100x8-hdr, mlx4-fdr (profiles/README.md).";

/// How the collectives are timed and checked, under each one's --help.
const TIMING_HELP: &str = "Timing (--transport nccl): the time column is the host clock around -n back-to-back launches (-G: graph launches) until every GPU is idle, divided by the operations, as nccl-tests measures it; the per-iteration percentiles in the JSON come from a separate pass with CUDA events. Communicators are created as nccl-tests 2.19 creates them (NCCL 2.28 and later: ncclCommInitRankConfig with nvlinkCentricSched = 1). --transport cpu times each iteration on the host clock.\nEvery output element is compared with its exact expected value; wrong data exits 1. QBENCH_CORRUPT=RANK[:ELEMENT] flips one element after each validation operation, to prove it.";

/// A collective subcommand: which collective, with nccl-tests' options.
#[derive(Debug)]
pub struct CollectiveCommand {
    pub kind: Kind,
    pub args: CollArgs,
}

impl FromArgMatches for CollectiveCommand {
    fn from_arg_matches(m: &ArgMatches) -> std::result::Result<Self, clap::Error> {
        let (name, sub) = m.subcommand().ok_or_else(|| clap::Error::new(clap::error::ErrorKind::MissingSubcommand))?;
        let kind =
            Kind::from_command(name).ok_or_else(|| clap::Error::new(clap::error::ErrorKind::InvalidSubcommand))?;
        Ok(CollectiveCommand { kind, args: CollArgs::from_arg_matches(sub)? })
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> std::result::Result<(), clap::Error> {
        *self = CollectiveCommand::from_arg_matches(m)?;
        Ok(())
    }
}

impl Subcommand for CollectiveCommand {
    fn augment_subcommands(mut cmd: clap::Command) -> clap::Command {
        for &kind in Kind::ALL {
            let spec = kind.spec();
            let mut sub =
                CollArgs::augment_args(clap::Command::new(spec.command())).about(spec.about()).after_help(TIMING_HELP);
            if spec.name() != spec.command() {
                sub = sub.visible_alias(spec.name());
            }
            cmd = cmd.subcommand(sub.alias(kind.program()));
        }
        cmd
    }

    fn augment_subcommands_for_update(cmd: clap::Command) -> clap::Command {
        CollectiveCommand::augment_subcommands(cmd)
    }

    fn has_subcommand(name: &str) -> bool {
        Kind::from_command(name).is_some()
    }
}

#[derive(Args, Debug, Clone)]
pub struct ProbeArgs {
    /// Print the report as JSON on stdout instead of tables
    #[arg(long)]
    pub json: bool,
    /// Read /sys, /dev and /proc facts under this directory instead of / (for tests and offline reports)
    #[arg(long, value_name = "DIR")]
    pub sysfs_root: Option<PathBuf>,
}

impl ProbeArgs {
    pub fn plan(&self) -> crate::probe::ProbePlan {
        crate::probe::ProbePlan { json: self.json, sysfs_root: self.sysfs_root.clone() }
    }
}

#[derive(Args, Debug, Clone)]
pub struct ExchangeArgs {
    /// Qubits of the register: N, or a range A..B to run every size from A to B
    #[arg(long, value_name = "N|A..B")]
    pub qubits: String,
    /// GPUs per process (host ranks for --transport cpu); the total must be a power of two
    #[arg(short = 'g', long = "ngpus", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub ngpus: u32,
    /// Bytes per amplitude: single (complex<float>, 8) or double (complex<double>, 16)
    #[arg(long, default_value = "double", value_parser = ["single", "double"])]
    pub precision: String,
    /// gate (whole chunk exchanged, as QuEST), swap (half, as cuStateVec) or both
    #[arg(long, default_value = "both")]
    pub pattern: String,
    /// Comma-separated: nccl, p2p, p2p-ce, host, host-unpipelined, mpi, mpi-unpipelined, mpi-cuda-aware, rdma, rdma-staged, cpu; all = every GPU transport (add ,cpu for host ranks)
    #[arg(long, default_value = "nccl")]
    pub transport: String,
    /// Where the registers are held: gpu, host or gpu,host (default: what the transports move; GPUs for rdma alone)
    #[arg(long, value_name = "gpu|host|gpu,host")]
    pub memory: Option<String>,
    /// Largest message piece for nccl and host transfers (default: 2^28 amplitudes for nccl, as QuEST; 64M for host)
    #[arg(long, value_parser = size_arg)]
    pub chunk: Option<u64>,
    /// Use the QuEST-style unpipelined host path for --transport host
    #[arg(long)]
    pub no_pipeline: bool,
    /// Timed repetitions of each operation (the median is reported)
    #[arg(short = 'n', long = "iters", default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    pub iters: u32,
    /// Untimed repetitions before them
    #[arg(short = 'w', long = "warmup_iters", alias = "warmup-iters", default_value_t = 1)]
    pub warmup_iters: u32,
    /// Circuit models of the verdict: qft, random (gates on random qubits), random:FRACTION of gates global
    #[arg(long, default_value = "qft,random")]
    pub circuit: String,
    #[command(flatten)]
    pub out: OutputArgs,
}

impl ExchangeArgs {
    pub fn plan(&self) -> Result<ExchangePlan> {
        let patterns = Pattern::parse_list(&self.pattern)?;
        let wires = parse_wires(&self.transport, self.no_pipeline)?;
        Ok(ExchangePlan {
            qubits: parse_qubits(&self.qubits)?,
            ngpus: self.ngpus as usize,
            precision: Precision::parse(&self.precision)?,
            memories: memories(&wires, self.memory.as_deref())?,
            wires,
            chunk: check_chunk(self.chunk)?,
            iters: self.iters,
            warmup: self.warmup_iters,
            circuits: self.circuit.split(',').map(|c| Circuit::parse(c.trim())).collect::<Result<_>>()?,
            fault: ExchangePlan::fault_for(&patterns)?,
            patterns,
            output: self.out.plan(),
        })
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
            self.out.plan(),
        )
    }
}

#[derive(Args, Debug, Clone)]
pub struct CheckArgs {
    /// A built-in profile or a TOML file (default: the built-in profile matching this node's GPUs)
    #[arg(long, value_name = "NAME|FILE")]
    pub profile: Option<String>,
    /// quick, standard or full: which steps run, within the profile's time budget for the level
    #[arg(long, default_value = "quick")]
    pub level: String,
    /// Hold the measurements against an earlier --save-baseline of this node or one of its kind
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<PathBuf>,
    /// Write this check's record, to be the baseline of later checks
    #[arg(long, value_name = "FILE")]
    pub save_baseline: Option<PathBuf>,
    /// Measure this node and write a profile with floors at the profile's fraction of what it measured
    #[arg(long, value_name = "FILE")]
    pub init: Option<PathBuf>,
    /// Judge the facts read under this directory instead of / and measure nothing (fixture trees)
    #[arg(long, value_name = "DIR")]
    pub sysfs_root: Option<PathBuf>,
    #[command(flatten)]
    pub out: OutputArgs,
}

impl CheckArgs {
    /// The plan; `quiet` (the global --quiet): nothing printed when ready,
    /// one line per failure otherwise.
    pub fn plan(&self, quiet: bool) -> Result<crate::check::CheckPlan> {
        use crate::check::profile;
        crate::fault::Fault::requested("check", &[])?;
        let level = profile::Level::parse(&self.level)?;
        if let Some(root) = &self.sysfs_root {
            std::fs::read_dir(root).map_err(|e| Error::Usage(format!("--sysfs-root {}: {e}", root.display())))?;
        }
        let (profile, profile_from) = match &self.profile {
            Some(spec) => profile::load(spec)?,
            None => {
                let host = crate::probe::collect::Host::new(self.sysfs_root.clone(), Default::default());
                let gpus = crate::probe::collect::gpu::collect(&host);
                let names: Vec<String> = gpus.gpus.iter().filter_map(|g| g.name.value().cloned()).collect();
                profile::choose(&names)?
            }
        };
        let baseline = match &self.baseline {
            None => None,
            Some(path) => match crate::record::read(path)? {
                crate::record::AnyRecord::Check(run) => Some((path.display().to_string(), run)),
                _ => {
                    return Err(Error::Usage(format!(
                        "--baseline {}: not the record of a qbench check",
                        path.display()
                    )));
                }
            },
        };
        let mut output = self.out.plan();
        output.json_files.extend(self.save_baseline.iter().cloned());
        output.quiet = quiet;
        Ok(crate::check::CheckPlan {
            profile,
            profile_from,
            level,
            baseline,
            sysfs_root: self.sysfs_root.clone(),
            init: self.init.clone(),
            output,
        })
    }
}

/// Where a run's records go besides the text on stdout.
#[derive(Args, Debug, Clone)]
pub struct OutputArgs {
    /// Write the run's records as JSON to this file
    #[arg(short = 'J', long = "output_file", alias = "output-file", value_name = "FILE")]
    pub output_file: Option<PathBuf>,
    /// Print the records as JSON on stdout instead of the tables
    #[arg(long)]
    pub json: bool,
    /// Write the records as CSV to this file
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
}

impl OutputArgs {
    pub fn plan(&self) -> OutputPlan {
        OutputPlan {
            json_files: self.output_file.iter().cloned().collect(),
            csv_file: self.csv.clone(),
            json_stdout: self.json,
            quiet: false,
        }
    }
}

/// nccl-tests' options, same letters, same long names, same defaults.
#[derive(Args, Debug, Clone)]
pub struct CollArgs {
    /// Minimum size in bytes (K, M, G suffixes are binary)
    #[arg(short = 'b', long = "minbytes", default_value = "32M", value_parser = size_arg)]
    pub minbytes: u64,
    /// Maximum size in bytes
    #[arg(short = 'e', long = "maxbytes", default_value = "32M", value_parser = size_arg)]
    pub maxbytes: u64,
    /// Additive step between sizes (used when -f is 1)
    #[arg(short = 'i', long = "stepbytes", default_value = "1M", value_parser = size_arg)]
    pub stepbytes: u64,
    /// Multiplicative step factor between sizes (wins over -i when above 1)
    #[arg(short = 'f', long = "stepfactor", default_value_t = 1)]
    pub stepfactor: u64,
    /// GPUs per thread (host ranks per thread for --transport cpu)
    #[arg(short = 'g', long = "ngpus", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub ngpus: u32,
    /// Threads per process, each driving its -g GPUs
    #[arg(short = 't', long = "nthreads", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub nthreads: u32,
    /// Timed iterations per size
    #[arg(short = 'n', long = "iters", default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..))]
    pub iters: u32,
    /// Warm-up iterations before each timed size
    #[arg(short = 'w', long = "warmup_iters", alias = "warmup-iters", default_value_t = 1)]
    pub warmup_iters: u32,
    /// Operations aggregated in one group launch per iteration
    #[arg(short = 'm', long = "agg_iters", alias = "agg-iters", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub agg_iters: u32,
    /// Repeat the whole sweep this many times (0 = until interrupted)
    #[arg(short = 'N', long = "run_cycles", alias = "run-cycles", default_value_t = 1)]
    pub run_cycles: u32,
    /// Validation iterations per size (0 turns data checking off)
    #[arg(short = 'c', long = "check", default_value_t = 1)]
    pub check: u32,
    /// Reduction op: sum, prod, max, min, avg or all
    #[arg(short = 'o', long = "op", default_value = "sum")]
    pub op: String,
    /// Data type: int8, uint8, int32, uint32, int64, uint64, half, float, double, bfloat16 or all
    #[arg(short = 'd', long = "datatype", default_value = "float")]
    pub datatype: String,
    /// Root rank of broadcast and reduce (-1 = every rank in turn)
    #[arg(short = 'r', long = "root", default_value_t = 0, allow_negative_numbers = true)]
    pub root: i64,
    /// Capture the timed iterations in a CUDA graph and launch it this many times (0 = off)
    #[arg(short = 'G', long = "cudagraph", default_value_t = 0)]
    pub cudagraph: u32,
    /// Cross-rank time reduction: 0 rank 0, 1 average, 2 minimum, 3 maximum
    #[arg(short = 'a', long = "average", default_value_t = 1, value_parser = clap::value_parser!(u8).range(0..=3))]
    pub average: u8,
    /// Abort the communicator and exit 4 when one operation takes longer than this many seconds (0 = never)
    #[arg(short = 'T', long = "timeout", default_value_t = 0)]
    pub timeout: u64,
    #[command(flatten)]
    pub out: OutputArgs,
    /// What moves the data: nccl (GPU buffers) or cpu (host buffers, threads as ranks)
    #[arg(long, default_value = "nccl", value_parser = ["nccl", "cpu"])]
    pub transport: String,
    /// Seed of the input data
    #[arg(long, default_value_t = crate::pattern::DEFAULT_SEED)]
    pub seed: u64,
}

impl CollArgs {
    pub fn plan(&self, kind: Kind) -> Result<CollectivePlan> {
        if self.stepfactor == 0 {
            return Err(Error::Usage("step factor (-f) must be 1 (off) or more".into()));
        }
        let transport = if self.transport == "cpu" { TransportKind::Cpu } else { TransportKind::Nccl };
        let config = Config {
            nranks: (self.nthreads * self.ngpus) as usize,
            nthreads: self.nthreads as usize,
            ngpus: self.ngpus as usize,
            minbytes: self.minbytes,
            maxbytes: self.maxbytes,
            step: if self.stepfactor > 1 { Step::Factor(self.stepfactor) } else { Step::Bytes(self.stepbytes) },
            warmup_iters: self.warmup_iters,
            iters: self.iters,
            agg_iters: self.agg_iters,
            run_cycles: self.run_cycles,
            check: self.check,
            cudagraph: self.cudagraph,
            average: Average::from_code(self.average),
            timeout_s: self.timeout,
            datatypes: DataType::parse(&self.datatype)?,
            ops: RedOp::parse(&self.op)?,
            root: self.root,
            seed: self.seed,
        };
        CollectivePlan::new(kind, transport, config, self.out.plan())
    }
}

/// `qbench copy`: nccl-tests' letters where they mean the same thing.
#[derive(Args, Debug, Clone)]
pub struct CopyArgs {
    /// Tests to run: names or family names, comma-separated, or all (see --list)
    #[arg(long = "test", default_value = "all", value_name = "NAME,...")]
    pub test: String,
    /// List the tests and exit
    #[arg(long)]
    pub list: bool,
    /// Smallest copy in bytes of the bandwidth sweep (K, M, G suffixes are binary)
    #[arg(short = 'b', long = "minbytes", default_value = "1M", value_parser = size_arg)]
    pub minbytes: u64,
    /// Largest copy in bytes of the bandwidth sweep (cut to what free memory holds)
    #[arg(short = 'e', long = "maxbytes", default_value = "1G", value_parser = size_arg)]
    pub maxbytes: u64,
    /// Multiplicative step between sizes
    #[arg(short = 'f', long = "stepfactor", default_value_t = 4)]
    pub stepfactor: u64,
    /// Back-to-back copies in one timed sample
    #[arg(short = 'n', long = "iters", default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=10000))]
    pub iters: u32,
    /// Warm-up copies before each size is timed
    #[arg(short = 'w', long = "warmup_iters", alias = "warmup-iters", default_value_t = 3)]
    pub warmup_iters: u32,
    /// Timed samples per size; the median is reported
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    pub samples: u32,
    /// Copies timed one by one at each size of the latency tests (1 B to 16 MiB)
    #[arg(long = "lat_iters", alias = "lat-iters", default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..))]
    pub lat_iters: u32,
    /// GPUs to use, the first ones visible (default: all)
    #[arg(short = 'g', long = "ngpus", value_parser = clap::value_parser!(u32).range(1..))]
    pub ngpus: Option<u32>,
    #[command(flatten)]
    pub out: OutputArgs,
    /// Seed of the copied data
    #[arg(long, default_value_t = crate::pattern::DEFAULT_SEED)]
    pub seed: u64,
}

impl CopyArgs {
    pub fn plan(&self) -> Result<CopyPlan> {
        let options = CopyOptions {
            tests: self.test.clone(),
            minbytes: self.minbytes,
            maxbytes: self.maxbytes,
            stepfactor: self.stepfactor,
            iters: self.iters,
            warmup_iters: self.warmup_iters,
            samples: self.samples,
            lat_iters: self.lat_iters,
            ngpus: self.ngpus.map(|n| n as usize),
            seed: self.seed,
        };
        crate::workload::copy::alone_on_this_node()?;
        CopyPlan::new(&options, self.out.plan())
    }
}

/// `qbench plot`.
#[derive(Args, Debug, Clone)]
pub struct PlotArgs {
    /// JSON records written by -J or --json (collective, copy, exchange, compare, check, rdma); several of one kind overlay
    #[arg(required = true, value_name = "FILE.json")]
    pub files: Vec<PathBuf>,
    /// The picture: SVG, or PNG when the name ends in .png; - writes SVG to stdout (default: FILE.svg here)
    #[arg(short = 'o', long = "output", value_name = "OUT.svg|OUT.png")]
    pub output: Option<PathBuf>,
    /// Collectives: the figure against size (default busbw); time, p50 and p99 also pick copy latency and exchange figures
    #[arg(long, value_name = "busbw|algbw|time|p50|p99")]
    pub metric: Option<String>,
    /// The picture's title (default: what is drawn, from which hosts)
    #[arg(long, value_name = "TEXT")]
    pub title: Option<String>,
    /// Copy records: the tests to draw, names or families, comma-separated (default: every test that ran)
    #[arg(long = "test", value_name = "NAME,...")]
    pub test: Option<String>,
}

impl PlotArgs {
    pub fn plan(&self) -> Result<crate::report::plot::PlotPlan> {
        crate::report::plot::PlotPlan::new(
            self.files.clone(),
            self.output.clone(),
            self.metric.as_deref(),
            self.title.clone(),
            self.test.as_deref(),
        )
    }
}

fn size_arg(s: &str) -> std::result::Result<u64, String> {
    parse_size(s).map_err(|e| e.to_string())
}
