//! Renderings of a copy run: a size-sweep table per test, nvbandwidth-style
//! matrices at the largest size, gdrcopy copylat-style latency tables, the
//! test list; and its rows, a row per figure. On a terminal the tables,
//! matrices and comment lines fit its width; pipes and files get them whole.

use super::Table;
use super::rows::{Cell, Rows};
use crate::numa::Mode;
use crate::record::copy::{CopyRun, Endpoint, Row, Status, TestInfo, TestRecord};
use std::fmt::Write;
use tabled::settings::Alignment;
use tabled::settings::object::Columns;

impl Table for CopyRun {
    fn head(&self) -> String {
        fitted(&header(self))
    }
    fn part(&self, t: &TestRecord) -> String {
        fitted(&section(t))
    }
    fn tail(&self) -> String {
        fitted(&footer(self))
    }
}

/// `text` with its lines fitted to the terminal.
fn fitted(text: &str) -> String {
    super::fit::lines(text, crate::ui::terminal_width())
}

/// A psql-style table, numbers right-aligned; column `text` (if any) holds
/// words and is left-aligned. Fitted to the terminal.
fn table(header: Vec<String>, rows: Vec<Vec<String>>, text: Option<usize>) -> String {
    let mut t = super::table(header, rows);
    t.with(Alignment::right());
    if let Some(c) = text {
        t.modify(Columns::one(c), Alignment::left());
    }
    super::fit::table(t, crate::ui::terminal_width()).to_string()
}

/// `qbench copy --list`; `width` (stdout's terminal) wraps the descriptions.
pub fn list(tests: &[TestInfo], families: &[&str], width: Option<usize>) -> String {
    let mut s = String::from("qbench copy tests (--test NAME,... | FAMILY | all):\n");
    for f in families {
        let _ = writeln!(s, "\n{f}");
        for t in tests.iter().filter(|t| t.family == *f) {
            let _ = writeln!(s, "{}", super::fit::hanging(&format!("  {:<22} ", t.name), &t.description, width));
        }
    }
    s
}

/// Everything above the first test.
fn header(run: &CopyRun) -> String {
    let c = &run.config;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# qbench copy version {}: {} GPU{}, sizes {}..{} (x{}), {} copies per sample after {} warm-up copies, median of {} samples",
        run.header.qbench_version,
        c.ngpus,
        if c.ngpus == 1 { "" } else { "s" },
        c.minbytes,
        c.maxbytes,
        c.stepfactor,
        c.iters,
        c.warmup_iters,
        c.samples
    );
    let _ = writeln!(s, "# latency tables: 1 B..16 MiB in powers of two, {} copies each", c.lat_iters);
    for d in &run.devices {
        let _ = writeln!(s, "#  GPU {:>2} [{}] {}, {} MiB", d.index, d.bus_id, d.name, d.total_mem >> 20);
    }
    for d in &run.definitions {
        let _ = writeln!(s, "# {}: {}", d.name, d.text);
    }
    match c.numa {
        Some(Mode::Auto) => s.push_str(
            "# NUMA (--numa auto): each host thread and host buffer bound to its GPU's node, as nvbandwidth\n",
        ),
        Some(Mode::Off) => {
            s.push_str("# NUMA (--numa off): nothing bound, host threads and memory where the process runs\n")
        }
        Some(Mode::Node(n)) => {
            let _ = writeln!(s, "# NUMA (--numa {n}): each host thread and host buffer bound to node {n}");
        }
        None => {}
    }
    if let Some(w) = c.corrupt_word {
        let _ = writeln!(s, "# QBENCH_CORRUPT: word {w} of every destination is flipped before its check");
    }
    s
}

fn gbps(v: f64) -> String {
    format!("{v:.2}")
}

