//! The collective subcommands, made from the list of collectives, with
//! nccl-tests' letters, long names and defaults, so that existing habits
//! and scripts carry over.

use super::{OutputArgs, size_arg};
use crate::dtype::{DataType, RedOp};
use crate::error::{Error, Result};
use crate::record::collective::{Average, Registration, TransportKind};
use crate::units::Growth;
use crate::workload::collective::Kind;
use crate::workload::collective::plan::{CollectivePlan, Options};
use clap::{ArgMatches, Args, FromArgMatches, Subcommand};

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
            // As getopt in nccl-tests: an option given twice takes its last value.
            let mut sub = CollArgs::augment_args(clap::Command::new(spec.command()))
                .about(spec.about())
                .after_help(TIMING_HELP)
                .args_override_self(true);
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

/// `--transport`'s help, from the list of the collectives' transports.
fn transport_help() -> String {
    let each: Vec<String> = TransportKind::ALL.iter().map(|t| format!("{} ({})", t.name(), t.how())).collect();
    format!("What moves the data: {}", each.join(", "))
}

fn transport_arg(s: &str) -> std::result::Result<TransportKind, String> {
    TransportKind::parse(s).map_err(|e| e.message())
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
    /// Reduction op: sum, prod, max, min, avg, mulsum (a PreMulSum op: each rank's input times 1 on even ranks, 2 on odd) or all
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
    /// Blocking: 0 launches back to back; 1 waits for the GPUs and a barrier of every rank after each launch; 2 waits after each launch; 3 waits and a barrier after each timed iteration, the barrier untimed
    #[arg(short = 'z', long = "blocking", default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=3))]
    pub blocking: u8,
    /// 1: the time column is the host time spent launching (nccl-tests' cputime); bandwidths stay the GPU-complete time's
    #[arg(short = 'C', long = "report_cputime", default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=1))]
    pub report_cputime: u8,
    /// 1: each row ends with the local time it was measured
    #[arg(short = 'S', long = "report_timestamps", default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=1))]
    pub report_timestamps: u8,
    /// Buffer registration: 0 none; 1 with each communicator (ncclCommRegister); 2 symmetric windows (ncclCommWindowRegister, NCCL 2.27 and later; local before)
    #[arg(short = 'R', long = "local_register", default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=2))]
    pub local_register: u8,
    /// NCCL's CTA policy for the communicators: 0 default, 1 efficiency, 2 zero (NCCL 2.28 and later); unset leaves NCCL's choice
    #[arg(short = 'x', long = "cta_policy", value_parser = clap::value_parser!(u8).range(0..=2))]
    pub cta_policy: Option<u8>,
    /// 1: the GPU memory the communicators, the buffers and the collectives took, after the table
    #[arg(short = 'M', long = "memory", default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=1))]
    pub memory: u8,
    /// Start both buffers this many elements past their allocation (misaligned)
    #[arg(short = 'u', long = "unalign", default_value_t = 0)]
    pub unalign: u64,
    /// 1: per-iteration columns i_min, i_max, i_p99, i_cv% (CUDA events around each timed iteration, from qbench's separate event pass)
    #[arg(short = 'I', long = "per_iter_timing", default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=1))]
    pub per_iter_timing: u8,
    /// Leave this many first iterations out of -I's figures
    #[arg(short = 'K', long = "per_iter_skip", default_value_t = 0)]
    pub per_iter_skip: u32,
    /// nccl-tests' parallel communicator setup across threads: accepted, changes nothing qbench measures
    #[arg(short = 'p', long = "parallel_init", default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=1))]
    pub parallel_init: u8,
    /// nccl-tests' launch on the NULL stream: only 0 (qbench launches on each GPU's own stream)
    #[arg(short = 'y', long = "stream_null", default_value_t = 0)]
    pub stream_null: u8,
    /// nccl-tests' own device-side kernels (NCCL's device API): only 0, NCCL's collectives
    #[arg(short = 'D', long = "device_implementation", default_value_t = 0)]
    pub device_implementation: u32,
    /// CTAs of -D's device kernels: accepted, changes nothing without -D
    #[arg(short = 'V', long = "device_cta_count", default_value_t = 16)]
    pub device_cta_count: u32,
    #[command(flatten)]
    pub out: OutputArgs,
    #[arg(long, default_value = "nccl", value_parser = transport_arg, help = transport_help())]
    pub transport: TransportKind,
    /// Seed of the input data
    #[arg(long, default_value_t = crate::pattern::DEFAULT_SEED)]
    pub seed: u64,
}

impl CollArgs {
    pub fn plan(&self, kind: Kind) -> Result<CollectivePlan> {
        let options = self.options()?;
        self.unhonoured()?;
        CollectivePlan::new(kind, self.transport, options, CollectivePlan::fault_asked(kind)?)
    }

    /// The plan's options, as nccl-tests' letters give them.
    fn options(&self) -> Result<Options> {
        if self.stepfactor == 0 {
            return Err(Error::Usage("step factor (-f) must be 1 (off) or more".into()));
        }
        Ok(Options {
            nthreads: self.nthreads as usize,
            ngpus: self.ngpus as usize,
            minbytes: self.minbytes,
            maxbytes: self.maxbytes,
            step: if self.stepfactor > 1 { Growth::Factor(self.stepfactor) } else { Growth::Bytes(self.stepbytes) },
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
            blocking: self.blocking,
            report_cputime: self.report_cputime == 1,
            report_timestamps: self.report_timestamps == 1,
            unalign: self.unalign,
            per_iter_timing: self.per_iter_timing == 1,
            per_iter_skip: self.per_iter_skip,
            memory_report: self.memory == 1,
            register: Registration::from_code(self.local_register).unwrap_or_default(),
            cta_policy: self.cta_policy.map(i32::from),
        })
    }

    /// nccl-tests' options qbench takes but cannot honour at the value given:
    /// one line naming what nccl-tests would do.
    fn unhonoured(&self) -> Result<()> {
        if self.stream_null != 0 {
            return Err(Error::Usage(format!(
                "-y {}: nccl-tests would launch on the NULL stream; qbench launches on each GPU's own stream and times it with events there (use -y 0)",
                self.stream_null
            )));
        }
        if self.device_implementation != 0 {
            return Err(Error::Usage(format!(
                "-D {}: nccl-tests would run its own device kernels over NCCL's device API (with -R 2); qbench runs NCCL's collectives only (use -D 0)",
                self.device_implementation
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use clap::Parser;

    /// The plan's default options are the subcommands' own.
    #[test]
    fn no_option_given_is_the_default_options() {
        let Command::Collective(c) = Cli::try_parse_from(["qbench", "allreduce"]).unwrap().command else {
            panic!("not a collective")
        };
        assert_eq!(c.args.options().unwrap(), Options::default());
    }
}
