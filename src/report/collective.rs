//! A collective run as nccl-tests 2.19 prints it (header, one row per size
//! with out-of-place and in-place halves, footer), so that parsers written
//! for nccl-tests read qbench's output; and as CSV, one line per size and
//! placement, for spreadsheets and plotting scripts.

use super::{Csv, Table, cfmt, csv_lines};
use crate::error::Result;
use crate::record::collective::{Cell, CollectiveRun, SizeRecord};
use crate::units::Step;
use serde::Serialize;
use std::fmt::Write;

impl Table for CollectiveRun {
    fn head(&self) -> String {
        header(self)
    }
    fn part(&self, r: &SizeRecord) -> String {
        row(r)
    }
    fn tail(&self) -> String {
        footer(self)
    }
}

/// Everything above the first row.
fn header(run: &CollectiveRun) -> String {
    let c = &run.config;
    let mut s = String::new();
    let lib = run
        .library
        .as_ref()
        .map(|l| format!(" {}-library={}", l.name.to_lowercase(), l.version_code))
        .unwrap_or_default();
    let _ = writeln!(s, "# qbench version {} transport={}{lib}", run.header.qbench_version, run.transport.name());
    let _ = writeln!(s, "# Collective test starting: {}", run.program);
    let (step, how) = match c.step {
        Step::Factor(f) => (f, "factor"),
        Step::Bytes(b) => (b, "bytes"),
    };
    let _ = writeln!(
        s,
        "# nThread {} nGpus {} minBytes {} maxBytes {} step: {}({}) warmup iters: {} iters: {} agg iters: {} validation: {} graph: {} unalign: 0",
        c.nthreads,
        c.ngpus,
        c.minbytes,
        c.maxbytes,
        step,
        how,
        c.warmup_iters,
        c.iters,
        c.agg_iters,
        c.check,
        c.cudagraph
    );
    s.push_str("#\n# Using devices\n");
    for d in &run.devices {
        let _ = writeln!(
            s,
            "#  Rank {:>2} Group {:>2} Pid {:>6} on {:>10} device {:>2} [{}] {}",
            d.rank, d.group, d.pid, d.host, d.device, d.bus_id, d.name
        );
    }
    if let Some(max) = run.max_bytes_reduced_to {
        let _ = writeln!(s, "#\n# Reducing maxBytes to {max} due to memory limitation");
    }
    if let Some(g) = &run.split {
        let _ = writeln!(
            s,
            "#\n# {}: {} communicators, one per Group; each row combines all of their times (-a), as nccl-tests does, and each has its own table below",
            g.split.asked,
            g.groups.len()
        );
    }
    s.push_str("#\n");
    s.push_str(&columns());
    s
}

/// The column heads of a table.
fn columns() -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}           out-of-place                       in-place          ",
        "", "", "", "", ""
    );
    let _ = writeln!(
        s,
        "# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6} ",
        "size",
        "count",
        "type",
        "redop",
        "root",
        "time",
        "algbw",
        "busbw",
        "#wrong",
        "time",
        "algbw",
        "busbw",
        "#wrong"
    );
    let _ = writeln!(
        s,
        "# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6} ",
        "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", ""
    );
    s
}

fn cell(c: &Cell) -> String {
    let (t, a, b) = (cfmt::bounded(c.time_us, 7), cfmt::bounded(c.algbw_gbps, 6), cfmt::bounded(c.busbw_gbps, 6));
    match c.wrong {
        Some(w) => format!("  {t}  {a}  {b}  {:>6}", cfmt::g(w as f64)),
        None => format!("  {t}  {a}  {b}    N/A"),
    }
}

/// One row.
fn row(r: &SizeRecord) -> String {
    row_of(r, r.count, &r.out_of_place, &r.in_place)
}

/// A row of size `r` with the given count and cells.
fn row_of(r: &SizeRecord, count: u64, out_of_place: &Cell, in_place: &Cell) -> String {
    format!(
        "{:>12}  {:>12}  {:>8}  {:>6}  {:>6}{}{}\n",
        r.size,
        count,
        r.dtype.name(),
        r.redop.map_or("none", |o| o.name()),
        r.root,
        cell(out_of_place),
        cell(in_place)
    )
}

/// Under a split, each communicator's own table: its rows, its average.
fn group_tables(run: &CollectiveRun) -> String {
    let mut s = String::new();
    let Some(split) = &run.split else { return s };
    for g in &split.groups {
        let hosts = run.hosts_of(&g.ranks);
        let ranks: Vec<String> = g.ranks.iter().map(|r| r.to_string()).collect();
        let _ = writeln!(s, "#\n# Group {}: ranks {} on {}", g.group, ranks.join(" "), hosts.join(" "));
        s.push_str(&columns());
        let mut busbw = Vec::new();
        for r in &run.results {
            if let Some(gr) = r.groups.iter().find(|gr| gr.group == g.group) {
                s.push_str(&row_of(r, gr.count, &gr.out_of_place, &gr.in_place));
                busbw.extend([gr.out_of_place.busbw_gbps, gr.in_place.busbw_gbps]);
            }
        }
        let avg = busbw.iter().sum::<f64>() / busbw.len().max(1) as f64;
        let _ = writeln!(s, "# Group {} {:<14} : {}", g.group, "avg bus bandwidth", cfmt::g(avg));
    }
    s.push_str("#\n");
    s
}

