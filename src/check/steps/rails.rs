//! One communicator per rail (`split`, `size`; `collective`, `transport`,
//! `gpus`, `iters`): the collective run with nccl-tests' NCCL_TESTS_SPLIT,
//! every rail at once, a figure per rail, so that the rail whose adapter
//! or link is bad is named. `share` judges each rail against the fastest
//! of the same run, which needs no figure of the machine.

use super::collective::Keys as CollectiveKeys;
use super::{BadKey, Figure, Metric, Scope, StepKind, done, per_process};
use crate::error::{Error, Result};
use crate::libs::Library;
use crate::record::Quiet;
use crate::record::collective::TransportKind;
use crate::session::Session;
use crate::workload::Job;
use crate::record::split::Split;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Keys {
    /// NCCL_TESTS_SPLIT's value, "MOD 8" (eight rails, rank r on rail r mod 8).
    pub split: String,
    /// Bytes, "1G".
    pub size: String,
    /// Default allreduce.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collective: Option<String>,
    /// nccl (default) or cpu.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport: Option<String>,
    /// GPUs per process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpus: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iters: Option<u32>,
}

impl Keys {
    fn collective(&self) -> CollectiveKeys {
        CollectiveKeys {
            collective: self.collective.clone().unwrap_or_else(|| "allreduce".into()),
            size: self.size.clone(),
            transport: self.transport.clone(),
            gpus: self.gpus,
            iters: self.iters,
        }
    }
}

const METRICS: &[Metric] = &[
    Metric::rate("busbw", "GB/s"),
    Metric::rate("algbw", "GB/s"),
    Metric::time("time_us", "us"),
    Metric::rate("share", "× the fastest rail"),
];

impl StepKind for Keys {
    fn metrics(&self) -> &'static [Metric] {
        METRICS
    }

    fn validate(&self, metric: &str) -> std::result::Result<(), BadKey> {
        Split::expression(&self.split).map_err(|e| BadKey::new("split", e))?;
        self.collective().validate(metric)
    }

    fn libraries(&self) -> Vec<Library> {
        self.collective().libraries()
    }

    fn scope(&self) -> Scope {
        Scope::Job
    }

    fn uses_gpus(&self) -> bool {
        self.collective().uses_gpus()
    }

    fn needs_several(&self) -> Option<&'static str> {
        Some("no rails to split")
    }

    fn measure(&self, metric: &str, session: &Session) -> Result<Vec<Figure>> {
        let keys = self.collective();
        let g = per_process(keys.gpus, session, keys.transport()? == TransportKind::Cpu);
        let mut plan = keys.plan(g)?;
        plan.split = Some(Split::expression(&self.split)?);
        let run = done(plan.run(session, &mut Quiet))?;
        let (Some(split), Some(row)) = (&run.split, run.results.first()) else {
            return Err(Error::Runtime("the split measured no rail".into()));
        };
        let fastest = row.groups.iter().map(|r| r.out_of_place.busbw_gbps).fold(0.0, f64::max);
        let mut figures = Vec::new();
        for rail in &split.groups {
            let (cell, in_place) = row
                .groups
                .iter()
                .find(|r| r.group == rail.group)
                .map(|r| (r.out_of_place.clone(), r.in_place.clone()))
                .ok_or_else(|| Error::Runtime(format!("rail {} measured nothing", rail.group)))?;
            let ranks: Vec<String> = rail.ranks.iter().map(|r| r.to_string()).collect();
            let hosts = run.hosts_of(&rail.ranks);
            // `share`, the one metric a cell lacks: against the fastest rail.
            let value = cell.figure(metric).unwrap_or(if fastest > 0.0 { cell.busbw_gbps / fastest } else { 0.0 });
            figures.push(Figure {
                place: Some(format!("rail {}: ranks {} on {}", rail.group, ranks.join(" "), hosts.join(" "))),
                value,
                wrong: cell.wrong.unwrap_or(0) + in_place.wrong.unwrap_or(0),
                judged: None,
            });
        }
        Ok(figures)
    }
}
