//! Each kind of step as the check runs it: the workload's plan made from
//! the step, the workload run in the check's session with nobody watching,
//! and the figure the step judges read from its record. Wrong data is a
//! FAIL whatever the figure; a workload that cannot run here is a FAIL too,
//! marked missing when the hardware it needs is absent.

use super::judge::bound;
use super::profile::{Kind, Profile, Step};
use crate::error::{Error, Result};
use crate::output::OutputPlan;
use crate::record::check::{Row, Status};
use crate::record::collective::{Average, Config, TransportKind};
use crate::record::copy::Status as CopyStatus;
use crate::record::{Outcome, Quiet};
use crate::session::Session;
use crate::statevec::layout::{Pattern, Precision};
use crate::units::Step as Sweep;

/// One figure of a step on one node.
struct Figure {
    /// Where on the node, for copies: "GPU 0".
    place: Option<String>,
    value: f64,
    wrong: u64,
}

fn unit(step: &Step) -> &'static str {
    match step.metric.as_str() {
        "time_us" | "latency_us" => "us",
        "local_of_copy" => "",
        "busbw" | "algbw" | "gbps" | "gbps_per_direction" | "local_gbps" => "GB/s",
        "gbits" => "Gb/s",
        _ => "",
    }
}

fn row(step: &Step, node: &str, found: String, status: Status, fix: String) -> Row {
    Row {
        step: step.name.clone(),
        place: None,
        kind: format!("{:?}", step.kind).to_lowercase(),
        node: node.into(),
        found,
        measured: None,
        unit: unit(step).into(),
        expected: step.expected,
        floor: None,
        ceiling: step.ceiling,
        ratio: None,
        baseline: None,
        vs_baseline: None,
        status,
        fix,
        attempts: 1,
        missing: false,
    }
}

/// The row of a step that did not run.
pub fn skipped(step: &Step, node: &str, why: &str) -> Row {
    row(step, node, why.into(), Status::Skip, String::new())
}

/// What an error that stopped a step means for its row.
fn failed(step: &Step, node: &str, e: &Error) -> Row {
    let missing = matches!(e, Error::Missing(_) | Error::Usage(_));
    let mut r = row(step, node, e.message(), Status::Fail, step.fix.clone().unwrap_or_default());
    if missing {
        r.fix = "the hardware or library the step needs is not here: check the node against the profile's facts".into();
    }
    r.missing = missing;
    r
}

/// Runs a step on this process: its rows (none where another process
/// speaks for the step). `short_of_gpus`: this node has fewer GPUs than the
/// profile's facts want, so that no GPU step is measured against figures of
/// a machine it is not (they are FAILs of missing hardware instead).
pub fn run(step: &Step, profile: &Profile, session: &Session, node: &str, short_of_gpus: bool) -> Result<Vec<Row>> {
    let world = session.world();
    let across = matches!(step.kind, Kind::Collective | Kind::Exchange);
    if matches!(step.kind, Kind::Copy | Kind::Rdma) && world.local_rank() != 0 {
        // One copy or adapter run a node: the others would measure each other.
        return Ok(Vec::new());
    }
    if step.kind == Kind::Pairs && world.size() < 2 {
        return Ok(if world.rank() == 0 {
            vec![skipped(step, node, "one process: no pair of nodes to test (run under mpirun or srun)")]
        } else {
            Vec::new()
        });
    }
    let name = if across && world.size() > 1 { "all" } else { node };
    let uses_gpus = !matches!(step.kind, Kind::Pairs | Kind::Rdma) && step.transport.as_deref() != Some("cpu");
    if uses_gpus && if across { super::any(session, short_of_gpus) } else { short_of_gpus } {
        let mut r = row(
            step,
            name,
            "not run: fewer GPUs than the profile's facts want (fact: gpu count)".into(),
            Status::Fail,
            "a GPU is missing, or this is not the profile of this node: check nvidia-smi, or name the right --profile"
                .into(),
        );
        r.missing = true;
        return Ok(if across && world.rank() != 0 { Vec::new() } else { vec![r] });
    }
    let mut attempts: u32 = 0;
    loop {
        attempts += 1;
        let figures = match measure(step, session) {
            Ok(f) => f,
            Err(e) if e.is_interruption() => return Err(e),
            Err(e) => {
                let mut r = failed(step, name, &e);
                r.attempts = attempts;
                return Ok(if across && world.rank() != 0 { Vec::new() } else { vec![r] });
            }
        };
        let rows: Vec<Row> = figures.iter().map(|f| judged(step, profile, name, f, attempts)).collect();
        let failing = rows.iter().any(|r| r.status == Status::Fail);
        // A retry of a step across processes is rank 0's decision for all.
        let again = attempts <= step.retries && if across { super::agree(session, failing) } else { failing };
        if !again {
            return Ok(if across && world.rank() != 0 { Vec::new() } else { rows });
        }
    }
}

