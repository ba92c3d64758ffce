//! Answers for hardware a user does not have: for a register size and each
//! count of GPUs, schedule and wire asked for, whether the register fits
//! (the state and each simulator's exchange buffer: QuEST keeps one as
//! large as the chunk, the swap schedule needs half of one) and what each
//! circuit would cost, priced by the model (`model/`) from measured runs or
//! a profile's machine figures; each count held against the fastest of all
//! counts, the answer said in one line, and the settings each simulator
//! needs for it. Every figure here is projected and names where it came from.

use super::decision::simulator_spread;
use super::model::{self, Level, Machine, Placement, Unpriced, WireFigures, settings};
use crate::error::Result;
use crate::record::exchange::{Forecast, PlanAnswer, Share, noun};
use crate::statevec::circuit::{Circuit, Gate};
use crate::statevec::spec::CircuitSpec;
use crate::statevec::layout::{Layout, Precision};
use crate::statevec::schedule::{Schedule, compile};
use crate::units::human_bytes;

/// Bytes one GPU holds for a register of `layout` under a schedule: the
/// chunk, and QuEST's exchange buffer as large (the swap schedule half of
/// one); nothing more on one GPU.
pub fn bytes_per_gpu(layout: &Layout, schedule: Option<Schedule>) -> u64 {
    let chunk = layout.chunk_bytes();
    match (layout.ranks(), schedule) {
        (1, _) | (_, None) => chunk,
        (_, Some(Schedule::Quest)) => 2 * chunk,
        (_, Some(Schedule::Swap)) => chunk + chunk / 2,
    }
}

/// What a plan is asked for.
#[derive(Debug, Clone)]
pub struct Ask<'a> {
    pub qubits: u32,
    /// Ranks to spread over.
    pub gpus: &'a [usize],
    pub precision: Precision,
    pub circuits: &'a [CircuitSpec],
    pub schedules: &'a [Schedule],
    /// The wires to price; empty: every wire the machine has figures for.
    pub wires: &'a [String],
    /// Ranks on each device (processes sharing a GPU): 1 but for a test of
    /// the model on one GPU.
    pub sharing: usize,
    /// GPUs in a node (host ranks in a node), over the machine's figure.
    pub per_node: Option<usize>,
    /// `--simulator-time`: a simulator's one-GPU seconds, per circuit name.
    pub simulator_s: &'a [(String, f64)],
}

/// The circuit with its qubits renamed so that the ones used most as
/// targets sit lowest: local first, then on the rank bits of the nearest
/// level. cuStateVec's index-bit swaps and CUDA-Q's global index bits let
/// a simulator choose so; QuEST keeps the user's order, so the quest
/// schedule does too.
fn placed(c: &Circuit) -> Circuit {
    let mut uses = vec![0usize; c.qubits as usize];
    for g in &c.gates {
        if let Some(t) = g.target() {
            uses[t as usize] += 1;
        }
    }
    let mut order: Vec<u32> = (0..c.qubits).collect();
    order.sort_by_key(|&q| std::cmp::Reverse(uses[q as usize]));
    let mut at = vec![0u32; c.qubits as usize];
    for (pos, &q) in order.iter().enumerate() {
        at[q as usize] = pos as u32;
    }
    let to = |q: &u32| at[*q as usize];
    let gates = c
        .gates
        .iter()
        .map(|g| match g {
            Gate::H(q) => Gate::H(to(q)),
            Gate::U { q, m } => Gate::U { q: to(q), m: *m },
            Gate::Phase { qubits, phase } => Gate::Phase { qubits: qubits.iter().map(to).collect(), phase: *phase },
            Gate::Swap(a, b) => Gate::Swap(to(a), to(b)),
            Gate::Cx { c, t } => Gate::Cx { c: to(c), t: to(t) },
        })
        .collect();
    Circuit { gates, end: None, ..c.clone() }
}

/// One row of the plan before it is held against the others.
struct Row {
    gpus: usize,
    schedule: Option<Schedule>,
    wire: Option<String>,
    at: Placement,
    nodes: usize,
    fits: bool,
    /// Bytes a device holds, and a node.
    bytes: u64,
    node_bytes: u64,
    price: std::result::Result<model::Price, String>,
}

/// What must fit in memory, and whose: a node's bytes for host ranks, which
/// share it, else a GPU's own.
fn held(m: &Machine, bytes: u64, node_bytes: u64) -> (&'static str, u64) {
    if m.host { ("node", node_bytes) } else { ("GPU", bytes) }
}

