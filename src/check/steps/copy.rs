//! A copy test at one size (`test`, `size`; `iters`), as `qbench copy
//! --test T -b SIZE -e SIZE` runs it: a figure per GPU or pair it copies
//! on, every word checked. Latency tests give the median host-clock time.

use super::{BadKey, Figure, Metric, Scope, StepKind, bytes, done, iters};
use crate::error::{Error, Result};
use crate::libs::Library;
use crate::record::Quiet;
use crate::record::copy::{Config, Status};
use crate::session::Session;
use crate::workload::Job;
use crate::workload::copy::{CopyPlan, TESTS};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Keys {
    /// The test's name (qbench copy --list).
    pub test: String,
    /// Bytes, "1G".
    pub size: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iters: Option<u32>,
}

const METRICS: &[Metric] = &[Metric::rate("gbps", "GB/s"), Metric::time("latency_us", "us")];

impl StepKind for Keys {
    fn metrics(&self) -> &'static [Metric] {
        METRICS
    }

    fn validate(&self, _metric: &str) -> std::result::Result<(), BadKey> {
        if !TESTS.iter().any(|t| t.name == self.test) {
            return Err(BadKey { key: "test", why: format!("unknown copy test '{}' (qbench copy --list)", self.test) });
        }
        bytes(&self.size).map_err(|e| BadKey::new("size", e))?;
        iters(self.iters)
    }

    fn libraries(&self) -> Vec<Library> {
        vec![Library::Driver, Library::Nvrtc]
    }

    fn scope(&self) -> Scope {
        Scope::Node
    }

    fn uses_gpus(&self) -> bool {
        true
    }

    fn measure(&self, _metric: &str, session: &Session) -> Result<Vec<Figure>> {
        let size = bytes(&self.size)?;
        let plan = CopyPlan::new(Config {
            tests: vec![self.test.clone()],
            ngpus: 0,
            minbytes: size,
            maxbytes: size,
            stepfactor: 2,
            iters: self.iters.unwrap_or(10),
            warmup_iters: 3,
            samples: 5,
            lat_iters: 200,
            // The one size judged, not the command's sweep of 25.
            lat_sizes: vec![size],
            seed: crate::pattern::DEFAULT_SEED,
            corrupt_word: None,
            numa: Some(crate::numa::Mode::Auto),
        }, None)?;
        let run = done(plan.run(session, &mut Quiet))?;
        let t = run.tests.first().ok_or_else(|| Error::Runtime("the copy test did not run".into()))?;
        if t.status == Status::Unavailable {
            return Err(Error::Missing(format!(
                "{}: {}",
                t.reason.clone().unwrap_or_default(),
                t.fix.clone().unwrap_or_default()
            )));
        }
        let mut out: Vec<Figure> = t
            .rows
            .iter()
            .filter(|r| r.size == size)
            .map(|r| Figure { place: Some(r.placement.clone()), value: r.total_gbps.median, wrong: r.wrong_words, judged: None })
            .collect();
        for s in &t.latency {
            if let Some(r) = s.rows.iter().find(|r| r.size == size) {
                out.push(Figure { place: Some(s.placement.clone()), value: r.host.median, wrong: r.wrong_words, judged: None });
            }
        }
        if out.is_empty() {
            return Err(Error::Usage(format!("{} measured no row of {size} bytes", t.name)));
        }
        Ok(out)
    }
}
