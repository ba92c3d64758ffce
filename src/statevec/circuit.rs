//! Circuits as a simulator runs them: gates on logical qubits, in order.
//! Every gate is one of the classes a distributed register times: H (its
//! own kernels), another one-qubit unitary, a phase on the amplitudes whose
//! qubits are all 1 (T, S, Z, CZ, controlled phase: diagonal, never
//! exchanged), a SWAP, a controlled NOT. The QFT is QuEST's
//! (`applyFullQuantumFourierTransform`); random circuits are seeded; either
//! can be mirrored (the circuit, then its inverse) so that the end state is
//! the start state, whatever the circuit did in between.

use super::state::ProductState;
use num_complex::Complex64;
use std::f64::consts::{FRAC_1_SQRT_2, PI};

/// One gate on logical qubits.
#[derive(Debug, Clone, PartialEq)]
pub enum Gate {
    /// The Hadamard gate.
    H(u32),
    /// A one-qubit unitary, row-major: |0⟩ ↦ m[0]|0⟩ + m[2]|1⟩.
    U {
        q: u32,
        m: [Complex64; 4],
    },
    /// Multiplies every amplitude whose `qubits` are all 1 by `phase`.
    Phase {
        qubits: Vec<u32>,
        phase: Complex64,
    },
    Swap(u32, u32),
    /// Flips `t` where `c` is 1.
    Cx {
        c: u32,
        t: u32,
    },
}

impl Gate {
    /// The qubits the gate acts on.
    pub fn qubits(&self) -> Vec<u32> {
        match self {
            Gate::H(q) | Gate::U { q, .. } => vec![*q],
            Gate::Phase { qubits, .. } => qubits.clone(),
            Gate::Swap(a, b) => vec![*a, *b],
            Gate::Cx { c, t } => vec![*c, *t],
        }
    }

    /// The gate that undoes this one.
    pub fn inverse(&self) -> Gate {
        match self {
            Gate::H(_) | Gate::Swap(..) | Gate::Cx { .. } => self.clone(),
            Gate::U { q, m } => Gate::U { q: *q, m: [m[0].conj(), m[2].conj(), m[1].conj(), m[3].conj()] },
            Gate::Phase { qubits, phase } => Gate::Phase { qubits: qubits.clone(), phase: phase.conj() },
        }
    }

    /// The qubit the gate needs among a rank's local qubits (its target),
    /// if any: a phase needs none, a SWAP is a class of its own.
    pub fn target(&self) -> Option<u32> {
        match self {
            Gate::H(q) | Gate::U { q, .. } => Some(*q),
            Gate::Cx { t, .. } => Some(*t),
            Gate::Phase { .. } | Gate::Swap(..) => None,
        }
    }
}

/// The matrix of H.
pub fn hadamard() -> [Complex64; 4] {
    let h = Complex64::new(FRAC_1_SQRT_2, 0.0);
    [h, h, h, -h]
}

/// Whether `m` is H, which has kernels of its own.
pub fn is_h(m: &[Complex64; 4]) -> bool {
    m.iter().zip(hadamard()).all(|(a, h)| (a - h).norm() < 1e-15)
}

/// A circuit on `qubits` qubits, with the product state it starts from and
/// the one it must end in.
#[derive(Debug, Clone, PartialEq)]
pub struct Circuit {
    /// What it is, as records and tables name it: "qft", "random:200:7", a file.
    pub name: String,
    pub qubits: u32,
    pub gates: Vec<Gate>,
    pub start: ProductState,
    /// The end state; None for a circuit that is not mirrored (a file's
    /// own gates, which only their mirror can check).
    pub end: Option<ProductState>,
}

/// |x⟩ as a product state.
fn basis(n: u32, x: u64) -> ProductState {
    let (z, u) = (Complex64::new(0.0, 0.0), Complex64::new(1.0, 0.0));
    ProductState { qubits: (0..n).map(|k| if x >> k & 1 == 1 { (z, u) } else { (u, z) }).collect() }
}