/// Whether `bytes` fit the machine's memory with 1 GiB to spare (the
/// runtime's own, and the simulator's other buffers).
fn fits(m: &Machine, bytes: u64) -> bool {
    bytes.saturating_add(1 << 30) <= m.gpu_memory
}

/// A wire asked for, and its figures when the machine has them.
type Asked<'m> = (String, Option<&'m WireFigures>);

/// Where `g` ranks run, and on how many nodes: GPUs fill nodes of the
/// machine's count (or `--gpus-per-node`); host ranks are threads of one
/// process on one node (or `--gpus-per-node` processes a node, as under
/// mpirun), which past the node's cores share them.
fn place(layout: Layout, g: usize, ask: &Ask, m: &Machine) -> (Placement, usize) {
    let (sharing, per_node, threads) = if m.host {
        let ranks = ask.per_node.unwrap_or(g).clamp(1, g);
        let sharing = ask.sharing.max(ranks.div_ceil(m.gpus_per_node.max(1))).clamp(1, ranks);
        (sharing, ranks.div_ceil(sharing), if ask.per_node.is_some() { 1 } else { g })
    } else {
        (ask.sharing.clamp(1, g), ask.per_node.unwrap_or(m.gpus_per_node), 1)
    };
    let devices = g.div_ceil(sharing);
    let at = Placement { layout, sharing, devices_per_node: per_node.min(devices).max(1), threads };
    (at, devices.div_ceil(at.devices_per_node))
}

/// Every row of one circuit: one per count, and per schedule and wire
/// where the register is spread; a wire the user did not name is left out
/// of a count whose level it does not reach, and said in `left_out`.
fn rows(c: &Circuit, ask: &Ask, m: &Machine, left_out: &mut Vec<String>) -> Result<Vec<Row>> {
    let wires: Vec<Asked> = if ask.wires.is_empty() {
        m.wires.iter().map(|w| (w.name.clone(), Some(w))).collect()
    } else {
        ask.wires.iter().map(|w| (w.clone(), m.wire(w))).collect()
    };
    let swapped = placed(c);
    let mut out = Vec::new();
    for &g in ask.gpus {
        let layout = Layout::new(ask.qubits, g, ask.precision)?;
        let (at, nodes) = place(layout, g, ask, m);
        let sharing = at.sharing;
        let each: Vec<(Option<Schedule>, Option<&Asked>)> = if g == 1 {
            vec![(None, None)]
        } else {
            ask.schedules.iter().flat_map(|&s| wires.iter().map(move |w| (Some(s), Some(w)))).collect()
        };
        for (schedule, wire) in each {
            let bytes = bytes_per_gpu(&layout, schedule) * sharing as u64;
            let node_bytes = bytes * at.devices_per_node as u64;
            let fits = fits(m, held(m, bytes, node_bytes).1);
            let circuit = if schedule == Some(Schedule::Swap) { &swapped } else { c };
            let steps = compile(circuit, &layout, schedule.unwrap_or(Schedule::Quest));
            let price = match wire {
                Some((name, None)) => Err(format!("no figure for {name} in the source")),
                Some((_, Some(w))) => match model::price(&steps, &at, m, Some(w)) {
                    Err(e @ Unpriced::NoWire { .. }) if ask.wires.is_empty() => {
                        let why = format!("{} from {g} {} ({})", w.name, noun(m.host, g), e.describe());
                        if !left_out.iter().any(|l| l.starts_with(&format!("{} from", w.name))) {
                            left_out.push(why);
                        }
                        continue;
                    }
                    p => p.map_err(|e| e.describe()),
                },
                None => model::price(&steps, &at, m, None).map_err(|e| e.describe()),
            };
            out.push(Row { gpus: g, schedule, wire: wire.map(|w| w.0.clone()), at, nodes, fits, bytes, node_bytes, price });
        }
    }
    Ok(out)
}

