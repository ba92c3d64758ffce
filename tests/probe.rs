//! `qbench probe` run as a user runs it: against the fake sysfs trees in
//! tests/fixtures/probe, whose verdicts are pinned in
//! tests/fixtures/probe/expected (QBENCH_BLESS=1 rewrites them), against
//! bad input, and on the machine the tests run on.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_qbench");
const SEED: [(&str, &str); 3] = [("NCCL_IB_HCA", "mlx4_0"), ("NCCL_SOCKET_IFNAME", "ib0"), ("NCCL_IB_DISABLE", "0")];

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/probe")
}

/// A clean environment: nothing from the test runner leaks in (no NCCL_*,
/// no launcher variables), only `vars`.
fn command(vars: &[(&str, &str)]) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.env_clear().env("PATH", "/usr/bin:/bin").env("HOME", "/home/qbench-test").envs(vars.iter().copied());
    cmd
}

/// `qbench probe --json` on a fixture; the run must not complain.
fn probe(fixture: &str, vars: &[(&str, &str)]) -> (Output, Value) {
    let out = command(vars).args(["probe", "--json", "--sysfs-root"]).arg(fixtures().join(fixture)).output().unwrap();
    assert!(out.stderr.is_empty(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).expect("probe --json prints JSON");
    assert_eq!(report["schema"], "qbench.probe.v1");
    (out, report)
}

fn check<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["check"] == name)
        .unwrap_or_else(|| panic!("no check {name}"))
}

fn status(report: &Value, name: &str) -> String {
    check(report, name)["status"].as_str().unwrap().to_string()
}

/// The verdict as text: each check's status, name, finding and remedy.
/// mpi.build is left out: it depends on the features of this build.
fn verdict_text(report: &Value) -> String {
    let mut s = String::new();
    for c in report["checks"].as_array().unwrap().iter().filter(|c| c["check"] != "mpi.build") {
        s.push_str(&format!(
            "{} {}\n  found: {}\n",
            c["status"].as_str().unwrap(),
            c["check"].as_str().unwrap(),
            c["found"].as_str().unwrap()
        ));
        if let Some(fix) = c["fix"].as_str().filter(|f| !f.is_empty()) {
            s.push_str(&format!("  fix: {fix}\n"));
        }
    }
    s
}

/// Compares a fixture's verdict with its golden file, and the exit code
/// and overall verdict with the checks.
fn golden(case: &str, fixture: &str, vars: &[(&str, &str)]) {
    let (out, report) = probe(fixture, vars);
    let env: String = vars.iter().map(|(k, v)| format!("{k}={v} ")).collect();
    let text = format!("# {env}qbench probe --sysfs-root tests/fixtures/probe/{fixture}\n{}", verdict_text(&report));
    let path = fixtures().join("expected").join(format!("{case}.txt"));
    if std::env::var_os("QBENCH_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &text).unwrap();
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|_| panic!("no {}: run with QBENCH_BLESS=1 to write it", path.display()));
    assert_eq!(text, expected, "verdict of {case} differs from {}", path.display());

    let statuses: Vec<&str> =
        report["checks"].as_array().unwrap().iter().map(|c| c["status"].as_str().unwrap()).collect();
    let worst = ["FAIL", "WARN"].into_iter().find(|s| statuses.contains(s)).unwrap_or("PASS");
    assert_eq!(report["verdict"], worst);
    assert_eq!(out.status.code(), Some(if worst == "FAIL" { 1 } else { 0 }));
    let built = status(&report, "mpi.build");
    if cfg!(feature = "mpi") {
        assert_eq!(built, "PASS");
    } else {
        assert_ne!(built, "FAIL", "no launcher variables are set, so a build without MPI is no failure");
    }
}

#[test]
fn mlx4_infiniband_node() {
    golden("mlx4-ib", "mlx4-ib", &[]);
}

#[test]
fn mlx4_infiniband_node_with_the_seed_setup() {
    golden("mlx4-ib-seed", "mlx4-ib", &SEED);
}

#[test]
fn node_without_rdma() {
    golden("no-rdma", "no-rdma", &[]);
}

#[test]
fn node_without_rdma_with_the_seed_setup() {
    golden("no-rdma-seed", "no-rdma", &SEED);
}

#[test]
fn mlx5_roce_node_configured_by_nccl_conf() {
    golden("mlx5-roce", "mlx5-roce", &[]);
}

