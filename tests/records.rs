//! Records read back: every qbench record of the GPU machines' runs
//! (results/h200x2/, results/h200/; written by the first schema) parses
//! into its record type, survives a round trip through JSON unchanged, and
//! renders to exactly the text the run printed (tests/golden/). The
//! cpu-transport fixtures there were written by the qbench before the
//! pipeline, and the rdma fixtures (soft-RoCE VM) by the qbench before rdma
//! joined it (tests/golden/README.md), so the tables are the same before
//! and after.

use qbench::record::{self, AnyRecord};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The files under `dir`, its folders' included.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .flat_map(|p| if p.is_dir() { files_under(&p) } else { vec![p] })
        .collect()
}

/// Every qbench record among the JSON files under a folder.
fn records_in(dir: &Path) -> Vec<(PathBuf, AnyRecord)> {
    let mut out = Vec::new();
    let mut files = files_under(dir);
    files.sort();
    for path in files.into_iter().filter(|p| p.extension().is_some_and(|e| e == "json")) {
        let text = std::fs::read_to_string(&path).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let schema = v["schema"].as_str().unwrap_or("");
        // The probe report and the reference scripts' figures (PyTorch,
        // nccl-tests, CUDA harnesses) are not run records.
        if schema.starts_with("qbench.probe") || schema.starts_with("qbench.ref.") || !schema.starts_with("qbench.") {
            continue;
        }
        let rec = record::parse(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        out.push((path, rec));
    }
    out
}

fn round_trip(rec: &AnyRecord) -> AnyRecord {
    let json = match rec {
        AnyRecord::Collective(r) => serde_json::to_string(r),
        AnyRecord::Exchange(r) => serde_json::to_string(r),
        AnyRecord::Compare(r) => serde_json::to_string(r),
        AnyRecord::Copy(r) => serde_json::to_string(r),
        AnyRecord::Check(r) => serde_json::to_string(r),
        AnyRecord::Rdma(r) => serde_json::to_string(r),
        AnyRecord::Osu(r) => serde_json::to_string(r),
    }
    .unwrap();
    record::parse(&json).unwrap()
}

fn same(a: &AnyRecord, b: &AnyRecord) -> bool {
    match (a, b) {
        (AnyRecord::Collective(x), AnyRecord::Collective(y)) => x == y,
        (AnyRecord::Exchange(x), AnyRecord::Exchange(y)) => x == y,
        (AnyRecord::Compare(x), AnyRecord::Compare(y)) => x == y,
        (AnyRecord::Copy(x), AnyRecord::Copy(y)) => x == y,
        (AnyRecord::Check(x), AnyRecord::Check(y)) => x == y,
        (AnyRecord::Rdma(x), AnyRecord::Rdma(y)) => x == y,
        (AnyRecord::Osu(x), AnyRecord::Osu(y)) => x == y,
        _ => false,
    }
}

#[test]
fn every_committed_result_reads_back_and_round_trips() {
    let recs: Vec<_> = ["results/h200x2", "results/h200"].iter().flat_map(|d| records_in(&root().join(d))).collect();
    assert!(recs.len() >= 15, "{} records", recs.len());
    for (path, rec) in &recs {
        assert!(same(rec, &round_trip(rec)), "{} changed in a round trip", path.display());
        assert!(rec.header().complete, "{}", path.display());
        assert_eq!(rec.header().fault, None, "{}", path.display());
    }
}

/// The records of a run render to the text that run printed.
#[test]
fn records_render_to_the_text_their_run_printed() {
    let golden = root().join("tests/golden");
    let pairs = [
        ("results/h200x2/h200x2-compare-1G.json", "h200x2-compare-1G.txt"),
        ("results/h200x2/h200x2-exchange-33q-double.json", "h200x2-exchange-33q-double.txt"),
        ("results/h200x2/h200x2-copy.json", "h200x2-copy.txt"),
    ];
    let mut checked = 0;
    for (json, text) in pairs.iter().map(|(j, t)| (root().join(j), golden.join(t))).chain(fixtures(&golden)) {
        let rec = record::read(&json).unwrap();
        let want = std::fs::read_to_string(&text).unwrap();
        let got = qbench::report::render_any(&rec);
        for (i, (g, w)) in got.lines().zip(want.lines()).enumerate() {
            assert_eq!(g, w, "{} line {}", text.display(), i + 1);
        }
        assert_eq!(got, want, "{}", text.display());
        checked += 1;
    }
    assert!(checked >= 15, "{checked} renderings checked");
    // `qbench show` prints the same text from the file.
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_qbench"))
        .args(["show", root().join("results/h200x2/h200x2-compare-1G.json").to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success());
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        std::fs::read_to_string(golden.join("h200x2-compare-1G.txt")).unwrap()
    );
    let o =
        std::process::Command::new(env!("CARGO_BIN_EXE_qbench")).args(["show", "/nonexistent.json"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
}

/// (JSON, text) pairs of the fixtures of earlier qbench versions: the cpu
/// transport's, and rdma's.
fn fixtures(golden: &Path) -> Vec<(PathBuf, PathBuf)> {
    ["cpu", "rdma"]
        .iter()
        .flat_map(|d| records_in(&golden.join(d)))
        .map(|(p, _)| (p.clone(), p.with_extension("txt")))
        .collect()
}

/// What `qbench show FILE` prints; it must succeed.
fn show(path: &Path) -> String {
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_qbench")).arg("show").arg(path).output().unwrap();
    assert!(o.status.success(), "show {}: {}", path.display(), String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// What a run writes with -J now reads back into its record type, and
/// `qbench show` prints it as the run did: every kind of record qbench
/// writes.
#[test]
fn json_written_by_each_command_reads_back() {
    let dir = std::env::temp_dir().join(format!("qbench-records-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let runs: [(&str, &[&str]); 4] = [
        ("collective", &["allreduce", "--transport", "cpu", "-g", "2", "-b", "1K", "-e", "4K", "-f", "2"]),
        ("exchange", &["exchange", "--transport", "cpu", "-g", "2", "--qubits", "8", "-n", "1"]),
        ("sendrecv", &["sendrecv", "--transport", "cpu", "-g", "3", "-b", "8", "-e", "64", "-f", "8", "-o", "all"]),
        ("check", &["check", "--profile", "cpu", "--level", "prolog"]),
    ];
    for (name, args) in runs {
        let path = dir.join(format!("{name}.json"));
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_qbench"))
            .args(args)
            .arg("-J")
            .arg(&path)
            .env_remove("QBENCH_CORRUPT")
            .output()
            .unwrap();
        assert!(o.status.success(), "{name}: {}", String::from_utf8_lossy(&o.stderr));
        let rec = record::read(&path).unwrap();
        let kind = match name {
            "exchange" | "check" => name,
            _ => "collective",
        };
        assert_eq!(rec.header().schema, format!("qbench.{kind}.v2"));
        assert!(same(&rec, &round_trip(&rec)));
        // The table printed is the table the record renders, and `show` prints.
        assert_eq!(String::from_utf8_lossy(&o.stdout), qbench::report::render_any(&rec), "{name}");
        assert_eq!(show(&path), String::from_utf8_lossy(&o.stdout), "{name}");
    }
    // The records of the GPU and RDMA machines' runs too: copy, rdma,
    // compare, check (osu's: tests/mpi.rs, under mpirun).
    let mut kinds = Vec::new();
    let committed = ["results/h200x2", "results/h200"].iter().flat_map(|d| records_in(&root().join(d)));
    for (path, rec) in committed.chain(records_in(&root().join("tests/golden/rdma"))) {
        assert_eq!(show(&path), qbench::report::render_any(&rec), "{}", path.display());
        kinds.push(rec.header().schema.clone());
    }
    for kind in ["copy", "rdma", "compare", "check", "collective", "exchange"] {
        assert!(kinds.iter().any(|k| k.starts_with(&format!("qbench.{kind}."))), "no {kind} record shown: {kinds:?}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
