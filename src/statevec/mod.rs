//! The register model of a distributed state-vector simulator, shared by
//! the transports that hold registers and the exchange workload that drives
//! them: how amplitudes are spread over ranks and which rank pairs with
//! which (layout), the exact state at any point of a run (state), the
//! circuits run on it (circuit, qasm for users' own, and spec for what
//! `--circuit` names), and how a circuit becomes the register's steps
//! (schedule, step).

pub mod circuit;
pub mod layout;
pub mod qasm;
pub mod schedule;
pub mod spec;
pub mod state;
pub mod step;