fn judged(step: &Step, profile: &Profile, node: &str, f: &Figure, attempts: u32) -> Row {
    let floor = step.floor(&profile.profile);
    let mut status = bound(f.value, floor, step.ceiling, profile.profile.warn);
    let mut found = match &f.place {
        Some(p) => format!("{p}: {:.3} {}", f.value, unit(step)),
        None => format!("{:.3} {}", f.value, unit(step)),
    };
    if f.wrong > 0 {
        status = Status::Fail;
        found = format!("{found}, {} wrong (the data delivered is not what was sent)", f.wrong);
    }
    let mut r = row(step, node, found, status, String::new());
    if status != Status::Pass {
        r.fix = step.fix.clone().unwrap_or_else(|| "below what a ready node of this kind measures".into());
    }
    r.place = f.place.clone();
    r.measured = Some(f.value);
    r.floor = floor;
    r.ratio = step.expected.map(|e| f.value / e);
    r.attempts = attempts;
    r
}

/// The workload's outcome as a result: its record, or the error that stopped it.
fn done<R>(o: Outcome<R>) -> Result<R> {
    match o.error {
        Some(e) => Err(e),
        None => Ok(o.record),
    }
}

fn measure(step: &Step, session: &Session) -> Result<Vec<Figure>> {
    match step.kind {
        Kind::Collective => collective(step, session),
        Kind::Copy => copy(step, session),
        Kind::Exchange => exchange(step, session),
        Kind::Pairs => pairs(step, session),
        Kind::Rdma => rdma(step, session),
    }
}

/// GPUs (or host ranks) per process: host ranks under MPI are one a process.
fn per_process(step: &Step, session: &Session, cpu: bool) -> usize {
    if cpu && session.world().size() > 1 { 1 } else { step.gpus.unwrap_or(1) }
}

fn collective(step: &Step, session: &Session) -> Result<Vec<Figure>> {
    let kind = crate::workload::collective::Kind::from_command(step.collective.as_deref().unwrap_or(""))
        .ok_or_else(|| Error::Usage(format!("step '{}': unknown collective", step.name)))?;
    let cpu = step.transport.as_deref() == Some("cpu");
    let g = per_process(step, session, cpu);
    let size = step.bytes()?.unwrap_or(1 << 20);
    let config = Config {
        nranks: g,
        nthreads: 1,
        ngpus: g,
        minbytes: size,
        maxbytes: size,
        step: Sweep::Bytes(0),
        warmup_iters: 5,
        iters: step.iters.unwrap_or(20),
        agg_iters: 1,
        run_cycles: 1,
        check: 1,
        cudagraph: 0,
        average: Average::Mean,
        timeout_s: 120,
        datatypes: vec![crate::dtype::DataType::Float],
        ops: vec![crate::dtype::RedOp::Sum],
        root: 0,
        seed: crate::pattern::DEFAULT_SEED,
    };
    let transport = if cpu { TransportKind::Cpu } else { TransportKind::Nccl };
    let mut plan =
        crate::workload::collective::plan::CollectivePlan::new(kind, transport, config, OutputPlan::default())?;
    (plan.fault, plan.min_bw) = (None, None);
    let run = done(crate::harness::run(&plan, session, &mut Quiet))?;
    let r = run.results.first().ok_or_else(|| Error::Runtime("the collective measured no size".into()))?;
    let c = &r.out_of_place;
    let value = match step.metric.as_str() {
        "busbw" => c.busbw_gbps,
        "algbw" => c.algbw_gbps,
        _ => c.time_us,
    };
    Ok(vec![Figure { place: None, value, wrong: run.wrong_elements }])
}