#[test]
fn mlx5_roce_node_with_wrong_variables() {
    golden(
        "mlx5-roce-wrong",
        "mlx5-roce",
        &[
            ("NCCL_IB_GID_INDEX", "7"),
            ("NCCL_IB_HCA", "=mlx5_1:1,mlx5_3"),
            ("NCCL_NET_GDR_LEVEL", "pxb"),
            ("NCCL_ALGO", "ring,tree;allreduce:rings"),
        ],
    );
}

#[test]
fn node_with_ports_down() {
    golden("port-down", "port-down", &[]);
}

#[test]
fn node_with_ports_down_selecting_a_dead_port() {
    golden("port-down-hca", "port-down", &[("NCCL_IB_HCA", "mlx5_1"), ("NCCL_IB_DISABLE", "1")]);
}

#[test]
fn node_ready_for_gpudirect_rdma() {
    golden(
        "peermem",
        "peermem",
        &[("NCCL_IB_HCA", "mlx5_0:1,mlx5_1:1"), ("NCCL_SOCKET_IFNAME", "eno"), ("NCCL_NET_GDR_LEVEL", "PIX")],
    );
}

#[test]
fn malformed_sysfs() {
    golden("malformed", "malformed", &[]);
}

#[test]
fn bare_node() {
    golden("bare", "bare", &[]);
}

/// A node without a GPU (a login or CPU node) SKIPs the GPU checks and
/// passes, with WARNs; --expect-gpus makes the missing GPUs a FAIL. A node
/// with GPUs is judged alike either way.
#[test]
fn a_node_without_a_gpu_skips_its_gpu_checks_unless_gpus_are_expected() {
    let (out, report) = probe("bare", &[]);
    assert_eq!((out.status.code(), report["verdict"].as_str()), (Some(0), Some("WARN")));
    assert_eq!(status(&report, "gpu.devices"), "SKIP");
    assert!(check(&report, "gpu.devices")["found"].as_str().unwrap().starts_with("no NVIDIA GPU on this node"));
    let expecting = |fixture: &str| {
        let out = command(&[])
            .args(["probe", "--json", "--expect-gpus", "--sysfs-root"])
            .arg(fixtures().join(fixture))
            .output()
            .unwrap();
        (out.status.code(), serde_json::from_slice::<Value>(&out.stdout).unwrap())
    };
    let (code, report) = expecting("bare");
    assert_eq!((code, report["verdict"].as_str()), (Some(1), Some("FAIL")));
    assert_eq!(status(&report, "gpu.devices"), "FAIL");
    for fixture in ["mlx5-roce", "no-rdma"] {
        let (out, plain) = probe(fixture, &[]);
        let (code, expected) = expecting(fixture);
        assert_eq!((code, &expected["checks"]), (out.status.code(), &plain["checks"]), "{fixture}");
    }
}

