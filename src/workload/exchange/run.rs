//! The exchange: for each register size, on GPUs and/or host memory, the
//! references (a chunk copy, the host link, NCCL's sendrecv), every gate
//! class timed and checked (classes.rs), the circuits run for real under
//! each schedule and over each wire (circuits.rs), and, from the circuits
//! measured, whether spreading the register pays (decision.rs). Records in, nothing
//! printed: the observer hears of each register as it is measured.

use super::circuits;
use super::classes::{self, Probe};
use super::decision;
use super::forecast;
use super::model::Machine;
use super::plan::{ExchangePlan, Timed, gpu_libraries};
use super::projection::Table;
use crate::error::{Error, Result};
use crate::fault::Fault;
use crate::interrupt;
use crate::libs::Library;
use crate::record::exchange::{Dispatch, ExchangeRun, KIND, References, RegisterRun, Unavailable};
use crate::record::{Header, Observer, Outcome};
use crate::session::Session;
use crate::statevec::circuit::Circuit;
use crate::statevec::layout::{GlobalOp, Layout, Precision};
use crate::statevec::schedule::Schedule;
use crate::statevec::state::ProductState;
use crate::statevec::step::Class;
use crate::stats::Summary;
use crate::transport::amplitudes::gpu::GpuRegister;
use crate::transport::amplitudes::host_memory::{HostRegister, does_not_fit};
use crate::transport::amplitudes::{Memory, Register, Wire};
use crate::workload::Job;
use crate::world::World;

/// Repeats `op` `warmup` + `iters` times: this process's timed samples.
pub(super) fn sample(warmup: u32, iters: u32, mut op: impl FnMut() -> Result<f64>) -> Result<Vec<f64>> {
    let mut v = Vec::with_capacity(iters as usize);
    for i in 0..warmup + iters {
        interrupt::check()?;
        let s = op()?;
        if i >= warmup {
            v.push(s);
        }
    }
    Ok(v)
}

/// Samples every process took of the same operation, summarised as the
/// slowest process's, sample by sample (one reduction for all of them).
fn slowest(world: &dyn World, samples: &[f64]) -> Summary {
    Summary::of(&world.max_f64(samples))
}

/// [`sample`] of `op` on `reg`, summarised as the slowest process's.
pub(super) fn sample_slowest(
    reg: &mut dyn Register,
    warmup: u32,
    iters: u32,
    mut op: impl FnMut(&mut dyn Register) -> Result<f64>,
) -> Result<Summary> {
    let v = sample(warmup, iters, || op(&mut *reg))?;
    Ok(slowest(reg.world(), &v))
}

/// What every register of the run is measured with.
struct Settings<'a> {
    ops: &'a [GlobalOp],
    wires: &'a [Wire],
    iters: u32,
    warmup: u32,
    fault: Option<Fault>,
    circuits: &'a [Circuit],
    schedules: &'a [Schedule],
    rounds: u32,
    timed: Timed,
}

/// Thread counts whose step dispatch a host register measures.
const DISPATCH_RANKS: [usize; 5] = [1, 2, 4, 8, 16];

/// What starting an empty step on k threads of this process costs, as a
/// host register starts each step (threads started and joined; the
/// slowest process's), for k up to four threads a core.
fn dispatch(world: &dyn World) -> Vec<Dispatch> {
    let cores = crate::host::cores();
    DISPATCH_RANKS
        .iter()
        .filter(|&&k| k <= 4 * cores)
        .map(|&k| {
            let times: Vec<f64> = (0..64)
                .map(|_| {
                    let t0 = std::time::Instant::now();
                    // Past the cores on purpose: `each`, which warns of nothing.
                    crate::threads::each(vec![(); k], |_, ()| ());
                    t0.elapsed().as_secs_f64()
                })
                .collect();
            Dispatch { ranks: k, seconds: slowest(world, &times).median }
        })
        .collect()
}

