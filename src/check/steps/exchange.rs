//! The amplitude exchange of a register (`qubits`; `transport`, `gpus`,
//! `iters`), as `qbench exchange --qubits N` runs it: the slowest local
//! gate's bandwidth (or its share of a copy), the slowest global gate over
//! the step's wires, or with `circuit` (and `schedule`, `rounds`) the
//! circuit's median time end to end, the slowest of the wires; every
//! amplitude checked.

use super::{BadKey, Figure, Metric, Scope, StepKind, done, gpus, iters, per_process};
use crate::error::{Error, Result};
use crate::libs::Library;
use crate::record::Quiet;
use crate::session::Session;
use crate::statevec::layout::{GlobalOp, Layout, Precision};
use crate::statevec::schedule::Schedule;
use crate::statevec::spec::CircuitSpec;
use crate::transport::amplitudes::{Memory, Wire};
use crate::workload::Job;
use crate::workload::exchange::plan::{ExchangePlan, Timed, memories, parse_wires};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Keys {
    /// The register's qubits.
    pub qubits: u32,
    /// The wires, as `--transport` takes them (default nccl).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport: Option<String>,
    /// GPUs (host ranks for host memory) per process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpus: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iters: Option<u32>,
    /// The circuit the `circuit_s` metric times, as `--circuit` takes it:
    /// qft, random[:GATES[:SEED]] or an OpenQASM 2 file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub circuit: Option<String>,
    /// quest (default) or swap: how the circuit meets global qubits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<String>,
    /// Times the circuit runs; the median is judged (default 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rounds: Option<u32>,
}

impl Keys {
    fn wires(&self) -> Result<Vec<Wire>> {
        parse_wires(self.transport.as_deref().unwrap_or("nccl"), false)
    }

    /// Whether the register is held in host memory only.
    fn on_host(&self) -> Result<bool> {
        Ok(memories(&self.wires()?, None)? == [Memory::Host])
    }

    fn schedule(&self) -> Result<Schedule> {
        match Schedule::parse_list(self.schedule.as_deref().unwrap_or("quest"))?[..] {
            [one] => Ok(one),
            _ => Err(Error::Usage("name one schedule, quest or swap".into())),
        }
    }

    /// The exchange of `g` ranks a process: the gate classes, and the
    /// circuit where there is one.
    fn plan(&self, g: usize, timed: Timed) -> Result<ExchangePlan> {
        let wires = self.wires()?;
        let circuits = match &self.circuit {
            Some(c) => vec![CircuitSpec::parse(c)?],
            None => Vec::new(),
        };
        if let Some(c) = circuits.first() {
            c.build(self.qubits)?;
        }
        Ok(ExchangePlan {
            qubits: vec![self.qubits],
            ngpus: vec![g],
            precision: Precision::Double,
            ops: vec![GlobalOp::Gate],
            memories: memories(&wires, None)?,
            wires,
            chunk: None,
            iters: self.iters.unwrap_or(5),
            warmup: 1,
            circuits,
            schedules: vec![self.schedule()?],
            rounds: self.rounds.unwrap_or(3),
            one_rank_too: false,
            classes_shown: false,
            timed,
            against: Default::default(),
            fault: None,
            forecast: None,
            unavailable: Vec::new(),
        })
    }
}

const METRICS: &[Metric] = &[
    Metric::rate("gbps_per_direction", "GB/s"),
    Metric::rate("local_of_copy", ""),
    Metric::rate("local_gbps", "GB/s"),
    Metric::time("circuit_s", "s"),
];

