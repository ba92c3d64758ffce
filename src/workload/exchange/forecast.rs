//! Answers for hardware a user does not have: for a register size and each
//! GPU count, whether the register fits (the state and each simulator's
//! exchange buffer: QuEST keeps one as large as the chunk, the swap
//! schedule needs half of one), and what each circuit would cost under
//! each schedule and wire, priced from measured runs (this run's, or
//! `--from` records: their gate classes scaled to the chunk, their wires'
//! bandwidths) or from a profile's machine figures (HBM, NVLink, fabric:
//! a memory-bound step moves what it touches, an exchange its bytes over
//! the link). Every figure here is projected and names where it came from.

use super::projection::{self, Table};
use crate::error::{Error, Result};
use crate::record::exchange::{ClassTime, ExchangeRun, Forecast, RegisterRun};
use crate::statevec::layout::{Layout, Precision};
use crate::statevec::schedule::{Schedule, compile};
use crate::statevec::spec::CircuitSpec;
use crate::statevec::step::{Class, PhysicalGate};

/// A profile's `[machine]`: the figures a forecast for such a machine
/// prices from, with where they come from.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MachineFigures {
    /// Bytes of one GPU's memory, "141G" (K, M, G, T binary; or a number).
    #[serde(deserialize_with = "size", serialize_with = "size_text")]
    pub gpu_memory: u64,
    pub gpus_per_node: usize,
    /// A copy within a GPU, read + write, GB/s.
    pub hbm_gbps: f64,
    /// GPU to GPU within a node, per direction, GB/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nvlink_gbps: Option<f64>,
    /// GPU to GPU across nodes (each GPU's share of the fabric), per direction, GB/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fabric_gbps: Option<f64>,
    pub source: String,
}

fn size<'de, D: serde::Deserializer<'de>>(d: D) -> std::result::Result<u64, D::Error> {
    let text = String::deserialize(d)?;
    crate::units::parse_size(&text).map_err(|e| serde::de::Error::custom(e.message()))
}

fn size_text<S: serde::Serializer>(v: &u64, s: S) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_str(&crate::units::format_size(*v))
}

use serde::Deserialize;

/// One wire's bandwidth, per direction, within a node and across nodes.
#[derive(Debug, Clone, PartialEq)]
pub struct Link {
    pub transport: String,
    pub node_gbps: Option<f64>,
    pub fabric_gbps: Option<f64>,
}

/// What the forecast prices from.
#[derive(Debug, Clone, PartialEq)]
pub struct Machine {
    /// Where the figures come from, in words.
    pub source: String,
    /// Bytes of one GPU's memory.
    pub gpu_memory: u64,
    pub gpus_per_node: usize,
    /// A copy within a GPU, read + write bytes / s.
    pub hbm_gbps: f64,
    pub links: Vec<Link>,
    /// Measured gate classes, with the layout they were measured on.
    pub classes: Option<(Vec<ClassTime>, Layout)>,
}

impl Machine {
    /// The machine of a profile's `[machine]` figures.
    pub fn of_profile(name: &str, m: &MachineFigures) -> Machine {
        let mut links = vec![Link { transport: "nccl".into(), node_gbps: m.nvlink_gbps, fabric_gbps: m.fabric_gbps }];
        if m.nvlink_gbps.is_some() {
            links.push(Link { transport: "p2p-ce".into(), node_gbps: m.nvlink_gbps, fabric_gbps: None });
        }
        Machine {
            source: format!("profile {name}'s machine figures ({})", m.source),
            gpu_memory: m.gpu_memory,
            gpus_per_node: m.gpus_per_node,
            hbm_gbps: m.hbm_gbps,
            links,
            classes: None,
        }
    }

