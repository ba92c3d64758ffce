//! What a collective run sweeps, resolved and checked before any device
//! is touched: the options the command line or a readiness step asks for,
//! and the sweep's sizes, computed once here. The run's record is made
//! from the plan.

use super::{Kind, OpUse};
use crate::dtype::{DataType, RedOp};
use crate::error::{Error, Result};
use crate::fault::{self, Fault};
use crate::record::collective::{Average, Config, Registration, TransportKind};
use crate::record::split::Split;
use crate::units::{Growth, sweep};

/// What a collective run asks for, in nccl-tests' terms, before it is
/// checked: what a subcommand's options say, or what a readiness step
/// says. The default is the subcommand's with no option given.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// -t: threads per process.
    pub nthreads: usize,
    /// -g: GPUs per thread (host ranks per thread for the cpu transport).
    pub ngpus: usize,
    /// -b and -e: the sweep's first and largest size, bytes.
    pub minbytes: u64,
    pub maxbytes: u64,
    /// -f or -i: how the sizes grow.
    pub step: Growth,
    pub warmup_iters: u32,
    pub iters: u32,
    pub agg_iters: u32,
    /// -N: sweeps, 0 until interrupted.
    pub run_cycles: u32,
    /// -c: validation iterations per size, 0 none.
    pub check: u32,
    /// -G: CUDA graph launches, 0 none.
    pub cudagraph: u32,
    pub average: Average,
    /// -T: seconds one operation may take, 0 for ever.
    pub timeout_s: u64,
    pub datatypes: Vec<DataType>,
    pub ops: Vec<RedOp>,
    /// -r: the root, -1 every rank in turn.
    pub root: i64,
    pub seed: u64,
    /// -z, as [`Config::blocking`].
    pub blocking: u8,
    pub report_cputime: bool,
    pub report_timestamps: bool,
    pub unalign: u64,
    pub per_iter_timing: bool,
    pub per_iter_skip: u32,
    pub memory_report: bool,
    pub register: Registration,
    pub cta_policy: Option<i32>,
}

impl Default for Options {
    /// nccl-tests' defaults, as the subcommands take them.
    fn default() -> Options {
        Options {
            nthreads: 1,
            ngpus: 1,
            minbytes: 32 << 20,
            maxbytes: 32 << 20,
            step: Growth::Bytes(1 << 20),
            warmup_iters: 1,
            iters: 20,
            agg_iters: 1,
            run_cycles: 1,
            check: 1,
            cudagraph: 0,
            average: Average::Mean,
            timeout_s: 0,
            datatypes: vec![DataType::Float],
            ops: vec![RedOp::Sum],
            root: 0,
            seed: crate::pattern::DEFAULT_SEED,
            blocking: 0,
            report_cputime: false,
            report_timestamps: false,
            unalign: 0,
            per_iter_timing: false,
            per_iter_skip: 0,
            memory_report: false,
            register: Registration::None,
            cta_policy: None,
        }
    }
}

impl Options {
    /// The ranks this process runs: -t threads of -g GPUs (or host ranks).
    pub fn ranks_per_process(&self) -> usize {
        self.nthreads * self.ngpus
    }

    /// The record's configuration: these options run over `nranks` ranks.
    pub fn config(&self, nranks: usize) -> Config {
        let Options {
            nthreads,
            ngpus,
            minbytes,
            maxbytes,
            step,
            warmup_iters,
            iters,
            agg_iters,
            run_cycles,
            check,
            cudagraph,
            average,
            timeout_s,
            datatypes,
            ops,
            root,
            seed,
            blocking,
            report_cputime,
            report_timestamps,
            unalign,
            per_iter_timing,
            per_iter_skip,
            memory_report,
            register,
            cta_policy,
        } = self.clone();
        Config {
            nranks,
            nthreads,
            ngpus,
            minbytes,
            maxbytes,
            step,
            warmup_iters,
            iters,
            agg_iters,
            run_cycles,
            check,
            cudagraph,
            average,
            timeout_s,
            datatypes,
            ops,
            root,
            seed,
            blocking,
            report_cputime,
            report_timestamps,
            unalign,
            per_iter_timing,
            per_iter_skip,
            memory_report,
            register,
            cta_policy,
        }
    }
}

/// `qbench <collective>`.
#[derive(Debug, Clone)]
pub struct CollectivePlan {
    pub kind: Kind,
    pub transport: TransportKind,
    /// The options, checked.
    pub(super) options: Options,
    /// The sweep's sizes, from -b to -e: [`CollectivePlan::sizes_within`]
    /// cuts them to the buffers a run can allocate.
    sizes: Vec<u64>,
    pub fault: Option<Fault>,
    /// `NCCL_TESTS_MIN_BW`: fail when the average busbw is below 90% of it.
    pub min_bw: Option<f64>,
    /// `NCCL_TESTS_SPLIT`: one communicator per colour of processes.
    pub split: Option<Split>,
}

