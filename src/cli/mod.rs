//! The command line: one subcommand per job, one file each, every one
//! turned into a validated plan that knows nothing of clap, and the output
//! it asked for. Only this folder (and main.rs) speaks clap.

mod check;
mod collective;
mod copy;
mod exchange;
mod osu;
mod plot;
mod probe;
mod rdma;

pub use check::CheckArgs;
pub use collective::{CollArgs, CollectiveCommand};
pub use copy::CopyArgs;
pub use exchange::{CompareArgs, ExchangeArgs};
pub use plot::{PlotArgs, ShowArgs};
pub use probe::ProbeArgs;
pub use rdma::RdmaArgs;

use crate::output::OutputPlan;
use crate::report::export::Format;
use crate::units::parse_size;
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(
    name = "qbench",
    version,
    about = "Cluster communication diagnostics and benchmarks for distributed GPU state-vector simulation",
    long_about = None,
)]
pub struct Cli {
    /// No progress line on stderr (check: no table either; see qbench check --help)
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
    #[command(after_help = format!("{}\n{QUIET_CHECK}", check::CHECK_HELP))]
    Check(CheckArgs),
    /// Copy bandwidth and latency: host<->GPU, GPU<->GPU, zero-copy, gdrcopy (nvbandwidth, gdrcopy's copylat)
    #[command(
        after_help = "Every destination is compared with its source after each size; wrong data exits 1.\nQBENCH_CORRUPT=copy[:WORD] flips word WORD (default 0) of every destination before that check, to prove it."
    )]
    Copy(CopyArgs),
    /// Draw qbench's JSON records as SVG or PNG: bandwidth against size, copy matrices, transports side by side
    Plot(PlotArgs),
    /// Print JSON records as their runs printed them: the nccl-tests table of a collective record, and so on
    Show(ShowArgs),
    #[command(flatten)]
    Rdma(rdma::RdmaCommand),
    #[command(flatten)]
    Osu(osu::OsuCommand),
}

/// What `--quiet` does to `qbench check`, under check's --help alone (its
/// arguments may name it too): the form Slurm's Prolog and
/// HealthCheckProgram take a drain reason in.
pub const QUIET_CHECK: &str = "--quiet: no table. Nothing when every step passed; else on stderr one line per FAIL, then one per WARN (exit 0 with only WARNs), each with the node, the step, what was measured and what was wanted, then one SKIP line per step not measured, with why; each node's lines said once, by its first process; what --init wrote, in one line, first. The form a Slurm Prolog or HealthCheckProgram takes (contrib/slurm/qbench-health, docs/check.md).";

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
    /// Write the records' figures to this file in Prometheus' text format (node_exporter's textfile collector): a gauge per figure, labelled with its row's keys
    #[arg(long, value_name = "FILE")]
    pub prometheus: Option<PathBuf>,
    /// Whose JSON -J and --json write: qbench (its records, which show, plot and check read) or nccl-tests (nccl-tests' -J file, format version 3, for its tools; the collectives only)
    #[arg(long, value_enum, default_value = "qbench", value_name = "WHOSE")]
    pub format: FormatArg,
}

/// `--format`'s values.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum FormatArg {
    Qbench,
    NcclTests,
}

impl OutputArgs {
    pub fn plan(&self) -> OutputPlan {
        let files = [(Format::Csv, &self.csv), (Format::Prometheus, &self.prometheus)];
        OutputPlan {
            json_files: self.output_file.iter().cloned().collect(),
            json_stdout: self.json,
            format: match self.format {
                FormatArg::Qbench => Format::Json,
                FormatArg::NcclTests => Format::NcclTests,
            },
            files: files.into_iter().filter_map(|(f, path)| Some((f, path.clone()?))).collect(),
            quiet: false,
            also: Vec::new(),
        }
    }
}

/// A size argument: "16M", "1G", 4096.
fn size_arg(s: &str) -> std::result::Result<u64, String> {
    parse_size(s).map_err(|e| e.to_string())
}
