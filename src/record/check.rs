//! The record of a readiness check (schema `qbench.check`): a row per fact
//! and measurement (per node where the step is the node's own), each with
//! what was expected, its status and the fix, and the verdict.

use super::{Header, Streamed};
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub const KIND: &str = "check";

/// How a fact, a check or a measurement is judged, worst last.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Status {
    Skip,
    Pass,
    Warn,
    Fail,
}

impl Status {
    pub fn name(self) -> &'static str {
        match self {
            Status::Skip => "SKIP",
            Status::Pass => "PASS",
            Status::Warn => "WARN",
            Status::Fail => "FAIL",
        }
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One fact or measurement on one node (or across all of them).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// The profile's name of the step.
    pub step: String,
    /// Where on the node, for a step measured per GPU: "GPU 0".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub place: Option<String>,
    /// "fact", or the step's kind: collective, copy, exchange, pairs.
    pub kind: String,
    /// The node (host, or host:rank where a host runs several processes);
    /// "all" for a step across every node.
    pub node: String,
    /// What was found, in words (a fact, or why a step did not run).
    pub found: String,
    /// The median of the samples taken: what is judged.
    pub measured: Option<f64>,
    /// Every sample of the last attempt, in order (one where the step took one).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub samples: Vec<f64>,
    pub unit: String,
    pub expected: Option<f64>,
    /// "measured" or "projected", where the profile says which.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_from: Option<String>,
    pub floor: Option<f64>,
    pub ceiling: Option<f64>,
    /// measured / expected (above 1 is better for a bandwidth, worse for a time).
    pub ratio: Option<f64>,
    /// The same step in the baseline, and measured / baseline (read as `ratio`).
    pub baseline: Option<f64>,
    pub vs_baseline: Option<f64>,
    pub status: Status,
    /// What to do, when the row is not PASS.
    pub fix: String,
    /// Runs made (1 + retries used).
    pub attempts: u32,
    /// The hardware the step needs is absent (not slow, not down: absent).
    pub missing: bool,
}

/// The host of a row's node ("n1" of "n1:3"); "all" stays "all".
pub fn host_of(node: &str) -> &str {
    node.split(':').next().unwrap_or(node)
}

impl Row {
    /// Whether the figure is a time, bounded from above.
    pub fn is_time(&self) -> bool {
        self.ceiling.is_some() && self.floor.is_none()
    }

    /// The highest of its samples, or the lowest; the figure itself without samples.
    fn extreme(&self, highest: bool) -> Option<f64> {
        let pick = if highest { f64::max } else { f64::min };
        self.samples.iter().copied().reduce(pick).or(self.measured)
    }

    /// The worst of its samples for the metric's direction (the lowest
    /// bandwidth, the longest time), or the figure itself.
    pub fn worst_sample(&self) -> Option<f64> {
        self.extreme(self.is_time())
    }

    /// The best of its samples (the highest bandwidth, the shortest time),
    /// or the figure itself.
    pub fn best_sample(&self) -> Option<f64> {
        self.extreme(!self.is_time())
    }

    /// The step as the table names it: "host to GPU 1G, pinned (GPU 0)".
    pub fn label(&self) -> String {
        match &self.place {
            Some(p) => format!("{} ({p})", self.step),
            None => self.step.clone(),
        }
    }
}

/// How far below a baseline (or its own history) a step may fall, as
/// fractions of it: WARN beyond `warn`, FAIL beyond `fail`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tolerance {
    pub warn: f64,
    pub fail: f64,
}

impl Default for Tolerance {
    fn default() -> Tolerance {
        Tolerance { warn: 0.05, fail: 0.10 }
    }
}

/// Where one process's seconds went: its start (the libraries loaded, the
/// MPI world joined), the facts, and each step with its set-up (kernel
/// compiles, NCCL's communicators, allocations), every sample and retry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Spent {
    /// A step's name, or [`START`] or [`FACTS`].
    pub step: String,
    /// The process's node (host, or host:rank).
    pub node: String,
    pub seconds: f64,
}

