//! A step (statevec::step) run on a register: this is where a gate's
//! global qubits become each rank's bits, as QuEST v4 (`localiser.cpp`)
//! does it: a phase never exchanges, a one-qubit gate on a global qubit
//! exchanges the whole chunk, a SWAP of a global and a local qubit the half
//! whose local bit differs from the rank's (packed first unless it is the
//! top local qubit's half), a controlled NOT with a global target the half
//! whose control is 1.

use super::{Local, Part, Register, Seconds, Wire};
use crate::error::{Error, Result};
use crate::fault::Fault;
use crate::statevec::circuit::is_h;
use crate::statevec::layout::Layout;
use crate::statevec::step::PhysicalGate;
use crate::world::World;

/// What a step took: its exchange (None for a local step) and the local
/// work around it, this process's seconds each (its slowest rank's).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Timed {
    pub exchange: Option<Seconds>,
    pub update: Seconds,
}

impl Timed {
    pub fn total(&self) -> Seconds {
        self.exchange.unwrap_or(0.0) + self.update
    }

    /// The slowest process's times of a step every process ran: one
    /// reduction, which also holds the processes together until the next.
    pub fn slowest(self, world: &dyn World) -> Timed {
        let m = world.max_f64(&[self.exchange.unwrap_or(0.0), self.update]);
        Timed { exchange: self.exchange.map(|_| m[0]), update: m[1] }
    }
}

/// Bit `t` (a global qubit) of job rank `rank`.
fn rank_bit(layout: &Layout, rank: usize, t: u32) -> bool {
    layout.holds_one(rank, t)
}

/// The local operation of a local step on rank `rank`.
fn local_op(layout: &Layout, step: &PhysicalGate, rank: usize) -> Local {
    let l = layout.local_qubits();
    match step {
        PhysicalGate::H(q) => Local::H(*q),
        PhysicalGate::U { q, m } if is_h(m) => Local::H(*q),
        PhysicalGate::U { q, m } => Local::U { q: *q, m: *m },
        PhysicalGate::Phase { qubits, phase } => {
            if qubits.iter().any(|&q| q >= l && !rank_bit(layout, rank, q)) {
                return Local::Idle;
            }
            let ones = qubits.iter().filter(|&&q| q < l).fold(0u64, |m, &q| m | 1 << q);
            Local::Phase { ones, phase: *phase }
        }
        PhysicalGate::Swap(a, b) => Local::Pairs { ones: 1 << a, zeros: 1 << b, flip: 1 << a | 1 << b },
        PhysicalGate::Cx { c, t } if *c >= l => {
            if rank_bit(layout, rank, *c) {
                Local::Pairs { ones: 0, zeros: 1 << t, flip: 1 << t }
            } else {
                Local::Idle
            }
        }
        PhysicalGate::Cx { c, t } => Local::Pairs { ones: 1 << c, zeros: 1 << t, flip: 1 << t },
        _ => Local::Idle,
    }
}

