//! The perftest-like text of an RDMA run, printed row by row as perftest
//! prints it: the server's wait banner, a header block per test and
//! connection with perftest's columns (perftest 6.29's headings: MiB/sec,
//! Gb/sec with --report_gbits, and its duration mode's latency columns),
//! one row per size plus the data check qbench adds (#wrong), and the data
//! summary; and its rows, one per row of the table. On a terminal narrower
//! than perftest's lines (80 columns) the same figures take narrower
//! columns and the long lines wrap; pipes and files get perftest's text.

use super::Table;
use super::rows::{Cell, Rows};
use crate::rdma::plan::{BufferMemory, Mode, Test, Timing};
use crate::record::rdma::{EndpointInfo, Link, RdmaRow, RdmaRun, Row};
use crate::units::format_size;
use std::fmt::Write;

/// perftest's RESULT_LINE.
pub const LINE: &str = "---------------------------------------------------------------------------------------";

/// The terminal's width where it is narrower than `natural`, perftest's
/// width of the text at hand; None where perftest's text fits (or is piped).
fn narrower(natural: usize) -> Option<usize> {
    crate::ui::terminal_width().filter(|&w| w < natural)
}

/// perftest's RESULT_LINE, cut to a narrower terminal.
fn line() -> &'static str {
    &LINE[..narrower(LINE.len()).unwrap_or(LINE.len())]
}

/// `lead` then `text`, wrapped under itself on a terminal narrower than the line.
fn hanging(lead: &str, text: &str) -> String {
    let natural = lead.chars().count() + text.chars().count();
    super::fit::hanging(lead, text, narrower(natural))
}

impl Table for RdmaRun {
    /// The server's banner while it waits for its client.
    fn head(&self) -> String {
        if self.mode != Mode::Server {
            return String::new();
        }
        let stars = "************************************";
        format!("{stars}\n* Waiting for client to connect... *\n{stars}\n")
    }

    /// A row (one of [`RdmaRun::rows`]); the first of its link comes after
    /// the link's header block and columns (and the line that closes the
    /// link before it).
    fn part(&self, r: &RdmaRow) -> String {
        let mut s = String::new();
        // Found by place, not by size: --run_infinitely repeats its size.
        let at = self.rows.iter().position(|x| std::ptr::eq(x, r));
        if let (Some(i), Some(link)) = (at, self.link(r))
            && !self.rows[..i].iter().any(|x| x.link == r.link)
        {
            if i > 0 {
                let _ = writeln!(s, "{}", line());
            }
            let _ = writeln!(s, "{}\n{}", header(link, self.mode), columns(link, self.report_gbits));
        }
        let narrow = self.link(r).is_some_and(|l| compact(l, self.report_gbits));
        let _ = writeln!(s, "{}", row(&r.row, self.report_gbits, narrow));
        s
    }

    /// The line that closes the last link, and the data summary; nothing
    /// when no size finished.
    fn tail(&self) -> String {
        if self.rows.is_empty() {
            return String::new();
        }
        format!("{}\n{}\n", line(), summary(self))
    }
}

fn title(t: Test) -> &'static str {
    match t {
        Test::WriteBw => "RDMA_Write BW Test",
        Test::ReadBw => "RDMA_Read BW Test",
        Test::SendBw => "Send BW Test",
        Test::WriteLat => "RDMA_Write Latency Test",
        Test::ReadLat => "RDMA_Read Latency Test",
        Test::SendLat => "Send Latency Test",
    }
}

