//! qbench: is this cluster ready, and what will moving amplitudes between
//! GPUs cost? The library behind the `qbench` binary; docs/ARCHITECTURE.md
//! shows how its parts fit.
//!
//! The face (the command line, the commands, the errors) is public for the
//! binary. The rest is public for the integration tests and private under
//! `--cfg qbench_private`, which CI builds with dead code denied, so that
//! the compiler names whatever nothing uses.

pub mod cli;
pub mod command;
pub mod error;

#[cfg(not(qbench_private))]
pub mod check;
#[cfg(qbench_private)]
mod check;
#[cfg(not(qbench_private))]
pub mod dtype;
#[cfg(qbench_private)]
mod dtype;
#[cfg(not(qbench_private))]
pub mod fault;
#[cfg(qbench_private)]
mod fault;
#[cfg(not(qbench_private))]
pub mod gpu;
#[cfg(qbench_private)]
mod gpu;
#[cfg(not(qbench_private))]
pub mod host;
#[cfg(qbench_private)]
mod host;
#[cfg(not(qbench_private))]
pub mod input;
#[cfg(qbench_private)]
mod input;
#[cfg(not(qbench_private))]
pub mod interrupt;
#[cfg(qbench_private)]
mod interrupt;
#[cfg(not(qbench_private))]
pub mod libs;
#[cfg(qbench_private)]
mod libs;
#[cfg(not(qbench_private))]
pub mod numa;
#[cfg(qbench_private)]
mod numa;
#[cfg(not(qbench_private))]
pub mod output;
#[cfg(qbench_private)]
mod output;
#[cfg(not(qbench_private))]
pub mod pattern;
#[cfg(qbench_private)]
mod pattern;
#[cfg(not(qbench_private))]
pub mod probe;
#[cfg(qbench_private)]
mod probe;
#[cfg(not(qbench_private))]
pub mod progress;
#[cfg(qbench_private)]
mod progress;
#[cfg(not(qbench_private))]
pub mod rdma;
#[cfg(qbench_private)]
mod rdma;
#[cfg(not(qbench_private))]
pub mod record;
#[cfg(qbench_private)]
mod record;
#[cfg(not(qbench_private))]
pub mod report;
#[cfg(qbench_private)]
mod report;
#[cfg(not(qbench_private))]
pub mod session;
#[cfg(qbench_private)]
mod session;
#[cfg(not(qbench_private))]
pub mod statevec;
#[cfg(qbench_private)]
mod statevec;
#[cfg(not(qbench_private))]
pub mod stats;
#[cfg(qbench_private)]
mod stats;
#[cfg(not(qbench_private))]
pub mod threads;
#[cfg(qbench_private)]
mod threads;
#[cfg(not(qbench_private))]
pub mod transport;
#[cfg(qbench_private)]
mod transport;
#[cfg(not(qbench_private))]
pub mod ui;
#[cfg(qbench_private)]
mod ui;
#[cfg(not(qbench_private))]
pub mod units;
#[cfg(qbench_private)]
mod units;
#[cfg(not(qbench_private))]
pub mod workload;
#[cfg(qbench_private)]
mod workload;
#[cfg(not(qbench_private))]
pub mod world;
#[cfg(qbench_private)]
mod world;