/// The references: what the hardware under this register can do.
fn references(reg: &mut dyn Register, memory: Memory, s: &Settings) -> Result<(References, f64)> {
    let chunk = reg.layout().chunk_bytes();
    let copy = sample_slowest(reg, s.warmup, s.iters, |r| r.local_copy())?;
    let copy_bytes = reg.copy_bytes();
    let link_bytes = chunk.min(1 << 30);
    // A check step's register judges no host link.
    let link = match s.timed == Timed::Every && reg.host_link(link_bytes)?.is_some() {
        true => Some(sample_slowest(reg, s.warmup, s.iters, |r| Ok(r.host_link(link_bytes)?.unwrap_or(0.0)))?),
        false => None,
    };
    let sendrecv = match reg.nccl_sendrecv(chunk)? {
        Some(_) => Some(sample_slowest(reg, s.warmup, s.iters, |r| Ok(r.nccl_sendrecv(chunk)?.unwrap_or(0.0)))?),
        None => None,
    };
    let refs = References {
        local_copy_gbps: 2.0 * copy_bytes as f64 / copy.median / 1e9,
        local_copy_bytes: (copy_bytes != chunk).then_some(copy_bytes),
        host_link_gbps: link.map(|t| link_bytes as f64 / t.median / 1e9),
        host_link_bytes: link.map(|_| link_bytes),
        nccl_sendrecv_gbps: sendrecv.map(|t| chunk as f64 / t.median / 1e9),
        step_dispatch: if memory == Memory::Host { dispatch(reg.world()) } else { Vec::new() },
    };
    // A whole chunk's copy, where only part of one was copied.
    Ok((refs, copy.median * chunk as f64 / copy_bytes as f64))
}

/// Everything measured on one register.
fn measure(reg: &mut dyn Register, memory: Memory, s: &Settings) -> Result<RegisterRun> {
    let layout = *reg.layout();
    let n = layout.qubits;
    interrupt::step(format!("{n} qubits in {} memory: references", memory.name()));
    reg.init(&ProductState::new(n))?;
    let (references, copy_s) = references(reg, memory, s)?;
    let mut classes = Vec::new();
    let timing = (s.warmup, s.iters);
    let locals = classes::local(&layout).into_iter().filter(|p| match s.timed {
        Timed::Every => true,
        Timed::LocalH => p.step.class() == Class::H,
        Timed::Global => false,
    });
    for p in locals {
        classes.push(classes::time(reg, &p, None, timing, None, copy_s)?);
    }
    let globals: Vec<Probe> = match s.timed {
        Timed::LocalH => Vec::new(),
        Timed::Every | Timed::Global => classes::global(&layout, s.ops),
    };
    let mut unavailable = Vec::new();
    let mut wires = Vec::new();
    for &wire in s.wires.iter().filter(|_| layout.ranks() > 1) {
        if let Some(reason) = reg.unavailable(wire) {
            unavailable.push(Unavailable { transport: wire.name().into(), reason });
            continue;
        }
        wires.push(wire);
        for p in &globals {
            classes.push(classes::time(reg, p, Some(wire), timing, s.fault, copy_s)?);
        }
    }
    let table = Table { classes: &classes, layout };
    let mut runs = Vec::new();
    // On one rank too each schedule runs: the swap schedule relabels SWAP
    // gates there instead of moving amplitudes.
    for c in s.circuits {
        for &schedule in s.schedules {
            if layout.ranks() == 1 {
                runs.push(circuits::run(reg, c, Some(schedule), None, s.rounds, None, table)?);
                continue;
            }
            for &wire in &wires {
                runs.push(circuits::run(reg, c, Some(schedule), Some(wire), s.rounds, s.fault, table)?);
            }
        }
    }
    Ok(RegisterRun {
        qubits: n,
        local_qubits: layout.local_qubits(),
        ranks: layout.ranks(),
        precision: layout.precision,
        memory: memory.name().into(),
        chunk_bytes: layout.chunk_bytes(),
        references,
        local_gates: Vec::new(),
        global_gates: Vec::new(),
        checks: Vec::new(),
        unavailable,
        classes,
        circuits: runs,
    })
}

impl Job for ExchangePlan {
    type Record = ExchangeRun;

    /// None for --plan, which measures nothing.
    fn libraries(&self) -> Vec<Library> {
        match self.forecast {
            Some(_) => Vec::new(),
            None => gpu_libraries(&self.wires_on(Memory::Gpu)),
        }
    }

    fn without_gpus(&self) -> Option<&'static str> {
        Some("--transport cpu exchanges registers in host memory, and --plan projects GPUs from a profile")
    }

    fn run(&self, session: &Session, obs: &mut dyn Observer<ExchangeRun>) -> Outcome<ExchangeRun> {
        run(self, session, obs)
    }

    fn verdict(&self, record: &ExchangeRun, _rank: usize) -> Result<()> {
        record.verdict()
    }
}

/// A register that could not be held, with the reason.
fn not_held(layout: &Layout, memory: Memory, reason: String) -> RegisterRun {
    RegisterRun {
        qubits: layout.qubits,
        local_qubits: layout.local_qubits(),
        ranks: layout.ranks(),
        precision: layout.precision,
        memory: memory.name().into(),
        chunk_bytes: layout.chunk_bytes(),
        references: References::default(),
        local_gates: Vec::new(),
        global_gates: Vec::new(),
        checks: Vec::new(),
        unavailable: vec![Unavailable { transport: format!("{} memory", memory.name()), reason }],
        classes: Vec::new(),
        circuits: Vec::new(),
    }
}

