//! Raw RDMA between two adapters, in perftest's vocabulary: WRITE, READ and
//! SEND bandwidth and latency over reliable-connected queue pairs, every
//! byte checked against a seeded pattern.

pub mod data;
pub mod device;
pub mod figures;
pub mod handshake;
pub mod oob;
pub mod plan;
pub mod record;
