//! A collective at one size (`collective`, `size`; `transport`, `gpus`,
//! `iters`), as `qbench <collective> -b SIZE -e SIZE` runs it: its
//! out-of-place bandwidth or time, every element checked.

use super::{BadKey, Figure, Metric, Scope, StepKind, bytes, done, gpus, iters, per_process};
use crate::error::{Error, Result};
use crate::libs::Library;
use crate::record::Quiet;
use crate::record::collective::TransportKind;
use crate::session::Session;
use crate::units::Growth;
use crate::workload::Job;
use crate::workload::collective::Kind;
use crate::workload::collective::plan::{CollectivePlan, Options};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Keys {
    /// allreduce, sendrecv, … (a subcommand or nccl-tests' name).
    pub collective: String,
    /// Bytes, "1G".
    pub size: String,
    /// nccl (default) or cpu.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport: Option<String>,
    /// GPUs (host ranks for cpu) per process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpus: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iters: Option<u32>,
}

impl Keys {
    pub(super) fn transport(&self) -> Result<TransportKind> {
        self.transport.as_deref().map_or(Ok(TransportKind::Nccl), TransportKind::parse)
    }

    /// The plan of the collective with `g` ranks a process.
    pub(super) fn plan(&self, g: usize) -> Result<CollectivePlan> {
        let kind = Kind::from_command(&self.collective)
            .ok_or_else(|| Error::Usage(format!("unknown collective '{}'", self.collective)))?;
        let size = bytes(&self.size)?;
        let defaults = Options::default();
        let options = Options {
            ngpus: g,
            minbytes: size,
            maxbytes: size,
            step: Growth::Bytes(0),
            warmup_iters: 5,
            iters: self.iters.unwrap_or(defaults.iters),
            timeout_s: 120,
            ..defaults
        };
        let mut plan = CollectivePlan::new(kind, self.transport()?, options, None)?;
        plan.min_bw = None;
        Ok(plan)
    }
}

const METRICS: &[Metric] = &[
            Metric::rate("busbw", "GB/s"),
            Metric::rate("algbw", "GB/s"),
            Metric::time("time_us", "us"),
        ];

impl StepKind for Keys {
    fn metrics(&self) -> &'static [Metric] {
        METRICS
    }

    fn validate(&self, _metric: &str) -> std::result::Result<(), BadKey> {
        if Kind::from_command(&self.collective).is_none() {
            return Err(BadKey { key: "collective", why: format!("unknown collective '{}'", self.collective) });
        }
        self.transport().map_err(|e| BadKey::new("transport", e))?;
        bytes(&self.size).map_err(|e| BadKey::new("size", e))?;
        gpus(self.gpus, false)?;
        iters(self.iters)?;
        self.plan(self.gpus.unwrap_or(1)).map(|_| ()).map_err(|e| BadKey::new("collective", e))
    }

    fn libraries(&self) -> Vec<Library> {
        self.plan(1).map(|p| p.libraries()).unwrap_or_default()
    }

    fn scope(&self) -> Scope {
        Scope::Job
    }

    fn uses_gpus(&self) -> bool {
        self.transport().is_ok_and(|t| t != TransportKind::Cpu)
    }

    fn measure(&self, metric: &str, session: &Session) -> Result<Vec<Figure>> {
        let g = per_process(self.gpus, session, self.transport()? == TransportKind::Cpu);
        let run = done(self.plan(g)?.run(session, &mut Quiet))?;
        let r = run.results.first().ok_or_else(|| Error::Runtime("the collective measured no size".into()))?;
        let value = r.out_of_place.figure(metric).ok_or_else(|| Error::Runtime(format!("no metric '{metric}'")))?;
        Ok(vec![Figure { place: None, value, wrong: run.wrong_elements, judged: None }])
    }
}
