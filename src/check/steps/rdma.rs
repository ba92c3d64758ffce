//! A perftest test between every pair of this node's adapters (`test`;
//! `size`, `iters`), as `qbench rdma --loopback --test T` runs it with host
//! memory: a figure a pair, every byte checked. Bandwidth tests give the
//! average in 10^9 bit/s, latency tests the typical (median) time.

use super::{BadKey, Figure, Metric, Scope, StepKind, bytes, done, iters};
use crate::error::{Error, Result};
use crate::libs::Library;
use crate::rdma::plan::{Options, Peer, Plan, Test};
use crate::record::Quiet;
use crate::record::rdma::Row;
use crate::session::Session;
use crate::workload::Job;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Keys {
    /// One of perftest's tests: write_bw, read_lat, …
    pub test: String,
    /// Message size, "1M" (default: perftest's for the test).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iters: Option<u32>,
}

const BANDWIDTH: &[Metric] = &[Metric::rate("gbits", "Gb/s")];
const LATENCY: &[Metric] = &[Metric::time("latency_us", "us")];

impl Keys {
    fn test(&self) -> Result<Test> {
        match Test::parse_list(&self.test)?.as_slice() {
            [one] => Ok(*one),
            _ => Err(Error::Usage(format!("an rdma step runs one test, not '{}'", self.test))),
        }
    }

    fn plan(&self) -> Result<Plan> {
        Plan::new(&Options {
            size: self.size.as_deref().map(bytes).transpose()?,
            iters: self.iters,
            ..Options::new(&self.test, Peer::Loopback)
        })
    }
}

impl StepKind for Keys {
    fn metrics(&self) -> &'static [Metric] {
        match self.test() {
            Ok(t) if t.is_bw() => BANDWIDTH,
            Ok(_) => LATENCY,
            Err(_) => &[],
        }
    }

    fn validate(&self, _metric: &str) -> std::result::Result<(), BadKey> {
        self.test().map_err(|e| BadKey::new("test", e))?;
        if let Some(s) = &self.size {
            bytes(s).map_err(|e| BadKey::new("size", e))?;
        }
        iters(self.iters)?;
        self.plan().map(|_| ()).map_err(|e| BadKey::new("iters", e))
    }

    fn libraries(&self) -> Vec<Library> {
        Vec::new()
    }

    fn scope(&self) -> Scope {
        Scope::Node
    }

    fn uses_gpus(&self) -> bool {
        false
    }

    fn measure(&self, _metric: &str, session: &Session) -> Result<Vec<Figure>> {
        let run = done(self.plan()?.run(session, &mut Quiet))?;
        let figures: Vec<Figure> = run
            .rows
            .iter()
            .map(|r| {
                let l = &run.links[r.link];
                let value = match r.row {
                    Row::Bw(b) => b.bw_avg_bytes_per_s * 8.0 / 1e9,
                    Row::Lat(t) => t.t_typical_us,
                    // A step never runs for a duration; its average is the latency it has.
                    Row::LatDuration(t) => t.t_avg_us,
                };
                let place = format!("{}→{}", l.local.device, l.remote.device);
                Figure { place: Some(place), value, wrong: r.row.data().wrong_bytes, judged: None }
            })
            .collect();
        if figures.is_empty() {
            return Err(Error::Runtime("the rdma test measured no row".into()));
        }
        Ok(figures)
    }
}
