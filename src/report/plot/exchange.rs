//! Exchanges: GB/s per direction of each wire's global gates, against the
//! references the run measured (the host link, nccl-tests' sendrecv, a
//! local copy). One register size per run: a group of bars per transport.
//! A sweep over register sizes: a line per transport and pattern against
//! qubits, the references dashed. Runs with circuits add a panel of each
//! circuit's time against the GPU count, per schedule and wire: the
//! measured ones solid, the projected ones (`--plan`, counts this node did
//! not hold) dashed.

use super::figure::{Axis, BarSeries, Bars, Chart, Dash, Figure, Lines, Marker, Panel, Reference, Scale, Series};
use super::{Metric, Options, Plot, Source, bandwidth_scale, groups};
use crate::error::Result;
use crate::record::exchange::{ExchangeRun, RegisterRun};
use crate::statevec::layout::GlobalOp;
use crate::statevec::step::Class;

/// A global gate as the bars and lines draw it: from the gate classes of
/// a register, or its global gates in records before them.
struct Gate {
    transport: String,
    pattern: GlobalOp,
    gbps: f64,
    /// Exchange seconds, median and 99th percentile.
    median: f64,
    p99: f64,
}

fn gates(g: &RegisterRun) -> Vec<Gate> {
    if g.classes.is_empty() {
        return g
            .global_gates
            .iter()
            .map(|x| Gate {
                transport: x.transport.clone(),
                pattern: x.pattern,
                gbps: x.gbps_per_direction,
                median: x.exchange.median,
                p99: x.exchange.p99,
            })
            .collect();
    }
    g.classes
        .iter()
        .filter_map(|c| {
            let pattern = match c.class {
                Class::GlobalGate => GlobalOp::Gate,
                // The swap pattern: with the top local qubit, straight from the chunk.
                Class::GlobalSwap if c.qubits.contains(&(g.local_qubits - 1)) => GlobalOp::Swap,
                _ => return None,
            };
            let e = c.exchange?;
            Some(Gate {
                transport: c.transport.clone()?,
                pattern,
                gbps: c.bytes as f64 / e.median / 1e9,
                median: e.median,
                p99: e.p99,
            })
        })
        .collect()
}

/// The group and line of a register's local gates (read + write, as the local copy).
const LOCAL: &str = "local gate (r+w)";

/// What is drawn of a gate.
#[derive(Clone, Copy)]
enum Quantity {
    Bandwidth,
    /// Exchange time, median (false) or p99 (true), in ms.
    Time(bool),
}

impl Plot for ExchangeRun {
    fn carrier(&self) -> String {
        super::gpus(self.devices.iter().map(|d| d.name.as_str()))
    }

