//! A collective run as nccl-tests 2.19 prints it (header, one row per size
//! with out-of-place and in-place halves, footer), so that parsers written
//! for nccl-tests read qbench's output; and its rows, one per size and
//! placement, for spreadsheets, plotting scripts and Prometheus.
//! nccl-tests' JSON is export/nccl_tests.rs.

use super::rows::{self, Rows};
use super::{Table, cfmt};
use crate::record::collective::{Cell, CollectiveRun, Config, Registration, SizeRecord, TransportKind};
use crate::units::Growth;
use std::fmt::Write;

impl Table for CollectiveRun {
    fn head(&self) -> String {
        header(self)
    }
    fn part(&self, r: &SizeRecord) -> String {
        row(self, r)
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
    if let Some(note) = run.buffers.as_ref().and_then(|b| b.note.as_ref()) {
        let _ = writeln!(s, "# {note}");
    }
    let _ = writeln!(s, "# Collective test starting: {}", run.program);
    let (step, how) = match c.step {
        Growth::Factor(f) => (f, "factor"),
        Growth::Bytes(b) => (b, "bytes"),
    };
    let _ = writeln!(
        s,
        "# nThread {} nGpus {} minBytes {} maxBytes {} step: {}({}) warmup iters: {} iters: {} agg iters: {} validation: {} graph: {} unalign: {}",
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
        c.cudagraph,
        c.unalign
    );
    s.push_str(&modes(run));
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
    for what in &run.left_out {
        let _ = writeln!(s, "# Left out {what}");
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
    s.push_str(&columns(c));
    s
}

/// The lines of the modes asked for: -z's blocking, -I's per-iteration
/// report, -R's registered buffers.
fn modes(run: &CollectiveRun) -> String {
    let c = &run.config;
    let mut s = String::from(match c.blocking {
        1 => "# Blocking Enabled: wait and barrier after each inner iteration (-m) \n",
        2 => "# Blocking Enabled: wait after each inner iteration (-m), no barrier \n",
        3 => "# Blocking Enabled: wait and barrier after each outer iteration (-n); time excludes barrier \n",
        _ => "",
    });
    if c.per_iter_timing {
        let clock = if run.transport == TransportKind::Nccl { "CUDA event" } else { "host clock" };
        let _ = write!(s, "# Per-Iteration Report: {clock} timing; i_* uses max over process rows");
        if c.per_iter_skip > 0 {
            let _ = write!(s, "; summary skips first {} iterations", c.per_iter_skip);
        }
        s.push_str(" \n");
    }
    if let Some(b) = run.buffers.as_ref().filter(|_| c.register != Registration::None) {
        let how = match b.register {
            Registration::None => "not registered",
            Registration::Local => "registered with each communicator (ncclCommRegister)",
            Registration::Symmetric => "registered as symmetric windows (ncclCommWindowRegister)",
        };
        let _ = writeln!(s, "# Buffers: {}, {how} (-R {})", b.allocator, c.register.code());
    }
    s
}

/// The column heads of a table: nccl-tests' writeResultHeader, with -C's
/// "cputime", -I's per-iteration columns and -S's timestamp.
fn columns(c: &Config) -> String {
    let time = if c.report_cputime { "cputime" } else { "time" };
    let (ts_label, ts_format) = if c.report_timestamps { ("timestamp", "%Y-%m-%d %H:%M:%S") } else { ("", "") };
    let pad = if c.report_timestamps { 19 } else { 0 };
    let lead = |a: &str, b: &str| format!("# {a:>10}  {b:>12}  {:>8}  {:>6}  {:>6}", "", "", "");
    let mut s = String::new();
    if c.per_iter_timing {
        let _ = writeln!(
            s,
            "{}              out-of-place (+ per-iteration)                                in-place (+ per-iteration)",
            lead("", "")
        );
        for (first, unit) in
            [(["size", "count", "type", "redop", "root"], false), (["(B)", "(elements)", "", "", ""], true)]
        {
            let half: [&str; 8] = if unit {
                ["(us)", "(GB/s)", "(GB/s)", "", "(us)", "(us)", "(us)", "(%)"]
            } else {
                [time, "algbw", "busbw", "#wrong", "i_min", "i_max", "i_p99", "i_cv%"]
            };
            let _ =
                write!(s, "# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}", first[0], first[1], first[2], first[3], first[4]);
            for _ in 0..2 {
                let _ = write!(
                    s,
                    "  {:>7}  {:>6}  {:>6}  {:>6}  {:>7}  {:>7}  {:>7}  {:>7}",
                    half[0], half[1], half[2], half[3], half[4], half[5], half[6], half[7]
                );
            }
            let _ = writeln!(s, " {:>pad$}", if unit { ts_format } else { ts_label });
        }
        return s;
    }
    let _ = writeln!(s, "{}           out-of-place                       in-place          ", lead("", ""));
    let _ = writeln!(
        s,
        "# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6} {:>pad$}",
        "size",
        "count",
        "type",
        "redop",
        "root",
        time,
        "algbw",
        "busbw",
        "#wrong",
        time,
        "algbw",
        "busbw",
        "#wrong",
        ts_label
    );
    let _ = writeln!(
        s,
        "# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6} {:>pad$}",
        "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "", ts_format
    );
    s
}

/// One half of a row: nccl-tests' writeBenchmarkLineBody (the time column
/// -C's cputime when asked), then -I's writePerIterReport.
fn cell(c: &Config, x: &Cell) -> String {
    let time = if c.report_cputime { x.cpu_time_us.unwrap_or(x.time_us) } else { x.time_us };
    let (t, a, b) = (cfmt::bounded(time, 7), cfmt::bounded(x.algbw_gbps, 6), cfmt::bounded(x.busbw_gbps, 6));
    let mut s = match x.wrong {
        Some(w) => format!("  {t}  {a}  {b}  {:>6}", cfmt::g(w as f64)),
        None => format!("  {t}  {a}  {b}    N/A"),
    };
    if c.per_iter_timing {
        let p = x.per_iter.as_ref();
        let f = |v: Option<f64>| cfmt::bounded(v.unwrap_or(0.0), 7);
        let _ = write!(
            s,
            "  {}  {}  {}  {}",
            f(p.map(|p| p.min_us)),
            f(p.map(|p| p.max_us)),
            f(p.map(|p| p.p99_us)),
            f(p.map(|p| p.cv_pct))
        );
    }
    s
}

/// One row.
fn row(run: &CollectiveRun, r: &SizeRecord) -> String {
    row_of(run, r, r.count, &r.out_of_place, &r.in_place)
}

/// A row of size `r` with the given count and cells, and -S's timestamp.
fn row_of(run: &CollectiveRun, r: &SizeRecord, count: u64, out_of_place: &Cell, in_place: &Cell) -> String {
    let c = &run.config;
    let stamp = match (&r.timestamp, c.report_timestamps) {
        (Some(t), true) => format!("{t:>21}"),
        _ => String::new(),
    };
    format!(
        "{:>12}  {:>12}  {:>8}  {:>6}  {:>6}{}{}{stamp}\n",
        r.size,
        count,
        r.dtype.name(),
        run.op_label(r),
        r.root,
        cell(c, out_of_place),
        cell(c, in_place)
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
        s.push_str(&columns(&run.config));
        let mut busbw = Vec::new();
        for r in &run.results {
            if let Some(gr) = r.groups.iter().find(|gr| gr.group == g.group) {
                s.push_str(&row_of(run, r, gr.count, &gr.out_of_place, &gr.in_place));
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
    match (run.header.complete, &run.header.stopped) {
        (true, _) => {
            let _ = writeln!(s, "#\n# Collective test concluded: {}", run.program);
        }
        // A record written when the run was stopped: what it holds is all.
        (false, stopped) => {
            let why = stopped.as_deref().unwrap_or("before it finished");
            let _ = writeln!(s, "#\n# Collective test stopped: {} (the record is incomplete): {why}", run.program);
        }
    }
    if let Some(m) = &run.memory {
        let parts = [
            ("Initialization", m.initialization_bytes),
            ("User-Allocated", m.user_allocated_bytes),
            ("Collective", m.collective_bytes),
        ];
        let each: Vec<String> = parts.iter().map(|(name, b)| format!("{name} {} ", memory(*b))).collect();
        let total = parts.iter().map(|p| p.1).sum::<i64>();
        let _ = writeln!(s, "# {:<20} : {}| Total  {}", "GPU memory usage", each.join("| "), memory(total));
    }
    s.push_str("#\n\n");
    s
}

/// nccl-tests' getMemString: binary units, two decimals below 10, one
/// below 100, none above.
fn memory(bytes: i64) -> String {
    let mut amount = bytes as f64;
    let mut unit = " B";
    for (scale, name) in [(1u64 << 30, " GB"), (1 << 20, " MB"), (1 << 10, " KB")] {
        if amount.abs() >= scale as f64 {
            amount /= scale as f64;
            unit = name;
            break;
        }
    }
    let precision = if amount.abs() < 10.0 {
        2
    } else if amount.abs() < 100.0 {
        1
    } else {
        0
    };
    format!("{amount:.precision$}{unit}")
}

impl Rows for CollectiveRun {
    const KIND: &'static str = crate::record::collective::KIND;

    /// One row per size and placement.
    fn rows(&self) -> Vec<Vec<rows::Cell>> {
        use rows::Cell as C;
        let rows = self.results.iter().flat_map(|r| {
            [("out-of-place", &r.out_of_place), ("in-place", &r.in_place)].map(|(placement, c)| {
                let it = &c.iterations;
                vec![
                    C::key("collective", self.collective.as_str()),
                    C::key("transport", self.transport.name()),
                    C::key("nranks", self.config.nranks),
                    C::key("cycle", r.cycle),
                    C::key("size", r.size),
                    C::key("count", r.count),
                    C::key("type", r.dtype.name()),
                    C::key("redop", self.op_label(r)),
                    C::key("root", r.root),
                    C::key("placement", placement),
                    C::figure("time_us", c.time_us),
                    C::figure("algbw_gbps", c.algbw_gbps),
                    C::figure("busbw_gbps", c.busbw_gbps),
                    C::figure("wrong", c.wrong),
                    C::figure("min_us", it.min),
                    C::figure("p50_us", it.median),
                    C::figure("p99_us", it.p99),
                    C::figure("max_us", it.max),
                ]
            })
        });
        rows.collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::{DataType, RedOp};
    use crate::record::collective::{Average, Config, Registration, TransportKind};
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
        Cell { time_us, algbw_gbps, busbw_gbps, wrong, iterations, cpu_time_us: None, per_iter: None }
    }

    fn row(size: u64, count: u64, dtype: DataType, redop: Option<RedOp>, root: i64, a: Cell, b: Cell) -> SizeRecord {
        SizeRecord {
            cycle: 0,
            size,
            count,
            dtype,
            redop,
            root,
            out_of_place: a,
            in_place: b,
            timestamp: None,
            groups: Vec::new(),
        }
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
            no_op_label: "none".into(),
            transport: TransportKind::Nccl,
            config: Config {
                nranks: 2,
                nthreads: 1,
                ngpus: 2,
                minbytes: 16 << 20,
                maxbytes: 1 << 30,
                step: Growth::Factor(2),
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
                blocking: 0,
                report_cputime: false,
                report_timestamps: false,
                unalign: 0,
                per_iter_timing: false,
                per_iter_skip: 0,
                memory_report: false,
                register: Registration::None,
                cta_policy: None,
            },
            library: Some(LibraryInfo {
                name: "NCCL".into(),
                version_code: 22803,
                version: "2.28.3".into(),
                path: None,
            }),
            nccl_env: Vec::new(),
            devices: vec![device(0, "0000:00:06"), device(1, "0000:00:07")],
            split: None,
            timing: String::new(),
            max_bytes_reduced_to: Some(512 << 20),
            left_out: Vec::new(),
            buffers: None,
            memory: None,
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

    /// nccl-tests' getMemString.
    #[test]
    fn memory_reads_as_nccl_tests_prints_it() {
        assert_eq!(super::memory(0), "0.00 B");
        assert_eq!(super::memory(1536), "1.50 KB");
        assert_eq!(super::memory(42 << 20), "42.0 MB");
        assert_eq!(super::memory(3 << 30), "3.00 GB");
        assert_eq!(super::memory(700 << 30), "700 GB");
        assert_eq!(super::memory(-(5 << 20)), "-5.00 MB");
    }
}
