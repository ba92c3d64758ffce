//! Whether spreading the register pays, circuit by circuit: the spread
//! register's fastest measured run against one GPU (measured in this run
//! or in a record given, else projected), split into the seconds of local
//! steps and the seconds the exchanges add; and, given a simulator's own
//! one-GPU time, the same question priced for that simulator, since its
//! local gates run at its speed and the wire moves the same bytes.

use super::projection::{self, Table};
use crate::error::{Error, Result};
use crate::record::exchange::{CircuitRun, ClassTime, Decision, ExchangeRun, RegisterRun, SimulatorPrice};
use crate::statevec::layout::{Layout, largest_register};
use crate::statevec::schedule::{Schedule, compile};
use crate::statevec::spec::CircuitSpec;
use crate::transport::amplitudes::Memory;
use crate::units::human_seconds as secs;

/// The longest one-GPU circuit time a record may hold, seconds (about 12
/// days): a figure past it is not a measurement.
const MOST_CIRCUIT_S: f64 = 1e6;

/// What the verdict holds a spread run against besides this run's own
/// registers.
#[derive(Debug, Clone, Default)]
pub struct Against {
    /// `--one-gpu-from`: records of `qbench exchange` on one rank whose
    /// circuits stand for the one-GPU time (for ranks under mpirun, which
    /// cannot measure it themselves), with the file each came from.
    pub one_gpu_runs: Vec<(String, ExchangeRun)>,
    /// `--simulator-time`: a simulator's one-GPU seconds, per circuit name.
    pub simulator_s: Vec<(String, f64)>,
}

impl Against {
    /// `--simulator-time [CIRCUIT=]SECONDS,...` against the circuits run: a
    /// bare number names the one circuit.
    pub fn parse_simulator(text: &str, circuits: &[CircuitSpec]) -> Result<Vec<(String, f64)>> {
        let names: Vec<String> = circuits.iter().map(CircuitSpec::name).collect();
        let mut out: Vec<(String, f64)> = Vec::new();
        for item in text.split(',').map(str::trim) {
            let (circuit, seconds) = match item.rsplit_once('=') {
                Some((c, s)) => (CircuitSpec::parse(c.trim())?.name(), s.trim()),
                None if names.len() == 1 => (names[0].clone(), item),
                None => {
                    return Err(Error::Usage(format!(
                        "--simulator-time {item}: name the circuit, CIRCUIT=SECONDS, since --circuit runs {}",
                        names.join(", ")
                    )));
                }
            };
            let s: f64 = seconds.parse().ok().filter(|s: &f64| s.is_finite() && *s > 0.0).ok_or_else(|| {
                Error::Usage(format!("--simulator-time {item}: '{seconds}' is not a positive number of seconds"))
            })?;
            if !names.contains(&circuit) {
                return Err(Error::Usage(format!(
                    "--simulator-time {item}: --circuit does not run {circuit} (it runs {})",
                    names.join(", ")
                )));
            }
            if out.iter().any(|(c, _)| *c == circuit) {
                return Err(Error::Usage(format!("--simulator-time names {circuit} twice")));
            }
            out.push((circuit, s));
        }
        Ok(out)
    }

