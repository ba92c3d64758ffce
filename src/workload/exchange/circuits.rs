//! Circuits run for real on a register: compiled to its steps under a
//! schedule, every step run over the wire, timed end to end on the host
//! clock, every amplitude checked against the state the circuit must end
//! in, and the same steps priced from the register's gate classes beside
//! the measured time.

use super::projection::{self, Table};
use crate::error::{Error, Result};
use crate::fault::Fault;
use crate::interrupt;
use crate::record::exchange::{CircuitRun, ClassShare};
use crate::statevec::circuit::Circuit;
use crate::statevec::schedule::{Schedule, compile};
use crate::statevec::step::Class;
use crate::stats::Summary;
use crate::transport::amplitudes::{Register, Wire, step};
use std::collections::BTreeMap;
use std::time::Instant;

/// Runs `c` on `reg` `rounds` times under `schedule` (None on one rank)
/// over `wire`, priced from `table` beside.
pub fn run(
    reg: &mut dyn Register,
    c: &Circuit,
    schedule: Option<Schedule>,
    wire: Option<Wire>,
    rounds: u32,
    fault: Option<Fault>,
    table: Table,
) -> Result<CircuitRun> {
    let layout = *reg.layout();
    let end = c.end.as_ref().ok_or_else(|| Error::Runtime(format!("internal: {} has no known end", c.name)))?;
    let steps = compile(c, &layout, schedule.unwrap_or(Schedule::Quest));
    let name = |what: &str| {
        let how = match (schedule, wire) {
            (Some(s), Some(w)) => format!(", {} schedule over {}", s.name(), w.name()),
            _ => String::new(),
        };
        format!("{} qubits: {} ({} steps{how}): {what}", layout.qubits, c.name, steps.len())
    };
    let mut times = Vec::new();
    let mut shares: Vec<BTreeMap<Class, (u64, f64)>> = Vec::new();
    let mut wrong = 0;
    for round in 0..rounds {
        interrupt::step(name(&format!("round {}", round + 1)));
        reg.init(&c.start)?;
        let mut by = BTreeMap::new();
        // The processes start together and meet again only where they
        // exchange, as a simulator's do: no step waits for the slowest.
        reg.world().barrier();
        let t0 = Instant::now();
        for s in &steps {
            interrupt::check()?;
            let t = step::run(reg, s, wire, fault)?;
            let e = by.entry(s.class()).or_insert((0u64, 0.0));
            (e.0, e.1) = (e.0 + 1, e.1 + t.total());
        }
        times.push(t0.elapsed().as_secs_f64());
        shares.push(by);
        interrupt::step(name("checking every amplitude"));
        // Rounding is of the state's norm: an amplitude passes within the
        // tolerance of the larger of its own magnitude and 2^(−n/2).
        wrong += reg.count_wrong(end, f64::powf(2.0, -(layout.qubits as f64) / 2.0))?;
    }
    // The slowest process's time, round by round.
    let times = reg.world().max_f64(&times);
    let time = Summary::of(&times);
    let median_round =
        (0..times.len()).min_by(|&a, &b| (times[a] - time.median).abs().total_cmp(&(times[b] - time.median).abs()));
    // The median round's seconds by class, the slowest process's each
    // (every process ran the same steps).
    let by_class = match median_round {
        Some(r) => {
            let mine: Vec<f64> = shares[r].values().map(|&(_, s)| s).collect();
            let seconds = reg.world().max_f64(&mine);
            shares[r].iter().zip(seconds).map(|((&class, &(steps, _)), seconds)| ClassShare { class, steps, seconds }).collect()
        }
        None => Vec::new(),
    };
    let exchanging: Vec<_> = steps.iter().filter(|s| !s.is_local()).collect();
    Ok(CircuitRun {
        circuit: c.name.clone(),
        gates: (c.gates.len()) as u64,
        schedule,
        transport: wire.map(|w| w.name().to_string()),
        steps: steps.len() as u64,
        exchanges: exchanging.len() as u64,
        bytes_per_rank: exchanging.iter().map(|s| s.bytes(&layout)).sum(),
        time,
        by_class,
        projected_s: projection::price(&steps, &layout, wire.map(|w| w.name()), table),
        amplitudes: layout.local_amps() * layout.ranks() as u64 * rounds as u64,
        wrong,
    })
}