/// [`Spent`]'s step for the time from the process's start to the check's.
pub const START: &str = "start: libraries, MPI";
/// [`Spent`]'s step for reading and judging the facts.
pub const FACTS: &str = "facts";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// The worst row.
    pub status: Status,
    pub ready: bool,
    /// The nodes with a FAIL of their own: the ones to drain.
    pub failed_nodes: Vec<String>,
    pub summary: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckRun {
    #[serde(flatten)]
    pub header: Header,
    pub profile: String,
    /// Where the profile was read from (a file, or built in).
    pub profile_from: String,
    /// Where its expected values come from.
    pub source: String,
    pub measured_here: bool,
    pub level: String,
    pub budget_s: u64,
    pub elapsed_s: f64,
    /// The baseline the rows were held against, if any.
    pub baseline: Option<String>,
    pub nodes: Vec<String>,
    /// Each rank's node, in rank order (under MPI).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rank_nodes: Vec<String>,
    pub rows: Vec<Row>,
    /// Each process's seconds, step by step, in the order they ran.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub spent: Vec<Spent>,
    /// The tolerance each measured step was held to against a baseline,
    /// and against its own history (`--history`), by step name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tolerance: BTreeMap<String, Tolerance>,
    pub verdict: Option<Verdict>,
    /// What `--init` wrote.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub init: Option<String>,
}

impl Streamed for CheckRun {
    type Part = Row;
    fn header(&self) -> &Header {
        &self.header
    }
    fn header_mut(&mut self) -> &mut Header {
        &mut self.header
    }
    fn parts(&self) -> &[Row] {
        &self.rows
    }
}

impl CheckRun {
    /// Settles the verdict from the rows.
    pub fn settle(&mut self) {
        let status = self.rows.iter().map(|r| r.status).max().unwrap_or(Status::Pass).max(Status::Pass);
        let mut failed_nodes: Vec<String> =
            self.rows.iter().filter(|r| r.status == Status::Fail && r.node != "all").map(|r| r.node.clone()).collect();
        failed_nodes.sort();
        failed_nodes.dedup();
        let count = |s: Status| self.rows.iter().filter(|r| r.status == s).count();
        let (fails, warns, passes) = (count(Status::Fail), count(Status::Warn), count(Status::Pass));
        let summary = match status {
            Status::Fail => format!(
                "NOT READY: {fails} FAIL, {warns} WARN, {passes} PASS{}",
                if failed_nodes.is_empty() { String::new() } else { format!("; drain {}", failed_nodes.join(", ")) }
            ),
            Status::Warn => format!("READY with warnings: {warns} WARN, {passes} PASS"),
            _ => format!("READY: {passes} PASS"),
        };
        self.verdict = Some(Verdict { status, ready: status != Status::Fail, failed_nodes, summary });
    }

    /// The rows that judge `rank`: its own (its node's name), its host's
    /// (steps measured once a host) and those across the job; every row
    /// where ranks are not known (one process).
    pub fn rows_of(&self, rank: usize) -> impl Iterator<Item = &Row> {
        let me = self.rank_nodes.get(rank).cloned();
        self.rows
            .iter()
            .filter(move |r| me.as_deref().is_none_or(|n| r.node == "all" || r.node == n || r.node == host_of(n)))
    }

    /// The rows `rank` speaks for under `--quiet`, so that each is said
    /// once: its own, its host's when it is the host's first rank, and
    /// those across the job when it is rank 0.
    pub fn rows_said_by(&self, rank: usize) -> impl Iterator<Item = &Row> {
        let first_of_host = match self.rank_nodes.get(rank) {
            Some(n) => self.rank_nodes.iter().position(|m| host_of(m) == host_of(n)) == Some(rank),
            None => rank == 0,
        };
        let me = self.rank_nodes.get(rank).cloned();
        self.rows_of(rank).filter(move |r| match r.node.as_str() {
            "all" => rank == 0,
            n if me.as_deref() == Some(n) => true,
            _ => first_of_host,
        })
    }

    /// `rank`'s exit: 1 when its node is not ready (a FAIL of its own or
    /// across the job), 3 when what failed is hardware that is absent; a
    /// good node is ready even when another node of the job is not.
    pub fn verdict(&self, rank: usize) -> Result<()> {
        let Some(v) = &self.verdict else { return Ok(()) };
        let failed: Vec<&Row> = self.rows_of(rank).filter(|r| r.status == Status::Fail).collect();
        if failed.is_empty() {
            return Ok(());
        }
        let line = format!("{} (profile {}, level {})", v.summary, self.profile, self.level);
        if failed.iter().all(|r| r.missing) {
            return Err(Error::Missing(line));
        }
        Err(Error::CheckFailed(line))
    }
}

/// A measured or expected figure as the table and the failure lines print
/// it: three decimals, one from 100, powers of ten from a million.
pub fn figure(x: f64) -> String {
    match x.abs() {
        a if a >= 1e6 => format!("{x:.3e}"),
        a if a >= 100.0 => format!("{x:.1}"),
        _ => format!("{x:.3}"),
    }
}
