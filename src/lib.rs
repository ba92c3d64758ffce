//! qbench: is this cluster ready, and what will moving amplitudes between
//! GPUs cost? The library behind the `qbench` binary; docs/ARCHITECTURE.md
//! shows how its parts fit.

pub mod check;
pub mod cli;
pub mod command;
pub mod dtype;
pub mod error;
pub mod fault;
pub mod gpu;
pub mod harness;
pub mod host;
pub mod interrupt;
pub mod libs;
pub mod output;
pub mod pattern;
pub mod probe;
pub mod progress;
pub mod rdma;
pub mod record;
pub mod report;
pub mod session;
pub mod statevec;
pub mod stats;
pub mod threads;
pub mod transport;
pub mod ui;
pub mod units;
pub mod workload;
pub mod world;