    /// The machine of exchange records: the largest GPU register measured,
    /// its local classes, the bandwidth every wire reached.
    pub fn of_runs(runs: &[(String, ExchangeRun)]) -> Result<Machine> {
        let regs: Vec<(&str, &ExchangeRun, &RegisterRun)> = runs
            .iter()
            .flat_map(|(f, r)| {
                r.registers
                    .iter()
                    .filter(|g| g.memory == "gpu" && !g.classes.is_empty())
                    .map(move |g| (f.as_str(), r, g))
            })
            .collect();
        let Some(&(file, run, top)) = regs.iter().max_by_key(|(_, _, g)| g.chunk_bytes) else {
            return Err(Error::Usage(
                "--from: no GPU register with gate classes in these records (they come from `qbench exchange` since circuits ran)".into(),
            ));
        };
        let gpu_memory = run
            .device_memory
            .ok_or_else(|| Error::Usage(format!("{file}: the record does not say its GPUs' memory")))?;
        let hosts = |r: &ExchangeRun| {
            let mut h: Vec<&str> = r.devices.iter().map(|d| d.host.as_str()).collect();
            h.sort_unstable();
            h.dedup();
            h.len()
        };
        let gpus_per_node = (run.devices.len() / hosts(run).max(1)).max(1);
        let mut links: Vec<Link> = Vec::new();
        for (_, r, g) in &regs {
            let across = hosts(r) > 1;
            for (wire, gbps) in g.exchange_rates() {
                let l = match links.iter_mut().find(|l| l.transport == wire) {
                    Some(l) => l,
                    None => {
                        links.push(Link { transport: wire, node_gbps: None, fabric_gbps: None });
                        links.last_mut().expect("pushed")
                    }
                };
                let slot = if across { &mut l.fabric_gbps } else { &mut l.node_gbps };
                // The slowest figure a wire reached: a forecast should not flatter.
                *slot = Some(slot.map_or(gbps, |s: f64| s.min(gbps)));
            }
        }
        let layout = Layout::new(top.qubits, top.ranks, top.precision)?;
        let local: Vec<ClassTime> = top.classes.iter().filter(|c| !c.class.exchanges()).cloned().collect();
        let names: Vec<&str> = runs.iter().map(|(f, _)| f.as_str()).collect();
        Ok(Machine {
            source: format!(
                "measured: {} ({} qubits on {} {}{})",
                names.join(", "),
                top.qubits,
                top.ranks,
                run.devices.first().map_or("GPU", |d| d.name.as_str()),
                if top.ranks == 1 { "" } else { "s" }
            ),
            gpu_memory,
            gpus_per_node,
            hbm_gbps: top.references.local_copy_gbps,
            links,
            classes: Some((local, layout)),
        })
    }
}

/// Bytes one GPU holds for a register of `layout` under a schedule: the
/// chunk, and QuEST's exchange buffer as large (the swap schedule half of
/// one); nothing more on one GPU.
pub fn bytes_per_gpu(layout: &Layout, schedule: Schedule) -> u64 {
    let chunk = layout.chunk_bytes();
    match (layout.ranks(), schedule) {
        (1, _) => chunk,
        (_, Schedule::Quest) => 2 * chunk,
        (_, Schedule::Swap) => chunk + chunk / 2,
    }
}

/// The bytes a memory-bound step moves on a rank, read and written: what
/// it touches, in whole 32-byte sectors.
fn traffic(step: &PhysicalGate, layout: &Layout) -> f64 {
    let l = layout.local_qubits();
    let chunk = layout.chunk_bytes() as f64;
    let b = layout.precision.bytes() as f64;
    let qs = step.qubits();
    let locals: Vec<u32> = qs.iter().copied().filter(|&q| q < l).collect();
    let lowest = locals.iter().copied().min().unwrap_or(l);
    // A run of 2^lowest amplitudes shorter than a sector moves the sector.
    let sector = |share: f64| (share * (32.0 / (f64::powi(2.0, lowest as i32) * b)).max(1.0)).min(1.0);
    let share = match step.class() {
        Class::H | Class::U => 1.0,
        Class::Phase => sector(f64::powi(0.5, locals.len() as i32)),
        Class::Swap | Class::Cx => sector(0.5),
        _ => 1.0,
    };
    2.0 * chunk * share
}

/// A step's seconds from the machine figures: the traffic of the local
/// work at the HBM's copy rate, an exchange's bytes over `link`.
fn model(step: &PhysicalGate, layout: &Layout, m: &Machine, link: Option<f64>) -> Option<f64> {
    let hbm = m.hbm_gbps * 1e9;
    let chunk = layout.chunk_bytes() as f64;
    if step.is_local() {
        return Some(traffic(step, layout) / hbm);
    }
    let exchange = step.bytes(layout) as f64 / (link? * 1e9);
    // The update: reading both halves of a pair and writing one (a gate),
    // or the packing and placing of half a chunk (a swap, a CNOT).
    let packed = step.qubits().iter().any(|&q| q < layout.local_qubits() - 1);
    let update = match step.class() {
        Class::GlobalGate => 3.0 * chunk,
        Class::GlobalSwap2 => 2.0 * chunk,
        _ if packed => 2.0 * chunk,
        _ => chunk,
    };
    Some(exchange + update / hbm)
}

