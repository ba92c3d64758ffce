//! The command line: one subcommand per job. The collective subcommands take
//! nccl-tests' letters and long names, so that existing habits and scripts
//! carry over.

use crate::dtype::{DataType, RedOp};
use crate::error::{Error, Result};
use crate::units::{Step, parse_size};
use crate::workload::collective::Kind;
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(
    name = "qbench",
    version,
    about = "Cluster communication diagnostics and benchmarks for distributed GPU state-vector simulation",
    long_about = None,
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Report this node's GPUs, RDMA adapters, GPUDirect and NCCL setup, with a verdict and fixes
    Probe(ProbeArgs),
    /// NCCL all_reduce benchmark (nccl-tests all_reduce_perf)
    #[command(visible_alias = "all_reduce", alias = "all_reduce_perf")]
    Allreduce(CollArgs),
    /// NCCL all_gather benchmark (nccl-tests all_gather_perf)
    #[command(visible_alias = "all_gather", alias = "all_gather_perf")]
    Allgather(CollArgs),
    /// NCCL reduce_scatter benchmark (nccl-tests reduce_scatter_perf)
    #[command(visible_alias = "reduce_scatter", alias = "reduce_scatter_perf")]
    Reducescatter(CollArgs),
    /// NCCL broadcast benchmark (nccl-tests broadcast_perf)
    #[command(alias = "broadcast_perf")]
    Broadcast(CollArgs),
    /// NCCL reduce benchmark (nccl-tests reduce_perf)
    #[command(alias = "reduce_perf")]
    Reduce(CollArgs),
    /// NCCL alltoall benchmark (nccl-tests alltoall_perf)
    #[command(alias = "alltoall_perf")]
    Alltoall(CollArgs),
    /// NCCL send/recv ring benchmark (nccl-tests sendrecv_perf)
    #[command(alias = "sendrecv_perf")]
    Sendrecv(CollArgs),
    /// A distributed state vector's amplitude exchange: timed, checked amplitude by amplitude, judged
    Exchange(ExchangeArgs),
    /// The same bytes over every transport between partner GPUs, side by side
    Compare(CompareArgs),
    /// Copy bandwidth and latency: host<->GPU, GPU<->GPU, zero-copy, gdrcopy (nvbandwidth, gdrcopy's copylat)
    #[command(
        after_help = "Every destination is compared with its source after each size; wrong data exits 1.\nQBENCH_CORRUPT=copy[:WORD] flips word WORD (default 0) of every destination before that check, to prove it."
    )]
    Copy(CopyArgs),
    /// RDMA WRITE/READ/SEND bandwidth and latency between two adapters (perftest's ib_*_bw, ib_*_lat)
    Rdma(crate::rdma::options::RdmaArgs),
}

impl Command {
    /// The collective a collective subcommand runs, with its arguments.
    pub fn collective(&self) -> Option<(Kind, &CollArgs)> {
        Some(match self {
            Command::Allreduce(a) => (Kind::AllReduce, a),
            Command::Allgather(a) => (Kind::AllGather, a),
            Command::Reducescatter(a) => (Kind::ReduceScatter, a),
            Command::Broadcast(a) => (Kind::Broadcast, a),
            Command::Reduce(a) => (Kind::Reduce, a),
            Command::Alltoall(a) => (Kind::AllToAll, a),
            Command::Sendrecv(a) => (Kind::SendRecv, a),
            Command::Probe(_) | Command::Exchange(_) | Command::Compare(_) | Command::Copy(_) | Command::Rdma(_) => {
                return None;
            }
        })
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

#[derive(Args, Debug, Clone)]
pub struct ExchangeArgs {
    /// Qubits of the register: N, or a range A..B to run every size from A to B
    #[arg(long, value_name = "N|A..B")]
    pub qubits: String,
    /// GPUs per process (host ranks for --transport cpu); the total must be a power of two
    #[arg(short = 'g', long = "ngpus", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub ngpus: u32,
    /// Bytes per amplitude: single (complex<float>, 8) or double (complex<double>, 16)
    #[arg(long, value_enum, default_value_t = crate::workload::exchange::layout::Precision::Double)]
    pub precision: crate::workload::exchange::layout::Precision,
    /// gate (whole chunk exchanged, as QuEST), swap (half, as cuStateVec) or both
    #[arg(long, default_value = "both")]
    pub pattern: String,
    /// Comma-separated: nccl, p2p, p2p-ce, host, host-unpipelined, cpu; all = every GPU transport (add ,cpu for host ranks)
    #[arg(long, default_value = "nccl")]
    pub transport: String,
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

#[derive(Args, Debug, Clone)]
pub struct CompareArgs {
    /// Bytes each rank sends to its partner (and receives)
    #[arg(short = 'b', long = "bytes", default_value = "1G", value_parser = size_arg)]
    pub bytes: u64,
    /// GPUs per process (a power of two)
    #[arg(short = 'g', long = "ngpus", default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..))]
    pub ngpus: u32,
    /// Timed repetitions per transport (the median is reported)
    #[arg(short = 'n', long = "iters", default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..))]
    pub iters: u32,
    #[arg(short = 'w', long = "warmup_iters", alias = "warmup-iters", default_value_t = 2)]
    pub warmup_iters: u32,
    #[command(flatten)]
    pub out: OutputArgs,
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

/// Where the ranks' buffers live and what moves them.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TransportKind {
    /// GPU buffers, NCCL collectives
    Nccl,
    /// Host buffers, ranks as threads, collectives on the CPU
    Cpu,
}

impl TransportKind {
    pub fn name(self) -> &'static str {
        match self {
            TransportKind::Nccl => "nccl",
            TransportKind::Cpu => "cpu",
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
    #[arg(long, value_enum, default_value_t = TransportKind::Nccl)]
    pub transport: TransportKind,
    /// Seed of the input data
    #[arg(long, default_value_t = crate::pattern::DEFAULT_SEED)]
    pub seed: u64,
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

fn size_arg(s: &str) -> std::result::Result<u64, String> {
    parse_size(s).map_err(|e| e.to_string())
}

/// How per-rank times combine into the reported time (`-a`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Average {
    Rank0,
    Mean,
    Min,
    Max,
}

impl CollArgs {
    pub fn step(&self) -> Step {
        if self.stepfactor > 1 { Step::Factor(self.stepfactor) } else { Step::Bytes(self.stepbytes) }
    }

    pub fn dtypes(&self) -> Result<Vec<DataType>> {
        DataType::parse(&self.datatype)
    }

    pub fn ops(&self) -> Result<Vec<RedOp>> {
        RedOp::parse(&self.op)
    }

    pub fn average(&self) -> Average {
        match self.average {
            0 => Average::Rank0,
            2 => Average::Min,
            3 => Average::Max,
            _ => Average::Mean,
        }
    }

    /// Checks what clap cannot: combinations and ranges that depend on each other.
    pub fn validate(&self) -> Result<()> {
        if self.root < -1 {
            return Err(Error::Usage(format!(
                "invalid root {} (-r): use a rank number, or -1 for every rank",
                self.root
            )));
        }
        if self.stepfactor == 0 {
            return Err(Error::Usage("step factor (-f) must be 1 (off) or more".into()));
        }
        self.dtypes()?;
        self.ops()?;
        crate::units::sweep(self.minbytes, self.maxbytes, self.step())?;
        Ok(())
    }
}
