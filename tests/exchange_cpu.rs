//! The exchange pattern and whole circuits on host-memory ranks against a
//! plain reference: a whole state vector to which the same gates are
//! applied amplitude by amplitude.

use num_complex::{Complex, Complex64};
use qbench::fault::Fault;
use qbench::statevec::circuit::{self, Gate, hadamard};
use qbench::statevec::layout::{Layout, Precision};
use qbench::statevec::schedule::{Schedule, compile};
use qbench::statevec::state::ProductState;
use qbench::statevec::step::PhysicalGate;
use qbench::transport::amplitudes::host_memory::HostRegister;
use qbench::transport::amplitudes::{Register, Wire, step};
use qbench::world::Solo;
use std::f64::consts::FRAC_1_SQRT_2;

mod common;

fn reference_h(v: &mut [Complex64], q: u32) {
    for i in 0..v.len() {
        if i >> q & 1 == 0 {
            let j = i | 1 << q;
            let (a, b) = (v[i], v[j]);
            v[i] = (a + b) * FRAC_1_SQRT_2;
            v[j] = (a - b) * FRAC_1_SQRT_2;
        }
    }
}

fn reference_swap(v: &[Complex64], p: u32, q: u32) -> Vec<Complex64> {
    (0..v.len())
        .map(|i| {
            let (bp, bq) = (i >> p & 1, i >> q & 1);
            v[(i & !(1 << p | 1 << q)) | bq << p | bp << q]
        })
        .collect()
}

/// A logical gate applied to the reference, amplitude by amplitude.
fn reference_gate(v: &mut Vec<Complex64>, g: &Gate) {
    let bit = |i: usize, q: u32| i >> q & 1 == 1;
    match g {
        Gate::H(q) => reference_h(v, *q),
        Gate::U { q, m } => {
            for i in 0..v.len() {
                if !bit(i, *q) {
                    let j = i | 1 << q;
                    let (a, b) = (v[i], v[j]);
                    v[i] = m[0] * a + m[1] * b;
                    v[j] = m[2] * a + m[3] * b;
                }
            }
        }
        Gate::Phase { qubits, phase } => {
            for (i, a) in v.iter_mut().enumerate() {
                if qubits.iter().all(|&q| bit(i, q)) {
                    *a *= phase;
                }
            }
        }
        Gate::Swap(a, b) => *v = reference_swap(v, *a, *b),
        Gate::Cx { c, t } => {
            for i in 0..v.len() {
                if bit(i, *c) && !bit(i, *t) {
                    v.swap(i, i | 1 << t);
                }
            }
        }
    }
}

fn register(qubits: u32, ranks: usize) -> (HostRegister<'static, f64>, Vec<Complex64>) {
    let layout = Layout::new(qubits, ranks, Precision::Double).unwrap();
    let mut reg = HostRegister::<f64>::new(layout, ranks, &Solo).unwrap();
    let start = ProductState::new(qubits);
    reg.init(&start).unwrap();
    (reg, (0..1u64 << qubits).map(|i| start.amplitude(i)).collect())
}

fn largest_difference(reg: &HostRegister<f64>, ranks: usize, v: &[Complex64]) -> f64 {
    let got: Vec<Complex<f64>> = (0..ranks).flat_map(|r| reg.chunk(r)).collect();
    got.iter().zip(v).map(|(a, b)| (a - b).norm()).fold(0.0, f64::max)
}

/// Runs local gates, global gates and swaps on `ranks` host ranks and on
/// the reference; returns the largest amplitude difference.
fn run(qubits: u32, ranks: usize, fault: Option<Fault>) -> f64 {
    let (mut reg, mut v) = register(qubits, ranks);
    let l = reg.layout().local_qubits();
    let mut go = |s: PhysicalGate| step::run(&mut reg, &s, Some(Wire::Cpu), fault).unwrap();
    for q in [0, l / 2, l - 1] {
        go(PhysicalGate::H(q));
        reference_h(&mut v, q);
    }
    for t in l..qubits {
        go(PhysicalGate::GlobalU { t, m: hadamard() });
        reference_h(&mut v, t);
        go(PhysicalGate::GlobalSwap { t, q: l - 1 });
        v = reference_swap(&v, t, l - 1);
        go(PhysicalGate::GlobalSwap { t, q: 0 });
        v = reference_swap(&v, t, 0);
    }
    largest_difference(&reg, ranks, &v)
}