/// The wire's bandwidth for a step on `layout`: within a node where the
/// partner is (its global qubit indexes a rank of the same node), across
/// nodes otherwise.
fn link_for(step: &PhysicalGate, layout: &Layout, m: &Machine, link: &Link) -> Option<f64> {
    let l = layout.local_qubits();
    let node_bits = m.gpus_per_node.max(1).trailing_zeros();
    let across = step.qubits().iter().any(|&q| q >= l && q - l >= node_bits);
    if across { link.fabric_gbps } else { link.node_gbps }
}

/// The seconds of `steps` on `layout` over `link` (None on one GPU).
fn seconds(steps: &[PhysicalGate], layout: &Layout, m: &Machine, link: Option<&Link>) -> Option<f64> {
    steps
        .iter()
        .map(|s| {
            if s.is_local()
                && let Some((classes, measured)) = &m.classes
            {
                return projection::price(std::slice::from_ref(s), layout, None, Table { classes, layout: *measured });
            }
            let bw = match link {
                Some(l) if !s.is_local() => link_for(s, layout, m, l),
                _ => None,
            };
            model(s, layout, m, bw)
        })
        .sum()
}

/// A count's fastest price: seconds, the schedule, the wire when spread.
type Best = (f64, Option<Schedule>, Option<String>);

/// Whether the register fits on `gpus` GPUs under `schedule`, with 1 GiB
/// left for the runtime.
fn fits(qubits: u32, gpus: usize, precision: Precision, schedule: Schedule, m: &Machine) -> bool {
    Layout::new(qubits, gpus, precision).is_ok_and(|l| bytes_per_gpu(&l, schedule) + (1 << 30) <= m.gpu_memory)
}