/// The basis state the QFT starts from: alternate bits, so that every
/// qubit's phase in the result differs.
pub fn qft_input(qubits: u32) -> u64 {
    0x5a5a_5a5a_5a5a_5a5a & ((1u64 << qubits) - 1)
}

/// QuEST's full QFT on `n` qubits, gate for gate: for j from n−1 down to
/// 0, H on j, then the phase e^{iπ/2^(m+1)} on (j, j−m−1) for m < j; then
/// SWAP(k, n−1−k) for k < n/2. From |x⟩ it ends in amplitude
/// e^{2πi·x·y/2^n}/√2^n at y.
pub fn qft(n: u32) -> Circuit {
    let mut gates = Vec::new();
    for j in (0..n).rev() {
        gates.push(Gate::H(j));
        for m in 0..j {
            let phase = Complex64::from_polar(1.0, PI / f64::powi(2.0, m as i32 + 1));
            gates.push(Gate::Phase { qubits: vec![j, j - m - 1], phase });
        }
    }
    for k in 0..n / 2 {
        gates.push(Gate::Swap(k, n - 1 - k));
    }
    let x = qft_input(n);
    Circuit {
        name: "qft".into(),
        qubits: n,
        gates,
        start: basis(n, x),
        end: Some(ProductState { qubits: qft_of_basis(n, x) }),
    }
}

/// The QFT of |x⟩ as a product state: qubit k is (|0⟩ + e^{2πi·x·2^k/2^n}|1⟩)/√2.
pub fn qft_of_basis(n: u32, x: u64) -> Vec<(Complex64, Complex64)> {
    let a = Complex64::new(FRAC_1_SQRT_2, 0.0);
    (0..n)
        .map(|k| {
            // x·2^k mod 2^n, exactly, before the angle.
            let turns = ((x as u128) << k) % (1u128 << n);
            (a, a * Complex64::from_polar(1.0, 2.0 * PI * turns as f64 / f64::powi(2.0, n as i32)))
        })
        .collect()
}

/// splitmix64: the random circuits' seeded stream.
struct Stream(u64);

impl Stream {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        crate::pattern::mix(self.0)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// The most gates a circuit may have before it is mirrored, a random one
/// or a file's once its gate definitions are expanded: a million gates run
/// for minutes on a large register, and their list takes tens of MiB.
pub const MOST_GATES: usize = 1_000_000;

/// A random circuit of `count` gates on `n` qubits, drawn from `seed`: H,
/// T, CZ, controlled phase, CNOT and SWAP on uniformly random qubits,
/// mirrored (the gates, then their inverses in reverse) so that it ends in
/// the state it started from.
pub fn random(n: u32, count: usize, seed: u64) -> Circuit {
    let mut s = Stream(seed);
    let mut gates = Vec::with_capacity(count);
    let two = |s: &mut Stream| {
        let a = s.below(n as u64) as u32;
        let b = (a + 1 + s.below(n as u64 - 1) as u32) % n;
        (a, b)
    };
    for _ in 0..count {
        gates.push(match s.below(6) {
            0 => Gate::H(s.below(n as u64) as u32),
            1 => Gate::Phase { qubits: vec![s.below(n as u64) as u32], phase: Complex64::from_polar(1.0, PI / 4.0) },
            2 => {
                let (a, b) = two(&mut s);
                Gate::Phase { qubits: vec![a, b], phase: Complex64::new(-1.0, 0.0) }
            }
            3 => {
                let (a, b) = two(&mut s);
                let angle = PI / f64::powi(2.0, 1 + s.below(8) as i32);
                Gate::Phase { qubits: vec![a, b], phase: Complex64::from_polar(1.0, angle) }
            }
            4 => {
                let (c, t) = two(&mut s);
                Gate::Cx { c, t }
            }
            _ => {
                let (a, b) = two(&mut s);
                Gate::Swap(a, b)
            }
        });
    }
    mirror(Circuit { name: format!("random:{count}:{seed}"), qubits: n, gates, start: ProductState::new(n), end: None })
}

/// The circuit, then its inverse, from the register's seeded product state
/// (whose amplitudes are all far from 0): it ends in the state it started from.
pub fn mirror(mut c: Circuit) -> Circuit {
    let back: Vec<Gate> = c.gates.iter().rev().map(Gate::inverse).collect();
    c.gates.extend(back);
    c.start = ProductState::new(c.qubits);
    c.end = Some(c.start.clone());
    c
}

#[cfg(test)]
pub mod reference {
    //! A dense state vector, gates applied amplitude by amplitude: the
    //! independent reference the circuits are checked against in tests.
    use super::*;

