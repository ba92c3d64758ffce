//! The exchange: for each register size, on GPUs and/or host memory,
//! measure the references, local gates and global gates over each wire,
//! check every amplitude after each wire, and judge. Records in, nothing
//! printed: the observer hears of each register as it is measured.

use super::plan::{ExchangePlan, gpu_libraries};
use super::verdict::judge;
use crate::error::{Error, Result};
use crate::fault::Fault;
use crate::interrupt;
use crate::libs::Library;
use crate::record::exchange::{Check, ExchangeRun, GlobalGate, KIND, LocalGate, References, RegisterRun, Unavailable};
use crate::record::{Header, Observer, Outcome};
use crate::session::Session;
use crate::statevec::layout::{GlobalOp, Layout, Precision, SLOW_PARTNER_BYTES};
use crate::statevec::state::ProductState;
use crate::stats::Summary;
use crate::transport::amplitudes::gpu::GpuRegister;
use crate::transport::amplitudes::host_memory::{HostRegister, does_not_fit};
use crate::transport::amplitudes::{Memory, Register, Wire};
use crate::workload::Job;

/// Repeats `op` `warmup` + `iters` times; the timed samples' summary.
pub(super) fn sample(warmup: u32, iters: u32, mut op: impl FnMut() -> Result<f64>) -> Result<Summary> {
    let mut v = Vec::with_capacity(iters as usize);
    for i in 0..warmup + iters {
        interrupt::check()?;
        let s = op()?;
        if i >= warmup {
            v.push(s);
        }
    }
    Ok(Summary::of(&v))
}

/// What every register of the run is measured with.
struct Settings<'a> {
    patterns: &'a [GlobalOp],
    wires: &'a [Wire],
    iters: u32,
    warmup: u32,
    fault: Option<Fault>,
}

