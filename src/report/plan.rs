//! The plan for GPUs a user does not have, as text: per circuit a table of
//! every count, schedule and wire priced (within 80 columns), the answer in
//! one line, and the settings each simulator needs; every figure labelled
//! projected with its source.

use crate::record::exchange::{Figure, Forecast, PlanAnswer, PlanFigures, noun};
use crate::units::{human_bytes, human_seconds as seconds};
use std::fmt::Write;

use super::fit::READ_WIDTH as WIDTH;

/// One circuit's rows as a table: for host ranks, which share their node's
/// memory, what a node holds.
fn rows_table(rows: &[&Forecast], host: bool) -> String {
    let cells = rows
        .iter()
        .map(|f| {
            let time = match (f.projected_s, f.fits) {
                (_, false) => "does not fit".to_string(),
                (Some(t), true) => seconds(t),
                (None, true) => "no figure".to_string(),
            };
            vec![
                f.gpus.to_string(),
                f.nodes.to_string(),
                f.schedule.map_or("-".into(), |s| s.name().to_string()),
                f.transport.clone().unwrap_or_else(|| "-".into()),
                human_bytes(if host { f.bytes_per_node } else { f.bytes_per_gpu }),
                time,
                match f.vs_best {
                    Some(x) if x <= 1.0 => "fastest".into(),
                    Some(x) => format!("×{x:.2}"),
                    None => "-".into(),
                },
            ]
        })
        .collect();
    let per = if host { "per node" } else { "per GPU" };
    let header = [noun(host, 2), "nodes", "schedule", "wire", per, "projected", "vs fastest"];
    super::table(header.iter().map(|s| s.to_string()), cells).to_string()
}

/// The notes of rows that fit and have no price, once each; and the
/// smallest count that fits, when some do not.
fn notes(rows: &[&Forecast], host: bool) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    // Per schedule, the largest count that does not fit says why.
    let mut schedules: Vec<_> = rows.iter().map(|f| f.schedule).collect();
    schedules.sort();
    schedules.dedup();
    for s in schedules {
        if let Some(f) = rows.iter().rev().find(|f| !f.fits && f.schedule == s) {
            let on = s.map_or(String::new(), |s| format!(", {} schedule", s.name()));
            out.push(format!("{} {} and fewer{on}: {}", f.gpus, noun(host, f.gpus), f.verdict));
        }
    }
    for f in rows.iter().filter(|f| f.fits && f.projected_s.is_none()) {
        let at = match (&f.schedule, &f.transport) {
            (Some(s), Some(w)) => format!("{} {}, {} over {w}", f.gpus, noun(host, f.gpus), s.name()),
            _ => format!("{} {}", f.gpus, noun(host, f.gpus)),
        };
        let line = format!("{at}: {}", f.verdict);
        if !out.contains(&line) {
            out.push(line);
        }
    }
    out
}

/// The simulator given (`--simulator-time`), priced on each row: one line.
fn simulator(rows: &[&Forecast], host: bool) -> Option<String> {
    let one = rows.iter().find(|f| f.gpus == 1)?.simulator_s?;
    let each: Vec<String> = rows
        .iter()
        .filter(|f| f.gpus > 1)
        .filter_map(|f| {
            let how = match (&f.schedule, &f.transport) {
                (Some(s), Some(w)) => format!(" {} over {w}", s.name()),
                _ => String::new(),
            };
            f.simulator_s.map(|t| format!("{} {}{how} {} (×{:.2})", f.gpus, noun(host, f.gpus), seconds(t), one / t))
        })
        .collect();
    (!each.is_empty()).then(|| format!("{} on one {}; {}", seconds(one), noun(host, 1), each.join(", ")))
}

/// An answer's settings, each simulator's lines under its name.
fn settings(a: &PlanAnswer, host: bool) -> String {
    let mut s = String::new();
    let Some(g) = a.gpus else { return s };
    let how = match (&a.schedule, &a.transport) {
        (Some(sch), Some(w)) => format!(", {} schedule over {w}", sch.name()),
        _ => String::new(),
    };
    let _ = writeln!(s, "settings for {g} {}{how} (rules: --json):", noun(host, g));
    for sim in &a.settings {
        let mut lead = format!("  {:<19}", sim.simulator);
        for line in &sim.lines {
            let _ = writeln!(s, "{}", super::fit::hanging(&lead, line, Some(WIDTH)));
            lead = " ".repeat(21);
        }
    }
    s
}

