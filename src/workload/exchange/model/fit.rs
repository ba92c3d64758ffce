//! A machine's figures from measured exchange records: the local pass's
//! launch α and memory β fitted to every local class the records timed
//! (their bytes differ from class to class and from register to register,
//! which makes both visible), each wire's α and β at each level fitted to
//! its exchanges, and the class tables themselves for the nearest-class
//! price. Each record says what it ran on: ranks sharing a device, devices
//! per node, nodes.

use super::{ClassTable, Level, LevelRate, Machine, Placement, Rate, WireFigures, price, traffic};
use crate::error::{Error, Result};
use crate::record::RankInfo;
use crate::record::exchange::{ClassTime, ExchangeRun, RegisterRun};
use crate::statevec::circuit::hadamard;
use crate::statevec::spec::CircuitSpec;
use crate::statevec::layout::{GlobalOp, Layout};
use crate::statevec::schedule::{Schedule, compile};
use crate::statevec::step::{Class, PhysicalGate};
use crate::stats::Summary;
use crate::transport::amplitudes::Wire;
use num_complex::Complex64;

/// QuEST v4's message piece, and NCCL's default chunk here: 2^28 amplitudes.
const PIECE_AMPS: u64 = 1 << 28;

/// What a record's ranks ran on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunShape {
    pub nodes: usize,
    /// Distinct devices (GPUs, or a node's cores for host ranks).
    pub devices: usize,
    pub ranks: usize,
    /// Ranks on the busiest device.
    pub sharing: usize,
    /// The most ranks one process ran as threads.
    pub threads: usize,
}

impl RunShape {
    /// The shape of `ranks` ranks of a record: GPUs by node and bus, host
    /// ranks by node over `cores` cores each (every rank its own core when
    /// the record does not say).
    pub fn of(devices: &[RankInfo], ranks: usize, cores: Option<usize>) -> RunShape {
        let mut hosts: Vec<&str> = devices.iter().map(|d| d.host.as_str()).collect();
        hosts.sort_unstable();
        hosts.dedup();
        let nodes = hosts.len().max(1);
        let mut processes: Vec<(&str, u32)> = devices.iter().map(|d| (d.host.as_str(), d.pid)).collect();
        processes.sort_unstable();
        processes.dedup();
        let threads = ranks.div_ceil(processes.len().max(1)).max(1);
        let host_ranks = devices.iter().all(|d| d.bus_id == "host");
        if host_ranks || devices.len() != ranks {
            let per_node = ranks.div_ceil(nodes);
            let cores = cores.unwrap_or(per_node).max(1);
            let sharing = per_node.div_ceil(cores).max(1);
            return RunShape { nodes, devices: nodes * per_node.min(cores), ranks, sharing, threads };
        }
        let mut on: std::collections::HashMap<(&str, &str), usize> = std::collections::HashMap::new();
        for d in devices {
            *on.entry((d.host.as_str(), d.bus_id.as_str())).or_default() += 1;
        }
        RunShape { nodes, devices: on.len(), ranks, sharing: on.into_values().max().unwrap_or(1), threads }
    }

    /// "2 processes sharing 1 NVIDIA H200", "4 NVIDIA H200s on 2 nodes", "8 host ranks on 2 cores".
    pub fn describe(&self, device: &str, host: bool) -> String {
        let s = |n: usize| if n == 1 { "" } else { "s" };
        let on = if self.nodes > 1 { format!(" on {} nodes", self.nodes) } else { String::new() };
        if host {
            return format!(
                "{} host rank{} on {} core{}{on}",
                self.ranks,
                s(self.ranks),
                self.devices,
                s(self.devices)
            );
        }
        if self.sharing > 1 {
            return format!("{} processes sharing {} {device}{}{on}", self.ranks, self.devices, s(self.devices));
        }
        format!("{} {device}{}{on}", self.devices, s(self.devices))
    }
}

