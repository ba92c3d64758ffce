//! CSV rendering of a collective run: one line per size and placement, for
//! spreadsheets and plotting scripts.

use super::{Csv, csv_lines};
use crate::error::Result;
use crate::record::collective::{Cell, CollectiveRun};
use serde::Serialize;

#[derive(Serialize)]
struct Line<'a> {
    collective: &'a str,
    transport: &'a str,
    nranks: usize,
    cycle: u32,
    size: u64,
    count: u64,
    #[serde(rename = "type")]
    dtype: &'a str,
    redop: &'a str,
    root: i64,
    placement: &'a str,
    time_us: f64,
    algbw_gbps: f64,
    busbw_gbps: f64,
    wrong: Option<u64>,
    min_us: f64,
    p50_us: f64,
    p99_us: f64,
    max_us: f64,
}

impl Csv for CollectiveRun {
    fn csv(&self) -> Result<Vec<u8>> {
        csv_lines(self.results.iter().flat_map(|r| {
            [("out-of-place", &r.out_of_place), ("in-place", &r.in_place)].map(|(placement, c)| {
                let Cell { time_us, algbw_gbps, busbw_gbps, wrong, iterations: it } = *c;
                Line {
                    collective: &self.collective,
                    transport: self.transport.name(),
                    nranks: self.config.nranks,
                    cycle: r.cycle,
                    size: r.size,
                    count: r.count,
                    dtype: r.dtype.name(),
                    redop: r.redop.map_or("none", |o| o.name()),
                    root: r.root,
                    placement,
                    time_us,
                    algbw_gbps,
                    busbw_gbps,
                    wrong,
                    min_us: it.min,
                    p50_us: it.median,
                    p99_us: it.p99,
                    max_us: it.max,
                }
            })
        }))
    }
}