fn copy(step: &Step, session: &Session) -> Result<Vec<Figure>> {
    let size = step.bytes()?.unwrap_or(1 << 30);
    let options = crate::workload::copy::CopyOptions {
        tests: step.test.clone().unwrap_or_default(),
        minbytes: size,
        maxbytes: size,
        stepfactor: 2,
        iters: step.iters.unwrap_or(10),
        warmup_iters: 3,
        samples: 5,
        lat_iters: 200,
        ngpus: None,
        seed: crate::pattern::DEFAULT_SEED,
    };
    let plan = crate::workload::copy::CopyPlan::new(&options, OutputPlan::default())?;
    let run = done(crate::workload::copy::run(&plan, session, &mut Quiet))?;
    let t = run.tests.first().ok_or_else(|| Error::Runtime("the copy test did not run".into()))?;
    if t.status == CopyStatus::Unavailable {
        return Err(Error::Missing(format!(
            "{}: {}",
            t.reason.clone().unwrap_or_default(),
            t.fix.clone().unwrap_or_default()
        )));
    }
    let mut out: Vec<Figure> = t
        .rows
        .iter()
        .filter(|r| r.size == size)
        .map(|r| Figure { place: Some(r.placement.clone()), value: r.total_gbps.median, wrong: r.wrong_words })
        .collect();
    for s in &t.latency {
        if let Some(r) = s.rows.iter().find(|r| r.size == size) {
            out.push(Figure { place: Some(s.placement.clone()), value: r.host.median, wrong: r.wrong_words });
        }
    }
    if out.is_empty() {
        return Err(Error::Usage(format!("{} measured no row of {size} bytes", t.name)));
    }
    Ok(out)
}

fn exchange(step: &Step, session: &Session) -> Result<Vec<Figure>> {
    let wire = step.transport.clone().unwrap_or_else(|| "nccl".into());
    let cpu = wire == "cpu";
    let g = per_process(step, session, cpu);
    let ranks = session.world().size() * g;
    if !ranks.is_power_of_two() {
        return Err(Error::Usage(format!("{ranks} ranks: a register spreads over a power of two")));
    }
    let wires = crate::workload::exchange::plan::parse_wires(&wire, false)?;
    let plan = crate::workload::exchange::plan::ExchangePlan {
        qubits: vec![step.qubits.unwrap_or(24)],
        ngpus: g,
        precision: Precision::Double,
        patterns: vec![Pattern::Gate],
        memories: crate::workload::exchange::plan::memories(&wires, None)?,
        wires,
        chunk: None,
        iters: step.iters.unwrap_or(5),
        warmup: 1,
        circuits: Vec::new(),
        fault: None,
        output: OutputPlan::default(),
    };
    let run = done(crate::workload::exchange::run::run(&plan, session, &mut Quiet))?;
    let r = run
        .registers
        .iter()
        .find(|r| r.ranks == ranks)
        .ok_or_else(|| Error::Runtime("the exchange measured no register".into()))?;
    if let (Some(u), "gbps_per_direction") = (r.unavailable.first(), step.metric.as_str()) {
        return Err(Error::Missing(format!("{}: {}", u.transport, u.reason)));
    }
    let min = |it: &mut dyn Iterator<Item = f64>| it.fold(f64::INFINITY, f64::min);
    let value = match step.metric.as_str() {
        "gbps_per_direction" => {
            min(&mut r.global_gates.iter().filter(|g| g.transport == wire).map(|g| g.gbps_per_direction))
        }
        "local_of_copy" => min(&mut r.local_gates.iter().map(|g| g.of_copy)),
        _ => min(&mut r.local_gates.iter().map(|g| g.gbps)),
    };
    if !value.is_finite() {
        return Err(Error::Usage(format!("{} ranks measured no {} over {wire}", r.ranks, step.metric)));
    }
    Ok(vec![Figure { place: None, value, wrong: r.wrong() }])
}