/// The step a class was timed as (its matrix or phase does not change
/// what it moves).
pub fn step_of(c: &ClassTime) -> Option<PhysicalGate> {
    let q = |i: usize| c.qubits.get(i).copied();
    let phase = Complex64::new(0.0, 1.0);
    Some(match c.class {
        Class::H => PhysicalGate::H(q(0)?),
        Class::U => PhysicalGate::U { q: q(0)?, m: hadamard() },
        Class::Phase => PhysicalGate::Phase { qubits: c.qubits.clone(), phase },
        Class::Swap => PhysicalGate::Swap(q(0)?, q(1)?),
        Class::Cx => PhysicalGate::Cx { c: q(0)?, t: q(1)? },
        Class::GlobalGate => PhysicalGate::GlobalU { t: q(0)?, m: hadamard() },
        Class::GlobalSwap => PhysicalGate::GlobalSwap { t: q(0)?, q: q(1)? },
        Class::GlobalSwap2 => PhysicalGate::GlobalSwap2(q(0)?, q(1)?),
        Class::GlobalCx => PhysicalGate::GlobalCx { c: q(0)?, t: q(1)? },
    })
}

/// α and β of `seconds = α·messages + bytes/β`, fitted to `points`
/// (messages, bytes, seconds) by least squares on relative errors, so that
/// a 10 µs step weighs as much as a 10 s one; α is at least 0. None with no
/// point or no bandwidth to be seen.
pub fn fit(points: &[(f64, f64, f64)]) -> Option<Rate> {
    let pts: Vec<(f64, f64, f64)> = points.iter().copied().filter(|p| p.2 > 0.0 && p.1 > 0.0).collect();
    if pts.is_empty() {
        return None;
    }
    // Weighted normal equations of y = α·n + s·x with weights 1/y².
    let (mut nn, mut nx, mut xx, mut ny, mut xy) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for &(n, x, y) in &pts {
        let w = 1.0 / (y * y);
        nn += w * n * n;
        nx += w * n * x;
        xx += w * x * x;
        ny += w * n * y;
        xy += w * x * y;
    }
    let det = nn * xx - nx * nx;
    let (alpha, s) =
        if det > 1e-12 * nn * xx { ((ny * xx - xy * nx) / det, (nn * xy - nx * ny) / det) } else { (0.0, xy / xx) };
    let (alpha, s) = if alpha < 0.0 { (0.0, xy / xx) } else { (alpha, s) };
    (s > 0.0 && s.is_finite() && alpha.is_finite()).then(|| Rate { alpha_s: alpha, gbps: 1.0 / s / 1e9 })
}

/// The farthest level rank bit `j` of a record's ranks crosses.
/// (The ranks of a register other than the one the record lists, threads
/// of its processes, exchange within the node.)
fn level_in_run(devices: &[RankInfo], ranks: usize, j: u32) -> Level {
    if devices.len() == ranks { far_level(devices, j) } else { Level::Node }
}

/// The farthest level between rank r and rank r XOR 2^j over a record's ranks.
fn far_level(devices: &[RankInfo], j: u32) -> Level {
    let mut level = Level::Device;
    for (r, d) in devices.iter().enumerate() {
        let Some(p) = devices.get(r ^ (1 << j)) else { continue };
        let here = if p.host != d.host {
            Level::Fabric
        } else if p.bus_id != d.bus_id || d.bus_id == "host" {
            Level::Node
        } else {
            Level::Device
        };
        level = level.max(here);
    }
    level
}

/// A register of a record with its shape and its classes.
struct Measured<'a> {
    reg: &'a RegisterRun,
    classes: Vec<ClassTime>,
    layout: Layout,
    shape: RunShape,
    devices: &'a [RankInfo],
}

/// A register's classes; records from before the classes timed local H
/// gates and global gates and swaps, which are classes of their own.
fn classes_of(reg: &RegisterRun) -> Vec<ClassTime> {
    if !reg.classes.is_empty() {
        return reg.classes.clone();
    }
    let class = |class, qubits, transport, bytes, exchange, update: Summary, time_s| ClassTime {
        class,
        qubits,
        transport,
        bytes,
        exchange,
        update,
        time_s,
        vs_copy: 0.0,
        amplitudes: 0,
        wrong: 0,
    };
    let local = reg.local_gates.iter().map(|g| class(Class::H, vec![g.qubit], None, 0, None, g.time, g.time.median));
    let global = reg.global_gates.iter().map(|g| {
        let (c, qubits) = match g.pattern {
            GlobalOp::Gate => (Class::GlobalGate, vec![g.qubit]),
            GlobalOp::Swap => (Class::GlobalSwap, vec![g.qubit, reg.local_qubits.saturating_sub(1)]),
        };
        let time = g.exchange.median + g.update.median;
        class(c, qubits, Some(g.transport.clone()), g.bytes, Some(g.exchange), g.update, time)
    });
    local.chain(global).collect()
}

