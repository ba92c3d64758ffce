//! How a circuit becomes a distributed register's steps. Two schedules:
//! QuEST's, which keeps every qubit where it is and exchanges for each gate
//! whose target is global (a phase never exchanges); and the swap schedule
//! of cuStateVec's distributed index-bit swaps and mpiQulacs, which first
//! swaps a global target into a local position (the local qubit whose next
//! use as a target is furthest away gives its place), runs the gate
//! locally, turns SWAP gates into a relabelling, and at the end restores
//! every qubit to its own position with the fewest swaps.

use super::circuit::{Circuit, Gate};
use super::layout::Layout;
use super::step::PhysicalGate;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Schedule {
    /// Every qubit stays where it is (QuEST v4).
    Quest,
    /// Global targets swapped into local positions first (cuStateVec, mpiQulacs).
    Swap,
}

impl Schedule {
    pub const ALL: [Schedule; 2] = [Schedule::Quest, Schedule::Swap];

    pub fn name(self) -> &'static str {
        match self {
            Schedule::Quest => "quest",
            Schedule::Swap => "swap",
        }
    }

    /// quest, swap or both (comma-separated).
    pub fn parse_list(text: &str) -> crate::error::Result<Vec<Schedule>> {
        let mut out = Vec::new();
        for part in text.split(',').map(str::trim) {
            let add: &[Schedule] = match part {
                "quest" => &[Schedule::Quest],
                "swap" => &[Schedule::Swap],
                "both" => &Schedule::ALL,
                _ => {
                    return Err(crate::error::Error::Usage(format!(
                        "unknown schedule '{part}': use quest, swap or both"
                    )));
                }
            };
            for s in add {
                if !out.contains(s) {
                    out.push(*s);
                }
            }
        }
        Ok(out)
    }
}

/// The step of gate `g` whose qubits are at physical positions `at`.
fn step(g: &Gate, at: impl Fn(u32) -> u32, l: u32) -> PhysicalGate {
    let local = |q: u32| q < l;
    match g {
        Gate::H(q) if local(at(*q)) => PhysicalGate::H(at(*q)),
        Gate::H(q) => PhysicalGate::GlobalU { t: at(*q), m: super::circuit::hadamard() },
        Gate::U { q, m } if local(at(*q)) => PhysicalGate::U { q: at(*q), m: *m },
        Gate::U { q, m } => PhysicalGate::GlobalU { t: at(*q), m: *m },
        Gate::Phase { qubits, phase } => {
            PhysicalGate::Phase { qubits: qubits.iter().map(|&q| at(q)).collect(), phase: *phase }
        }
        Gate::Swap(a, b) => {
            let (a, b) = (at(*a), at(*b));
            match (local(a), local(b)) {
                (true, true) => PhysicalGate::Swap(a, b),
                (false, false) => PhysicalGate::GlobalSwap2(a, b),
                (true, false) => PhysicalGate::GlobalSwap { t: b, q: a },
                (false, true) => PhysicalGate::GlobalSwap { t: a, q: b },
            }
        }
        Gate::Cx { c, t } if local(at(*t)) => PhysicalGate::Cx { c: at(*c), t: at(*t) },
        Gate::Cx { c, t } => PhysicalGate::GlobalCx { c: at(*c), t: at(*t) },
    }
}

/// The register's steps for `c` on `layout`, under `schedule`.
pub fn compile(c: &Circuit, layout: &Layout, schedule: Schedule) -> Vec<PhysicalGate> {
    let l = layout.local_qubits();
    match schedule {
        Schedule::Quest => c.gates.iter().map(|g| step(g, |q| q, l)).collect(),
        Schedule::Swap => swap_scheduled(c, layout),
    }
}

