//! The sweep every collective shares: sizes × types × ops × roots, each cell
//! filled, warmed up, timed, validated and recorded, the rows handed to the
//! observer as they come. A plan in, a record out; nothing printed.

use crate::dtype::{DataType, RedOp};
use crate::error::{Error, Result};
use crate::fault::Fault;
use crate::interrupt;
use crate::libs::Library;
use crate::pattern::Pattern;
use crate::record::collective::{
    Cell, CollectiveRun, Group, GroupRow, Groups, KIND, MemoryUse, PerIter, SizeRecord, TransportKind,
};
use crate::record::{Header, Observer, Outcome};
use crate::session::Session;
use crate::stats::Summary;
use crate::transport::{Loop, Op, Timing, Transport};
use crate::workload::Job;
use crate::workload::collective::plan::CollectivePlan;
use crate::workload::collective::{Kind, OpUse, Spec};
use crate::world::split::Joined;
use crate::world::{self, World};

impl Job for CollectivePlan {
    type Record = CollectiveRun;

    fn libraries(&self) -> Vec<Library> {
        match self.transport {
            TransportKind::Nccl => vec![Library::Driver, Library::Nccl, Library::Nvrtc],
            TransportKind::Cpu => Vec::new(),
        }
    }

    fn without_gpus(&self) -> Option<&'static str> {
        Some("--transport cpu runs it on host ranks")
    }

    fn run(&self, session: &Session, obs: &mut dyn Observer<CollectiveRun>) -> Outcome<CollectiveRun> {
        run(self, session, obs)
    }

    fn verdict(&self, record: &CollectiveRun, _rank: usize) -> Result<()> {
        record.verdict()
    }
}

/// Runs one collective plan in this process's part of the session's world.
fn run(plan: &CollectivePlan, session: &Session, obs: &mut dyn Observer<CollectiveRun>) -> Outcome<CollectiveRun> {
    let mut run = CollectiveRun {
        header: Header::start(KIND, plan.fault),
        collective: plan.kind.name().into(),
        program: plan.kind.program(),
        no_op_label: plan.kind.spec().no_op_label().into(),
        transport: plan.transport,
        // The ranks are known once the transport has opened.
        config: plan.options.config(0),
        library: None,
        nccl_env: std::env::vars().filter(|(k, _)| k.starts_with("NCCL_")).map(|(k, v)| format!("{k}={v}")).collect(),
        devices: Vec::new(),
        split: None,
        timing: String::new(),
        max_bytes_reduced_to: None,
        left_out: Vec::new(),
        buffers: None,
        memory: None,
        results: Vec::new(),
        out_of_bounds: 0,
        wrong_elements: 0,
        avg_busbw_gbps: 0.0,
        min_bandwidth: None,
    };
    obs.started(&run);
    let result = (|| {
        session.need(&Job::libraries(plan))?;
        let world = session.world();
        let joined = match &plan.split {
            Some(split) => world::split::join(split, world)?,
            None => None,
        };
        let comm = joined.as_ref().map_or(world, |j| j.world.as_ref());
        let mut transport = open_transport(plan, comm)?;
        let mut bench = Bench::new(plan, transport.as_mut(), world, joined.as_ref(), &mut run)?;
        if let Some(sizes) = bench.rows() {
            obs.planned(&sizes);
        }
        obs.begin(&run);
        let free_before = bench.transport.free_memory()?;
        bench.sweep(&mut run, obs)?;
        if plan.options.memory_report {
            run.memory = bench.memory_use(&free_before)?;
        }
        Ok(())
    })();
    if let (Ok(()), Some(m)) = (&result, plan.min_bw) {
        run.require_bandwidth(m);
    }
    Outcome::new(run, result)
}