/// The figures a plan priced from, one line each.
fn figures(f: &PlanFigures) -> String {
    let (per, count) = if f.host { ("node", "cores") } else { ("GPU", "in a node") };
    let mut s =
        format!("\n== priced from (per {per}: {} of memory, {} {count}):\n", human_bytes(f.gpu_memory), f.gpus_per_node);
    let lead = |name: &str| format!("  {name:<26} ");
    let rate = |x: &Figure, per: &str| format!("{} {per} + bytes at {:.0} GB/s", seconds(x.alpha_s), x.gbps);
    let _ = writeln!(s, "{}{}", lead(&f.local.name), rate(&f.local, "a step"));
    let _ = writeln!(s, "{}{} a step besides its work", lead("in a circuit"), seconds(f.step_s));
    if !f.dispatch.is_empty() {
        let d: Vec<String> = f.dispatch.iter().map(|d| format!("{} on {}", seconds(d.seconds), d.ranks)).collect();
        let _ = writeln!(s, "{}", super::fit::hanging(&lead("starting a step"), &d.join(", "), Some(WIDTH)));
    }
    for w in &f.wires {
        let found = match (w.sharing, w.host_link_gbps) {
            (Some(k), Some(c)) => format!(" (found with {k} on a GPU, its host link {c:.0} GB/s among them)"),
            (Some(k), None) => format!(" (found with {k} on a GPU)"),
            _ => String::new(),
        };
        let text = format!("{}{found}", rate(w, "a message"));
        let _ = writeln!(s, "{}", super::fit::hanging(&lead(&w.name), &text, Some(WIDTH)));
    }
    s
}

/// Every circuit's plan, in the order the forecasts hold them, after the
/// figures it priced from.
pub fn render(forecasts: &[Forecast], plans: &[PlanAnswer], from: Option<&PlanFigures>) -> String {
    if forecasts.is_empty() {
        return String::new();
    }
    let host = from.is_some_and(|f| f.host);
    let mut s = from.map(figures).unwrap_or_default();
    let mut keys: Vec<(&str, u32)> = forecasts.iter().map(|f| (f.circuit.as_str(), f.qubits)).collect();
    keys.dedup();
    for (circuit, qubits) in keys {
        let rows: Vec<&Forecast> = forecasts.iter().filter(|f| f.circuit == circuit && f.qubits == qubits).collect();
        let precision = rows[0].precision.name();
        let _ = write!(s, "\n== plan: {circuit}({qubits}), {precision} precision (projected)\n{}\n", rows_table(&rows, host));
        for n in notes(&rows, host) {
            let _ = writeln!(s, "{}", super::fit::hanging("  ", &n, Some(WIDTH)));
        }
        if let Some(line) = simulator(&rows, host) {
            let _ = writeln!(s, "{}", super::fit::hanging("simulator given: ", &line, Some(WIDTH)));
        }
        if let Some(a) = plans.iter().find(|a| a.circuit == circuit && a.qubits == qubits) {
            let _ = writeln!(s, "{}", super::fit::hanging("answer: ", &a.answer, Some(WIDTH)));
            for l in &a.left_out {
                let _ = writeln!(s, "{}", super::fit::hanging("  left out: ", l, Some(WIDTH)));
            }
            for u in &a.unknown {
                let _ = writeln!(s, "{}", super::fit::hanging("  not known, priced at nothing: ", u, Some(WIDTH)));
            }
            s += &settings(a, host);
        }
    }
    let mut sources: Vec<&str> = forecasts.iter().map(|f| f.source.as_str()).collect();
    sources.dedup();
    for src in sources {
        let text = format!("(every figure above is projected, not measured: from {src})");
        for line in super::fit::words(&text, WIDTH) {
            let _ = writeln!(s, "{line}");
        }
    }
    s
}
