//! Renderings of run records: the nccl-tests table, JSON and CSV.

pub mod cfmt;
pub mod csv;
pub mod exchange;
pub mod json;
pub mod table;