/// The forecast rows: per GPU count, per circuit, the fit, and the fastest
/// schedule and wire with their price against one GPU.
pub fn forecast(
    qubits: u32,
    gpus: &[usize],
    precision: Precision,
    circuits: &[CircuitSpec],
    schedules: &[Schedule],
    m: &Machine,
) -> Result<Vec<Forecast>> {
    let mut out = Vec::new();
    for spec in circuits {
        let circuit = spec.build(qubits)?;
        // The fastest schedule (and wire, when spread), and whether the
        // register fits at that count; one GPU too may relabel SWAP gates
        // instead of moving amplitudes.
        let price = |g: usize| -> Result<(Option<Best>, bool)> {
            let layout = Layout::new(qubits, g, precision)?;
            let mut best: Option<Best> = None;
            for &s in schedules {
                let steps = compile(&circuit, &layout, s);
                let links: Vec<Option<&Link>> = if g == 1 { vec![None] } else { m.links.iter().map(Some).collect() };
                for link in links {
                    if let Some(t) = seconds(&steps, &layout, m, link)
                        && best.as_ref().is_none_or(|b| t < b.0)
                    {
                        best = Some((t, Some(s), link.map(|l| l.transport.clone())));
                    }
                }
            }
            let fits = fits(qubits, g, precision, Schedule::Quest, m)
                || (g > 1 && fits(qubits, g, precision, Schedule::Swap, m));
            Ok((best, fits))
        };
        // What every count is held against, whether or not -g names 1.
        let one = match price(1)? {
            (Some(b), true) => Some(b.0),
            _ => None,
        };
        for &g in gpus {
            let layout = Layout::new(qubits, g, precision)?;
            let (best, fits_here) = price(g)?;
            let speedup = match (&best, one) {
                (Some((t, ..)), Some(o)) if g > 1 => Some(o / t),
                _ => None,
            };
            let gib = |b: u64| format!("{:.1} GiB", b as f64 / f64::powi(2.0, 30));
            let verdict = match (&best, fits_here, speedup) {
                (_, false, _) => format!(
                    "does not fit: a GPU would hold {} (the swap schedule's), it has {}",
                    gib(bytes_per_gpu(&layout, Schedule::Swap)),
                    gib(m.gpu_memory)
                ),
                (None, _, _) => "no wire of the sources reaches across this many GPUs".into(),
                (Some(_), true, None) if g == 1 => "one GPU holds it".into(),
                (Some(_), true, None) => "one GPU cannot hold it: spreading buys the memory".into(),
                (Some(_), true, Some(x)) if x >= 1.05 => format!("spreading pays: ×{x:.2} faster than one GPU"),
                (Some(_), true, Some(x)) if x > 0.95 => "break-even with one GPU".into(),
                (Some(_), true, Some(x)) => format!("spreading costs ×{:.2} against one GPU", 1.0 / x),
            };
            out.push(Forecast {
                circuit: spec.name(),
                qubits,
                gpus: g,
                precision,
                fits_double_quest: fits(qubits, g, Precision::Double, Schedule::Quest, m),
                fits_double_swap: fits(qubits, g, Precision::Double, Schedule::Swap, m),
                fits_single_quest: fits(qubits, g, Precision::Single, Schedule::Quest, m),
                fits_single_swap: fits(qubits, g, Precision::Single, Schedule::Swap, m),
                bytes_per_gpu: bytes_per_gpu(&layout, Schedule::Quest),
                projected_s: best.as_ref().filter(|_| fits_here).map(|b| b.0),
                schedule: best.as_ref().filter(|_| fits_here).and_then(|b| b.1),
                transport: best.as_ref().filter(|_| fits_here).and_then(|b| b.2.clone()),
                speedup: speedup.filter(|_| fits_here),
                verdict,
                source: m.source.clone(),
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h200() -> Machine {
        Machine {
            source: "test".into(),
            gpu_memory: 141_000_000_000,
            gpus_per_node: 8,
            hbm_gbps: 4200.0,
            links: vec![Link { transport: "nccl".into(), node_gbps: Some(370.0), fabric_gbps: Some(45.0) }],
            classes: None,
        }
    }

    #[test]
    fn thirty_six_qubits_fit_on_eight_h200s_in_single_not_double() {
        let rows =
            forecast(36, &[1, 2, 4, 8], Precision::Double, &[CircuitSpec::Qft], &Schedule::ALL, &h200()).unwrap();
        assert_eq!(rows.len(), 4);
        // 2^36 amplitudes: 1 TiB in double, 512 GiB in single.
        let fit = |g: usize| rows.iter().find(|r| r.gpus == g).unwrap();
        assert!(!fit(1).fits_double_quest && !fit(1).fits_single_quest);
        assert!(!fit(4).fits_double_swap && fit(8).fits_single_quest && !fit(8).fits_double_quest);
        assert!(!fit(8).fits_double_swap && fit(8).fits_single_swap, "{:?}", fit(8));
        assert!(rows.iter().all(|r| r.verdict.contains("does not fit") == r.projected_s.is_none()), "{rows:?}");
        // 30 qubits on one GPU: about 480 memory-bound passes of 16 GiB.
        let rows = forecast(30, &[1, 2], Precision::Double, &[CircuitSpec::Qft], &Schedule::ALL, &h200()).unwrap();
        let one = rows[0].projected_s.unwrap();
        assert!(one > 0.5 && one < 4.0, "{one}");
        assert!(rows[1].speedup.is_some() && rows[1].transport.as_deref() == Some("nccl"));
        // Without 1 among the counts, two GPUs are still held against one.
        let two = forecast(30, &[2], Precision::Double, &[CircuitSpec::Qft], &Schedule::ALL, &h200()).unwrap();
        assert_eq!(two[0].speedup, rows[1].speedup);
        assert!(two[0].verdict.starts_with("spreading"), "{}", two[0].verdict);
    }

    #[test]
    fn a_phase_moves_what_it_touches() {
        let l = Layout::new(30, 1, Precision::Double).unwrap();
        let chunk = l.chunk_bytes() as f64;
        let p = num_complex::Complex64::new(0.0, 1.0);
        assert_eq!(traffic(&PhysicalGate::H(3), &l), 2.0 * chunk);
        assert_eq!(traffic(&PhysicalGate::Phase { qubits: vec![5, 4], phase: p }, &l), chunk / 2.0);
        // Every other 16-byte amplitude: each 32-byte sector still moves.
        assert_eq!(traffic(&PhysicalGate::Phase { qubits: vec![5, 0], phase: p }, &l), chunk);
    }
}