    pub fn apply(v: &mut [Complex64], g: &Gate) {
        let bit = |i: usize, q: u32| i >> q & 1 == 1;
        match g {
            Gate::H(q) => apply(v, &Gate::U { q: *q, m: hadamard() }),
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
            Gate::Swap(a, b) => {
                for i in 0..v.len() {
                    if bit(i, *a) && !bit(i, *b) {
                        v.swap(i, i ^ (1 << a) ^ (1 << b));
                    }
                }
            }
            Gate::Cx { c, t } => {
                for i in 0..v.len() {
                    if bit(i, *c) && !bit(i, *t) {
                        v.swap(i, i | 1 << t);
                    }
                }
            }
        }
    }

    pub fn run(c: &Circuit, start: Vec<Complex64>) -> Vec<Complex64> {
        let mut v = start;
        for g in &c.gates {
            apply(&mut v, g);
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dense(n: u32, x: u64) -> Vec<Complex64> {
        let mut v = vec![Complex64::new(0.0, 0.0); 1 << n];
        v[x as usize] = Complex64::new(1.0, 0.0);
        v
    }

    #[test]
    fn quests_qft_is_the_fourier_transform() {
        for n in [2u32, 3, 5, 8] {
            let c = qft(n);
            assert_eq!(c.gates.len() as u32, n + n * (n - 1) / 2 + n / 2);
            let x = qft_input(n);
            let v = reference::run(&c, dense(n, x));
            let norm = f64::powi(2.0, n as i32).sqrt();
            let product = qft_of_basis(n, x);
            for (y, a) in v.iter().enumerate() {
                let want =
                    Complex64::from_polar(1.0 / norm, 2.0 * PI * (x as f64) * (y as f64) / f64::powi(2.0, n as i32));
                assert!((a - want).norm() < 1e-12, "n {n} y {y}: {a} against {want}");
                let p: Complex64 = (0..n)
                    .map(|k| if y >> k & 1 == 1 { product[k as usize].1 } else { product[k as usize].0 })
                    .product();
                assert!((a - p).norm() < 1e-12, "the product form, n {n} y {y}");
            }
        }
        assert_eq!(qft(30).gates.len(), 480);
        assert_eq!(qft(32).gates.len(), 544);
    }

    #[test]
    fn mirrored_circuits_end_where_they_started() {
        let n = 6;
        let c = random(n, 40, 3);
        assert_eq!(c.gates.len(), 80);
        let start: Vec<Complex64> =
            (0..1 << n).map(|i| Complex64::new((i as f64 * 0.7).sin(), (i as f64).cos())).collect();
        let half = reference::run(&Circuit { gates: c.gates[..40].to_vec(), ..c.clone() }, start.clone());
        assert!(half.iter().zip(&start).any(|(a, b)| (a - b).norm() > 1e-3), "the first half changes the state");
        let end = reference::run(&c, start.clone());
        for (a, b) in end.iter().zip(&start) {
            assert!((a - b).norm() < 1e-12);
        }
        // Every kind of gate is drawn, on distinct qubits where there are two.
        for g in &c.gates {
            let q = g.qubits();
            assert!(q.iter().all(|&x| x < n));
            if q.len() == 2 {
                assert_ne!(q[0], q[1], "{g:?}");
            }
        }
        assert_ne!(random(n, 40, 3).gates, random(n, 40, 4).gates);
    }
}