/// Everything below the last row.
fn footer(run: &CollectiveRun) -> String {
    let mut s = group_tables(run);
    let _ = writeln!(
        s,
        "# {:<20} : {} {}",
        "Out of bounds values",
        run.out_of_bounds,
        if run.out_of_bounds > 0 { "FAILED" } else { "OK" }
    );
    let verdict = run.min_bandwidth.as_ref().map_or("", |m| if m.ok { "OK" } else { "FAILED" });
    let _ = writeln!(s, "# {:<20} : {} {}", "Avg bus bandwidth", cfmt::g(run.avg_busbw_gbps), verdict);
    let _ = writeln!(s, "#\n# Collective test concluded: {}\n#\n", run.program);
    s
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::{DataType, RedOp};
    use crate::record::collective::{Average, Config, TransportKind};
    use crate::record::{Header, LibraryInfo, RankInfo};
    use crate::stats::Summary;

    fn cell(time_us: f64, algbw_gbps: f64, busbw_gbps: f64, wrong: Option<u64>) -> Cell {
        let iterations = Summary {
            samples: 20,
            min: time_us,
            median: time_us,
            mean: time_us,
            p99: time_us,
            p999: time_us,
            max: time_us,
        };
        Cell { time_us, algbw_gbps, busbw_gbps, wrong, iterations }
    }

    fn row(size: u64, count: u64, dtype: DataType, redop: Option<RedOp>, root: i64, a: Cell, b: Cell) -> SizeRecord {
        SizeRecord { cycle: 0, size, count, dtype, redop, root, out_of_place: a, in_place: b, groups: Vec::new() }
    }

    /// The golden file is rendered by an independent implementation of
    /// nccl-tests 2.19's printf calls (Python's % operator is C printf):
    /// tests/golden/README.md says how it was made.
    #[test]
    fn layout_matches_nccl_tests_golden() {
        let device = |rank: usize, bus: &str| RankInfo {
            rank,
            group: 0,
            pid: 4242,
            host: "gpuhost".into(),
            device: rank,
            bus_id: bus.into(),
            name: "NVIDIA H200".into(),
        };
        let mut header = Header::start("collective", None);
        header.qbench_version = "0.1.0".into();
        let run = CollectiveRun {
            header,
            collective: "all_reduce".into(),
            program: "all_reduce_perf".into(),
            transport: TransportKind::Nccl,
            config: Config {
                nranks: 2,
                nthreads: 1,
                ngpus: 2,
                minbytes: 16 << 20,
                maxbytes: 1 << 30,
                step: Step::Factor(2),
                warmup_iters: 1,
                iters: 20,
                agg_iters: 1,
                run_cycles: 1,
                check: 1,
                cudagraph: 0,
                average: Average::Mean,
                timeout_s: 0,
                datatypes: vec![DataType::Float],
                ops: vec![RedOp::Sum],
                root: 0,
                seed: 1,
            },
            library: Some(LibraryInfo {
                name: "NCCL".into(),
                version_code: 22803,
                version: "2.28.3".into(),
                path: None,
            }),
            devices: vec![device(0, "0000:00:06"), device(1, "0000:00:07")],
            split: None,
            timing: String::new(),
            max_bytes_reduced_to: Some(512 << 20),
            results: vec![
                row(
                    16 << 20,
                    4 << 20,
                    DataType::Float,
                    Some(RedOp::Sum),
                    -1,
                    cell(84.79, 197.87, 197.87, Some(0)),
                    cell(80.84, 207.55, 207.55, Some(0)),
                ),
                row(
                    512 << 20,
                    128 << 20,
                    DataType::Float,
                    Some(RedOp::Sum),
                    -1,
                    cell(1765.3, 304.12, 304.12, Some(0)),
                    cell(12345.67, 4247.3, 12345.0, Some(1 << 20)),
                ),
                row(
                    1024,
                    512,
                    DataType::Bfloat16,
                    None,
                    1,
                    cell(20.81, 0.049, 0.049, None),
                    cell(21.16, 0.048, 0.048, None),
                ),
            ],
            out_of_bounds: 1,
            wrong_elements: 1 << 20,
            avg_busbw_gbps: 275.71543,
            min_bandwidth: None,
        };
        let mut text = run.head();
        for r in &run.results {
            text.push_str(&run.part(r));
        }
        text.push_str(&run.tail());
        let golden = include_str!("../../tests/golden/all_reduce_table.txt");
        for (i, (got, want)) in text.lines().zip(golden.lines()).enumerate() {
            assert_eq!(got, want, "line {}", i + 1);
        }
        assert_eq!(text, golden);
    }
}
