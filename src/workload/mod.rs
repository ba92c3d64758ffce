//! Workloads: what is moved and how it is checked, independent of how.
pub mod collective;
pub mod copy;
pub mod exchange;
