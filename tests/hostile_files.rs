//! Hostile input end to end: files that are no files or far too large,
//! OpenQASM that would exhaust the stack or expand without end, indices
//! and counts past every limit. Each is one line and exit 2, fast: every
//! command runs under `timeout`, so that a hang fails instead of blocking.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// qbench with `args` and `env`, killed after 60 s (exit 124: a hang).
fn bounded(args: &[&str], env: &[(&str, &str)]) -> Output {
    let o = Command::new("timeout")
        .args(["-k", "5", "60", common::BIN])
        .args(args)
        .env_remove("QBENCH_CORRUPT")
        .envs(env.iter().copied())
        .output()
        .expect("run qbench under timeout");
    assert_ne!(o.status.code(), Some(124), "{args:?} hung: {}", common::stderr(&o));
    o
}

/// A scratch folder of this test's own.
fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("qbench-hostile-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A FIFO at `path` (mkfifo(1): no writer ever opens it).
fn fifo(path: &Path) {
    let ok = Command::new("mkfifo").arg(path).status().unwrap().success();
    assert!(ok, "mkfifo {}", path.display());
}

/// One line, exit 2, containing `want`.
fn refused(o: &Output, want: &str) {
    let err = common::one_line_error(o, 2);
    assert!(err.contains(want), "wanted {want:?}: {err}");
}

/// An exchange of the circuit `path` on 3 qubits over 2 host ranks.
fn circuit(path: &str) -> Output {
    bounded(&["exchange", "--transport", "cpu", "--qubits", "3", "-g", "2", "-n", "1", "--circuit", path], &[])
}

#[test]
fn a_circuit_that_is_no_regular_file_or_too_large_is_refused_unread() {
    let d = scratch("circuit");
    let pipe = d.join("pipe.qasm");
    fifo(&pipe);
    refused(&circuit(pipe.to_str().unwrap()), "not a regular file (a FIFO)");
    let folder = d.join("folder.qasm");
    std::fs::create_dir(&folder).unwrap();
    refused(&circuit(folder.to_str().unwrap()), "not a regular file (a directory)");
    let big = d.join("big.qasm");
    std::fs::write(&big, vec![b' '; 20 << 20]).unwrap();
    refused(&circuit(big.to_str().unwrap()), "larger than the 16 MiB");
    // A device is not taken for a circuit at all.
    refused(&circuit("/dev/zero"), "/dev/zero");
    std::fs::remove_dir_all(d).unwrap();
}

#[test]
fn a_traffic_matrix_that_is_no_regular_file_or_too_large_is_refused_unread() {
    let d = scratch("matrix");
    let pipe = d.join("pipe");
    fifo(&pipe);
    let folder = d.join("folder");
    std::fs::create_dir(&folder).unwrap();
    let big = d.join("big");
    std::fs::write(&big, "1 ".repeat(10 << 20)).unwrap();
    for (file, want) in [
        (pipe.to_str().unwrap(), "not a regular file (a FIFO)"),
        ("/dev/zero", "not a regular file (a device)"),
        (folder.to_str().unwrap(), "not a regular file (a directory)"),
        (big.to_str().unwrap(), "20971520 bytes is larger than the 16 MiB"),
    ] {
        let o = bounded(
            &["alltoallv", "--transport", "cpu", "-g", "2", "-b", "1K", "-e", "1K"],
            &[("NCCL_TESTS_ALLTOALLV_MATRIX_FILE", file)],
        );
        refused(&o, &format!("cannot read NCCL_TESTS_ALLTOALLV_MATRIX_FILE={file}: {want}"));
    }
    std::fs::remove_dir_all(d).unwrap();
}

/// A file of `body` after the usual header and a 2-qubit register.
fn qasm(d: &Path, name: &str, body: &str) -> String {
    let p = d.join(name);
    std::fs::write(&p, format!("OPENQASM 2.0;\ninclude \"qelib1.inc\";\nqreg q[2];\n{body}")).unwrap();
    p.to_str().unwrap().to_string()
}

#[test]
fn hostile_openqasm_is_one_line_at_its_line() {
    let d = scratch("qasm");
    let deep = 100_000;
    let mut doubling = String::from("gate g0 a { x a; }\n");
    for k in 1..=30 {
        doubling += &format!("gate g{k} a {{ g{} a; g{} a; }}\n", k - 1, k - 1);
    }
    doubling += "g30 q[0];\n";
    let mut chain = String::from("gate c0 a { x a; }\n");
    for k in 1..=100 {
        chain += &format!("gate c{k} a {{ c{} a; }}\n", k - 1);
    }
    chain += "c100 q[0];\n";
    for (name, body, want) in [
        ("parens.qasm", format!("rz({}1{}) q[0];\n", "(".repeat(deep), ")".repeat(deep)), ":4: an expression of more"),
        ("minus.qasm", format!("rz({}1) q[0];\n", "-".repeat(deep)), ":4: an expression of more than 256 tokens"),
        ("doubling.qasm", doubling, ":35: the circuit expands to more than 1000000 gates"),
        ("chain.qasm", chain, ":105: gate definitions nest more than 64 deep ('c36' at line 41)"),
        ("wrapped.qasm", "h q[4294967296];\n".into(), ":4: qubit q[4294967296] is out of range: q has 2"),
        ("huge.qasm", "qreg r[4294967296];\n".into(), ":4: qreg r[4294967296] makes 4294967298 qubits"),
        ("nan.qasm", "rz(0/0) q[0];\n".into(), ":4: parameter 1 of 'rz' is not a number"),
        ("inf.qasm", "rz(1e400) q[0];\n".into(), ":4: parameter 1 of 'rz' is infinite"),
        ("twice.qasm", "qreg q[1];\n".into(), ":4: a register named 'q' is declared already"),
        ("shadow.qasm", "gate h a { x a; }\nh q[0];\n".into(), ":4: gate 'h' is defined already"),
    ] {
        let p = qasm(&d, name, &body);
        let started = std::time::Instant::now();
        refused(&circuit(&p), &format!("{name}{want}"));
        assert!(started.elapsed().as_secs() < 30, "{name}: {:?}", started.elapsed());
    }
    std::fs::remove_dir_all(d).unwrap();
}

/// A file's circuit runs mirrored and the table says so; the `measure`
/// and `barrier` it skips are said once, on stderr.
#[test]
fn a_files_mirror_and_its_skipped_measures_are_said() {
    let d = scratch("said");
    let p = qasm(&d, "bell.qasm", "qreg r[1];\ncreg c[2];\nh q[0];\nbarrier q;\ncx q[0],q[1];\nmeasure q -> c;\n");
    let o = bounded(&["exchange", "--transport", "cpu", "--qubits", "3", "-g", "2", "-n", "1", "--circuit", &p], &[]);
    let err = common::stderr(&o);
    assert!(o.status.success(), "{err}");
    let skipped: Vec<&str> = err.lines().filter(|l| l.contains("skipped")).collect();
    assert_eq!(
        skipped,
        [format!("qbench: {p}: 1 measure and 1 barrier skipped: the register runs the circuit's unitary part")]
    );
    assert!(common::stdout(&o).contains("2×2"), "{}", common::stdout(&o));
    std::fs::remove_dir_all(d).unwrap();
}

/// Counts past what a process can hold are refused before anything is
/// built or started: host ranks past 1024, an OSU window past 65536, a
/// register of 59 qubits (whose buffers pass 2^64 bytes) said in its true
/// size, a traffic matrix past memory.
#[test]
fn counts_past_every_limit_are_refused_with_their_limit() {
    let exchange = |extra: &[&str]| bounded(&[&["exchange", "--transport", "cpu", "-n", "1"][..], extra].concat(), &[]);
    refused(
        &exchange(&["--qubits", "20", "-g", "32768"]),
        "-g 32768: host ranks run as threads of this process, at most 1024",
    );
    refused(&exchange(&["--qubits", "2..4294967295"]), "past any machine");
    refused(&exchange(&["--qubits", "60"]), "at most 59 qubits");
    // 59 qubits as 58: missing hardware, with the bytes it needs.
    let err = common::one_line_error(&exchange(&["--qubits", "59", "-g", "1"]), 3);
    assert!(err.contains("needs 2 × 8388608T of host memory"), "{err}");
    refused(&bounded(&["osu_bw", "-W", "4294967295"], &[]), "-W 4294967295: at most 65536 messages in flight");
    let d = scratch("counts");
    let m = d.join("petabyte");
    std::fs::write(&m, "0 1e15\n1e15 0\n").unwrap();
    let o = bounded(
        &[
            "alltoallv",
            "--transport",
            "cpu",
            "-g",
            "2",
            "-b",
            "1000000000000000",
            "-e",
            "1000000000000000",
            "-n",
            "1",
            "-w",
            "0",
        ],
        &[("NCCL_TESTS_ALLTOALLV_MATRIX_FILE", m.to_str().unwrap())],
    );
    refused(&o, "alltoallv needs larger buffers than the");
    std::fs::remove_dir_all(d).unwrap();
}