fn swap_scheduled(c: &Circuit, layout: &Layout) -> Vec<PhysicalGate> {
    let (n, l) = (layout.qubits, layout.local_qubits());
    // at[logical] = physical position; of[physical] = logical qubit.
    let mut at: Vec<u32> = (0..n).collect();
    let mut of: Vec<u32> = (0..n).collect();
    let mut steps = Vec::new();
    // The next gate (index) at or after i whose target is logical qubit q.
    let targets: Vec<Option<u32>> = c.gates.iter().map(Gate::target).collect();
    let next_use = |q: u32, from: usize| targets[from..].iter().position(|t| *t == Some(q)).unwrap_or(usize::MAX);
    for (i, g) in c.gates.iter().enumerate() {
        if let Gate::Swap(a, b) = g {
            // A relabelling: no amplitude moves.
            let (pa, pb) = (at[*a as usize], at[*b as usize]);
            at.swap(*a as usize, *b as usize);
            of[pa as usize] = *b;
            of[pb as usize] = *a;
            continue;
        }
        if let Some(t) = g.target().filter(|&t| at[t as usize] >= l) {
            // The local position whose qubit is needed as a target last,
            // none of this gate's own qubits.
            let busy = g.qubits();
            let slot = (0..l)
                .filter(|&p| !busy.contains(&of[p as usize]))
                .max_by_key(|&p| (next_use(of[p as usize], i + 1), p))
                .unwrap_or(0);
            let g_pos = at[t as usize];
            steps.push(PhysicalGate::GlobalSwap { t: g_pos, q: slot });
            let moved = of[slot as usize];
            at[t as usize] = slot;
            at[moved as usize] = g_pos;
            of[slot as usize] = t;
            of[g_pos as usize] = moved;
        }
        steps.push(step(g, |q| at[q as usize], l));
    }
    // Back to every qubit at its own position: each cycle of the
    // permutation takes one swap fewer than its length.
    for p in 0..n {
        while of[p as usize] != p {
            // The qubit at p belongs at q: swap positions p and q.
            let q = of[p as usize];
            let (a, b) = (p.min(q), p.max(q));
            steps.push(match (a < l, b < l) {
                (true, true) => PhysicalGate::Swap(a, b),
                (true, false) => PhysicalGate::GlobalSwap { t: b, q: a },
                _ => PhysicalGate::GlobalSwap2(a, b),
            });
            of.swap(a as usize, b as usize);
        }
    }
    steps
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::statevec::circuit::{self, reference};
    use crate::statevec::layout::Precision;
    use num_complex::Complex64;

    /// The steps run on a dense vector, global or not: what any register
    /// must end with.
    fn run_steps(steps: &[PhysicalGate], start: Vec<Complex64>) -> Vec<Complex64> {
        let mut v = start;
        for s in steps {
            let g = match s {
                PhysicalGate::H(q) => Gate::H(*q),
                PhysicalGate::U { q, m } | PhysicalGate::GlobalU { t: q, m } => Gate::U { q: *q, m: *m },
                PhysicalGate::Phase { qubits, phase } => Gate::Phase { qubits: qubits.clone(), phase: *phase },
                PhysicalGate::Swap(a, b)
                | PhysicalGate::GlobalSwap2(a, b)
                | PhysicalGate::GlobalSwap { t: a, q: b } => Gate::Swap(*a, *b),
                PhysicalGate::Cx { c, t } | PhysicalGate::GlobalCx { c, t } => Gate::Cx { c: *c, t: *t },
            };
            reference::apply(&mut v, &g);
        }
        v
    }

    fn start(n: u32) -> Vec<Complex64> {
        (0..1u64 << n).map(|i| Complex64::new((i as f64 * 0.37).sin(), (i as f64 * 0.11).cos())).collect()
    }

    #[test]
    fn both_schedules_give_the_circuits_state() {
        for (n, ranks) in [(6u32, 2usize), (6, 4), (7, 8)] {
            let layout = Layout::new(n, ranks, Precision::Double).unwrap();
            for c in [circuit::qft(n), circuit::random(n, 60, 5)] {
                let want = reference::run(&c, start(n));
                for s in Schedule::ALL {
                    let steps = compile(&c, &layout, s);
                    let got = run_steps(&steps, start(n));
                    for (a, b) in got.iter().zip(&want) {
                        assert!((a - b).norm() < 1e-10, "{} {s:?} on {ranks} ranks", c.name);
                    }
                    if s == Schedule::Swap {
                        // A swap-scheduled step's target is always local.
                        for st in &steps {
                            assert!(
                                matches!(st, PhysicalGate::GlobalSwap { .. } | PhysicalGate::GlobalSwap2(..))
                                    || st.is_local(),
                                "{st:?}"
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn quest_exchanges_for_global_targets_and_the_swap_schedule_less_on_the_qft() {
        let layout = Layout::new(30, 2, Precision::Double).unwrap();
        let c = circuit::qft(30);
        let count =
            |steps: &[PhysicalGate]| steps.iter().filter(|s| !s.is_local()).map(|s| s.bytes(&layout)).sum::<u64>();
        let quest = compile(&c, &layout, Schedule::Quest);
        // H on qubit 29 (the whole chunk) and SWAP(0, 29) (half of it).
        assert_eq!(quest.iter().filter(|s| !s.is_local()).count(), 2);
        assert_eq!(count(&quest), layout.chunk_bytes() * 3 / 2);
        let swap = compile(&c, &layout, Schedule::Swap);
        assert!(count(&swap) <= count(&quest), "{} > {}", count(&swap), count(&quest));
        assert_eq!(Schedule::parse_list("both").unwrap(), Schedule::ALL);
        assert!(Schedule::parse_list("greedy").is_err());
    }
}
