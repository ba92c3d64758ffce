//! The register model of a distributed state-vector simulator, shared by
//! the transports that hold registers and the exchange workload that drives
//! them: how amplitudes are spread over ranks and which rank pairs with
//! which (layout), and the exact state at any point of a run (state).

pub mod layout;
pub mod state;