/// The registers of `memory` ("gpu" or "host") with timed steps in `runs`.
fn measured<'a>(runs: &'a [(String, ExchangeRun)], memory: &str) -> Result<Vec<Measured<'a>>> {
    let mut out = Vec::new();
    for (_, run) in runs {
        for reg in run.registers.iter().filter(|g| g.memory == memory) {
            let classes = classes_of(reg);
            if classes.is_empty() {
                continue;
            }
            out.push(Measured {
                reg,
                classes,
                layout: Layout::new(reg.qubits, reg.ranks, reg.precision)?,
                shape: RunShape::of(&run.devices, reg.ranks, run.host_cores),
                devices: &run.devices,
            });
        }
    }
    Ok(out)
}

impl Machine {
    /// The machine of exchange records' registers: their GPU registers,
    /// or their host ones where they hold none. Every figure is checked
    /// first: a time that is not a positive number is the record's fault,
    /// named with its file and place.
    pub fn of_runs(runs: &[(String, ExchangeRun)]) -> Result<Machine> {
        for (file, run) in runs {
            sound(file, run)?;
        }
        let gpu = runs.iter().any(|(_, r)| r.registers.iter().any(|g| g.memory == "gpu" && !classes_of(g).is_empty()));
        let memory = if gpu { "gpu" } else { "host" };
        let regs = measured(runs, memory)?;
        if regs.is_empty() {
            return Err(Error::Usage(format!("--from: no {memory} register with timed steps in these records")));
        }
        let local = local_rate(&regs).ok_or_else(|| {
            Error::Usage("--from: the records' local classes show no memory bandwidth to project from".into())
        })?;
        let mut wires = wire_rates(&regs);
        if memory == "host" && wires.iter().all(|w| w.name != "cpu") {
            wires.push(host_copy_wire(&regs, local));
        }
        if memory == "host" {
            // Threads that take turns on a core copy through the same memory
            // as threads on cores of their own.
            for w in &mut wires {
                if let (None, Some(&node)) = (w.at(Level::Device), w.at(Level::Node)) {
                    w.levels.insert(0, LevelRate { level: Level::Device, ..node });
                }
            }
        }
        // Records from before they kept it do not say the devices' memory.
        let device_memory = runs.iter().filter_map(|(_, r)| r.device_memory).min();
        let mut unknown = Vec::new();
        if device_memory.is_none() {
            unknown.push("a device's memory (the records do not say it): every count is taken to fit".into());
        }
        let top = regs.iter().max_by_key(|m| m.reg.chunk_bytes * m.shape.sharing as u64).expect("not empty");
        // Host ranks' devices are the node's cores.
        let cores = runs.iter().find_map(|(_, r)| r.host_cores);
        let per_node = match (memory, cores) {
            ("host", Some(c)) => c,
            _ => (top.shape.devices / top.shape.nodes).max(1),
        };
        let names: Vec<String> = runs.iter().map(|(f, _)| f.clone()).collect();
        let device = runs.iter().find_map(|(_, r)| r.devices.first()).map_or("GPU", |d| d.name.as_str());
        let mut by_shape: std::collections::BTreeMap<String, Vec<u32>> = Default::default();
        for m in &regs {
            by_shape.entry(m.shape.describe(device, memory == "host")).or_default().push(m.reg.qubits);
        }
        let shapes: Vec<String> =
            by_shape.into_iter().map(|(on, qubits)| format!("{} qubits on {on}", sizes(qubits))).collect();
        let mut m = Machine {
            source: format!("measured: {} ({})", names.join(", "), shapes.join("; ")),
            gpu_memory: device_memory.unwrap_or(u64::MAX),
            gpus_per_node: per_node,
            host: memory == "host",
            local,
            step_s: local.alpha_s,
            dispatch: dispatch(&regs),
            processes_measured: regs.iter().any(|m| m.shape.ranks > m.shape.threads),
            unknown,
            wires,
            tables: regs
                .iter()
                .map(|m| ClassTable { classes: m.classes.clone(), layout: m.layout, sharing: m.shape.sharing })
                .collect(),
        };
        if let Some(s) = step_cost(&m, &regs) {
            m.step_s = s;
        }
        Ok(m)
    }
}