    fn figure(runs: &[Source<'_, Self>], options: &Options) -> Result<Figure> {
        let what = match options.metric {
            None => Quantity::Bandwidth,
            Some(Metric::Time | Metric::P50) => Quantity::Time(false),
            Some(Metric::P99) => Quantity::Time(true),
            Some(m) => return Err(m.not_for("exchange", "they plot GB/s per direction, or time, p50 and p99")),
        };
        let sweep = runs.iter().any(|r| {
            let mut q: Vec<u32> = drawn(r.record).iter().map(|g| g.qubits).collect();
            q.dedup();
            q.len() > 1
        });
        let hosts = super::hosts(runs, |r| &r.header);
        let (chart, title) = if sweep {
            (lines(runs, what), format!("Amplitude exchange against register size, {hosts}"))
        } else {
            let q: Vec<String> = {
                let mut v: Vec<u32> = runs.iter().flat_map(|r| drawn(r.record)).map(|g| g.qubits).collect();
                v.sort_unstable();
                v.dedup();
                v.iter().map(u32::to_string).collect()
            };
            (bars(runs, what), format!("Amplitude exchange of a {}-qubit register, {hosts}", q.join("/")))
        };
        let measured = runs.iter().any(|r| !drawn(r.record).is_empty());
        let mut panels = if measured { vec![Panel { title: String::new(), chart }] } else { Vec::new() };
        if runs
            .iter()
            .any(|r| !r.record.forecasts.is_empty() || r.record.registers.iter().any(|g| !g.circuits.is_empty()))
        {
            panels
                .push(Panel { title: "circuits: time against GPUs (dashed: projected)".into(), chart: circuits(runs) });
        }
        let title = if measured { title } else { format!("Circuits against the GPU count, projected ({hosts})") };
        let columns = panels.len();
        Ok(Figure { title, panels, columns })
    }
}

/// Each circuit's time against the GPU (rank) count: a line per run,
/// circuit, schedule and wire (the one-rank time starts each wire's line),
/// measured solid; the projected counts dashed.
fn circuits(runs: &[Source<'_, ExchangeRun>]) -> Chart {
    let mut series = Vec::new();
    for run in runs {
        // (circuit and qubits, schedule, wire or None on one rank, ranks, seconds)
        let mut measured: Vec<(String, &str, Option<&str>, f64, f64)> = Vec::new();
        for g in &run.record.registers {
            for c in g.circuits.iter().filter(|c| c.wrong == 0) {
                let schedule = c.schedule.map_or("-", |s| s.name());
                measured.push((
                    format!("{}({})", c.circuit, g.qubits),
                    schedule,
                    c.transport.as_deref(),
                    g.ranks as f64,
                    c.time.median,
                ));
            }
        }
        let mut lines: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
        for (name, schedule, wire, ranks, t) in &measured {
            let Some(w) = wire else { continue };
            let label = format!("{} {name} {schedule} over {w}", run.label);
            match lines.iter_mut().find(|l| l.0 == label) {
                Some(l) => l.1.push((*ranks, *t)),
                None => {
                    // The same circuit and schedule on one rank starts the line.
                    let mut pts: Vec<(f64, f64)> = measured
                        .iter()
                        .filter(|m| &m.0 == name && m.1 == *schedule && m.2.is_none())
                        .map(|m| (m.3, m.4))
                        .collect();
                    pts.push((*ranks, *t));
                    lines.push((label, pts));
                }
            }
        }
        for (name, schedule, wire, ranks, t) in &measured {
            let alone = wire.is_none() && !measured.iter().any(|m| &m.0 == name && m.1 == *schedule && m.2.is_some());
            if alone {
                lines.push((format!("{} {name} {schedule}, one rank", run.label), vec![(*ranks, *t)]));
            }
        }
        for (label, mut points) in lines {
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            series.push(Series {
                label,
                points,
                colour: series.len(),
                dash: Dash::Solid,
                marker: Marker::Circle,
                reference: false,
            });
        }
        let mut projected: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
        for f in &run.record.forecasts {
            let Some(t) = f.projected_s else { continue };
            let label = format!("{} {}({}) projected", run.label, f.circuit, f.qubits);
            match projected.iter_mut().find(|l| l.0 == label) {
                Some(l) => l.1.push((f.gpus as f64, t)),
                None => projected.push((label, vec![(f.gpus as f64, t)])),
            }
        }
        for (label, points) in projected {
            series.push(Series {
                label,
                points,
                colour: series.len(),
                dash: Dash::Dashed,
                marker: Marker::Triangle,
                reference: false,
            });
        }
    }
    Chart::Lines(Lines {
        x: Axis::new("GPUs (ranks)", Scale::Integer),
        y: Axis::new("circuit time (s)", Scale::Log10),
        series,
        references: Vec::new(),
    })
}

/// The registers of a run that have gates to draw.
fn drawn(r: &ExchangeRun) -> Vec<&RegisterRun> {
    let mut v: Vec<&RegisterRun> =
        r.registers.iter().filter(|g| !gates(g).is_empty() || !g.local_rates().is_empty()).collect();
    // A one-GPU run records its register twice: spread (over one) and whole.
    v.dedup_by(|a, b| a == b);
    v
}

fn pattern_name(p: GlobalOp) -> &'static str {
    match p {
        GlobalOp::Gate => "gate (whole chunk)",
        GlobalOp::Swap => "swap (half chunk)",
    }
}

fn value(g: &Gate, what: Quantity) -> f64 {
    match what {
        Quantity::Bandwidth => g.gbps,
        Quantity::Time(false) => g.median * 1e3,
        Quantity::Time(true) => g.p99 * 1e3,
    }
}

fn y_title(what: Quantity) -> &'static str {
    match what {
        Quantity::Bandwidth => "bandwidth per direction (GB/s)",
        Quantity::Time(false) => "exchange time, median (ms)",
        Quantity::Time(true) => "exchange time, 99th percentile (ms)",
    }
}