#[test]
fn host_ranks_match_a_plain_state_vector() {
    for ranks in [2, 4, 8] {
        for qubits in [6, 9] {
            let err = run(qubits, ranks, None);
            assert!(err < 1e-12, "{ranks} ranks, {qubits} qubits: {err}");
        }
    }
}

/// Circuits compiled by either schedule and run on host ranks end where
/// the reference, gate by gate on a whole state vector, ends.
#[test]
fn circuits_on_host_ranks_match_the_reference_under_both_schedules() {
    for (qubits, ranks) in [(7u32, 2usize), (8, 4), (8, 8)] {
        for c in [circuit::qft(qubits), circuit::random(qubits, 80, 3)] {
            let (_, start) = register(qubits, ranks);
            let mut want = start;
            for g in &c.gates {
                reference_gate(&mut want, g);
            }
            for s in Schedule::ALL {
                let (mut reg, _) = register(qubits, ranks);
                let layout = *reg.layout();
                for st in compile(&c, &layout, s) {
                    step::run(&mut reg, &st, Some(Wire::Cpu), None).unwrap();
                }
                let err = largest_difference(&reg, ranks, &want);
                assert!(err < 1e-12, "{} {s:?} on {ranks} ranks: {err}", c.name);
            }
        }
    }
}

#[test]
fn the_wrong_partner_and_the_wrong_half_are_caught() {
    for fault in [Fault::WrongPartner, Fault::WrongHalf] {
        assert!(run(8, 4, Some(fault)) > 1e-3, "{fault:?} went unnoticed");
        // And the register's own check sees it too.
        let layout = Layout::new(8, 2, Precision::Single).unwrap();
        let mut reg = HostRegister::<f32>::new(layout, 2, &Solo).unwrap();
        let mut model = ProductState::new(8);
        reg.init(&model).unwrap();
        let t = 7;
        if fault == Fault::WrongPartner {
            step::run(&mut reg, &PhysicalGate::GlobalU { t, m: hadamard() }, Some(Wire::Cpu), Some(fault)).unwrap();
            model.h(t);
        } else {
            step::run(&mut reg, &PhysicalGate::GlobalSwap { t, q: 6 }, Some(Wire::Cpu), Some(fault)).unwrap();
            model.swap(t, 6);
        }
        assert!(reg.count_wrong(&model, 0.0).unwrap() > 0, "{fault:?}");
        assert_eq!(reg.count_wrong(&model, 0.0).unwrap(), reg.count_wrong(&model, 0.0).unwrap());
    }
}

#[test]
fn a_correct_run_checks_clean_in_single_precision() {
    let layout = Layout::new(12, 4, Precision::Single).unwrap();
    let mut reg = HostRegister::<f32>::new(layout, 4, &Solo).unwrap();
    let mut model = ProductState::new(12);
    reg.init(&model).unwrap();
    for t in 10..12 {
        step::run(&mut reg, &PhysicalGate::GlobalU { t, m: hadamard() }, Some(Wire::Cpu), None).unwrap();
        model.h(t);
        step::run(&mut reg, &PhysicalGate::GlobalSwap { t, q: 9 }, Some(Wire::Cpu), None).unwrap();
        model.swap(t, 9);
    }
    assert_eq!(reg.count_wrong(&model, 0.0).unwrap(), 0);
}

