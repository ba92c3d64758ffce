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