/// The record of `plan` before anything is measured.
fn record_of(plan: &ExchangePlan) -> ExchangeRun {
    ExchangeRun {
        header: Header::start(KIND, plan.fault),
        devices: Vec::new(),
        library: None,
        kernels: None,
        iters: plan.iters,
        warmup_iters: plan.warmup,
        registers: Vec::new(),
        verdict: None,
        decisions: Vec::new(),
        device_memory: None,
        forecasts: Vec::new(),
        plans: Vec::new(),
        plan_figures: None,
        host_cores: plan.memories.contains(&Memory::Host).then(crate::host::cores),
        unavailable: plan.unavailable.clone(),
        classes_shown: plan.classes_shown,
    }
}

fn run(plan: &ExchangePlan, session: &Session, obs: &mut dyn Observer<ExchangeRun>) -> Outcome<ExchangeRun> {
    let mut out = record_of(plan);
    obs.started(&out);
    let result = exchange(plan, session, obs, &mut out);
    Outcome::new(out, result)
}

/// A register of `layout` with `local` ranks in this process's `memory`.
fn held<'w>(
    plan: &ExchangePlan,
    layout: Layout,
    local: usize,
    memory: Memory,
    world: &'w dyn crate::world::World,
    nccl: bool,
) -> Result<Box<dyn Register + 'w>> {
    Ok(match (memory, layout.precision) {
        (Memory::Gpu, _) => Box::new(GpuRegister::new(layout, local, world, nccl, plan.chunk)?),
        (Memory::Host, Precision::Single) => Box::new(HostRegister::<f32>::new(layout, local, world)?),
        (Memory::Host, Precision::Double) => Box::new(HostRegister::<f64>::new(layout, local, world)?),
    })
}

fn exchange(
    plan: &ExchangePlan,
    session: &Session,
    obs: &mut dyn Observer<ExchangeRun>,
    out: &mut ExchangeRun,
) -> Result<()> {
    if let Some(f) = &plan.forecast {
        // --plan: every count projected, from the figures given or this
        // node's, measured briefly first.
        let machine = match &f.machine {
            Some(m) => m.clone(),
            None => this_node(plan, session)?,
        };
        obs.begin(out);
        out.device_memory = Some(machine.gpu_memory);
        out.plan_figures = Some(Box::new(machine.figures()));
        for &n in &plan.qubits {
            project(plan, out, n, &plan.ngpus, &f.wires, (f.sharing, f.per_node), &machine)?;
        }
        return Ok(());
    }
    let world = session.world();
    agree_on_reach(plan, world)?;
    let gpu_wires = plan.wires_on(Memory::Gpu);
    if !gpu_wires.is_empty() {
        session.need(&Job::libraries(plan))?;
    }
    let mut m = Measuring {
        plan,
        world,
        // Communicators for the wires that move amplitudes through NCCL.
        nccl: gpu_wires.iter().any(|w| w.imp().libraries().contains(&Library::Nccl)),
        begun: false,
        memory_of: Vec::new(),
        unmeasured: Vec::new(),
    };
    for &n in &plan.qubits {
        let circuits: Vec<Circuit> = plan.circuits.iter().map(|c| c.build(n)).collect::<Result<_>>()?;
        for &g in &plan.ngpus {
            interrupt::check()?;
            for &memory in &plan.memories {
                m.count(n, g, memory, &circuits, obs, out)?;
            }
        }
    }
    out.decisions =
        decision::decide(&out.registers, &m.memory_of, &plan.circuits, decision::sharing(&out.devices), &plan.against);
    m.held_some(out)?;
    m.project_unmeasured(out)
}

