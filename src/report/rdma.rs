//! The perftest-like text of an RDMA run, printed row by row as perftest
//! prints it: the server's wait banner, a header block per test and
//! connection with perftest's columns, one row per size plus the data
//! check qbench adds (#wrong), and the data summary; and its CSV.

use super::{Csv, Table, csv_lines};
use crate::error::Result;
use crate::rdma::plan::{Memory, Mode, Test};
use crate::record::rdma::{EndpointInfo, Link, RdmaRow, RdmaRun, Row};
use crate::units::format_size;
use serde::Serialize;
use std::fmt::Write;

/// perftest's RESULT_LINE.
pub const LINE: &str = "---------------------------------------------------------------------------------------";

impl Table for RdmaRun {
    /// The server's banner while it waits for its client.
    fn head(&self) -> String {
        if self.mode != Mode::Server {
            return String::new();
        }
        let stars = "************************************";
        format!("{stars}\n* Waiting for client to connect... *\n{stars}\n")
    }

    /// A row; the first of its link comes after the link's header block
    /// and columns (and the line that closes the link before it).
    fn part(&self, r: &RdmaRow) -> String {
        let mut s = String::new();
        let first = self.rows.iter().position(|x| x.link == r.link);
        if let (Some(i), Some(link)) = (first, self.link(r))
            && self.rows[i].row.bytes() == r.row.bytes()
        {
            if i > 0 {
                let _ = writeln!(s, "{LINE}");
            }
            let _ = writeln!(s, "{}\n{}", header(link, self.mode), columns(link.test, self.report_gbits));
        }
        let _ = writeln!(s, "{}", row(&r.row, self.report_gbits));
        s
    }

    /// The line that closes the last link, and the data summary; nothing
    /// when no size finished.
    fn tail(&self) -> String {
        if self.rows.is_empty() {
            return String::new();
        }
        format!("{LINE}\n{}\n", summary(self))
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
        Memory::Host => "host memory".to_string(),
        Memory::CudaDmabuf { gpu } => format!("GPU {gpu} memory (dma-buf)"),
        Memory::CudaPeermem { gpu } => format!("GPU {gpu} memory (nvidia_peermem)"),
    };
    format!("{} port {} on {}, {addr}, QPN {}, {memory}", e.device, e.port, e.host, qpns.join(" "))
}

/// The block above a test's rows, from one perftest line to another.
fn header(l: &Link, mode: Mode) -> String {
    let p = &l.params;
    let transport = if l.local.link_layer == "Ethernet" { "RoCE" } else { "InfiniBand" };
    let mut s = String::new();
    let _ = writeln!(s, "{LINE}");
    let _ = writeln!(s, "                    {}", title(l.test));
    let _ = writeln!(s, " Number of qps   : {:<16} Transport type : {transport}", p.qps);
    let _ = writeln!(s, " Connection type : {:<16} Run            : {}", "RC", mode.name());
    let _ = writeln!(
        s,
        " TX depth        : {:<16} Bidirectional  : {}",
        p.tx_depth,
        if p.bidirectional { "ON" } else { "OFF" }
    );
    if p.test.is_bw() {
        let _ = writeln!(s, " CQ Moderation   : {:<16} Iterations     : {}", p.cq_mod(p.max_size()), p.iters);
    } else {
        let _ = writeln!(s, " Max inline data : {:<16} Iterations     : {}", format!("{}[B]", l.inline), p.iters);
    }
    let _ = writeln!(s, " Mtu             : {:<16} Sizes          : {}", format!("{}[B]", l.path_mtu), sizes(&p.sizes));
    let _ = writeln!(s, " local  : {}", endpoint(&l.local));
    let _ = writeln!(s, " remote : {}", endpoint(&l.remote));
    s + LINE
}

fn sizes(s: &[u64]) -> String {
    match s {
        [one] => format_size(*one),
        [first, .., last] => format!("{}..{}", format_size(*first), format_size(*last)),
        [] => "none".into(),
    }
}

/// The column line of a test.
fn columns(t: Test, gbits: bool) -> String {
    if t.is_bw() {
        let unit = if gbits { "Gb/sec" } else { "MiB/sec" };
        format!(" #bytes     #iterations    BW peak[{unit}]    BW average[{unit}]   MsgRate[Mpps]   #wrong")
    } else {
        " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec]   #wrong".to_string()
    }
}

/// Bytes per second in the table's unit: perftest's MiB/s (2^20 B/s,
/// headed MiB/sec since perftest 24.07 and MB/sec before), or 10^9 bit/s
/// with --report_gbits.
pub fn bw_unit(bytes_per_s: f64, gbits: bool) -> f64 {
    if gbits { bytes_per_s * 8.0 / 1e9 } else { bytes_per_s / (1u64 << 20) as f64 }
}

fn row(r: &Row, gbits: bool) -> String {
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
    }
}

