//! What only a terminal sees: progress on stderr while a run works, and
//! tables wrapped to the terminal's width. Pipes and files get neither:
//! stderr holds no progress, and the text is the same whatever COLUMNS
//! says. The terminal cases run qbench under script(1)'s pseudo-terminal
//! and are skipped where there is no script.

mod common;

use common::{BIN, qbench_with};
use std::path::Path;
use std::process::Command;

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/probe/mlx5-roce");
const SWEEP: [&str; 12] = ["all_reduce", "--transport", "cpu", "-g", "2", "-b", "1K", "-e", "4M", "-f", "4", "-n"];

/// qbench with stdin, stdout and stderr on a pseudo-terminal; what the
/// terminal received, or None where script(1) is missing.
fn on_terminal(args: &[&str], env: &[(&str, &str)]) -> Option<String> {
    if !Path::new("/usr/bin/script").exists() {
        eprintln!("no /usr/bin/script: terminal case skipped");
        return None;
    }
    let line = std::iter::once(BIN).chain(args.iter().copied()).collect::<Vec<_>>().join(" ");
    let o = Command::new("/usr/bin/script")
        .args(["-qec", &line, "/dev/null"])
        .envs(env.iter().copied())
        .env_remove("QBENCH_CORRUPT")
        .output()
        .expect("run script");
    assert!(o.status.success(), "{line}: {}", String::from_utf8_lossy(&o.stdout));
    Some(String::from_utf8_lossy(&o.stdout).replace('\r', ""))
}

#[test]
fn no_progress_when_stderr_is_not_a_terminal() {
    let mut args = SWEEP.to_vec();
    args.push("2");
    let o = qbench_with(&args, &[]);
    assert!(o.status.success());
    assert!(o.stderr.is_empty(), "stderr: {:?}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(!out.contains('\u{1b}') && !out.contains(" sizes"), "{out}");
}

#[test]
fn progress_on_a_terminal_and_quiet_turns_it_off() {
    let mut args = SWEEP.to_vec();
    args.push("2");
    let Some(shown) = on_terminal(&args, &[]) else { return };
    assert!(shown.contains("sizes") && shown.contains("all_reduce"), "{shown}");
    // The table is whole: every size has its row once the progress line is cleared.
    let screen: Vec<&str> = shown.lines().map(|l| l.rsplit("\u{1b}[2K").next().unwrap_or(l)).collect();
    for size in ["1024", "4096", "65536", "4194304"] {
        assert!(screen.iter().any(|l| l.trim_start().starts_with(size)), "no row {size}: {shown}");
    }
    args.push("--quiet");
    let quiet = on_terminal(&args, &[]).unwrap();
    assert!(!quiet.contains(" sizes") && !quiet.contains('\u{1b}'), "{quiet}");
}

#[test]
fn pipes_keep_full_lines_whatever_columns_says() {
    for args in [vec!["probe", "--sysfs-root", FIXTURE], vec!["copy", "--list"]] {
        let plain = qbench_with(&args, &[]);
        let narrow = qbench_with(&args, &[("COLUMNS", "60")]);
        assert_eq!(plain.stdout, narrow.stdout, "{args:?}");
        let widest = String::from_utf8_lossy(&plain.stdout).lines().map(|l| l.chars().count()).max().unwrap();
        assert!(widest > 120, "{args:?}: the full lines are wide ({widest})");
    }
}

/// What a terminal shows of its lines: each line as it is left once the
/// progress drawn on it was cleared.
fn screen(shown: &str) -> Vec<&str> {
    shown.lines().map(|l| l.rsplit("\u{1b}[2K").next().unwrap_or(l)).collect()
}

/// No line of what the terminal received is wider than it.
fn assert_fits(what: &str, shown: &str, width: usize) {
    for line in screen(shown) {
        let n = line.chars().count();
        assert!(n <= width, "{what} at {width} columns: a line of {n}:\n{line}\n{shown}");
    }
}

#[test]
fn a_terminal_gets_text_that_fits_its_width() {
    for args in [vec!["probe", "--sysfs-root", FIXTURE], vec!["copy", "--list"]] {
        for width in [80usize, 200] {
            let w = width.to_string();
            let Some(shown) = on_terminal(&args, &[("COLUMNS", &w)]) else { return };
            assert_fits(&args.join(" "), &shown, width);
            assert!(shown.contains(if args[0] == "probe" { "Verdict" } else { "peer_ce_write" }), "{shown}");
        }
    }
}

/// The records of copy (the H200 pair's sweep and latencies) and rdma (the
/// soft-RoCE fixtures), shown at 80 and 200 columns: every line fits; at
/// 200 columns rdma's are perftest's lines, as a pipe gets them.
#[test]
fn copy_and_rdma_tables_fit_80_and_200_columns() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut records: Vec<_> =
        ["results/h200x2/h200x2-copy.json", "results/h200x2/h200x2-copy-latency.json"].map(|p| root.join(p)).into();
    let rdma = root.join("tests/golden/rdma");
    let mut fixtures: Vec<_> = std::fs::read_dir(&rdma).unwrap().map(|e| e.unwrap().path()).collect();
    fixtures.retain(|p| p.extension().is_some_and(|e| e == "json"));
    fixtures.sort();
    assert!(fixtures.len() >= 7);
    records.extend(fixtures);
    for file in &records {
        let path = file.to_str().unwrap();
        let piped = String::from_utf8(qbench_with(&["show", path], &[]).stdout).unwrap();
        for width in [80usize, 200] {
            let Some(shown) = on_terminal(&["show", path], &[("COLUMNS", &width.to_string())]) else { return };
            assert_fits(path, &shown, width);
            if width == 200 && path.contains("rdma") {
                assert_eq!(shown, piped, "{path}");
            }
        }
    }
}

/// check at the standard level on this machine (the cpu profile: its pairs
/// step SKIPs, one process): the table fits 80 columns with the verdict
/// under it, the SKIP's reason said once under the verdict and never in
/// the table, so that it does not widen the measured column; its record
/// shown at 200 columns fits too and is the run's text.
#[test]
fn check_fits_80_and_200_columns_its_skips_said_under_the_verdict() {
    let json = std::env::temp_dir().join(format!("qbench-terminal-check-{}.json", std::process::id()));
    let j = json.to_str().unwrap();
    let args = ["check", "--profile", "cpu", "--level", "standard", "-J", j];
    let Some(shown) = on_terminal(&args, &[("COLUMNS", "80")]) else { return };
    assert_fits("check", &shown, 80);
    let lines = screen(&shown);
    let verdict = lines.iter().position(|l| l.starts_with("qbench check: READY")).unwrap_or_else(|| panic!("{shown}"));
    let skip = lines.iter().position(|l| l.starts_with("  SKIP node pairs, MPI sendrecv 1M: one process")).unwrap();
    assert!(skip > verdict, "{shown}");
    let table: Vec<&&str> = lines.iter().filter(|l| l.contains(" | ")).collect();
    assert!(table.iter().any(|l| l.contains("SKIP")), "{shown}");
    assert!(!table.iter().any(|l| l.contains("no pair") || l.contains("mpirun")), "{shown}");
    let wide = on_terminal(&["show", j], &[("COLUMNS", "200")]).unwrap();
    assert_fits("check's record", &wide, 200);
    let header = screen(&wide).into_iter().find(|l| l.starts_with(" step ")).unwrap();
    assert!(header.chars().count() < 120, "the SKIP widened the table:\n{wide}");
    let piped = String::from_utf8(qbench_with(&["show", j], &[]).stdout).unwrap();
    assert_eq!(wide, piped);
    let _ = std::fs::remove_file(&json);
}
