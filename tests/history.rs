//! `check --history DIR` and `show --history DIR` as a fleet uses them:
//! each run appends a line per node, `show` prints every step's trend on
//! every node, a step that loses a fifth over ten runs is flagged while
//! its floor is still below it, and a flat history is not.

mod common;

use common::{one_line_error, stderr, stdout};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Output;

/// qbench with a clean environment: no launcher variables, no GPU.
fn qbench(args: &[&str]) -> Output {
    common::bare(args)
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("qbench-hist-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The one history file a run of one process leaves in `dir`, as lines.
fn lines_in(dir: &Path) -> Vec<Value> {
    let files: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let text = std::fs::read_to_string(&files[0]).unwrap();
    text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// A prolog check of the cpu profile with `--history`, the line it appended.
fn one_run(dir: &Path) -> Value {
    let o = qbench(&["check", "--profile", "cpu", "--level", "prolog", "--history", dir.to_str().unwrap()]);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    lines_in(dir).pop().unwrap()
}

/// `runs` lines made from `template`, step `drifting` (if any) measured at
/// 1 − 0.2·i/9 of its figure in run i (a fifth lost over ten runs), every
/// step within ±2% of that; each step's floor at 0.75 of its figure,
/// never crossed.
fn write_history(dir: &Path, template: &Value, runs: usize, drifting: Option<&str>) {
    let wobble = [0.3, -0.9, 0.6, -0.2, 1.0, -0.7, 0.1, -1.0, 0.8, -0.4];
    let mut text = String::new();
    for i in 0..runs {
        let mut line = template.clone();
        for row in line["rows"].as_array_mut().unwrap() {
            let Some(m) = row["measured"].as_f64() else { continue };
            let trend = if Some(row["step"].as_str().unwrap()) == drifting { 1.0 - 0.2 * i as f64 / 9.0 } else { 1.0 };
            row["measured"] = (m * trend * (1.0 + 0.02 * wobble[i % wobble.len()])).into();
            row["floor"] = (m * 0.75).into();
            row["status"] = "PASS".into();
        }
        text.push_str(&serde_json::to_string(&line).unwrap());
        text.push('\n');
    }
    std::fs::write(dir.join("qn7.jsonl"), text).unwrap();
}

#[test]
fn every_run_appends_a_line_that_show_reads_back() {
    let dir = scratch("runs");
    one_run(&dir);
    let line = one_run(&dir);
    assert_eq!(lines_in(&dir).len(), 2);
    assert_eq!((line["schema"].as_str(), line["level"].as_str()), (Some("qbench.check.v2"), Some("prolog")));
    assert_eq!(line["verdict"]["ready"], true);
    let o = qbench(&["show", "--history", dir.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.lines().nth(1).unwrap().starts_with("qbench history: 0 of 3 trends flagged"), "{out}");
    for step in ["all_reduce 16M, host ranks", "sendrecv 16M, host ranks", "exchange 16 qubits, host ranks"] {
        assert!(out.contains(&format!("\n{step}, GB/s, drift beyond 5% flagged\n")), "{out}");
    }
    // Every line but the head, which names the directory, fits 80 columns.
    assert!(out.lines().skip(1).all(|l| l.chars().count() <= 80), "{out}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_fifth_lost_over_ten_runs_is_flagged_before_the_floor_and_a_flat_history_is_not() {
    let dir = scratch("drift");
    let template = one_run(&dir);
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::create_dir_all(&dir).unwrap();
    let show = || {
        let o = qbench(&["show", "--history", dir.to_str().unwrap()]);
        assert!(o.status.success(), "{}", stderr(&o));
        stdout(&o)
    };

    write_history(&dir, &template, 10, Some("sendrecv 16M, host ranks"));
    let out = show();
    let answer: Vec<&str> = out.lines().skip(1).take(2).collect();
    assert!(answer[0].starts_with("qbench history: 1 of 3 trends flagged"), "{out}");
    assert!(answer[1].starts_with("qbench history: DRIFT qn7 sendrecv 16M, host ranks: "), "{out}");
    assert!(answer[1].contains("worse over 10 runs (its tolerance 5%)"), "{out}");
    // The drifting step's table comes first, its row flagged.
    let table = out.split("\n\n").nth(1).unwrap();
    assert!(table.starts_with("sendrecv 16M, host ranks, GB/s"), "{out}");
    assert!(table.lines().any(|l| l.starts_with(" qn7 ") && l.trim_end().ends_with("| DRIFT")), "{out}");

    // Halfway, 9% lost and the floor far below: flagged already.
    write_history(&dir, &template, 5, Some("sendrecv 16M, host ranks"));
    let out = show();
    assert!(out.lines().nth(2).unwrap().starts_with("qbench history: DRIFT qn7 sendrecv 16M"), "{out}");

    write_history(&dir, &template, 10, None);
    let out = show();
    assert!(out.lines().nth(1).unwrap().starts_with("qbench history: 0 of 3 trends flagged"), "{out}");
    assert!(!out.contains("DRIFT"), "{out}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn history_paths_that_cannot_serve_are_one_line() {
    let dir = scratch("bad");
    let file = dir.join("a-file");
    std::fs::write(&file, "").unwrap();
    // A directory that cannot be made: refused before anything is measured.
    let o = qbench(&["check", "--profile", "cpu", "--history", file.join("h").to_str().unwrap()]);
    assert!(one_line_error(&o, 2).contains("--history"), "{}", stderr(&o));
    // No history to show.
    let o = qbench(&["show", "--history", dir.to_str().unwrap()]);
    assert!(one_line_error(&o, 2).contains("no history here"), "{}", stderr(&o));
    let o = qbench(&["show", "--history", dir.join("none").to_str().unwrap()]);
    one_line_error(&o, 2);
    // --last below what a trend needs, and a record file beside --history.
    assert_eq!(qbench(&["show", "--history", dir.to_str().unwrap(), "--last", "2"]).status.code(), Some(2));
    assert_eq!(qbench(&["show", "--history", dir.to_str().unwrap(), "x.json"]).status.code(), Some(2));
    std::fs::remove_dir_all(dir).unwrap();
}

/// A FIFO in the place of this node's history (nothing reading it) is
/// refused before the check measures, where opening it to write would
/// wait for a reader forever.
#[test]
fn a_fifo_for_a_history_is_refused_not_waited_on() {
    let dir = scratch("fifo");
    let o = qbench(&["check", "--profile", "cpu", "--level", "prolog", "--history", dir.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let mine = std::fs::read_dir(&dir).unwrap().next().unwrap().unwrap().path();
    std::fs::remove_file(&mine).unwrap();
    assert!(std::process::Command::new("mkfifo").arg(&mine).status().unwrap().success());
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_qbench"))
        .args(["check", "--profile", "cpu", "--level", "prolog", "--history", dir.to_str().unwrap()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > std::time::Duration::from_secs(60) {
            child.kill().unwrap();
            panic!("qbench waited on the FIFO for a minute");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(2), "{err}");
    assert!(err.contains("a FIFO, not a regular file") && err.lines().count() == 1, "{err}");
    std::fs::remove_dir_all(dir).unwrap();
}
