//! Whether spreading a register over more GPUs pays: the measured local and
//! global gate times put into circuit models (QFT, random circuits), against
//! the same circuit on one GPU, whose gate time is measured on the whole
//! register when one GPU holds it and projected (local gate × 2^k) when it
//! does not. Projections are labelled as such; they are arithmetic on
//! measured times, never measurements.

use crate::record::exchange::{Circuit, Projection, RegisterRun, Verdict};
use crate::statevec::layout::{GlobalOp, largest_register};

/// The verdict for a GPU register run; `memory` is one GPU's memory;
/// `one_gpu` the same register measured on one GPU, when it was.
pub fn judge(run: &RegisterRun, memory: u64, circuits: &[Circuit], one_gpu: Option<&RegisterRun>) -> Option<Verdict> {
    let n = run.qubits;
    let k = n - run.local_qubits;
    let local = run.local_gate_s();
    if k == 0 {
        return Some(alone(run, memory, circuits));
    }
    let best = |pattern: GlobalOp| {
        run.global_gates
            .iter()
            .filter(|g| g.pattern == pattern)
            .map(|g| (g.transport.clone(), g.exchange.median + g.update.median))
            .min_by(|a, b| a.1.total_cmp(&b.1))
    };
    let (wire, global) = best(GlobalOp::Gate).or_else(|| best(GlobalOp::Swap))?;
    // A swap as the QFT needs it: the exchange of half a chunk and placing it.
    let swap = best(GlobalOp::Swap).map_or(global, |(_, s)| s - local.min(s));
    let one_gpu_fits = largest_register(memory, run.precision, 0) >= n;
    // Measured on the whole register, or projected: one GPU holds 2^k times
    // the amplitudes, and a memory-bound pass takes 2^k times longer.
    let measured = one_gpu.filter(|r| r.qubits == n && r.ranks == 1 && !r.local_gates.is_empty());
    let local_one = measured.map_or(local * (1u64 << k) as f64, RegisterRun::local_gate_s);
    let projections = circuits
        .iter()
        .map(|&c| {
            let (gates, one, spread) = match c {
                Circuit::Qft => {
                    let (nn, kk) = (n as u64, k as u64);
                    let (h, cp, swaps) = (nn, nn * (nn - 1) / 2, nn / 2);
                    let global_swaps = kk.min(swaps);
                    let one = (h + cp + swaps) as f64 * local_one;
                    let spread = kk as f64 * global
                        + ((h - kk) + cp + (swaps - global_swaps)) as f64 * local
                        + global_swaps as f64 * swap;
                    (h + cp + swaps, one, spread)
                }
                Circuit::Random { global_fraction } => {
                    let f = if global_fraction.is_nan() { k as f64 / n as f64 } else { global_fraction };
                    let g = 1000u64;
                    (g, g as f64 * local_one, g as f64 * ((1.0 - f) * local + f * global))
                }
            };
            let speedup = one / spread;
            let gpus = run.ranks;
            let verdict = if speedup >= 1.05 {
                format!("spreading pays: ×{speedup:.2} faster on {gpus} GPUs")
            } else if speedup > 0.95 {
                "break-even: spreading neither pays nor costs".to_string()
            } else if one_gpu_fits {
                format!("spreading costs ×{:.2}: run it on one GPU", 1.0 / speedup)
            } else {
                format!(
                    "spreading only buys memory: ×{:.2} slower than one GPU would be, but {n} qubits do not fit on one",
                    1.0 / speedup
                )
            };
            let circuit = match c {
                Circuit::Random { global_fraction } if global_fraction.is_nan() => {
                    Circuit::Random { global_fraction: k as f64 / n as f64 }
                }
                c => c,
            };
            Projection { circuit, gates, one_gpu_s: one, spread_s: spread, speedup, verdict }
        })
        .collect();
    Some(Verdict {
        qubits: n,
        gpus: run.ranks,
        local_gate_s: local,
        one_gpu_gate_s: Some(local_one),
        one_gpu_measured: measured.is_some(),
        best_transport: Some(wire),
        global_gate_s: Some(global),
        swap_s: Some(swap),
        global_vs_local: Some(global / local),
        largest_on_one_gpu: largest_register(memory, run.precision, 0),
        largest_spread: largest_register(memory, run.precision, k),
        projections,
    })
}