fn endpoint(e: &EndpointInfo) -> String {
    let qpns: Vec<String> = e.qpns.iter().map(|q| format!("{q:#06x}")).collect();
    let addr = match e.gid_index {
        Some(i) => format!("GID {i} {}", e.gid),
        None => format!("LID {:#06x}", e.lid),
    };
    let memory = match e.memory {
        BufferMemory::Host => "host memory".to_string(),
        BufferMemory::CudaDmabuf { gpu } => format!("GPU {gpu} memory (dma-buf)"),
        BufferMemory::CudaPeermem { gpu } => format!("GPU {gpu} memory (nvidia_peermem)"),
    };
    // Shown where set, as perftest shows its TOS.
    let mut qos = String::new();
    if e.sl != 0 {
        let _ = write!(qos, ", SL {}", e.sl);
    }
    if e.traffic_class != 0 {
        let _ = write!(qos, ", traffic class {}", e.traffic_class);
    }
    format!("{} port {} on {}, {addr}{qos}, QPN {}, {memory}", e.device, e.port, e.host, qpns.join(" "))
}

/// How long each size ran: perftest's iterations, or a timed run's seconds.
fn how_long(p: &crate::rdma::plan::TestParams) -> (&'static str, String) {
    match p.timing {
        Timing::Iterations => ("Iterations", p.iters.to_string()),
        Timing::Duration { seconds, margin } => ("Duration", format!("{seconds} s, margins {margin} s")),
        Timing::Infinitely { seconds } => ("Duration", format!("a line every {seconds} s until interrupted")),
    }
}

/// The block above a test's rows, from one perftest line to another.
fn header(l: &Link, mode: Mode) -> String {
    let p = &l.params;
    let transport = if l.local.link_layer == "Ethernet" { "RoCE" } else { "InfiniBand" };
    let mut s = String::new();
    let _ = writeln!(s, "{}", line());
    let _ = writeln!(s, "                    {}", title(l.test));
    let _ = writeln!(s, " Number of qps   : {:<16} Transport type : {transport}", p.qps);
    let _ = writeln!(s, " Connection type : {:<16} Run            : {}", "RC", mode.name());
    let _ = writeln!(
        s,
        " TX depth        : {:<16} Bidirectional  : {}",
        p.tx_depth,
        if p.bidirectional { "ON" } else { "OFF" }
    );
    let (what, how_long) = how_long(p);
    if p.test.is_bw() {
        let _ = writeln!(s, " CQ Moderation   : {:<16} {what:<14} : {how_long}", p.cq_mod(p.max_size()));
    } else {
        let _ = writeln!(s, " Max inline data : {:<16} {what:<14} : {how_long}", format!("{}[B]", l.inline));
    }
    let _ = writeln!(s, " Mtu             : {:<16} Sizes          : {}", format!("{}[B]", l.path_mtu), sizes(&p.sizes));
    let _ = writeln!(s, "{}", hanging(" local  : ", &endpoint(&l.local)));
    let _ = writeln!(s, "{}", hanging(" remote : ", &endpoint(&l.remote)));
    if let Some(p) = &l.numa {
        let _ = writeln!(s, "{}", hanging(" numa   : ", &super::placement(&l.local.device, p)));
    }
    s + line()
}

fn sizes(s: &[u64]) -> String {
    match s {
        [one] => format_size(*one),
        [first, .., last] => format!("{}..{}", format_size(*first), format_size(*last)),
        [] => "none".into(),
    }
}

/// The column line of a test: perftest 6.29's RESULT_FMT, RESULT_FMT_G
/// (--report_gbits), RESULT_FMT_LAT and RESULT_FMT_LAT_DUR (-D), and
/// #wrong; on a terminal narrower than that, the narrow columns' headings.
fn columns(l: &Link, gbits: bool) -> String {
    if compact(l, gbits) {
        return if l.test.is_bw() {
            let unit = if gbits { "Gb/sec" } else { "MiB/sec" };
            format!(
                " {:<10} {:>8} {:>16} {:>19} {:>13} {:>7}",
                "#bytes",
                "#iters",
                format!("BW peak[{unit}]"),
                format!("BW average[{unit}]"),
                "MsgRate[Mpps]",
                "#wrong"
            )
        } else {
            " times in usec (t_typ: t_typical; p99, p99.9: the 99% and 99.9% percentiles)\n #bytes  #iters   t_min   t_max   t_typ   t_avg t_stdev     p99   p99.9 #wrong".into()
        };
    }
    perftest_columns(l, gbits)
}

