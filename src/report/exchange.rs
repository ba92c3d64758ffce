//! Exchange runs' tables: what a simulation user reads first is the
//! verdict; the tables above it say where it comes from. And their rows, a
//! row per gate class and per circuit.

use super::Table;
use super::rows::{Cell, Rows};
use crate::record::exchange::{Circuit, Decision, ExchangeRun, RegisterRun, Verdict};
use super::fit::{READ_WIDTH, words};
use crate::units::{format_size, human_seconds};
use std::fmt::Write;

/// A summary table with these column names.
pub(super) fn table(header: &[&str], rows: Vec<Vec<String>>) -> String {
    super::table(header.iter().map(|s| s.to_string()), rows).to_string()
}

fn ms(s: f64) -> String {
    format!("{:.3}", s * 1e3)
}

impl Table for ExchangeRun {
    /// The devices of GPU registers (host ranks are described with each
    /// register), and what could not run on this machine at all.
    fn head(&self) -> String {
        let mut s = if self.devices.is_empty() { String::new() } else { header(self) };
        for u in &self.unavailable {
            let _ = writeln!(s, "# unavailable: {}: {}", u.transport, u.reason);
        }
        s
    }
    fn part(&self, r: &RegisterRun) -> String {
        register(self, r)
    }
    fn tail(&self) -> String {
        match &self.verdict {
            Some(v) => verdict(v),
            None => {
                decisions(&self.decisions, self.registers.iter().rev().find_map(|r| sharing(self, r)))
                    + &super::plan::render(&self.forecasts, &self.plans, self.plan_figures.as_deref())
            }
        }
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

/// One register: its line, the reference figures, its tables, what
/// could not run and the data checks.
fn register(run: &ExchangeRun, r: &RegisterRun) -> String {
    let mut s = String::new();
    let held = match (r.memory == "host", r.ranks) {
        (true, 1) => "host rank",
        (true, _) => "host ranks",
        (false, 1) => "rank in GPU memory",
        (false, _) => "ranks in GPU memory",
    };
    let _ = writeln!(
        s,
        "\n== {} qubits, {} ({} B/amplitude), {} {held}: {} local qubits, {} each",
        r.qubits,
        r.precision.name(),
        r.precision.bytes(),
        r.ranks,
        r.local_qubits,
        format_size(r.chunk_bytes)
    );
    if let Some(shared) = sharing(run, r) {
        s.push_str(&said(&shared));
    }
    s.push_str(&references(r));
    if !r.local_gates.is_empty() {
        s.push_str(&local_gates(r));
    }
    if !r.global_gates.is_empty() {
        s.push_str(&global_gates(r));
    }
    match (r.classes.len(), run.classes_shown) {
        (0, _) => {}
        (_, true) => s.push_str(&classes(r)),
        (n, false) => {
            let _ = writeln!(s, "gate classes: {n} timed, every amplitude checked (in the record; -v prints them)");
        }
    }
    if !r.circuits.is_empty() {
        s.push_str(&circuits(r));
    }
    for u in &r.unavailable {
        let _ = writeln!(s, "unavailable: {}: {}", u.transport, u.reason);
    }
    s + &checks(r)
}

/// A sentence in lines of the reading width, the lines after the first
/// indented by two.
fn said(text: &str) -> String {
    let mut s = String::new();
    for (i, line) in words(text, READ_WIDTH - 2).iter().enumerate() {
        let _ = writeln!(s, "{}{line}", if i == 0 { "" } else { "  " });
    }
    s
}

/// What shares a device on register `r`: ranks past the host's cores
/// (threads taking turns) or several ranks on one GPU, in words; None where
/// each rank has its own.
fn sharing(run: &ExchangeRun, r: &RegisterRun) -> Option<String> {
    if r.memory == "host" {
        // Threads of one process share its cores; processes have their own.
        let processes = run.devices.iter().map(|d| (&d.host, d.pid)).collect::<std::collections::BTreeSet<_>>().len();
        let threads = r.ranks / processes.max(1);
        let cores = run.host_cores.filter(|&c| c < threads)?;
        return Some(format!(
            "{threads} ranks on {cores} cores: they take turns, so the times measure the scheduler too"
        ));
    }
    let mut on: std::collections::BTreeMap<(&str, &str), usize> = Default::default();
    for d in run.devices.iter().filter(|d| d.bus_id != "host") {
        *on.entry((&d.host, &d.bus_id)).or_default() += 1;
    }
    let most = on.into_values().max().filter(|&k| k > 1)?;
    Some(format!("{most} ranks share each GPU: their kernels take turns on it"))
}

/// The reference lines: a copy within a rank, the host link, NCCL's
/// sendrecv, where measured.
fn references(r: &RegisterRun) -> String {
    let mut s = String::new();
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
            "reference: host link both ways at once (pinned, {} each): {g:.1} GB/s per direction",
            format_size(b)
        );
    }
    if let Some(g) = rf.nccl_sendrecv_gbps {
        let _ = writeln!(
            s,
            "reference: NCCL sendrecv of a chunk (as sendrecv_perf): {g:.1} GB/s per direction"
        );
    }
    s
}

