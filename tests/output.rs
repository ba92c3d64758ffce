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

/// Two outputs that name one file by different paths (`..`, a link to its
/// folder, a hard link, check's --init and --history files among them)
/// are refused before anything is measured: exit 2, one line, no table,
/// nothing written.
#[test]
fn one_file_by_two_paths_is_refused_before_work() {
    let dir = scratch("aliases");
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::os::unix::fs::symlink(&dir, dir.join("link")).unwrap();
    std::fs::write(dir.join("old.json"), "kept").unwrap();
    std::fs::hard_link(dir.join("old.json"), dir.join("hard.json")).unwrap();
    let host = Command::new("hostname").arg("-s").output().unwrap();
    let history = format!("hist/{}.jsonl", String::from_utf8_lossy(&host.stdout).trim());
    // Enough work that a run measuring first would not end in seconds.
    let sweep = ["allreduce", "--transport", "cpu", "-b", "64M", "-e", "64M", "-n", "100000"];
    let cases: [(&[&str], &[&str]); 7] = [
        (&sweep, &["-J", "a.json", "--csv", "sub/../a.json"]),
        (&sweep, &["-J", "a.json", "--prometheus", "./link/a.json"]),
        (&sweep, &["-J", "old.json", "--csv", "hard.json"]),
        (&sweep, &["--csv", "sub/b.csv", "--prometheus", "link/sub/./b.csv"]),
        (&["check", "--profile", "cpu", "--level", "full"], &["--init", "x.toml", "--save-baseline", "x.toml"]),
        (&["check", "--profile", "cpu", "--level", "full"], &["--init", "x.toml", "-J", "sub/../x.toml"]),
        (&["check", "--profile", "cpu", "--level", "full"], &["--history", "hist", "-J", &history]),
    ];
    for (run, outputs) in cases {
        let t0 = std::time::Instant::now();
        let o = Command::new(BIN)
            .args(run)
            .args(outputs)
            .current_dir(&dir)
            .env_remove("QBENCH_CORRUPT")
            .env("CUDA_VISIBLE_DEVICES", "")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{outputs:?}: {err}");
        assert!(err.contains("one file") || err.contains("two outputs"), "{outputs:?}: {err}");
        assert_eq!((err.lines().count(), o.stdout.len()), (1, 0), "{outputs:?}: {err}");
        assert!(t0.elapsed().as_secs() < 20, "{outputs:?}: {:?}", t0.elapsed());
    }
    assert_eq!(std::fs::read_to_string(dir.join("old.json")).unwrap(), "kept");
    for made in ["a.json", "sub/b.csv", "x.toml"] {
        assert!(!dir.join(made).exists(), "{made}");
    }
    std::fs::remove_dir_all(dir).unwrap();
}
