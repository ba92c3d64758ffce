//! The record of a comparison (schema `qbench.compare`): the same bytes
//! between partner ranks over every wire, each checked, side by side.

use super::{Header, LibraryInfo, RankInfo, Streamed};
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};

pub const KIND: &str = "compare";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    pub transport: String,
    pub how: String,
    /// Median GB/s per direction; None when it could not run.
    pub gbps: Option<f64>,
    pub vs_best: Option<f64>,
    /// Wrong amplitudes after an exchange and combine over this wire.
    pub wrong: Option<u64>,
    pub unavailable: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    #[serde(flatten)]
    pub header: Header,
    pub bytes_per_rank: u64,
    pub ranks: usize,
    pub devices: Vec<RankInfo>,
    pub library: Option<LibraryInfo>,
    pub iters: u32,
    pub rows: Vec<Row>,
}

impl Streamed for Comparison {
    type Part = Row;
    fn header(&self) -> &Header {
        &self.header
    }
    fn header_mut(&mut self) -> &mut Header {
        &mut self.header
    }
    fn parts(&self) -> &[Self::Part] {
        &self.rows
    }
}

impl Comparison {
    /// Sets every row's ratio to the fastest wire (the sendrecv reference aside).
    pub fn rank(&mut self, reference: &str) {
        let best = self.rows.iter().filter(|r| r.transport != reference).filter_map(|r| r.gbps).fold(0.0, f64::max);
        for r in &mut self.rows {
            r.vs_best = r.gbps.map(|g| g / best);
        }
    }

    /// Whether every transfer arrived right.
    pub fn verdict(&self) -> Result<()> {
        let wrong: u64 = self.rows.iter().filter_map(|r| r.wrong).sum();
        if wrong > 0 {
            return Err(Error::CheckFailed(format!("{wrong} amplitudes arrived wrong")));
        }
        Ok(())
    }
}
