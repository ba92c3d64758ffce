//! The perftest-like text of an RDMA run: a header per test and
//! connection, perftest's columns, one row per size, plus the data-check
//! column qbench adds (#wrong). Reads records only.

use super::plan::Test;
use super::record::{EndpointInfo, LinkRecord, Mode, RdmaRun, Row};
use crate::units::format_size;

/// perftest's RESULT_LINE.
pub const LINE: &str = "---------------------------------------------------------------------------------------";

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
        super::plan::Memory::Host => "host memory".to_string(),
        super::plan::Memory::CudaDmabuf { gpu } => format!("GPU {gpu} memory (dma-buf)"),
        super::plan::Memory::CudaPeermem { gpu } => format!("GPU {gpu} memory (nvidia_peermem)"),
    };
    format!("{} port {} on {}, {addr}, QPN {}, {memory}", e.device, e.port, e.host, qpns.join(" "))
}

/// The block above a test's rows.
pub fn header(l: &LinkRecord, mode: Mode) -> String {
    let p = &l.params;
    let transport = if l.local.link_layer == "Ethernet" { "RoCE" } else { "InfiniBand" };
    let mut s = String::new();
    s += &format!("{LINE}\n");
    s += &format!("                    {}\n", title(l.test));
    s += &format!(" Number of qps   : {:<16} Transport type : {transport}\n", p.qps);
    s += &format!(" Connection type : {:<16} Run            : {}\n", "RC", mode.name());
    s += &format!(
        " TX depth        : {:<16} Bidirectional  : {}\n",
        p.tx_depth,
        if p.bidirectional { "ON" } else { "OFF" }
    );
    if p.test.is_bw() {
        let cq = p.cq_mod(p.max_size());
        s += &format!(" CQ Moderation   : {:<16} Iterations     : {}\n", cq, p.iters);
    } else {
        s += &format!(" Max inline data : {:<16} Iterations     : {}\n", format!("{}[B]", l.inline), p.iters);
    }
    s += &format!(" Mtu             : {:<16} Sizes          : {}\n", format!("{}[B]", l.path_mtu), sizes(&p.sizes));
    s += &format!(" local  : {}\n", endpoint(&l.local));
    s += &format!(" remote : {}\n", endpoint(&l.remote));
    s += LINE;
    s
}

fn sizes(s: &[u64]) -> String {
    match s {
        [one] => format_size(*one),
        [first, .., last] => format!("{}..{}", format_size(*first), format_size(*last)),
        [] => "none".into(),
    }
}

/// The column line of a test.
pub fn columns(t: Test, gbits: bool) -> String {
    if t.is_bw() {
        let unit = if gbits { "Gb/sec" } else { "MiB/sec" };
        format!(" #bytes     #iterations    BW peak[{unit}]    BW average[{unit}]   MsgRate[Mpps]   #wrong")
    } else {
        " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec]   #wrong".to_string()
    }
}

/// Bytes per second in the table's unit: MiB/s, or 10^9 bit/s with --report_gbits.
pub fn bw_unit(bytes_per_s: f64, gbits: bool) -> f64 {
    if gbits { bytes_per_s * 8.0 / 1e9 } else { bytes_per_s / (1u64 << 20) as f64 }
}

pub fn row(r: &Row, gbits: bool) -> String {
    match r {
        Row::Bw(b) => format!(
            " {:<7}    {:<10}       {:<7.2}            {:<7.2}              {:<10.6}      {}",
            b.bytes,
            b.iterations,
            b.bw_peak_bytes_per_s.map_or(0.0, |p| bw_unit(p, gbits)),
            bw_unit(b.bw_avg_bytes_per_s, gbits),
            b.msg_rate_mpps,
            b.data.wrong_bytes
        ),
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

/// The closing lines of a run: what was checked, and the verdict on the data.
pub fn summary(run: &RdmaRun) -> String {
    let checked: u64 = run.links.iter().flat_map(|l| &l.rows).map(|r| r.data().checked_bytes).sum();
    let wrong = run.wrong_bytes();
    let mut s = format!("# data: {checked} bytes checked against the seeded pattern, {wrong} wrong");
    for l in &run.links {
        for r in &l.rows {
            if let Some(at) = r.data().first_wrong {
                s += &format!(
                    "\n# {} {} B {} -> {}: {} wrong bytes, the first at offset {at}",
                    l.test.name(),
                    r.bytes(),
                    l.local.device,
                    l.remote.device,
                    r.data().wrong_bytes
                );
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rdma::record::{BwRow, DataCheck, LatRow};

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
        assert!(row(&bw, true).contains("0.01 "), "{}", row(&bw, true));
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
    }
}
