//! `qbench copy` as a user without a GPU sees it: the test list, one-line
//! usage errors (exit 2), and exit 3 with one sentence when no GPU is
//! visible. The measurements themselves need a GPU (results/h200x2/run-h200x2.sh).

mod common;

use common::{one_line_error, qbench_with};

#[test]
fn list_names_every_family_and_test() {
    let o = qbench_with(&["copy", "--list"], &[]);
    assert!(o.status.success());
    let text = String::from_utf8_lossy(&o.stdout);
    for name in ["host_device", "h2d_pinned", "bidir_all", "peer_ce_write", "local_sm", "zero_copy_read"] {
        assert!(text.contains(name), "{name} missing from {text}");
    }
    for name in ["latency_peer", "latency_mapped_write", "gdrcopy_bw", "gdrcopy_lat"] {
        assert!(text.contains(name), "{name} missing from {text}");
    }
}

#[test]
fn no_visible_gpu_is_exit_3_with_a_sentence() {
    let o = qbench_with(&["copy", "--test", "h2d_pinned"], &[("CUDA_VISIBLE_DEVICES", "")]);
    let err = one_line_error(&o, 3);
    assert!(err.contains("GPU"), "{err}");
}

#[test]
fn bad_requests_are_exit_2_with_one_line() {
    let err = one_line_error(&qbench_with(&["copy", "--test", "h2d_pinned,warp_drive"], &[]), 2);
    assert!(err.contains("warp_drive") && err.contains("--list"), "{err}");
    let err = one_line_error(&qbench_with(&["copy", "-b", "1G", "-e", "1M"], &[]), 2);
    assert!(err.contains("-b") && err.contains("-e"), "{err}");
    one_line_error(&qbench_with(&["copy", "-b", "1M", "-e", "1G", "-f", "1"], &[]), 2);
    one_line_error(&qbench_with(&["copy", "-n", "0"], &[]), 2);
    let err = one_line_error(&qbench_with(&["copy"], &[("QBENCH_CORRUPT", "1:7")]), 2);
    assert!(err.contains("copy[:WORD]"), "{err}");
}

#[test]
fn numa_takes_auto_off_or_a_node_of_this_machine() {
    for bad in ["on", "-1", "0x1", ""] {
        let err = one_line_error(&qbench_with(&["copy", &format!("--numa={bad}")], &[]), 2);
        assert!(err.contains("--numa"), "{err}");
    }
    let err = one_line_error(&qbench_with(&["copy", "--numa", "4096"], &[]), 2);
    assert!(err.contains("--numa 4096: no NUMA node 4096"), "{err}");
    // Good values pass to the run (here: no GPU, exit 3).
    for good in ["auto", "off", "0"] {
        one_line_error(&qbench_with(&["copy", "--numa", good], &[("CUDA_VISIBLE_DEVICES", "")]), 3);
    }
}

#[test]
fn several_processes_on_one_node_are_refused() {
    // Two copies of the test on one node would measure each other.
    for var in ["OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"] {
        let err = one_line_error(&qbench_with(&["copy"], &[(var, "2")]), 2);
        assert!(err.contains("one per node") && err.contains(var), "{err}");
    }
    // One process per node is a plain run (here: no GPU, exit 3).
    let o = qbench_with(&["copy"], &[("OMPI_COMM_WORLD_LOCAL_SIZE", "1"), ("CUDA_VISIBLE_DEVICES", "")]);
    one_line_error(&o, 3);
}