/// One test: its sweep table, matrices and latency tables, or why it did not run.
fn section(t: &TestRecord) -> String {
    let mut s = format!("\n## {}: {}\n", t.name, t.description);
    if t.status == Status::Unavailable {
        let _ = writeln!(s, "#  unavailable: {}", t.reason.as_deref().unwrap_or("unknown"));
        if let Some(fix) = &t.fix {
            s.pop();
            let _ = writeln!(s, " \u{2014} {fix}");
        }
        for k in &t.skipped {
            let _ = writeln!(s, "#  {}: {}", k.placement, k.reason);
        }
        return s;
    }
    let _ = writeln!(s, "#  figure: {}\n#  timing: {}", t.figure, t.timing);
    if !t.numa.is_empty() {
        let sides: Vec<String> =
            t.numa.iter().map(|h| super::placement(&format!("GPU {}", h.gpu), &h.placement)).collect();
        let _ = writeln!(s, "#  numa: {}", sides.join("; "));
    }
    if !t.rows.is_empty() {
        s.push_str(&sweep_table(&t.rows));
        s.push_str("\n\n");
        s.push_str(&matrices(t));
    }
    for series in &t.latency {
        let _ = writeln!(s, "#  {} ({})", series.label, series.placement);
        let rows = series
            .rows
            .iter()
            .map(|r| {
                vec![
                    r.size.to_string(),
                    format!("{:.2}", r.host.min),
                    format!("{:.2}", r.host.median),
                    format!("{:.2}", r.host.p99),
                    r.device.map_or("-".into(), |d| format!("{:.2}", d.median)),
                    r.wrong_words.to_string(),
                ]
            })
            .collect();
        let head = ["size (B)", "min (us)", "median (us)", "p99 (us)", "device median (us)", "wrong"];
        s.push_str(&table(head.map(String::from).to_vec(), rows, None));
        s.push('\n');
    }
    for k in &t.skipped {
        let _ = writeln!(s, "#  not timed, {}: {}", k.placement, k.reason);
    }
    if !t.sizes_left_out.is_empty() {
        let left: Vec<String> = t.sizes_left_out.iter().map(u64::to_string).collect();
        let _ = writeln!(s, "#  sizes left out (memory or the test's limit): {}", left.join(", "));
    }
    let _ = writeln!(s, "#  wrong words: {}", t.wrong_words);
    s
}

/// Rows by size and placement; a column per direction, and the total when a
/// row has several flows.
fn sweep_table(rows: &[Row]) -> String {
    let mut dirs: Vec<&str> = Vec::new();
    for r in rows {
        for d in &r.directions {
            if !dirs.contains(&d.direction.as_str()) {
                dirs.push(&d.direction);
            }
        }
    }
    let total = rows.iter().any(|r| r.flows.len() > 1);
    let mut head = vec!["size (B)".to_string(), "placement".to_string()];
    head.extend(dirs.iter().map(|d| format!("{d} GB/s")));
    if total {
        head.push("total GB/s".into());
    }
    head.extend(["time/copy (us)".to_string(), "wrong".to_string()]);
    let body = rows
        .iter()
        .map(|r| {
            let mut v = vec![r.size.to_string(), r.placement.clone()];
            for d in &dirs {
                v.push(r.directions.iter().find(|x| x.direction == *d).map_or("-".into(), |x| gbps(x.gbps.median)));
            }
            if total {
                v.push(gbps(r.total_gbps.median));
            }
            v.push(format!("{:.2}", r.time_us.median));
            v.push(r.wrong_words.to_string());
            v
        })
        .collect();
    table(head, body, Some(1))
}

/// Which matrix a flow's value goes into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Orientation {
    HostToGpu,
    GpuToHost,
    GpuToGpu,
    Local,
}

impl Orientation {
    fn of(src: Endpoint, dst: Endpoint) -> Option<Orientation> {
        match (src, dst) {
            (Endpoint::Host, Endpoint::Gpu(_)) => Some(Orientation::HostToGpu),
            (Endpoint::Gpu(_), Endpoint::Host) => Some(Orientation::GpuToHost),
            (Endpoint::Gpu(a), Endpoint::Gpu(b)) if a == b => Some(Orientation::Local),
            (Endpoint::Gpu(_), Endpoint::Gpu(_)) => Some(Orientation::GpuToGpu),
            (Endpoint::Host, Endpoint::Host) => None,
        }
    }

