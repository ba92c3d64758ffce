//! `qbench compare`: the same bytes between partner GPUs over every
//! transport, with NCCL's sendrecv and the hardware references beside them,
//! each transfer checked, GB/s and the ratio to the best.

use super::layout::{Layout, Pattern, Precision};
use super::register::{Register, Wire};
use super::run::sample;
use super::state::ProductState;
use crate::cli::CompareArgs;
use crate::error::{Error, Result};
use crate::libs::{self, Library};
use crate::transport::amplitudes::gpu::GpuRegister;
use crate::world::{self, World};
use serde::Serialize;

pub const SCHEMA: &str = "qbench.compare.v1";

#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub transport: String,
    pub how: String,
    /// Median GB/s per direction; None when it could not run.
    pub gbps: Option<f64>,
    pub vs_best: Option<f64>,
    /// Wrong amplitudes after an exchange and combine over this transport.
    pub wrong: Option<u64>,
    pub unavailable: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    #[serde(flatten)]
    pub header: crate::harness::record::RunHeader,
    pub bytes_per_rank: u64,
    pub ranks: usize,
    pub devices: Vec<crate::transport::RankInfo>,
    pub library: Option<crate::transport::LibraryInfo>,
    pub iters: u32,
    pub rows: Vec<Row>,
}

fn describe(w: Wire) -> &'static str {
    match w {
        Wire::Nccl => "grouped ncclSend/ncclRecv between partners",
        Wire::P2p => "SM kernel writing into the peer GPU (peer access)",
        Wire::P2pCe => "cuMemcpyPeerAsync, copy engines",
        Wire::Host => "GPU→pinned host→GPU, pipelined in 64M pieces",
        Wire::HostUnpipelined => "GPU→host, host copy, host→GPU, one after the other (QuEST)",
        Wire::Cpu => "host-memory ranks",
    }
}

pub fn run(args: &CompareArgs) -> Result<()> {
    let amps = args.bytes / Precision::Single.bytes();
    if !amps.is_power_of_two() || amps < 4 {
        return Err(Error::Usage(format!(
            "-b {}: compare moves a register chunk, so use a power of two of at least 32 bytes",
            args.bytes
        )));
    }
    libs::require(&[Library::Driver, Library::Nvrtc, Library::Nccl])?;
    let world = world::detect()?;
    let result = compare(args, amps.trailing_zeros(), world.as_ref());
    world::conclude(world.as_ref(), result)
}

fn compare(args: &CompareArgs, local_qubits: u32, world: &dyn World) -> Result<()> {
    let mut header = crate::harness::record::RunHeader::start(SCHEMA);
    let ranks = world.size() * args.ngpus as usize;
    if ranks < 2 {
        return Err(Error::Usage("compare needs two GPUs or more (-g 2, or two processes)".into()));
    }
    let layout = Layout::new(local_qubits + ranks.trailing_zeros(), ranks, Precision::Single)?;
    let mut reg = GpuRegister::new(layout, args.ngpus as usize, world, true, None)?;
    let t = layout.qubits - 1;
    let bytes = layout.chunk_bytes();
    let (w, n) = (args.warmup_iters, args.iters);
    let gbps = |s: f64| bytes as f64 / s / 1e9;
    let mut rows = Vec::new();
    for wire in [Wire::Nccl, Wire::P2p, Wire::P2pCe, Wire::Host, Wire::HostUnpipelined] {
        if let Some(why) = reg.unavailable(wire) {
            rows.push(Row {
                transport: wire.name().into(),
                how: describe(wire).into(),
                gbps: None,
                vs_best: None,
                wrong: None,
                unavailable: Some(why),
            });
            continue;
        }
        let time = sample(w, n, || reg.exchange(wire, Pattern::Gate, t, None))?;
        let mut model = ProductState::new(layout.qubits);
        reg.init(&model)?;
        reg.exchange(wire, Pattern::Gate, t, None)?;
        reg.combine(t)?;
        model.h(t);
        let wrong = reg.count_wrong(&model)?;
        rows.push(Row {
            transport: wire.name().into(),
            how: describe(wire).into(),
            gbps: Some(gbps(time.median_s)),
            vs_best: None,
            wrong: Some(wrong),
            unavailable: None,
        });
    }
    let ring = sample(w, n, || Ok(reg.nccl_sendrecv(bytes)?.unwrap_or(f64::NAN)))?;
    rows.push(Row {
        transport: "nccl-sendrecv".into(),
        how: "nccl-tests' sendrecv: to rank+1, from rank−1, one message".into(),
        gbps: Some(gbps(ring.median_s)),
        vs_best: None,
        wrong: None,
        unavailable: None,
    });
    let ib = std::fs::read_dir("/sys/class/infiniband").map(|d| d.count()).unwrap_or(0);
    rows.push(Row {
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
    let best = rows.iter().filter(|r| r.transport != "nccl-sendrecv").filter_map(|r| r.gbps).fold(0.0, f64::max);
    for r in &mut rows {
        r.vs_best = r.gbps.map(|g| g / best);
    }
    let wrong: u64 = rows.iter().filter_map(|r| r.wrong).sum();
    header.finish();
    let out = Comparison {
        header,
        bytes_per_rank: bytes,
        ranks,
        devices: crate::harness::all_ranks(world, reg.ranks())?,
        library: Some(crate::transport::nccl::library_info()?),
        iters: n,
        rows,
    };
    if world.rank() == 0 {
        if args.out.json {
            println!("{}", crate::report::json::to_string(&out)?);
        } else {
            print!("{}", crate::report::exchange::comparison(&out));
        }
        if let Some(path) = &args.out.output_file {
            crate::report::json::write(&out, path)?;
        }
        if let Some(path) = &args.out.csv {
            crate::report::exchange::write_comparison_csv(&out, path)?;
        }
    }
    if wrong > 0 {
        return Err(Error::CheckFailed(format!("{wrong} amplitudes arrived wrong")));
    }
    Ok(())
}
