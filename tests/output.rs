//! Output files are whole or absent: written beside their path and renamed
//! onto it, so that two runs given one path (a Prolog and a health check)
//! leave one whole record, never a mixture; two outputs of one run naming
//! one file are refused before any work.

mod common;

use common::BIN;
use std::process::{Command, Stdio};

fn scratch(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("qbench-output-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn concurrent_writers_of_one_path_leave_a_whole_record() {
    let dir = scratch("concurrent");
    let path = dir.join("same.json");
    let run = || {
        Command::new(BIN)
            .args(["allreduce", "--transport", "cpu", "-b", "64K", "-e", "256K", "-n", "2", "-w", "1", "-J"])
            .arg(&path)
            .env_remove("QBENCH_CORRUPT")
            .stdout(Stdio::null())
            .spawn()
            .unwrap()
    };
    for trial in 0..50 {
        let (mut a, mut b) = (run(), run());
        assert!(a.wait().unwrap().success() && b.wait().unwrap().success(), "trial {trial}");
        let text = std::fs::read_to_string(&path).unwrap();
        let v: serde_json::Value =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("trial {trial}: not whole JSON ({e}): {text}"));
        assert_eq!(v["complete"], true, "trial {trial}");
    }
    // Nothing is left beside it.
    let left: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left, vec![std::ffi::OsString::from("same.json")], "{left:?}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn one_file_named_as_two_outputs_is_refused_before_work() {
    let dir = scratch("twice");
    let path = dir.join("x.json");
    for (first, second) in [("-J", "--csv"), ("-J", "--prometheus"), ("--csv", "--prometheus")] {
        let o = Command::new(BIN)
            .args(["allreduce", "--transport", "cpu", "-b", "1K", "-e", "1K", first])
            .arg(&path)
            .env_remove("QBENCH_CORRUPT")
            .arg(second)
            .arg(&path)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{first} {second}: {err}");
        assert!(err.contains("named as two outputs") && err.lines().count() == 1, "{first} {second}: {err}");
        assert!(!path.exists());
    }
    std::fs::remove_dir_all(dir).unwrap();
}
