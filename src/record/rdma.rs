//! The record of a `qbench rdma` run (schema `qbench.rdma`): how the two
//! sides met, what they agreed on, each test over each connection (a
//! link: its parameters and endpoints), and one row per size in
//! perftest's columns. The rows are flat, each naming its link, so that
//! the table prints every row as its size finishes, as perftest does.

use super::{Header, Streamed};
use crate::error::{Error, Result};
use crate::numa::Placement;
use crate::rdma::plan::{Agreement, BufferMemory, Mode, Test, TestParams};
use serde::{Deserialize, Serialize};

pub const KIND: &str = "rdma";

/// One side of a connection, as the handshake described it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EndpointInfo {
    pub host: String,
    pub device: String,
    pub port: u8,
    /// The GID index used for the address (RoCE); None routes by LID (InfiniBand).
    pub gid_index: Option<u32>,
    /// The GID as sysfs writes it (eight groups of four hex digits).
    pub gid: String,
    pub lid: u16,
    /// `InfiniBand` or `Ethernet` (RoCE).
    pub link_layer: String,
    /// The port's active MTU in bytes.
    pub mtu: u32,
    /// The service level (`-S`) and GRH traffic class (`--tclass`) of its
    /// packets (records before them: 0, which they used).
    #[serde(default)]
    pub sl: u8,
    #[serde(default)]
    pub traffic_class: u8,
    pub qpns: Vec<u32>,
    /// Where its buffers live.
    pub memory: BufferMemory,
}

/// Bytes compared with their seeded pattern after a size ran.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DataCheck {
    pub checked_bytes: u64,
    pub wrong_bytes: u64,
    /// Offset of the first wrong byte in the destination buffer that held it.
    pub first_wrong: Option<u64>,
}

impl DataCheck {
    /// Both sides' checks together.
    pub fn merge(self, other: DataCheck) -> DataCheck {
        DataCheck {
            checked_bytes: self.checked_bytes + other.checked_bytes,
            wrong_bytes: self.wrong_bytes + other.wrong_bytes,
            first_wrong: self.first_wrong.or(other.first_wrong),
        }
    }
}

/// One row of a bandwidth table (perftest's BW columns).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct BwRow {
    pub bytes: u64,
    /// Messages timed: iterations × queue pairs.
    pub iterations: u64,
    /// The best stretch from a post to a later completion (None where
    /// perftest skips it: above 20000 iterations).
    pub bw_peak_bytes_per_s: Option<f64>,
    /// bytes × messages ÷ (last completion − first post).
    pub bw_avg_bytes_per_s: f64,
    /// Millions of messages per second.
    pub msg_rate_mpps: f64,
    pub data: DataCheck,
}

/// One row of a latency table, in µs (half the round trip for write and
/// send, the whole one for read, as perftest).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LatRow {
    pub bytes: u64,
    pub iterations: u64,
    pub t_min_us: f64,
    pub t_max_us: f64,
    /// The median.
    pub t_typical_us: f64,
    pub t_avg_us: f64,
    pub t_stdev_us: f64,
    pub t_p99_us: f64,
    pub t_p99_9_us: f64,
    pub data: DataCheck,
}

/// One row of a latency test run for a duration (`-D`), as perftest's
/// print_report_lat_duration: the iterations whose request completed in
/// the measured middle, the average latency over it (µs, half the round
/// trip for write and send), and those iterations per second.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LatDurationRow {
    pub bytes: u64,
    pub iterations: u64,
    pub t_avg_us: f64,
    pub tps: f64,
    pub data: DataCheck,
}

/// A bandwidth test's rows of a timed run (`-D`, each line of
/// `--run_infinitely`) are [`BwRow`]s over the time measured, without a peak.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Row {
    Bw(BwRow),
    Lat(LatRow),
    LatDuration(LatDurationRow),
}

impl Row {
    pub fn bytes(&self) -> u64 {
        match self {
            Row::Bw(r) => r.bytes,
            Row::Lat(r) => r.bytes,
            Row::LatDuration(r) => r.bytes,
        }
    }