/// The forecast rows of every circuit, and each circuit's answer.
pub fn forecast(ask: &Ask, m: &Machine) -> Result<(Vec<Forecast>, Vec<PlanAnswer>)> {
    let mut forecasts = Vec::new();
    let mut answers = Vec::new();
    for spec in ask.circuits {
        let c = spec.build(ask.qubits)?;
        // What every count is held against, whether or not -g names it: one
        // rank, and the fastest of the counts asked.
        let mut left_out = Vec::new();
        let one = rows(&c, &Ask { gpus: &[1], ..ask.clone() }, m, &mut left_out)?
            .into_iter()
            .find(|r| r.fits)
            .and_then(|r| r.price.ok())
            .map(|p| p.seconds);
        let rows = rows(&c, ask, m, &mut left_out)?;
        let seconds = |r: &Row| r.price.as_ref().ok().filter(|_| r.fits).map(|p| p.seconds);
        let simulator = ask.simulator_s.iter().find(|(name, _)| *name == spec.name()).map(|&(_, s)| s);
        let best = rows.iter().filter_map(seconds).fold(f64::INFINITY, f64::min);
        let best = best.is_finite().then_some(best);
        let fc: Vec<Forecast> = rows
            .iter()
            .map(|r| {
                let t = seconds(r);
                let verdict = match (&r.price, r.fits, t, best) {
                    (_, false, _, _) => {
                        let (what, held) = held(m, r.bytes, r.node_bytes);
                        format!("does not fit: a {what} would hold {} of its {}", human_bytes(held), human_bytes(m.gpu_memory))
                    }
                    (Err(why), ..) => why.clone(),
                    (Ok(_), true, Some(t), Some(b)) if t <= b => "fastest".into(),
                    (Ok(_), true, Some(t), Some(b)) => format!("×{:.2} the fastest", t / b),
                    _ => String::new(),
                };
                let price = r.price.as_ref().ok().filter(|_| r.fits);
                Forecast {
                    circuit: spec.name(),
                    qubits: ask.qubits,
                    gpus: r.gpus,
                    precision: ask.precision,
                    sharing: r.at.sharing,
                    nodes: r.nodes,
                    schedule: r.schedule,
                    transport: r.wire.clone(),
                    bytes_per_gpu: r.bytes,
                    bytes_per_node: r.node_bytes,
                    fits: r.fits,
                    projected_s: t,
                    terms: price
                        .map(|p| p.terms.iter().map(|(n, s)| Share { name: n.to_string(), seconds: *s }).collect())
                        .unwrap_or_default(),
                    levels: price
                        .map(|p| p.levels.iter().map(|(l, s)| Share { name: l.name().into(), seconds: *s }).collect())
                        .unwrap_or_default(),
                    vs_best: t.zip(best).map(|(t, b)| t / b),
                    speedup: t.zip(one).filter(|_| r.gpus > 1).map(|(t, o)| o / t),
                    simulator_s: simulator.zip(one).zip(price).map(|((s, o), p)| for_simulator(s, o, p)),
                    verdict,
                    source: m.source.clone(),
                }
            })
            .collect();
        let mut a = answer(&c, ask, &fc, m);
        a.left_out = left_out;
        answers.push(a);
        forecasts.extend(fc);
    }
    Ok((forecasts, answers))
}

/// A simulator's time for a priced row, given its one-GPU seconds `s` and
/// the plan's own one-GPU price `one`, by the measured verdict's rule.
fn for_simulator(s: f64, one: f64, p: &model::Price) -> f64 {
    let exchanging: f64 = p.levels.iter().map(|(_, t)| t).sum();
    simulator_spread(s, one, p.seconds - exchanging, exchanging)
}

/// The fastest row of each count that has a price.
fn best_per_count(rows: &[Forecast]) -> Vec<&Forecast> {
    let mut counts: Vec<usize> = rows.iter().map(|r| r.gpus).collect();
    counts.sort_unstable();
    counts.dedup();
    counts
        .into_iter()
        .filter_map(|g| {
            rows.iter()
                .filter(|r| r.gpus == g && r.projected_s.is_some())
                .min_by(|a, b| a.projected_s.unwrap_or(f64::MAX).total_cmp(&b.projected_s.unwrap_or(f64::MAX)))
        })
        .collect()
}

/// The share of a row's time spent across nodes.
fn fabric_share(r: &Forecast) -> f64 {
    let fabric: f64 = r.levels.iter().filter(|l| l.name == Level::Fabric.name()).map(|l| l.seconds).sum();
    r.projected_s.map_or(0.0, |t| fabric / t)
}

