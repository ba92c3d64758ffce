//! CSV rendering of a collective run: one line per size and placement, for
//! spreadsheets and plotting scripts.

use crate::error::{Error, Result};
use crate::harness::record::{Cell, CollectiveRun};
use serde::Serialize;
use std::path::Path;

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

pub fn to_string(run: &CollectiveRun) -> Result<String> {
    let mut w = csv::Writer::from_writer(Vec::new());
    for r in &run.results {
        for (placement, c) in [("out-of-place", &r.out_of_place), ("in-place", &r.in_place)] {
            let Cell { time_us, algbw_gbps, busbw_gbps, wrong, iterations: it } = *c;
            w.serialize(Line {
                collective: run.program.trim_end_matches("_perf"),
                transport: run.transport.name(),
                nranks: run.config.nranks,
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
                min_us: it.min_us,
                p50_us: it.p50_us,
                p99_us: it.p99_us,
                max_us: it.max_us,
            })
            .map_err(|e| Error::Runtime(format!("cannot encode CSV: {e}")))?;
        }
    }
    let bytes = w.into_inner().map_err(|e| Error::Runtime(format!("cannot encode CSV: {e}")))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

pub fn write(run: &CollectiveRun, path: &Path) -> Result<()> {
    std::fs::write(path, to_string(run)?)
        .map_err(|e| Error::Usage(format!("cannot write CSV results to {}: {e}", path.display())))
}