/// The command itself on host-memory ranks: every class and circuit
/// checked clean under both schedules, a verdict for each circuit, records
/// in JSON, a deliberate wrong partner or half failing the run.
#[test]
fn exchange_command_on_host_ranks() {
    let qb = env!("CARGO_BIN_EXE_qbench");
    for g in ["2", "4", "8"] {
        let json = std::env::temp_dir().join(format!("qbench-exchange-{}-{g}.json", std::process::id()));
        let o = std::process::Command::new(qb)
            .args(["exchange", "--qubits", "12..13", "-g", g, "--transport", "cpu", "-n", "2"])
            .args(["--circuit", "qft,random:40:2", "-J", json.to_str().unwrap()])
            .env_remove("QBENCH_CORRUPT")
            .output()
            .unwrap();
        assert!(o.status.success(), "-g {g}: {}", String::from_utf8_lossy(&o.stderr));
        let text = String::from_utf8_lossy(&o.stdout);
        assert!(text.contains("== verdict") && text.contains("qft(13) on"), "{text}");
        let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        assert_eq!(v["schema"], "qbench.exchange.v2");
        assert_eq!(v["complete"], true);
        let regs = v["registers"].as_array().unwrap();
        // Each size spread over the ranks, and on one rank beside it.
        assert_eq!(regs.len(), 4);
        for r in regs {
            let spread = r["ranks"] != 1;
            let classes = r["classes"].as_array().unwrap();
            assert!(classes.iter().all(|c| c["wrong"] == 0 && c["amplitudes"].as_u64() > Some(0)));
            let exchanging = classes.iter().filter(|c| c["transport"] == "cpu").count();
            assert_eq!(exchanging > 0, spread, "{r}");
            let circuits = r["circuits"].as_array().unwrap();
            // qft and the mirrored random circuit, under both schedules.
            assert_eq!(circuits.len(), 4);
            assert!(circuits.iter().all(|c| c["wrong"] == 0 && c["projected_s"].as_f64() > Some(0.0)), "{r}");
        }
        let decisions = v["decisions"].as_array().unwrap();
        assert_eq!(decisions.len(), 2);
        assert!(decisions.iter().all(|d| d["one_gpu_from"] == "measured" && d["speedup"].as_f64() > Some(0.0)));
        std::fs::remove_file(&json).unwrap();
    }
    for fault in ["partner", "half"] {
        let o = std::process::Command::new(qb)
            .args(["exchange", "--qubits", "10", "-g", "2", "--transport", "cpu", "-n", "1", "--json"])
            .env("QBENCH_CORRUPT", fault)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(1), "{fault}");
        assert!(String::from_utf8_lossy(&o.stderr).contains("amplitudes differ"));
        // The circuits that exchanged are caught too.
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let circuits = v["registers"][0]["circuits"].as_array().unwrap();
        assert!(circuits.iter().any(|c| c["wrong"].as_u64() > Some(0)), "{fault}: {circuits:?}");
    }
    let o = std::process::Command::new(qb)
        .args(["exchange", "--qubits", "10", "-g", "3", "--transport", "cpu"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
}

/// What runs and what does not: a register no host can hold runs nothing
/// (exit 3, the record incomplete); `--transport all,cpu` runs the host
/// ranks and names the GPU wires it could not run where the driver is
/// missing, or runs both where it is there.
#[test]
fn nothing_run_is_exit_3_and_the_host_part_of_all_runs_alone() {
    let qb = env!("CARGO_BIN_EXE_qbench");
    let json = std::env::temp_dir().join(format!("qbench-exchange-none-{}.json", std::process::id()));
    let o = std::process::Command::new(qb)
        .args(["exchange", "--qubits", "40", "-g", "2", "--transport", "cpu", "-J", json.to_str().unwrap()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(err.contains("no register could be held here"), "{err}");
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["complete"], false);
    std::fs::remove_file(&json).unwrap();

    let o = std::process::Command::new(qb)
        .args(["exchange", "--qubits", "12", "-g", "2", "--transport", "all,cpu", "-n", "1", "--json"])
        .env_remove("QBENCH_CORRUPT")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let regs = v["registers"].as_array().unwrap();
    let held =
        |memory: &str| regs.iter().any(|r| r["memory"] == memory && !r["classes"].as_array().unwrap().is_empty());
    assert!(held("host"), "{v}");
    match v["unavailable"].as_array() {
        Some(u) => {
            assert_eq!(u.len(), 1, "{u:?}");
            assert!(u[0]["transport"].as_str().unwrap().ends_with("on gpu memory"), "{u:?}");
            assert!(u[0]["reason"].as_str().unwrap().contains("CUDA driver"), "{u:?}");
            assert!(!held("gpu"), "{v}");
        }
        None => assert!(held("gpu"), "no GPU register and none named unavailable: {v}"),
    }
}

/// Users' own circuits: an OpenQASM 2 file runs mirrored and checked; a
/// file that cannot run is one line and exit 2 before anything starts.
#[test]
fn openqasm_circuits_run_mirrored_or_are_refused() {
    let qb = env!("CARGO_BIN_EXE_qbench");
    let dir = std::env::temp_dir().join(format!("qbench-qasm-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let write = |name: &str, body: &str| {
        let p = dir.join(name);
        std::fs::write(&p, format!("OPENQASM 2.0;\ninclude \"qelib1.inc\";\nqreg q[9];\n{body}")).unwrap();
        p
    };
    let good = write(
        "mine.qasm",
        "h q[0];\ncx q[0],q[8];\ncx q[8],q[4];\nrz(pi/3) q[8];\nccx q[0],q[4],q[7];\nu3(0.1,0.2,0.3) q[8];\nswap q[8],q[1];\n",
    );
    let o = std::process::Command::new(qb)
        .args(["exchange", "--qubits", "9", "-g", "4", "--transport", "cpu", "-n", "1", "--json"])
        .args(["--circuit", good.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let circuits = v["registers"][0]["circuits"].as_array().unwrap();
    assert_eq!(circuits.len(), 2);
    assert!(circuits.iter().all(|c| c["wrong"] == 0), "{circuits:?}");
    assert!(circuits.iter().any(|c| c["exchanges"].as_u64() > Some(0)), "{circuits:?}");
    for (name, body, want) in [
        ("unknown.qasm", "h q[0];\ntoffoli q[0],q[1],q[2];\n", "unknown.qasm:5: unknown gate 'toffoli'"),
        ("range.qasm", "h q[9];\n", "range.qasm:4: qubit q[9] is out of range"),
    ] {
        let p = write(name, body);
        let o = std::process::Command::new(qb)
            .args(["exchange", "--qubits", "9", "-g", "2", "--transport", "cpu", "--circuit", p.to_str().unwrap()])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{name}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(want), "{name}: {err}");
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// `--plan`: counts of H200s of the built-in profile, nothing measured:
/// which counts fit, what each schedule and wire costs, the answer in one
/// line, every figure labelled projected with its source, and the text
/// within 80 columns.
#[test]
fn a_plan_answers_for_gpus_this_node_does_not_have() {
    let plan = |qubits: &str, extra: &[&str]| {
        let base = ["exchange", "--plan", "--qubits", qubits, "-g", "1,2,4,8", "--profile", "h200x8-ndr"];
        common::qbench(&[&base[..], extra].concat())
    };
    let json = |o: &std::process::Output| -> serde_json::Value {
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        serde_json::from_slice(&o.stdout).unwrap()
    };
    // 2^36 amplitudes: 1 TiB in double, 512 GiB in single; an H200 holds 140 GiB.
    let v = json(&plan("36", &["--json"]));
    assert!(v["registers"].as_array().unwrap().is_empty(), "nothing is measured");
    let rows = v["forecasts"].as_array().unwrap();
    assert!(rows.iter().all(|r| r["fits"] == false && r["projected_s"].is_null()), "{rows:?}");
    let v = json(&plan("36", &["--json", "--precision", "single"]));
    let rows = v["forecasts"].as_array().unwrap();
    assert!(rows.iter().all(|r| (r["fits"] == true) == (r["gpus"] == 8)), "{rows:?}");
    // One row on one GPU, one per schedule and wire on the others.
    let v = json(&plan("30", &["--json", "--transport", "nccl,p2p", "--schedule", "both"]));
    let rows = v["forecasts"].as_array().unwrap();
    assert_eq!(rows.len(), 1 + 3 * 2 * 2, "{rows:?}");
    let p2p: Vec<_> = rows.iter().filter(|r| r["transport"] == "p2p").collect();
    assert!(
        p2p.iter().all(|r| r["projected_s"].is_null() && r["verdict"].as_str().unwrap().contains("no figure for p2p"))
    );
    // 14 qubits: 256 KiB, every step about its latency; spreading does not pay.
    let v = json(&plan("14", &["--json"]));
    assert_eq!(v["plans"][0]["gpus"], 1, "{}", v["plans"]);
    assert!(v["plans"][0]["answer"].as_str().unwrap().starts_with("spreading qft(14) does not pay"), "{}", v["plans"]);
    let o = plan("30", &[]);
    let text = common::stdout(&o);
    assert!(text.contains("== plan: qft(30), double precision (projected)"), "{text}");
    assert!(text.contains("every figure above is projected, not measured: from profile h200x8-ndr"), "{text}");
    assert!(text.contains("CUDAQ_GLOBAL_INDEX_BITS=3") && text.contains("mpirun -np 8"), "{text}");
    assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
    // Without a source, this node measured first, and said; the cpu profile
    // states no machine.
    let v = json(&common::qbench(&["exchange", "--plan", "--qubits", "14", "-g", "1,2", "--json"]));
    let from = v["plan_figures"]["source"].as_str().unwrap();
    assert!(from.starts_with("measured: this node, measured now"), "{from}");
    assert!(v["forecasts"].as_array().unwrap().iter().all(|r| r["source"] == from), "{v}");
    let o = plan("30", &["--profile", "cpu"]);
    assert_eq!(o.status.code(), Some(2), "{}", common::stderr(&o));
}

/// A file holding only `[machine]` describes a machine to plan for; a key
/// that cannot is one line naming the file and the key, exit 2.
#[test]
fn a_machine_table_alone_is_enough_to_plan() {
    let dir = std::env::temp_dir().join(format!("qbench-machine-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("mine.toml");
    std::fs::write(&file, "[machine]\ngpu_memory = \"80G\"\nhbm_gbps = 1800\ngpus_per_node = 4\nnvlink_gbps = 200\n")
        .unwrap();
    let f = file.to_str().unwrap();
    let o = common::qbench(&["exchange", "--plan", "--profile", f, "--qubits", "30", "-g", "1,2,4", "--json"]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["forecasts"].as_array().unwrap().iter().all(|r| r["projected_s"].as_f64() > Some(0.0)), "{v}");
    let unknown = v["plans"][0]["unknown"].to_string();
    assert!(unknown.contains("launch_us") && unknown.contains("nvlink_latency_us"), "{unknown}");
    std::fs::write(&file, "[machine]\ngpu_memory = \"80G\"\nhbm_gbps = -3\n").unwrap();
    let o = common::qbench(&["exchange", "--plan", "--profile", f, "--qubits", "30"]);
    let err = common::stderr(&o);
    assert_eq!((o.status.code(), err.lines().count()), (Some(2), 1), "{err}");
    assert!(err.contains("mine.toml [machine] hbm_gbps"), "{err}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_simulators_one_gpu_time_is_priced_spread_from_a_record_of_one_rank() {
    let dir = std::env::temp_dir().join(format!("qbench-simtime-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (one, two) = (dir.join("one.json"), dir.join("two.json"));
    let exchange = |args: &[&str]| {
        let base = ["exchange", "--transport", "cpu", "--qubits", "12", "--circuit", "qft", "-n", "1"];
        common::qbench(&[&base[..], args].concat())
    };
    let o = exchange(&["-g", "1", "-J", one.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = exchange(&[
        "-g",
        "2",
        "--simulator-time",
        "qft=0.25",
        "--one-gpu-from",
        one.to_str().unwrap(),
        "-J",
        two.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("for the simulator given (0.250 s on one host rank)"), "{text}");
    let recorded: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&one).unwrap()).unwrap();
    let one_s = recorded["registers"][0]["circuits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["time"]["median"].as_f64().unwrap())
        .fold(f64::INFINITY, f64::min);
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&two).unwrap()).unwrap();
    let d = &v["decisions"][0];
    assert_eq!(d["one_gpu_from"], format!("measured in {}", one.display()));
    assert_eq!(d["one_gpu_s"].as_f64(), Some(one_s));
    let (local, exchange_s, spread) =
        (d["local_s"].as_f64().unwrap(), d["exchange_s"].as_f64().unwrap(), d["spread_s"].as_f64().unwrap());
    assert!((local + exchange_s - spread).abs() < 1e-12 && local > 0.0, "{d}");
    let p = &d["simulator"];
    let want = 0.25 * local / one_s + exchange_s;
    assert!((p["spread_s"].as_f64().unwrap() - want).abs() < 1e-9 * want, "{d}");
    assert!((p["speedup"].as_f64().unwrap() - 0.25 / want).abs() < 1e-9, "{d}");
    // A record whose one-rank register is left out cannot stand for one GPU.
    let mut spread_only = v.clone();
    spread_only["registers"].as_array_mut().unwrap().retain(|r| r["ranks"] != 1);
    let spread_only_path = dir.join("spread-only.json");
    std::fs::write(&spread_only_path, spread_only.to_string()).unwrap();
    // Bad input: one line, exit 2, before anything runs.
    for (args, says) in [
        (vec!["-g", "2", "--simulator-time", "fast"], "not a positive number"),
        (vec!["-g", "2", "--simulator-time", "random=1"], "--circuit does not run"),
        (vec!["-g", "2", "--one-gpu-from", "Cargo.toml"], "not JSON"),
        (vec!["-g", "2", "--one-gpu-from", spread_only_path.to_str().unwrap()], "no circuit ran correctly on one rank"),
    ] {
        let o = exchange(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says) && err.trim().lines().count() == 1, "{args:?}: {err}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Registers past what a count can hold, and records whose figures cannot
/// be measurements, are one line and exit 2; 59 qubits in double is still
/// a register (8 EiB), which no count here holds.
#[test]
fn a_plan_refuses_what_cannot_be_counted_or_measured() {
    let plan = |args: &[&str]| common::qbench(&[&["exchange", "--plan", "--profile", "h200x8-ndr"][..], args].concat());
    for q in ["60", "2..4294967295", "64"] {
        let o = plan(&["--qubits", q, "-g", "1"]);
        let err = common::stderr(&o);
        assert_eq!((o.status.code(), err.lines().count()), (Some(2), 1), "{q}: {err}");
        assert!(err.contains("past any machine"), "{err}");
    }
    let o = plan(&["--qubits", "59", "-g", "1", "--json"]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["forecasts"][0]["fits"], false, "{v}");
    assert_eq!(v["forecasts"][0]["bytes_per_gpu"], 1u64 << 63, "{v}");
    assert!(v["forecasts"][0]["verdict"].as_str().unwrap().contains("8.0 EiB"), "{v}");
    // A record whose time is negative is named, file and place.
    let dir = std::env::temp_dir().join(format!("qbench-poisoned-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let rec = dir.join("one.json");
    let o =
        common::qbench(&["exchange", "--transport", "cpu", "--qubits", "10", "-n", "1", "-J", rec.to_str().unwrap()]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let mut v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&rec).unwrap()).unwrap();
    v["registers"][0]["classes"][0]["time_s"] = serde_json::json!(-1.0);
    std::fs::write(&rec, v.to_string()).unwrap();
    let o = common::qbench(&["exchange", "--plan", "--from", rec.to_str().unwrap(), "--qubits", "12"]);
    let err = common::stderr(&o);
    assert_eq!((o.status.code(), err.lines().count()), (Some(2), 1), "{err}");
    assert!(err.contains("registers[0].classes[0].time_s is -1"), "{err}");
    std::fs::remove_dir_all(dir).unwrap();
}