    /// `--one-gpu-from`: exchange records, each with a circuit run on one rank.
    /// The records `--one-gpu-from` names, each holding a circuit run
    /// correctly on one rank of a register of `qubits`, every such time a
    /// time: a record that cannot be the one-GPU time is refused, not
    /// passed over while the verdict says it was measured.
    pub fn load_one_gpu(paths: &[std::path::PathBuf], qubits: &[u32]) -> Result<Vec<(String, ExchangeRun)>> {
        let mut out = Vec::new();
        for p in paths {
            let name = p.display().to_string();
            let run = match crate::record::read(p)? {
                crate::record::AnyRecord::Exchange(r) => r,
                _ => return Err(Error::Usage(format!("--one-gpu-from {name}: not the record of a qbench exchange"))),
            };
            let alone = |r: &&RegisterRun| r.ranks == 1 && r.circuits.iter().any(|c| c.wrong == 0);
            let sizes: Vec<String> = run.registers.iter().filter(alone).map(|r| r.qubits.to_string()).collect();
            if sizes.is_empty() {
                return Err(Error::Usage(format!(
                    "--one-gpu-from {name}: no circuit ran correctly on one rank there; `qbench exchange -g 1 --circuit …` records one"
                )));
            }
            if !run.registers.iter().filter(alone).any(|r| qubits.contains(&r.qubits)) {
                let asked: Vec<String> = qubits.iter().map(u32::to_string).collect();
                return Err(Error::Usage(format!(
                    "--one-gpu-from {name}: its one-rank registers are of {} qubits, this run's of {}: record `qbench exchange -g 1` on the same register",
                    sizes.join(", "),
                    asked.join(", ")
                )));
            }
            for (i, r) in run.registers.iter().enumerate().filter(|(_, r)| r.ranks == 1) {
                for (j, c) in r.circuits.iter().enumerate().filter(|(_, c)| c.wrong == 0) {
                    let t = c.time.median;
                    if !(t.is_finite() && t > 0.0 && t <= MOST_CIRCUIT_S) {
                        return Err(Error::Usage(format!(
                            "--one-gpu-from {name}: registers[{i}].circuits[{j}].time.median is {t}: not a measured time (above 0, at most {MOST_CIRCUIT_S:e} s)"
                        )));
                    }
                }
            }
            out.push((name, run));
        }
        Ok(out)
    }

    /// The fastest correct run of `circuit` on one rank of a record given,
    /// the same register in the same memory, with the file.
    fn recorded(&self, top: &RegisterRun, circuit: &str) -> Option<(f64, &str)> {
        self.one_gpu_runs
            .iter()
            .flat_map(|(file, run)| run.registers.iter().map(move |r| (file, r)))
            .filter(|(_, r)| r.ranks == 1 && r.qubits == top.qubits && r.precision == top.precision)
            .filter(|(_, r)| r.memory == top.memory)
            .flat_map(|(file, r)| r.circuits.iter().map(move |c| (file, c)))
            .filter(|(_, c)| c.circuit == circuit && c.wrong == 0)
            .map(|(file, c)| (c.time.median, file.as_str()))
            .min_by(|a, b| a.0.total_cmp(&b.0))
    }

    fn simulator(&self, circuit: &str) -> Option<f64> {
        self.simulator_s.iter().find(|(c, _)| c == circuit).map(|&(_, s)| s)
    }
}

/// Whether spreading pays, circuit by circuit, in each memory: the largest
/// spread register's fastest run against the same register on one rank.
/// `memory_of` is the memory of one rank's device in each memory;
/// `sharing` how many GPU ranks shared each GPU.
pub fn decide(
    registers: &[RegisterRun],
    memory_of: &[(Memory, u64)],
    specs: &[CircuitSpec],
    sharing: usize,
    against: &Against,
) -> Vec<Decision> {
    let mut out = Vec::new();
    for &(memory, device) in memory_of {
        let mine: Vec<&RegisterRun> = registers.iter().filter(|r| r.memory == memory.name()).collect();
        // The largest register spread over several ranks, else one on one.
        let with =
            |spread: bool| mine.iter().rev().find(|r| !r.circuits.is_empty() && (r.ranks > 1) == spread).copied();
        let Some(top) = with(true).or_else(|| with(false)) else { continue };
        let one = mine.iter().find(|r| r.ranks == 1 && r.qubits == top.qubits && r.precision == top.precision);
        let unit = if memory == Memory::Gpu { "GPU" } else { "host rank" };
        for spec in specs {
            let name = spec.name();
            let fastest = |runs: &mut dyn Iterator<Item = &CircuitRun>| {
                runs.filter(|c| c.circuit == name && c.wrong == 0)
                    .min_by(|a, b| a.time.median.total_cmp(&b.time.median))
                    .cloned()
            };
            let Some(best) = fastest(&mut top.circuits.iter()) else { continue };
            if top.ranks == 1 {
                out.push(on_one(&best, top, unit, against.simulator(&name)));
                continue;
            }
            let measured_one = one.and_then(|o| fastest(&mut o.circuits.iter()));
            // A record given is what the user asked to compare with.
            let (one_s, from) = match (measured_one, against.recorded(top, &name)) {
                (_, Some((s, file))) => (Some(s), format!("measured in {file}")),
                (Some(m), None) => (Some(m.time.median), "measured".to_string()),
                // Ranks that shared a GPU timed each class with the others'
                // kernels time-sliced beside theirs: those times do not
                // scale to one rank alone.
                (None, None) if memory == Memory::Gpu && sharing > 1 => (
                    None,
                    format!(
                        "not measured: {sharing} ranks shared each GPU, so their classes do not scale to one rank \
                         alone; `qbench exchange -g 1` without mpirun measures it, and --one-gpu-from its record \
                         brings it here"
                    ),
                ),
                (None, None) => match Layout::new(top.qubits, top.ranks, top.precision) {
                    Ok(l) => (
                        one_rank_price(top, &l, spec),
                        format!(
                            "scaled, not measured: this register's local classes × {} (a chunk {} times larger)",
                            top.ranks, top.ranks
                        ),
                    ),
                    Err(_) => (None, "unknown".into()),
                },
            };
            let fits = largest_register(device, top.precision, 0) >= top.qubits;
            out.push(on_many(&best, top, unit, fits, (one_s, from), against.simulator(&name)));
        }
    }
    out
}

