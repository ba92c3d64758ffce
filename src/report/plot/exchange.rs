//! Exchanges: GB/s per direction of each wire's global gates, against the
//! references the run measured (the host link, nccl-tests' sendrecv, a
//! local copy). One register size per run: a group of bars per transport.
//! A sweep over register sizes: a line per transport and pattern against
//! qubits, the references dashed.

use super::figure::{Axis, BarSeries, Bars, Chart, Dash, Figure, Lines, Marker, Panel, Reference, Scale, Series};
use super::{Metric, Options, Plot, Source, bandwidth_scale, groups};
use crate::error::Result;
use crate::record::exchange::{ExchangeRun, GlobalGate, RegisterRun};
use crate::statevec::layout::GlobalOp;

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
        Ok(Figure { title, panels: vec![Panel { title: String::new(), chart }], columns: 1 })
    }
}

/// The registers of a run that have gates to draw.
fn drawn(r: &ExchangeRun) -> Vec<&RegisterRun> {
    let mut v: Vec<&RegisterRun> =
        r.registers.iter().filter(|g| !g.global_gates.is_empty() || !g.local_gates.is_empty()).collect();
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

fn value(g: &GlobalGate, what: Quantity) -> f64 {
    match what {
        Quantity::Bandwidth => g.gbps_per_direction,
        Quantity::Time(false) => g.exchange.median * 1e3,
        Quantity::Time(true) => g.exchange.p99 * 1e3,
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
    let mut s = format!("{} qubits, {}", g.qubits, g.precision.name());
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
    let mut wires = groups(
        registers.iter().flat_map(|(_, g)| {
            g.global_gates
                .iter()
                .map(|x| x.transport.as_str())
                .chain(g.unavailable.iter().map(|u| u.transport.as_str()))
        }),
        |_| true,
    );
    let local = matches!(what, Quantity::Bandwidth) && registers.iter().any(|(_, g)| !g.local_gates.is_empty());
    if local {
        wires.push(LOCAL.into());
    }
    let mut series = Vec::new();
    let mut references = Vec::new();
    for &(i, g) in &registers {
        let name = format!("{} {}", runs[i].label, register_name(g, memories));
        let patterns: Vec<GlobalOp> = {
            let mut p: Vec<GlobalOp> = g.global_gates.iter().map(|x| x.pattern).collect();
            p.dedup();
            p.sort_by_key(|p| pattern_name(*p));
            p.dedup();
            p
        };
        for p in patterns {
            let values = wires
                .iter()
                .map(|w| g.global_gates.iter().find(|x| &x.transport == w && x.pattern == p).map(|x| value(x, what)))
                .collect();
            series.push(BarSeries { label: format!("{name}, {}", pattern_name(p)), values, colour: series.len() });
        }
        if local && !g.local_gates.is_empty() {
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
    g.local_gates.iter().map(|l| l.gbps).sum::<f64>() / g.local_gates.len().max(1) as f64
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
            let of_kind: Vec<&&RegisterRun> =
                regs.iter().filter(|g| &g.memory == memory && g.precision.name() == *precision).collect();
            let mut name = format!("{} {precision} precision", run.label);
            if memories {
                name.push_str(&format!(" {memory} memory"));
            }
            let wires =
                groups(of_kind.iter().flat_map(|g| g.global_gates.iter().map(|x| x.transport.as_str())), |_| true);
            for w in &wires {
                for (p, dash, marker) in
                    [(GlobalOp::Gate, Dash::Solid, Marker::Circle), (GlobalOp::Swap, Dash::Dotted, Marker::Triangle)]
                {
                    let points: Vec<(f64, f64)> = of_kind
                        .iter()
                        .filter_map(|g| {
                            g.global_gates
                                .iter()
                                .find(|x| &x.transport == w && x.pattern == p)
                                .map(|x| (g.qubits as f64, value(x, what)))
                        })
                        .collect();
                    if !points.is_empty() {
                        series.push(Series {
                            label: format!("{name} {w}, {}", pattern_name(p)),
                            points,
                            colour,
                            dash,
                            marker,
                            reference: false,
                        });
                    }
                }
                colour += 1;
            }
            if matches!(what, Quantity::Bandwidth) {
                let local: Vec<(f64, f64)> = of_kind
                    .iter()
                    .filter(|g| !g.local_gates.is_empty())
                    .map(|g| (g.qubits as f64, mean_local(g)))
                    .collect();
                if !local.is_empty() {
                    series.push(Series {
                        label: format!("{name} {LOCAL}"),
                        points: local,
                        colour,
                        dash: Dash::Solid,
                        marker: Marker::Square,
                        reference: false,
                    });
                    colour += 1;
                }
                type Pick = fn(&RegisterRun) -> Option<f64>;
                let refs: [(&str, Pick); 3] = [
                    ("host link (pinned, both directions)", |g| g.references.host_link_gbps),
                    ("nccl-tests sendrecv", |g| g.references.nccl_sendrecv_gbps),
                    ("local copy (read + write)", |g| Some(g.references.local_copy_gbps).filter(|v| *v > 0.0)),
                ];
                for (k, (label, pick)) in refs.into_iter().enumerate() {
                    let points: Vec<(f64, f64)> =
                        of_kind.iter().filter_map(|g| pick(g).map(|v| (g.qubits as f64, v))).collect();
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