/// Whether a test's rows take the narrow columns: its perftest heading is
/// wider than the terminal.
fn compact(l: &Link, gbits: bool) -> bool {
    narrower(perftest_columns(l, gbits).len()).is_some()
}

/// perftest's column line of a test, and #wrong.
fn perftest_columns(l: &Link, gbits: bool) -> String {
    let perftest = if l.test.is_bw() {
        let unit = if gbits { "Gb/sec" } else { "MiB/sec" };
        format!(" #bytes     #iterations    BW peak[{unit}]    BW average[{unit}]   MsgRate[Mpps]")
    } else if l.params.timing.is_timed() {
        " #bytes        #iterations       t_avg[usec]    tps average".to_string()
    } else {
        " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec]".to_string()
    };
    perftest + "   #wrong"
}

/// Bytes per second in the table's unit: perftest's MiB/s (2^20 B/s,
/// headed MiB/sec since perftest 24.07 and MB/sec before), or 10^9 bit/s
/// with --report_gbits.
pub fn bw_unit(bytes_per_s: f64, gbits: bool) -> f64 {
    if gbits { bytes_per_s * 8.0 / 1e9 } else { bytes_per_s / (1u64 << 20) as f64 }
}

/// A row as perftest prints it, or in the narrow columns (`narrow`).
fn row(r: &Row, gbits: bool, narrow: bool) -> String {
    match (r, narrow) {
        (Row::Bw(b), true) => {
            let (peak, avg) =
                (b.bw_peak_bytes_per_s.map_or(0.0, |p| bw_unit(p, gbits)), bw_unit(b.bw_avg_bytes_per_s, gbits));
            // perftest's six decimals below 0.1 Gb/s.
            let places = if gbits && avg < 0.1 { 6 } else { 2 };
            format!(
                " {:<10} {:>8} {peak:>16.places$} {avg:>19.places$} {:>13.6} {:>7}",
                b.bytes, b.iterations, b.msg_rate_mpps, b.data.wrong_bytes
            )
        }
        (Row::Lat(l), true) => {
            let times = [l.t_min_us, l.t_max_us, l.t_typical_us, l.t_avg_us, l.t_stdev_us, l.t_p99_us, l.t_p99_9_us];
            let times: String = times.iter().map(|&t| format!(" {}", seven(t))).collect();
            format!(" {:<7} {:>6}{times} {:>6}", l.bytes, l.iterations, l.data.wrong_bytes)
        }
        (r, _) => perftest_row(r, gbits),
    }
}

/// A time in seven characters: two decimals, fewer from 10 ms (its
/// microseconds stay whole).
fn seven(us: f64) -> String {
    let places = match us {
        t if t < 9999.995 => 2,
        t if t < 99999.95 => 1,
        _ => 0,
    };
    format!("{us:>7.places$}")
}