    pub fn title(self) -> &'static str {
        match self {
            Orientation::HostToGpu => "CPU(row) -> GPU(column)",
            Orientation::GpuToHost => "CPU(row) <- GPU(column)",
            Orientation::GpuToGpu => "GPU(row) -> GPU(column)",
            Orientation::Local => "GPU(column) local copy, read + write,",
        }
    }
}

/// One of nvbandwidth's matrices of a test: the flows of one orientation
/// at the largest size measured, GB/s, None where nothing was measured.
/// GPU-to-GPU matrices have a row per GPU, the others one row.
#[derive(Debug, Clone, PartialEq)]
pub struct Matrix {
    pub orientation: Orientation,
    /// "memcpy CE", "memcpy SM" or "CPU copy".
    pub engine: &'static str,
    pub size: u64,
    pub values: Vec<Vec<Option<f64>>>,
}

/// The matrices of a test, in nvbandwidth's order.
pub fn matrices_of(t: &TestRecord) -> Vec<Matrix> {
    let Some(size) = t.rows.iter().map(|r| r.size).max() else { return Vec::new() };
    let at: Vec<&Row> = t.rows.iter().filter(|r| r.size == size).collect();
    let ngpu = at
        .iter()
        .flat_map(|r| &r.flows)
        .flat_map(|f| [f.src, f.dst])
        .filter_map(|e| match e {
            Endpoint::Gpu(g) => Some(g + 1),
            Endpoint::Host => None,
        })
        .max()
        .unwrap_or(0);
    let mut out = Vec::new();
    for o in [Orientation::HostToGpu, Orientation::GpuToHost, Orientation::GpuToGpu, Orientation::Local] {
        let flows: Vec<_> =
            at.iter().flat_map(|r| &r.flows).filter(|f| Orientation::of(f.src, f.dst) == Some(o)).collect();
        let Some(first) = flows.first() else { continue };
        let rows = if o == Orientation::GpuToGpu { ngpu } else { 1 };
        let mut m = vec![vec![None::<f64>; ngpu]; rows];
        for f in &flows {
            let (r, c) = match (o, f.src, f.dst) {
                (Orientation::GpuToGpu, Endpoint::Gpu(a), Endpoint::Gpu(b)) => (a, b),
                (_, Endpoint::Gpu(g), _) | (_, _, Endpoint::Gpu(g)) => (0, g),
                _ => continue,
            };
            m[r][c] = Some(f.gbps.median);
        }
        let engine = match first.engine.as_str() {
            "ce" => "memcpy CE",
            "sm" => "memcpy SM",
            _ => "CPU copy",
        };
        out.push(Matrix { orientation: o, engine, size, values: m });
    }
    out
}

/// nvbandwidth's matrices at the largest size measured: one per
/// orientation of the flows, N/A where nothing was measured.
fn matrices(t: &TestRecord) -> String {
    let mut s = String::new();
    for m in matrices_of(t) {
        let _ = writeln!(s, "{} {} bandwidth (GB/s), {} B", m.engine, m.orientation.title(), m.size);
        s.push_str(&matrix_text(&m.values));
        let sum: f64 = m.values.iter().flatten().flatten().sum();
        let _ = writeln!(s, "SUM {} {sum:.2}\n", t.name);
    }
    s
}

/// nvbandwidth's layout: column numbers in fields of 10, each row its
/// number then its values in fields of 10 (narrower, down to 9, where the
/// terminal is).
fn matrix_text(m: &[Vec<Option<f64>>]) -> String {
    let cols = m.first().map_or(0, Vec::len);
    let f = match crate::ui::terminal_width() {
        Some(w) if 1 + 10 * cols > w => (w.saturating_sub(1) / cols.max(1)).clamp(9, 10),
        _ => 10,
    };
    let mut s = String::from(" ");
    for c in 0..cols {
        let _ = write!(s, "{c:>f$}");
    }
    s.push('\n');
    for (r, row) in m.iter().enumerate() {
        let _ = write!(s, "{r}");
        for v in row {
            match v {
                Some(x) => {
                    let _ = write!(s, "{x:>f$.2}");
                }
                None => {
                    let _ = write!(s, "{:>f$}", "N/A");
                }
            }
        }
        s.push('\n');
    }
    s
}

