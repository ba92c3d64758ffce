//! The nccl-tests table, laid out as nccl-tests 2.19 prints it (header,
//! one row per size with out-of-place and in-place halves, footer), so that
//! parsers written for nccl-tests read qbench's output.

use super::cfmt;
use crate::harness::record::{Cell, CollectiveRun, SizeRecord};
use crate::units::Step;
use std::fmt::Write;

/// Everything above the first row.
pub fn header(run: &CollectiveRun) -> String {
    let c = &run.config;
    let mut s = String::new();
    let lib = run
        .library
        .as_ref()
        .map(|l| format!(" {}-library={}", l.name.to_lowercase(), l.version_code))
        .unwrap_or_default();
    let _ = writeln!(s, "# qbench version {} transport={}{lib}", run.qbench_version, run.transport.name());
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
    s.push_str("#\n");
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
    let wrong = match c.wrong {
        Some(w) => format!("{:>6}", cfmt::g(w as f64)),
        None => "   N/A".into(),
    };
    format!(
        "  {}  {}  {}  {}",
        cfmt::bounded(c.time_us, 7),
        cfmt::bounded(c.algbw_gbps, 6),
        cfmt::bounded(c.busbw_gbps, 6),
        wrong
    )
}

/// One row.
pub fn row(r: &SizeRecord) -> String {
    format!(
        "{:>12}  {:>12}  {:>8}  {:>6}  {:>6}{}{}\n",
        r.size,
        r.count,
        r.dtype.name(),
        r.redop.map_or("none", |o| o.name()),
        r.root,
        cell(&r.out_of_place),
        cell(&r.in_place)
    )
}

/// Everything below the last row.
pub fn footer(run: &CollectiveRun) -> String {
    let mut s = String::new();
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