/// Runs `step` on `reg`, over `wire` where it exchanges; `fault` changes
/// the partner or the half sent, to prove the checks.
pub fn run(reg: &mut dyn Register, step: &PhysicalGate, wire: Option<Wire>, fault: Option<Fault>) -> Result<Timed> {
    let layout = *reg.layout();
    let l = layout.local_qubits();
    if step.is_local() {
        let update = reg.apply(&|r| local_op(&layout, step, r))?;
        return Ok(Timed { exchange: None, update });
    }
    let wire = wire.ok_or_else(|| Error::Runtime("internal: an exchanging step without a wire".into()))?;
    let chunk = layout.chunk_bytes();
    let peer = |rank: usize, mask: usize| if fault == Some(Fault::WrongPartner) { rank } else { rank ^ mask };
    let mask = |t: u32| 1usize << (t - l);
    let whole = |m: usize| move |r: usize| Part { peer: peer(r, m), send: 0, recv: chunk, len: chunk };
    match step {
        PhysicalGate::GlobalU { t, m } => {
            let exchange = reg.exchange(wire, &whole(mask(*t)))?;
            let update = reg.apply(&|r| {
                let one = rank_bit(&layout, r, *t);
                if is_h(m) {
                    Local::CombineH { one }
                } else if one {
                    Local::Mix { own: m[3], received: m[2] }
                } else {
                    Local::Mix { own: m[0], received: m[1] }
                }
            })?;
            Ok(Timed { exchange: Some(exchange), update })
        }
        PhysicalGate::GlobalSwap2(a, b) => {
            let exchange = reg.exchange(wire, &whole(mask(*a) | mask(*b)))?;
            let differ = |r| rank_bit(&layout, r, *a) != rank_bit(&layout, r, *b);
            let update = reg.apply(&|r| if differ(r) { Local::Take } else { Local::Idle })?;
            Ok(Timed { exchange: Some(exchange), update })
        }
        PhysicalGate::GlobalCx { c, t } if *c >= l => {
            let exchange = reg.exchange(wire, &whole(mask(*t)))?;
            let update = reg.apply(&|r| if rank_bit(&layout, r, *c) { Local::Take } else { Local::Idle })?;
            Ok(Timed { exchange: Some(exchange), update })
        }
        PhysicalGate::GlobalSwap { t, q } => {
            // The half whose bit q differs from this rank's bit t.
            let value = |r: usize| !rank_bit(&layout, r, *t);
            half_exchange(reg, wire, *q, &value, mask(*t), fault)
        }
        PhysicalGate::GlobalCx { c, t } => half_exchange(reg, wire, *c, &|_| true, mask(*t), fault),
        _ => Err(Error::Runtime(format!("internal: {step:?} is a local step"))),
    }
}

/// Every rank sends its amplitudes whose local bit `bit` is `value(rank)` to
/// rank ^ `mask` and takes the partner's in their place: straight from the
/// chunk when they are its upper or lower half (`bit` the top local
/// qubit), packed into the exchange buffer first otherwise. The
/// wrong-half fault sends the other half.
fn half_exchange(
    reg: &mut dyn Register,
    wire: Wire,
    bit: u32,
    value: &dyn Fn(usize) -> bool,
    mask: usize,
    fault: Option<Fault>,
) -> Result<Timed> {
    let layout = *reg.layout();
    let chunk = layout.chunk_bytes();
    let half = chunk / 2;
    let sent = |r: usize| value(r) != (fault == Some(Fault::WrongHalf));
    let peer = |r: usize| if fault == Some(Fault::WrongPartner) { r } else { r ^ mask };
    let contiguous = bit == layout.local_qubits() - 1;
    let mut update = 0.0;
    if !contiguous {
        update += reg.apply(&|r| Local::Pack { bit, value: sent(r) })?;
    }
    let exchange = reg.exchange(wire, &|r| Part {
        peer: peer(r),
        send: if contiguous { sent(r) as u64 * half } else { chunk + half },
        recv: chunk,
        len: half,
    })?;
    update += reg.apply(&|r| Local::Unpack { bit, value: value(r) })?;
    Ok(Timed { exchange: Some(exchange), update })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::statevec::layout::Precision;
    use num_complex::Complex64;

    #[test]
    fn a_phase_with_global_qubits_is_each_ranks_own() {
        let l = Layout::new(10, 4, Precision::Double).unwrap();
        let p = Complex64::new(0.0, 1.0);
        let step = PhysicalGate::Phase { qubits: vec![9, 2], phase: p };
        // Rank 2 holds qubit 9 (bit 1 of the rank) as 1, rank 1 as 0.
        assert_eq!(local_op(&l, &step, 2), Local::Phase { ones: 1 << 2, phase: p });
        assert_eq!(local_op(&l, &step, 1), Local::Idle);
        let both = PhysicalGate::Phase { qubits: vec![9, 8], phase: p };
        assert_eq!(local_op(&l, &both, 3), Local::Phase { ones: 0, phase: p });
        assert_eq!(local_op(&l, &PhysicalGate::Cx { c: 8, t: 1 }, 1), Local::Pairs { ones: 0, zeros: 2, flip: 2 });
        assert_eq!(local_op(&l, &PhysicalGate::Cx { c: 8, t: 1 }, 2), Local::Idle);
    }
}
