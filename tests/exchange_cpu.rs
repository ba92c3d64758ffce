//! The exchange pattern on host-memory ranks against a plain reference: a
//! whole state vector to which the same gates are applied pair by pair.

use num_complex::{Complex, Complex64};
use qbench::fault::Fault;
use qbench::statevec::layout::{GlobalOp, Layout, Precision};
use qbench::statevec::state::ProductState;
use qbench::transport::amplitudes::host_memory::HostRegister;
use qbench::transport::amplitudes::{Register, Wire};
use qbench::world::Solo;
use std::f64::consts::FRAC_1_SQRT_2;

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

/// Runs local gates, global gates and swaps on `ranks` host ranks and on
/// the reference; returns the largest amplitude difference.
fn run(qubits: u32, ranks: usize, fault: Option<Fault>) -> f64 {
    let layout = Layout::new(qubits, ranks, Precision::Double).unwrap();
    let l = layout.local_qubits();
    let mut reg = HostRegister::<f64>::new(layout, ranks, &Solo).unwrap();
    let start = ProductState::new(qubits);
    reg.init(&start).unwrap();
    let mut v: Vec<Complex64> = (0..1u64 << qubits).map(|i| start.amplitude(i)).collect();
    for q in [0, l / 2, l - 1] {
        reg.local_h(q).unwrap();
        reference_h(&mut v, q);
    }
    for t in l..qubits {
        reg.exchange(Wire::Cpu, GlobalOp::Gate, t, fault).unwrap();
        reg.combine(t).unwrap();
        reference_h(&mut v, t);
        reg.exchange(Wire::Cpu, GlobalOp::Swap, t, fault).unwrap();
        reg.place(t).unwrap();
        v = reference_swap(&v, t, l - 1);
        reg.local_h(l - 1).unwrap();
        reference_h(&mut v, l - 1);
    }
    let got: Vec<Complex<f64>> = (0..ranks).flat_map(|r| reg.chunk(r)).collect();
    got.iter().zip(&v).map(|(a, b)| (a - b).norm()).fold(0.0, f64::max)
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

#[test]
fn the_wrong_partner_and_the_wrong_half_are_caught() {
    for fault in [Fault::WrongPartner, Fault::WrongHalf] {
        assert!(run(8, 4, Some(fault)) > 1e-3, "{fault:?} went unnoticed");
        // And the register's own check sees it too.
        let layout = Layout::new(8, 2, Precision::Single).unwrap();
        let mut reg = HostRegister::<f32>::new(layout, 2, &Solo).unwrap();
        let mut model = ProductState::new(8);
        reg.init(&model).unwrap();
        let (pattern, t, l) = (if fault == Fault::WrongPartner { GlobalOp::Gate } else { GlobalOp::Swap }, 7, 7);
        reg.exchange(Wire::Cpu, pattern, t, Some(fault)).unwrap();
        if pattern == GlobalOp::Gate {
            reg.combine(t).unwrap();
            model.h(t);
        } else {
            reg.place(t).unwrap();
            model.swap(t, l - 1);
        }
        assert!(reg.count_wrong(&model).unwrap() > 0, "{fault:?}");
        assert_eq!(reg.count_wrong(&model).unwrap(), reg.count_wrong(&model).unwrap());
    }
}

#[test]
fn a_correct_run_checks_clean_in_single_precision() {
    let layout = Layout::new(12, 4, Precision::Single).unwrap();
    let mut reg = HostRegister::<f32>::new(layout, 4, &Solo).unwrap();
    let mut model = ProductState::new(12);
    reg.init(&model).unwrap();
    for t in 10..12 {
        reg.exchange(Wire::Cpu, GlobalOp::Gate, t, None).unwrap();
        reg.combine(t).unwrap();
        model.h(t);
        reg.exchange(Wire::Cpu, GlobalOp::Swap, t, None).unwrap();
        reg.place(t).unwrap();
        model.swap(t, 9);
    }
    assert_eq!(reg.count_wrong(&model).unwrap(), 0);
}

/// The command itself on host-memory ranks: every transport check clean,
/// records in JSON, a deliberate wrong partner failing the run.
#[test]
fn exchange_command_on_host_ranks() {
    let qb = env!("CARGO_BIN_EXE_qbench");
    for g in ["2", "4", "8"] {
        let json = std::env::temp_dir().join(format!("qbench-exchange-{}-{g}.json", std::process::id()));
        let o = std::process::Command::new(qb)
            .args([
                "exchange",
                "--qubits",
                "12..13",
                "-g",
                g,
                "--transport",
                "cpu",
                "-n",
                "2",
                "-J",
                json.to_str().unwrap(),
            ])
            .env_remove("QBENCH_CORRUPT")
            .output()
            .unwrap();
        assert!(o.status.success(), "-g {g}: {}", String::from_utf8_lossy(&o.stderr));
        let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        assert_eq!(v["schema"], "qbench.exchange.v2");
        let regs = v["registers"].as_array().unwrap();
        assert_eq!(regs.len(), 2);
        for r in regs {
            let checks = r["checks"].as_array().unwrap();
            assert_eq!(checks.len(), 2);
            assert!(checks.iter().all(|c| c["wrong"] == 0));
            let gates = r["global_gates"].as_array().unwrap().len();
            assert_eq!(gates, 2 * (g.parse::<u32>().unwrap().trailing_zeros() as usize));
        }
        std::fs::remove_file(&json).unwrap();
    }
    for fault in ["partner", "half"] {
        let o = std::process::Command::new(qb)
            .args(["exchange", "--qubits", "10", "-g", "2", "--transport", "cpu", "-n", "1"])
            .env("QBENCH_CORRUPT", fault)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(1), "{fault}");
        assert!(String::from_utf8_lossy(&o.stderr).contains("amplitudes differ"));
    }
    let o = std::process::Command::new(qb)
        .args(["exchange", "--qubits", "10", "-g", "3", "--transport", "cpu"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
}
