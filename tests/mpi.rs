//! Multi-process runs under mpirun (cargo feature `mpi`, Open MPI): the
//! cpu transport across processes, one table, busbw factors for the
//! process count, wrong data and a failing rank ending the job; copy
//! refusing to run twice on one node; qbench check as one table with
//! every pair of processes; exchange and compare on host-memory ranks, one
//! per process, every amplitude checked, and the GPU and RDMA wires
//! refused in one line where they cannot run; OSU's MPI tests in OSU's
//! table, every size checked.
#![cfg(feature = "mpi")]

mod common;

use common::{EVERY_TYPE_AND_OP, assert_clean, rows};
use qbench::workload::collective::Kind;
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
    for &kind in Kind::ALL {
        let coll = kind.spec().command();
        // Three processes, or four for a collective that takes powers of two only (hypercube).
        let np = if kind.spec().fits(3).is_ok() { 3 } else { 4 };
        let o = mpirun(np, &[&[coll][..], &EVERY_TYPE_AND_OP].concat(), &[]);
        assert!(o.status.success(), "{coll}: {}", String::from_utf8_lossy(&o.stderr));
        assert_clean(&rows(&o), coll);
    }
}

/// Counts three processes do not divide: the reported 1M all_reduce and
/// 1000 B of every type, op and root, each the largest size of its sweep so
/// that it fills the buffers. Every element is checked, in the table and
/// in the records.
#[test]
fn three_processes_take_counts_they_do_not_divide() {
    let dir = std::env::temp_dir().join(format!("qbench-mpi-uneven-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let every = ["-d", "all", "-o", "all", "-r", "-1", "-n", "2"];
    let runs: [(&str, &str, &[&str]); 8] = [
        ("allreduce", "1M", &[]),
        ("allreduce", "1000", &every),
        ("reduce", "1000", &every),
        ("reducescatter", "1000", &every),
        ("allgather", "1000", &every),
        ("alltoall", "1000", &every),
        ("broadcast", "1000", &every),
        ("sendrecv", "1000", &every),
    ];
    for (coll, size, more) in runs {
        let what = format!("{coll} {size}");
        let json = dir.join(format!("{coll}-{size}.json"));
        let args = [&[coll, "--transport", "cpu", "-b", size, "-e", size, "-J", json.to_str().unwrap()][..], more];
        let o = mpirun(3, &args.concat(), &[]);
        let (out, err) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
        assert!(o.status.success(), "{what}: {}: {out}{err}", o.status);
        let rows = rows(&o);
        assert!(!rows.is_empty(), "{what}: {out}");
        assert_clean(&rows, &what);
        let qbench::record::AnyRecord::Collective(run) = qbench::record::read(&json).unwrap() else {
            panic!("{what}: not a collective record")
        };
        assert_eq!((run.config.nranks, run.wrong_elements, run.results.len()), (3, 0, rows.len()), "{what}");
        for r in &run.results {
            assert!(r.count > 0, "{what}: {r:?}");
            for cell in [&r.out_of_place, &r.in_place] {
                assert!(cell.wrong.unwrap_or(0) == 0, "{what}: {r:?}");
            }
        }
    }
    std::fs::remove_dir_all(dir).unwrap();
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
    assert_eq!(out.matches("| all ").count(), 4, "the steps across processes and the pass, once each: {out}");
    for rank in 0..4 {
        assert!(out.contains(&format!("node pairs, MPI sendrecv 1M (rank {rank} with ")), "rank {rank}: {out}");
    }
    assert!(out.lines().last().unwrap().starts_with("qbench check: READY: 8 PASS"), "{out}");

    // A profile no process can meet: one verdict, exit 1 from the job.
    let dir = std::env::temp_dir().join(format!("qbench-mpi-check-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cpu = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/profiles/cpu.toml")).unwrap();
    let p = dir.join("impossible.toml");
    let impossible: Vec<&str> =
        cpu.lines().map(|l| if l.starts_with("floor = ") { "floor = 1e9" } else { l }).collect();
    std::fs::write(&p, impossible.join("\n") + "\n").unwrap();
    let o = mpirun(2, &["check", "--profile", p.to_str().unwrap(), "--level", "standard", "--quiet"], &[]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(o.stdout.is_empty(), "{}", String::from_utf8_lossy(&o.stdout));
    assert_eq!(err.lines().filter(|l| l.starts_with("qbench: check FAIL ")).count(), 6, "{err}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn check_judges_each_rank_by_its_own_node() {
    // Rank 2 made to fail (QBENCH_CORRUPT=slow:2, its figures a million times worse):
    // each rank's own exit status, the failure in rank 0's one table.
    let dir = std::env::temp_dir().join(format!("qbench-mpi-node-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let script = format!(
        "{} check --profile cpu --level standard --quiet --samples 1; echo $? > {}/rc.$OMPI_COMM_WORLD_RANK",
        env!("CARGO_BIN_EXE_qbench"),
        dir.display()
    );
    let o = Command::new("mpirun")
        .args([
            "--allow-run-as-root",
            "--oversubscribe",
            "-np",
            "4",
            "-x",
            "QBENCH_CORRUPT=slow:2",
            "sh",
            "-c",
            &script,
        ])
        .output()
        .expect("run mpirun (install openmpi-bin)");
    let err = String::from_utf8_lossy(&o.stderr);
    let rc = |r: usize| std::fs::read_to_string(dir.join(format!("rc.{r}"))).unwrap_or_default().trim().to_string();
    assert_eq!([rc(0), rc(1), rc(2), rc(3)], ["0", "0", "1", "0"], "{err}");
    let fails: Vec<&str> = err.lines().filter(|l| l.starts_with("qbench: check FAIL ")).collect();
    assert!(!fails.is_empty() && fails.iter().all(|l| l.contains(":2 node pairs")), "{err}");
    assert!(fails.iter().all(|l| l.contains("wanted ≥")), "what was measured and wanted: {err}");

    // Without --quiet, rank 0's table names rank 2's node and the verdict drains it alone.
    let o = mpirun(
        4,
        &["check", "--profile", "cpu", "--level", "standard", "--samples", "1"],
        &[("QBENCH_CORRUPT", "slow:2")],
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(out.matches("# qbench check:").count(), 1, "{out}");
    let last = out.lines().last().unwrap_or_default();
    assert!(last.starts_with("qbench check: NOT READY") && last.contains(":2") && !last.contains(":1,"), "{out}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn the_pairwise_pass_names_the_slow_node_with_its_evidence_and_records_every_pair() {
    // Six processes (one rack: one host), rank 4 slowed: named with every
    // partner it had (two in the first pass: 4 XOR 2 and 4 XOR 4 lie past
    // the six, and a node is not paired with one it met), after one
    // re-pairing with a node that passed; the others pass and the job's
    // row holds every pair.
    let dir = std::env::temp_dir().join(format!("qbench-mpi-pairs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("check.json");
    let args = ["check", "--profile", "cpu", "--level", "standard", "--samples", "1", "-J", json.to_str().unwrap()];
    let o = mpirun(6, &args, &[("QBENCH_CORRUPT", "slow:4")]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{out}{}", String::from_utf8_lossy(&o.stderr));
    let record: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let rows = record["rows"].as_array().unwrap();
    let pairs: Vec<&serde_json::Value> = rows.iter().filter(|r| r["kind"] == "pairs").collect();
    let failed: Vec<&str> =
        pairs.iter().filter(|r| r["status"] == "FAIL").map(|r| r["node"].as_str().unwrap()).collect();
    assert!(failed.len() == 1 && failed[0].ends_with(":4"), "{failed:?}");
    let fix = pairs.iter().find(|r| r["status"] == "FAIL").unwrap()["fix"].as_str().unwrap();
    let evidence = format!("network of {}: ", failed[0]);
    assert!(
        fix.starts_with(&evidence) && fix.contains(" GB/s with 3 of 3 partners (1 re-paired), the pass's median "),
        "{fix}"
    );
    let job = pairs.iter().find(|r| r["node"] == "all").expect("the pass's row");
    assert_eq!(job["status"], "PASS", "{job}");
    let pass = &job["pairs"];
    assert_eq!(pass["rounds"], serde_json::json!([3, 1]), "{pass}");
    let measured = pass["pairs"].as_array().unwrap();
    assert_eq!(measured.len(), 3 + 2 + 2 + 1, "{pass}");
    assert!(measured.iter().all(|p| p["gbps"].as_f64().is_some_and(|g| g > 0.0)), "{pass}");
    // The pass drawn as a heat map of every pair, under the steps.
    let svg = dir.join("check.svg");
    let o = Command::new(env!("CARGO_BIN_EXE_qbench"))
        .args(["plot", json.to_str().unwrap(), "-o"])
        .arg(&svg)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.contains("GB/s of each pair measured, nodes in rack order"), "no pair map");
    std::fs::remove_dir_all(dir).unwrap();
}

/// `check: WIRE: N amplitudes, W wrong` of an exchange: (N, W).
fn checked(out: &str, wire: &str) -> (u64, u64) {
    let prefix = format!("check: {wire}: ");
    let line = out.lines().find_map(|l| l.strip_prefix(&prefix)).unwrap_or_else(|| panic!("no {prefix}line: {out}"));
    let n: Vec<u64> = line.split(|c: char| !c.is_ascii_digit()).filter_map(|w| w.parse().ok()).collect();
    (n[0], n[1])
}

/// compare's row of `wire`, split at its bars.
fn compare_row(out: &str, wire: &str) -> Vec<String> {
    let row = out.lines().find(|l| l.split('|').next().map(str::trim) == Some(wire));
    row.unwrap_or_else(|| panic!("no {wire} row: {out}")).split('|').map(|c| c.trim().to_string()).collect()
}

/// Every class and both circuits under both schedules across processes,
/// every amplitude checked; rank 0 alone prints, and the verdict prices the
/// one-rank run it could not measure.
#[test]
fn exchange_on_host_ranks_across_processes_checks_every_amplitude() {
    let args =
        ["exchange", "--transport", "cpu", "--qubits", "14", "-n", "2", "-w", "1", "--circuit", "qft,random:60:4"];
    for np in [2usize, 4] {
        let o = mpirun(np, &args, &[]);
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(o.status.success(), "np {np}: {out}{}", String::from_utf8_lossy(&o.stderr));
        assert!(out.contains(&format!("{np} host ranks:")), "np {np}: {out}");
        for what in ["local classes", "cpu"] {
            let (n, wrong) = checked(&out, what);
            assert!(n > 1 << 14 && wrong == 0, "np {np} {what}: {out}");
        }
        for c in ["qft", "random:60:4"] {
            for schedule in ["quest", "swap"] {
                let line = format!("{c}, {schedule} schedule over cpu");
                assert_eq!(checked(&out, &line), (1 << 14, 0), "np {np}: {out}");
            }
        }
        assert_eq!(out.matches("check: cpu:").count(), 1, "rank 0 alone prints: {out}");
        assert!(out.contains(&format!("qft(14) on {np} ranks")) && out.contains("(scaled, not"), "np {np}: {out}");
    }
}

#[test]
fn compare_on_host_memory_across_processes_checks_every_transfer() {
    for np in [2usize, 4] {
        let o = mpirun(np, &["compare", "--memory", "host", "-b", "1M", "-n", "2", "-w", "1"], &[]);
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(o.status.success(), "np {np}: {out}{}", String::from_utf8_lossy(&o.stderr));
        assert!(out.starts_with(&format!("# qbench compare: 1M per rank to its partner, {np} ranks")), "{out}");
        let cpu = compare_row(&out, "cpu");
        assert_eq!(cpu[3], "0", "np {np}: {out}");
        assert!(cpu[1].parse::<f64>().is_ok(), "np {np}: {out}");
        // The rdma wire serves host memory too: a row either way.
        compare_row(&out, "rdma");
        assert!(!out.contains("nccl"), "no GPU transport on host memory: {out}");
    }
}

#[test]
fn the_wrong_partner_and_half_fail_the_job_across_processes() {
    let args = ["exchange", "--transport", "cpu", "--qubits", "16", "-n", "1", "-w", "0"];
    for (np, fault, pattern) in [(2, "partner", "gate"), (4, "partner", "both"), (4, "half", "swap")] {
        let o = mpirun(np, &[&args[..], &["--pattern", pattern]].concat(), &[("QBENCH_CORRUPT", fault)]);
        let (out, err) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
        assert_eq!(o.status.code(), Some(1), "np {np} {fault}: {out}{err}");
        let (n, wrong) = checked(&out, "cpu");
        assert!(n > 1 << 16 && wrong > 0, "np {np} {fault}: {out}");
        let (n, wrong) = checked(&out, "qft, quest schedule over cpu");
        assert!(n == 1 << 16 && wrong > 0, "the circuit is caught too, np {np} {fault}: {out}");
        assert!(err.contains(&format!("QBENCH_CORRUPT={fault}: ")), "the fault is announced: {err}");
    }
    let o =
        mpirun(2, &["compare", "--memory", "host", "-b", "1M", "-n", "1", "-w", "0"], &[("QBENCH_CORRUPT", "partner")]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{out}{}", String::from_utf8_lossy(&o.stderr));
    assert_ne!(compare_row(&out, "cpu")[3], "0", "{out}");
}

#[test]
fn wires_that_cannot_run_here_say_why_in_one_line() {
    let qb = env!("CARGO_BIN_EXE_qbench");
    let solo = |args: &[&str]| Command::new(qb).args(args).env_remove("QBENCH_CORRUPT").output().expect("run qbench");
    // An MPI wire on host memory is a usage error, before anything starts.
    for args in [
        &["exchange", "--qubits", "12", "--transport", "mpi", "--memory", "host"][..],
        &["exchange", "--qubits", "12", "--transport", "cpu,mpi-cuda-aware", "--memory", "host"],
        &["compare", "--memory", "disk"],
    ] {
        let o = mpirun(2, args, &[]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.lines().any(|l| l.starts_with("qbench: ") && l.contains("--memory")), "{args:?}: {err}");
    }
    // Host ranks under MPI are one per process.
    let o = mpirun(2, &["exchange", "--transport", "cpu", "-g", "2", "--qubits", "12"], &[]);
    assert_eq!(o.status.code(), Some(2), "{}", String::from_utf8_lossy(&o.stderr));
    // The GPU wires need a GPU: without one, the driver's absence in one line (exit 3), not a hang.
    let gpu = std::path::Path::new("/dev/nvidia0").exists();
    for wire in ["mpi", "quest", "mpi-cuda-aware", "rdma-staged"] {
        let o = mpirun(2, &["exchange", "-g", "1", "--transport", wire, "--qubits", "12"], &[]);
        let err = String::from_utf8_lossy(&o.stderr);
        if !gpu {
            assert_eq!(o.status.code(), Some(3), "{wire}: {err}");
            assert!(err.lines().any(|l| l.contains("qbench: ") && l.contains("CUDA driver")), "{wire}: {err}");
        }
        // Alone, without MPI: the same line without a GPU; with one, the wire listed as unavailable.
        let o = solo(&["exchange", "--transport", wire, "--qubits", "12"]);
        match gpu {
            false => assert_eq!(o.status.code(), Some(3), "{wire}: {}", String::from_utf8_lossy(&o.stderr)),
            true => assert!(String::from_utf8_lossy(&o.stdout).contains(&format!("unavailable: {wire}: ")), "{wire}"),
        }
    }
    // rdma on host memory where no adapter is: listed as unavailable, with the reason, and nothing else runs.
    if !std::path::Path::new("/sys/class/infiniband").exists() {
        let o = mpirun(2, &["exchange", "--transport", "rdma", "--memory", "host", "--qubits", "12"], &[]);
        let out = String::from_utf8_lossy(&o.stdout);
        assert_eq!(o.status.code(), Some(0), "{out}{}", String::from_utf8_lossy(&o.stderr));
        assert_eq!(out.matches("unavailable: rdma: no RDMA: ").count(), 1, "{out}");
    }
}

#[test]
fn ranks_launched_with_other_settings_end_the_job_before_work() {
    // A wrapper gives rank 1 (of 3) more arguments, or another profile file,
    // as a node whose wrapper or profile drifted would.
    let dir = std::env::temp_dir().join(format!("qbench-mpi-settings-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // One relative path, p.toml, in a directory of each rank's own.
    let cpu = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/profiles/cpu.toml")).unwrap();
    for r in 0..3 {
        std::fs::create_dir_all(dir.join(format!("r{r}"))).unwrap();
        let text = if r == 1 { [&cpu[..], b"\n# drifted\n"].concat() } else { cpu.clone() };
        std::fs::write(dir.join(format!("r{r}/p.toml")), text).unwrap();
    }
    let qb = env!("CARGO_BIN_EXE_qbench");
    let cases = [
        ("-n 50", format!("{qb} allreduce --transport cpu -b 1M -e 1M $X"), "'-n'"),
        ("-e 2M", format!("{qb} allreduce --transport cpu -b 1M $X"), "'-e'"),
        ("-d double", format!("{qb} allreduce --transport cpu -b 1M -e 1M $X"), "'-d'"),
        ("--level standard", format!("{qb} check --profile cpu --quiet $X"), "'--level'"),
        (
            "",
            format!(
                "sh -c \"cd {}/r$OMPI_COMM_WORLD_RANK && exec {qb} check --quiet --profile p.toml\"",
                dir.display()
            ),
            "the contents of p.toml",
        ),
    ];
    for (extra, command, named) in cases {
        let script = format!("if [ \"$OMPI_COMM_WORLD_RANK\" = 1 ]; then X='{extra}'; else X=; fi; exec {command}");
        let t0 = std::time::Instant::now();
        let o = Command::new("timeout")
            .args(["60", "mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "3", "sh", "-c", &script])
            .env_remove("QBENCH_CORRUPT")
            .output()
            .expect("run mpirun (install openmpi-bin)");
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{extra}: {err}");
        assert!(t0.elapsed() < std::time::Duration::from_secs(20), "{extra}: {:?}", t0.elapsed());
        let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("qbench: ")).collect();
        assert_eq!(lines.len(), 1, "{extra}: one line, from rank 0: {err}");
        assert!(lines[0].contains("rank 1 on ") && lines[0].contains(named), "{extra}: {err}");
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// NCCL_TESTS_SPLIT="MOD 2" over 4 processes: two communicators of 2 ranks
/// (0 2 and 1 3) running at once, as nccl-tests runs them; the table
/// combines their times, each colour has its own table and record rows,
/// every element checked in both, the bus factor of 2 ranks; a wrong
/// element in one communicator fails the job; a process started with
/// another split is refused before any work.
#[test]
fn a_split_runs_one_communicator_per_colour_with_a_table_each() {
    let dir = std::env::temp_dir().join(format!("qbench-mpi-split-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("split.json");
    let args = ["allreduce", "--transport", "cpu", "-b", "64K", "-e", "1M", "-f", "4", "-J", json.to_str().unwrap()];
    let o = mpirun(4, &args, &[("NCCL_TESTS_SPLIT", "MOD 2")]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{out}{}", String::from_utf8_lossy(&o.stderr));
    for (rank, group) in [(0, 0), (1, 1), (2, 0), (3, 1)] {
        assert!(out.contains(&format!("#  Rank  {rank} Group  {group} ")), "{out}");
    }
    assert!(out.contains("# Group 0: ranks 0 2 on "), "{out}");
    assert!(out.contains("# Group 1: ranks 1 3 on "), "{out}");
    let table = rows(&o);
    assert_eq!(table.len(), 3 * 3, "the combined table and one per colour: {out}");
    assert_clean(&table, "split");
    for r in &table {
        let (alg, bus): (f64, f64) = (r[6].parse().unwrap(), r[7].parse().unwrap());
        assert!((bus - alg).abs() <= 0.02, "2 ranks a communicator: busbw = algbw: {r:?}");
    }
    let record: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(record["split"]["asked"], "NCCL_TESTS_SPLIT=MOD 2");
    assert_eq!(
        record["split"]["groups"],
        serde_json::json!([{"group": 0, "ranks": [0, 2]}, {"group": 1, "ranks": [1, 3]}])
    );
    for row in record["results"].as_array().unwrap() {
        let groups = row["groups"].as_array().unwrap();
        assert_eq!(groups.len(), 2);
        for g in groups {
            assert_eq!(g["out_of_place"]["wrong"], 0);
            assert_eq!(g["count"], row["count"]);
        }
    }

    let o = mpirun(4, &args[..9], &[("NCCL_TESTS_SPLIT_MASK", "0x1"), ("QBENCH_CORRUPT", "1:3")]);
    assert_eq!(o.status.code(), Some(1), "{}", String::from_utf8_lossy(&o.stderr));
    let table = rows(&o);
    // Rank 1 of each communicator (job ranks 2 and 3) delivers one wrong element.
    assert_eq!(table[0][8], "2", "{table:?}");
    assert_eq!((table[3][8].as_str(), table[6][8].as_str()), ("1", "1"), "{table:?}");

    let script = format!(
        "if [ \"$OMPI_COMM_WORLD_RANK\" = 1 ]; then export NCCL_TESTS_SPLIT='MOD 2'; fi; exec {} allreduce --transport cpu -b 1M -e 1M",
        env!("CARGO_BIN_EXE_qbench")
    );
    let o = Command::new("timeout")
        .args(["60", "mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "2", "sh", "-c", &script])
        .env_remove("QBENCH_CORRUPT")
        .env_remove("NCCL_TESTS_SPLIT")
        .output()
        .expect("run mpirun");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("rank 1 on ") && err.contains("'NCCL_TESTS_SPLIT=MOD 2'"), "{err}");
    std::fs::remove_dir_all(dir).unwrap();
}

/// A rails step across 4 processes: one row per rail, each naming its
/// ranks, judged on its own; a floor no rail meets fails both, by name.
#[test]
fn check_runs_the_collective_per_rail_and_names_each() {
    let dir = std::env::temp_dir().join(format!("qbench-mpi-rails-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let rails = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/cluster/rails.toml")).unwrap();
    // Four processes on a shared machine: any share passes here.
    let p = dir.join("rails.toml");
    std::fs::write(&p, rails.replace("floor = 0.03", "floor = 0.001")).unwrap();
    let o = mpirun(4, &["check", "--profile", p.to_str().unwrap()], &[]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{out}{}", String::from_utf8_lossy(&o.stderr));
    assert!(out.contains("all_reduce 512K per rail (rail 0: ranks 0 2 on "), "{out}");
    assert!(out.contains("all_reduce 512K per rail (rail 1: ranks 1 3 on "), "{out}");
    assert!(out.lines().last().unwrap().starts_with("qbench check: READY: 2 PASS"), "{out}");

    let p = dir.join("impossible.toml");
    std::fs::write(&p, rails.replace("metric = \"share\"\nfloor = 0.03", "metric = \"busbw\"\nfloor = 1e9")).unwrap();
    let o = mpirun(4, &["check", "--profile", p.to_str().unwrap(), "--quiet"], &[]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    let fails: Vec<&str> =
        err.lines().filter(|l| l.starts_with("qbench: check FAIL all all_reduce 512K per rail (rail ")).collect();
    assert_eq!(fails.len(), 2, "{err}");

    // One process has no rails: the step is skipped, said why.
    let o = common::qbench(&["check", "--profile", dir.join("rails.toml").to_str().unwrap()]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("one process: no rails to split (run under mpirun or srun)"), "{out}");
    std::fs::remove_dir_all(dir).unwrap();
}

/// OSU's data rows: (size, figures…), comment lines skipped.
fn osu_rows(text: &str) -> Vec<Vec<String>> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| l.split_whitespace().map(String::from).collect())
        .collect()
}

#[test]
fn osu_point_to_point_tests_print_osus_table_every_size_checked() {
    for (program, title, column) in [
        ("osu_latency", "# OSU MPI Latency Test v7.4", "# Size       Avg Latency(us)        Validation"),
        ("osu_bw", "# OSU MPI Bandwidth Test v7.4", "# Size      Bandwidth (MB/s)        Validation"),
        ("osu_bibw", "# OSU MPI Bi-Directional Bandwidth Test v7.4", "# Size      Bandwidth (MB/s)        Validation"),
    ] {
        let json = std::env::temp_dir().join(format!("qbench-{program}-{}.json", std::process::id()));
        let o = mpirun(2, &[program, "-m", "64K", "-i", "20", "-x", "2", "-c", "-J", json.to_str().unwrap()], &[]);
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(o.status.success(), "{program}: {}", String::from_utf8_lossy(&o.stderr));
        assert!(out.starts_with(&format!("\n{title} (qbench ")), "{program}: {out}");
        assert!(out.contains(&format!("# Datatype: MPI_CHAR.\n{column}\n")), "{program}: {out}");
        let rows = osu_rows(&out);
        let sizes: Vec<u64> = rows.iter().map(|r| r[0].parse().unwrap()).collect();
        assert_eq!(sizes, (0..17).map(|i| 1u64 << i).collect::<Vec<_>>(), "{program}");
        for r in &rows {
            assert!(r[1].parse::<f64>().unwrap() > 0.0, "{program}: {r:?}");
            assert_eq!(r[2], "Pass", "{program}: {r:?}");
        }
        let record: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
        assert_eq!(record["schema"], "qbench.osu.v2");
        assert_eq!(record["wrong_elements"], 0);
        assert_eq!(record["rows"].as_array().unwrap().len(), 17);
        assert_eq!(record["rows"][16]["iterations"], 20);
        // `qbench show` prints the record as the run printed it.
        let shown = std::process::Command::new(env!("CARGO_BIN_EXE_qbench")).arg("show").arg(&json).output().unwrap();
        assert!(shown.status.success(), "{program}: {}", String::from_utf8_lossy(&shown.stderr));
        assert_eq!(String::from_utf8_lossy(&shown.stdout), out, "{program}");
        let _ = std::fs::remove_file(&json);
    }
}

#[test]
fn osu_message_rate_and_allreduce_over_several_processes() {
    let o = mpirun(4, &["osu_mbw_mr", "-m", "4:1K", "-i", "10", "-W", "16"], &[]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(out.contains("# [ pairs: 2 ] [ window size: 16 ]\n"), "{out}");
    for r in osu_rows(&out) {
        let (size, mbs, rate): (f64, f64, f64) = (r[0].parse().unwrap(), r[1].parse().unwrap(), r[2].parse().unwrap());
        assert!((rate - 1e6 * mbs / size).abs() <= 0.01 * rate + 1e4, "{r:?}");
    }
    let o = mpirun(3, &["osu_allreduce", "-m", "64", "-f", "-T", "all", "-i", "20"], &[]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for t in ["MPI_CHAR", "MPI_INT", "MPI_FLOAT"] {
        assert!(out.contains(&format!("# Datatype: {t}.\n")), "{out}");
    }
    let rows = osu_rows(&out);
    // MPI_CHAR from 1 byte, MPI_INT and MPI_FLOAT from 4: 7 + 5 + 5 sizes.
    assert_eq!(rows.len(), 17, "{out}");
    for r in &rows {
        let v: Vec<f64> = r[1..4].iter().map(|x| x.parse().unwrap()).collect();
        assert!(v[1] <= v[0] + 0.01 && v[0] <= v[2] + 0.01, "min avg max {r:?}");
        assert_eq!(r[4], "20", "{r:?}");
    }
}

#[test]
fn osu_wrong_data_is_found_and_ends_the_run_with_exit_1() {
    let o = mpirun(2, &["osu_bw", "-m", "64", "-i", "5", "-c"], &[("QBENCH_CORRUPT", "1:3")]);
    let (out, err) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert_eq!(o.status.code(), Some(1), "{out}{err}");
    assert!(osu_rows(&out).iter().all(|r| r[2] == "Fail"), "{out}");
    assert!(err.contains("7 wrong elements in 7 of 7 sizes (the first at 1 B MPI_CHAR)"), "{err}");
    // The all-reduce's exact sums: one rank's flipped element is found.
    let o = mpirun(3, &["osu_allreduce", "-m", "4K", "-T", "mpi_float", "-i", "5"], &[("QBENCH_CORRUPT", "2:5")]);
    assert_eq!(o.status.code(), Some(1), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("# Data check: 11 wrong elements in 11 of 11 sizes: FAIL"));
    // Clean, the same runs pass.
    assert!(mpirun(3, &["osu_allreduce", "-m", "4K", "-T", "mpi_float", "-i", "5"], &[]).status.success());
}

#[test]
fn osu_needs_the_processes_its_test_names() {
    let o = mpirun(3, &["osu_latency", "-m", "8"], &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("osu_latency needs exactly two processes, not 3"));
    let o = mpirun(3, &["osu_mbw_mr", "-m", "8"], &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("an even number of processes (pairs), not 3"));
}

/// An error every process meets is said once, by the lowest rank, on a
/// line of its own (no rank's words spliced into another's): a process
/// count OSU's test cannot take, with the count to launch instead; a bad
/// command line; a library no node has.
#[test]
fn an_error_every_process_meets_is_said_once() {
    let once = |o: &Output, code: i32, said: &str| {
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(code), "{err}");
        assert_eq!(err.matches("qbench: ").count(), 1, "once: {err}");
        assert!(err.lines().any(|l| l.starts_with("qbench: ") && l.contains(said)), "{said}: {err}");
    };
    let o = mpirun(3, &["osu_latency", "-m", "8"], &[]);
    once(
        &o,
        2,
        "osu_latency needs exactly two processes, not 3: launch it with -np 2 (mpirun -np 2 qbench osu_latency)",
    );
    assert!(!String::from_utf8_lossy(&o.stderr).contains("start it under"));
    once(&mpirun(3, &["osu_mbw_mr", "-m", "8"], &[]), 2, "launch it with -np 4");
    once(&mpirun(3, &["allreduce", "--transport", "cpu", "-b", "1X"], &[]), 2, "invalid size '1X'");
    once(&mpirun(2, &["exchange", "--qubits", "12", "--transport", "mpi", "--memory", "host"], &[]), 2, "--memory");
    if !std::path::Path::new("/dev/nvidia0").exists() {
        once(&mpirun(3, &["allreduce", "-b", "1M", "-e", "1M"], &[]), 3, "CUDA driver");
    }
}

#[test]
fn blocking_modes_and_per_iteration_columns_span_the_processes() {
    for z in ["1", "2", "3"] {
        let o = mpirun(
            3,
            &["sendrecv", "--transport", "cpu", "-b", "1K", "-e", "64K", "-f", "8", "-z", z, "-C", "1", "-I", "1"],
            &[],
        );
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(o.status.success(), "-z {z}: {}", String::from_utf8_lossy(&o.stderr));
        assert!(out.contains("# Blocking Enabled: "), "-z {z}: {out}");
        let rows: Vec<Vec<&str>> = out
            .lines()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
            .map(|l| l.split_whitespace().collect())
            .collect();
        assert_eq!(rows.len(), 3, "-z {z}: {out}");
        for r in rows {
            assert_eq!((r.len(), r[8], r[16]), (21, "0", "N/A"), "-z {z}: {r:?}");
        }
    }
}

/// `--format nccl-tests` writes nccl-tests' -J file (version 3) with what
/// its tools/analyze_perf_json.py reads: per-iteration figures and each
/// process's series, whose maximum is `times_us`.
#[test]
fn nccl_tests_json_carries_each_process_series_for_its_straggler_analysis() {
    let json = std::env::temp_dir().join(format!("qbench-nccl-tests-json-{}.json", std::process::id()));
    let args =
        ["allreduce", "--transport", "cpu", "-b", "1K", "-e", "32K", "-f", "32", "-n", "9", "-I", "1", "-K", "1"];
    let o = mpirun(3, &[&args[..], &["--format", "nccl-tests", "-J", json.to_str().unwrap()]].concat(), &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!((v["version"].as_u64(), v["config"]["iterations"].as_u64()), (Some(3), Some(9)));
    assert_eq!(v["config"]["per_iter_skip"], 1);
    assert_eq!(v["config"]["devices"].as_array().unwrap().len(), 3);
    assert_eq!(v["out_of_bounds"]["okay"], true);
    let results = v["results"].as_array().unwrap();
    assert_eq!(results.len(), 2);
    for r in results {
        assert_eq!(r["root"], "    -1");
        for key in ["out_of_place", "in_place"] {
            assert_eq!(r[key]["nwrong"], 0, "{r}");
            let p = &r[format!("{key}_per_iter")];
            let times: Vec<f64> = p["times_us"].as_array().unwrap().iter().map(|t| t.as_f64().unwrap()).collect();
            let rows = p["per_process_max_times_us"].as_array().unwrap();
            assert_eq!((times.len(), rows.len()), (9, 3), "{p}");
            for (i, t) in times.iter().enumerate() {
                let most = rows.iter().map(|row| row[i].as_f64().unwrap()).fold(0.0, f64::max);
                assert!((t - most).abs() <= 1e-9 * t.max(1.0), "{p}");
            }
            assert!(p["min_us"].as_f64() <= p["p99_us"].as_f64() && p["cv_pct"].as_f64().unwrap() >= 0.0, "{p}");
        }
    }
    let _ = std::fs::remove_file(&json);
}

/// alltoallv under a traffic matrix across three processes: every type
/// checked, each rank as far as it receives.
#[test]
fn alltoallv_follows_a_traffic_matrix_across_processes() {
    let dir = std::env::temp_dir().join(format!("qbench-mpi-matrix-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("traffic.txt");
    std::fs::write(&file, "0 100 200\n300 0 50\n16 32 0\n").unwrap();
    let env = [("NCCL_TESTS_ALLTOALLV_MATRIX_FILE", file.to_str().unwrap())];
    let o = mpirun(3, &["alltoallv", "--transport", "cpu", "-b", "1K", "-e", "1K", "-d", "all"], &env);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let table = rows(&o);
    assert_eq!(table.len(), 12);
    assert!(table.iter().all(|r| r[0] == "336" && r[1] == "0"), "{table:?}");
    assert_clean(&table, "alltoallv under a matrix");
    std::fs::remove_dir_all(&dir).unwrap();
}