/// Everything after the last test.
fn footer(run: &CopyRun) -> String {
    let mut s = String::from("\n");
    let unavailable: Vec<&str> =
        run.tests.iter().filter(|t| t.status == Status::Unavailable).map(|t| t.name.as_str()).collect();
    if !unavailable.is_empty() {
        let _ = writeln!(s, "# Unavailable here: {}", unavailable.join(", "));
    }
    if let Some(e) = &run.error {
        let _ = writeln!(s, "# Stopped by an error in {e}");
    }
    let verdict = if run.wrong_words == 0 { "OK" } else { "FAILED" };
    let _ = writeln!(s, "# Wrong words : {} {verdict}", run.wrong_words);
    s
}

/// A row of test `t`: `quantity` (a direction, the total, a clock) at
/// `size`, its median, min, max (and p99) in `unit`.
struct Figure<'a> {
    t: &'a TestRecord,
    placement: &'a str,
    size: u64,
    quantity: String,
    unit: &'a str,
    stat: &'a crate::stats::Summary,
    p99: Option<f64>,
    wrong_words: u64,
}

impl Figure<'_> {
    fn cells(self) -> Vec<Cell> {
        vec![
            Cell::key("test", self.t.name.as_str()),
            Cell::key("family", self.t.family.as_str()),
            Cell::key("placement", self.placement),
            Cell::key("size", self.size),
            Cell::key("quantity", self.quantity),
            Cell::key("unit", self.unit),
            Cell::figure("median", self.stat.median),
            Cell::figure("min", self.stat.min),
            Cell::figure("max", self.stat.max),
            Cell::figure("p99", self.p99),
            Cell::figure("wrong_words", self.wrong_words),
        ]
    }
}

impl Rows for CopyRun {
    const KIND: &'static str = crate::record::copy::KIND;

