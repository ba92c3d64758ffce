//! `qbench check --init` on this machine, then ten checks against the
//! profile it wrote: alone in its test binary, since the bounds it writes
//! are this machine's spread measured with nothing else running, and the
//! other check tests running beside it would move the figures.

mod common;

use common::{check, json, stderr, stdout};
use std::path::{Path, PathBuf};

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("qbench-check-init-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The cpu profile's steps made short (1M collectives, 5 operations a
/// sample): the same paths in a second or two, for checks run many times.
fn small_cpu_profile(dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(repo().join("profiles/cpu.toml")).unwrap();
    let small = text.replace("size = \"16M\"", "size = \"1M\"").replace("iters = 20", "iters = 5");
    let small = small.replace("name = \"cpu\"", "name = \"small\"");
    assert!(small.matches("size = \"1M\"").count() >= 2 && small.matches("iters = 5").count() >= 3, "{small}");
    let p = dir.join("small.toml");
    std::fs::write(&p, small).unwrap();
    p
}

/// `--init` writes a profile of what this node measured, says so in one
/// line even with --quiet, and its bounds leave room for the node's own
/// spread: ten checks against it right after are all READY, no step FAILs.
#[test]
fn init_writes_a_profile_the_node_passes_ten_times_running() {
    let dir = scratch("init");
    let (small, p) = (small_cpu_profile(&dir), dir.join("mine.toml"));
    let o = check(&["--profile", small.to_str().unwrap(), "--init", p.to_str().unwrap()]);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains(&format!("written to {}", p.display())), "it says what it wrote: {}", stdout(&o));
    // Again, quiet and replacing it: one line, on stderr, nothing on stdout.
    // Nine samples a step, so that the profile sees this machine's spread.
    let o = check(&[
        "--profile",
        small.to_str().unwrap(),
        "--init",
        p.to_str().unwrap(),
        "--force",
        "--quiet",
        "--samples",
        "9",
    ]);
    assert!(o.status.success() && stdout(&o).is_empty(), "{}{}", stdout(&o), stderr(&o));
    let err = stderr(&o);
    let said: Vec<&str> = err.lines().collect();
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(said[0].starts_with("qbench: check: profile ") && said[0].contains(&format!("written to {}", p.display())));
    let text = std::fs::read_to_string(&p).unwrap();
    assert!(text.starts_with("# Written by qbench check --init on "), "{text}");
    // A FAIL is measured once more before it drains the node.
    assert_eq!(text.matches("retries = 1").count(), 3, "{text}");
    let fraction: f64 = text
        .lines()
        .find_map(|l| l.strip_prefix("floor_fraction = "))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no floor_fraction in {text}"));
    for run in 0..10 {
        let o = check(&["--profile", p.to_str().unwrap(), "--json"]);
        let r = json(&o);
        assert_eq!(o.status.code(), Some(0), "run {run}: {r}");
        assert!(r["measured_here"].as_bool().unwrap(), "{r}");
        assert_eq!(r["profile"], format!("{}-init", r["host"].as_str().unwrap()));
        for row in r["rows"].as_array().unwrap() {
            // READY every time: no FAIL. A WARN (a median near its floor)
            // drains nothing, and a 2-core machine's 1M all_reduce moves
            // by ×3 between samples (2.5 to 7.9 GB/s in one CI run).
            assert!(row["status"] == "PASS" || row["status"] == "WARN", "run {run}: {row}");
            let (expected, floor) = (row["expected"].as_f64().unwrap(), row["floor"].as_f64().unwrap());
            // The floor sits under the worst sample, so under the fraction of the median.
            assert!(floor > 0.0 && floor <= fraction * expected * (1.0 + 1e-3), "{row}");
            let ratio = row["measured"].as_f64().unwrap() / expected;
            assert!((row["ratio"].as_f64().unwrap() - ratio).abs() < 1e-9, "{row}");
        }
    }
    std::fs::remove_dir_all(dir).unwrap();
}
