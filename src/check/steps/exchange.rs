//! The amplitude exchange of a register (`qubits`; `transport`, `gpus`,
//! `iters`), as `qbench exchange --qubits N --pattern gate` runs it: the
//! local gate's bandwidth (or its share of a copy), or the slowest global
//! gate over the step's wires, every amplitude checked.

use super::{BadKey, Figure, Metric, Scope, StepKind, done, per_process};
use crate::error::{Error, Result};
use crate::libs::Library;
use crate::record::Quiet;
use crate::session::Session;
use crate::statevec::layout::{GlobalOp, Precision};
use crate::transport::amplitudes::{Memory, Wire};
use crate::workload::Job;
use crate::workload::exchange::plan::{ExchangePlan, memories, parse_wires};
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
}

impl Keys {
    fn wires(&self) -> Result<Vec<Wire>> {
        parse_wires(self.transport.as_deref().unwrap_or("nccl"), false)
    }

    /// Whether the register is held in host memory only.
    fn on_host(&self) -> Result<bool> {
        Ok(memories(&self.wires()?, None)? == [Memory::Host])
    }

    /// The exchange of `g` ranks a process.
    fn plan(&self, g: usize) -> Result<ExchangePlan> {
        let wires = self.wires()?;
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
            circuits: Vec::new(),
            schedules: Vec::new(),
            rounds: 1,
            fault: None,
            forecast: None,
        })
    }
}

impl StepKind for Keys {
    fn metrics(&self) -> &'static [Metric] {
        &[
            Metric { name: "gbps_per_direction", unit: "GB/s" },
            Metric { name: "local_of_copy", unit: "" },
            Metric { name: "local_gbps", unit: "GB/s" },
        ]
    }

    fn validate(&self) -> std::result::Result<(), BadKey> {
        self.plan(self.gpus.unwrap_or(1)).map(|_| ()).map_err(|e| BadKey::new("transport", e))
    }

    fn libraries(&self) -> Vec<Library> {
        self.plan(1).map(|p| p.libraries()).unwrap_or_default()
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
        let plan = self.plan(g)?;
        let run = done(plan.run(session, &mut Quiet))?;
        let r = run
            .registers
            .iter()
            .find(|r| r.ranks == ranks)
            .ok_or_else(|| Error::Runtime("the exchange measured no register".into()))?;
        if let (Some(u), "gbps_per_direction") = (r.unavailable.first(), metric) {
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
            _ => min(&mut r.local_rates().into_iter().map(|(_, gbps, _)| gbps)),
        };
        if !value.is_finite() {
            return Err(Error::Usage(format!("{} ranks measured no {metric} over {}", r.ranks, names.join(","))));
        }
        Ok(vec![Figure { place: None, value, wrong: r.wrong() }])
    }
}