/// A circuit measured on one rank: nothing to spread, its time stated.
fn on_one(best: &CircuitRun, top: &RegisterRun, unit: &str, simulator: Option<f64>) -> Decision {
    let mut verdict = format!("{} gates in {} on one {unit} (measured)", best.gates, secs(best.time.median));
    if let Some(s) = simulator {
        verdict += &format!("; the simulator given takes {}, ×{:.2} qbench's kernels", secs(s), s / best.time.median);
    }
    Decision {
        circuit: best.circuit.clone(),
        qubits: top.qubits,
        gpus: 1,
        one_gpu_s: Some(best.time.median),
        one_gpu_from: "measured".into(),
        one_gpu_fits: true,
        spread_s: best.time.median,
        schedule: None,
        transport: None,
        speedup: None,
        local_s: Some(best.time.median),
        exchange_s: Some(0.0),
        simulator: None,
        verdict,
    }
}

/// A circuit measured spread over ranks, held against one rank's time.
fn on_many(
    best: &CircuitRun,
    top: &RegisterRun,
    unit: &str,
    fits: bool,
    (one_s, from): (Option<f64>, String),
    simulator: Option<f64>,
) -> Decision {
    let spread = best.time.median;
    // The median round's local steps; what the round spent besides them
    // is the exchanges' (their transfers and the waits on partners).
    let local = best.by_class.iter().filter(|c| !c.class.exchanges()).map(|c| c.seconds).sum::<f64>().min(spread);
    let exchange = spread - local;
    let how = format!(
        "{} schedule over {}",
        best.schedule.map_or("", |s| s.name()),
        best.transport.as_deref().unwrap_or("-")
    );
    let speedup = one_s.map(|o| o / spread);
    let priced = match (simulator, one_s) {
        (Some(s), Some(o)) => {
            let spread_s = simulator_spread(s, o, local, exchange);
            Some(SimulatorPrice { one_gpu_s: s, spread_s, speedup: s / spread_s })
        }
        _ => None,
    };
    let ranks = top.ranks;
    let words = |x: f64| match x {
        x if x >= 1.05 => format!("spreading pays: ×{x:.2} faster on {ranks} {unit}s"),
        x if x > 0.95 => "break-even: spreading neither pays nor costs".to_string(),
        x if fits => format!("spreading costs ×{:.2}: run it on one {unit}", 1.0 / x),
        x => format!(
            "spreading only buys memory: ×{:.2} slower than one {unit} would be, but {} qubits do not fit on one",
            1.0 / x,
            top.qubits
        ),
    };
    let (exchange_t, local_t, spread_t) = (secs(exchange), secs(local), secs(spread));
    let verdict = match (&priced, speedup, simulator) {
        (Some(p), _, _) => format!(
            "for the simulator given ({} on one {unit}), {} ({} spread, the exchanges {exchange_t} of it; {how})",
            secs(p.one_gpu_s),
            words(p.speedup),
            secs(p.spread_s)
        ),
        (None, Some(x), _) => format!(
            "with qbench's kernels, {} (the exchanges add {exchange_t} to {local_t} of local steps; {how}); \
             --simulator-time prices a simulator's own",
            words(x)
        ),
        (None, None, Some(_)) => format!(
            "{spread_t} on {ranks} {unit}s ({how}), the exchanges {exchange_t} of it; the simulator given cannot be \
             priced without qbench's own one-{unit} time ({from})"
        ),
        (None, None, None) => format!(
            "{spread_t} on {ranks} {unit}s ({how}), the exchanges {exchange_t} of it; no one-{unit} time to compare ({from})"
        ),
    };
    Decision {
        circuit: best.circuit.clone(),
        qubits: top.qubits,
        gpus: ranks,
        one_gpu_s: one_s,
        one_gpu_from: from,
        one_gpu_fits: fits,
        spread_s: spread,
        schedule: best.schedule,
        transport: best.transport.clone(),
        speedup,
        local_s: Some(local),
        exchange_s: Some(exchange),
        simulator: priced,
        verdict,
    }
}

