//! Renderings of run records: the nccl-tests table, the copy tables, JSON and CSV.

pub mod cfmt;
pub mod copy;
pub mod csv;
pub mod exchange;
pub mod json;
pub mod table;
