//! The gate classes of a register, each timed and checked: a one-qubit
//! gate at the low, middle and high qubits and at the one whose partners
//! are 4 KiB apart; phases (diagonal: never exchanged) of one and two
//! local qubits, and with one or two global ones; SWAP and CNOT of local
//! qubits; and over each wire a gate on a global qubit (the whole chunk
//! exchanged), a SWAP of a global and a local qubit (half of it, straight
//! from the chunk or packed), a CNOT with a global target, a SWAP of two
//! global qubits. Each class runs from a product state it keeps a product
//! (a controlled class's control set to |1⟩), so that every amplitude is
//! known after it and checked.

use crate::error::Result;
use crate::fault::Fault;
use crate::interrupt;
use crate::record::exchange::ClassTime;
use crate::statevec::circuit::hadamard;
use crate::statevec::layout::{GlobalOp, Layout, SLOW_PARTNER_BYTES};
use crate::statevec::state::ProductState;
use crate::statevec::step::PhysicalGate;
use crate::stats::Summary;
use crate::transport::amplitudes::{Register, Wire, step};
use num_complex::Complex64;
use std::f64::consts::PI;

/// A class to time: its step, the state it starts from, and what it does
/// to that state.
pub struct Probe {
    pub step: PhysicalGate,
    start: ProductState,
    effect: Box<dyn Fn(&mut ProductState)>,
}

/// The one-qubit unitary the U class times (not H, which has kernels of
/// its own): a rotation about y by 0.6 rad, then a phase.
fn rotation() -> [Complex64; 4] {
    let (c, s) = (0.3f64.cos(), 0.3f64.sin());
    let e = Complex64::from_polar(1.0, 0.7);
    [c.into(), (-s).into(), e * s, e * c]
}

fn not() -> [Complex64; 4] {
    [0.0.into(), 1.0.into(), 1.0.into(), 0.0.into()]
}

/// The T gate's phase, and a controlled phase's.
fn t_phase() -> Complex64 {
    Complex64::from_polar(1.0, PI / 4.0)
}

/// The positions of the local classes: qubit 0, the 4 KiB qubit (H), the
/// middle and the top local qubit, each once.
fn positions(layout: &Layout, with_slow: bool) -> Vec<u32> {
    let l = layout.local_qubits();
    let slow = layout.precision.qubit_with_partners(SLOW_PARTNER_BYTES);
    let mut p: Vec<u32> = [Some(0), with_slow.then_some(slow), Some(l / 2), Some(l - 1)]
        .into_iter()
        .flatten()
        .filter(|&q| q < l)
        .collect();
    p.sort_unstable();
    p.dedup();
    p
}

/// The lowest qubits of classes that touch part of the chunk (phases,
/// SWAPs): a kernel's traffic follows the runs of 2^q contiguous
/// amplitudes it touches, so every low qubit up to runs of 512 bytes
/// (double precision; 256 single), where the memory's sectors and lines
/// stop mattering, then the middle, and `also`; below `limit`, sorted.
fn lows(layout: &Layout, limit: u32, also: &[u32]) -> Vec<u32> {
    let mut p: Vec<u32> =
        (0..=LOW_RUNS).chain([layout.local_qubits() / 2]).chain(also.iter().copied()).filter(|&q| q < limit).collect();
    p.sort_unstable();
    p.dedup();
    p
}

/// The low qubits timed one by one: 2^5 amplitudes make the longest run whose traffic differs.
const LOW_RUNS: u32 = 5;

fn probe(step: PhysicalGate, n: u32, ones: &[u32], effect: impl Fn(&mut ProductState) + 'static) -> Probe {
    let mut start = ProductState::new(n);
    for &q in ones {
        start.basis(q, true);
    }
    Probe { step, start, effect: Box::new(effect) }
}

/// Every local class of `layout`'s register.
pub fn local(layout: &Layout) -> Vec<Probe> {
    let (n, l) = (layout.qubits, layout.local_qubits());
    let mut out = Vec::new();
    for q in positions(layout, true) {
        out.push(probe(PhysicalGate::H(q), n, &[], move |s| s.h(q)));
    }
    for q in positions(layout, false) {
        let m = rotation();
        out.push(probe(PhysicalGate::U { q, m }, n, &[], move |s| s.gate(q, &m)));
    }
    for q in lows(layout, l, &[l - 1]) {
        out.push(probe(PhysicalGate::Phase { qubits: vec![q], phase: t_phase() }, n, &[], move |s| {
            s.phase(q, t_phase())
        }));
    }
    // Two-qubit phases by their lower qubit, which sets what they touch:
    // the upper one at |1⟩ leaves a phase on the lower.
    let pairs = lows(layout, l - 1, &[l.saturating_sub(2)]);
    // Each low one beside the qubit above it, where the two share the
    // memory's lines, and beside the top one, where the top only halves it.
    let mut two: Vec<(u32, u32)> = pairs.iter().map(|&lo| (lo + 1, lo)).collect();
    two.extend(lows(layout, l - 2, &[]).into_iter().map(|lo| (l - 1, lo)));
    for (hi, lo) in two {
        out.push(probe(PhysicalGate::Phase { qubits: vec![hi, lo], phase: t_phase() }, n, &[hi], move |s| {
            s.phase(lo, t_phase())
        }));
    }
    for lo in lows(layout, l - 1, &[]) {
        out.push(probe(PhysicalGate::Swap(lo, l - 1), n, &[], move |s| s.swap(lo, l - 1)));
    }
    // CNOTs by their lower qubit too: the top one controlling each low
    // target, and qubit 0 controlling the top.
    let mut cx: Vec<(u32, u32)> = lows(layout, l - 1, &[]).into_iter().map(|t| (l - 1, t)).collect();
    cx.extend([(1, 0), (0, l - 1)]);
    for (c, t) in cx.into_iter().filter(|&(c, t)| c != t && c < l && t < l) {
        out.push(probe(PhysicalGate::Cx { c, t }, n, &[c], move |s| s.gate(t, &not())));
    }
    if layout.global_qubits >= 1 {
        // Phases with global qubits: the ranks whose bit is 1 do the work.
        let top = n - 1;
        for lo in lows(layout, l, &[]) {
            let phase = PhysicalGate::Phase { qubits: vec![top, lo], phase: t_phase() };
            out.push(probe(phase, n, &[top], move |s| s.phase(lo, t_phase())));
        }
        out.push(probe(PhysicalGate::Cx { c: top, t: 0 }, n, &[top], |s| s.gate(0, &not())));
    }
    if layout.global_qubits >= 2 {
        let (a, b) = (n - 1, n - 2);
        out.push(probe(PhysicalGate::Phase { qubits: vec![a, b], phase: t_phase() }, n, &[a], move |s| {
            s.phase(b, t_phase())
        }));
    }
    out
}

