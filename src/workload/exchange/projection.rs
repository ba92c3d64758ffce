//! What a circuit costs from a register's gate-class table: each step
//! priced as the class the register timed nearest to it (the same class,
//! the same wire, the same shape: how many of its qubits are global, and
//! whether a half to exchange had to be packed; then the measured position
//! nearest its lowest local qubit, which is what a memory-bound kernel's
//! traffic depends on), summed. A projection is arithmetic on measured
//! times, never a measurement: records and tables say which is which.

use crate::record::exchange::ClassTime;
use crate::statevec::layout::Layout;
use crate::statevec::step::{Class, PhysicalGate};

/// The shape of a step on `layout`: its class, how many of its qubits are
/// global, whether a half it exchanges is packed, and its lowest local qubit.
fn shape(class: Class, qubits: &[u32], l: u32) -> (Class, usize, bool, u32) {
    let globals = qubits.iter().filter(|&&q| q >= l).count();
    let lowest = qubits.iter().copied().filter(|&q| q < l).min().unwrap_or(0);
    let packed = matches!(class, Class::GlobalSwap | Class::GlobalCx) && lowest != l - 1 && globals < qubits.len();
    (class, globals, packed, lowest)
}

/// The second-lowest local qubit of `qubits` below `l`, or `l` where there is none.
fn second(qubits: &[u32], l: u32) -> u32 {
    let mut local: Vec<u32> = qubits.iter().copied().filter(|&q| q < l).collect();
    local.sort_unstable();
    local.get(1).copied().unwrap_or(l)
}

/// What a projection prices from: a register's gate-class table and the
/// layout it was measured on.
#[derive(Debug, Clone, Copy)]
pub struct Table<'a> {
    pub classes: &'a [ClassTime],
    pub layout: Layout,
}

/// The measured class nearest to `step` (on `layout`) over `wire`, if the
/// table has its class, wire and shape (a phase of any number of local
/// qubits is priced as the nearest measured phase of as many global ones).
pub fn nearest<'a>(
    step: &PhysicalGate,
    layout: &Layout,
    wire: Option<&str>,
    table: Table<'a>,
) -> Option<&'a ClassTime> {
    let (class, globals, packed, lowest) = shape(step.class(), &step.qubits(), layout.local_qubits());
    let locals = step.qubits().len() - globals;
    let l = table.layout.local_qubits();
    table
        .classes
        .iter()
        .filter(|c| c.class == class && (!class.exchanges() || c.transport.as_deref() == wire))
        .filter(|c| {
            let (_, g, p, _) = shape(c.class, &c.qubits, l);
            g == globals && p == packed
        })
        .min_by_key(|c| {
            let (_, _, _, low) = shape(c.class, &c.qubits, l);
            // The same number of local qubits first (a one-qubit phase
            // touches half the amplitudes, a two-qubit one a quarter),
            // then the lowest local qubit, then the one above it: two low
            // qubits share the memory's lines, a high one only halves them.
            let same = (c.qubits.len() - globals != locals) as u32;
            let above = second(&c.qubits, l).abs_diff(second(&step.qubits(), layout.local_qubits()));
            (same, low.abs_diff(lowest), above, low)
        })
}

/// The seconds of `steps` on `layout` over `wire`, from `table`, the local
/// classes' times scaled by the chunks' sizes (the same kernels on a chunk
/// 2^k times larger take 2^k times as long) and exchanges as measured;
/// None when a step's class was not measured.
pub fn price(steps: &[PhysicalGate], layout: &Layout, wire: Option<&str>, table: Table) -> Option<f64> {
    let scale = layout.chunk_bytes() as f64 / table.layout.chunk_bytes() as f64;
    steps
        .iter()
        .map(|s| {
            let c = nearest(s, layout, wire, table)?;
            Some(if c.class.exchanges() { c.time_s } else { c.time_s * scale })
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::statevec::circuit::hadamard;
    use crate::statevec::layout::Precision;
    use crate::stats::Summary;
    use num_complex::Complex64;

    fn class(class: Class, qubits: Vec<u32>, wire: Option<&str>, t: f64) -> ClassTime {
        ClassTime {
            class,
            qubits,
            transport: wire.map(String::from),
            bytes: 0,
            exchange: None,
            update: Summary::of(&[t]),
            time_s: t,
            vs_copy: 1.0,
            amplitudes: 0,
            wrong: 0,
        }
    }

    #[test]
    fn steps_are_priced_as_the_nearest_measured_class() {
        let layout = Layout::new(20, 2, Precision::Double).unwrap();
        let table = vec![
            class(Class::H, vec![0], None, 1.0),
            class(Class::H, vec![18], None, 1.1),
            class(Class::Phase, vec![1, 0], None, 0.5),
            class(Class::Phase, vec![10, 9], None, 0.25),
            class(Class::Phase, vec![9], None, 0.55),
            class(Class::GlobalGate, vec![19], Some("nccl"), 7.0),
            class(Class::GlobalSwap, vec![19, 18], Some("nccl"), 3.0),
            class(Class::GlobalSwap, vec![19, 0], Some("nccl"), 3.5),
        ];
        let p = Complex64::new(0.0, 1.0);
        let t = Table { classes: &table, layout };
        let price1 = |s: PhysicalGate, w: Option<&str>| price(&[s], &layout, w, t);
        assert_eq!(price1(PhysicalGate::H(2), None), Some(1.0));
        assert_eq!(price1(PhysicalGate::H(15), None), Some(1.1));
        // The lowest qubit sets a phase's traffic.
        assert_eq!(price1(PhysicalGate::Phase { qubits: vec![15, 0], phase: p }, None), Some(0.5));
        assert_eq!(price1(PhysicalGate::Phase { qubits: vec![15, 6], phase: p }, None), Some(0.25));
        assert_eq!(price1(PhysicalGate::Phase { qubits: vec![4], phase: p }, None), Some(0.55));
        // A global qubit in the phase: not measured, so no price.
        assert_eq!(price1(PhysicalGate::Phase { qubits: vec![19, 6], phase: p }, None), None);
        assert_eq!(price1(PhysicalGate::GlobalU { t: 19, m: hadamard() }, Some("nccl")), Some(7.0));
        assert_eq!(price1(PhysicalGate::GlobalU { t: 19, m: hadamard() }, Some("mpi")), None);
        assert_eq!(price1(PhysicalGate::GlobalSwap { t: 19, q: 18 }, Some("nccl")), Some(3.0));
        assert_eq!(price1(PhysicalGate::GlobalSwap { t: 19, q: 3 }, Some("nccl")), Some(3.5));
        assert_eq!(
            price(&[PhysicalGate::H(0), PhysicalGate::GlobalSwap { t: 19, q: 18 }], &layout, Some("nccl"), t),
            Some(4.0)
        );
        // On one GPU the chunk is twice as large: the local classes take twice as long.
        let one = Layout::new(20, 1, Precision::Double).unwrap();
        assert_eq!(
            price(&[PhysicalGate::H(19), PhysicalGate::Phase { qubits: vec![19, 0], phase: p }], &one, None, t),
            Some(3.2)
        );
    }
}