    /// One row per direction (and total) of each bandwidth row, and per
    /// latency row (host clock, and device events where timed).
    fn rows(&self) -> Vec<Vec<Cell>> {
        let mut rows = Vec::new();
        for t in &self.tests {
            for r in &t.rows {
                let mut figures: Vec<(String, _)> =
                    r.directions.iter().map(|d| (d.direction.clone(), &d.gbps)).collect();
                if r.flows.len() > 1 {
                    figures.push(("total".into(), &r.total_gbps));
                }
                rows.extend(figures.into_iter().map(|(quantity, stat)| {
                    let (size, wrong_words) = (r.size, r.wrong_words);
                    Figure { t, placement: &r.placement, size, quantity, unit: "GB/s", stat, p99: None, wrong_words }
                        .cells()
                }));
            }
            for series in &t.latency {
                for r in &series.rows {
                    let clocks = [
                        (series.label.clone(), Some(&r.host)),
                        (format!("{} (device)", series.label), r.device.as_ref()),
                    ];
                    rows.extend(clocks.into_iter().filter_map(|(quantity, stat)| {
                        let stat = stat?;
                        let (placement, size, wrong_words) = (&series.placement, r.size, r.wrong_words);
                        Some(
                            Figure { t, placement, size, quantity, unit: "us", stat, p99: Some(stat.p99), wrong_words }
                                .cells(),
                        )
                    }));
                }
            }
        }
        rows
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::copy::{Config, DirResult, FlowResult, LatencyRow, LatencySeries, Skipped};
    use crate::stats::Summary;

    fn stat(v: f64) -> Summary {
        Summary::of(&[v])
    }

    fn flow(src: Endpoint, dst: Endpoint, direction: &str, gbps: f64) -> FlowResult {
        FlowResult {
            src,
            dst,
            direction: direction.into(),
            issued_by: 0,
            engine: "ce".into(),
            host_memory: None,
            bytes_counted: 1 << 30,
            gbps: stat(gbps),
            own_time_us: stat(1.0),
            wrong_words: 0,
        }
    }

    fn record(name: &str, rows: Vec<Row>) -> TestRecord {
        TestRecord {
            name: name.into(),
            family: "peer".into(),
            description: "a test".into(),
            figure: "bytes / time".into(),
            timing: "events".into(),
            status: Status::Ran,
            reason: None,
            fix: None,
            sizes_left_out: Vec::new(),
            skipped: Vec::new(),
            rows,
            latency: Vec::new(),
            wrong_words: 0,
            numa: Vec::new(),
        }
    }

    fn row(size: u64, placement: &str, flows: Vec<FlowResult>) -> Row {
        let mut directions: Vec<DirResult> = Vec::new();
        for f in &flows {
            match directions.iter_mut().find(|d| d.direction == f.direction) {
                Some(d) => d.gbps.median += f.gbps.median,
                None => directions.push(DirResult { direction: f.direction.clone(), gbps: f.gbps }),
            }
        }
        let total = flows.iter().map(|f| f.gbps.median).sum();
        Row {
            size,
            placement: placement.into(),
            flows,
            directions,
            total_gbps: stat(total),
            time_us: stat(2.5),
            wrong_words: 0,
        }
    }

    #[test]
    fn peer_matrix_is_laid_out_as_nvbandwidth() {
        let (g0, g1) = (Endpoint::Gpu(0), Endpoint::Gpu(1));
        let t = record(
            "peer_ce_write",
            vec![
                row(1 << 20, "GPU 0 -> GPU 1", vec![flow(g0, g1, "d2d", 100.0)]),
                row(1 << 30, "GPU 0 -> GPU 1", vec![flow(g0, g1, "d2d", 389.12)]),
                row(1 << 30, "GPU 1 -> GPU 0", vec![flow(g1, g0, "d2d", 389.34)]),
            ],
        );
        let text = section(&t);
        let expected = [
            "memcpy CE GPU(row) -> GPU(column) bandwidth (GB/s), 1073741824 B",
            "          0         1",
            "0       N/A    389.12",
            "1    389.34       N/A",
            "SUM peer_ce_write 778.46\n",
        ]
        .join("\n");
        assert!(text.contains(&expected), "{text}");
        assert!(text.contains("d2d GB/s") && !text.contains("total GB/s"), "{text}");
    }

    #[test]
    fn both_ways_rows_show_each_direction_and_the_total() {
        let (h, g0) = (Endpoint::Host, Endpoint::Gpu(0));
        let t = record(
            "bidir_pinned",
            vec![row(1 << 30, "GPU 0", vec![flow(h, g0, "h2d", 53.0), flow(g0, h, "d2h", 52.5)])],
        );
        let text = section(&t);
        for want in
            ["h2d GB/s", "d2h GB/s", "total GB/s", "105.50", "CPU(row) -> GPU(column)", "CPU(row) <- GPU(column)"]
        {
            assert!(text.contains(want), "{want} in {text}");
        }
    }

    #[test]
    fn unavailable_tests_say_why_and_how_to_fix() {
        let mut t = record("gdrcopy_bw", Vec::new());
        t.status = Status::Unavailable;
        t.reason = Some("/dev/gdrdrv absent".into());
        t.fix = Some("load the gdrdrv module (modprobe gdrdrv, from NVIDIA/gdrcopy)".into());
        t.skipped.push(Skipped { placement: "GPU 0 -> GPU 1".into(), reason: "no peer path".into() });
        let text = section(&t);
        assert!(
            text.contains(
                "#  unavailable: /dev/gdrdrv absent \u{2014} load the gdrdrv module (modprobe gdrdrv, from NVIDIA/gdrcopy)\n"
            ),
            "{text}"
        );
        assert!(text.contains("GPU 0 -> GPU 1: no peer path"));
    }

    #[test]
    fn the_host_side_of_each_gpu_is_one_line_under_the_timing() {
        use crate::numa::{NodePages, Placement};
        use crate::record::copy::HostSide;
        let (h, g0) = (Endpoint::Host, Endpoint::Gpu(0));
        let mut t = record("h2d_pinned", vec![row(1 << 30, "GPU 0", vec![flow(h, g0, "h2d", 54.9)])]);
        let placed = |node, device_node, cpus: &str, cpu_nodes: Vec<u32>, policy: &str, notes: &[&str]| Placement {
            node,
            device_node,
            cpus: cpus.into(),
            cpu_nodes,
            memory_policy: Some(policy.into()),
            memory_pages: vec![NodePages { node: 1, pages: 4096 }],
            notes: notes.iter().map(|n| n.to_string()).collect(),
        };
        t.numa = vec![
            HostSide { gpu: 0, placement: placed(Some(1), Some(1), "32-63", vec![1], "preferred 1", &[]) },
            HostSide {
                gpu: 1,
                placement: placed(
                    None,
                    Some(-1),
                    "0-63",
                    vec![0, 1],
                    "default",
                    &[
                        "not bound: the kernel gives GPU 1 no NUMA node (…/numa_node is -1)",
                        "pages not asked: move_pages: x",
                    ],
                ),
            },
        ];
        let text = section(&t);
        let want = "#  timing: events\n#  numa: GPU 0 (node 1) bound to node 1: CPUs 32-63 (node 1), memory preferred 1, pages 4096 on node 1; GPU 1 (no node) not bound: the kernel gives GPU 1 no NUMA node (…/numa_node is -1): CPUs 0-63 (nodes 0-1), memory default, pages 4096 on node 1 [pages not asked: move_pages: x]\n";
        assert!(text.contains(want), "{text}");
    }

    fn latency_record() -> TestRecord {
        let st = |p50: f64| Summary {
            samples: 1000,
            min: p50 - 0.5,
            median: p50,
            mean: p50,
            p99: p50 + 1.0,
            p999: p50 + 2.0,
            max: p50 + 9.0,
        };
        let mut t = record("latency_h2d", Vec::new());
        t.latency.push(LatencySeries {
            label: "cuMemcpyHtoDAsync".into(),
            placement: "GPU 0".into(),
            rows: vec![
                LatencyRow { size: 1, host: st(4.25), device: Some(st(1.5)), wrong_words: 0 },
                LatencyRow { size: 16 << 20, host: st(310.0), device: None, wrong_words: 0 },
            ],
        });
        t
    }

    #[test]
    fn latency_tables_have_copylat_columns() {
        let text = section(&latency_record());
        for want in
            ["size (B)", "min (us)", "median (us)", "p99 (us)", "device median (us)", "4.25", "5.25", "16777216"]
        {
            assert!(text.contains(want), "{want} in {text}");
        }
    }

    #[test]
    fn csv_has_a_line_per_figure() {
        let (h, g0) = (Endpoint::Host, Endpoint::Gpu(0));
        let run = CopyRun {
            header: crate::record::Header::start(crate::record::copy::KIND, None),
            config: Config {
                tests: vec!["bidir_pinned".into(), "latency_h2d".into()],
                ngpus: 1,
                minbytes: 1,
                maxbytes: 1,
                stepfactor: 4,
                iters: 10,
                warmup_iters: 1,
                samples: 5,
                lat_iters: 10,
                lat_sizes: vec![1],
                seed: 1,
                corrupt_word: None,
                numa: None,
            },
            devices: Vec::new(),
            kernels: None,
            definitions: Vec::new(),
            tests: vec![
                record(
                    "bidir_pinned",
                    vec![row(1 << 30, "GPU 0", vec![flow(h, g0, "h2d", 53.0), flow(g0, h, "d2h", 52.5)])],
                ),
                latency_record(),
            ],
            wrong_words: 0,
            error: None,
        };
        let text = String::from_utf8(crate::report::export::Format::Csv.exporter().export(&run).unwrap()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "test,family,placement,size,quantity,unit,median,min,max,p99,wrong_words");
        // h2d, d2h, total; two latency rows with host and (for one) device clocks.
        assert_eq!(lines.len(), 1 + 3 + 3, "{text}");
        assert!(lines[3].starts_with("bidir_pinned,peer,GPU 0,1073741824,total,GB/s,105.5,"), "{text}");
        assert!(serde_json::to_string(&run).unwrap().contains("\"schema\":\"qbench.copy.v2\""));
    }
}