/// The local gate's table: each qubit's time against a copy.
fn local_gates(r: &RegisterRun) -> String {
    let rows = r
        .local_gates
        .iter()
        .map(|g| {
            vec![g.qubit.to_string(), ms(g.time.median), format!("{:.1}", g.gbps), format!("{:.0}%", 100.0 * g.of_copy)]
        })
        .collect();
    format!(
        "\nlocal gate (H), every amplitude read and written once\n{}\n",
        table(&["qubit", "time ms", "GB/s", "of copy"], rows)
    )
}

/// The global gate's table: each wire's exchange and update.
fn global_gates(r: &RegisterRun) -> String {
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
    let head =
        ["transport", "pattern", "qubit", "bytes/rank", "exchange ms", "GB/s/dir", "update ms", "total ms", "vs local"];
    format!(
        "\nglobal gate: exchange with the partner rank, then the update (gate: combine; swap: place the half, H)\n{}\n",
        table(&head, rows)
    )
}

/// The data checks: the local classes, then each wire's classes and
/// circuits together, each circuit, each check of the older records.
fn checks(r: &RegisterRun) -> String {
    let mut s = String::new();
    if !r.classes.is_empty() {
        let sum = |it: &mut dyn Iterator<Item = (u64, u64)>| it.fold((0, 0), |(a, w), (x, y)| (a + x, w + y));
        let (amps, wrong) =
            sum(&mut r.classes.iter().filter(|c| c.transport.is_none()).map(|c| (c.amplitudes, c.wrong)));
        let _ = writeln!(s, "check: local classes: {amps} amplitudes, {wrong} wrong");
        let mut wires: Vec<&str> = r.classes.iter().filter_map(|c| c.transport.as_deref()).collect();
        wires.dedup();
        for w in wires {
            let on = Some(w);
            let classes = r.classes.iter().filter(|c| c.transport.as_deref() == on).map(|c| (c.amplitudes, c.wrong));
            let circuits = r.circuits.iter().filter(|c| c.transport.as_deref() == on).map(|c| (c.amplitudes, c.wrong));
            let (amps, wrong) = sum(&mut classes.chain(circuits));
            let _ = writeln!(s, "check: {w}: {amps} amplitudes, {wrong} wrong");
        }
    }
    for c in &r.circuits {
        let how = match (c.schedule, &c.transport) {
            (Some(sc), Some(w)) => format!(", {} schedule over {w}", sc.name()),
            (Some(sc), None) => format!(", {} schedule", sc.name()),
            _ => String::new(),
        };
        let _ = writeln!(s, "check: {}{how}: {} amplitudes, {} wrong", c.circuit, c.amplitudes, c.wrong);
    }
    for c in &r.checks {
        let what = c.transport.as_deref().unwrap_or("local gates");
        let _ = writeln!(s, "check: {what}: {} amplitudes, {} wrong", c.amplitudes, c.wrong);
    }
    s
}

/// The gate classes: each one's time against a chunk copy within a rank,
/// its widest columns wrapped to the reading width.
fn classes(r: &RegisterRun) -> String {
    let rows = r
        .classes
        .iter()
        .map(|c| {
            let qubits: Vec<String> =
                c.qubits.iter().map(|q| if *q >= r.local_qubits { format!("{q}g") } else { q.to_string() }).collect();
            vec![
                c.class.name().to_string(),
                qubits.join(","),
                c.transport.clone().unwrap_or_else(|| "-".into()),
                if c.bytes > 0 { format_size(c.bytes) } else { "-".into() },
                c.exchange.map_or("-".into(), |e| human_seconds(e.median)),
                human_seconds(c.update.median),
                format!("×{:.2}", c.vs_copy),
            ]
        })
        .collect();
    let head = ["class", "qubits", "wire", "bytes", "exchange", "update", "vs copy"];
    let t = super::table(head.iter().map(|h| h.to_string()), rows);
    format!(
        "\ngate classes (g: a global qubit), each timed and every amplitude checked\n\
         (the checks below); bytes: sent by each rank; vs copy: the class's time\n\
         over a chunk's copy within a rank\n{}\n",
        super::fit::table(t, Some(READ_WIDTH))
    )
}

