//! The sweep loop shared by every collective: sizes × types × ops × roots,
//! each cell filled, warmed up, timed, validated and recorded, the records
//! streamed to the table as they come and written as JSON/CSV at the end.

pub mod record;
pub mod stats;

use crate::cli::{Average, CollArgs, TransportKind};
use crate::dtype::{DataType, RedOp};
use crate::error::{Error, Result};
use crate::libs::{self, Library};
use crate::pattern::Pattern;
use crate::report;
use crate::transport::RankInfo;
use crate::transport::{Op, Transport};
use crate::units::sweep;
use crate::workload::collective::{Collective, Kind, OpUse};
use crate::world::{self, World};
use record::{Cell, CollectiveRun, Config, MinBandwidth, RunHeader, SizeRecord};
use std::io::Write;

/// Runs one collective subcommand from parsing to exit status, in this
/// process alone or as one process of an MPI job.
pub fn run_collective(kind: Kind, args: &CollArgs) -> Result<()> {
    let plan = Plan::new(kind, args)?;
    if args.transport == TransportKind::Nccl {
        // This may re-execute the process, so it comes before MPI starts.
        libs::require(&[Library::Driver, Library::Nccl, Library::Nvrtc])?;
    }
    let world = world::detect()?;
    let result = (|| {
        let mut transport = open_transport(args, world.as_ref())?;
        let mut bench = Bench::new(plan, args, transport.as_mut(), world.as_ref())?;
        bench.run()?;
        bench.finish()
    })();
    world::conclude(world.as_ref(), result)
}

fn open_transport<'w>(args: &CollArgs, world: &'w dyn World) -> Result<Box<dyn Transport + 'w>> {
    let (t, g) = (args.nthreads as usize, args.ngpus as usize);
    let n = t * g;
    Ok(match args.transport {
        TransportKind::Cpu if world.size() == 1 => Box::new(crate::transport::cpu::Cpu::new(n)?),
        TransportKind::Cpu => {
            if n != 1 {
                return Err(Error::Usage(
                    "with --transport cpu under MPI each process is one rank: use -t 1 -g 1 and more processes".into(),
                ));
            }
            #[cfg(feature = "mpi")]
            if let Some(mpi) = world.mpi() {
                return Ok(Box::new(crate::transport::cpu_mpi::CpuMpi::new(mpi)));
            }
            return Err(Error::Runtime("internal: a multi-process world without MPI".into()));
        }
        TransportKind::Nccl => Box::new(crate::transport::nccl::Nccl::new(t, g, args.timeout, world)?),
    })
}

/// What to run, resolved from the command line.
struct Plan {
    spec: &'static dyn Collective,
    config: Config,
    /// The ops the loop walks: None for collectives that ignore `-o`.
    ops: Vec<Option<RedOp>>,
    corrupt: Option<(usize, u64)>,
    min_bw: Option<f64>,
}

impl Plan {
    fn new(kind: Kind, args: &CollArgs) -> Result<Plan> {
        let spec = kind.spec();
        let datatypes = args.dtypes()?;
        let parsed_ops = args.ops()?;
        if args.root < -1 {
            return Err(Error::Usage(format!(
                "invalid root {} (-r): use a rank number, or -1 for every rank",
                args.root
            )));
        }
        if args.stepfactor == 0 {
            return Err(Error::Usage("step factor (-f) must be 1 (off) or more".into()));
        }
        sweep(args.minbytes, args.maxbytes, args.step())?;
        if args.cudagraph > 0 && args.transport == TransportKind::Cpu {
            return Err(Error::Usage("CUDA graphs (-G) need a GPU transport; drop -G for --transport cpu".into()));
        }
        if args.cudagraph > 0 && args.ngpus > 1 {
            return Err(Error::Usage(
                "CUDA graphs (-G) capture one GPU per thread: use -t N -g 1, or one process per GPU under mpirun"
                    .into(),
            ));
        }
        let ops = match spec.op_use() {
            OpUse::Reduces | OpUse::Labels => parsed_ops.iter().copied().map(Some).collect(),
            OpUse::Ignores => vec![None],
        };
        let config = Config {
            nranks: (args.nthreads * args.ngpus) as usize,
            nthreads: args.nthreads as usize,
            ngpus: args.ngpus as usize,
            minbytes: args.minbytes,
            maxbytes: args.maxbytes,
            step: args.step(),
            warmup_iters: args.warmup_iters,
            iters: args.iters,
            agg_iters: args.agg_iters,
            run_cycles: args.run_cycles,
            check: args.check,
            cudagraph: args.cudagraph,
            average: args.average(),
            timeout_s: args.timeout,
            datatypes,
            ops: parsed_ops,
            root: args.root,
            seed: args.seed,
        };
        Ok(Plan { spec, config, ops, corrupt: corrupt_hook()?, min_bw: min_bandwidth()? })
    }
}

