//! The typed records a copy run produces (schema `qbench.copy.v1`). Every
//! renderer (tables, matrices, latency tables, JSON, CSV) reads these and
//! nothing else.

use crate::harness::record::IterStats;
use serde::Serialize;

pub const SCHEMA: &str = "qbench.copy.v1";

/// The options of a run, as resolved.
#[derive(Debug, Clone, Serialize)]
pub struct Config {
    pub tests: Vec<&'static str>,
    pub ngpus: usize,
    pub minbytes: u64,
    pub maxbytes: u64,
    pub stepfactor: u64,
    /// Back-to-back copies per timed sample.
    pub iters: u32,
    pub warmup_iters: u32,
    pub samples: u32,
    /// Copies timed one by one at each latency size.
    pub lat_iters: u32,
    pub lat_sizes: Vec<u64>,
    pub seed: u64,
    /// Set by QBENCH_CORRUPT=copy[:WORD]: the word flipped in every destination.
    pub corrupt_word: Option<u64>,
}

/// One GPU of the run.
#[derive(Debug, Clone, Serialize)]
pub struct Device {
    pub index: usize,
    pub name: String,
    pub bus_id: String,
    pub total_mem: u64,
}

/// Where bytes come from or go to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    Host,
    Gpu(usize),
}

impl Serialize for Endpoint {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl std::fmt::Display for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Endpoint::Host => f.write_str("host"),
            Endpoint::Gpu(g) => write!(f, "gpu{g}"),
        }
    }
}

/// Median, smallest and largest over the samples.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Default)]
pub struct Stat {
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

impl Stat {
    pub fn of(values: &[f64]) -> Stat {
        let (median, min, max) = crate::harness::stats::median_min_max(values);
        Stat { median, min, max }
    }
}

/// One stream of copies inside a measurement.
#[derive(Debug, Clone, Serialize)]
pub struct FlowResult {
    pub src: Endpoint,
    pub dst: Endpoint,
    /// The table column this flow adds to: "h2d", "d2h", "d2d", "fwd", "rev".
    pub direction: &'static str,
    /// The GPU whose stream issued the copies (its copy engine or SMs ran them).
    pub issued_by: usize,
    /// "ce" (copy engine), "sm" (copy kernel) or "cpu".
    pub engine: &'static str,
    /// Host memory kind of the flow, when one end is the host.
    pub host_memory: Option<&'static str>,
    /// Bytes one copy counts for: its size, or twice it for read + write figures.
    pub bytes_counted: u64,
    /// This flow's bytes over the time of the whole measurement.
    pub gbps: Stat,
    /// This flow's own time per copy, from its own events.
    pub own_time_us: Stat,
    pub wrong_words: u64,
}

/// One direction of a row: the flows of that direction summed.
#[derive(Debug, Clone, Serialize)]
pub struct DirResult {
    pub direction: &'static str,
    pub gbps: Stat,
}

/// One size of one placement of a bandwidth test.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub size: u64,
    pub placement: String,
    pub flows: Vec<FlowResult>,
    pub directions: Vec<DirResult>,
    /// Every flow's bytes over the time of the whole measurement.
    pub total_gbps: Stat,
    /// Time of the whole measurement (until the last flow finished) per copy.
    pub time_us: Stat,
    pub wrong_words: u64,
}

/// A placement of a test that was not run, and why.
#[derive(Debug, Clone, Serialize)]
pub struct Skipped {
    pub placement: String,
    pub reason: String,
}

/// Latency of one size: one copy at a time.
#[derive(Debug, Clone, Serialize)]
pub struct LatencyRow {
    pub size: u64,
    /// Host clock from issuing the copy to seeing it complete.
    pub host: IterStats,
    /// Device events around the copy; absent for CPU copies (gdrcopy).
    pub device: Option<IterStats>,
    pub wrong_words: u64,
}

/// One latency table.
#[derive(Debug, Clone, Serialize)]
pub struct LatencySeries {
    pub label: String,
    pub placement: String,
    pub rows: Vec<LatencyRow>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Ran,
    Unavailable,
}

/// One test of the run.
#[derive(Debug, Clone, Serialize)]
pub struct TestRecord {
    pub name: &'static str,
    pub family: &'static str,
    pub description: &'static str,
    /// How bytes and time become the figure.
    pub figure: &'static str,
    /// How time was measured.
    pub timing: &'static str,
    pub status: Status,
    /// Why the test did not run, and what to do about it.
    pub reason: Option<String>,
    pub fix: Option<String>,
    /// Sizes of the sweep left out because free memory could not hold them.
    pub sizes_left_out: Vec<u64>,
    pub skipped: Vec<Skipped>,
    pub rows: Vec<Row>,
    pub latency: Vec<LatencySeries>,
    pub wrong_words: u64,
}

/// The meaning of one kind of figure.
#[derive(Debug, Clone, Serialize)]
pub struct Definition {
    pub name: &'static str,
    pub text: &'static str,
}

/// A whole copy run.
#[derive(Debug, Clone, Serialize)]
pub struct CopyRun {
    #[serde(flatten)]
    pub header: crate::harness::record::RunHeader,
    pub config: Config,
    pub devices: Vec<Device>,
    /// What each kind of figure means.
    pub definitions: Vec<Definition>,
    pub tests: Vec<TestRecord>,
    pub wrong_words: u64,
    /// Set when a test broke off the run.
    pub error: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_median_of_odd_and_even_counts() {
        let s = Stat::of(&[3.0, 1.0, 2.0]);
        assert_eq!((s.median, s.min, s.max), (2.0, 1.0, 3.0));
        assert_eq!(Stat::of(&[4.0, 1.0, 3.0, 2.0]).median, 2.5);
        assert_eq!(Stat::of(&[]), Stat::default());
    }

    #[test]
    fn endpoints_serialise_as_names() {
        assert_eq!(serde_json::to_string(&Endpoint::Host).unwrap(), "\"host\"");
        assert_eq!(serde_json::to_string(&Endpoint::Gpu(1)).unwrap(), "\"gpu1\"");
    }
}
