//! Whether spreading a register over more GPUs pays: the measured local and
//! global gate times put into circuit models (QFT, random circuits), against
//! the same circuit on one GPU. Projections are labelled as such; they are
//! arithmetic on measured times, never measurements.

use crate::record::exchange::{Circuit, Projection, RegisterRun, Verdict};
use crate::statevec::layout::{Pattern, largest_register};

/// The verdict for a GPU register run; `memory` is one GPU's memory.
pub fn judge(run: &RegisterRun, memory: u64, circuits: &[Circuit]) -> Option<Verdict> {
    let n = run.qubits;
    let k = n - run.local_qubits;
    let local = run.local_gate_s();
    let best = |pattern: Pattern| {
        run.global_gates
            .iter()
            .filter(|g| g.pattern == pattern)
            .map(|g| (g.transport.clone(), g.exchange.median + g.update.median))
            .min_by(|a, b| a.1.total_cmp(&b.1))
    };
    let (wire, global) = best(Pattern::Gate).or_else(|| best(Pattern::Swap))?;
    // A swap as the QFT needs it: the exchange of half a chunk and placing it.
    let swap = best(Pattern::Swap).map_or(global, |(_, s)| s - local.min(s));
    let one_gpu_fits = largest_register(memory, run.precision, 0) >= n;
    // One GPU holds 2^k times the amplitudes: a memory-bound pass takes 2^k times longer.
    let local_one = local * (1u64 << k) as f64;
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
        best_transport: wire,
        global_gate_s: global,
        swap_s: swap,
        global_vs_local: global / local,
        largest_on_one_gpu: largest_register(memory, run.precision, 0),
        largest_spread: largest_register(memory, run.precision, k),
        projections,
    })
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
                pattern: Pattern::Gate,
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
        let v = judge(&run(1.0, 1.5), 140 << 30, &[Circuit::Qft]).unwrap();
        assert!(v.projections[0].speedup > 1.05, "{:?}", v.projections[0]);
        assert!(v.projections[0].verdict.starts_with("spreading pays"));
        // Half the gates global at 10 local gates each: one GPU takes 2 per
        // gate (twice the amplitudes), two take 0.5 + 5.
        let v = judge(&run(1.0, 10.0), 140 << 30, &[Circuit::Random { global_fraction: 0.5 }]).unwrap();
        let r = &v.projections[0];
        assert!((r.speedup - 2.0 / 5.5).abs() < 1e-9);
        assert!(r.verdict.starts_with("spreading costs"), "{}", r.verdict);
        let v = judge(&run(1.0, 50.0), 8 << 30, &[Circuit::Random { global_fraction: 0.5 }]).unwrap();
        assert!(v.projections[0].verdict.starts_with("spreading only buys memory"));
    }

    #[test]
    fn circuits_parse() {
        assert_eq!(Circuit::parse("qft").unwrap(), Circuit::Qft);
        assert_eq!(Circuit::parse("random:0.25").unwrap(), Circuit::Random { global_fraction: 0.25 });
        assert!(Circuit::parse("random:2").is_err());
        assert!(Circuit::parse("grover").is_err());
    }
}