/// `QBENCH_CORRUPT=RANK[:INDEX]`: after each validation operation, flip the
/// bits of output element INDEX (default 0) of RANK, to prove that checking
/// catches a wrong element.
fn corrupt_hook() -> Result<Option<(usize, u64)>> {
    let Ok(v) = std::env::var("QBENCH_CORRUPT") else { return Ok(None) };
    let bad = || Error::Usage(format!("QBENCH_CORRUPT={v}: expected RANK or RANK:ELEMENT"));
    let (r, i) = v.split_once(':').unwrap_or((&v, "0"));
    Ok(Some((r.trim().parse().map_err(|_| bad())?, i.trim().parse().map_err(|_| bad())?)))
}

/// `NCCL_TESTS_MIN_BW`: fail the run when the average busbw is below 90% of it.
fn min_bandwidth() -> Result<Option<f64>> {
    let Ok(v) = std::env::var("NCCL_TESTS_MIN_BW") else { return Ok(None) };
    v.trim().parse().map(Some).map_err(|_| Error::Usage(format!("NCCL_TESTS_MIN_BW={v}: expected a bandwidth in GB/s")))
}

struct Bench<'a> {
    plan: Plan,
    transport: &'a mut dyn Transport,
    world: &'a dyn World,
    run: CollectiveRun,
    sizes: Vec<u64>,
    json_path: Option<std::path::PathBuf>,
    json_stdout: bool,
    csv_path: Option<std::path::PathBuf>,
    busbw_sum: f64,
    busbw_cells: u64,
}

