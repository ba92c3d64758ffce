//! A comparison's table, a row per wire at the end of the run, and its
//! rows.

use super::Table;
use super::exchange::table;
use super::rows::{Cell, Rows};
use crate::record::compare::{Comparison, Row};
use crate::units::format_size;

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

impl Rows for Comparison {
    const KIND: &'static str = crate::record::compare::KIND;

    /// One row per wire.
    fn rows(&self) -> Vec<Vec<Cell>> {
        let rows = self.rows.iter().map(|r| {
            vec![
                Cell::key("transport", r.transport.as_str()),
                Cell::key("bytes_per_rank", self.bytes_per_rank),
                Cell::key("ranks", self.ranks),
                Cell::figure("gbps_per_direction", r.gbps),
                Cell::figure("vs_best", r.vs_best),
                Cell::figure("wrong", r.wrong),
                Cell::note("unavailable", r.unavailable.as_deref().unwrap_or("")),
            ]
        });
        rows.collect()
    }
}