impl CollectivePlan {
    /// The plan of `options`, checked; `fault` is what it injects (the
    /// command line's `QBENCH_CORRUPT`, see [`CollectivePlan::fault_asked`]).
    pub fn new(kind: Kind, transport: TransportKind, options: Options, fault: Option<Fault>) -> Result<CollectivePlan> {
        let o = &options;
        if o.root < -1 {
            return Err(Error::Usage(format!("invalid root {} (-r): use a rank number, or -1 for every rank", o.root)));
        }
        let sizes = sweep(o.minbytes, o.maxbytes, o.step)?;
        if o.cudagraph > 0 && transport == TransportKind::Cpu {
            return Err(Error::Usage("CUDA graphs (-G) need a GPU transport; drop -G for --transport cpu".into()));
        }
        if o.cudagraph > 0 && o.ngpus > 1 {
            return Err(Error::Usage(
                "CUDA graphs (-G) capture one GPU per thread: use -t N -g 1, or one process per GPU under mpirun"
                    .into(),
            ));
        }
        nccl_tests_modes(o, transport)?;
        let local = o.ranks_per_process();
        if transport == TransportKind::Cpu && local > crate::transport::cpu::MAX_RANKS {
            return Err(Error::Usage(format!(
                "-t {} × -g {} = {local} host ranks in one process: the cpu transport runs a thread per rank, at most {}; use more processes (mpirun) for more ranks",
                o.nthreads,
                o.ngpus,
                crate::transport::cpu::MAX_RANKS
            )));
        }
        let (min_bw, split) = (min_bandwidth()?, Split::from_env()?);
        Ok(CollectivePlan { kind, transport, options, sizes, fault, min_bw, split })
    }

    /// The sweep's sizes for buffers of `max` bytes, as nccl-tests'
    /// "Reducing maxBytes" leaves them: those up to `max`, or `max` alone
    /// where every size is larger.
    pub(super) fn sizes_within(&self, max: u64) -> Vec<u64> {
        let within: Vec<u64> = self.sizes.iter().copied().filter(|&s| s <= max).collect();
        if within.is_empty() { vec![max] } else { within }
    }

    /// The fault `QBENCH_CORRUPT` asks of collective `kind`, if it can apply it.
    pub fn fault_asked(kind: Kind) -> Result<Option<Fault>> {
        Fault::requested(kind.spec().command(), &[fault::Kind::Element])
    }

    /// The ops the sweep walks: None for collectives that ignore `-o`.
    pub fn ops(&self) -> Vec<Option<RedOp>> {
        match self.kind.spec().op_use() {
            OpUse::Reduces | OpUse::Labels => self.options.ops.iter().copied().map(Some).collect(),
            OpUse::Ignores => vec![None],
        }
    }
}

/// nccl-tests' modes that do not go together, or that a transport cannot
/// honour: one line each, naming what nccl-tests would have done.
fn nccl_tests_modes(c: &Options, transport: TransportKind) -> Result<()> {
    let refuse = |why: &str| Err(Error::Usage(why.to_string()));
    if c.cudagraph > 0 && c.blocking > 0 {
        return refuse(
            "-z with -G: a captured graph cannot wait inside itself (nccl-tests fails or turns -z 3 off); use one of them",
        );
    }
    if c.cudagraph > 0 && c.per_iter_timing {
        return refuse("-I with -G: nccl-tests turns per-iteration timing off under CUDA graphs; use one of them");
    }
    if c.per_iter_skip > 0 && !c.per_iter_timing {
        return refuse("-K needs -I 1: it leaves iterations out of the per-iteration figures");
    }
    if c.per_iter_skip >= c.iters {
        return refuse(&format!(
            "-K {} leaves none of the {} iterations (-n): use 0 to {}",
            c.per_iter_skip,
            c.iters,
            c.iters - 1
        ));
    }
    if transport == TransportKind::Cpu {
        let gpu_only = [
            (c.unalign > 0, "-u (misaligned GPU buffers)"),
            (c.register != Registration::None, "-R (registration with NCCL communicators)"),
            (c.memory_report, "-M (GPU memory report)"),
            (c.cta_policy.is_some(), "-x (NCCL's CTA policy)"),
        ];
        if let Some((_, what)) = gpu_only.iter().find(|(asked, _)| *asked) {
            return refuse(&format!(
                "{what} needs --transport nccl: the cpu transport has no GPU buffers or communicators"
            ));
        }
    }
    Ok(())
}

/// `NCCL_TESTS_MIN_BW`, as nccl-tests reads it.
fn min_bandwidth() -> Result<Option<f64>> {
    let Ok(v) = std::env::var("NCCL_TESTS_MIN_BW") else { return Ok(None) };
    match v.trim().parse::<f64>() {
        Ok(gbps) if gbps.is_finite() && gbps >= 0.0 => Ok(Some(gbps)),
        _ => Err(Error::Usage(format!(
            "NCCL_TESTS_MIN_BW={}: expected a bandwidth in GB/s, a number of at least 0",
            crate::input::token(&v)
        ))),
    }
}