/// This node's figures for `--plan` without a source: three register sizes
/// on one and two ranks with a QFT each, on its GPUs where the GPU
/// libraries load, else in host memory.
fn this_node(plan: &ExchangePlan, session: &Session) -> Result<Machine> {
    let gpu = crate::libs::missing(&gpu_libraries(&[Wire::Nccl])).is_none();
    let (memory, wire, qubits) = match gpu {
        true => (Memory::Gpu, Wire::Nccl, vec![16, 22, 28]),
        false => (Memory::Host, Wire::Cpu, vec![12, 16, 20]),
    };
    if gpu {
        session.need(&gpu_libraries(&[wire]))?;
    }
    let brief = ExchangePlan {
        qubits,
        ngpus: vec![1, 2],
        memories: vec![memory],
        wires: vec![wire],
        iters: 3,
        warmup: 1,
        circuits: vec![crate::statevec::spec::CircuitSpec::Qft],
        rounds: 1,
        one_rank_too: false,
        fault: None,
        forecast: None,
        unavailable: Vec::new(),
        ..plan.clone()
    };
    let mut scratch = record_of(&brief);
    interrupt::step("measuring this node for the plan");
    exchange(&brief, session, &mut crate::record::Quiet, &mut scratch)?;
    // The source names the registers and ranks it measured after this.
    Machine::of_runs(&[("this node, measured now".into(), scratch)])
}

/// A measuring run as it goes: what it has begun and held, and the counts
/// this node could not hold.
struct Measuring<'a> {
    plan: &'a ExchangePlan,
    world: &'a dyn crate::world::World,
    nccl: bool,
    begun: bool,
    /// Each memory's room for a register, for the decisions.
    memory_of: Vec<(Memory, u64)>,
    /// (qubits, ranks, why) of the counts this node could not hold.
    unmeasured: Vec<(u32, usize, String)>,
}

impl Measuring<'_> {
    fn settings<'s>(&'s self, wires: &'s [Wire], circuits: &'s [Circuit]) -> Settings<'s> {
        let p = self.plan;
        Settings {
            ops: &p.ops,
            wires,
            iters: p.iters,
            warmup: p.warmup,
            fault: p.fault,
            circuits,
            schedules: &p.schedules,
            rounds: p.rounds,
            timed: p.timed,
        }
    }

    /// `n` qubits on `g` ranks of this process in `memory`: measured, or
    /// set aside to be projected where several counts were asked and this
    /// node cannot hold this one; then on one rank too where the verdict
    /// needs it.
    fn count(
        &mut self,
        n: u32,
        g: usize,
        memory: Memory,
        circuits: &[Circuit],
        obs: &mut dyn Observer<ExchangeRun>,
        out: &mut ExchangeRun,
    ) -> Result<()> {
        let (plan, world) = (self.plan, self.world);
        let ranks = world.size() * g;
        if let (Some(f), true) = (plan.fault, ranks < 2) {
            return Err(Error::Usage(format!(
                "{}: one rank has no partner to exchange with, so the fault cannot show; use -g 2 or more",
                f.describe()
            )));
        }
        let layout = Layout::new(n, ranks, plan.precision)?;
        if memory == Memory::Host
            && let Some(reason) = does_not_fit(&layout, g)
        {
            out.registers.push(not_held(&layout, memory, reason));
            obs.part(out, out.registers.last().expect("pushed"));
            return Ok(());
        }
        interrupt::step(format!("{n} qubits: opening the {} ranks", memory.name()));
        // One rank exchanges nothing: no communicators to set up.
        let nccl = self.nccl && memory == Memory::Gpu && ranks > 1;
        let mut reg = match held(plan, layout, g, memory, world, nccl) {
            Ok(reg) => reg,
            // Of several counts, the ones this node cannot hold are projected.
            Err(e @ (Error::Usage(_) | Error::Missing(_))) if plan.ngpus.len() > 1 && memory == Memory::Gpu => {
                self.unmeasured.push((n, ranks, e.message()));
                return Ok(());
            }
            Err(e) => return Err(e),
        };
        self.begin(reg.as_ref(), memory, obs, out)?;
        let wires = plan.wires_on(memory);
        let r = measure(reg.as_mut(), memory, &self.settings(&wires, circuits))?;
        drop(reg);
        out.registers.push(r);
        obs.part(out, out.registers.last().expect("pushed"));
        if plan.one_rank_too && ranks > 1 && world.size() == 1 && !plan.ngpus.contains(&1) {
            self.on_one_rank(n, memory, circuits, obs, out)?;
        }
        Ok(())
    }

    /// The run's head once its first register is held, and what each
    /// register tells the record (kernels, memory).
    fn begin(
        &mut self,
        reg: &dyn Register,
        memory: Memory,
        obs: &mut dyn Observer<ExchangeRun>,
        out: &mut ExchangeRun,
    ) -> Result<()> {
        if !self.begun {
            out.devices = crate::world::all_ranks(self.world, reg.ranks())?;
            out.library = match self.nccl && memory == Memory::Gpu {
                true => Some(crate::transport::nccl::library_info()?),
                false => None,
            };
            obs.begin(out);
            self.begun = true;
        }
        if out.kernels.is_none() {
            out.kernels = reg.kernel_build();
        }
        if memory == Memory::Gpu || out.device_memory.is_none() {
            out.device_memory = Some(reg.device_memory());
        }
        if !self.memory_of.iter().any(|(m, _)| *m == memory) {
            self.memory_of.push((memory, reg.device_memory().saturating_sub(1 << 30)));
        }
        Ok(())
    }

    /// The register of `n` qubits on one rank, where it fits: what the
    /// verdict holds the spread register against.
    fn on_one_rank(
        &self,
        n: u32,
        memory: Memory,
        circuits: &[Circuit],
        obs: &mut dyn Observer<ExchangeRun>,
        out: &mut ExchangeRun,
    ) -> Result<()> {
        interrupt::step(format!("{n} qubits on one {} rank", memory.name()));
        let whole = Layout::new(n, 1, self.plan.precision)?;
        let fits = memory == Memory::Gpu || does_not_fit(&whole, 1).is_none();
        match fits.then(|| held(self.plan, whole, 1, memory, self.world, false)) {
            Some(Ok(mut one)) => {
                let r = measure(one.as_mut(), memory, &self.settings(&[], circuits))?;
                out.registers.push(r);
                obs.part(out, out.registers.last().expect("pushed"));
                Ok(())
            }
            Some(Err(Error::Usage(_))) | None => Ok(()),
            Some(Err(e)) => Err(e),
        }
    }

    /// Err when no register could be held at all, with every reason.
    fn held_some(&self, out: &ExchangeRun) -> Result<()> {
        if out.registers.iter().any(|r| !r.classes.is_empty()) {
            return Ok(());
        }
        let mut why: Vec<String> = out
            .registers
            .iter()
            .flat_map(|r| r.unavailable.iter().map(|u| format!("{}: {}", u.transport, u.reason)))
            .collect();
        why.extend(self.unmeasured.iter().map(|(_, _, e)| e.clone()));
        Err(Error::Missing(format!(
            "no register could be held here ({}); `qbench exchange --plan` answers for hardware this node does not have",
            why.join("; ")
        )))
    }

    /// The counts this node could not hold, projected from what it measured.
    fn project_unmeasured(&self, out: &mut ExchangeRun) -> Result<()> {
        if self.unmeasured.is_empty() {
            return Ok(());
        }
        let m = Machine::of_runs(&[("this run".to_string(), out.clone())])?;
        out.plan_figures = Some(Box::new(m.figures()));
        let wires: Vec<String> = self.plan.wires_on(Memory::Gpu).iter().map(|w| w.name().to_string()).collect();
        for &n in &self.plan.qubits {
            let counts: Vec<usize> = self.unmeasured.iter().filter(|u| u.0 == n).map(|u| u.1).collect();
            if !counts.is_empty() {
                project(self.plan, out, n, &counts, &wires, (1, None), &m)?;
            }
        }
        Ok(())
    }
}