/// The circuits run, measured beside their price from the gate classes.
fn circuits(r: &RegisterRun) -> String {
    let rows = r
        .circuits
        .iter()
        .map(|c| {
            let how = match (c.schedule, &c.transport) {
                (Some(s), Some(w)) => format!("{}/{w}", s.name()),
                (Some(s), None) => s.name().to_string(),
                _ => "-".into(),
            };
            vec![
                c.circuit.clone(),
                how,
                if c.circuit == "qft" { c.gates.to_string() } else { format!("2×{}", c.gates / 2) },
                c.exchanges.to_string(),
                if c.bytes_per_rank > 0 { format_size(c.bytes_per_rank) } else { "-".into() },
                human_seconds(c.time.median),
                c.projected_s.map_or("-".into(), human_seconds),
                c.projected_s.map_or("-".into(), |p| format!("{:.2}", p / c.time.median)),
            ]
        })
        .collect();
    format!(
        "\ncircuits run end to end (schedule/wire; 2×N gates: N, then their mirror;\n\
         time: the median round; bytes: sent by each rank) beside their price from\n\
         the gate classes (projected)\n{}\n",
        table(&["circuit", "schedule", "gates", "exch.", "bytes", "time", "projected", "p/m"], rows)
    )
}

/// Whether spreading pays, circuit by circuit; `shared` says what shared
/// the devices of the spread register, where something did.
fn decisions(ds: &[Decision], shared: Option<String>) -> String {
    if ds.is_empty() {
        return String::new();
    }
    let mut s = String::from("\n== verdict\n");
    for d in ds {
        let one = match d.one_gpu_s {
            Some(t) if d.gpus > 1 => format!("; one rank {} ({})", human_seconds(t), d.one_gpu_from),
            _ => String::new(),
        };
        let ranks = if d.gpus == 1 { "1 rank".to_string() } else { format!("{} ranks", d.gpus) };
        s.push_str(&said(&format!(
            "{}({}) on {ranks}: {} measured{one} → {}",
            d.circuit,
            d.qubits,
            human_seconds(d.spread_s),
            d.verdict
        )));
    }
    if let Some(shared) = shared.filter(|_| ds.iter().any(|d| d.gpus > 1)) {
        s.push_str(&said(&format!("warning: {shared}; the verdict holds for this sharing only")));
    }
    s.push_str("(the spread times are measured; a one-rank time says how it was had)\n");
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

/// The cells every row of register `r` starts with: which register, what
/// kind of row, which class or circuit.
fn register_keys(r: &RegisterRun, kind: &str, name: &str) -> Vec<Cell> {
    vec![
        Cell::key("qubits", r.qubits),
        Cell::key("precision", r.precision.name()),
        Cell::key("ranks", r.ranks),
        Cell::key("memory", r.memory.as_str()),
        Cell::key("kind", kind),
        Cell::key("name", name),
    ]
}

impl Rows for ExchangeRun {
    const KIND: &'static str = crate::record::exchange::KIND;

    /// One row per gate class and per circuit, and per count, schedule and
    /// wire a plan projected.
    fn rows(&self) -> Vec<Vec<Cell>> {
        let transport = |t: &Option<String>| Cell::key("transport", t.as_deref().unwrap_or("-"));
        let rows = self.registers.iter().flat_map(|r| {
            let classes = r.classes.iter().map(move |c| {
                let on: Vec<String> = c.qubits.iter().map(u32::to_string).collect();
                let mut row = register_keys(r, "class", c.class.name());
                row.extend([
                    Cell::key("on", on.join(" ")),
                    Cell::key("schedule", "-"),
                    transport(&c.transport),
                    Cell::figure("bytes", c.bytes),
                    Cell::figure("exchange_s", c.exchange.map(|e| e.median)),
                    Cell::figure("update_s", c.update.median),
                    Cell::figure("time_s", c.time_s),
                    Cell::figure("projected_s", None::<f64>),
                    Cell::figure("wrong", c.wrong),
                ]);
                row
            });
            let circuits = r.circuits.iter().map(move |c| {
                let mut row = register_keys(r, "circuit", &c.circuit);
                row.extend([
                    Cell::key("on", "-"),
                    Cell::key("schedule", c.schedule.map_or("-", |s| s.name())),
                    transport(&c.transport),
                    Cell::figure("bytes", c.bytes_per_rank),
                    Cell::figure("exchange_s", None::<f64>),
                    Cell::figure("update_s", None::<f64>),
                    Cell::figure("time_s", c.time.median),
                    Cell::figure("projected_s", c.projected_s),
                    Cell::figure("wrong", c.wrong),
                ]);
                row
            });
            classes.chain(circuits)
        });
        let plans = self.forecasts.iter().map(|f| {
            vec![
                Cell::key("qubits", f.qubits),
                Cell::key("precision", f.precision.name()),
                Cell::key("ranks", f.gpus),
                Cell::key("memory", "projected"),
                Cell::key("kind", "plan"),
                Cell::key("name", f.circuit.as_str()),
                Cell::key("on", "-"),
                Cell::key("schedule", f.schedule.map_or("-", |s| s.name())),
                Cell::key("transport", f.transport.as_deref().unwrap_or("-")),
                Cell::figure("bytes", f.bytes_per_gpu),
                Cell::figure("exchange_s", None::<f64>),
                Cell::figure("update_s", None::<f64>),
                Cell::figure("time_s", None::<f64>),
                Cell::figure("projected_s", f.projected_s),
                Cell::figure("wrong", None::<f64>),
            ]
        });
        rows.chain(plans).collect()
    }
}