/// The verdict of a register on one GPU: the largest register it holds and
/// what a gate and the circuits cost there.
fn alone(run: &RegisterRun, memory: u64, circuits: &[Circuit]) -> Verdict {
    let (n, gate) = (run.qubits, run.local_gate_s());
    let projections = circuits
        .iter()
        .map(|&c| {
            let (gates, circuit) = match c {
                Circuit::Qft => (n as u64 + n as u64 * (n as u64 - 1) / 2 + n as u64 / 2, c),
                Circuit::Random { .. } => (1000, Circuit::Random { global_fraction: 0.0 }),
            };
            let one = gates as f64 * gate;
            Projection {
                circuit,
                gates,
                one_gpu_s: one,
                spread_s: one,
                speedup: 1.0,
                verdict: format!("{gates} gates at {:.3} ms each on one GPU", gate * 1e3),
            }
        })
        .collect();
    Verdict {
        qubits: n,
        gpus: 1,
        local_gate_s: gate,
        one_gpu_gate_s: Some(gate),
        one_gpu_measured: true,
        best_transport: None,
        global_gate_s: None,
        swap_s: None,
        global_vs_local: None,
        largest_on_one_gpu: largest_register(memory, run.precision, 0),
        largest_spread: largest_register(memory, run.precision, 0),
        projections,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::exchange::{GlobalGate, LocalGate, References};
    use crate::statevec::layout::Precision;
    use crate::stats::Summary;

    fn run(local: f64, global: f64) -> RegisterRun {
        let st = |s| Summary::of(&[s]);
        RegisterRun {
            qubits: 30,
            local_qubits: 29,
            ranks: 2,
            precision: Precision::Double,
            memory: "gpu".into(),
            chunk_bytes: 8 << 30,
            references: References::default(),
            local_gates: vec![LocalGate { qubit: 0, time: st(local), gbps: 0.0, of_copy: 0.0 }],
            global_gates: vec![GlobalGate {
                transport: "nccl".into(),
                pattern: GlobalOp::Gate,
                qubit: 29,
                bytes: 8 << 30,
                exchange: st(global),
                update: st(0.0),
                gbps_per_direction: 0.0,
                vs_local: global / local,
            }],
            checks: vec![],
            unavailable: vec![],
        }
    }

    #[test]
    fn cheap_exchange_pays_and_dear_exchange_costs() {
        let v = judge(&run(1.0, 1.5), 140 << 30, &[Circuit::Qft], None).unwrap();
        assert!(!v.one_gpu_measured && v.one_gpu_gate_s == Some(2.0));
        assert!(v.projections[0].speedup > 1.05, "{:?}", v.projections[0]);
        assert!(v.projections[0].verdict.starts_with("spreading pays"));
        // Half the gates global at 10 local gates each: one GPU takes 2 per
        // gate (twice the amplitudes), two take 0.5 + 5.
        let v = judge(&run(1.0, 10.0), 140 << 30, &[Circuit::Random { global_fraction: 0.5 }], None).unwrap();
        let r = &v.projections[0];
        assert!((r.speedup - 2.0 / 5.5).abs() < 1e-9);
        assert!(r.verdict.starts_with("spreading costs"), "{}", r.verdict);
        let v = judge(&run(1.0, 50.0), 8 << 30, &[Circuit::Random { global_fraction: 0.5 }], None).unwrap();
        assert!(v.projections[0].verdict.starts_with("spreading only buys memory"));
    }

    #[test]
    fn a_measured_one_gpu_gate_replaces_the_projection() {
        // The whole register on one GPU took 3 per gate, not 2 × 1.
        let mut one = run(3.0, 0.0);
        (one.local_qubits, one.ranks, one.global_gates) = (30, 1, vec![]);
        let v = judge(&run(1.0, 1.5), 140 << 30, &[Circuit::Random { global_fraction: 0.5 }], Some(&one)).unwrap();
        assert!(v.one_gpu_measured && v.one_gpu_gate_s == Some(3.0));
        assert!((v.projections[0].speedup - 3.0 / 1.25).abs() < 1e-9);
        // A one-GPU run has its own verdict: no global gate, the cost of a gate.
        let alone = judge(&one, 140 << 30, &[Circuit::Qft], None).unwrap();
        assert_eq!((alone.gpus, alone.best_transport.as_deref(), alone.largest_on_one_gpu), (1, None, 33));
        assert_eq!(alone.projections[0].one_gpu_s, alone.projections[0].gates as f64 * 3.0);
    }

    #[test]
    fn circuits_parse() {
        assert_eq!(Circuit::parse("qft").unwrap(), Circuit::Qft);
        assert_eq!(Circuit::parse("random:0.25").unwrap(), Circuit::Random { global_fraction: 0.25 });
        assert!(Circuit::parse("random:2").is_err());
        assert!(Circuit::parse("grover").is_err());
    }
}