/// `n` qubits on each of `counts` ranks over `wires`, projected on `m`
/// with `placed` ranks a device and devices a node (None: `m`'s): the rows
/// and each circuit's answer into the record.
fn project(
    plan: &ExchangePlan,
    out: &mut ExchangeRun,
    n: u32,
    counts: &[usize],
    wires: &[String],
    placed: (usize, Option<usize>),
    m: &Machine,
) -> Result<()> {
    let ask = forecast::Ask {
        qubits: n,
        gpus: counts,
        precision: plan.precision,
        circuits: &plan.circuits,
        schedules: &plan.schedules,
        wires,
        sharing: placed.0,
        per_node: placed.1,
        simulator_s: &plan.against.simulator_s,
    };
    let (rows, answers) = forecast::forecast(&ask, m)?;
    out.forecasts.extend(rows);
    out.plans.extend(answers);
    Ok(())
}

/// Err unless every process left the same wires out of its plan: one
/// whose node lacks the GPU libraries must not run host registers alone
/// while the others open GPU ones.
fn agree_on_reach(plan: &ExchangePlan, world: &dyn crate::world::World) -> Result<()> {
    let mine = plan.unavailable.is_empty() as u8;
    let all = world.all_gather(&[mine]);
    match all.iter().position(|v| v.first() != Some(&mine)) {
        None => Ok(()),
        Some(r) => {
            let (without, with) = if mine == 1 { (r, world.rank()) } else { (world.rank(), r) };
            Err(Error::Missing(format!(
                "rank {without} cannot load the GPU libraries and rank {with} can: run the job on nodes alike, or with --memory host"
            )))
        }
    }
}
