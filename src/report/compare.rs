//! Text and CSV renderings of a comparison: one table, a row per wire, at
//! the end of the run.

use super::exchange::table;
use super::{Csv, Dialect, Table, csv_lines};
use crate::error::Result;
use crate::record::compare::{Comparison, Row};
use crate::units::format_size;
use serde::Serialize;

impl Table for Comparison {
    fn head(&self) -> String {
        String::new()
    }
    fn part(&self, _: &Row) -> String {
        String::new()
    }
    fn tail(&self) -> String {
        let rows = self
            .rows
            .iter()
            .map(|r| {
                vec![
                    r.transport.clone(),
                    r.gbps.map_or("-".into(), |g| format!("{g:.1}")),
                    r.vs_best.map_or("-".into(), |v| format!("{:.2}", v)),
                    r.wrong.map_or("-".into(), |w| w.to_string()),
                    r.unavailable.as_ref().map_or(r.how.clone(), |u| format!("unavailable: {u}")),
                ]
            })
            .collect();
        format!(
            "# qbench compare: {} per rank to its partner, {} ranks, medians of {}\n{}\n",
            format_size(self.bytes_per_rank),
            self.ranks,
            self.iters,
            table(&["transport", "GB/s/dir", "vs best", "wrong", "how"], rows)
        )
    }
}

#[derive(Serialize)]
struct Line<'a> {
    transport: &'a str,
    bytes_per_rank: u64,
    ranks: usize,
    gbps_per_direction: Option<f64>,
    vs_best: Option<f64>,
    wrong: Option<u64>,
    unavailable: &'a str,
}

/// One line per wire.
/// nccl-tests has no such run: qbench's own JSON only.
impl Dialect for Comparison {}

impl Csv for Comparison {
    fn csv(&self) -> Result<Vec<u8>> {
        csv_lines(self.rows.iter().map(|r| Line {
            transport: &r.transport,
            bytes_per_rank: self.bytes_per_rank,
            ranks: self.ranks,
            gbps_per_direction: r.gbps,
            vs_best: r.vs_best,
            wrong: r.wrong,
            unavailable: r.unavailable.as_deref().unwrap_or(""),
        }))
    }
}
