//! Text and CSV renderings of exchange runs: what a simulation user reads
//! first is the verdict; the tables above it say where it comes from.

use super::{Csv, Table, csv_lines};
use crate::error::Result;
use crate::record::exchange::{Circuit, ExchangeRun, RegisterRun, Verdict};
use crate::units::format_size;
use serde::Serialize;
use std::fmt::Write;

/// A summary table with these column names.
pub(super) fn table(header: &[&str], rows: Vec<Vec<String>>) -> String {
    super::table(header.iter().map(|s| s.to_string()), rows).to_string()
}

fn ms(s: f64) -> String {
    format!("{:.3}", s * 1e3)
}

impl Table for ExchangeRun {
    /// The devices of GPU registers; host ranks are described with each register.
    fn head(&self) -> String {
        if self.devices.is_empty() { String::new() } else { header(self) }
    }
    fn part(&self, r: &RegisterRun) -> String {
        register(r)
    }
    fn tail(&self) -> String {
        self.verdict.as_ref().map(verdict).unwrap_or_default()
    }
}

fn header(run: &ExchangeRun) -> String {
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

fn register(r: &RegisterRun) -> String {
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
        match rf.local_copy_bytes {
            None => {
                let _ =
                    writeln!(s, "reference: chunk copy within a rank {:.1} GB/s (read + write)", rf.local_copy_gbps);
            }
            Some(b) => {
                let _ = writeln!(
                    s,
                    "reference: copy of {} within a rank {:.1} GB/s (read + write)",
                    format_size(b),
                    rf.local_copy_gbps
                );
            }
        }
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
                    ms(g.time.median),
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
                    g.transport.clone(),
                    g.pattern.name().to_string(),
                    g.qubit.to_string(),
                    format_size(g.bytes),
                    ms(g.exchange.median),
                    format!("{:.1}", g.gbps_per_direction),
                    ms(g.update.median),
                    ms(g.exchange.median + g.update.median),
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
        let _ = writeln!(s, "unavailable: {}: {}", u.transport, u.reason);
    }
    for c in &r.checks {
        let what = c.transport.as_deref().unwrap_or("local gates");
        let _ = writeln!(s, "check: {what}: {} amplitudes, {} wrong", c.amplitudes, c.wrong);
    }
    s
}

fn verdict(v: &Verdict) -> String {
    let mut s = String::from("\n== verdict\n");
    if v.gpus == 1 {
        let _ =
            writeln!(s, "gate: {} ms on the whole {}-qubit register, one GPU (measured)", ms(v.local_gate_s), v.qubits);
        let _ = writeln!(s, "largest register: {} qubits on one GPU", v.largest_on_one_gpu);
        for p in &v.projections {
            let name = match p.circuit {
                Circuit::Qft => format!("qft({})", v.qubits),
                Circuit::Random { .. } => "random".to_string(),
            };
            let _ = writeln!(s, "{name}: {}; projected {:.3} s", p.verdict, p.one_gpu_s);
        }
        s.push_str(
            "(projections apply the measured gate time to the circuit's gate count; they are not measurements)\n",
        );
        return s;
    }
    let _ = writeln!(s, "local gate: {} ms on one GPU's chunk", ms(v.local_gate_s));
    if let (Some(g), Some(w), Some(x)) = (v.global_gate_s, &v.best_transport, v.global_vs_local) {
        let _ = writeln!(s, "global gate: {} ms over {w} (best), ×{x:.1} a local gate", ms(g));
    }
    if let (Some(one), true) = (v.one_gpu_gate_s, v.one_gpu_measured) {
        let _ = writeln!(s, "one GPU: {} ms a gate on the whole {}-qubit register (measured)", ms(one), v.qubits);
    } else if let Some(one) = v.one_gpu_gate_s {
        let _ = writeln!(
            s,
            "one GPU: {} ms a gate on the whole register, projected as the local gate × {} (not measured: it does not fit one GPU, or the GPUs are in several processes)",
            ms(one),
            v.gpus
        );
    }
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

#[derive(Serialize)]
struct Line<'a> {
    qubits: u32,
    precision: &'a str,
    ranks: usize,
    memory: &'a str,
    transport: &'a str,
    pattern: &'a str,
    qubit: u32,
    bytes: u64,
    exchange_s: f64,
    update_s: f64,
    gbps_per_direction: f64,
    vs_local: f64,
}

/// One line per global gate.
impl Csv for ExchangeRun {
    fn csv(&self) -> Result<Vec<u8>> {
        csv_lines(self.registers.iter().flat_map(|r| {
            r.global_gates.iter().map(move |g| Line {
                qubits: r.qubits,
                precision: r.precision.name(),
                ranks: r.ranks,
                memory: &r.memory,
                transport: &g.transport,
                pattern: g.pattern.name(),
                qubit: g.qubit,
                bytes: g.bytes,
                exchange_s: g.exchange.median,
                update_s: g.update.median,
                gbps_per_direction: g.gbps_per_direction,
                vs_local: g.vs_local,
            })
        }))
    }
}
