//! The exchange command: for each register size, on GPUs and/or host
//! memory, measure the references, local gates and global gates over each
//! transport, check every amplitude after each transport, and judge.

use super::layout::{Layout, Pattern, Precision};
use super::record::{Check, ExchangeRun, GlobalGate, LocalGate, References, RegisterRun, SCHEMA, Stats, Unavailable};
use super::register::{Fault, Register, Wire};
use super::state::ProductState;
use super::verdict::{Circuit, judge};
use crate::cli::ExchangeArgs;
use crate::error::{Error, Result};
use crate::libs::{self, Library};
use crate::transport::amplitudes::cpu::{CpuRegister, does_not_fit};
use crate::transport::amplitudes::gpu::GpuRegister;
use crate::world::{self, World};

/// "33" or "20..33" (also "20-33").
pub fn parse_qubits(text: &str) -> Result<Vec<u32>> {
    let bad = || Error::Usage(format!("invalid --qubits '{text}': use N or A..B"));
    let num = |s: &str| s.trim().parse::<u32>().map_err(|_| bad());
    let (a, b) = match text.split_once("..").or_else(|| text.split_once('-')) {
        Some((a, b)) => (num(a)?, num(b)?),
        None => (num(text)?, num(text)?),
    };
    if a > b {
        return Err(bad());
    }
    Ok((a..=b).collect())
}

fn parse_patterns(text: &str) -> Result<Vec<Pattern>> {
    match text {
        "gate" => Ok(vec![Pattern::Gate]),
        "swap" => Ok(vec![Pattern::Swap]),
        "both" => Ok(vec![Pattern::Gate, Pattern::Swap]),
        _ => Err(Error::Usage(format!("unknown pattern '{text}': use gate, swap or both"))),
    }
}

/// The transports asked for, in a stable order.
pub fn parse_wires(text: &str, no_pipeline: bool) -> Result<Vec<Wire>> {
    let mut wires = Vec::new();
    for part in text.split(',').map(str::trim) {
        let add: Vec<Wire> = match part {
            // Every way of moving GPU amplitudes; host-memory ranks are a
            // different register, asked for by name.
            "all" => vec![Wire::Nccl, Wire::P2p, Wire::P2pCe, Wire::Host, Wire::HostUnpipelined],
            "host" if no_pipeline => vec![Wire::HostUnpipelined],
            _ => vec![Wire::parse(part).ok_or_else(|| {
                Error::Usage(format!(
                    "unknown transport '{part}': use nccl, p2p, p2p-ce, host, host-unpipelined, cpu or all"
                ))
            })?],
        };
        for w in add {
            if !wires.contains(&w) {
                wires.push(w);
            }
        }
    }
    Ok(wires)
}

/// Repeats `op` `warmup` + `iters` times; the timed samples' stats.
pub fn sample(warmup: u32, iters: u32, mut op: impl FnMut() -> Result<f64>) -> Result<Stats> {
    let mut v = Vec::with_capacity(iters as usize);
    for i in 0..warmup + iters {
        let s = op()?;
        if i >= warmup {
            v.push(s);
        }
    }
    Ok(Stats::of(&v))
}

pub struct Settings {
    pub patterns: Vec<Pattern>,
    pub wires: Vec<Wire>,
    pub iters: u32,
    pub warmup: u32,
    pub fault: Option<Fault>,
}