/// What was checked, and where each wrong byte was first seen.
fn summary(run: &RdmaRun) -> String {
    let mut s = format!(
        "# data: {} bytes checked against the seeded pattern, {} wrong",
        run.checked_bytes(),
        run.wrong_bytes()
    );
    for r in &run.rows {
        let (Some(at), Some(l)) = (r.row.data().first_wrong, run.link(r)) else { continue };
        let _ = write!(
            s,
            "\n# {} {} B {} -> {}: {} wrong bytes, the first at offset {at}",
            l.test.name(),
            r.row.bytes(),
            l.local.device,
            l.remote.device,
            r.row.data().wrong_bytes
        );
    }
    s
}

/// One CSV line per row; the columns of the other kind of test are empty.
#[derive(Serialize)]
struct Line<'a> {
    test: &'a str,
    local: &'a str,
    remote: &'a str,
    bytes: u64,
    iterations: u64,
    bw_peak_bytes_per_s: Option<f64>,
    bw_avg_bytes_per_s: Option<f64>,
    msg_rate_mpps: Option<f64>,
    t_min_us: Option<f64>,
    t_max_us: Option<f64>,
    t_typical_us: Option<f64>,
    t_avg_us: Option<f64>,
    t_stdev_us: Option<f64>,
    t_p99_us: Option<f64>,
    t_p99_9_us: Option<f64>,
    checked_bytes: u64,
    wrong_bytes: u64,
}

impl Csv for RdmaRun {
    fn csv(&self) -> Result<Vec<u8>> {
        csv_lines(self.rows.iter().filter_map(|r| {
            let l = self.link(r)?;
            let data = r.row.data();
            let mut line = Line {
                test: l.test.name(),
                local: &l.local.device,
                remote: &l.remote.device,
                bytes: r.row.bytes(),
                iterations: 0,
                bw_peak_bytes_per_s: None,
                bw_avg_bytes_per_s: None,
                msg_rate_mpps: None,
                t_min_us: None,
                t_max_us: None,
                t_typical_us: None,
                t_avg_us: None,
                t_stdev_us: None,
                t_p99_us: None,
                t_p99_9_us: None,
                checked_bytes: data.checked_bytes,
                wrong_bytes: data.wrong_bytes,
            };
            match r.row {
                Row::Bw(b) => {
                    line.iterations = b.iterations;
                    line.bw_peak_bytes_per_s = b.bw_peak_bytes_per_s;
                    line.bw_avg_bytes_per_s = Some(b.bw_avg_bytes_per_s);
                    line.msg_rate_mpps = Some(b.msg_rate_mpps);
                }
                Row::Lat(t) => {
                    line.iterations = t.iterations;
                    line.t_min_us = Some(t.t_min_us);
                    line.t_max_us = Some(t.t_max_us);
                    line.t_typical_us = Some(t.t_typical_us);
                    line.t_avg_us = Some(t.t_avg_us);
                    line.t_stdev_us = Some(t.t_stdev_us);
                    line.t_p99_us = Some(t.t_p99_us);
                    line.t_p99_9_us = Some(t.t_p99_9_us);
                }
            }
            Some(line)
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::rdma::tests::sample;
    use crate::record::rdma::{BwRow, DataCheck, LatRow};

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
        let text = row(&bw, false);
        assert!(text.starts_with(" 65536      5000             2.00               1.00"), "{text}");
        assert!(row(&bw, true).contains(" 0.016777 "), "{}", row(&bw, true));
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
        let text = row(&lat, false);
        let fields: Vec<&str> = text.split_whitespace().collect();
        assert_eq!(fields, ["2", "1000", "1.00", "9.00", "2.00", "2.50", "0.50", "8.00", "9.00", "0"]);
        assert_eq!(columns(Test::ReadBw, true).split_whitespace().nth(3), Some("peak[Gb/sec]"));
        // Below 0.1 Gb/s perftest prints six decimals.
        let slow = Row::Bw(BwRow { bw_peak_bytes_per_s: None, bw_avg_bytes_per_s: 1e6, ..bw_row(&bw) });
        let fields: Vec<String> = row(&slow, true).split_whitespace().map(String::from).collect();
        assert_eq!(fields, ["65536", "5000", "0.000000", "0.008000", "0.000016", "0"]);
    }

    fn bw_row(r: &Row) -> BwRow {
        match r {
            Row::Bw(b) => *b,
            _ => unreachable!(),
        }
    }

    /// Each part carries its link's block before the link's first row,
    /// so that the parts printed as they come make the whole text.
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

    #[test]
    fn csv_has_a_line_per_row() {
        let text = String::from_utf8(sample().csv().unwrap()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert!(lines[0].starts_with("test,local,remote,bytes,iterations,bw_peak_bytes_per_s,"), "{text}");
        assert!(lines[1].starts_with("write_bw,rxe0,rxe1,64,1000,,1000000.0,0.1,,"), "{text}");
        assert!(lines[2].starts_with("read_lat,rxe0,rxe1,64,1000,,,,1.0,3.0,1.5,"), "{text}");
    }
}