impl<'a> Bench<'a> {
    fn new(plan: Plan, args: &CollArgs, transport: &'a mut dyn Transport, world: &'a dyn World) -> Result<Bench<'a>> {
        let n = transport.nranks();
        if let Some((rank, _)) = plan.corrupt
            && rank >= n
        {
            return Err(Error::Usage(format!("QBENCH_CORRUPT names rank {rank} but the run has {n} ranks")));
        }
        if plan.config.root >= n as i64 {
            return Err(Error::Usage(format!("invalid root {} (-r): the run has {n} ranks", plan.config.root)));
        }
        let mut min = plan.config.minbytes;
        let mut max = plan.config.maxbytes;
        let limit = world.min_u64(transport.buffer_limit());
        let reduced = (max > limit).then(|| {
            max = limit;
            min = min.min(max);
            max
        });
        let sizes = sweep(min, max, plan.config.step)?;
        transport.allocate(max)?;
        let run = CollectiveRun {
            header: RunHeader::start(record::SCHEMA),
            collective: plan.spec.kind(),
            program: plan.spec.kind().program(),
            transport: args.transport,
            config: Config { nranks: n, ..plan.config.clone() },
            library: transport.library().cloned(),
            devices: all_ranks(world, transport.ranks())?,
            max_bytes_reduced_to: reduced,
            results: Vec::new(),
            out_of_bounds: 0,
            wrong_elements: 0,
            avg_busbw_gbps: 0.0,
            min_bandwidth: None,
        };
        Ok(Bench {
            plan,
            transport,
            world,
            run,
            sizes,
            json_path: args.out.output_file.clone(),
            json_stdout: args.out.json,
            csv_path: args.out.csv.clone(),
            busbw_sum: 0.0,
            busbw_cells: 0,
        })
    }

    fn print(&self, text: &str) {
        if !self.json_stdout && self.world.rank() == 0 {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(text.as_bytes());
            let _ = out.flush();
        }
    }

    fn run(&mut self) -> Result<()> {
        self.print(&report::table::header(&self.run));
        let n = self.transport.nranks();
        let roots: Vec<i64> = if !self.plan.spec.rooted() {
            vec![-1]
        } else if self.plan.config.root == -1 {
            (0..n as i64).collect()
        } else {
            vec![self.plan.config.root]
        };
        for dtype in self.plan.config.datatypes.clone() {
            for op in self.plan.ops.clone() {
                for &root in &roots {
                    self.warm_up(dtype, op, root)?;
                    let mut cycle = 0;
                    // -N 0 repeats until interrupted.
                    while self.plan.config.run_cycles == 0 || cycle < self.plan.config.run_cycles {
                        for size in self.sizes.clone() {
                            let mut base = self.op(size, dtype, op, root);
                            let counts = base.counts;
                            let out_of_place = self.cell(&base)?;
                            base.in_place = true;
                            let in_place = self.cell(&base)?;
                            let rec = SizeRecord {
                                cycle,
                                size: counts.bytes(dtype),
                                count: counts.param,
                                dtype,
                                redop: op,
                                root,
                                out_of_place,
                                in_place,
                            };
                            self.print(&report::table::row(&rec));
                            self.run.results.push(rec);
                        }
                        cycle += 1;
                    }
                }
            }
        }
        Ok(())
    }

    /// The out-of-place operation of one table row.
    fn op(&self, size: u64, dtype: DataType, op: Option<RedOp>, root: i64) -> Op {
        let n = self.transport.nranks();
        let counts = self.plan.spec.counts(size / dtype.size() as u64, dtype, n as u64);
        let redop = op.unwrap_or(RedOp::Sum);
        let reduces = self.plan.spec.op_use() == OpUse::Reduces;
        Op {
            spec: self.plan.spec,
            dtype,
            redop,
            root: root.max(0) as usize,
            counts,
            in_place: false,
            agg: self.plan.config.agg_iters,
            pattern: Pattern::new(self.plan.config.seed, dtype, reduces.then_some(redop), n),
        }
    }

    /// nccl-tests' warm-up before a sweep: `-w` operations at every size, so
    /// that the first timed sizes do not pay for clocks ramping up or the
    /// library's lazy setup.
    fn warm_up(&mut self, dtype: DataType, op: Option<RedOp>, root: i64) -> Result<()> {
        for size in self.sizes.clone() {
            let o = self.op(size, dtype, op, root);
            for _ in 0..self.plan.config.warmup_iters {
                self.transport.run_once(&o)?;
            }
        }
        Ok(())
    }

    fn cell(&mut self, op: &Op) -> Result<Cell> {
        let cfg = &self.plan.config;
        let n = self.transport.nranks();
        self.transport.fill(op)?;
        let timing = self.transport.time(op, cfg.warmup_iters, cfg.iters, cfg.cudagraph)?;
        let seconds = reduce_time(&world::gather_f64(self.world, &timing.per_thread), cfg.average);
        let iterations = self.world.max_f64(&timing.iterations);
        let bytes = op.counts.bytes(op.dtype) as f64;
        let algbw = if seconds > 0.0 { bytes / 1e9 / seconds } else { 0.0 };
        let busbw = algbw * self.plan.spec.bus_factor(n as u64);
        let checked = cfg.check > 0 && (!op.in_place || self.plan.spec.checks_in_place());
        let wrong = if checked { Some(self.validate(op)?) } else { None };
        if let Some(w) = wrong.filter(|&w| w > 0) {
            self.run.out_of_bounds += 1;
            self.run.wrong_elements += w;
        }
        self.busbw_sum += busbw;
        self.busbw_cells += 1;
        Ok(Cell {
            time_us: seconds * 1e6,
            algbw_gbps: algbw,
            busbw_gbps: busbw,
            wrong,
            iterations: stats::iter_stats(&iterations),
        })
    }

    /// nccl-tests' check loop: fill, run once, compare every element; up to
    /// `-c` times, stopping at the first failure.
    fn validate(&mut self, op: &Op) -> Result<u64> {
        let mut wrong = 0;
        for _ in 0..self.plan.config.check {
            self.transport.fill(op)?;
            self.transport.run_once(op)?;
            if let Some((rank, index)) = self.plan.corrupt {
                self.transport.corrupt(op, rank, index)?;
            }
            wrong = self.world.sum_u64(self.transport.count_wrong(op)?);
            if wrong > 0 {
                break;
            }
        }
        Ok(wrong)
    }

    fn finish(mut self) -> Result<()> {
        let avg = if self.busbw_cells > 0 { self.busbw_sum / self.busbw_cells as f64 } else { 0.0 };
        self.run.avg_busbw_gbps = avg;
        self.run.min_bandwidth = self.plan.min_bw.map(|m| MinBandwidth { required_gbps: m, ok: avg >= 0.9 * m });
        self.run.header.finish();
        self.print(&report::table::footer(&self.run));
        if self.world.rank() == 0 {
            if let Some(path) = &self.json_path {
                report::json::write(&self.run, path)?;
            }
            if let Some(path) = &self.csv_path {
                report::csv::write(&self.run, path)?;
            }
            if self.json_stdout {
                println!("{}", report::json::to_string(&self.run)?);
            }
        }
        if self.run.wrong_elements > 0 {
            return Err(Error::CheckFailed(format!(
                "{} wrong elements in {} cells: the data the collective delivered is not what was sent",
                self.run.wrong_elements, self.run.out_of_bounds
            )));
        }
        if let Some(m) = &self.run.min_bandwidth
            && !m.ok
        {
            return Err(Error::CheckFailed(format!(
                "average bus bandwidth {:.2} GB/s is below 90% of NCCL_TESTS_MIN_BW={}",
                avg, m.required_gbps
            )));
        }
        Ok(())
    }
}