/// Everything measured on one register.
fn measure(reg: &mut dyn Register, memory: Memory, s: &Settings) -> Result<RegisterRun> {
    let layout = *reg.layout();
    let (n, l) = (layout.qubits, layout.local_qubits());
    let chunk = layout.chunk_bytes();
    let step = |what: &str| interrupt::step(format!("{n} qubits in {} memory: {what}", memory.name()));
    let mut model = ProductState::new(n);
    step("writing the state");
    reg.init(&model)?;
    step("references");
    let copy = sample(s.warmup, s.iters, || reg.local_copy())?;
    let copy_bytes = reg.copy_bytes();
    let copy_gbps = 2.0 * copy_bytes as f64 / copy.median / 1e9;
    let link_bytes = chunk.min(1 << 30);
    let link = match reg.host_link(link_bytes)? {
        Some(_) => Some(sample(s.warmup, s.iters, || Ok(reg.host_link(link_bytes)?.unwrap_or(0.0)))?),
        None => None,
    };
    let sendrecv = match reg.nccl_sendrecv(chunk)? {
        Some(_) => Some(sample(s.warmup, s.iters, || Ok(reg.nccl_sendrecv(chunk)?.unwrap_or(0.0)))?),
        None => None,
    };
    let references = References {
        local_copy_gbps: copy_gbps,
        local_copy_bytes: (copy_bytes != chunk).then_some(copy_bytes),
        host_link_gbps: link.map(|t| link_bytes as f64 / t.median / 1e9),
        host_link_bytes: link.map(|_| link_bytes),
        nccl_sendrecv_gbps: sendrecv.map(|t| chunk as f64 / t.median / 1e9),
    };
    // Qubit 0, the qubit whose partners are 4 KiB apart (the slowest
    // position on an H200: docs/kernels-roofline.md), the middle one and
    // the last.
    let slow = layout.precision.qubit_with_partners(SLOW_PARTNER_BYTES);
    let mut positions: Vec<u32> = [0, slow, l / 2, l - 1].into_iter().filter(|&q| q < l).collect();
    positions.sort_unstable();
    positions.dedup();
    let mut local_gates = Vec::new();
    for q in positions {
        step(&format!("local gate on qubit {q}"));
        let time = sample(s.warmup, s.iters, || {
            model.h(q);
            reg.local_h(q)
        })?;
        let gbps = 2.0 * chunk as f64 / time.median / 1e9;
        local_gates.push(LocalGate { qubit: q, time, gbps, of_copy: gbps / copy_gbps });
    }
    step("checking the local gates");
    let mut checks = vec![Check {
        transport: None,
        amplitudes: layout.local_amps() * layout.ranks() as u64,
        wrong: reg.count_wrong(&model)?,
    }];
    let local_s = local_gates.iter().map(|g| g.time.median).sum::<f64>() / local_gates.len() as f64;
    let mut global_gates = Vec::new();
    let mut unavailable = Vec::new();
    for &wire in s.wires {
        if let Some(reason) = reg.unavailable(wire) {
            unavailable.push(Unavailable { transport: wire.name().into(), reason });
            continue;
        }
        model = ProductState::new(n);
        reg.init(&model)?;
        for &pattern in s.patterns {
            for t in l..n {
                step(&format!("{} {} on qubit {t}", wire.name(), pattern.name()));
                let (mut ex, mut up) = (Vec::new(), Vec::new());
                for i in 0..s.warmup + s.iters {
                    interrupt::check()?;
                    let e = reg.exchange(wire, pattern, t, s.fault)?;
                    let u = match pattern {
                        GlobalOp::Gate => {
                            model.h(t);
                            reg.combine(t)?
                        }
                        GlobalOp::Swap => {
                            model.swap(t, l - 1);
                            model.h(l - 1);
                            reg.place(t)? + reg.local_h(l - 1)?
                        }
                    };
                    if i >= s.warmup {
                        ex.push(e);
                        up.push(u);
                    }
                }
                let (exchange, update) = (Summary::of(&ex), Summary::of(&up));
                let bytes = layout.message_bytes(pattern);
                global_gates.push(GlobalGate {
                    transport: wire.name().into(),
                    pattern,
                    qubit: t,
                    bytes,
                    exchange,
                    update,
                    gbps_per_direction: bytes as f64 / exchange.median / 1e9,
                    vs_local: (exchange.median + update.median) / local_s,
                });
            }
        }
        step(&format!("checking {}", wire.name()));
        checks.push(Check {
            transport: Some(wire.name().into()),
            amplitudes: layout.local_amps() * layout.ranks() as u64,
            wrong: reg.count_wrong(&model)?,
        });
    }
    Ok(RegisterRun {
        qubits: n,
        local_qubits: l,
        ranks: layout.ranks(),
        precision: layout.precision,
        memory: memory.name().into(),
        chunk_bytes: chunk,
        references,
        local_gates,
        global_gates,
        checks,
        unavailable,
    })
}

impl Job for ExchangePlan {
    type Record = ExchangeRun;

    fn libraries(&self) -> Vec<Library> {
        gpu_libraries(&self.wires_on(Memory::Gpu))
    }

    fn fault(&self) -> Option<Fault> {
        self.fault
    }

    fn run(&self, session: &Session, obs: &mut dyn Observer<ExchangeRun>) -> Outcome<ExchangeRun> {
        run(self, session, obs)
    }

    fn verdict(&self, record: &ExchangeRun) -> Result<()> {
        record.verdict()
    }
}

/// A register that could not be held, with the reason.
fn not_held(layout: &Layout, memory: Memory, wire: Wire, reason: String) -> RegisterRun {
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
        unavailable: vec![Unavailable { transport: wire.name().into(), reason }],
    }
}

fn run(plan: &ExchangePlan, session: &Session, obs: &mut dyn Observer<ExchangeRun>) -> Outcome<ExchangeRun> {
    let mut out = ExchangeRun {
        header: Header::start(KIND, plan.fault),
        devices: Vec::new(),
        library: None,
        kernels: None,
        iters: plan.iters,
        warmup_iters: plan.warmup,
        registers: Vec::new(),
        verdict: None,
    };
    let result = exchange(plan, session, obs, &mut out);
    Outcome::new(out, result)
}

