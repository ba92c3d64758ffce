//! `qbench compare`: the same bytes between partner GPUs over every wire,
//! with NCCL's sendrecv and the RDMA adapters beside them, each transfer
//! checked, GB/s and the ratio to the best. Records in, nothing printed.

use super::plan::ComparePlan;
use super::run::sample;
use crate::error::{Error, Result};
use crate::record::compare::{Comparison, KIND, Row};
use crate::record::{Header, Observer, Outcome};
use crate::session::Session;
use crate::statevec::layout::{Layout, Pattern, Precision};
use crate::statevec::state::ProductState;
use crate::transport::amplitudes::gpu::GpuRegister;
use crate::transport::amplitudes::{Memory, Register, Wire};

/// The row of nccl-tests' sendrecv, the reference beside the wires.
const SENDRECV: &str = "nccl-sendrecv";

pub fn run(plan: &ComparePlan, session: &Session, obs: &mut dyn Observer<Comparison>) -> Outcome<Comparison> {
    let ranks = session.world().size() * plan.ngpus;
    let mut out = Comparison {
        header: Header::start(KIND, plan.fault),
        bytes_per_rank: plan.bytes,
        ranks,
        devices: Vec::new(),
        library: None,
        iters: plan.iters,
        rows: Vec::new(),
    };
    let result = compare(plan, session, obs, &mut out);
    Outcome::new(out, result)
}

fn compare(
    plan: &ComparePlan,
    session: &Session,
    obs: &mut dyn Observer<Comparison>,
    out: &mut Comparison,
) -> Result<()> {
    session.need(&plan.libraries())?;
    let world = session.world();
    if out.ranks < 2 {
        return Err(Error::Usage("compare needs two GPUs or more (-g 2, or two processes)".into()));
    }
    let local_qubits = (plan.bytes / Precision::Single.bytes()).trailing_zeros();
    let layout = Layout::new(local_qubits + out.ranks.trailing_zeros(), out.ranks, Precision::Single)?;
    let mut reg = GpuRegister::new(layout, plan.ngpus, world, true, None)?;
    out.devices = crate::world::all_ranks(world, reg.ranks())?;
    out.library = Some(crate::transport::nccl::library_info()?);
    obs.begin(out);
    let t = layout.qubits - 1;
    let bytes = layout.chunk_bytes();
    let (w, n) = (plan.warmup, plan.iters);
    let gbps = |s: f64| bytes as f64 / s / 1e9;
    for wire in Wire::ALL.iter().copied().filter(|w| w.memory() == Memory::Gpu) {
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
                let time = sample(w, n, || reg.exchange(wire, Pattern::Gate, t, plan.fault))?;
                let mut model = ProductState::new(layout.qubits);
                reg.init(&model)?;
                reg.exchange(wire, Pattern::Gate, t, plan.fault)?;
                reg.combine(t)?;
                model.h(t);
                Row {
                    transport: wire.name().into(),
                    how: wire.imp().how().into(),
                    gbps: Some(gbps(time.median)),
                    vs_best: None,
                    wrong: Some(reg.count_wrong(&model)?),
                    unavailable: None,
                }
            }
        };
        out.rows.push(row);
        obs.part(out, out.rows.last().expect("pushed"));
    }
    crate::interrupt::step("compare: nccl-tests' sendrecv");
    let ring = sample(w, n, || Ok(reg.nccl_sendrecv(bytes)?.unwrap_or(f64::NAN)))?;
    out.rows.push(Row {
        transport: SENDRECV.into(),
        how: "nccl-tests' sendrecv: to rank+1, from rank−1, one message".into(),
        gbps: Some(gbps(ring.median)),
        vs_best: None,
        wrong: None,
        unavailable: None,
    });
    let ib = std::fs::read_dir("/sys/class/infiniband").map(|d| d.count()).unwrap_or(0);
    out.rows.push(Row {
        transport: "rdma".into(),
        how: "raw verbs RDMA writes between the nodes' adapters".into(),
        gbps: None,
        vs_best: None,
        wrong: None,
        unavailable: Some(if ib == 0 {
            "no RDMA adapter on this node (/sys/class/infiniband is empty)".into()
        } else {
            "raw verbs transfers are not built into qbench; NCCL's NET/IB path (nccl row, across nodes) uses the adapters".into()
        }),
    });
    out.rank(SENDRECV);
    Ok(())
}
