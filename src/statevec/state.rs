//! The register's exact state at any point of a run. It starts as a product
//! state with a distinct single-qubit state per qubit, and the operations
//! qbench applies (H on a qubit, a swap of two qubits) keep it a product
//! state, so every amplitude of every rank is known exactly: the amplitude
//! of index i is the product over positions p of α_p or β_p by bit p of i.
//! Pairing with the wrong partner or moving the wrong half changes a factor
//! by at least 10%, far above rounding.

use num_complex::Complex64;
use std::f64::consts::FRAC_1_SQRT_2;

/// Relative tolerance of an amplitude in each precision: rounding grows by
/// a few ulps per gate; a wrong amplitude is off by ≥ 10%.
pub fn tolerance(single: bool) -> f64 {
    if single { 5e-4 } else { 1e-10 }
}

#[derive(Debug, Clone, PartialEq)]
pub struct ProductState {
    /// (α, β) of the qubit at each bit position of the index.
    pub qubits: Vec<(Complex64, Complex64)>,
}

impl ProductState {
    /// cos θ_q |0⟩ + e^{iφ_q} sin θ_q |1⟩ with θ in (0.3, 1.2) and φ in
    /// (0.4, 1.3): distinct per qubit, and neither the state nor its image
    /// under H has a component below 0.1 in magnitude.
    pub fn new(qubits: u32) -> ProductState {
        let n = qubits.max(1) as f64;
        let qubits = (0..qubits)
            .map(|q| {
                let x = q as f64 / n;
                let (theta, phi) = (0.3 + 0.9 * x, 0.4 + 0.9 * ((x * 7.0).fract()));
                (Complex64::new(theta.cos(), 0.0), Complex64::from_polar(theta.sin(), phi))
            })
            .collect();
        ProductState { qubits }
    }

    pub fn h(&mut self, p: u32) {
        let (a, b) = self.qubits[p as usize];
        self.qubits[p as usize] = ((a + b) * FRAC_1_SQRT_2, (a - b) * FRAC_1_SQRT_2);
    }

    pub fn swap(&mut self, p: u32, q: u32) {
        self.qubits.swap(p as usize, q as usize);
    }

    /// A one-qubit unitary on position `p`, row-major.
    pub fn gate(&mut self, p: u32, m: &[Complex64; 4]) {
        let (a, b) = self.qubits[p as usize];
        self.qubits[p as usize] = (m[0] * a + m[1] * b, m[2] * a + m[3] * b);
    }

    /// The phase `phase` on position `p`'s |1⟩.
    pub fn phase(&mut self, p: u32, phase: Complex64) {
        self.qubits[p as usize].1 *= phase;
    }

    /// Position `p` set to the basis state |1⟩ (`one`) or |0⟩: a qubit that
    /// a controlled gate's control can be, so that the state stays a
    /// product whatever the gate does.
    pub fn basis(&mut self, p: u32, one: bool) {
        let (z, u) = (Complex64::new(0.0, 0.0), Complex64::new(1.0, 0.0));
        self.qubits[p as usize] = if one { (z, u) } else { (u, z) };
    }

    /// The amplitude of basis state `index` (tests/exchange_cpu.rs builds
    /// its full state vector from it).
    #[cfg_attr(qbench_private, allow(dead_code))]
    pub fn amplitude(&self, index: u64) -> Complex64 {
        self.qubits.iter().enumerate().map(|(p, &(a, b))| if index >> p & 1 == 1 { b } else { a }).product()
    }

    /// The amplitudes split in two tables: `lo` over the low `split` bit
    /// positions, `hi` over the rest, so amplitude(i) = lo[i mod 2^split] ×
    /// hi[i >> split]. Kernels use them to write and check every amplitude.
    pub fn tables(&self) -> (u32, Vec<Complex64>, Vec<Complex64>) {
        let n = self.qubits.len() as u32;
        let split = n.div_ceil(2);
        let table = |from: u32, to: u32| -> Vec<Complex64> {
            (0..1u64 << (to - from))
                .map(|i| {
                    (from..to)
                        .map(|p| {
                            let (a, b) = self.qubits[p as usize];
                            if i >> (p - from) & 1 == 1 { b } else { a }
                        })
                        .product()
                })
                .collect()
        };
        (split, table(0, split), table(split, n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An independent reference: the full state vector, gates applied pairwise.
    fn full_vector(s: &ProductState) -> Vec<Complex64> {
        (0..1u64 << s.qubits.len()).map(|i| s.amplitude(i)).collect()
    }

    fn apply_h(v: &mut [Complex64], q: u32) {
        for i in 0..v.len() {
            if i >> q & 1 == 0 {
                let j = i | 1 << q;
                let (a, b) = (v[i], v[j]);
                v[i] = (a + b) * FRAC_1_SQRT_2;
                v[j] = (a - b) * FRAC_1_SQRT_2;
            }
        }
    }

    #[test]
    fn the_model_follows_gates_and_swaps() {
        let mut s = ProductState::new(6);
        let mut v = full_vector(&s);
        for q in [0, 3, 5, 3] {
            s.h(q);
            apply_h(&mut v, q);
        }
        s.swap(1, 4);
        let w: Vec<Complex64> = (0..v.len())
            .map(|i| {
                let (b1, b4) = (i >> 1 & 1, i >> 4 & 1);
                v[(i & !(1 << 1 | 1 << 4)) | b4 << 1 | b1 << 4]
            })
            .collect();
        for (i, want) in w.iter().enumerate() {
            assert!((s.amplitude(i as u64) - want).norm() < 1e-12, "{i}");
        }
    }

    #[test]
    fn tables_reproduce_every_amplitude() {
        let mut s = ProductState::new(9);
        s.h(2);
        s.h(8);
        let (split, lo, hi) = s.tables();
        for i in 0..1u64 << 9 {
            let t = lo[(i & ((1 << split) - 1)) as usize] * hi[(i >> split) as usize];
            assert!((t - s.amplitude(i)).norm() < 1e-12);
        }
    }

    #[test]
    fn factors_stay_far_from_zero_and_distinct() {
        let mut s = ProductState::new(40);
        for q in 0..40 {
            let (a, b) = s.qubits[q];
            assert!(a.norm() > 0.1 && b.norm() > 0.1);
            assert!((a - b).norm() > 0.1, "swapping α and β must show");
            s.h(q as u32);
            let (a, b) = s.qubits[q];
            assert!(a.norm() > 0.1 && b.norm() > 0.1);
        }
        for p in 1..40 {
            assert!((s.qubits[p].0 - s.qubits[p - 1].0).norm() > 1e-3, "neighbours differ");
        }
    }
}