    pub fn data(&self) -> DataCheck {
        match self {
            Row::Bw(r) => r.data,
            Row::Lat(r) => r.data,
            Row::LatDuration(r) => r.data,
        }
    }
}

/// One test over one connection, as it was set up; its rows follow in
/// [`RdmaRun::rows`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Link {
    pub test: Test,
    pub params: TestParams,
    /// The side that initiates the operations (the client).
    pub local: EndpointInfo,
    pub remote: EndpointInfo,
    /// The path MTU both queue pairs use, bytes.
    pub path_mtu: u32,
    /// Messages up to this size went inline (0 where the device has no inline data).
    pub inline: u32,
    /// Where this side's thread and host buffers ran (`--numa`), as the
    /// kernel answered; None in records of a qbench that bound nothing.
    #[serde(default)]
    pub numa: Option<Placement>,
}

/// One size of one link.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RdmaRow {
    /// Its link's index in [`RdmaRun::links`].
    pub link: usize,
    #[serde(flatten)]
    pub row: Row,
}

/// Everything one `qbench rdma` process ran (every pair's, under MPI).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RdmaRun {
    #[serde(flatten)]
    pub header: Header,
    pub mode: Mode,
    /// `--report_gbits`: the table's bandwidth in 10^9 bit/s, not MiB/s.
    pub report_gbits: bool,
    /// The connections the run makes: 1 between a server and a client, a
    /// loopback run's pairs of adapters, an MPI job's pairs of ranks.
    pub connections: usize,
    pub agreement: Agreement,
    pub links: Vec<Link>,
    pub rows: Vec<RdmaRow>,
}

impl Streamed for RdmaRun {
    type Part = RdmaRow;
    fn header(&self) -> &Header {
        &self.header
    }
    fn header_mut(&mut self) -> &mut Header {
        &mut self.header
    }
    fn parts(&self) -> &[RdmaRow] {
        &self.rows
    }
}

impl RdmaRun {
    /// The link a row belongs to.
    pub fn link(&self, row: &RdmaRow) -> Option<&Link> {
        self.links.get(row.link)
    }

    /// Bytes checked over every row.
    pub fn checked_bytes(&self) -> u64 {
        self.rows.iter().map(|r| r.row.data().checked_bytes).sum()
    }

    /// Wrong bytes over every row.
    pub fn wrong_bytes(&self) -> u64 {
        self.rows.iter().map(|r| r.row.data().wrong_bytes).sum()
    }

