//! Text and CSV renderings of exchange and compare runs: what a simulation
//! user reads first is the verdict; the tables above it say where it comes
//! from.

use crate::error::{Error, Result};
use crate::units::format_size;
use crate::workload::exchange::compare::Comparison;
use crate::workload::exchange::record::{ExchangeRun, RegisterRun};
use crate::workload::exchange::verdict::{Circuit, Verdict};
use std::fmt::Write;

fn table(header: &[&str], rows: Vec<Vec<String>>) -> String {
    super::table(header.iter().map(|s| s.to_string()), rows).to_string()
}

fn ms(s: f64) -> String {
    format!("{:.3}", s * 1e3)
}

pub fn header(run: &ExchangeRun) -> String {
    let mut s =
        String::from("# qbench exchange: the amplitude exchange of a distributed state vector\n# Using devices\n");
    for d in &run.devices {
        let _ = writeln!(
            s,
            "#  Rank {:>2} Pid {:>6} on {:>10} device {:>2} [{}] {}",
            d.rank, d.pid, d.host, d.device, d.bus_id, d.name
        );
    }
    if let Some(l) = &run.library {
        let _ = writeln!(s, "# {} {}", l.name, l.version);
    }
    let _ = writeln!(s, "# medians of {} timed repetitions after {} warm-up", run.iters, run.warmup_iters);
    s
}

pub fn register(r: &RegisterRun) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\n== {} qubits, {} precision ({} B/amplitude), {} ranks in {} memory: {} local qubits, {} per rank",
        r.qubits,
        r.precision.name(),
        r.precision.bytes(),
        r.ranks,
        r.memory,
        r.local_qubits,
        format_size(r.chunk_bytes)
    );
    let rf = &r.references;
    if rf.local_copy_gbps > 0.0 {
        let _ = writeln!(s, "reference: chunk copy within a rank {:.1} GB/s (read + write)", rf.local_copy_gbps);
    }
    if let (Some(g), Some(b)) = (rf.host_link_gbps, rf.host_link_bytes) {
        let _ = writeln!(
            s,
            "reference: host link, device→host ∥ host→device pinned, {} each: {g:.1} GB/s per direction",
            format_size(b)
        );
    }
    if let Some(g) = rf.nccl_sendrecv_gbps {
        let _ = writeln!(
            s,
            "reference: NCCL sendrecv (ring, as sendrecv_perf) of a whole chunk: {g:.1} GB/s per direction"
        );
    }
    if !r.local_gates.is_empty() {
        let rows = r
            .local_gates
            .iter()
            .map(|g| {
                vec![
                    g.qubit.to_string(),
                    ms(g.time.median_s),
                    format!("{:.1}", g.gbps),
                    format!("{:.0}%", 100.0 * g.of_copy),
                ]
            })
            .collect();
        let _ = writeln!(
            s,
            "\nlocal gate (H), every amplitude read and written once\n{}",
            table(&["qubit", "time ms", "GB/s", "of copy"], rows)
        );
    }
    if !r.global_gates.is_empty() {
        let rows = r
            .global_gates
            .iter()
            .map(|g| {
                vec![
                    g.transport.name().to_string(),
                    g.pattern.name().to_string(),
                    g.qubit.to_string(),
                    format_size(g.bytes),
                    ms(g.exchange.median_s),
                    format!("{:.1}", g.gbps_per_direction),
                    ms(g.update.median_s),
                    ms(g.exchange.median_s + g.update.median_s),
                    format!("×{:.1}", g.vs_local),
                ]
            })
            .collect();
        let _ = writeln!(
            s,
            "\nglobal gate: exchange with the partner rank, then the update (gate: combine; swap: place the half, H)\n{}",
            table(
                &[
                    "transport",
                    "pattern",
                    "qubit",
                    "bytes/rank",
                    "exchange ms",
                    "GB/s/dir",
                    "update ms",
                    "total ms",
                    "vs local"
                ],
                rows
            )
        );
    }
    for u in &r.unavailable {
        let _ = writeln!(s, "unavailable: {}: {}", u.transport.name(), u.reason);
    }
    for c in &r.checks {
        let what = c.transport.map_or("local gates".to_string(), |w| w.name().to_string());
        let _ = writeln!(s, "check: {what}: {} amplitudes, {} wrong", c.amplitudes, c.wrong);
    }
    s
}