/// A row as perftest prints it.
fn perftest_row(r: &Row, gbits: bool) -> String {
    match r {
        Row::Bw(b) => {
            let (peak, avg) =
                (b.bw_peak_bytes_per_s.map_or(0.0, |p| bw_unit(p, gbits)), bw_unit(b.bw_avg_bytes_per_s, gbits));
            if gbits && avg < 0.1 {
                // perftest's REPORT_FMT_EXT: six decimals below 0.1 Gb/s.
                format!(
                    " {:<7}    {}           {:<7.6}            {:<7.6}            {:<7.6}      {}",
                    b.bytes, b.iterations, peak, avg, b.msg_rate_mpps, b.data.wrong_bytes
                )
            } else {
                format!(
                    " {:<7}    {:<10}       {:<7.2}            {:<7.2}              {:<10.6}      {}",
                    b.bytes, b.iterations, peak, avg, b.msg_rate_mpps, b.data.wrong_bytes
                )
            }
        }
        Row::Lat(l) => format!(
            " {:<7} {:<10}  {:<7.2}        {:<7.2}      {:<7.2}            {:<7.2}        {:<7.2}         {:<7.2}                {:<7.2}                  {}",
            l.bytes,
            l.iterations,
            l.t_min_us,
            l.t_max_us,
            l.t_typical_us,
            l.t_avg_us,
            l.t_stdev_us,
            l.t_p99_us,
            l.t_p99_9_us,
            l.data.wrong_bytes
        ),
        // perftest's REPORT_FMT_LAT_DUR.
        Row::LatDuration(l) => format!(
            " {:<7}       {}            {:<7.2}        {:<7.2}        {}",
            l.bytes, l.iterations, l.t_avg_us, l.tps, l.data.wrong_bytes
        ),
    }
}

/// What was checked, and where each wrong byte was first seen.
fn summary(run: &RdmaRun) -> String {
    let mut s = hanging(
        "# ",
        &format!("data: {} bytes checked against the seeded pattern, {} wrong", run.checked_bytes(), run.wrong_bytes()),
    );
    for r in &run.rows {
        let (Some(at), Some(l)) = (r.row.data().first_wrong, run.link(r)) else { continue };
        let wrong = format!(
            "{} {} B {} -> {}: {} wrong bytes, the first at offset {at}",
            l.test.name(),
            r.row.bytes(),
            l.local.device,
            l.remote.device,
            r.row.data().wrong_bytes
        );
        let _ = write!(s, "\n{}", hanging("# ", &wrong));
    }
    s
}

