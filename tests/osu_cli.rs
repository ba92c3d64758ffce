//! The OSU subcommands in one process, as a user meets them without a
//! launcher: the test's process count said in one line, bad options and
//! values refused in one line, exit 2, before any MPI work.

mod common;

use common::{qbench, stderr};

#[test]
fn one_process_is_told_how_many_the_test_needs() {
    for (program, need) in [
        ("osu_latency", "exactly two processes, not 1"),
        ("osu_bw", "exactly two processes, not 1"),
        ("osu_bibw", "exactly two processes, not 1"),
        ("osu_mbw_mr", "an even number of processes (pairs), not 1"),
        ("osu_allreduce", "at least two processes, not 1"),
    ] {
        let o = qbench(&[program, "-m", "64"]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{program}: {err}");
        assert!(err.contains(need), "{program}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{program}: {err}");
    }
}

#[test]
fn options_osu_does_not_give_a_test_and_bad_values_are_one_line() {
    for args in [
        &["osu_latency", "-W", "8"][..],
        &["osu_bw", "-f"],
        &["osu_bw", "-m", "9:3"],
        &["osu_bw", "-m", "2G"],
        &["osu_bw", "-m", "lots"],
        &["osu_bw", "-d", "rocm"],
        &["osu_bw", "D"],
        &["osu_bw", "MD", "H"],
        &["osu_bw", "-W", "0"],
        &["osu_bw", "-i", "0"],
        &["osu_bw", "-T", "mpi_double"],
        &["osu_allreduce", "D", "D"],
    ] {
        let o = qbench(args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

#[test]
fn a_fault_the_tests_cannot_apply_is_refused() {
    let o = common::qbench_with(&["osu_bw"], &[("QBENCH_CORRUPT", "copy")]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("cannot be applied by qbench osu_bw"), "{}", stderr(&o));
}