pub fn verdict(v: &Verdict) -> String {
    let mut s = String::from("\n== verdict\n");
    let _ = writeln!(s, "local gate: {} ms on one GPU's chunk", ms(v.local_gate_s));
    let _ = writeln!(
        s,
        "global gate: {} ms over {} (best), ×{:.1} a local gate",
        ms(v.global_gate_s),
        v.best_transport.name(),
        v.global_vs_local
    );
    let _ = writeln!(
        s,
        "largest register: {} qubits on one GPU, {} on {} GPUs",
        v.largest_on_one_gpu, v.largest_spread, v.gpus
    );
    for p in &v.projections {
        let name = match p.circuit {
            Circuit::Qft => format!("qft({})", v.qubits),
            Circuit::Random { global_fraction } => format!("random, {:.0}% of gates global", 100.0 * global_fraction),
        };
        let _ = writeln!(
            s,
            "{name}: {} gates; projected {:.3} s on 1 GPU, {:.3} s on {} GPUs → {}",
            p.gates, p.one_gpu_s, p.spread_s, v.gpus, p.verdict
        );
    }
    s.push_str("(projections apply the measured gate times to the circuit's gate counts; they are not measurements)\n");
    s
}

pub fn comparison(c: &Comparison) -> String {
    let rows = c
        .rows
        .iter()
        .map(|r| {
            vec![
                r.transport.clone(),
                r.gbps.map_or("-".into(), |g| format!("{g:.1}")),
                r.vs_best.map_or("-".into(), |v| format!("{:.2}", v)),
                r.wrong.map_or("-".into(), |w| w.to_string()),
                r.unavailable.as_ref().map_or(r.how.clone(), |u| format!("unavailable: {u}")),
            ]
        })
        .collect();
    format!(
        "# qbench compare: {} per rank to its partner, {} ranks, medians of {}\n{}\n",
        format_size(c.bytes_per_rank),
        c.ranks,
        c.iters,
        table(&["transport", "GB/s/dir", "vs best", "wrong", "how"], rows)
    )
}

/// One CSV line per transport of a comparison.
pub fn write_comparison_csv(c: &Comparison, path: &std::path::Path) -> Result<()> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let enc = |e: csv::Error| Error::Runtime(format!("cannot encode CSV: {e}"));
    w.write_record(["transport", "bytes_per_rank", "ranks", "gbps_per_direction", "vs_best", "wrong", "unavailable"])
        .map_err(enc)?;
    let opt = |v: Option<f64>| v.map_or(String::new(), |x| x.to_string());
    for r in &c.rows {
        w.write_record([
            r.transport.clone(),
            c.bytes_per_rank.to_string(),
            c.ranks.to_string(),
            opt(r.gbps),
            opt(r.vs_best),
            r.wrong.map_or(String::new(), |x| x.to_string()),
            r.unavailable.clone().unwrap_or_default(),
        ])
        .map_err(enc)?;
    }
    finish_csv(w, path)
}

fn finish_csv(w: csv::Writer<Vec<u8>>, path: &std::path::Path) -> Result<()> {
    let bytes = w.into_inner().map_err(|e| Error::Runtime(format!("cannot encode CSV: {e}")))?;
    std::fs::write(path, bytes).map_err(|e| Error::Usage(format!("cannot write CSV to {}: {e}", path.display())))
}

pub fn write_csv(run: &ExchangeRun, path: &std::path::Path) -> Result<()> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let enc = |e: csv::Error| Error::Runtime(format!("cannot encode CSV: {e}"));
    w.write_record([
        "qubits",
        "precision",
        "ranks",
        "memory",
        "transport",
        "pattern",
        "qubit",
        "bytes",
        "exchange_s",
        "update_s",
        "gbps_per_direction",
        "vs_local",
    ])
    .map_err(enc)?;
    for r in &run.registers {
        for g in &r.global_gates {
            w.write_record([
                r.qubits.to_string(),
                r.precision.name().into(),
                r.ranks.to_string(),
                r.memory.into(),
                g.transport.name().into(),
                g.pattern.name().into(),
                g.qubit.to_string(),
                g.bytes.to_string(),
                g.exchange.median_s.to_string(),
                g.update.median_s.to_string(),
                g.gbps_per_direction.to_string(),
                g.vs_local.to_string(),
            ])
            .map_err(enc)?;
        }
    }
    finish_csv(w, path)
}