/// The step's test between every pair of this node's adapters, with host
/// memory, run as `qbench rdma --loopback --test T [-s SIZE] [-n ITERS]`
/// would run it (its options parsed by the same code): a figure a pair.
fn rdma(step: &Step, session: &Session) -> Result<Vec<Figure>> {
    use crate::record::rdma::Row as RdmaRow;
    let test = step.test.clone().unwrap_or_default();
    let mut args = vec!["qbench".to_string(), "rdma".into(), "--loopback".into(), "--test".into(), test];
    if let Some(s) = &step.size {
        args.extend(["-s".into(), s.clone()]);
    }
    if let Some(n) = step.iters {
        args.extend(["-n".into(), n.to_string()]);
    }
    let cli = <crate::cli::Cli as clap::Parser>::try_parse_from(&args)
        .map_err(|e| Error::Usage(format!("step '{}': {}", step.name, e.to_string().lines().next().unwrap_or(""))))?;
    let crate::cli::Command::Rdma(a) = cli.command else {
        return Err(Error::Runtime("internal: an rdma step parsed as another command".into()));
    };
    let run = done(crate::rdma::run(&a.plan()?, session, &mut Quiet))?;
    let figures: Vec<Figure> = run
        .rows
        .iter()
        .map(|r| {
            let l = &run.links[r.link];
            let value = match r.row {
                RdmaRow::Bw(b) => b.bw_avg_bytes_per_s * 8.0 / 1e9,
                RdmaRow::Lat(t) => t.t_typical_us,
            };
            let place = format!("{}→{}", l.local.device, l.remote.device);
            Figure { place: Some(place), value, wrong: r.row.data().wrong_bytes }
        })
        .collect();
    if figures.is_empty() {
        return Err(Error::Runtime("the rdma test measured no row".into()));
    }
    Ok(figures)
}

/// `me`'s partner in pairing `round` of `n` processes: 2i with 2i+1, then
/// (round 1) 2i+1 with 2i+2, wrapping; None for the one left over.
fn partner(me: usize, n: usize, round: usize) -> Option<usize> {
    let shifted = (me + n - round % n) % n;
    let other = if shifted.is_multiple_of(2) { shifted + 1 } else { shifted - 1 };
    (other < n && other != shifted).then_some((other + round) % n).filter(|&p| p != me)
}

/// Every process sends `size` bytes to a partner and receives as many, in
/// two pairings (2i with 2i+1, then 2i+1 with 2i+2): a node slow in every
/// pair it was in is the slow one. Each process's figure is its best pair.
fn pairs(step: &Step, session: &Session) -> Result<Vec<Figure>> {
    let world = session.world();
    let (n, me) = (world.size(), world.rank());
    let size = step.bytes()?.unwrap_or(1 << 20) as usize;
    let iters = step.iters.unwrap_or(20).max(1);
    let send: Vec<u8> = (0..size).map(|i| crate::pattern::mix(i as u64) as u8).collect();
    let mut recv = vec![0u8; size];
    let mut best: Option<(f64, usize)> = None;
    let mut wrong = 0;
    for round in 0..2 {
        world.barrier();
        let Some(partner) = partner(me, n, round) else { continue };
        // One untimed exchange first: the connection is set up on first use.
        world.sendrecv(partner, &send, &mut recv)?;
        let t0 = std::time::Instant::now();
        for _ in 0..iters {
            world.sendrecv(partner, &send, &mut recv)?;
        }
        let gbps = (size as f64 * iters as f64) / t0.elapsed().as_secs_f64() / 1e9;
        wrong += recv.iter().zip(&send).filter(|(a, b)| a != b).count() as u64;
        if best.is_none_or(|(b, _)| gbps > b) {
            best = Some((gbps, partner));
        }
    }
    let (value, with) = best.unwrap_or((0.0, me));
    Ok(vec![Figure { place: Some(format!("rank {me} with {with}")), value, wrong }])
}

#[cfg(test)]
mod tests {
    use super::partner;

    #[test]
    fn pairings_are_symmetric_and_re_pair_every_node() {
        for n in 2..9 {
            for round in 0..2 {
                for me in 0..n {
                    if let Some(p) = partner(me, n, round) {
                        assert_eq!(partner(p, n, round), Some(me), "n {n} round {round} rank {me}");
                    }
                }
            }
        }
        assert_eq!((partner(0, 4, 0), partner(1, 4, 1), partner(3, 4, 1)), (Some(1), Some(2), Some(0)));
        assert_eq!(partner(2, 3, 0), None);
    }
}
