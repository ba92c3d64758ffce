//! The record of a copy run (schema `qbench.copy`): per test its sweep
//! rows with their flows, its latency tables, or why it did not run. The
//! tables, matrices, latency tables, JSON and CSV read it.

use super::{Header, Streamed};
use crate::error::{Error, Result};
use crate::numa::{Mode, Placement};
use crate::stats::Summary;
use serde::{Deserialize, Serialize};

pub const KIND: &str = "copy";

/// The options of a run, as resolved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Config {
    pub tests: Vec<String>,
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
    /// `--numa`: where host threads and memory were bound; None in records
    /// of a qbench that bound nothing.
    #[serde(default)]
    pub numa: Option<Mode>,
}

/// One GPU of the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for Endpoint {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        match text.as_str() {
            "host" => Ok(Endpoint::Host),
            g => {
                g.strip_prefix("gpu").and_then(|n| n.parse().ok()).map(Endpoint::Gpu).ok_or_else(|| {
                    serde::de::Error::custom(format!("unknown endpoint '{text}': expected host or gpuN"))
                })
            }
        }
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

/// One stream of copies inside a measurement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FlowResult {
    pub src: Endpoint,
    pub dst: Endpoint,
    /// The table column this flow adds to: "h2d", "d2h", "d2d", "fwd", "rev".
    pub direction: String,
    /// The GPU whose stream issued the copies (its copy engine or SMs ran them).
    pub issued_by: usize,
    /// "ce" (copy engine), "sm" (copy kernel) or "cpu".
    pub engine: String,
    /// Host memory kind of the flow, when one end is the host.
    pub host_memory: Option<String>,
    /// Bytes one copy counts for: its size, or twice it for read + write figures.
    pub bytes_counted: u64,
    /// This flow's bytes over the time of the whole measurement, GB/s.
    pub gbps: Summary,
    /// This flow's own time per copy, from its own events, µs.
    pub own_time_us: Summary,
    pub wrong_words: u64,
}

/// One direction of a row: the flows of that direction summed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DirResult {
    pub direction: String,
    /// GB/s.
    pub gbps: Summary,
}

/// One size of one placement of a bandwidth test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    pub size: u64,
    pub placement: String,
    pub flows: Vec<FlowResult>,
    pub directions: Vec<DirResult>,
    /// Every flow's bytes over the time of the whole measurement, GB/s.
    pub total_gbps: Summary,
    /// Time of the whole measurement (until the last flow finished) per copy, µs.
    pub time_us: Summary,
    pub wrong_words: u64,
}

/// A placement of a test that was not run, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Skipped {
    pub placement: String,
    pub reason: String,
}

/// Latency of one size: one copy at a time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencyRow {
    pub size: u64,
    /// Host clock from issuing the copy to seeing it complete, µs.
    pub host: Summary,
    /// Device events around the copy, µs; absent for CPU copies (gdrcopy).
    pub device: Option<Summary>,
    pub wrong_words: u64,
}

/// One latency table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencySeries {
    pub label: String,
    pub placement: String,
    pub rows: Vec<LatencyRow>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Ran,
    Unavailable,
}

/// One test of the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestRecord {
    pub name: String,
    pub family: String,
    pub description: String,
    /// How bytes and time become the figure.
    pub figure: String,
    /// How time was measured.
    pub timing: String,
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
    /// Where the host side of the copies to or from each GPU ran; empty
    /// for tests without host memory, and in records of a qbench that
    /// bound nothing.
    #[serde(default)]
    pub numa: Vec<HostSide>,
}

/// The host side of a test's copies to or from one GPU: the thread's CPUs
/// and memory as the kernel answered after binding them (or not) per `--numa`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostSide {
    pub gpu: usize,
    #[serde(flatten)]
    pub placement: Placement,
}

/// The meaning of one kind of figure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Definition {
    pub name: String,
    pub text: String,
}

/// A whole copy run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CopyRun {
    #[serde(flatten)]
    pub header: Header,
    pub config: Config,
    pub devices: Vec<Device>,
    /// What NVRTC built kernels/copy.cu as, e.g. "sm_90 cubin (NVRTC 13.0)".
    #[serde(default)]
    pub kernels: Option<String>,
    /// What each kind of figure means.
    pub definitions: Vec<Definition>,
    pub tests: Vec<TestRecord>,
    pub wrong_words: u64,
    /// Set when a test broke off the run.
    pub error: Option<String>,
}

/// One test of the registry, as `qbench copy --list` shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestInfo {
    pub name: String,
    pub family: String,
    pub description: String,
}

impl Streamed for CopyRun {
    type Part = TestRecord;
    fn header(&self) -> &Header {
        &self.header
    }
    fn header_mut(&mut self) -> &mut Header {
        &mut self.header
    }
    fn parts(&self) -> &[Self::Part] {
        &self.tests
    }
}

impl TestRecord {
    /// The test cannot run here: why, and what would let it.
    pub fn unavailable(&mut self, reason: impl Into<String>, fix: impl Into<String>) {
        self.status = Status::Unavailable;
        self.reason = Some(reason.into());
        self.fix = Some(fix.into());
    }

    /// One placement of the test cannot run here.
    pub fn skip(&mut self, placement: impl Into<String>, reason: impl Into<String>) {
        self.skipped.push(Skipped { placement: placement.into(), reason: reason.into() });
    }
}

impl CopyRun {
    /// Adds a finished test, its wrong words counted.
    pub fn push(&mut self, mut t: TestRecord) {
        t.wrong_words = t.rows.iter().map(|r| r.wrong_words).sum::<u64>()
            + t.latency.iter().flat_map(|s| &s.rows).map(|r| r.wrong_words).sum::<u64>();
        self.wrong_words += t.wrong_words;
        self.tests.push(t);
    }

    /// Whether every copy delivered its source, and anything could run.
    pub fn verdict(&self) -> Result<()> {
        if self.wrong_words > 0 {
            let bad: Vec<&str> = self.tests.iter().filter(|t| t.wrong_words > 0).map(|t| t.name.as_str()).collect();
            return Err(Error::CheckFailed(format!(
                "{} wrong 8-byte words in the copied data ({}): a copy delivered bytes that differ from its source",
                self.wrong_words,
                bad.join(", ")
            )));
        }
        if !self.tests.is_empty() && self.tests.iter().all(|t| t.status == Status::Unavailable) {
            let why: Vec<String> =
                self.tests.iter().map(|t| format!("{}: {}", t.name, t.reason.as_deref().unwrap_or("?"))).collect();
            return Err(Error::Missing(format!("no requested copy test can run on this machine ({})", why.join("; "))));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_serialise_as_names_and_back() {
        for (e, text) in [(Endpoint::Host, "\"host\""), (Endpoint::Gpu(1), "\"gpu1\"")] {
            assert_eq!(serde_json::to_string(&e).unwrap(), text);
            assert_eq!(serde_json::from_str::<Endpoint>(text).unwrap(), e);
        }
        assert!(serde_json::from_str::<Endpoint>("\"gpux\"").is_err());
    }
}