/// A simulator's spread seconds from its one-GPU seconds `simulator` and
/// qbench's `one`: its local steps at its own speed, the exchanges' seconds
/// kept, since the wire moves the same bytes whoever computes.
pub fn simulator_spread(simulator: f64, one: f64, local: f64, exchange: f64) -> f64 {
    simulator * local / one + exchange
}

/// The most GPU ranks of the run on one GPU (1 where each has its own).
pub fn sharing(devices: &[crate::record::RankInfo]) -> usize {
    let mut on: std::collections::HashMap<(&str, &str), usize> = std::collections::HashMap::new();
    for d in devices.iter().filter(|d| d.bus_id != "host") {
        *on.entry((d.host.as_str(), d.bus_id.as_str())).or_default() += 1;
    }
    on.into_values().max().unwrap_or(1)
}

/// The circuit on one rank, priced from the spread register's local classes
/// (the faster schedule's).
fn one_rank_price(top: &RegisterRun, spread: &Layout, spec: &CircuitSpec) -> Option<f64> {
    let one = Layout::new(top.qubits, 1, top.precision).ok()?;
    let circuit = spec.build(top.qubits).ok()?;
    let classes: Vec<ClassTime> = top.classes.iter().filter(|c| !c.class.exchanges()).cloned().collect();
    let table = Table { classes: &classes, layout: *spread };
    Schedule::ALL
        .iter()
        .filter_map(|&s| projection::price(&compile(&circuit, &one, s), &one, None, table))
        .min_by(f64::total_cmp)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::exchange::{ClassShare, References};
    use crate::statevec::layout::Precision;
    use crate::statevec::step::Class;
    use crate::stats::Summary;

    fn circuit(median: f64, by_class: &[(Class, f64)], spread: bool) -> CircuitRun {
        CircuitRun {
            circuit: "qft".into(),
            gates: 55,
            schedule: spread.then_some(Schedule::Quest),
            transport: spread.then(|| "quest".into()),
            steps: 55,
            exchanges: by_class.iter().filter(|(c, _)| c.exchanges()).count() as u64,
            bytes_per_rank: 0,
            time: Summary::of(&[median]),
            by_class: by_class.iter().map(|&(class, seconds)| ClassShare { class, steps: 1, seconds }).collect(),
            projected_s: None,
            amplitudes: 1 << 10,
            wrong: 0,
        }
    }

    fn register(ranks: usize, circuits: Vec<CircuitRun>) -> RegisterRun {
        RegisterRun {
            qubits: 10,
            local_qubits: 10 - ranks.trailing_zeros(),
            ranks,
            precision: Precision::Double,
            memory: "gpu".into(),
            chunk_bytes: 16 << 10 >> ranks.trailing_zeros(),
            references: References::default(),
            local_gates: Vec::new(),
            global_gates: Vec::new(),
            checks: Vec::new(),
            unavailable: Vec::new(),
            classes: Vec::new(),
            circuits,
        }
    }

    const GPU: [(Memory, u64); 1] = [(Memory::Gpu, 1 << 40)];

    /// QuEST v4.1's QFT(30) on the H200 and qbench's runs beside it in the
    /// same job (results/h200/quest/h200-quest-compare.json): qbench's local steps
    /// are faster than QuEST's, so its own factor overstates the cost of
    /// spreading; priced at QuEST's one-GPU time it lands near QuEST's.
    #[test]
    fn a_simulators_time_prices_its_local_steps_and_keeps_the_exchanges() {
        let spread = circuit(9.06, &[(Class::H, 0.197), (Class::Phase, 0.738), (Class::GlobalGate, 4.94)], true);
        let regs = [register(2, vec![spread]), register(1, vec![circuit(1.39, &[(Class::H, 1.39)], false)])];
        let against = Against { simulator_s: vec![("qft".into(), 2.459)], ..Default::default() };
        let d = &decide(&regs, &GPU, &[CircuitSpec::Qft], 1, &against)[0];
        let (local, exchange) = (d.local_s.unwrap(), d.exchange_s.unwrap());
        assert!((local - 0.935).abs() < 1e-9 && (exchange - (9.06 - 0.935)).abs() < 1e-9, "{d:?}");
        let p = d.simulator.as_ref().unwrap();
        assert!((p.spread_s - (2.459 * 0.935 / 1.39 + exchange)).abs() < 1e-9);
        assert!((p.spread_s / 9.093 - 1.0).abs() < 0.1, "QuEST measured 9.093 s spread: {}", p.spread_s);
        assert!((d.speedup.unwrap() - 1.39 / 9.06).abs() < 1e-9);
        assert!(
            d.verdict.starts_with("for the simulator given (2.46 s on one GPU), spreading costs ×3.98"),
            "{}",
            d.verdict
        );
        // Without it, the verdict says whose kernels it priced.
        let d = &decide(&regs, &GPU, &[CircuitSpec::Qft], 1, &Against::default())[0];
        assert!(
            d.simulator.is_none() && d.verdict.starts_with("with qbench's kernels, spreading costs ×6.52"),
            "{}",
            d.verdict
        );
    }

    #[test]
    fn ranks_sharing_a_gpu_take_the_one_gpu_time_from_a_record() {
        let regs = [register(2, vec![circuit(4.0, &[(Class::H, 1.0), (Class::GlobalGate, 2.5)], true)])];
        let against = Against { simulator_s: vec![("qft".into(), 3.0)], ..Default::default() };
        let d = &decide(&regs, &GPU, &[CircuitSpec::Qft], 2, &against)[0];
        assert!(d.one_gpu_s.is_none() && d.simulator.is_none());
        assert!(d.one_gpu_from.contains("--one-gpu-from") && d.verdict.contains("cannot be priced"), "{d:?}");
        let record = ExchangeRun {
            header: crate::record::Header::start(crate::record::exchange::KIND, None),
            devices: Vec::new(),
            library: None,
            kernels: None,
            iters: 1,
            warmup_iters: 0,
            registers: vec![register(1, vec![circuit(2.0, &[(Class::H, 2.0)], false)])],
            verdict: None,
            decisions: Vec::new(),
            device_memory: None,
            forecasts: Vec::new(),
            plans: Vec::new(),
            plan_figures: None,
            host_cores: None,
            unavailable: Vec::new(),
            classes_shown: false,
        };
        let against = Against { one_gpu_runs: vec![("one.json".into(), record)], ..against };
        let d = &decide(&regs, &GPU, &[CircuitSpec::Qft], 2, &against)[0];
        assert_eq!((d.one_gpu_s, d.one_gpu_from.as_str()), (Some(2.0), "measured in one.json"));
        // 3 s × 1 s / 2 s of local steps, and the 3 s the exchanges took.
        assert!((d.simulator.as_ref().unwrap().spread_s - 4.5).abs() < 1e-9, "{d:?}");
    }

    #[test]
    fn simulator_times_name_circuits_that_run() {
        let one = [CircuitSpec::Qft];
        let two = [CircuitSpec::Qft, CircuitSpec::Random { gates: 40, seed: 1 }];
        assert_eq!(Against::parse_simulator("2.5", &one).unwrap(), vec![("qft".to_string(), 2.5)]);
        let both = Against::parse_simulator("qft=2.5, random:40:1=0.5", &two).unwrap();
        assert_eq!(both, vec![("qft".to_string(), 2.5), ("random:40:1".to_string(), 0.5)]);
        for (text, circuits, says) in [
            ("2.5", &two[..], "name the circuit"),
            ("qft=0", &one[..], "not a positive number"),
            ("qft=inf", &one[..], "not a positive number"),
            ("random=1", &one[..], "does not run random:200:1"),
            ("qft=1,qft=2", &one[..], "twice"),
            ("ghz=1", &one[..], "unknown circuit"),
        ] {
            let e = Against::parse_simulator(text, circuits).unwrap_err().message();
            assert!(e.contains(says), "{text}: {e}");
        }
    }
}