/// `qbench show` of `qbench probe --json`'s document prints the report the
/// probe printed; a document of the probe's schema that is not one is
/// one line, exit 2.
#[test]
fn show_prints_a_probe_record_as_the_probe_printed_it() {
    let dir = std::env::temp_dir().join(format!("qbench-probe-show-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for fixture in ["mlx5-roce", "bare", "malformed", "port-down"] {
        let (out, _) = probe(fixture, &[]);
        let file = dir.join(format!("{fixture}.json"));
        std::fs::write(&file, &out.stdout).unwrap();
        let printed = command(&[]).args(["probe", "--sysfs-root"]).arg(fixtures().join(fixture)).output().unwrap();
        let shown = command(&[]).arg("show").arg(&file).output().unwrap();
        assert_eq!(shown.status.code(), Some(0), "{}", String::from_utf8_lossy(&shown.stderr));
        assert_eq!(String::from_utf8_lossy(&shown.stdout), String::from_utf8_lossy(&printed.stdout), "{fixture}");
    }
    let bad = dir.join("bad.json");
    std::fs::write(&bad, r#"{"schema": "qbench.probe.v1", "facts": 3}"#).unwrap();
    let out = command(&[]).arg("show").arg(&bad).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!((out.status.code(), err.lines().count()), (Some(2), 1), "{err}");
    assert!(err.contains("bad.json: not a valid qbench.probe.v1 report"), "{err}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn seed_setup_passes_where_mlx4_0_and_ib0_exist_and_fails_where_they_do_not() {
    let (_, good) = probe("mlx4-ib", &SEED);
    for v in ["NCCL_IB_HCA", "NCCL_SOCKET_IFNAME", "NCCL_IB_DISABLE"] {
        assert_eq!(status(&good, &format!("nccl.env {v}")), "PASS", "{v} on mlx4-ib");
    }
    assert_eq!(check(&good, "nccl.env NCCL_IB_HCA")["found"], "NCCL_IB_HCA=mlx4_0 selects mlx4_0:1");

    let (out, bad) = probe("no-rdma", &SEED);
    assert_eq!(out.status.code(), Some(1));
    let hca = check(&bad, "nccl.env NCCL_IB_HCA");
    assert_eq!(hca["status"], "FAIL");
    assert!(hca["fix"].as_str().unwrap().contains("unset NCCL_IB_HCA"));
    let ifname = check(&bad, "nccl.env NCCL_SOCKET_IFNAME");
    assert_eq!(ifname["status"], "FAIL");
    assert!(ifname["found"].as_str().unwrap().contains("matches no interface (interfaces here: eth0 and lo)"));
    assert!(ifname["fix"].as_str().unwrap().contains("NCCL_SOCKET_IFNAME=eth0"));
    assert_eq!(status(&bad, "nccl.env NCCL_IB_DISABLE"), "PASS");
}

#[test]
fn a_dead_port_in_nccl_ib_hca_names_the_live_one() {
    let (_, report) = probe("port-down", &[("NCCL_IB_HCA", "mlx5_1")]);
    let hca = check(&report, "nccl.env NCCL_IB_HCA");
    assert_eq!(hca["status"], "FAIL");
    assert!(hca["fix"].as_str().unwrap().contains("NCCL_IB_HCA=mlx5_0:1"), "{hca}");
}

#[test]
fn a_fixture_run_never_asks_the_gpu_libraries() {
    let (_, report) = probe("no-rdma", &[]);
    let why = "not queried: fixture run (--sysfs-root)";
    assert_eq!(report["facts"]["gpu"]["driver"]["cuda"]["unknown"], why);
    assert_eq!(report["facts"]["gpu"]["driver"]["nvml"]["unknown"], why);
    assert_eq!(report["facts"]["nccl"]["library"]["version"]["unknown"], why);
    assert_eq!(report["host"]["live"], false);
    assert_eq!(report["facts"]["gpu"]["pairs"][0]["path"], "PHB");
}

/// `qbench probe` as text on a fixture.
fn probe_text(fixture: &str) -> String {
    let out = command(&[]).args(["probe", "--sysfs-root"]).arg(fixtures().join(fixture)).output().unwrap();
    String::from_utf8(out.stdout).unwrap()
}

/// Each node's CPUs and each GPU's and adapter's node are facts of the JSON
/// and rows of the text; a GPU whose adapters all sit on another node is
/// named (its traffic takes NCCL's SYS path), one with an adapter on its
/// own node is not.
#[test]
fn numa_nodes_of_the_gpus_and_adapters() {
    let (_, r) = probe("mlx4-ib", &[]);
    let f = &r["facts"];
    assert_eq!(f["numa_nodes"], serde_json::json!([{"node": 0, "cpus": "0-7"}, {"node": 1, "cpus": "8-15"}]));
    let nodes = |v: &Value| v.as_array().unwrap().iter().map(|d| d["numa_node"].clone()).collect::<Vec<_>>();
    assert_eq!(nodes(&f["gpu"]["gpus"]), [0, 1]);
    assert_eq!(nodes(&f["rdma"]["devices"]), [0]);
    let same = |v: &Value| {
        v["gdr"]["gpu_nic"].as_array().unwrap().iter().map(|p| p["same_numa_node"].clone()).collect::<Vec<_>>()
    };
    assert_eq!(same(f), [true, false]);
    let text = probe_text("mlx4-ib");
    for needle in [
        " 1    | 8-15 | GPU1 | -            ",
        "NUMA: GPU1 (node 1) has no RDMA device on its node: its traffic to the network crosses the CPUs' interconnect (NCCL's SYS path)",
    ] {
        assert!(text.contains(needle), "no {needle:?} in:\n{text}");
    }

    let (_, r) = probe("peermem", &[]);
    assert_eq!(same(&r["facts"]), [true, false, false, true]);
    assert!(!probe_text("peermem").contains("NUMA: GPU"));

    // The H200 machines' GPUs: the kernel gives them no node.
    let (_, r) = probe("no-rdma", &[]);
    assert_eq!(nodes(&r["facts"]["gpu"]["gpus"]), [-1, -1]);
    assert!(probe_text("no-rdma").contains("\n  on no node (numa_node -1): GPU0, GPU1\n"));

    let (_, r) = probe("malformed", &[]);
    let cpus = r["facts"]["numa_nodes"][0]["cpus"]["unknown"].as_str().unwrap();
    assert_eq!(cpus, "/sys/devices/system/node/node0/cpulist: unexpected content \"0-3,x\"");
    let (_, r) = probe("bare", &[]);
    assert_eq!(r["facts"]["numa_nodes"], serde_json::json!([]));
    assert!(probe_text("bare").contains("NUMA nodes\nnone listed (/sys/devices/system/node)"));
}

#[test]
fn text_report_ends_with_the_verdict_table() {
    let out = command(&SEED).args(["probe", "--sysfs-root"]).arg(fixtures().join("mlx4-ib")).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    for needle in
        ["CHECK", "STATUS", "FOUND", "FIX", "nccl.env NCCL_IB_HCA", "GPU0   | X    | SYS  | PIX", "verdict: WARN"]
    {
        assert!(text.contains(needle), "no {needle:?} in:\n{text}");
    }
    assert_eq!(out.status.code(), Some(0));
}

/// A node of a thousand adapters: the text report stays a few screens
/// (the topology summarised, tables and findings cut with a count of the
/// rest), the JSON keeps every adapter, and both come back in seconds.
#[test]
fn a_thousand_adapters_make_a_bounded_report() {
    let root = std::env::temp_dir().join(format!("qbench-probe-many-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let copied = Command::new("cp").arg("-a").arg(fixtures().join("mlx5-roce")).arg(&root).status().unwrap();
    assert!(copied.success());
    let class = root.join("sys/class/infiniband");
    let target = std::fs::read_link(class.join("mlx5_0")).unwrap();
    for i in 2..1000 {
        std::os::unix::fs::symlink(&target, class.join(format!("mlx5_{i}"))).unwrap();
    }
    let started = std::time::Instant::now();
    let out = command(&[]).args(["probe", "--sysfs-root"]).arg(&root).output().unwrap();
    assert!(started.elapsed().as_secs() < 30, "took {:?}", started.elapsed());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.len() < 200_000 && text.lines().count() < 800, "{} bytes, {} lines", text.len(), text.lines().count());
    for needle in ["2 GPUs and 1000 RDMA devices", "… and 936 more ports", "and 992 more", "more checks ("] {
        assert!(text.contains(needle), "no {needle:?} in:\n{text}");
    }
    // The WARN count depends on the features built in (a build without MPI
    // warns about it), so the verdict is read, not matched: no FAIL, and
    // every adapter's checks counted.
    let verdict =
        text.lines().find(|l| l.starts_with("verdict: WARN (")).unwrap_or_else(|| panic!("no verdict in:\n{text}"));
    let counts: Vec<u64> =
        verdict.split(|c: char| !c.is_ascii_digit()).filter(|n| !n.is_empty()).map(|n| n.parse().unwrap()).collect();
    assert_eq!(counts[0], 0, "{verdict}");
    assert_eq!(counts[1] + counts[2], 2014, "{verdict}");
    let out = command(&[]).args(["probe", "--json", "--sysfs-root"]).arg(&root).output().unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["facts"]["rdma"]["devices"].as_array().unwrap().len(), 1000);
    std::fs::remove_dir_all(&root).unwrap();
}

#[test]
fn an_unreadable_root_is_a_usage_error() {
    let missing = fixtures().join("no-such-tree");
    let file = fixtures().join("expected/bare.txt");
    for root in [missing, file] {
        let out = command(&[]).args(["probe", "--sysfs-root"]).arg(&root).output().unwrap();
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.starts_with("qbench: --sysfs-root "), "{err}");
        assert!(out.stdout.is_empty());
    }
}

#[test]
fn a_live_run_works_on_this_machine() {
    let started = std::time::Instant::now();
    let out = command(&[]).args(["probe", "--json"]).output().unwrap();
    let elapsed = started.elapsed();
    assert!(out.stderr.is_empty(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["host"]["live"], true);
    let code = if report["verdict"] == "FAIL" { 1 } else { 0 };
    assert_eq!(out.status.code(), Some(code));
    assert!(elapsed.as_secs_f64() < 5.0, "probe took {elapsed:?}");
}