/// Register sizes as a person reads them: "30", "16, 18", "10 to 20".
fn sizes(mut qubits: Vec<u32>) -> String {
    qubits.sort_unstable();
    qubits.dedup();
    match qubits[..] {
        [] => String::new(),
        [a, .., b] if qubits.len() > 2 && b - a + 1 == qubits.len() as u32 => format!("{a} to {b}"),
        _ => qubits.iter().map(u32::to_string).collect::<Vec<_>>().join(", "),
    }
}

/// Err naming the first figure of `run` that cannot be a measurement.
fn sound(file: &str, run: &ExchangeRun) -> Result<()> {
    let bad = |at: String, v: f64| {
        Err(Error::Usage(format!("--from {file}: {at} is {v}: not a measured time or rate, so nothing can be planned from it")))
    };
    let time = |v: f64| v.is_finite() && v >= 0.0;
    if run.device_memory == Some(0) {
        return bad("device_memory".into(), 0.0);
    }
    for (i, g) in run.registers.iter().enumerate() {
        let r = g.references.local_copy_gbps;
        if !(r.is_finite() && r >= 0.0) {
            return bad(format!("registers[{i}].references.local_copy_gbps"), r);
        }
        for (j, c) in g.classes.iter().enumerate() {
            let ex = c.exchange.map_or(0.0, |e| e.median);
            for (what, v) in [("time_s", c.time_s), ("update.median", c.update.median), ("exchange.median", ex)] {
                if !time(v) {
                    return bad(format!("registers[{i}].classes[{j}].{what}"), v);
                }
            }
        }
        for (j, c) in g.circuits.iter().enumerate() {
            if !time(c.time.median) {
                return bad(format!("registers[{i}].circuits[{j}].time.median"), c.time.median);
            }
        }
        for (j, l) in g.local_gates.iter().enumerate() {
            if !time(l.time.median) {
                return bad(format!("registers[{i}].local_gates[{j}].time.median"), l.time.median);
            }
        }
    }
    Ok(())
}

/// The records' step dispatch, the median of each thread count's.
fn dispatch(regs: &[Measured]) -> Vec<(usize, f64)> {
    let mut by: std::collections::BTreeMap<usize, Vec<f64>> = Default::default();
    for d in regs.iter().flat_map(|m| &m.reg.references.step_dispatch) {
        by.entry(d.ranks).or_default().push(d.seconds);
    }
    by.into_iter().map(|(k, s)| (k, Summary::of(&s).median)).collect()
}

/// What a step costs within the records' circuits besides what the model
/// prices from the classes: the per-step α that makes the model meet the
/// circuits measured, fitted on relative errors (small registers, where it
/// dominates, weigh as much as large ones); None where no circuit of the
/// records can be priced.
fn step_cost(m: &Machine, regs: &[Measured]) -> Option<f64> {
    let bare = Machine { step_s: 0.0, ..m.clone() };
    let (mut xr, mut xx) = (0.0, 0.0);
    for r in regs {
        let at = Placement {
            layout: r.layout,
            sharing: r.shape.sharing,
            devices_per_node: (r.shape.devices / r.shape.nodes).max(1),
            threads: r.shape.threads,
        };
        for c in &r.reg.circuits {
            let Ok(circuit) = CircuitSpec::parse(&c.circuit).and_then(|s| s.build(r.layout.qubits)) else { continue };
            let wire = match &c.transport {
                Some(w) => match bare.wire(w) {
                    Some(w) => Some(w),
                    None => continue,
                },
                None => None,
            };
            let steps = compile(&circuit, &r.layout, c.schedule.unwrap_or(Schedule::Quest));
            let Ok(p) = price(&steps, &at, &bare, wire) else { continue };
            let (x, y) = ((steps.len() * r.shape.sharing) as f64, c.time.median);
            if y > 0.0 {
                xr += x * (y - p.seconds) / (y * y);
                xx += x * x / (y * y);
            }
        }
    }
    (xx > 0.0).then(|| (xr / xx).max(0.0))
}

