//! A signal inside one long measurement (a warm-up of a million operations,
//! a million timed iterations, a hundred thousand operations aggregated
//! into one): the run stops within a second or two, exits 128 + the
//! signal, and its -J record is valid JSON marked incomplete.

mod common;

use common::BIN;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Runs the cpu all_reduce with `extra`, signals it with `signal` once it
/// has run `after`, and returns its exit code, the time it took to end
/// after the signal, and its record.
fn interrupted(name: &str, extra: &[&str], signal: &str, after: Duration) -> (i32, Duration, serde_json::Value) {
    let dir = std::env::temp_dir().join(format!("qbench-interrupt-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("run.json");
    let mut args = vec!["allreduce", "--transport", "cpu", "-g", "2", "-b", "1M", "-e", "1M", "-J"];
    let json_arg = json.to_str().unwrap().to_string();
    args.push(&json_arg);
    args.extend_from_slice(extra);
    let mut child = Command::new(BIN)
        .args(&args)
        .env_remove("QBENCH_CORRUPT")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run qbench");
    std::thread::sleep(after);
    assert!(child.try_wait().unwrap().is_none(), "{name}: the run ended before the signal");
    let sent = Command::new("sh").args(["-c", &format!("kill {signal} {}", child.id())]).status().expect("run sh");
    assert!(sent.success());
    let t0 = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if t0.elapsed() > Duration::from_secs(15) {
            let _ = child.kill();
            panic!("{name}: still running 15 s after {signal}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let took = t0.elapsed();
    let mut err = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
    let text = std::fs::read_to_string(&json).unwrap_or_else(|e| panic!("{name}: no record ({e}); stderr: {err}"));
    let record = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}: the record is not JSON: {e}"));
    let _ = std::fs::remove_dir_all(&dir);
    (status.code().unwrap_or(-1), took, record)
}

#[test]
fn a_signal_inside_a_long_warm_up_or_timed_loop_stops_the_run_with_its_record() {
    for (name, extra, signal, code) in [
        ("warmup", &["-w", "1000000"][..], "-INT", 130),
        ("iterations", &["-w", "0", "-n", "1000000"][..], "-TERM", 143),
        ("aggregated", &["-w", "0", "-m", "100000", "-n", "1"][..], "-INT", 130),
    ] {
        let (rc, took, record) = interrupted(name, extra, signal, Duration::from_millis(1500));
        assert_eq!(rc, code, "{name}");
        assert!(took < Duration::from_secs(2), "{name}: {took:?} after the signal");
        assert_eq!(record["complete"], false, "{name}");
    }
}