impl StepKind for Keys {
    fn metrics(&self) -> &'static [Metric] {
        METRICS
    }

    fn validate(&self, metric: &str) -> std::result::Result<(), BadKey> {
        self.wires().map_err(|e| BadKey::new("transport", e))?;
        self.schedule().map_err(|e| BadKey::new("schedule", e))?;
        gpus(self.gpus, true)?;
        iters(self.iters)?;
        Layout::new(self.qubits, self.gpus.unwrap_or(1), Precision::Double).map_err(|e| BadKey::new("qubits", e))?;
        if self.rounds == Some(0) {
            return Err(BadKey { key: "rounds", why: "at least 1".into() });
        }
        match (&self.circuit, metric == "circuit_s") {
            (None, true) => return Err(BadKey { key: "metric", why: "circuit_s times a `circuit`: name one".into() }),
            (Some(_), false) => {
                return Err(BadKey { key: "circuit", why: format!("only the circuit_s metric runs it, not {metric}") });
            }
            _ => {}
        }
        self.plan(self.gpus.unwrap_or(1), Timed::Every).map(|_| ()).map_err(|e| BadKey::new("circuit", e))
    }

    fn libraries(&self) -> Vec<Library> {
        self.plan(1, Timed::Every).map(|p| p.libraries()).unwrap_or_default()
    }

    fn scope(&self) -> Scope {
        Scope::Job
    }

    fn uses_gpus(&self) -> bool {
        self.on_host().is_ok_and(|host| !host)
    }

    fn measure(&self, metric: &str, session: &Session) -> Result<Vec<Figure>> {
        let g = per_process(self.gpus, session, self.on_host()?);
        let ranks = session.world().size() * g;
        if !ranks.is_power_of_two() {
            return Err(Error::Usage(format!("{ranks} ranks: a register spreads over a power of two")));
        }
        let timed = match metric {
            "local_gbps" | "local_of_copy" => Timed::LocalH,
            "gbps_per_direction" => Timed::Global,
            _ => Timed::Every,
        };
        let plan = self.plan(g, timed)?;
        let run = done(plan.run(session, &mut Quiet))?;
        let r = run
            .registers
            .iter()
            .find(|r| r.ranks == ranks)
            .ok_or_else(|| Error::Runtime("the exchange measured no register".into()))?;
        if let (Some(u), "gbps_per_direction" | "circuit_s") = (r.unavailable.first(), metric) {
            return Err(Error::Missing(format!("{}: {}", u.transport, u.reason)));
        }
        let names: Vec<&str> = plan.wires.iter().map(|w| w.name()).collect();
        let min = |it: &mut dyn Iterator<Item = f64>| it.fold(f64::INFINITY, f64::min);
        let value = match metric {
            "gbps_per_direction" => min(&mut r
                .exchange_rates()
                .into_iter()
                .filter(|(w, _)| names.contains(&w.as_str()))
                .map(|(_, g)| g)),
            "local_of_copy" => min(&mut r.local_rates().into_iter().map(|(_, _, share)| share)),
            // The slowest wire's circuit (one rank: the circuit alone).
            "circuit_s" => r.circuits.iter().map(|c| c.time.median).fold(f64::NAN, f64::max),
            _ => min(&mut r.local_rates().into_iter().map(|(_, gbps, _)| gbps)),
        };
        if !value.is_finite() {
            return Err(Error::Usage(format!("{} ranks measured no {metric} over {}", r.ranks, names.join(","))));
        }
        Ok(vec![Figure { place: None, value, wrong: r.wrong(), judged: None }])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A step's libraries come from its plan: a step that leaves
    /// `transport` out runs NCCL, and so does one that names it among others.
    #[test]
    fn an_exchange_step_over_nccl_loads_nccl() {
        for transport in ["", "transport = \"all\"\n", "transport = \"nccl,p2p\"\n", "transport = \"nccl\"\n"] {
            let keys: Keys = toml::from_str(&format!("qubits = 20\ngpus = 2\n{transport}")).unwrap();
            assert!(keys.libraries().contains(&Library::Nccl), "{transport:?}: {:?}", keys.libraries());
        }
        let cpu: Keys = toml::from_str("qubits = 16\ntransport = \"cpu\"\ngpus = 2\n").unwrap();
        assert!(!cpu.libraries().contains(&Library::Nccl));
    }
}