    /// Exit 1 when any byte arrived different from what was sent.
    pub fn verdict(&self) -> Result<()> {
        match self.wrong_bytes() {
            0 => Ok(()),
            n => Err(Error::CheckFailed(format!(
                "{n} bytes arrived different from what was sent (see the #wrong column)"
            ))),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::rdma::plan::{Sizes, Timing};

    /// A loopback run over rxe0 and rxe1: write_bw at 64 B with one wrong
    /// byte, then read_lat at 2 B.
    pub(crate) fn sample() -> RdmaRun {
        let agreement = Agreement {
            tests: vec![Test::WriteBw, Test::ReadLat],
            sizes: Sizes::Single(64),
            iters: 1000,
            qps: 1,
            tx_depth: 0,
            bidirectional: false,
            seed: 7,
            timing: Default::default(),
            mtu: 0,
        };
        let ep = EndpointInfo {
            host: "a".into(),
            device: "rxe0".into(),
            port: 1,
            gid_index: Some(0),
            gid: "fe80:0000:0000:0000:0000:0000:0000:0001".into(),
            lid: 0,
            link_layer: "Ethernet".into(),
            mtu: 1024,
            sl: 0,
            traffic_class: 0,
            qpns: vec![17],
            memory: BufferMemory::Host,
        };
        let link = |test| Link {
            test,
            params: TestParams::new(&agreement, false, test),
            local: ep.clone(),
            remote: EndpointInfo { device: "rxe1".into(), qpns: vec![18], ..ep.clone() },
            path_mtu: 1024,
            inline: if test.is_bw() { 0 } else { 220 },
            numa: None,
        };
        let mut header = Header::start(KIND, None);
        header.args = vec!["qbench".into(), "rdma".into(), "--loopback".into()];
        header.finish();
        RdmaRun {
            header,
            mode: Mode::Loopback,
            report_gbits: false,
            connections: 1,
            links: vec![link(Test::WriteBw), link(Test::ReadLat)],
            rows: vec![
                RdmaRow {
                    link: 0,
                    row: Row::Bw(BwRow {
                        bytes: 64,
                        iterations: 1000,
                        bw_peak_bytes_per_s: None,
                        bw_avg_bytes_per_s: 1e6,
                        msg_rate_mpps: 0.1,
                        data: DataCheck { checked_bytes: 64, wrong_bytes: 1, first_wrong: Some(3) },
                    }),
                },
                RdmaRow {
                    link: 1,
                    row: Row::Lat(LatRow {
                        bytes: 64,
                        iterations: 1000,
                        t_min_us: 1.0,
                        t_max_us: 3.0,
                        t_typical_us: 1.5,
                        t_avg_us: 1.6,
                        t_stdev_us: 0.1,
                        t_p99_us: 2.0,
                        t_p99_9_us: 2.5,
                        data: DataCheck { checked_bytes: 64, ..DataCheck::default() },
                    }),
                },
            ],
            agreement,
        }
    }

    #[test]
    fn records_read_back_as_written() {
        let run = sample();
        let text = serde_json::to_string(&run).unwrap();
        let crate::record::AnyRecord::Rdma(back) = crate::record::parse(&text).unwrap() else { panic!("{text}") };
        assert_eq!(back, run);
        assert_eq!((back.wrong_bytes(), back.checked_bytes()), (1, 128));
        assert_eq!(back.verdict().unwrap_err().exit_code(), 1);
        assert!(text.contains("\"schema\":\"qbench.rdma.v2\""), "{text}");
        assert!(text.contains("{\"link\":0,\"kind\":\"bw\",\"bytes\":64,"), "{text}");
        assert!(text.contains("\"test\":\"write_bw\""), "{text}");
    }

    /// A timed run (-D, -m, -S, --tclass) reads back; a record written
    /// before those options reads as what it ran: -n, the ports' MTU, 0, 0.
    #[test]
    fn timed_runs_and_older_records_read_back() {
        let mut run = sample();
        run.agreement =
            Agreement { iters: 0, timing: Timing::Duration { seconds: 2, margin: 0 }, mtu: 1024, ..run.agreement };
        run.links[1].params = TestParams::new(&run.agreement, false, Test::ReadLat);
        run.links[1].local.sl = 3;
        run.links[1].local.traffic_class = 32;
        run.rows[1].row = Row::LatDuration(LatDurationRow {
            bytes: 64,
            iterations: 9000,
            t_avg_us: 222.5,
            tps: 4494.4,
            data: DataCheck { checked_bytes: 64, ..DataCheck::default() },
        });
        let text = serde_json::to_string(&run).unwrap();
        let crate::record::AnyRecord::Rdma(back) = crate::record::parse(&text).unwrap() else { panic!("{text}") };
        assert_eq!(back, run);
        assert!(text.contains("\"timing\":{\"kind\":\"duration\",\"seconds\":2,\"margin\":0}"), "{text}");
        assert!(text.contains("\"kind\":\"lat_duration\""), "{text}");

        let before = sample();
        let mut old: serde_json::Value = serde_json::to_value(&before).unwrap();
        for key in ["timing", "mtu"] {
            old["agreement"].as_object_mut().unwrap().remove(key).unwrap();
        }
        for link in old["links"].as_array_mut().unwrap() {
            link["params"].as_object_mut().unwrap().remove("timing").unwrap();
            for end in ["local", "remote"] {
                link[end].as_object_mut().unwrap().remove("sl").unwrap();
                link[end].as_object_mut().unwrap().remove("traffic_class").unwrap();
            }
        }
        let crate::record::AnyRecord::Rdma(back) = crate::record::parse(&old.to_string()).unwrap() else { panic!() };
        assert_eq!(back, before);
    }
}
