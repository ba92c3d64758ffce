//! Raw RDMA between two adapters, in perftest's vocabulary: WRITE, READ and
//! SEND bandwidth and latency over reliable-connected queue pairs, every
//! byte checked against a seeded pattern. A library, with no command line:
//! the plan (options checked, what both sides agree on), the handshake and
//! its channels, device choice and figures build everywhere; the verbs
//! (through sideway, which loads libibverbs at run time) come with the
//! `rdma` cargo feature. `workload::rdma` runs perftest's tests on it (one
//! side of a run is [`side`]); the exchange's rdma wires build on
//! [`verbs::Link`].

pub mod data;
pub mod device;
pub mod figures;
pub mod handshake;
pub mod oob;
pub mod plan;

#[cfg(feature = "rdma")]
pub mod memory;
#[cfg(feature = "rdma")]
pub mod side;
#[cfg(feature = "rdma")]
pub mod verbs;
