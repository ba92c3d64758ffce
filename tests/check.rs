//! `qbench check` run as a cluster admin runs it: the cpu profile on this
//! machine (ready), a profile that cannot pass (not ready, naming the step),
//! a baseline the node no longer reaches (a regression), profiles that are
//! not well formed (exit 2 naming the key and line), and the facts of the
//! RDMA fixture trees judged against the mlx4 FDR profile.

mod common;

use common::{BIN, check, json, stderr, stdout};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A scratch folder of this test's own.
fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("qbench-check-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The cpu profile with every floor at `floor` (GB/s).
fn cpu_profile_with_floor(dir: &Path, floor: &str) -> PathBuf {
    let text = std::fs::read_to_string(repo().join("profiles/cpu.toml")).unwrap();
    let lines: Vec<String> = text
        .lines()
        .map(|l| if l.starts_with("floor = ") { format!("floor = {floor}") } else { l.to_string() })
        .collect();
    assert!(lines.iter().filter(|l| l.starts_with("floor = ")).count() >= 4);
    let p = dir.join("floor.toml");
    std::fs::write(&p, lines.join("\n") + "\n").unwrap();
    p
}

#[test]
fn the_cpu_profile_is_ready_on_any_machine() {
    let o = check(&["--profile", "cpu"]);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    let out = stdout(&o);
    assert!(out.starts_with("# qbench check: profile cpu (built-in cpu), level quick"), "{out}");
    assert!(out.lines().last().unwrap().starts_with("qbench check: READY: 3 PASS"), "{out}");

    let r = json(&check(&["--profile", "cpu", "--json"]));
    assert_eq!(r["schema"], "qbench.check.v2");
    assert_eq!(r["verdict"]["ready"], true);
    let rows = r["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 3, "quick leaves out the standard level's pairs step");
    for row in rows {
        assert_eq!(row["status"], "PASS", "{row}");
        assert!(row["measured"].as_f64().unwrap() > 0.001, "{row}");
    }
}

/// The prolog level, as a job's Prolog runs it: one sample of each step
/// the profile marks prolog, and where its seconds went, step by step, in
/// the record, the table (what `show` prints again) and Prometheus' file.
#[test]
fn the_prolog_level_samples_each_path_once_and_says_where_the_time_went() {
    let dir = scratch("prolog");
    let (file, prom) = (dir.join("prolog.json"), dir.join("prolog.prom"));
    let args = ["--profile", "cpu", "--level", "prolog", "-J", file.to_str().unwrap(), "--prometheus"];
    let o = check(&[&args[..], &[prom.to_str().unwrap()]].concat());
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    let out = stdout(&o);
    assert!(out.starts_with("# qbench check: profile cpu (built-in cpu), level prolog (10 s)"), "{out}");
    assert!(out.lines().last().unwrap().starts_with("qbench check: READY: 3 PASS"), "{out}");
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let rows = r["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 3);
    assert!(rows.iter().all(|row| row["samples"].as_array().unwrap().len() == 1), "{rows:?}");
    // The start, the facts, then each step, every one timed on this node.
    let spent = r["spent"].as_array().unwrap();
    let steps: Vec<&str> = spent.iter().map(|s| s["step"].as_str().unwrap()).collect();
    let names: Vec<&str> = rows.iter().map(|row| row["step"].as_str().unwrap()).collect();
    assert_eq!(steps, [&["start: libraries, MPI", "facts"][..], &names].concat());
    let seconds: Vec<f64> = spent.iter().map(|s| s["seconds"].as_f64().unwrap()).collect();
    assert!(seconds.iter().all(|s| *s >= 0.0), "{spent:?}");
    assert!(seconds[1..].iter().sum::<f64>() <= r["elapsed_s"].as_f64().unwrap() + 0.01, "{spent:?}");
    assert!(seconds[2..].iter().all(|s| *s > 0.0), "a measured step takes time: {spent:?}");
    // The table names each of them, one line each within 80 columns.
    let at = out.find(" where the time went ").unwrap_or_else(|| panic!("{out}"));
    let table: Vec<&str> = out[at..].lines().take(2 + steps.len()).collect();
    for (line, step) in table[2..].iter().zip(&steps) {
        assert!(line.starts_with(&format!(" {step} ")) && line.chars().count() <= 80, "{line}");
    }
    let shown = common::qbench(&["show", file.to_str().unwrap()]);
    assert_eq!(stdout(&shown), out);
    let text = std::fs::read_to_string(&prom).unwrap();
    let timed = text.lines().filter(|l| l.starts_with("qbench_check_step_seconds{step=")).count();
    assert_eq!(timed, steps.len(), "{text}");
    std::fs::remove_dir_all(dir).unwrap();
}

/// A profile that gives no prolog level is refused at it, in one line.
#[test]
fn a_profile_without_a_prolog_level_refuses_it() {
    let o = check(&["--profile", "mlx4-fdr", "--level", "prolog"]);
    let err = common::one_line_error(&o, 2);
    assert!(err.contains("profile mlx4-fdr has no prolog level") && err.contains("[levels]"), "{err}");
}

/// --pairs picks the pairwise pass's schedule, and is refused where no step
/// of the profile is one.
#[test]
fn pairs_is_refused_without_a_pairs_step() {
    let o = check(&["--profile", "mlx4-fdr", "--pairs", "all"]);
    let err = common::one_line_error(&o, 2);
    assert!(err.contains("--pairs: profile mlx4-fdr has no step of kind \"pairs\""), "{err}");
    let o = check(&["--profile", "cpu", "--pairs", "every"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn without_a_gpu_the_default_profile_is_cpu() {
    let r = json(&check(&["--json"]));
    assert_eq!(r["profile"], "cpu");
}

#[test]
fn a_gpu_profile_on_a_node_without_gpus_is_missing_hardware() {
    // Without a driver: one line naming it. With a driver but no GPU
    // visible (a GPU machine running the tests): the steps are not run.
    let o = check(&["--profile", "h200x1"]);
    assert_eq!(o.status.code(), Some(3), "{}{}", stdout(&o), stderr(&o));
    let err = stderr(&o);
    if err.starts_with("qbench: the CUDA driver library (libcuda.so.1) was not found") {
        assert!(err.contains("--profile cpu"), "{err}");
    } else {
        assert!(stdout(&o).contains("not run: fewer GPUs than the profile's facts want"), "{}{err}", stdout(&o));
    }
}

#[test]
fn a_profile_the_node_cannot_meet_fails_naming_the_step_and_its_fix() {
    let dir = scratch("impossible");
    let p = cpu_profile_with_floor(&dir, "1e9");
    let o = check(&["--profile", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("all_reduce 16M, host ranks"), "{out}");
    assert!(out.lines().last().unwrap().starts_with("qbench check: NOT READY: 3 FAIL"), "{out}");
    assert!(stderr(&o).contains("NOT READY"), "{}", stderr(&o));

    // --quiet, as a Prolog runs it: nothing on stdout, one line a failure.
    let q = check(&["--profile", p.to_str().unwrap(), "--quiet"]);
    assert_eq!(q.status.code(), Some(1));
    assert!(q.stdout.is_empty(), "{}", stdout(&q));
    let lines: Vec<String> = stderr(&q).lines().map(String::from).collect();
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert!(lines[0].starts_with("qbench: check FAIL "), "{lines:?}");
    assert!(
        lines[0].contains("all_reduce 16M, host ranks") && lines[0].contains("GB/s, wanted ≥ 1.000e9 GB/s"),
        "{lines:?}"
    );
    assert!(lines[0].ends_with("look for other processes (top)"), "{lines:?}");

    // A passing --quiet prints nothing at all.
    let ok = check(&["--profile", "cpu", "--quiet"]);
    assert!(ok.status.success() && ok.stdout.is_empty() && ok.stderr.is_empty(), "{}{}", stdout(&ok), stderr(&ok));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn quiet_names_the_steps_a_lone_process_did_not_measure() {
    // The emulated cluster's profile is the pairwise pass alone: one process
    // has no pair to measure, is ready, and says on stderr which step it
    // skipped, so that a health check does not lift a drain that step made.
    let profile = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/cluster/cluster.toml");
    let o = check(&["--profile", profile, "--quiet"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(o.stdout.is_empty(), "{}", stdout(&o));
    let err = stderr(&o);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(lines[0].starts_with("qbench: check SKIP "), "{err}");
    assert!(lines[0].contains(" node pairs, MPI sendrecv 1M: one process: no pair of nodes to test"), "{err}");
}

#[test]
fn a_node_slower_than_its_baseline_is_a_regression() {
    let dir = scratch("baseline");
    let base = dir.join("base.json");
    let o = check(&["--profile", "cpu", "--save-baseline", base.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));

    // Against itself the node is ready and every row states its ratio.
    let r = json(&check(&["--profile", "cpu", "--baseline", base.to_str().unwrap(), "--json"]));
    for row in r["rows"].as_array().unwrap() {
        assert!(row["vs_baseline"].as_f64().unwrap() > 0.0, "{row}");
    }

    // A baseline doctored to read ten times what the node measured, every sample.
    let mut doctored: Value = serde_json::from_str(&std::fs::read_to_string(&base).unwrap()).unwrap();
    for row in doctored["rows"].as_array_mut().unwrap() {
        let m = row["measured"].as_f64().unwrap();
        row["measured"] = (m * 10.0).into();
        let samples: Vec<f64> = row["samples"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap() * 10.0).collect();
        row["samples"] = samples.into();
    }
    let fast = dir.join("fast.json");
    std::fs::write(&fast, serde_json::to_string(&doctored).unwrap()).unwrap();
    let o = check(&["--profile", "cpu", "--baseline", fast.to_str().unwrap(), "--json"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let r = json(&o);
    assert_eq!(r["verdict"]["ready"], false);
    let row = &r["rows"][0];
    assert_eq!(row["status"], "FAIL", "{row}");
    // measured / baseline, whatever this machine's noise made of the run.
    let (m, b, vs) =
        (row["measured"].as_f64().unwrap(), row["baseline"].as_f64().unwrap(), row["vs_baseline"].as_f64().unwrap());
    assert!((vs - m / b).abs() < 1e-9 && vs < 0.9, "{row}");
    assert!(row["fix"].as_str().unwrap().contains("× the baseline"), "{row}");

    // Steps with their own, looser tolerance hold the same baseline loosely
    // (loose enough for this machine's noise on top of the tenfold).
    let cpu = std::fs::read_to_string(repo().join("profiles/cpu.toml")).unwrap();
    let loose = dir.join("loose.toml");
    std::fs::write(&loose, cpu.replace("\nfix = ", "\nbaseline = { warn = 0.999, fail = 0.9999 }\nfix = ")).unwrap();
    let o = check(&["--profile", loose.to_str().unwrap(), "--baseline", fast.to_str().unwrap(), "--json"]);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    assert!(json(&o)["rows"].as_array().unwrap().iter().all(|r| r["status"] == "PASS"), "{}", stdout(&o));

    // A baseline that is not a check record is refused.
    let o =
        check(&["--profile", "cpu", "--baseline", repo().join("results/h200/verify/h200-copy.json").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).starts_with("qbench: "), "{}", stderr(&o));
    std::fs::remove_dir_all(dir).unwrap();
}

/// A baseline is held only where it means something: another profile's is
/// refused unless --baseline-any, one of other steps is refused before
/// anything is measured, and one of another node of the same profile is
/// held step by step.
#[test]
fn baselines_of_another_kind_are_refused_and_another_node_of_the_kind_is_held() {
    let dir = scratch("baseline-kind");
    let base = dir.join("base.json");
    let o = check(&["--profile", "cpu", "--save-baseline", base.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let cpu = std::fs::read_to_string(repo().join("profiles/cpu.toml")).unwrap();
    let other = dir.join("other.toml");
    std::fs::write(&other, cpu.replace("name = \"cpu\"", "name = \"other\"")).unwrap();
    let o = check(&["--profile", other.to_str().unwrap(), "--baseline", base.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));
    assert!(stderr(&o).contains("taken with profile cpu") && stderr(&o).contains("--baseline-any"), "{}", stderr(&o));
    let o = check(&[
        "--profile",
        other.to_str().unwrap(),
        "--baseline",
        base.to_str().unwrap(),
        "--baseline-any",
        "--json",
    ]);
    // Held (the verdict is this machine's noise against itself: ready or not, never refused).
    assert_ne!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(json(&o)["rows"].as_array().unwrap().iter().all(|r| r["vs_baseline"].as_f64() > Some(0.0)));

    let renamed = dir.join("renamed.toml");
    std::fs::write(
        &renamed,
        cpu.replace("name = \"all_reduce 16M", "name = \"allreduce 16M")
            .replace("name = \"sendrecv", "name = \"send-recv")
            .replace("name = \"exchange 16", "name = \"exchange of 16"),
    )
    .unwrap();
    let started = std::time::Instant::now();
    let o = check(&["--profile", renamed.to_str().unwrap(), "--baseline", base.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("holds none of the steps of this check"), "{}", stderr(&o));
    assert!(started.elapsed() < std::time::Duration::from_secs(2), "measured before refusing");

    let mut moved: Value = serde_json::from_str(&std::fs::read_to_string(&base).unwrap()).unwrap();
    for row in moved["rows"].as_array_mut().unwrap() {
        row["node"] = "node-of-the-same-kind".into();
    }
    let elsewhere = dir.join("elsewhere.json");
    std::fs::write(&elsewhere, serde_json::to_string(&moved).unwrap()).unwrap();
    let o = check(&["--profile", "cpu", "--baseline", elsewhere.to_str().unwrap(), "--json"]);
    // Held (the verdict is this machine's noise against itself: ready or not, never refused).
    assert_ne!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(json(&o)["rows"].as_array().unwrap().iter().all(|r| r["vs_baseline"].as_f64() > Some(0.0)));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn malformed_profiles_are_refused_naming_the_place() {
    let dir = scratch("malformed");
    let cpu = std::fs::read_to_string(repo().join("profiles/cpu.toml")).unwrap();
    let cases: [(&str, String, &[&str]); 4] = [
        (
            "unknown-key.toml",
            cpu.replace("metric = \"algbw\"", "metric = \"algbw\"\nflor = 3"),
            &["unknown-key.toml:35: step 'all_reduce 16M, host ranks': unknown field `flor`", "(in `flor = 3`)"],
        ),
        (
            "wrong-type.toml",
            cpu.replacen("floor = 0.1", "floor = \"fast\"", 1),
            &["wrong-type.toml:37:", "(in `floor = \"fast\"`)"],
        ),
        ("not-toml.toml", "this is [not toml\n".into(), &["not-toml.toml:1:"]),
        ("unknown-kind.toml", cpu.replace("kind = \"exchange\"", "kind = \"teleport\""), &["teleport"]),
    ];
    for (name, text, wants) in cases {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        let o = check(&["--profile", p.to_str().unwrap()]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{name}: {err}");
        assert_eq!(err.lines().count(), 1, "{name}: one line: {err}");
        for w in wants {
            assert!(err.contains(w), "{name}: no '{w}' in: {err}");
        }
    }
    let o = check(&["--profile", dir.join("absent.toml").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("absent.toml"), "{}", stderr(&o));
    let o = check(&["--profile", "h300x64"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("no profile 'h300x64': use a built-in profile (cpu, h200x1"), "{}", stderr(&o));
    let o = check(&["--profile", "cpu", "--level", "thorough"]);
    assert_eq!(o.status.code(), Some(2));
    std::fs::remove_dir_all(dir).unwrap();
}

/// qbench check as [`check`] runs it, killed (and the test failed) past 10 s.
fn check_within_10s(args: &[&str]) -> Output {
    let mut child = Command::new(BIN)
        .arg("check")
        .args(args)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("CUDA_VISIBLE_DEVICES", "")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > std::time::Duration::from_secs(10) {
            child.kill().unwrap();
            panic!("qbench check {args:?} still running after 10 s");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// A step that keeps failing with a million retries stops retrying when
/// its level's budget is spent, and says so in its fix.
#[test]
fn retries_end_with_the_level_budget() {
    let dir = scratch("retries");
    let text = std::fs::read_to_string(cpu_profile_with_floor(&dir, "1000000")).unwrap();
    let p = dir.join("retries.toml");
    let text = text.replace("quick = 60", "quick = 2").replace("samples = 5", "samples = 1");
    std::fs::write(&p, text.replacen("floor = 1000000", "floor = 1000000\nretries = 1000000", 1)).unwrap();
    let o = check_within_10s(&["--profile", p.to_str().unwrap(), "--json"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let r = json(&o);
    let row = &r["rows"][0];
    assert_eq!(row["status"], "FAIL", "{row}");
    let attempts = row["attempts"].as_u64().unwrap();
    assert!((1..1000001).contains(&attempts), "{row}");
    assert!(row["fix"].as_str().unwrap().contains("the level's budget was spent"), "{row}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn profiles_and_baselines_that_are_no_files_or_too_large_are_one_line() {
    let dir = scratch("limits");
    let fifo = dir.join("fifo.toml");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let big = dir.join("big.toml");
    std::fs::write(&big, format!("a = \"{}\"\n", "x".repeat(5 << 20))).unwrap();
    let cases = [
        (vec!["--profile", fifo.to_str().unwrap()], "fifo.toml: not a regular file (a FIFO)"),
        (vec!["--profile", "/dev/zero"], "/dev/zero: not a regular file (a device)"),
        (vec!["--profile", dir.to_str().unwrap()], "not a regular file (a directory)"),
        (vec!["--profile", "cpu", "--baseline", fifo.to_str().unwrap()], "not a regular file (a FIFO)"),
        (vec!["--profile", "cpu", "--baseline", "/dev/zero"], "not a regular file (a device)"),
        (vec!["--profile", big.to_str().unwrap()], "big.toml: 5242887 bytes is larger than the 4 MiB"),
    ];
    for (args, want) in cases {
        let o = check_within_10s(&args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: one line: {err}");
        assert!(err.contains(want), "{args:?}: no '{want}' in: {err}");
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn errors_quote_a_short_excerpt_of_a_long_line() {
    let dir = scratch("excerpt");
    let long = "x".repeat(1 << 20);
    let cases = [
        ("bare.toml", format!("[profile]\nname = {long}\n")),
        ("wrong-type.toml", format!("[profile]\nname = \"one\"\nsamples = \"{long}\"\n")),
    ];
    for (name, text) in cases {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        let o = check(&["--profile", p.to_str().unwrap()]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{name}: {err}");
        assert!(err.len() < 400 && err.contains("xxx…"), "{name}: {} bytes: {}", err.len(), &err[..err.len().min(400)]);
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn profiles_that_would_check_nothing_are_refused_naming_the_place() {
    let dir = scratch("nothing");
    let cpu = std::fs::read_to_string(repo().join("profiles/cpu.toml")).unwrap();
    let head = &cpu[..cpu.find("[[step]]").unwrap()];
    for (name, text, want) in [
        (
            "negative.toml",
            cpu.replacen("floor = 0.1", "floor = -1", 1),
            "negative.toml:37: step 'all_reduce 16M, host ranks': floor: -1 is not a positive number",
        ),
        ("nan.toml", cpu.replacen("floor = 0.1", "floor = nan", 1), "floor: NaN is not a positive number"),
        ("inf.toml", cpu.replacen("floor = 0.1", "floor = -inf", 1), "floor: -inf is not a positive number"),
        ("empty.toml", head.to_string(), "no facts and no steps"),
    ] {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        let o = check(&["--profile", p.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2), "{name}: {}", stderr(&o));
        assert!(stderr(&o).contains(want) && stderr(&o).lines().count() == 1, "{name}: {}", stderr(&o));
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn rdma_facts_are_judged_against_the_fixture_trees() {
    let fixtures = repo().join("tests/fixtures/probe");
    let o = check(&["--profile", "mlx4-fdr", "--sysfs-root", fixtures.join("mlx4-ib").to_str().unwrap(), "--json"]);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    let r = json(&o);
    // The facts pass; the RDMA step is not measured from a fixture tree.
    let rows = r["rows"].as_array().unwrap();
    assert!(
        rows.iter().all(|row| row["status"] == "PASS" || (row["kind"] == "rdma" && row["status"] == "SKIP")),
        "{r}"
    );
    assert!(rows.iter().any(|row| row["kind"] == "rdma"), "{r}");

    // No adapter at all: the hardware the profile requires is missing
    // (exit 3), and every failing row says what to do.
    let o = check(&["--profile", "mlx4-fdr", "--sysfs-root", fixtures.join("no-rdma").to_str().unwrap(), "--json"]);
    assert_eq!(o.status.code(), Some(3), "{}{}", stdout(&o), stderr(&o));
    let r = json(&o);
    let failed: Vec<&Value> = r["rows"].as_array().unwrap().iter().filter(|row| row["status"] == "FAIL").collect();
    assert!(!failed.is_empty(), "{r}");
    for row in failed {
        assert!(!row["fix"].as_str().unwrap().is_empty(), "{row}");
    }

    // Ports that are down fail the ports fact, naming them, and not as
    // missing hardware.
    let dir = scratch("ports");
    let p = dir.join("three-ports.toml");
    let mlx4 = std::fs::read_to_string(repo().join("profiles/mlx4-fdr.toml")).unwrap();
    std::fs::write(&p, mlx4.replace("rdma_active_ports = 1", "rdma_active_ports = 3")).unwrap();
    let o = check(&["--profile", p.to_str().unwrap(), "--sysfs-root", fixtures.join("port-down").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("mlx5_1:1 DOWN"), "{}", stdout(&o));
    std::fs::remove_dir_all(dir).unwrap();
}

/// A profile of one rdma step, `body` its keys after `kind = "rdma"`.
/// A profile of one step named `step` whose keys are `body`.
fn one_step_profile(dir: &Path, name: &str, step: &str, body: &str) -> PathBuf {
    let p = dir.join(name);
    let text = format!(
        "[profile]\nname = \"one\"\ndescription = \"one step\"\nsource = \"a test\"\nmeasured_here = false\n\n\
         [levels]\nquick = 60\nstandard = 60\nfull = 60\n\n[[step]]\nname = \"{step}\"\n{body}\n"
    );
    std::fs::write(&p, text).unwrap();
    p
}

fn rdma_profile(dir: &Path, name: &str, body: &str) -> PathBuf {
    one_step_profile(dir, name, "RDMA write", &format!("kind = \"rdma\"\n{body}"))
}

#[test]
fn a_circuit_step_times_the_circuit_under_a_ceiling_every_amplitude_checked() {
    let dir = scratch("circuit");
    let step = |ceiling: &str| {
        format!(
            "kind = \"exchange\"\nqubits = 12\ntransport = \"cpu\"\ngpus = 2\ncircuit = \"qft\"\nrounds = 2\n\
             metric = \"circuit_s\"\n{ceiling}"
        )
    };
    // Expected alone: a time's bound is a ceiling above it, not a floor below.
    let p = one_step_profile(&dir, "loose.toml", "qft(12)", &step("expected = 5.0\nexpected_from = \"projected\""));
    let o = check(&["--profile", p.to_str().unwrap(), "--json"]);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    let row = json(&o)["rows"][0].clone();
    assert_eq!(row["status"], "PASS", "{row}");
    assert_eq!(row["unit"], "s");
    assert_eq!(row["expected_from"], "projected");
    assert!(row["floor"].is_null() && row["ceiling"].as_f64().unwrap() > 5.0, "{row}");
    assert!(row["measured"].as_f64().unwrap() > 0.0, "{row}");
    let p = one_step_profile(&dir, "tight.toml", "qft(12)", &step("ceiling = 1e-9"));
    let o = check(&["--profile", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("qft(12)") && stdout(&o).contains("FAIL"), "{}", stdout(&o));
    for (name, body, want) in [
        ("nocircuit.toml", step("floor = 1.0").replace("circuit = \"qft\"\n", ""), "circuit_s times a `circuit`"),
        ("othermetric.toml", step("floor = 1.0").replace("circuit_s", "local_gbps"), "only the circuit_s metric"),
        ("schedule.toml", step("ceiling = 1.0\nschedule = \"fast\""), "unknown schedule"),
        ("gates.toml", step("ceiling = 1.0").replace("\"qft\"", "\"random:0\""), "unknown circuit"),
    ] {
        let p = one_step_profile(&dir, name, "qft(12)", &body);
        let o = check(&["--profile", p.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2), "{name}: {}", stderr(&o));
        assert!(stderr(&o).contains(want), "{name}: no '{want}' in {}", stderr(&o));
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn an_rdma_step_needs_an_adapter_and_one_known_test() {
    let dir = scratch("rdma");
    // This machine has no RDMA adapter (or this qbench no verbs): the
    // hardware the profile requires is missing.
    let p = rdma_profile(&dir, "write.toml", "test = \"write_bw\"\nsize = \"64K\"\nmetric = \"gbits\"\nfloor = 0.001");
    let o = check(&["--profile", p.to_str().unwrap(), "--json"]);
    assert_eq!(o.status.code(), Some(3), "{}{}", stdout(&o), stderr(&o));
    let r = json(&o);
    let row = &r["rows"].as_array().unwrap()[0];
    assert_eq!((row["kind"].as_str(), row["status"].as_str()), (Some("rdma"), Some("FAIL")), "{r}");
    assert!(row["found"].as_str().unwrap().contains("no RDMA"), "{row}");
    for (name, body, want) in [
        ("two.toml", "test = \"write_bw,read_bw\"\nmetric = \"gbits\"\nfloor = 1.0", "one test"),
        ("ping.toml", "test = \"ping\"\nmetric = \"gbits\"\nfloor = 1.0", "ping"),
        ("metric.toml", "test = \"write_lat\"\nmetric = \"gbits\"\nfloor = 1.0", "latency_us"),
        ("no-test.toml", "metric = \"gbits\"\nfloor = 1.0", "missing field `test`"),
    ] {
        let p = rdma_profile(&dir, name, body);
        let o = check(&["--profile", p.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2), "{name}: {}", stderr(&o));
        assert!(stderr(&o).contains(want), "{name}: no '{want}' in {}", stderr(&o));
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// An existing file (without --force), a directory and a path that cannot
/// be written are refused in one line, exit 2, before anything is measured.
#[test]
fn init_refuses_a_path_it_would_not_write_before_measuring() {
    let dir = scratch("init-path");
    let existing = dir.join("there.toml");
    std::fs::write(&existing, "# mine\n").unwrap();
    let missing = dir.join("no-such-dir").join("p.toml");
    for (path, why) in [
        (existing.as_path(), "the file exists: add --force to replace it"),
        (dir.as_path(), "a directory, not a file"),
        (missing.as_path(), "cannot be written"),
    ] {
        let began = std::time::Instant::now();
        let o = check(&["--profile", "cpu", "--init", path.to_str().unwrap()]);
        let err = stderr(&o);
        assert_eq!((o.status.code(), err.lines().count()), (Some(2), 1), "{err}");
        assert!(err.contains(&format!("--init {}: {why}", path.display())), "{err}");
        assert!(began.elapsed().as_secs_f64() < 3.0, "measured before refusing: {err}");
    }
    assert_eq!(std::fs::read_to_string(&existing).unwrap(), "# mine\n");
    assert!(std::fs::read_dir(&dir).unwrap().count() == 1, "no trial file left behind");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn init_refuses_fixtures_and_nodes_that_are_not_ready() {
    let dir = scratch("init-refused");
    let p = dir.join("x.toml");
    let fixture = repo().join("tests/fixtures/probe/peermem");
    let o =
        check(&["--profile", "h100x8-ndr", "--sysfs-root", fixture.to_str().unwrap(), "--init", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}{}", stdout(&o), stderr(&o));
    assert!(stderr(&o).contains("--init") && stderr(&o).lines().count() == 1, "{}", stderr(&o));
    let impossible = cpu_profile_with_floor(&dir, "1e9");
    let o = check(&["--profile", impossible.to_str().unwrap(), "--init", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}{}", stdout(&o), stderr(&o));
    assert!(stderr(&o).contains("not ready"), "{}", stderr(&o));
    assert!(!p.exists(), "no profile is written of a node that is not ready");
    std::fs::remove_dir_all(dir).unwrap();
}
