//! `qbench compare`: the same bytes between partner ranks over every wire
//! that serves the register's memory (GPUs, with NCCL's sendrecv beside
//! them, or host memory), each transfer checked, GB/s and the ratio to the
//! best. Records in, nothing printed.

use super::plan::{ComparePlan, gpu_libraries};
use super::run::{sample, sample_slowest};
use crate::error::{Error, Result};
use crate::libs::Library;
use crate::record::compare::{Comparison, KIND, Row};
use crate::record::{Header, Observer, Outcome};
use crate::session::Session;
use crate::statevec::circuit::hadamard;
use crate::statevec::layout::{Layout, Precision};
use crate::statevec::state::ProductState;
use crate::statevec::step::PhysicalGate;
use crate::stats::Summary;
use crate::transport::amplitudes::gpu::GpuRegister;
use crate::transport::amplitudes::host_memory::HostRegister;
use crate::transport::amplitudes::{Memory, Register, Wire, step};
use crate::workload::Job;

impl Job for ComparePlan {
    type Record = Comparison;

    fn libraries(&self) -> Vec<Library> {
        let wires: Vec<Wire> = Wire::ALL.iter().copied().filter(|w| w.serves(self.memory)).collect();
        match self.memory {
            Memory::Gpu => gpu_libraries(&wires),
            Memory::Host => Vec::new(),
        }
    }

    fn without_gpus(&self) -> Option<&'static str> {
        Some("--memory host compares the wires on host memory")
    }

    fn run(&self, session: &Session, obs: &mut dyn Observer<Comparison>) -> Outcome<Comparison> {
        run(self, session, obs)
    }

    fn verdict(&self, record: &Comparison, _rank: usize) -> Result<()> {
        record.verdict()
    }
}

/// The row of nccl-tests' sendrecv, the reference beside the wires.
const SENDRECV: &str = "nccl-sendrecv";

fn run(plan: &ComparePlan, session: &Session, obs: &mut dyn Observer<Comparison>) -> Outcome<Comparison> {
    let world = session.world();
    let local = plan.ngpus.unwrap_or(if world.size() > 1 { 1 } else { 2 });
    let ranks = world.size() * local;
    let mut out = Comparison {
        header: Header::start(KIND, plan.fault),
        bytes_per_rank: plan.bytes,
        ranks,
        devices: Vec::new(),
        library: None,
        iters: plan.iters,
        rows: Vec::new(),
    };
    obs.started(&out);
    let result = compare(plan, local, session, obs, &mut out);
    Outcome::new(out, result)
}

fn compare(
    plan: &ComparePlan,
    local: usize,
    session: &Session,
    obs: &mut dyn Observer<Comparison>,
    out: &mut Comparison,
) -> Result<()> {
    session.need(&Job::libraries(plan))?;
    let world = session.world();
    if out.ranks < 2 {
        return Err(Error::Usage("compare needs two ranks or more (-g 2, or two processes)".into()));
    }
    let local_qubits = (plan.bytes / Precision::Single.bytes()).trailing_zeros();
    let layout = Layout::new(local_qubits + out.ranks.trailing_zeros(), out.ranks, Precision::Single)?;
    match plan.memory {
        Memory::Gpu => {
            let mut reg = GpuRegister::new(layout, local, world, true, None)?;
            out.devices = crate::world::all_ranks(world, reg.ranks())?;
            out.library = Some(crate::transport::nccl::library_info()?);
            obs.begin(out);
            rows(&mut reg, Memory::Gpu, plan, obs, out)?;
            crate::interrupt::step("compare: nccl-tests' sendrecv");
            let bytes = layout.chunk_bytes();
            // NCCL is not set up where ranks share a GPU: the reason, as the nccl row gives it.
            let (gbps, unavailable) = match reg.unavailable(Wire::Nccl) {
                Some(why) => (None, Some(why)),
                None => {
                    let ring = sample_slowest(&mut reg, plan.warmup, plan.iters, |r| {
                        Ok(r.nccl_sendrecv(bytes)?.unwrap_or(f64::NAN))
                    })?;
                    (Some(bytes as f64 / ring.median / 1e9), None)
                }
            };
            out.rows.push(Row {
                transport: SENDRECV.into(),
                how: "nccl-tests' sendrecv: to rank+1, from rank−1, one message".into(),
                gbps,
                vs_best: None,
                wrong: None,
                unavailable,
            });
            obs.part(out, out.rows.last().expect("pushed"));
        }
        Memory::Host => {
            let mut reg = HostRegister::<f32>::new(layout, local, world)?;
            out.devices = crate::world::all_ranks(world, reg.ranks())?;
            obs.begin(out);
            rows(&mut reg, Memory::Host, plan, obs, out)?;
        }
    }
    out.rank(SENDRECV);
    Ok(())
}

/// A row for every wire that serves `memory`: the median time of a whole
/// chunk to the partner for the top qubit, and the amplitudes after one
/// exchange and combine, checked.
fn rows(
    reg: &mut dyn Register,
    memory: Memory,
    plan: &ComparePlan,
    obs: &mut dyn Observer<Comparison>,
    out: &mut Comparison,
) -> Result<()> {
    let layout = *reg.layout();
    let t = layout.qubits - 1;
    let bytes = layout.chunk_bytes() as f64;
    for wire in Wire::ALL.iter().copied().filter(|w| w.serves(memory)) {
        crate::interrupt::step(format!("compare: {}", wire.name()));
        let row = match reg.unavailable(wire) {
            Some(why) => Row {
                transport: wire.name().into(),
                how: wire.imp().how().into(),
                gbps: None,
                vs_best: None,
                wrong: None,
                unavailable: Some(why),
            },
            None => {
                // H on the top qubit: every rank's whole chunk to its partner.
                let gate = PhysicalGate::GlobalU { t, m: hadamard() };
                let time = Summary::of(&sample(plan.warmup, plan.iters, || {
                    let s = step::run(reg, &gate, Some(wire), plan.fault)?;
                    Ok(s.slowest(reg.world()).exchange.unwrap_or(0.0))
                })?);
                let mut model = ProductState::new(layout.qubits);
                reg.init(&model)?;
                step::run(reg, &gate, Some(wire), plan.fault)?;
                model.h(t);
                Row {
                    transport: wire.name().into(),
                    how: wire.imp().how().into(),
                    gbps: Some(bytes / time.median / 1e9),
                    vs_best: None,
                    wrong: Some(reg.count_wrong(&model, 0.0)?),
                    unavailable: None,
                }
            }
        };
        out.rows.push(row);
        obs.part(out, out.rows.last().expect("pushed"));
    }
    Ok(())
}