/// Runs of amplitudes at least this long move whole bursts of memory on
/// every device measured: on an H200 (64 GiB register) a phase on a qubit
/// whose runs are 32 B long took 0.87 of a whole pass where half the
/// register is touched, 64 B 0.68, 128 B 0.55, 256 B 0.51.
const WHOLE_RUNS: f64 = 256.0;

/// The local pass: the local classes, their device's bytes against their
/// time. Classes that touch runs shorter than `WHOLE_RUNS` move more than
/// their bytes by a share no model here knows, which a fit would read as a
/// fixed cost per step (2 ms on the H200, paid again on a register four
/// times smaller); they are left out where the others show two sizes.
fn local_rate(regs: &[Measured]) -> Option<Rate> {
    let mut whole = Vec::new();
    let mut every = Vec::new();
    for m in regs {
        for c in m.classes.iter().filter(|c| !c.class.exchanges()) {
            let Some(step) = step_of(c) else { continue };
            let point = (m.shape.sharing as f64, traffic(&step, &m.layout) * m.shape.sharing as f64, c.time_s);
            every.push(point);
            if shortest_run(&step, &m.layout) >= WHOLE_RUNS {
                whole.push(point);
            }
        }
    }
    let sizes = |pts: &[(f64, f64, f64)]| {
        let (lo, hi) = pts.iter().fold((f64::MAX, 0f64), |(lo, hi), p| (lo.min(p.1), hi.max(p.1)));
        hi > 1.5 * lo
    };
    fit(if sizes(&whole) { &whole } else { &every })
}

/// Bytes of the shortest run of consecutive amplitudes a local step touches.
fn shortest_run(step: &PhysicalGate, layout: &Layout) -> f64 {
    let l = layout.local_qubits();
    let lowest = step.qubits().into_iter().filter(|&q| q < l).min().unwrap_or(l);
    f64::powi(2.0, lowest as i32) * layout.precision.bytes() as f64
}

/// Each wire's rate at each level its exchanges crossed; at the shared
/// device, a wire through host memory is held under the host link the
/// records measured with every rank of a GPU copying at once.
fn wire_rates(regs: &[Measured]) -> Vec<WireFigures> {
    let host_link = regs
        .iter()
        .filter_map(|m| m.reg.references.host_link_gbps.map(|g| g * m.shape.sharing as f64))
        .reduce(f64::max);
    // Per wire and level: the most ranks that shared a device, and the points.
    type Points = (usize, Vec<(f64, f64, f64)>);
    let mut points: std::collections::BTreeMap<(String, Level), Points> = Default::default();
    for m in regs {
        let l = m.layout.local_qubits();
        for c in m.classes.iter().filter(|c| c.class.exchanges()) {
            let (Some(wire), Some(ex), Some(step)) = (&c.transport, &c.exchange, step_of(c)) else { continue };
            let bits: Vec<u32> = match step {
                PhysicalGate::GlobalSwap2(a, b) => vec![a - l, b - l],
                PhysicalGate::GlobalU { t, .. } | PhysicalGate::GlobalSwap { t, .. } | PhysicalGate::GlobalCx { t, .. } => vec![t - l],
                _ => continue,
            };
            let level = bits.iter().map(|&j| level_in_run(m.devices, m.layout.ranks(), j)).max().unwrap_or(Level::Node);
            let bytes = c.bytes as f64;
            let pieces = match wire.as_str() {
                "quest" | "nccl" => (bytes / (PIECE_AMPS * m.layout.precision.bytes()) as f64).ceil().max(1.0),
                _ => 1.0,
            };
            let e = points.entry((wire.clone(), level)).or_insert((m.shape.sharing, Vec::new()));
            e.0 = e.0.max(m.shape.sharing);
            e.1.push((pieces, bytes, ex.median));
        }
    }
    let mut wires: Vec<WireFigures> = Vec::new();
    for ((wire, level), (sharing, pts)) in points {
        let Some(rate) = fit(&pts) else { continue };
        let sharing = if level == Level::Device { sharing } else { 1 };
        let through_host = Wire::parse(&wire).is_some_and(|w| w.imp().through_host());
        let ceiling_gbps = host_link.filter(|_| level == Level::Device && through_host);
        let lr = LevelRate { level, rate, sharing, ceiling_gbps };
        match wires.iter_mut().find(|w| w.name == wire) {
            Some(w) => w.levels.push(lr),
            None => wires.push(WireFigures {
                piece_amps: matches!(wire.as_str(), "quest" | "nccl").then_some(PIECE_AMPS),
                name: wire,
                levels: vec![lr],
                overlaps: false,
            }),
        }
    }
    wires
}

