//! What only a terminal sees: tables wrapped to the terminal's width.
//! Pipes and files keep their full lines, whatever COLUMNS says. The
//! terminal cases run qbench under script(1)'s pseudo-terminal and are
//! skipped where there is no script.

use std::path::Path;
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_qbench");
const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/probe/mlx5-roce");

fn qbench(args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(BIN).args(args).envs(env.iter().copied()).env_remove("QBENCH_CORRUPT").output().expect("run qbench")
}

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
fn pipes_keep_full_lines_whatever_columns_says() {
    for args in [vec!["probe", "--sysfs-root", FIXTURE], vec!["copy", "--list"]] {
        let plain = qbench(&args, &[]);
        let narrow = qbench(&args, &[("COLUMNS", "60")]);
        assert_eq!(plain.stdout, narrow.stdout, "{args:?}");
        let widest = String::from_utf8_lossy(&plain.stdout).lines().map(|l| l.chars().count()).max().unwrap();
        assert!(widest > 120, "{args:?}: the full lines are wide ({widest})");
    }
}

#[test]
fn a_terminal_gets_text_that_fits_its_width() {
    for args in [vec!["probe", "--sysfs-root", FIXTURE], vec!["copy", "--list"]] {
        for width in [80usize, 100] {
            let w = width.to_string();
            let Some(shown) = on_terminal(&args, &[("COLUMNS", &w)]) else { return };
            let widest = shown.lines().map(|l| l.chars().count()).max().unwrap();
            assert!(widest <= width, "{args:?} at {width} columns: a line of {widest}:\n{shown}");
            assert!(shown.contains(if args[0] == "probe" { "Verdict" } else { "peer_ce_write" }), "{shown}");
        }
    }
}