/// A row's iterations and figures, in the rows' order: a bandwidth
/// test's, a latency test's, a latency test's run for a duration; the other
/// kinds' absent.
fn figures(row: &Row) -> (u64, [(&'static str, Option<f64>); 11]) {
    let (mut bw, mut lat, mut tps) = ([None; 3], [None; 7], None);
    let iterations = match row {
        Row::Bw(b) => {
            bw = [b.bw_peak_bytes_per_s, Some(b.bw_avg_bytes_per_s), Some(b.msg_rate_mpps)];
            b.iterations
        }
        Row::Lat(t) => {
            lat =
                [t.t_min_us, t.t_max_us, t.t_typical_us, t.t_avg_us, t.t_stdev_us, t.t_p99_us, t.t_p99_9_us].map(Some);
            t.iterations
        }
        Row::LatDuration(t) => {
            (lat[3], tps) = (Some(t.t_avg_us), Some(t.tps));
            t.iterations
        }
    };
    let named = [
        ("bw_peak_bytes_per_s", bw[0]),
        ("bw_avg_bytes_per_s", bw[1]),
        ("msg_rate_mpps", bw[2]),
        ("t_min_us", lat[0]),
        ("t_max_us", lat[1]),
        ("t_typical_us", lat[2]),
        ("t_avg_us", lat[3]),
        ("t_stdev_us", lat[4]),
        ("t_p99_us", lat[5]),
        ("t_p99_9_us", lat[6]),
        // Iterations per second of a latency test run for a duration.
        ("tps", tps),
    ];
    (iterations, named)
}

impl Rows for RdmaRun {
    const KIND: &'static str = crate::record::rdma::KIND;

    /// One row per row of the table; the columns of the other kind of test
    /// are empty.
    fn rows(&self) -> Vec<Vec<Cell>> {
        let rows = self.rows.iter().filter_map(|r| {
            let l = self.link(r)?;
            let (data, (iterations, figures)) = (r.row.data(), figures(&r.row));
            let mut row = vec![
                Cell::key("test", l.test.name()),
                Cell::key("local", l.local.device.as_str()),
                Cell::key("remote", l.remote.device.as_str()),
                Cell::key("bytes", r.row.bytes()),
                Cell::figure("iterations", iterations),
            ];
            row.extend(figures.map(|(name, x)| Cell::figure(name, x)));
            row.extend([
                Cell::figure("checked_bytes", data.checked_bytes),
                Cell::figure("wrong_bytes", data.wrong_bytes),
            ]);
            Some(row)
        });
        rows.collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::rdma::tests::sample;
    use crate::record::rdma::{BwRow, DataCheck, LatDurationRow, LatRow};

    #[test]
    fn rows_in_perftest_units() {
        let data = DataCheck { checked_bytes: 65536, wrong_bytes: 0, first_wrong: None };
        let bw = Row::Bw(BwRow {
            bytes: 65536,
            iterations: 5000,
            bw_peak_bytes_per_s: Some(2.0 * 1048576.0),
            bw_avg_bytes_per_s: 1048576.0,
            msg_rate_mpps: 0.000016,
            data,
        });
        let text = row(&bw, false, false);
        assert!(text.starts_with(" 65536      5000             2.00               1.00"), "{text}");
        assert!(row(&bw, true, false).contains(" 0.016777 "), "{}", row(&bw, true, false));
        let lat = Row::Lat(LatRow {
            bytes: 2,
            iterations: 1000,
            t_min_us: 1.0,
            t_max_us: 9.0,
            t_typical_us: 2.0,
            t_avg_us: 2.5,
            t_stdev_us: 0.5,
            t_p99_us: 8.0,
            t_p99_9_us: 9.0,
            data,
        });
        let text = row(&lat, false, false);
        let fields: Vec<&str> = text.split_whitespace().collect();
        assert_eq!(fields, ["2", "1000", "1.00", "9.00", "2.00", "2.50", "0.50", "8.00", "9.00", "0"]);
        let dur = Row::LatDuration(LatDurationRow { bytes: 2, iterations: 4000, t_avg_us: 250.0, tps: 2000.0, data });
        let fields: Vec<String> = row(&dur, false, false).split_whitespace().map(String::from).collect();
        assert_eq!(fields, ["2", "4000", "250.00", "2000.00", "0"]);
        // Below 0.1 Gb/s perftest prints six decimals.
        let slow = Row::Bw(BwRow { bw_peak_bytes_per_s: None, bw_avg_bytes_per_s: 1e6, ..bw_row(&bw) });
        let fields: Vec<String> = row(&slow, true, false).split_whitespace().map(String::from).collect();
        assert_eq!(fields, ["65536", "5000", "0.000000", "0.008000", "0.000016", "0"]);
    }

    fn bw_row(r: &Row) -> BwRow {
        match r {
            Row::Bw(b) => *b,
            _ => unreachable!(),
        }
    }

    /// perftest 6.29's headings (perftest_parameters.h), byte for byte, then #wrong.
    #[test]
    fn headings_are_perftests() {
        let run = sample();
        let (mut bw, mut lat) = (run.links[0].clone(), run.links[1].clone());
        assert_eq!(
            columns(&bw, false),
            " #bytes     #iterations    BW peak[MiB/sec]    BW average[MiB/sec]   MsgRate[Mpps]   #wrong"
        );
        assert_eq!(
            columns(&bw, true),
            " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]   #wrong"
        );
        assert!(columns(&lat, false).starts_with(" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]"));
        lat.params.timing = Timing::Duration { seconds: 2, margin: 0 };
        assert_eq!(columns(&lat, false), " #bytes        #iterations       t_avg[usec]    tps average   #wrong");
        bw.params.timing = Timing::Infinitely { seconds: 5 };
        assert!(columns(&bw, false).contains("BW average[MiB/sec]"));
        assert!(header(&bw, Mode::Client).contains("Duration       : a line every 5 s until interrupted"));
        assert!(header(&lat, Mode::Client).contains("Duration       : 2 s, margins 0 s"));
        assert!(header(&run.links[0], Mode::Client).contains("Iterations     : 1000"));
        bw.local.sl = 3;
        bw.local.traffic_class = 32;
        assert!(
            header(&bw, Mode::Client)
                .contains("GID 0 fe80:0000:0000:0000:0000:0000:0000:0001, SL 3, traffic class 32, QPN")
        );
    }

    /// Each part carries its link's block before the link's first row,
    /// so that the parts printed as they come make the whole text.
    /// A link with a placement says under its endpoints where this side ran.
    #[test]
    fn the_sides_numa_placement_is_a_line_under_the_endpoints() {
        let mut run = sample();
        run.links[0].numa = Some(crate::numa::Placement {
            node: Some(0),
            device_node: Some(0),
            cpus: "0-15".into(),
            cpu_nodes: vec![0],
            memory_policy: Some("preferred 0".into()),
            memory_pages: vec![crate::numa::NodePages { node: 0, pages: 32 }],
            notes: Vec::new(),
        });
        let text = crate::report::render(&run);
        let want =
            "\n numa   : rxe0 (node 0) bound to node 0: CPUs 0-15 (node 0), memory preferred 0, pages 32 on node 0\n";
        assert!(text.contains(&format!(" remote : {}{want}", endpoint(&run.links[0].remote))), "{text}");
        assert_eq!(text.matches(" numa   : ").count(), 1, "{text}");
    }

    #[test]
    fn blocks_open_before_each_links_first_row_and_close_after_its_last() {
        let run = sample();
        let text = crate::report::render(&run);
        let lines: Vec<&str> = text.lines().collect();
        let at = |s: &str| lines.iter().position(|l| l.contains(s)).unwrap_or_else(|| panic!("{s}: {text}"));
        assert_eq!(lines[0], LINE);
        assert!(at("RDMA_Write BW Test") < at("BW peak[MiB/sec]"));
        assert!(at("BW peak[MiB/sec]") < at("RDMA_Read Latency Test"));
        assert_eq!(lines.iter().filter(|l| **l == LINE).count(), 6, "{text}");
        assert_eq!(lines[at("RDMA_Read Latency Test") - 2], LINE);
        assert!(text.ends_with(&format!(
            "{LINE}\n# data: 128 bytes checked against the seeded pattern, 1 wrong\n# write_bw 64 B rxe0 -> rxe1: 1 wrong bytes, the first at offset 3\n"
        )));
        assert_eq!(run.head(), "");
        let server = RdmaRun { mode: Mode::Server, ..run.clone() };
        assert!(crate::report::render(&server).starts_with("*****"));
        let none = RdmaRun { rows: Vec::new(), ..run };
        assert_eq!(crate::report::render(&none), "");
    }

    /// --run_infinitely's rows repeat one size under one header.
    #[test]
    fn a_link_of_repeated_rows_has_one_header() {
        let mut run = sample();
        run.rows.insert(1, run.rows[0]);
        let text = crate::report::render(&run);
        assert_eq!(text.matches("RDMA_Write BW Test").count(), 1, "{text}");
        assert_eq!(text.matches("BW peak[MiB/sec]").count(), 1, "{text}");
        assert_eq!(text.lines().filter(|l| l.starts_with(" 64 ")).count(), 3, "{text}");
    }

    #[test]
    fn csv_has_a_line_per_row() {
        let text = String::from_utf8(crate::report::export::Format::Csv.exporter().export(&sample()).unwrap()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert!(lines[0].starts_with("test,local,remote,bytes,iterations,bw_peak_bytes_per_s,"), "{text}");
        assert!(lines[1].starts_with("write_bw,rxe0,rxe1,64,1000,,1000000.0,0.1,,"), "{text}");
        assert!(lines[2].starts_with("read_lat,rxe0,rxe1,64,1000,,,,1.0,3.0,1.5,"), "{text}");
    }
}
