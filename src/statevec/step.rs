//! One gate as a distributed register runs it, on physical qubits: either
//! every rank's own operation (a local target, a phase, a SWAP of local
//! qubits), or an exchange with the partner rank and the update after it (a
//! target on a global qubit). The schedules (schedule.rs) make circuits
//! into steps; transport::amplitudes::step runs them.

use super::layout::Layout;
use num_complex::Complex64;
use serde::{Deserialize, Serialize};

/// A gate on physical qubits: one step of the register, local or with an
/// exchange (the `Global` ones).
#[derive(Debug, Clone, PartialEq)]
pub enum PhysicalGate {
    /// H on a local qubit.
    H(u32),
    /// A one-qubit unitary on a local qubit.
    U { q: u32, m: [Complex64; 4] },
    /// A phase on the amplitudes whose qubits (local or global) are all 1.
    Phase { qubits: Vec<u32>, phase: Complex64 },
    /// SWAP of two local qubits.
    Swap(u32, u32),
    /// Controlled NOT whose target is local (the control local or global).
    Cx { c: u32, t: u32 },
    /// A one-qubit unitary on global qubit `t`: whole chunks exchanged.
    GlobalU { t: u32, m: [Complex64; 4] },
    /// SWAP of global `t` and local `q`: half a chunk exchanged.
    GlobalSwap { t: u32, q: u32 },
    /// SWAP of two global qubits: whole chunks exchanged between the ranks
    /// whose two bits differ.
    GlobalSwap2(u32, u32),
    /// Controlled NOT whose target `t` is global: the half whose control is
    /// 1 exchanged (a local control), or whole chunks (a global one).
    GlobalCx { c: u32, t: u32 },
}

/// The classes of step a register times, by what they make each rank do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Class {
    /// H on a local qubit.
    H,
    /// Another one-qubit unitary on a local qubit.
    U,
    /// A phase (diagonal gate): never exchanges.
    Phase,
    /// SWAP of two local qubits.
    Swap,
    /// Controlled NOT with a local target.
    Cx,
    /// A one-qubit gate on a global qubit: the whole chunk exchanged.
    GlobalGate,
    /// SWAP of a global and a local qubit: half a chunk exchanged.
    GlobalSwap,
    /// SWAP of two global qubits: whole chunks, between half the ranks.
    GlobalSwap2,
    /// Controlled NOT with a global target.
    GlobalCx,
}

impl Class {
    /// How tables name it.
    pub fn name(self) -> &'static str {
        match self {
            Class::H => "H",
            Class::U => "one-qubit unitary",
            Class::Phase => "phase (diagonal)",
            Class::Swap => "SWAP",
            Class::Cx => "CNOT",
            Class::GlobalGate => "gate on a global qubit",
            Class::GlobalSwap => "SWAP global-local",
            Class::GlobalSwap2 => "SWAP global-global",
            Class::GlobalCx => "CNOT, global target",
        }
    }

    /// Whether it exchanges amplitudes between ranks.
    pub fn exchanges(self) -> bool {
        matches!(self, Class::GlobalGate | Class::GlobalSwap | Class::GlobalSwap2 | Class::GlobalCx)
    }
}

impl PhysicalGate {
    /// The step for a gate whose every qubit is where `layout` says
    /// (physical): local or global by position.
    pub fn class(&self) -> Class {
        match self {
            PhysicalGate::H(_) => Class::H,
            PhysicalGate::U { .. } => Class::U,
            PhysicalGate::Phase { .. } => Class::Phase,
            PhysicalGate::Swap(..) => Class::Swap,
            PhysicalGate::Cx { .. } => Class::Cx,
            PhysicalGate::GlobalU { .. } => Class::GlobalGate,
            PhysicalGate::GlobalSwap { .. } => Class::GlobalSwap,
            PhysicalGate::GlobalSwap2(..) => Class::GlobalSwap2,
            PhysicalGate::GlobalCx { .. } => Class::GlobalCx,
        }
    }

    /// The qubits it acts on.
    pub fn qubits(&self) -> Vec<u32> {
        match self {
            PhysicalGate::H(q) | PhysicalGate::U { q, .. } => vec![*q],
            PhysicalGate::Phase { qubits, .. } => qubits.clone(),
            PhysicalGate::Swap(a, b) | PhysicalGate::GlobalSwap2(a, b) => vec![*a, *b],
            PhysicalGate::Cx { c, t } | PhysicalGate::GlobalCx { c, t } => vec![*c, *t],
            PhysicalGate::GlobalU { t, .. } => vec![*t],
            PhysicalGate::GlobalSwap { t, q } => vec![*t, *q],
        }
    }

    /// Bytes each rank sends (and receives), 0 for a local step.
    pub fn bytes(&self, layout: &Layout) -> u64 {
        let chunk = layout.chunk_bytes();
        match self {
            PhysicalGate::GlobalU { .. } | PhysicalGate::GlobalSwap2(..) => chunk,
            PhysicalGate::GlobalSwap { .. } => chunk / 2,
            PhysicalGate::GlobalCx { c, .. } if *c < layout.local_qubits() => chunk / 2,
            PhysicalGate::GlobalCx { .. } => chunk,
            _ => 0,
        }
    }

    /// Whether the step runs without a wire.
    pub fn is_local(&self) -> bool {
        !self.class().exchanges()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::statevec::circuit::hadamard;
    use crate::statevec::layout::Precision;

    #[test]
    fn steps_carry_their_class_and_bytes() {
        let l = Layout::new(10, 4, Precision::Double).unwrap();
        let chunk = l.chunk_bytes();
        assert_eq!(PhysicalGate::GlobalU { t: 9, m: hadamard() }.bytes(&l), chunk);
        assert_eq!(PhysicalGate::GlobalSwap { t: 9, q: 0 }.bytes(&l), chunk / 2);
        assert_eq!(PhysicalGate::GlobalCx { c: 0, t: 9 }.bytes(&l), chunk / 2);
        assert_eq!(PhysicalGate::GlobalCx { c: 8, t: 9 }.bytes(&l), chunk);
        assert_eq!(PhysicalGate::Phase { qubits: vec![9, 8], phase: Complex64::new(-1.0, 0.0) }.bytes(&l), 0);
        assert!(PhysicalGate::Cx { c: 9, t: 0 }.is_local() && !PhysicalGate::GlobalSwap2(8, 9).is_local());
    }
}
