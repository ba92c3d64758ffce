//! Numbers qbench is handed (variables, records) are checked before they
//! are used, and bad input is said for what it is: one line, exit 2, the
//! variable or file and key named, a long token quoted short with its
//! length, nothing measured or drawn first.

mod common;

use common::{one_line_error, qbench, qbench_with, stderr, stdout};
use serde_json::Value;
use std::path::PathBuf;

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("qbench-hostile-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A hundred thousand digits (an argument or variable holds at most
/// 128 KiB): a number no error line should quote whole.
fn huge() -> String {
    "9".repeat(100_000)
}

#[test]
fn a_minimum_bandwidth_that_is_no_bandwidth_is_refused() {
    let huge = huge();
    for v in ["nan", "-1", "inf", huge.as_str()] {
        let o = qbench_with(&["allreduce", "--transport", "cpu", "-b", "1K", "-e", "1K"], &[("NCCL_TESTS_MIN_BW", v)]);
        let err = one_line_error(&o, 2);
        assert!(err.contains("NCCL_TESTS_MIN_BW=") && err.len() < 300, "{}", &err[..err.len().min(300)]);
        assert!(stdout(&o).is_empty(), "{v}: measured first");
    }
}

#[test]
fn a_simulator_time_that_is_no_time_is_refused_in_its_own_words() {
    for v in ["-1", "qft=-0.5", "0", "nan", "qft="] {
        let o = qbench(&[
            "exchange",
            "--plan",
            "--profile",
            "h200x1",
            "--qubits",
            "14",
            "-g",
            "1,2",
            "--simulator-time",
            v,
        ]);
        let err = one_line_error(&o, 2);
        assert!(err.contains("--simulator-time") && err.len() < 300, "{v}: {err}");
    }
}

#[test]
fn a_launcher_count_that_is_no_number_is_refused() {
    let huge = huge();
    for var in ["OMPI_COMM_WORLD_SIZE", "SLURM_STEP_NUM_TASKS", "PMIX_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"] {
        for v in ["abc", "-4", huge.as_str()] {
            let o = qbench_with(&["allreduce", "--transport", "cpu", "-b", "1K", "-e", "1K"], &[(var, v)]);
            let err = one_line_error(&o, 2);
            assert!(err.contains(&format!("{var}=")) && err.len() < 300, "{}", &err[..err.len().min(300)]);
            assert!(stdout(&o).is_empty(), "{var}={v}: measured first");
        }
    }
}

#[test]
fn a_traffic_matrix_scale_that_scales_nothing_is_refused() {
    let dir = scratch("scale");
    let m = dir.join("m.txt");
    std::fs::write(&m, "0 100\n100 0\n").unwrap();
    let big = dir.join("big.txt");
    std::fs::write(&big, format!("0 {}\n100 0\n", "9".repeat(1 << 20))).unwrap();
    let args = ["alltoallv", "--transport", "cpu", "-g", "2", "-b", "1K", "-e", "1K"];
    for scale in ["-1", "0", "nan", "inf"] {
        let env =
            [("NCCL_TESTS_ALLTOALLV_MATRIX_FILE", m.to_str().unwrap()), ("NCCL_TESTS_ALLTOALLV_MATRIX_SCALE", scale)];
        let err = one_line_error(&qbench_with(&args, &env), 2);
        assert!(err.contains(&format!("NCCL_TESTS_ALLTOALLV_MATRIX_SCALE={scale}")), "{err}");
    }
    // A million-digit cell is quoted short, its length said.
    let err = one_line_error(&qbench_with(&args, &[("NCCL_TESTS_ALLTOALLV_MATRIX_FILE", big.to_str().unwrap())]), 2);
    assert!(err.len() < 400 && err.contains("(1048576 bytes)"), "{}", &err[..err.len().min(400)]);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_size_past_any_count_is_too_large() {
    let err = one_line_error(&qbench(&["allreduce", "--transport", "cpu", "-b", "20000000T"]), 2);
    assert!(err.contains("too large"), "{err}");
    let err = one_line_error(&qbench(&["allreduce", "--transport", "cpu", "-b", &huge()]), 2);
    assert!(err.len() < 400 && err.contains("(100000 bytes)"), "{}", &err[..err.len().min(400)]);
}

/// A one-rank record whose circuit time is no time, or of another
/// register, is refused rather than priced or passed over.
#[test]
fn one_gpu_records_are_checked_before_they_are_priced() {
    let dir = scratch("one-gpu");
    let one = dir.join("one.json");
    let exchange = |args: &[&str]| {
        let base = ["exchange", "--transport", "cpu", "--circuit", "qft", "-n", "1"];
        qbench(&[&base[..], args].concat())
    };
    let o = exchange(&["--qubits", "12", "-g", "1", "-J", one.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let record: Value = serde_json::from_str(&std::fs::read_to_string(&one).unwrap()).unwrap();
    for median in [-0.01, 0.0, 1e308] {
        let mut bad = record.clone();
        for r in bad["registers"].as_array_mut().unwrap() {
            for c in r["circuits"].as_array_mut().unwrap() {
                c["time"]["median"] = median.into();
            }
        }
        let p = dir.join("bad.json");
        std::fs::write(&p, bad.to_string()).unwrap();
        let err = one_line_error(&exchange(&["--qubits", "12", "-g", "2", "--one-gpu-from", p.to_str().unwrap()]), 2);
        assert!(err.contains("bad.json") && err.contains("time.median"), "{median}: {err}");
    }
    let o = exchange(&["--qubits", "13", "-g", "2", "--one-gpu-from", one.to_str().unwrap()]);
    let err = one_line_error(&o, 2);
    assert!(err.contains("of 12 qubits, this run's of 13"), "{err}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn an_exchange_count_that_cannot_hold_a_register_is_refused_before_any_runs() {
    let o = qbench(&["exchange", "--transport", "cpu", "--qubits", "12", "-g", "2,3", "-n", "1"]);
    let err = one_line_error(&o, 2);
    assert!(err.contains("-g 3") && stdout(&o).is_empty(), "{err}{}", stdout(&o));
}

#[test]
fn a_size_range_too_small_for_the_type_is_refused() {
    let err = one_line_error(&qbench(&["osu_bw", "-m", "3:3", "-T", "mpi_int"]), 2);
    assert!(err.contains("one MPI_INT"), "{err}");
}

#[test]
fn a_gid_index_is_judged_before_the_hardware() {
    let err = one_line_error(&qbench(&["rdma", "--loopback", "-x", "9999"]), 2);
    assert!(err.contains("9999") && err.contains("255"), "{err}");
}

/// A record written when its run was stopped says so when shown, and a
/// record without results is not drawn as an empty picture.
#[test]
fn stopped_and_empty_records_are_said_to_be() {
    let dir = scratch("stopped");
    let run = dir.join("run.json");
    let o = qbench(&["allreduce", "--transport", "cpu", "-b", "1K", "-e", "1K", "-J", run.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let mut record: Value = serde_json::from_str(&std::fs::read_to_string(&run).unwrap()).unwrap();
    record["complete"] = false.into();
    record["stopped"] = "SIGINT at 1024 bytes".into();
    let stopped = dir.join("stopped.json");
    std::fs::write(&stopped, record.to_string()).unwrap();
    let o = qbench(&["show", stopped.to_str().unwrap()]);
    let text = stdout(&o);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!text.contains("concluded") && text.contains("stopped") && text.contains("SIGINT at 1024 bytes"), "{text}");
    // Every other kind says it first.
    let ex = dir.join("ex.json");
    let o =
        qbench(&["exchange", "--transport", "cpu", "--qubits", "8", "-g", "2", "-n", "1", "-J", ex.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let mut exr: Value = serde_json::from_str(&std::fs::read_to_string(&ex).unwrap()).unwrap();
    exr["complete"] = false.into();
    exr["stopped"] = "SIGTERM at circuit qft".into();
    std::fs::write(&ex, exr.to_string()).unwrap();
    let text = stdout(&qbench(&["show", ex.to_str().unwrap()]));
    assert!(text.starts_with("# stopped: SIGTERM at circuit qft (the record is incomplete"), "{text}");
    record["results"] = Value::Array(Vec::new());
    let empty = dir.join("empty.json");
    std::fs::write(&empty, record.to_string()).unwrap();
    let picture = dir.join("empty.svg");
    let o = qbench(&["plot", empty.to_str().unwrap(), "-o", picture.to_str().unwrap()]);
    let err = one_line_error(&o, 2);
    assert!(err.contains("no results"), "{err}");
    assert!(!picture.exists());
    // Nor is a picture written over the record it draws.
    let before = std::fs::read(&run).unwrap();
    let over = dir.join("sub/../run.json");
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    let err = one_line_error(&qbench(&["plot", run.to_str().unwrap(), "-o", over.to_str().unwrap()]), 2);
    assert!(err.contains("over the record"), "{err}");
    assert_eq!(std::fs::read(&run).unwrap(), before);
    std::fs::remove_dir_all(dir).unwrap();
}
