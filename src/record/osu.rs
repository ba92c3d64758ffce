//! The record of an OSU-style MPI run (schema `qbench.osu`): which of OSU
//! Micro-Benchmarks' tests, where each side's buffers lived, the ranks,
//! and one row per datatype and size in OSU's columns, each with the
//! elements found wrong when the size's timed loop ended.

use super::{Header, RankInfo, Streamed};
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};

pub const KIND: &str = "osu";

/// OSU's tests that qbench runs, by their program names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Benchmark {
    /// osu_latency: ping-pong, half the round trip.
    Latency,
    /// osu_bw: a window of sends, then a one-byte reply.
    Bw,
    /// osu_bibw: a window each way at once.
    Bibw,
    /// osu_mbw_mr: the first half of the ranks each send a window to a
    /// partner in the second half, all at once.
    MbwMr,
    /// osu_allreduce: MPI_Allreduce with MPI_SUM.
    Allreduce,
}

impl Benchmark {
    pub const ALL: &[Benchmark] =
        &[Benchmark::Latency, Benchmark::Bw, Benchmark::Bibw, Benchmark::MbwMr, Benchmark::Allreduce];

    /// The OSU program, and qbench's subcommand: "osu_bw".
    pub fn program(self) -> &'static str {
        match self {
            Benchmark::Latency => "osu_latency",
            Benchmark::Bw => "osu_bw",
            Benchmark::Bibw => "osu_bibw",
            Benchmark::MbwMr => "osu_mbw_mr",
            Benchmark::Allreduce => "osu_allreduce",
        }
    }

    pub fn from_program(name: &str) -> Option<Benchmark> {
        Benchmark::ALL.iter().copied().find(|b| b.program() == name)
    }

    /// OSU's title, with `accel` ("" or "-CUDA") where OSU puts it.
    pub fn title(self, accel: &str) -> String {
        match self {
            Benchmark::Latency => format!("OSU MPI{accel} Latency Test"),
            Benchmark::Bw => format!("OSU MPI{accel} Bandwidth Test"),
            Benchmark::Bibw => format!("OSU MPI{accel} Bi-Directional Bandwidth Test"),
            Benchmark::MbwMr => "OSU MPI Multiple Bandwidth / Message Rate Test".into(),
            Benchmark::Allreduce => format!("OSU MPI{accel} Allreduce Latency Test"),
        }
    }

    /// Whether its figure is a time (µs) rather than a bandwidth (MB/s).
    pub fn is_latency(self) -> bool {
        matches!(self, Benchmark::Latency | Benchmark::Allreduce)
    }

    /// Whether it sends a window of messages before it waits (`-W`).
    pub fn windowed(self) -> bool {
        matches!(self, Benchmark::Bw | Benchmark::Bibw | Benchmark::MbwMr)
    }
}

/// Where a side's buffers live: OSU's `H` and `D`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Place {
    #[serde(rename = "H")]
    Host,
    #[serde(rename = "D")]
    Device,
}

impl Place {
    pub fn letter(self) -> char {
        match self {
            Place::Host => 'H',
            Place::Device => 'D',
        }
    }
}

/// OSU's `-T` types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Datatype {
    #[serde(rename = "MPI_CHAR")]
    Char,
    #[serde(rename = "MPI_INT")]
    Int,
    #[serde(rename = "MPI_FLOAT")]
    Float,
}

impl Datatype {
    pub const ALL: &[Datatype] = &[Datatype::Char, Datatype::Int, Datatype::Float];

    pub fn name(self) -> &'static str {
        match self {
            Datatype::Char => "MPI_CHAR",
            Datatype::Int => "MPI_INT",
            Datatype::Float => "MPI_FLOAT",
        }
    }

    pub fn size(self) -> u64 {
        match self {
            Datatype::Char => 1,
            Datatype::Int | Datatype::Float => 4,
        }
    }
}

/// One table row.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct OsuRow {
    pub datatype: Datatype,
    /// OSU's size column, bytes; the messages carry `size / datatype size` elements.
    pub size: u64,
    /// Timed iterations (each a window for the bandwidth tests).
    pub iterations: u64,
    /// µs for the latency tests (the average over ranks for allreduce),
    /// MB/s (10^6 bytes) for the bandwidth tests.
    pub value: f64,
    /// osu_mbw_mr's messages per second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub messages_per_s: Option<f64>,
    /// osu_allreduce's fastest and slowest rank, µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_us: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_us: Option<f64>,
    /// Elements found wrong in every receiving buffer once the timed loop ended.
    pub wrong: u64,
}

/// A run: the header, what was asked, the ranks, the rows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OsuRun {
    #[serde(flatten)]
    pub header: Header,
    pub benchmark: Benchmark,
    /// Where the first and the second side's buffers live (OSU's SRC DST:
    /// rank 0 and rank 1; the senders and receivers of osu_mbw_mr; every
    /// rank's for osu_allreduce takes the first).
    pub buffers: (Place, Place),
    /// Messages sent before each wait, for the windowed tests.
    pub window: Option<u32>,
    /// Sender-receiver pairs of osu_mbw_mr.
    pub pairs: Option<usize>,
    /// osu_allreduce's -f (min, max and iterations columns).
    pub full: bool,
    /// OSU's -c: a Validation column (qbench checks every size regardless).
    pub validation_column: bool,
    pub ranks: Vec<RankInfo>,
    pub rows: Vec<OsuRow>,
    pub wrong_elements: u64,
}

impl Streamed for OsuRun {
    type Part = OsuRow;
    fn header(&self) -> &Header {
        &self.header
    }
    fn header_mut(&mut self) -> &mut Header {
        &mut self.header
    }
    fn parts(&self) -> &[OsuRow] {
        &self.rows
    }
}

impl OsuRun {
    pub fn push(&mut self, row: OsuRow) {
        self.wrong_elements += row.wrong;
        self.rows.push(row);
    }

    /// Wrong data fails the run.
    pub fn verdict(&self) -> Result<()> {
        let bad: Vec<&OsuRow> = self.rows.iter().filter(|r| r.wrong > 0).collect();
        let Some(first) = bad.first() else { return Ok(()) };
        Err(Error::CheckFailed(format!(
            "{} wrong elements in {} of {} sizes (the first at {} B {}): what MPI delivered is not what was sent",
            self.wrong_elements,
            bad.len(),
            self.rows.len(),
            first.size,
            first.datatype.name()
        )))
    }
}