/// Every process's ranks, in rank order, for the `# Using devices` block.
pub fn all_ranks(world: &dyn World, mine: &[RankInfo]) -> Result<Vec<RankInfo>> {
    let bytes = serde_json::to_vec(mine).map_err(|e| Error::Runtime(format!("cannot encode the device list: {e}")))?;
    let mut all = Vec::new();
    for b in world.all_gather(&bytes) {
        let ranks: Vec<RankInfo> =
            serde_json::from_slice(&b).map_err(|e| Error::Runtime(format!("cannot decode a device list: {e}")))?;
        all.extend(ranks);
    }
    all.sort_by_key(|r| r.rank);
    Ok(all)
}

/// Combines per-thread times as `-a` says.
pub fn reduce_time(per_thread: &[f64], how: Average) -> f64 {
    if per_thread.is_empty() {
        return 0.0;
    }
    match how {
        Average::Rank0 => per_thread[0],
        Average::Mean => per_thread.iter().sum::<f64>() / per_thread.len() as f64,
        Average::Min => per_thread.iter().copied().fold(f64::INFINITY, f64::min),
        Average::Max => per_thread.iter().copied().fold(0.0, f64::max),
    }
}

/// The current UTC time, RFC 3339.
pub fn now() -> String {
    time::OffsetDateTime::now_utc().format(&time::format_description::well_known::Rfc3339).unwrap_or_default()
}
