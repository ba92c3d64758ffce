//! qbench: is this cluster ready, and what will moving amplitudes between
//! GPUs cost? The library behind the `qbench` binary; see DESIGN in README.

pub mod cli;
pub mod dtype;
pub mod error;
pub mod gpu;
pub mod harness;
pub mod libs;
pub mod pattern;
pub mod probe;
pub mod rdma;
pub mod report;
pub mod transport;
pub mod units;
pub mod workload;
pub mod world;