fn exchange(
    plan: &ExchangePlan,
    session: &Session,
    obs: &mut dyn Observer<ExchangeRun>,
    out: &mut ExchangeRun,
) -> Result<()> {
    let world = session.world();
    let ranks = world.size() * plan.ngpus;
    if let (Some(f), true) = (plan.fault, ranks < 2) {
        return Err(Error::Usage(format!(
            "{}: one rank has no partner to exchange with, so the fault cannot show; use -g 2 or more",
            f.describe()
        )));
    }
    let gpu_wires = plan.wires_on(Memory::Gpu);
    let host_wires = plan.wires_on(Memory::Host);
    // Communicators for the wires that move amplitudes through NCCL.
    let nccl = gpu_wires.iter().any(|w| w.imp().libraries().contains(&Library::Nccl));
    if !gpu_wires.is_empty() {
        session.need(&Job::libraries(plan))?;
    }
    let settings =
        |wires| Settings { patterns: &plan.ops, wires, iters: plan.iters, warmup: plan.warmup, fault: plan.fault };
    let mut gpu_memory = 0;
    let mut begun = false;
    for &n in &plan.qubits {
        interrupt::check()?;
        let layout = Layout::new(n, ranks, plan.precision)?;
        if !gpu_wires.is_empty() {
            interrupt::step(format!("{n} qubits: opening the GPUs"));
            let mut reg = GpuRegister::new(layout, plan.ngpus, world, nccl, plan.chunk)?;
            if !begun {
                out.devices = crate::world::all_ranks(world, reg.ranks())?;
                out.library = if nccl { Some(crate::transport::nccl::library_info()?) } else { None };
                out.kernels = reg.kernel_build();
                gpu_memory = reg.gpu_memory().saturating_sub(1 << 30);
                obs.begin(out);
                begun = true;
            }
            let r = measure(&mut reg, Memory::Gpu, &settings(&gpu_wires))?;
            drop(reg);
            out.registers.push(r);
            obs.part(out, out.registers.last().expect("pushed"));
            if ranks > 1 && world.size() == 1 {
                // The same register on one GPU, when one holds it, so that
                // the verdict compares with a measured gate.
                interrupt::step(format!("{n} qubits on one GPU"));
                let whole = Layout::new(n, 1, plan.precision)?;
                match GpuRegister::new(whole, 1, world, false, plan.chunk) {
                    Ok(mut one) => {
                        let r = measure(&mut one, Memory::Gpu, &settings(&[]))?;
                        out.registers.push(r);
                        obs.part(out, out.registers.last().expect("pushed"));
                    }
                    Err(Error::Usage(_)) => {}
                    Err(e) => return Err(e),
                }
            }
        }
        if !host_wires.is_empty() {
            let r = match does_not_fit(&layout, plan.ngpus) {
                Some(reason) => not_held(&layout, Memory::Host, host_wires[0], reason),
                None => match plan.precision {
                    Precision::Single => measure(
                        &mut HostRegister::<f32>::new(layout, plan.ngpus, world)?,
                        Memory::Host,
                        &settings(&host_wires),
                    )?,
                    Precision::Double => measure(
                        &mut HostRegister::<f64>::new(layout, plan.ngpus, world)?,
                        Memory::Host,
                        &settings(&host_wires),
                    )?,
                },
            };
            out.registers.push(r);
            obs.part(out, out.registers.last().expect("pushed"));
        }
    }
    // The largest register measured on GPUs, spread when it was, with the
    // same register on one GPU beside it.
    let gpu: Vec<&RegisterRun> = out.registers.iter().filter(|r| r.memory == Memory::Gpu.name()).collect();
    let spread = gpu.iter().rev().find(|r| r.ranks > 1 && !r.global_gates.is_empty());
    out.verdict = match spread {
        Some(r) => {
            let one = gpu.iter().find(|o| o.ranks == 1 && o.qubits == r.qubits && o.precision == r.precision);
            judge(r, gpu_memory, &plan.circuits, one.copied())
        }
        None => gpu
            .last()
            .filter(|r| r.ranks == 1 && !r.local_gates.is_empty())
            .and_then(|r| judge(r, gpu_memory, &plan.circuits, None)),
    };
    Ok(())
}