/// The classes that exchange, for the operations `ops` asks for: a gate
/// on each global qubit and a SWAP of each with the top local qubit (the
/// gate and swap patterns), a SWAP that packs its half, a CNOT with a
/// global target, and a SWAP of two global qubits.
pub fn global(layout: &Layout, ops: &[GlobalOp]) -> Vec<Probe> {
    let (n, l) = (layout.qubits, layout.local_qubits());
    let mut out = Vec::new();
    if ops.contains(&GlobalOp::Gate) {
        for t in l..n {
            out.push(probe(PhysicalGate::GlobalU { t, m: hadamard() }, n, &[], move |s| s.h(t)));
        }
    }
    if ops.contains(&GlobalOp::Swap) {
        for t in l..n {
            out.push(probe(PhysicalGate::GlobalSwap { t, q: l - 1 }, n, &[], move |s| s.swap(t, l - 1)));
        }
        if l > 1 {
            out.push(probe(PhysicalGate::GlobalSwap { t: n - 1, q: 0 }, n, &[], move |s| s.swap(n - 1, 0)));
        }
    }
    if ops.len() > 1 && l < n {
        out.push(probe(PhysicalGate::GlobalCx { c: 0, t: n - 1 }, n, &[0], move |s| s.gate(n - 1, &not())));
        if n - l >= 2 {
            out.push(probe(PhysicalGate::GlobalSwap2(n - 2, n - 1), n, &[], move |s| s.swap(n - 2, n - 1)));
        }
    }
    out
}

/// Times `p` (`warmup` + `iters` runs) on `reg` over `wire`, and checks every
/// amplitude after them; `copy_s` is a chunk copy's time within a rank.
pub fn time(
    reg: &mut dyn Register,
    p: &Probe,
    wire: Option<Wire>,
    (warmup, iters): (u32, u32),
    fault: Option<Fault>,
    copy_s: f64,
) -> Result<ClassTime> {
    let layout = *reg.layout();
    interrupt::step(format!(
        "{} qubits: {} on {:?}{}",
        layout.qubits,
        p.step.class().name(),
        p.step.qubits(),
        wire.map_or(String::new(), |w| format!(" over {}", w.name()))
    ));
    reg.init(&p.start)?;
    let mut model = p.start.clone();
    let (mut ex, mut up) = (Vec::new(), Vec::new());
    for i in 0..warmup + iters {
        interrupt::check()?;
        // Each step the slowest process's, every process held to it: a
        // class is timed alone, not behind a partner's previous step.
        let t = step::run(reg, &p.step, wire, fault)?.slowest(reg.world());
        (p.effect)(&mut model);
        if i >= warmup {
            ex.extend(t.exchange);
            up.push(t.update);
        }
    }
    let exchange = (!ex.is_empty()).then(|| Summary::of(&ex));
    let update = Summary::of(&up);
    let time_s = exchange.map_or(0.0, |e| e.median) + update.median;
    Ok(ClassTime {
        class: p.step.class(),
        qubits: p.step.qubits(),
        transport: wire.map(|w| w.name().to_string()),
        bytes: p.step.bytes(&layout),
        exchange,
        update,
        time_s,
        vs_copy: time_s / copy_s,
        amplitudes: layout.local_amps() * layout.ranks() as u64,
        wrong: reg.count_wrong(&model, 0.0)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::statevec::layout::Precision;
    use crate::statevec::step::Class;

    #[test]
    fn every_class_is_timed_where_its_traffic_differs() {
        let layout = Layout::new(20, 4, Precision::Double).unwrap();
        let locals = local(&layout);
        let count = |c: Class| locals.iter().filter(|p| p.step.class() == c).count();
        // H at 0, the 4 KiB qubit (8), the middle and the top.
        assert_eq!(count(Class::H), 4);
        assert!(locals.iter().all(|p| p.step.is_local()));
        let globals = global(&layout, &[GlobalOp::Gate, GlobalOp::Swap]);
        assert!(globals.iter().all(|p| !p.step.is_local()));
        assert_eq!(globals.iter().filter(|p| p.step.class() == Class::GlobalGate).count(), 2);
        assert!(globals.iter().any(|p| p.step == PhysicalGate::GlobalSwap { t: 19, q: 0 }));
        assert!(globals.iter().any(|p| p.step.class() == Class::GlobalSwap2));
        assert!(global(&layout, &[GlobalOp::Gate]).iter().all(|p| p.step.class() == Class::GlobalGate));
    }
}
