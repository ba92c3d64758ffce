//! A mistake in a profile is the profile's, not the node's: every bad
//! profile below is refused when it is read, exit 2 with one line naming
//! the file and the key, before anything is measured, so that no node is
//! judged NOT READY (and drained) for it. The built-in profiles still load.

mod common;

use common::{check, stderr, stdout};
use std::path::{Path, PathBuf};

/// A profile that runs as written: a collective and an exchange on host
/// ranks, floors far below any machine.
const GOOD: &str = r#"[profile]
name = "hostile"
description = "host ranks"
source = "none"
measured_here = false

[levels]
quick = 60
standard = 300
full = 900

[[step]]
name = "allreduce"
kind = "collective"
collective = "allreduce"
transport = "cpu"
gpus = 2
size = "1M"
iters = 5
metric = "algbw"
floor = 0.0001

[[step]]
name = "exchange"
kind = "exchange"
qubits = 12
transport = "cpu"
gpus = 2
iters = 5
metric = "local_gbps"
floor = 0.0001
"#;

/// One bad profile: the text replaced in [`GOOD`], its replacement, and
/// the key the refusal must name.
const BAD: &[(&str, &str, &str)] = &[
    // An exchange the command line would refuse.
    ("qubits = 12\ntransport = \"cpu\"\ngpus = 2", "qubits = 12\ntransport = \"cpu\"\ngpus = 3", "gpus"),
    ("qubits = 12\ntransport = \"cpu\"\ngpus = 2", "qubits = 12\ntransport = \"cpu\"\ngpus = 0", "gpus"),
    ("qubits = 12", "qubits = 80", "qubits"),
    ("qubits = 12", "qubits = 0", "qubits"),
    ("gpus = 2\niters = 5\nmetric = \"local_gbps\"", "gpus = 2\niters = 0\nmetric = \"local_gbps\"", "iters"),
    // A collective that measures nothing, or forever.
    ("size = \"1M\"", "size = \"0\"", "size"),
    ("size = \"1M\"", "size = \"lots\"", "size"),
    ("size = \"1M\"\niters = 5", "size = \"1M\"\niters = 0", "iters"),
    ("size = \"1M\"\niters = 5", "size = \"1M\"\niters = 4000000000", "iters"),
    (
        "collective = \"allreduce\"\ntransport = \"cpu\"\ngpus = 2",
        "collective = \"allreduce\"\ntransport = \"cpu\"\ngpus = 0",
        "gpus",
    ),
    // Counts and budgets past what a level can hold.
    ("measured_here = false", "measured_here = false\nsamples = 1000000", "samples"),
    ("metric = \"algbw\"", "metric = \"algbw\"\nsamples = 5000", "samples"),
    ("quick = 60", "quick = 0", "quick"),
    ("quick = 60", "quick = 9223372036854775807", "quick"),
    ("full = 900", "full = 9223372036854775807", "full"),
    ("metric = \"algbw\"", "metric = \"algbw\"\nseconds = 1e300", "quick"),
    ("metric = \"algbw\"", "metric = \"algbw\"\nseconds = 1\nretries = 4294967295", "quick"),
    ("metric = \"algbw\"", "metric = \"algbw\"\nseconds = nan", "seconds"),
    // Figures that judge nothing.
    ("measured_here = false", "measured_here = false\nfloor_fraction = 0", "floor_fraction"),
    ("measured_here = false", "measured_here = false\nwarn = nan", "warn"),
    ("[levels]", "[facts]\nrdma_rate_gbps = -1\n\n[levels]", "rdma_rate_gbps"),
    (
        "[[step]]\nname = \"exchange\"",
        "[[step]]\nname = \"pairs\"\nkind = \"pairs\"\nsize = \"2G\"\nmetric = \"gbps\"\nfloor = 1\n\n[[step]]\nname = \"exchange\"",
        "size",
    ),
    // Tolerances against a baseline that hold nothing.
    ("metric = \"algbw\"", "metric = \"algbw\"\nbaseline = { warn = nan, fail = 0.5 }", "baseline"),
    ("[levels]", "[baseline]\nwarn = 0.2\nfail = 0.1\n\n[levels]", "warn"),
    ("[levels]", "[baseline]\nwarn = 0.05\nfail = 3\n\n[levels]", "fail"),
    // Steps a baseline cannot tell apart.
    ("name = \"exchange\"", "name = \"allreduce\"", "name"),
    ("name = \"exchange\"", "name = \"\"", "name"),
];

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("qbench-profile-hostile-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn the_good_profile_runs_so_that_each_refusal_is_of_its_one_mistake() {
    let dir = scratch("good");
    let p = dir.join("good.toml");
    std::fs::write(&p, GOOD).unwrap();
    let o = check(&["--profile", p.to_str().unwrap(), "--samples", "1"]);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn no_profile_mistake_reaches_a_verdict() {
    let dir = scratch("bad");
    let mut wrong = Vec::new();
    for (i, (from, to, key)) in BAD.iter().enumerate() {
        assert!(GOOD.contains(from), "case {i}: {from:?} is not in the profile");
        let p = dir.join(format!("bad{i}.toml"));
        std::fs::write(&p, GOOD.replacen(from, to, 1)).unwrap();
        let o = check(&["--profile", p.to_str().unwrap()]);
        let err = stderr(&o);
        let named = err.starts_with(&format!("qbench: profile {}:", p.display())) && err.contains(key);
        let one = err.lines().count() == 1 && stdout(&o).is_empty();
        if o.status.code() != Some(2) || !named || !one || err.contains("-K") {
            wrong.push(format!("{to:?} ({key}): exit {:?}: {}{}", o.status.code(), stdout(&o), err));
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of {} bad profiles not refused as such:\n{}",
        wrong.len(),
        BAD.len(),
        wrong.join("\n")
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn every_built_in_profile_loads() {
    let dir = scratch("built-in").join("empty-root");
    std::fs::create_dir_all(&dir).unwrap();
    let profiles = Path::new(env!("CARGO_MANIFEST_DIR")).join("profiles");
    let mut seen = 0;
    for entry in std::fs::read_dir(profiles).unwrap() {
        let p = entry.unwrap().path();
        if p.extension().is_none_or(|e| e != "toml") {
            continue;
        }
        seen += 1;
        // Facts only: the profile is read whole, nothing is measured.
        let o = check(&["--profile", p.to_str().unwrap(), "--sysfs-root", dir.to_str().unwrap()]);
        assert!(!stderr(&o).starts_with("qbench: profile"), "{}: {}", p.display(), stderr(&o));
        assert_ne!(o.status.code(), Some(2), "{}: {}{}", p.display(), stdout(&o), stderr(&o));
    }
    assert!(seen >= 7, "{seen} profiles");
    std::fs::remove_dir_all(dir.parent().unwrap()).unwrap();
}