/// The register's description when runs hold several kinds of them.
fn register_name(g: &RegisterRun, memories: bool) -> String {
    let mut s =
        format!("{} qubits, {}, {} rank{}", g.qubits, g.precision.name(), g.ranks, if g.ranks == 1 { "" } else { "s" });
    if memories {
        s.push_str(&format!(" {} memory", g.memory));
    }
    s
}

fn bars(runs: &[Source<'_, ExchangeRun>], what: Quantity) -> Chart {
    let registers: Vec<(usize, &RegisterRun)> =
        runs.iter().enumerate().flat_map(|(i, r)| drawn(r.record).into_iter().map(move |g| (i, g))).collect();
    let memories = {
        let mut m: Vec<&str> = registers.iter().map(|(_, g)| g.memory.as_str()).collect();
        m.sort_unstable();
        m.dedup();
        m.len() > 1
    };
    let all: Vec<(usize, &RegisterRun, Vec<Gate>)> = registers.iter().map(|&(i, g)| (i, g, gates(g))).collect();
    let mut wires = groups(
        all.iter().flat_map(|(_, g, gs)| {
            gs.iter().map(|x| x.transport.as_str()).chain(g.unavailable.iter().map(|u| u.transport.as_str()))
        }),
        |_| true,
    );
    let local = matches!(what, Quantity::Bandwidth) && registers.iter().any(|(_, g)| !g.local_rates().is_empty());
    if local {
        wires.push(LOCAL.into());
    }
    let mut series = Vec::new();
    let mut references = Vec::new();
    for (i, g, gs) in &all {
        let (i, g) = (*i, *g);
        let name = format!("{} {}", runs[i].label, register_name(g, memories));
        let patterns: Vec<GlobalOp> = {
            let mut p: Vec<GlobalOp> = gs.iter().map(|x| x.pattern).collect();
            p.dedup();
            p.sort_by_key(|p| pattern_name(*p));
            p.dedup();
            p
        };
        for p in patterns {
            let values = wires
                .iter()
                .map(|w| gs.iter().find(|x| &x.transport == w && x.pattern == p).map(|x| value(x, what)))
                .collect();
            series.push(BarSeries { label: format!("{name}, {}", pattern_name(p)), values, colour: series.len() });
        }
        if local && !g.local_rates().is_empty() {
            let values = wires.iter().map(|w| (w == LOCAL).then(|| mean_local(g))).collect();
            series.push(BarSeries { label: format!("{name}, local gates"), values, colour: series.len() });
        }
        if matches!(what, Quantity::Bandwidth) {
            references.extend(references_of(&runs[i].label, &register_name(g, memories), g));
        }
    }
    let scale = bandwidth_scale(
        series.iter().flat_map(|s| s.values.iter().flatten().copied()).chain(references.iter().map(|r| r.value)),
    );
    let scale = if matches!(what, Quantity::Time(_)) { Scale::Log10 } else { scale };
    Chart::Bars(Bars {
        groups_title: "transport (wire)".into(),
        groups: wires,
        y: Axis::new(y_title(what), scale),
        series,
        references,
    })
}

fn mean_local(g: &RegisterRun) -> f64 {
    let rates = g.local_rates();
    rates.iter().map(|l| l.1).sum::<f64>() / rates.len().max(1) as f64
}

/// The references of one register: host link, sendrecv, local copy.
fn references_of(run: &str, register: &str, g: &RegisterRun) -> Vec<Reference> {
    let r = &g.references;
    let mut v = Vec::new();
    if let Some(h) = r.host_link_gbps {
        v.push((format!("host link (pinned, both directions at once) {h:.1} GB/s"), h));
    }
    if let Some(s) = r.nccl_sendrecv_gbps {
        v.push((format!("nccl-tests sendrecv {s:.1} GB/s"), s));
    }
    if r.local_copy_gbps > 0.0 {
        v.push((format!("local copy (read + write) {:.0} GB/s", r.local_copy_gbps), r.local_copy_gbps));
    }
    v.into_iter().map(|(l, value)| Reference { label: format!("{run} {register}, {l}"), value, colour: None }).collect()
}

/// Registers of one kind (`name`): a line per wire and global operation
/// (gate solid, swap dotted), a colour per wire.
fn wire_series(name: &str, of_kind: &[&RegisterRun], what: Quantity, colour: &mut usize) -> Vec<Series> {
    let mut series = Vec::new();
    let of_gates: Vec<(&RegisterRun, Vec<Gate>)> = of_kind.iter().map(|g| (*g, gates(g))).collect();
    let wires = groups(of_gates.iter().flat_map(|(_, gs)| gs.iter().map(|x| x.transport.as_str())), |_| true);
    for w in &wires {
        for (p, dash, marker) in
            [(GlobalOp::Gate, Dash::Solid, Marker::Circle), (GlobalOp::Swap, Dash::Dotted, Marker::Triangle)]
        {
            let points: Vec<(f64, f64)> = of_gates
                .iter()
                .filter_map(|(g, gs)| {
                    gs.iter().find(|x| &x.transport == w && x.pattern == p).map(|x| (g.qubits as f64, value(x, what)))
                })
                .collect();
            if !points.is_empty() {
                let label = format!("{name} {w}, {}", pattern_name(p));
                series.push(Series { label, points, colour: *colour, dash, marker, reference: false });
            }
        }
        *colour += 1;
    }
    series
}

/// Registers of one kind (`name`), bandwidth: the local gate's line (the
/// next colour) and the references' dashed lines (three colours from
/// `references`).
fn local_and_references(name: &str, of_kind: &[&RegisterRun], colour: &mut usize, references: usize) -> Vec<Series> {
    let mut series = Vec::new();
    let local: Vec<(f64, f64)> =
        of_kind.iter().filter(|g| !g.local_rates().is_empty()).map(|g| (g.qubits as f64, mean_local(g))).collect();
    if !local.is_empty() {
        series.push(Series {
            label: format!("{name} {LOCAL}"),
            points: local,
            colour: *colour,
            dash: Dash::Solid,
            marker: Marker::Square,
            reference: false,
        });
        *colour += 1;
    }
    type Pick = fn(&RegisterRun) -> Option<f64>;
    let refs: [(&str, Pick); 3] = [
        ("host link (pinned, both directions)", |g| g.references.host_link_gbps),
        ("nccl-tests sendrecv", |g| g.references.nccl_sendrecv_gbps),
        ("local copy (read + write)", |g| Some(g.references.local_copy_gbps).filter(|v| *v > 0.0)),
    ];
    for (k, (label, pick)) in refs.into_iter().enumerate() {
        let points: Vec<(f64, f64)> = of_kind.iter().filter_map(|g| pick(g).map(|v| (g.qubits as f64, v))).collect();
        if !points.is_empty() {
            series.push(Series {
                label: format!("{name} {label}"),
                points,
                colour: references + k,
                dash: Dash::Dashed,
                marker: Marker::None,
                reference: true,
            });
        }
    }
    series
}

/// A line per wire and global operation of each run's registers, by
/// register size; for bandwidth also the local gate and the references.
fn lines(runs: &[Source<'_, ExchangeRun>], what: Quantity) -> Chart {
    let mut series = Vec::new();
    let (mut colour, mut references) = (0, 0);
    let memories = {
        let mut m: Vec<&str> = runs.iter().flat_map(|r| drawn(r.record)).map(|g| g.memory.as_str()).collect();
        m.sort_unstable();
        m.dedup();
        m.len() > 1
    };
    for run in runs {
        let regs = drawn(run.record);
        let mut kinds: Vec<(String, &str)> = Vec::new();
        for g in &regs {
            let k = (g.memory.clone(), g.precision.name());
            if !kinds.contains(&k) {
                kinds.push(k);
            }
        }
        for (memory, precision) in &kinds {
            let of_kind: Vec<&RegisterRun> =
                regs.iter().copied().filter(|g| &g.memory == memory && g.precision.name() == *precision).collect();
            let mut name = format!("{} {precision} precision", run.label);
            if memories {
                name.push_str(&format!(" {memory} memory"));
            }
            series.extend(wire_series(&name, &of_kind, what, &mut colour));
            if matches!(what, Quantity::Bandwidth) {
                series.extend(local_and_references(&name, &of_kind, &mut colour, references));
                references += 3;
            }
        }
    }
    let scale = match what {
        Quantity::Bandwidth => bandwidth_scale(series.iter().flat_map(|s| s.points.iter().map(|p| p.1))),
        Quantity::Time(_) => Scale::Log10,
    };
    Chart::Lines(Lines {
        x: Axis::new("register size (qubits)", Scale::Integer),
        y: Axis::new(y_title(what), scale),
        series,
        references: Vec::new(),
    })
}
