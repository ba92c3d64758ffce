//! Multi-process runs under mpirun (cargo feature `mpi`, Open MPI): the
//! cpu transport across processes, one table, busbw factors for the
//! process count, wrong data and a failing rank ending the job; copy
//! refusing to run twice on one node; qbench check as one table with
//! every pair of processes.
#![cfg(feature = "mpi")]

mod common;

use common::{EVERY_TYPE_AND_OP, assert_clean, rows};
use std::process::{Command, Output};

fn mpirun(np: usize, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new("mpirun");
    cmd.args(["--allow-run-as-root", "--oversubscribe", "-np", &np.to_string()]);
    for (k, v) in env {
        cmd.args(["-x", &format!("{k}={v}")]);
    }
    cmd.arg(env!("CARGO_BIN_EXE_qbench")).args(args);
    cmd.env_remove("QBENCH_CORRUPT").output().expect("run mpirun (install openmpi-bin)")
}

#[test]
fn cpu_transport_across_processes_gives_one_checked_table() {
    for (np, factor) in [(2usize, 1.0), (4, 1.5)] {
        let o = mpirun(np, &["allreduce", "--transport", "cpu", "-b", "64K", "-e", "4M", "-f", "4"], &[]);
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(o.status.success(), "np {np}: {}", String::from_utf8_lossy(&o.stderr));
        assert_eq!(out.matches("# Collective test starting").count(), 1, "one table, printed by rank 0");
        assert_eq!(out.matches("#  Rank ").count(), np, "every rank listed");
        let rows = rows(&o);
        assert_eq!(rows.len(), 4);
        for r in rows {
            assert_eq!((r[8].as_str(), r[12].as_str()), ("0", "0"), "{r:?}");
            let (alg, bus): (f64, f64) = (r[6].parse().unwrap(), r[7].parse().unwrap());
            assert!((bus - factor * alg).abs() <= 0.02, "np {np}: {r:?}");
        }
    }
}

#[test]
fn every_collective_across_processes() {
    for coll in ["allgather", "reducescatter", "broadcast", "reduce", "alltoall", "sendrecv"] {
        let o = mpirun(3, &[&[coll][..], &EVERY_TYPE_AND_OP].concat(), &[]);
        assert!(o.status.success(), "{coll}: {}", String::from_utf8_lossy(&o.stderr));
        assert_clean(&rows(&o), coll);
    }
}

#[test]
fn wrong_data_on_one_rank_fails_the_job() {
    let o = mpirun(2, &["sendrecv", "--transport", "cpu", "-b", "1M", "-e", "1M"], &[("QBENCH_CORRUPT", "1:7")]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(rows(&o)[0][8], "1");
}

#[test]
fn a_failing_rank_ends_the_job_with_its_name() {
    // The second process is misconfigured (-g 2 with the cpu transport
    // under MPI); it must take the first down with it, not leave it waiting.
    let qb = env!("CARGO_BIN_EXE_qbench");
    let start = std::time::Instant::now();
    let o = Command::new("mpirun")
        .args(["--allow-run-as-root", "--oversubscribe", "-np", "1", qb, "allreduce", "--transport", "cpu", ":"])
        .args(["-np", "1", qb, "allreduce", "--transport", "cpu", "-g", "2"])
        .output()
        .expect("run mpirun");
    assert!(start.elapsed().as_secs() < 60);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("qbench: rank 1 on "), "{err}");
}

#[test]
fn copy_refuses_several_processes_on_one_node() {
    let o = mpirun(2, &["copy"], &[]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("one per node"), "{err}");
}

#[test]
fn check_across_processes_gives_one_table_with_every_pair() {
    let o = mpirun(4, &["check", "--profile", "cpu", "--level", "standard"], &[]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{out}{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(out.matches("# qbench check:").count(), 1, "one table, printed by rank 0: {out}");
    assert_eq!(out.matches("| all ").count(), 3, "the steps across processes, once each: {out}");
    for rank in 0..4 {
        assert!(out.contains(&format!("node pairs, MPI sendrecv 1M (rank {rank} with ")), "rank {rank}: {out}");
    }
    assert!(out.lines().last().unwrap().starts_with("qbench check: READY: 7 PASS"), "{out}");

    // A profile no process can meet: one verdict, exit 1 from the job.
    let dir = std::env::temp_dir().join(format!("qbench-mpi-check-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cpu = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/profiles/cpu.toml")).unwrap();
    let p = dir.join("impossible.toml");
    std::fs::write(&p, cpu.replace("floor = 0.001", "floor = 1e9")).unwrap();
    let o = mpirun(2, &["check", "--profile", p.to_str().unwrap(), "--level", "standard", "--quiet"], &[]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(o.stdout.is_empty(), "{}", String::from_utf8_lossy(&o.stdout));
    assert_eq!(err.lines().filter(|l| l.starts_with("qbench: check FAIL ")).count(), 5, "{err}");
    std::fs::remove_dir_all(dir).unwrap();
}