fn open_transport<'w>(plan: &CollectivePlan, world: &'w dyn World) -> Result<Box<dyn Transport + 'w>> {
    let (t, g) = (plan.options.nthreads, plan.options.ngpus);
    Ok(match plan.transport {
        TransportKind::Cpu if world.size() == 1 => Box::new(crate::transport::cpu::Cpu::new(t * g)?),
        TransportKind::Cpu => {
            if t * g != 1 {
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
        TransportKind::Nccl => {
            let checks: Vec<&dyn crate::transport::Collective> =
                Kind::ALL.iter().map(|k| k.spec() as &dyn crate::transport::Collective).collect();
            let c = &plan.options;
            let options = crate::transport::nccl::Options {
                timeout_s: c.timeout_s,
                register: c.register,
                cta_policy: c.cta_policy,
                unalign: c.unalign,
            };
            Box::new(crate::transport::nccl::Nccl::new(t, g, options, world, &checks)?)
        }
    })
}

struct Bench<'a> {
    plan: &'a CollectivePlan,
    spec: &'static dyn Spec,
    transport: &'a mut dyn Transport,
    /// The whole job: times, wrong counts and interruptions combine over it.
    world: &'a dyn World,
    /// Under a split, this process's communicator and its colour.
    group: Option<(&'a dyn World, usize)>,
    /// The plan's sizes that the buffers hold.
    sizes: Vec<u64>,
    /// -1 for a collective without a root; else the root asked, or every rank.
    roots: Vec<i64>,
    /// The types and ops to run, in nccl-tests' order: those the transport
    /// can run of the ones asked for.
    runs: Vec<(DataType, Option<RedOp>)>,
}

/// The (type, op) pairs of the plan that every process's transport can
/// run. One it cannot is left out, and said so in the record, when the
/// command line asked for several (`-d all`, `-o all`, as nccl-tests leaves
/// fp8 out of `-d all` where it cannot run it); when it asked for that one
/// alone, the run ends with the reason (exit 3).
fn runs(
    plan: &CollectivePlan,
    transport: &dyn Transport,
    world: &dyn World,
    run: &mut CollectiveRun,
) -> Result<Vec<(DataType, Option<RedOp>)>> {
    let asked: Vec<(DataType, Option<RedOp>)> =
        plan.options.datatypes.iter().flat_map(|&d| plan.ops().into_iter().map(move |o| (d, o))).collect();
    let mut runs = Vec::new();
    let reduces = plan.kind.spec().op_use() == OpUse::Reduces;
    for &(dtype, op) in &asked {
        // The op of a collective that does not reduce reaches no library call.
        let mine = transport.refuses(dtype, op.filter(|_| reduces));
        let everyone = world.min_u64(mine.is_none() as u64) == 1;
        if everyone {
            runs.push((dtype, op));
            continue;
        }
        let why = mine.unwrap_or_else(|| "another process's GPUs or NCCL cannot run it".into());
        let what = match op {
            Some(o) => format!("{} {}", dtype.name(), o.name()),
            None => dtype.name().to_string(),
        };
        if asked.len() == 1 {
            return Err(Error::Missing(format!("{what}: {why}")));
        }
        run.left_out.push(format!("{what}: {why}"));
    }
    if runs.is_empty() {
        return Err(Error::Missing(format!("nothing asked for can run here: {}", run.left_out.join("; "))));
    }
    Ok(runs)
}

impl<'a> Bench<'a> {
    /// Sizes the sweep to the memory of every rank and allocates for it;
    /// fills in what the run's record knows once the transport is open.
    fn new(
        plan: &'a CollectivePlan,
        transport: &'a mut dyn Transport,
        world: &'a dyn World,
        joined: Option<&'a Joined>,
        run: &mut CollectiveRun,
    ) -> Result<Bench<'a>> {
        let (n, o, spec) = (transport.nranks(), &plan.options, plan.kind.spec());
        spec.fits(n)?;
        spec.fits_sizes(n, o.minbytes, o.maxbytes)?;
        if let Some(Fault::Element { rank, .. }) = plan.fault
            && rank >= n
        {
            return Err(Error::Usage(format!("{} names rank {rank} but the run has {n} ranks", crate::fault::VAR)));
        }
        if o.root >= n as i64 {
            return Err(Error::Usage(format!("invalid root {} (-r): the run has {n} ranks", o.root)));
        }
        // nccl-tests' "Reducing maxBytes": the buffers every rank can hold.
        let max = o.maxbytes.min(world.min_u64(transport.buffer_limit()));
        if max < o.maxbytes {
            run.max_bytes_reduced_to = Some(max);
            // Sizes a collective cannot shrink (a traffic matrix's) must still fit.
            spec.fits_sizes(n, max, max).map_err(|_| {
                Error::Usage(format!(
                    "{} needs larger buffers than the {max} bytes a rank this node's memory holds: ask for less",
                    spec.command()
                ))
            })?;
        }
        let sizes = plan.sizes_within(max);
        if let Some(Fault::Element { rank, index }) = plan.fault {
            // What the named rank receives (alltoallv's ranks differ).
            let most = o
                .datatypes
                .iter()
                .map(|&d| spec.received(&spec.counts(max / d.size() as u64, d, n as u64), d, rank, n))
                .max();
            if most.is_none_or(|m| index >= m) {
                return Err(Error::Usage(format!(
                    "{} names element {index} but rank {rank}'s largest output here has {} elements: it would never be flipped",
                    crate::fault::VAR,
                    most.unwrap_or(0)
                )));
            }
        }
        interrupt::step("allocating the buffers");
        transport.allocate(max)?;
        run.config.nranks = n;
        run.buffers = transport.buffer_setup();
        run.library = transport.library().cloned();
        run.timing = transport.timing().into();
        let mut mine = transport.ranks().to_vec();
        if let Some(j) = joined {
            // The transport numbers its ranks within the communicator; the
            // devices list numbers them in the job, with their colour.
            let local = mine.len();
            for (i, r) in mine.iter_mut().enumerate() {
                (r.rank, r.group) = (world.rank() * local + i, j.colour);
            }
            let groups = j.groups.iter().map(|(group, ranks)| Group { group: *group, ranks: ranks.clone() });
            run.split = plan.split.clone().map(|split| Groups { split, groups: groups.collect() });
        }
        run.devices = world::all_ranks(world, &mine)?;
        let group = joined.map(|j| (j.world.as_ref(), j.colour));
        let runs = runs(plan, &*transport, world, run)?;
        let roots = match (spec.rooted(), o.root) {
            (false, _) => vec![-1],
            (true, -1) => (0..n as i64).collect(),
            (true, root) => vec![root],
        };
        Ok(Bench { plan, spec, transport, world, group, sizes, roots, runs })
    }

    /// The size of every row the sweep will measure, in order; None when
    /// it repeats until interrupted (-N 0).
    fn rows(&self) -> Option<Vec<u64>> {
        let cycles = self.plan.options.run_cycles as usize;
        let repeats = self.runs.len() * self.roots.len() * cycles;
        (cycles > 0).then(|| self.sizes.iter().copied().cycle().take(self.sizes.len() * repeats).collect())
    }

    fn sweep(&mut self, run: &mut CollectiveRun, obs: &mut dyn Observer<CollectiveRun>) -> Result<()> {
        let cfg = &self.plan.options;
        for (dtype, op) in self.runs.clone() {
            for root in self.roots.clone() {
                self.warm_up(dtype, op, root)?;
                let mut cycle = 0;
                // -N 0 repeats until interrupted.
                while cfg.run_cycles == 0 || cycle < cfg.run_cycles {
                    for &size in &self.sizes.clone() {
                        interrupt::step(format!(
                            "{} {size} B {} {}{}",
                            self.spec.name(),
                            dtype.name(),
                            op.map_or("none", |o| o.name()),
                            if root >= 0 { format!(" root {root}") } else { String::new() }
                        ));
                        let mut base = self.op(size, dtype, op, root);
                        let counts = base.counts;
                        let (out_of_place, group_out) = self.cell(&base)?;
                        base.in_place = true;
                        let (in_place, group_in) = self.cell(&base)?;
                        let timestamp = cfg.report_timestamps.then(crate::host::local_time);
                        let groups = self.group_rows(counts.param, group_out, group_in)?;
                        run.push(SizeRecord {
                            cycle,
                            size: counts.bytes(dtype),
                            count: counts.param,
                            dtype,
                            redop: op,
                            root,
                            out_of_place,
                            in_place,
                            timestamp,
                            groups,
                        });
                        obs.part(run, run.results.last().expect("pushed"));
                    }
                    cycle += 1;
                }
            }
        }
        Ok(())
    }

    /// The out-of-place operation of one table row.
    fn op(&self, size: u64, dtype: DataType, op: Option<RedOp>, root: i64) -> Op {
        let n = self.transport.nranks();
        let counts = self.spec.counts(size / dtype.size() as u64, dtype, n as u64);
        let redop = op.unwrap_or(RedOp::Sum);
        let reduces = self.spec.op_use() == OpUse::Reduces;
        Op {
            collective: self.plan.kind.spec(),
            dtype,
            redop,
            root: root.max(0) as usize,
            counts,
            in_place: false,
            agg: self.plan.options.agg_iters,
            pattern: Pattern::new(self.plan.options.seed, dtype, reduces.then_some(redop), n),
        }
    }

    /// nccl-tests' warm-up before a sweep: `-w` operations at every size, so
    /// that the first timed sizes do not pay for clocks ramping up or the
    /// library's lazy setup.
    fn warm_up(&mut self, dtype: DataType, op: Option<RedOp>, root: i64) -> Result<()> {
        interrupt::step(format!("{} warm-up", self.spec.name()));
        for &size in &self.sizes.clone() {
            let o = self.op(size, dtype, op, root);
            for _ in 0..self.plan.options.warmup_iters {
                // Untimed: the processes may agree before every operation.
                world::check_interrupt(self.world)?;
                self.transport.run_once(&o)?;
            }
        }
        Ok(())
    }

    /// One cell over the job, and under a split the same cell over this
    /// process's communicator.
    fn cell(&mut self, op: &Op) -> Result<(Cell, Option<Cell>)> {
        world::check_interrupt(self.world)?;
        let cfg = &self.plan.options;
        self.transport.fill(op)?;
        let l = Loop { warmup: cfg.warmup_iters, iters: cfg.iters, graph: cfg.cudagraph, blocking: cfg.blocking };
        let timing = self.transport.time(op, &l, self.world)?;
        let checked = cfg.check > 0 && (!op.in_place || self.spec.checks_in_place());
        let wrong = if checked { Some(self.validate(op)?) } else { None };
        let job = self.combine(op, self.world, &timing, wrong.map(|(job, _)| job));
        let group = self.group.map(|(g, _)| self.combine(op, g, &timing, wrong.map(|(_, group)| group)));
        Ok((job, group))
    }

    /// A cell from this process's timing combined over the processes of `over`.
    fn combine(&self, op: &Op, over: &dyn World, timing: &Timing, wrong: Option<u64>) -> Cell {
        let cfg = &self.plan.options;
        let seconds = cfg.average.reduce(&world::gather_f64(over, &timing.per_thread));
        let cpu_seconds = cfg.average.reduce(&world::gather_f64(over, &timing.cpu_per_thread));
        let iterations = over.max_f64(&timing.iterations);
        let bytes = op.counts.bytes(op.dtype) as f64;
        let n = self.transport.nranks() as u64;
        let algbw = if seconds > 0.0 { bytes * self.spec.alg_factor(n) / 1e9 / seconds } else { 0.0 };
        let micros: Vec<f64> = iterations.iter().map(|t| t * 1e6).collect();
        Cell {
            time_us: seconds * 1e6,
            algbw_gbps: algbw,
            busbw_gbps: algbw * self.spec.bus_factor(self.transport.nranks() as u64),
            wrong,
            iterations: Summary::of(&micros),
            cpu_time_us: cfg.report_cputime.then_some(cpu_seconds * 1e6),
            per_iter: cfg.per_iter_timing.then(|| self.per_iter(over, timing, &micros)).flatten(),
        }
    }

    /// -I's figures of the job's iterations, with each process's own series
    /// when there are several (gathered from every process of `over`).
    fn per_iter(&self, over: &dyn World, timing: &Timing, micros: &[f64]) -> Option<PerIter> {
        let mut p = PerIter::of(micros, self.plan.options.per_iter_skip)?;
        if over.size() > 1 {
            let all = world::gather_f64(over, &timing.iterations);
            let n = timing.iterations.len().max(1);
            p.per_process_times_us = all.chunks(n).map(|c| c.iter().map(|t| t * 1e6).collect()).collect();
        }
        Some(p)
    }

    /// nccl-tests' -M: the setup's memory and the sweep's (free memory
    /// before it against after it), the most on any GPU of the job.
    fn memory_use(&self, free_before: &[i64]) -> Result<Option<MemoryUse>> {
        let Some(setup) = self.transport.setup_memory() else { return Ok(None) };
        let after = self.transport.free_memory()?;
        let collective = free_before.iter().zip(&after).map(|(b, a)| b - a).max().unwrap_or(0);
        let most = |v: i64| self.world.max_f64(&[v as f64])[0] as i64;
        Ok(Some(MemoryUse {
            initialization_bytes: most(setup.communicators),
            user_allocated_bytes: most(setup.buffers),
            collective_bytes: most(collective),
        }))
    }

    /// Under a split, every communicator's row of this size, in colour
    /// order, each as the first process of its colour measured it.
    fn group_rows(&self, count: u64, out_of_place: Option<Cell>, in_place: Option<Cell>) -> Result<Vec<GroupRow>> {
        let (Some((group, colour)), Some(out_of_place), Some(in_place)) = (self.group, out_of_place, in_place) else {
            return Ok(Vec::new());
        };
        let mine = GroupRow { group: colour, count, out_of_place, in_place };
        let first = group.rank() == 0;
        let bytes =
            if first { serde_json::to_vec(&mine).map_err(|e| Error::Runtime(e.to_string()))? } else { Vec::new() };
        let mut rows = Vec::new();
        for b in self.world.all_gather(&bytes).iter().filter(|b| !b.is_empty()) {
            rows.push(serde_json::from_slice::<GroupRow>(b).map_err(|e| Error::Runtime(e.to_string()))?);
        }
        rows.sort_by_key(|r| r.group);
        Ok(rows)
    }

    /// nccl-tests' check loop: fill, run once, compare every element; up to
    /// `-c` times, stopping at the first failure.
    /// Returns the wrong elements over the job and over this process's
    /// communicator (the same without a split).
    fn validate(&mut self, op: &Op) -> Result<(u64, u64)> {
        let mut wrong = (0, 0);
        for _ in 0..self.plan.options.check {
            self.transport.fill(op)?;
            self.transport.run_once(op)?;
            if let Some(Fault::Element { rank, index }) = self.plan.fault {
                self.transport.corrupt(op, rank, index)?;
            }
            let here = self.transport.count_wrong(op)?;
            let job = self.world.sum_u64(here);
            wrong = (job, self.group.map_or(job, |(g, _)| g.sum_u64(here)));
            if job > 0 {
                break;
            }
        }
        Ok(wrong)
    }
}
