//! Helpers shared by the end-to-end tests.

use std::process::Output;

/// The data rows of an nccl-tests table, split into columns.
pub fn rows(o: &Output) -> Vec<Vec<String>> {
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| l.split_whitespace().map(String::from).collect())
        .collect()
}
