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

/// Every data type, every op and every root, 8 B to 64K, on the cpu
/// transport: the run that checks a collective's data paths.
pub const EVERY_TYPE_AND_OP: [&str; 16] =
    ["--transport", "cpu", "-b", "8", "-e", "64K", "-f", "8", "-d", "all", "-o", "all", "-r", "-1", "-n", "2"];

/// Asserts that no row counts a wrong element, out of place or in place
/// (N/A where a collective has no in-place form).
pub fn assert_clean(rows: &[Vec<String>], what: &str) {
    for r in rows {
        assert!(r[8] == "0" && (r[12] == "0" || r[12] == "N/A"), "{what}: {r:?}");
    }
}
