//! The typed records of an RDMA run: one link record per test over one
//! connection, one row per message size, in perftest's columns. Every
//! renderer (the perftest-like table, JSON, CSV) reads these; a later run,
//! a baseline or `compare` can read them back (owned data throughout).

use super::plan::{Agreement, Memory, Test, TestParams};
use serde::{Deserialize, Serialize};

pub const SCHEMA: &str = "qbench.rdma.v1";

/// How the two sides of the run found each other.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// This process waited for a client over TCP.
    Server,
    /// This process connected to a server over TCP.
    Client,
    /// Both sides in this process, on two adapters of this node.
    Loopback,
    /// Pairs of ranks of an MPI job.
    Mpi,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Server => "server",
            Mode::Client => "client",
            Mode::Loopback => "loopback",
            Mode::Mpi => "mpi",
        }
    }
}

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
    pub qpns: Vec<u32>,
    /// Where its buffers live.
    pub memory: Memory,
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

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Row {
    Bw(BwRow),
    Lat(LatRow),
}

impl Row {
    pub fn bytes(&self) -> u64 {
        match self {
            Row::Bw(r) => r.bytes,
            Row::Lat(r) => r.bytes,
        }
    }

    pub fn data(&self) -> DataCheck {
        match self {
            Row::Bw(r) => r.data,
            Row::Lat(r) => r.data,
        }
    }
}

/// One test over one connection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinkRecord {
    pub test: Test,
    pub params: TestParams,
    /// The side that initiates the operations (the client).
    pub local: EndpointInfo,
    pub remote: EndpointInfo,
    /// The path MTU both queue pairs use, bytes.
    pub path_mtu: u32,
    /// Messages up to this size went inline (0 where the device has no inline data).
    pub inline: u32,
    pub rows: Vec<Row>,
}

/// Everything one `qbench rdma` process ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RdmaRun {
    pub schema: String,
    pub qbench_version: String,
    pub args: Vec<String>,
    pub host: String,
    pub start_time: String,
    pub end_time: Option<String>,
    pub mode: Mode,
    pub agreement: Agreement,
    pub links: Vec<LinkRecord>,
}

impl RdmaRun {
    pub fn start(mode: Mode, agreement: Agreement) -> RdmaRun {
        RdmaRun {
            schema: SCHEMA.to_string(),
            qbench_version: env!("CARGO_PKG_VERSION").to_string(),
            args: std::env::args().collect(),
            host: crate::host::short_hostname(),
            start_time: crate::host::now(),
            end_time: None,
            mode,
            agreement,
            links: Vec::new(),
        }
    }

    pub fn finish(&mut self) {
        self.end_time = Some(crate::host::now());
    }

    /// Wrong bytes over every row.
    pub fn wrong_bytes(&self) -> u64 {
        self.links.iter().flat_map(|l| &l.rows).map(|r| r.data().wrong_bytes).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rdma::plan::Sizes;

    #[test]
    fn records_read_back_as_written() {
        let agreement = Agreement {
            tests: vec![Test::WriteBw],
            sizes: Sizes::All,
            iters: 0,
            qps: 1,
            tx_depth: 0,
            bidirectional: false,
            seed: 7,
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
            qpns: vec![17],
            memory: Memory::Host,
        };
        let mut run = RdmaRun::start(Mode::Loopback, agreement.clone());
        let data = DataCheck { checked_bytes: 64, wrong_bytes: 1, first_wrong: Some(3) };
        run.links.push(LinkRecord {
            test: Test::WriteBw,
            params: TestParams::new(&agreement, Memory::Host, Test::WriteBw),
            local: ep.clone(),
            remote: EndpointInfo { device: "rxe1".into(), ..ep },
            path_mtu: 1024,
            inline: 0,
            rows: vec![
                Row::Bw(BwRow {
                    bytes: 64,
                    iterations: 5000,
                    bw_peak_bytes_per_s: None,
                    bw_avg_bytes_per_s: 1e6,
                    msg_rate_mpps: 0.1,
                    data,
                }),
                Row::Lat(LatRow {
                    bytes: 2,
                    iterations: 1000,
                    t_min_us: 1.0,
                    t_max_us: 3.0,
                    t_typical_us: 1.5,
                    t_avg_us: 1.6,
                    t_stdev_us: 0.1,
                    t_p99_us: 2.0,
                    t_p99_9_us: 2.5,
                    data: DataCheck::default(),
                }),
            ],
        });
        run.finish();
        let text = serde_json::to_string(&run).unwrap();
        let back: RdmaRun = serde_json::from_str(&text).unwrap();
        assert_eq!(back, run);
        assert_eq!(back.wrong_bytes(), 1);
        assert!(text.contains("\"kind\":\"bw\"") && text.contains("\"test\":\"write_bw\""));
    }
}