/// Everything measured on one register.
pub fn measure(reg: &mut dyn Register, memory: &'static str, s: &Settings) -> Result<RegisterRun> {
    let layout = *reg.layout();
    let (n, l) = (layout.qubits, layout.local_qubits());
    let chunk = layout.chunk_bytes();
    let mut model = ProductState::new(n);
    reg.init(&model)?;
    let copy = sample(s.warmup, s.iters, || reg.local_copy())?;
    let copy_gbps = 2.0 * chunk as f64 / copy.median_s / 1e9;
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
        host_link_gbps: link.map(|t| link_bytes as f64 / t.median_s / 1e9),
        host_link_bytes: link.map(|_| link_bytes),
        nccl_sendrecv_gbps: sendrecv.map(|t| chunk as f64 / t.median_s / 1e9),
    };
    let mut positions = vec![0, l / 2, l - 1];
    positions.dedup();
    let mut local_gates = Vec::new();
    for q in positions {
        let time = sample(s.warmup, s.iters, || {
            model.h(q);
            reg.local_h(q)
        })?;
        let gbps = 2.0 * chunk as f64 / time.median_s / 1e9;
        local_gates.push(LocalGate { qubit: q, time, gbps, of_copy: gbps / copy_gbps });
    }
    let mut checks = vec![Check {
        transport: None,
        amplitudes: layout.local_amps() * layout.ranks() as u64,
        wrong: reg.count_wrong(&model)?,
    }];
    let local_s = local_gates.iter().map(|g| g.time.median_s).sum::<f64>() / local_gates.len() as f64;
    let mut global_gates = Vec::new();
    let mut unavailable = Vec::new();
    for &wire in &s.wires {
        if let Some(reason) = reg.unavailable(wire) {
            unavailable.push(Unavailable { transport: wire, reason });
            continue;
        }
        model = ProductState::new(n);
        reg.init(&model)?;
        for &pattern in &s.patterns {
            for t in l..n {
                let (mut ex, mut up) = (Vec::new(), Vec::new());
                for i in 0..s.warmup + s.iters {
                    let e = reg.exchange(wire, pattern, t, s.fault)?;
                    let u = match pattern {
                        Pattern::Gate => {
                            model.h(t);
                            reg.combine(t)?
                        }
                        Pattern::Swap => {
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
                let (exchange, update) = (Stats::of(&ex), Stats::of(&up));
                let bytes = layout.message_bytes(pattern);
                global_gates.push(GlobalGate {
                    transport: wire,
                    pattern,
                    qubit: t,
                    bytes,
                    exchange,
                    update,
                    gbps_per_direction: bytes as f64 / exchange.median_s / 1e9,
                    vs_local: (exchange.median_s + update.median_s) / local_s,
                });
            }
        }
        checks.push(Check {
            transport: Some(wire),
            amplitudes: layout.local_amps() * layout.ranks() as u64,
            wrong: reg.count_wrong(&model)?,
        });
    }
    Ok(RegisterRun {
        qubits: n,
        local_qubits: l,
        ranks: layout.ranks(),
        precision: layout.precision,
        memory,
        chunk_bytes: chunk,
        references,
        local_gates,
        global_gates,
        checks,
        unavailable,
    })
}

pub fn run(args: &ExchangeArgs) -> Result<()> {
    let sizes = parse_qubits(&args.qubits)?;
    let wires = parse_wires(&args.transport, args.no_pipeline)?;
    let circuits = args.circuit.split(',').map(|c| Circuit::parse(c.trim())).collect::<Result<Vec<_>>>()?;
    let settings = Settings {
        patterns: parse_patterns(&args.pattern)?,
        wires: wires.clone(),
        iters: args.iters,
        warmup: args.warmup_iters,
        fault: Fault::from_env(),
    };
    let gpu_wires: Vec<Wire> = wires.iter().copied().filter(|w| w.on_gpu()).collect();
    let nccl = gpu_wires.contains(&Wire::Nccl);
    if !gpu_wires.is_empty() {
        // This may re-execute the process, so it comes before MPI starts.
        let mut needed = vec![Library::Driver, Library::Nvrtc];
        if nccl {
            needed.push(Library::Nccl);
        }
        libs::require(&needed)?;
    }
    let world = world::detect()?;
    let result = exchange(args, &sizes, &circuits, &settings, &gpu_wires, world.as_ref());
    world::conclude(world.as_ref(), result)
}

fn exchange(
    args: &ExchangeArgs,
    sizes: &[u32],
    circuits: &[Circuit],
    s: &Settings,
    gpu_wires: &[Wire],
    world: &dyn World,
) -> Result<()> {
    let ranks = world.size() * args.ngpus as usize;
    let main = world.rank() == 0;
    let mut out = ExchangeRun {
        header: crate::harness::record::RunHeader::start(SCHEMA),
        devices: Vec::new(),
        library: None,
        iters: s.iters,
        warmup_iters: s.warmup,
        registers: Vec::new(),
        verdict: None,
    };
    let print = |text: String| {
        if main && !args.out.json {
            print!("{text}");
        }
    };
    let mut gpu_memory = 0;
    for &n in sizes {
        let layout = Layout::new(n, ranks, args.precision)?;
        if !gpu_wires.is_empty() {
            let gs = Settings { wires: gpu_wires.to_vec(), ..clone_settings(s) };
            let mut reg =
                GpuRegister::new(layout, args.ngpus as usize, world, gs.wires.contains(&Wire::Nccl), args.chunk)?;
            if out.devices.is_empty() {
                out.devices = crate::harness::all_ranks(world, reg.ranks())?;
                out.library =
                    if gs.wires.contains(&Wire::Nccl) { Some(crate::transport::nccl::library_info()?) } else { None };
                gpu_memory = reg.gpu_memory().saturating_sub(1 << 30);
                print(crate::report::exchange::header(&out));
            }
            let r = measure(&mut reg, "gpu", &gs)?;
            print(crate::report::exchange::register(&r));
            out.registers.push(r);
        }
        if s.wires.contains(&Wire::Cpu) {
            if world.size() > 1 {
                return Err(Error::Usage(
                    "the cpu transport of exchange runs host ranks as threads: use -g, not mpirun".into(),
                ));
            }
            let cs = Settings { wires: vec![Wire::Cpu], ..clone_settings(s) };
            if let Some(reason) = does_not_fit(&layout) {
                let mut r = empty_run(&layout, "host");
                r.unavailable.push(Unavailable { transport: Wire::Cpu, reason });
                print(crate::report::exchange::register(&r));
                out.registers.push(r);
                continue;
            }
            let r = match args.precision {
                Precision::Single => measure(&mut CpuRegister::<f32>::new(layout)?, "host", &cs)?,
                Precision::Double => measure(&mut CpuRegister::<f64>::new(layout)?, "host", &cs)?,
            };
            print(crate::report::exchange::register(&r));
            out.registers.push(r);
        }
    }
    out.verdict = out
        .registers
        .iter()
        .rev()
        .find(|r| r.memory == "gpu" && !r.global_gates.is_empty())
        .and_then(|r| judge(r, gpu_memory, circuits));
    out.header.finish();
    if let Some(v) = &out.verdict {
        print(crate::report::exchange::verdict(v));
    }
    if main {
        if let Some(path) = &args.out.output_file {
            crate::report::json::write(&out, path)?;
        }
        if let Some(path) = &args.out.csv {
            crate::report::exchange::write_csv(&out, path)?;
        }
        if args.out.json {
            println!("{}", crate::report::json::to_string(&out)?);
        }
    }
    let wrong: u64 = out.registers.iter().map(RegisterRun::wrong).sum();
    if wrong > 0 {
        return Err(Error::CheckFailed(format!(
            "{wrong} amplitudes differ from the exact state: the exchange delivered the wrong data"
        )));
    }
    Ok(())
}

fn clone_settings(s: &Settings) -> Settings {
    Settings { patterns: s.patterns.clone(), wires: s.wires.clone(), iters: s.iters, warmup: s.warmup, fault: s.fault }
}

fn empty_run(layout: &Layout, memory: &'static str) -> RegisterRun {
    RegisterRun {
        qubits: layout.qubits,
        local_qubits: layout.local_qubits(),
        ranks: layout.ranks(),
        precision: layout.precision,
        memory,
        chunk_bytes: layout.chunk_bytes(),
        references: References::default(),
        local_gates: Vec::new(),
        global_gates: Vec::new(),
        checks: Vec::new(),
        unavailable: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_arguments() {
        assert_eq!(parse_qubits("33").unwrap(), vec![33]);
        assert_eq!(parse_qubits("20..23").unwrap(), vec![20, 21, 22, 23]);
        assert_eq!(parse_qubits("20-21").unwrap(), vec![20, 21]);
        assert!(parse_qubits("23..20").is_err() && parse_qubits("x").is_err());
        assert_eq!(parse_wires("host", true).unwrap(), vec![Wire::HostUnpipelined]);
        assert_eq!(parse_wires("all", false).unwrap().len(), 5);
        assert_eq!(parse_wires("all,cpu", false).unwrap().len(), 6);
        assert_eq!(parse_wires("nccl,p2p,nccl", false).unwrap(), vec![Wire::Nccl, Wire::P2p]);
        assert!(parse_wires("rdma", false).is_err());
        assert!(parse_patterns("both").unwrap().len() == 2 && parse_patterns("x").is_err());
    }
}
