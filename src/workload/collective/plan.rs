//! What a collective run sweeps, resolved and checked before any device
//! is touched.

use super::{Kind, OpUse};
use crate::dtype::RedOp;
use crate::error::{Error, Result};
use crate::fault::{self, Fault};
use crate::record::collective::{Config, Register, TransportKind};
use crate::record::split::Split;
use crate::units::sweep;

/// `qbench <collective>`.
#[derive(Debug, Clone)]
pub struct CollectivePlan {
    pub kind: Kind,
    pub transport: TransportKind,
    /// The options as resolved; `nranks` counts this process's ranks until
    /// the world is known.
    pub config: Config,
    pub fault: Option<Fault>,
    /// `NCCL_TESTS_MIN_BW`: fail when the average busbw is below 90% of it.
    pub min_bw: Option<f64>,
    /// `NCCL_TESTS_SPLIT`: one communicator per colour of processes.
    pub split: Option<Split>,
}

impl CollectivePlan {
    /// The plan of `config`, checked; `fault` is what it injects (the
    /// command line's `QBENCH_CORRUPT`, see [`CollectivePlan::fault_asked`]).
    pub fn new(kind: Kind, transport: TransportKind, config: Config, fault: Option<Fault>) -> Result<CollectivePlan> {
        if config.root < -1 {
            return Err(Error::Usage(format!(
                "invalid root {} (-r): use a rank number, or -1 for every rank",
                config.root
            )));
        }
        sweep(config.minbytes, config.maxbytes, config.step)?;
        if config.cudagraph > 0 && transport == TransportKind::Cpu {
            return Err(Error::Usage("CUDA graphs (-G) need a GPU transport; drop -G for --transport cpu".into()));
        }
        if config.cudagraph > 0 && config.ngpus > 1 {
            return Err(Error::Usage(
                "CUDA graphs (-G) capture one GPU per thread: use -t N -g 1, or one process per GPU under mpirun"
                    .into(),
            ));
        }
        nccl_tests_modes(&config, transport)?;
        let local = config.nthreads * config.ngpus;
        if transport == TransportKind::Cpu && local > crate::transport::cpu::MAX_RANKS {
            return Err(Error::Usage(format!(
                "-t {} × -g {} = {local} host ranks in one process: the cpu transport runs a thread per rank, at most {}; use more processes (mpirun) for more ranks",
                config.nthreads,
                config.ngpus,
                crate::transport::cpu::MAX_RANKS
            )));
        }
        Ok(CollectivePlan { kind, transport, config, fault, min_bw: min_bandwidth()?, split: Split::from_env()? })
    }

    /// The fault `QBENCH_CORRUPT` asks of collective `kind`, if it can apply it.
    pub fn fault_asked(kind: Kind) -> Result<Option<Fault>> {
        Fault::requested(kind.spec().command(), &[fault::Kind::Element])
    }

    /// The ops the sweep walks: None for collectives that ignore `-o`.
    pub fn ops(&self) -> Vec<Option<RedOp>> {
        match self.kind.spec().op_use() {
            OpUse::Reduces | OpUse::Labels => self.config.ops.iter().copied().map(Some).collect(),
            OpUse::Ignores => vec![None],
        }
    }
}

/// nccl-tests' modes that do not go together, or that a transport cannot
/// honour: one line each, naming what nccl-tests would have done.
fn nccl_tests_modes(c: &Config, transport: TransportKind) -> Result<()> {
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
            (c.register != Register::None, "-R (registration with NCCL communicators)"),
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
    v.trim().parse().map(Some).map_err(|_| Error::Usage(format!("NCCL_TESTS_MIN_BW={v}: expected a bandwidth in GB/s")))
}