/// What the answer's prices leave out: the machine's unknowns, and for
/// host ranks planned as processes from records of threads alone, MPI's
/// latency per message.
fn unknown(ask: &Ask, m: &Machine) -> Vec<String> {
    let mut out = m.unknown.clone();
    if m.host && ask.per_node.is_some() && !m.processes_measured && ask.gpus.iter().any(|&g| g > 1) {
        out.push(
            "a message's latency between processes (MPI): the records ran no ranks in several processes, so each exchange is priced as a copy in memory; a record of two processes has it".into(),
        );
    }
    out
}

/// One circuit's answer: the count to run on, in one line, with settings.
fn answer(c: &Circuit, ask: &Ask, rows: &[Forecast], m: &Machine) -> PlanAnswer {
    let name = format!("{}({})", c.name, ask.qubits);
    let counts = best_per_count(rows);
    let fastest = counts.iter().min_by(|a, b| a.projected_s.unwrap_or(0.0).total_cmp(&b.projected_s.unwrap_or(0.0)));
    let one = counts.iter().find(|r| r.gpus == 1);
    let mut parts: Vec<String> = Vec::new();
    match (fastest, one) {
        (None, _) => {
            let largest = rows.iter().map(|r| r.gpus).max().unwrap_or(1);
            parts.push(format!("{name} fits on none of these counts (up to {largest}): plan more {}", noun(m.host, 2)));
        }
        (Some(f), Some(o)) if f.gpus == 1 => {
            let next = counts.iter().find(|r| r.gpus > 1);
            parts.push(match next {
                Some(n) => format!(
                    "spreading {name} does not pay: one {} is fastest, {} {} take ×{:.2} as long",
                    noun(m.host, 1),
                    n.gpus,
                    noun(m.host, n.gpus),
                    n.projected_s.unwrap_or(0.0) / o.projected_s.unwrap_or(1.0)
                ),
                None => format!("{name} runs on one {}", noun(m.host, 1)),
            });
        }
        (Some(f), one) => {
            let first_paying = counts.iter().find(|r| {
                r.gpus > 1
                    && one.is_none_or(|o| r.projected_s.unwrap_or(f64::MAX) * 1.05 < o.projected_s.unwrap_or(0.0))
            });
            match (one, first_paying) {
                (Some(_), Some(p)) => parts.push(format!("spreading {name} pays from {} {}", p.gpus, noun(m.host, p.gpus))),
                (None, _) => {
                    let least = counts.first().map_or(f.gpus, |r| r.gpus);
                    let whole = Layout::new(ask.qubits, 1, ask.precision).map_or(u64::MAX, |l| l.chunk_bytes());
                    parts.push(match fits(m, whole) {
                        true => format!("one {} holds {name} but was not asked for (add 1 to -g to compare)", noun(m.host, 1)),
                        false if rows.iter().any(|r| r.gpus == least / 2 && !r.fits) => {
                            format!("{name} needs at least {least} {} for its memory", noun(m.host, least))
                        }
                        false => format!("{name} does not fit one {}; {least} is the fewest asked for", noun(m.host, 1)),
                    });
                }
                _ => {}
            }
            if let Some(prev) = counts.iter().rev().find(|r| r.gpus < f.gpus && r.gpus > 1) {
                parts.push(format!(
                    "{} is ×{:.2} faster than {}",
                    f.gpus,
                    prev.projected_s.unwrap_or(0.0) / f.projected_s.unwrap_or(1.0),
                    prev.gpus
                ));
            }
            if let Some(more) = counts.iter().find(|r| r.gpus > f.gpus) {
                let why = if fabric_share(more) > 0.5 {
                    format!("past {} the fabric takes {:.0}% of the time", f.gpus, 100.0 * fabric_share(more))
                } else {
                    format!(
                        "{} take ×{:.2} as long",
                        more.gpus,
                        more.projected_s.unwrap_or(0.0) / f.projected_s.unwrap_or(1.0)
                    )
                };
                parts.push(why);
            }
        }
    }
    let best = fastest.copied();
    PlanAnswer {
        circuit: c.name.clone(),
        qubits: ask.qubits,
        precision: ask.precision,
        gpus: best.map(|b| b.gpus),
        schedule: best.and_then(|b| b.schedule),
        transport: best.and_then(|b| b.transport.clone()),
        answer: parts.join("; "),
        unknown: unknown(ask, m),
        left_out: Vec::new(),
        settings: best.map(|b| settings::all(b, m)).unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::exchange::model::{LevelRate, Rate};

    fn h200() -> Machine {
        let node = LevelRate { level: Level::Node, rate: Rate { alpha_s: 20e-6, gbps: 370.0 }, sharing: 1, ceiling_gbps: None };
        let fabric = LevelRate { level: Level::Fabric, rate: Rate { alpha_s: 25e-6, gbps: 45.0 }, sharing: 1, ceiling_gbps: None };
        Machine {
            source: "test".into(),
            gpu_memory: 141_000_000_000,
            gpus_per_node: 8,
            host: false,
            local: Rate { alpha_s: 10e-6, gbps: 4200.0 },
            step_s: 10e-6,
            dispatch: Vec::new(),
            processes_measured: false,
            unknown: Vec::new(),
            wires: vec![WireFigures {
                name: "nccl".into(),
                levels: vec![node, fabric],
                piece_amps: Some(1 << 28),
                overlaps: false,
            }],
            tables: Vec::new(),
        }
    }

    fn ask<'a>(qubits: u32, gpus: &'a [usize], precision: Precision, circuits: &'a [CircuitSpec]) -> Ask<'a> {
        let schedules = &Schedule::ALL;
        Ask { qubits, gpus, precision, circuits, schedules, wires: &[], sharing: 1, per_node: None, simulator_s: &[] }
    }

    #[test]
    fn ranks_fill_nodes_of_the_machine_or_of_the_option() {
        let layout = Layout::new(20, 8, Precision::Double).unwrap();
        let q: Vec<CircuitSpec> = Vec::new();
        let placed = |a: &Ask, m: &Machine, g| {
            let (at, nodes) = place(layout, g, a, m);
            (at.sharing, at.devices_per_node, nodes)
        };
        let gpu = h200();
        assert_eq!(placed(&ask(20, &[8], Precision::Double, &q), &gpu, 8), (1, 8, 1));
        assert_eq!(placed(&Ask { per_node: Some(2), ..ask(20, &[8], Precision::Double, &q) }, &gpu, 8), (1, 2, 4));
        // Host ranks on a node of 2 cores: threads of one process take
        // turns past the cores, unless they are spread a node each.
        let host = Machine { host: true, gpus_per_node: 2, ..h200() };
        assert_eq!(placed(&ask(20, &[4], Precision::Double, &q), &host, 4), (2, 2, 1));
        assert_eq!(placed(&Ask { per_node: Some(1), ..ask(20, &[4], Precision::Double, &q) }, &host, 4), (1, 1, 4));
        assert_eq!(placed(&Ask { per_node: Some(4), ..ask(20, &[8], Precision::Double, &q) }, &host, 8), (2, 2, 2));
    }

    /// A node of 2 cores and 24 GiB: one rank holds a 30-qubit register
    /// (16 GiB); 2 ranks hold it with QuEST's receive buffers (32 GiB), which
    /// the node's memory must hold however the ranks divide it.
    #[test]
    fn host_ranks_hold_the_node_memory_together() {
        let q = [CircuitSpec::Qft];
        let host = Machine { host: true, gpus_per_node: 2, gpu_memory: 24 << 30, wires: Vec::new(), ..h200() };
        let wires = ["cpu".to_string()];
        let (rows, answers) =
            forecast(&Ask { wires: &wires, ..ask(30, &[1, 2, 4], Precision::Double, &q) }, &host).unwrap();
        let fits: Vec<(usize, bool, u64)> = rows.iter().map(|r| (r.gpus, r.fits, r.bytes_per_node)).collect();
        assert_eq!(&fits[..2], &[(1, true, 16 << 30), (2, false, 32 << 30)], "{rows:?}");
        assert!(rows.iter().filter(|r| r.gpus > 1).all(|r| !r.fits), "{rows:?}");
        assert!(rows[1].verdict.starts_with("does not fit: a node would hold 32.0 GiB"), "{}", rows[1].verdict);
        assert_eq!(answers[0].answer, "qft(30) runs on one rank");
    }

    #[test]
    fn thirty_six_qubits_fit_on_eight_h200s_in_single_not_double() {
        let q = [CircuitSpec::Qft];
        let (rows, answers) = forecast(&ask(36, &[1, 2, 4, 8], Precision::Double, &q), &h200()).unwrap();
        // One row on one GPU, one per schedule on the others.
        assert_eq!(rows.len(), 7);
        assert!(rows.iter().all(|r| !r.fits && r.projected_s.is_none()), "{rows:?}");
        assert!(answers[0].answer.contains("fits on none"), "{}", answers[0].answer);
        let (rows, _) = forecast(&ask(36, &[8], Precision::Single, &q), &h200()).unwrap();
        let fit = |s| rows.iter().find(|r| r.schedule == Some(s)).unwrap().fits;
        assert!(fit(Schedule::Quest) && fit(Schedule::Swap));
    }

    #[test]
    fn a_small_register_stays_on_one_gpu_and_a_large_one_spreads() {
        let q = [CircuitSpec::Qft];
        let (rows, answers) = forecast(&ask(14, &[1, 2, 4, 8], Precision::Double, &q), &h200()).unwrap();
        assert!(answers[0].answer.starts_with("spreading qft(14) does not pay"), "{}", answers[0].answer);
        assert_eq!(answers[0].gpus, Some(1));
        assert!(rows.iter().all(|r| r.projected_s.is_some_and(|t| t > 0.0)), "{rows:?}");
        let (_, answers) = forecast(&ask(32, &[1, 2, 4, 8], Precision::Double, &q), &h200()).unwrap();
        assert!(answers[0].answer.starts_with("spreading qft(32) pays from 2 GPUs"), "{}", answers[0].answer);
        // 38 qubits: one GPU cannot hold it; past a node the fabric dominates.
        let (rows, answers) = forecast(&ask(38, &[8, 16, 32, 64, 128], Precision::Double, &q), &h200()).unwrap();
        assert!(answers[0].answer.contains("needs at least"), "{}", answers[0].answer);
        assert!(rows.iter().filter(|r| r.fits).all(|r| r.vs_best.is_some()), "{rows:?}");
        assert!(rows.iter().any(|r| r.nodes > 1 && r.levels.iter().any(|l| l.name == "across nodes")), "{rows:?}");
        // One GPU not asked for is not one that cannot hold the register.
        let (_, answers) = forecast(&ask(14, &[2, 4], Precision::Double, &q), &h200()).unwrap();
        assert!(answers[0].answer.starts_with("one GPU holds qft(14) but was not asked for"), "{}", answers[0].answer);
        let (_, answers) = forecast(&ask(38, &[64, 128], Precision::Double, &q), &h200()).unwrap();
        assert!(answers[0].answer.starts_with("qft(38) does not fit one GPU; 64 is the fewest asked for"), "{}", answers[0].answer);
    }

    #[test]
    fn a_simulators_time_prices_its_local_steps_and_keeps_the_exchanges() {
        let q = [CircuitSpec::Qft];
        let given = [("qft".to_string(), 3.0)];
        let a = Ask { simulator_s: &given, ..ask(30, &[1, 4], Precision::Double, &q) };
        let (rows, _) = forecast(&a, &h200()).unwrap();
        let one = rows.iter().find(|r| r.gpus == 1).unwrap();
        assert!((one.simulator_s.unwrap() - 3.0).abs() < 1e-9, "{one:?}");
        let one_s = one.projected_s.unwrap();
        for r in rows.iter().filter(|r| r.gpus == 4) {
            let exchanging: f64 = r.levels.iter().map(|l| l.seconds).sum();
            let t = r.projected_s.unwrap();
            let want = 3.0 * (t - exchanging) / one_s + exchanging;
            assert!(exchanging > 0.0 && (r.simulator_s.unwrap() - want).abs() < 1e-9 * want, "{r:?}");
        }
        // Not given for this circuit: nothing priced for it.
        let (rows, _) = forecast(&ask(30, &[1, 4], Precision::Double, &q), &h200()).unwrap();
        assert!(rows.iter().all(|r| r.simulator_s.is_none()));
    }

    #[test]
    fn every_schedule_and_wire_asked_is_a_row() {
        let q = [CircuitSpec::Qft];
        let wires = ["nccl".to_string(), "p2p".to_string()];
        let a = Ask { wires: &wires, ..ask(30, &[1, 2, 4], Precision::Double, &q) };
        let (rows, _) = forecast(&a, &h200()).unwrap();
        assert_eq!(rows.len(), 1 + 2 * 2 * 2);
        let p2p: Vec<&Forecast> = rows.iter().filter(|r| r.transport.as_deref() == Some("p2p")).collect();
        assert!(p2p.iter().all(|r| r.projected_s.is_none() && r.verdict.contains("no figure for p2p")), "{p2p:?}");
    }
}