/// Host ranks' own wire when the records ran none: a thread reads its
/// partner's chunk and writes its own, a copy within host memory at the
/// local pass's rate (each byte read and written: half the rate per
/// direction), its α the local pass's.
fn host_copy_wire(regs: &[Measured], local: Rate) -> WireFigures {
    let copy = regs.iter().map(|m| m.reg.references.local_copy_gbps).filter(|g| *g > 0.0).fold(f64::NAN, f64::min);
    let gbps = if copy.is_finite() { copy / 2.0 } else { local.gbps / 2.0 };
    let rate = Rate { alpha_s: local.alpha_s, gbps };
    WireFigures {
        name: "cpu".into(),
        levels: [Level::Device, Level::Node].into_iter().map(|level| LevelRate { level, rate, sharing: 1, ceiling_gbps: None }).collect(),
        piece_amps: None,
        overlaps: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fit_finds_both_latency_and_bandwidth_from_a_sweep() {
        // 10 µs + bytes at 100 GB/s, from 1 KiB to 1 GiB.
        let pts: Vec<(f64, f64, f64)> =
            (10..=30).map(|k| (1.0, (1u64 << k) as f64, 10e-6 + (1u64 << k) as f64 / 100e9)).collect();
        let r = fit(&pts).unwrap();
        assert!((r.alpha_s - 10e-6).abs() < 1e-9 && (r.gbps - 100.0).abs() < 1e-6, "{r:?}");
        // One size: nothing to tell α from β by, all of it bandwidth.
        let r = fit(&[(1.0, 1e9, 0.01)]).unwrap();
        assert_eq!((r.alpha_s, r.gbps), (0.0, 100.0));
        // A negative intercept is noise: α is 0, β refitted.
        let r = fit(&[(1.0, 1e9, 0.0100), (1.0, 2e9, 0.0201)]).unwrap();
        assert!(r.alpha_s == 0.0 && (r.gbps - 99.8).abs() < 0.5, "{r:?}");
        assert_eq!(fit(&[]), None);
    }

    fn rank(r: usize, host: &str, bus: &str) -> RankInfo {
        RankInfo { rank: r, group: 0, pid: 1, host: host.into(), device: 0, bus_id: bus.into(), name: "H200".into() }
    }

    #[test]
    fn sizes_read_as_ranges() {
        assert_eq!(sizes(vec![30]), "30");
        assert_eq!(sizes(vec![18, 16]), "16, 18");
        assert_eq!(sizes((10..=20).rev().collect()), "10 to 20");
        assert_eq!(sizes(vec![10, 11, 13]), "10, 11, 13");
    }

    #[test]
    fn a_record_says_what_it_ran_on() {
        let shared = [rank(0, "a", "0000:01:00"), rank(1, "a", "0000:01:00")];
        let s = RunShape::of(&shared, 2, None);
        assert_eq!((s.nodes, s.devices, s.sharing), (1, 1, 2));
        assert_eq!(s.describe("H200", false), "2 processes sharing 1 H200");
        assert_eq!(far_level(&shared, 0), Level::Device);
        let two_nodes = [rank(0, "a", "x"), rank(1, "a", "y"), rank(2, "b", "x"), rank(3, "b", "y")];
        let s = RunShape::of(&two_nodes, 4, None);
        assert_eq!(s.describe("H200", false), "4 H200s on 2 nodes");
        assert_eq!((far_level(&two_nodes, 0), far_level(&two_nodes, 1)), (Level::Node, Level::Fabric));
        let threads: Vec<RankInfo> = (0..8).map(|r| rank(r, "a", "host")).collect();
        let s = RunShape::of(&threads, 8, Some(2));
        assert_eq!((s.devices, s.sharing), (2, 4));
        assert_eq!(s.describe("", true), "8 host ranks on 2 cores");
    }
}
