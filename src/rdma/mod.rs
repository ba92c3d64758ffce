//! Raw RDMA between two adapters, in perftest's vocabulary: WRITE, READ and
//! SEND bandwidth and latency over reliable-connected queue pairs, every
//! byte checked against a seeded pattern. The plan, handshake, channels,
//! device choice and figures build everywhere; the verbs (through
//! sideway, which loads libibverbs at run time) come with the `rdma` cargo
//! feature. [`run`] is the workload of `qbench rdma` (its record is
//! `record::rdma`, its table `report::rdma`); a wire for exchange and
//! compare builds on [`verbs::Link`] and [`session`].

pub mod data;
pub mod device;
pub mod figures;
pub mod handshake;
pub mod oob;
pub mod options;
pub mod plan;

#[cfg(feature = "rdma")]
pub mod memory;
#[cfg(feature = "rdma")]
pub mod session;
#[cfg(feature = "rdma")]
pub mod verbs;

mod workload;

pub use workload::run;
