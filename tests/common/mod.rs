//! Helpers shared by the end-to-end tests: running the binary, reading
//! what it printed, and the rows of its nccl-tests tables. Each test file
//! uses some of them.
#![allow(dead_code)]

use std::process::{Command, Output};

/// The qbench binary cargo built for the tests.
pub const BIN: &str = env!("CARGO_BIN_EXE_qbench");

/// qbench with `args`, no fault injected.
pub fn qbench(args: &[&str]) -> Output {
    qbench_with(args, &[])
}

/// qbench with `args` and the variables `env` (QBENCH_CORRUPT unset unless
/// `env` sets it).
pub fn qbench_with(args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(BIN).args(args).env_remove("QBENCH_CORRUPT").envs(env.iter().copied()).output().expect("run qbench")
}

/// qbench with `args` in a clean environment: no launcher variables, no
/// GPU, the system's PATH alone.
pub fn bare(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("CUDA_VISIBLE_DEVICES", "")
        .output()
        .expect("run qbench")
}

/// `qbench check ARGS` in a clean environment ([`bare`]).
pub fn check(args: &[&str]) -> Output {
    bare(&[&["check"][..], args].concat())
}

/// What a run printed on stdout, as JSON.
pub fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {}{}", stdout(o), stderr(o)))
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The one line on stderr of a run that exits with `code`, "qbench: …".
pub fn one_line_error(o: &Output, code: i32) -> String {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(code), "stderr: {err}");
    assert_eq!(err.lines().count(), 1, "stderr: {err}");
    assert!(err.starts_with("qbench: "), "stderr: {err}");
    err
}

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
/// (N/A where a collective has no in-place form). The #wrong columns are
/// found from the row's end: hypercube's redop column is empty.
pub fn assert_clean(rows: &[Vec<String>], what: &str) {
    for r in rows {
        let (out, inp) = (&r[r.len() - 5], &r[r.len() - 1]);
        assert!(out == "0" && (inp == "0" || inp == "N/A"), "{what}: {r:?}");
    }
}
