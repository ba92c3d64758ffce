//! How a state vector of n qubits is spread over 2^k ranks, as QuEST,
//! cuStateVec and their peers spread it: each rank holds 2^L amplitudes
//! (L = n − k local qubits); qubit t ≥ L is global and pairs each rank with
//! rank XOR 2^(t−L).

use crate::error::{Error, Result};
use crate::fault::Fault;
use serde::{Deserialize, Serialize};

/// The distance between a pair's two amplitudes that an H200 streams
/// slowest, two runs 4 KiB apart: the GPU register runs H at that qubit
/// through a kernel of its own, and the exchange times it as one of its
/// local gates (docs/kernels-roofline.md).
pub const SLOW_PARTNER_BYTES: u64 = 4096;

/// Bytes of one amplitude.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    /// complex<float>, 8 bytes
    Single,
    /// complex<double>, 16 bytes
    Double,
}

impl Precision {
    pub fn bytes(self) -> u64 {
        match self {
            Precision::Single => 8,
            Precision::Double => 16,
        }
    }

    /// The qubit whose pairs' amplitudes lie `bytes` apart (a power of two
    /// at least one amplitude).
    pub fn qubit_with_partners(self, bytes: u64) -> u32 {
        (bytes / self.bytes()).trailing_zeros()
    }

    pub fn name(self) -> &'static str {
        match self {
            Precision::Single => "single",
            Precision::Double => "double",
        }
    }

    pub fn parse(text: &str) -> Result<Precision> {
        match text {
            "single" => Ok(Precision::Single),
            "double" => Ok(Precision::Double),
            _ => Err(Error::Usage(format!("unknown precision '{text}': use single or double"))),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    pub qubits: u32,
    /// log2 of the rank count.
    pub global_qubits: u32,
    pub precision: Precision,
}

impl Layout {
    pub fn new(qubits: u32, ranks: usize, precision: Precision) -> Result<Layout> {
        if !ranks.is_power_of_two() {
            return Err(Error::Usage(format!(
                "a state vector is spread over a power of two ranks; {ranks} is not one (use -g 1, 2, 4, 8, …)"
            )));
        }
        let global_qubits = ranks.trailing_zeros();
        if qubits < global_qubits + 2 {
            return Err(Error::Usage(format!(
                "{qubits} qubits over {ranks} ranks leaves fewer than 2 local qubits; use at least {} qubits",
                global_qubits + 2
            )));
        }
        // The whole register's bytes must be a count: 2^63 at most.
        let most = 63 - precision.bytes().trailing_zeros();
        if qubits > most {
            return Err(Error::Usage(format!(
                "{qubits} qubits in {} precision is 2^{qubits} amplitudes, past any machine: at most {most} qubits",
                precision.name()
            )));
        }
        Ok(Layout { qubits, global_qubits, precision })
    }

    pub fn ranks(&self) -> usize {
        1 << self.global_qubits
    }

    /// L: the qubits whose index bits lie within a rank.
    pub fn local_qubits(&self) -> u32 {
        self.qubits - self.global_qubits
    }

    /// Amplitudes per rank (2^L).
    pub fn local_amps(&self) -> u64 {
        1 << self.local_qubits()
    }

    /// Bytes of one rank's chunk.
    pub fn chunk_bytes(&self) -> u64 {
        self.local_amps() * self.precision.bytes()
    }

    /// The rank `rank` exchanges with for a gate on global qubit `t`.
    pub fn partner(&self, rank: usize, t: u32) -> usize {
        debug_assert!(t >= self.local_qubits() && t < self.qubits);
        rank ^ (1 << (t - self.local_qubits()))
    }

    /// Whether `rank` holds the amplitudes whose bit `t` (global) is 1.
    pub fn holds_one(&self, rank: usize, t: u32) -> bool {
        (rank >> (t - self.local_qubits())) & 1 == 1
    }

    /// The rank `rank` actually exchanges with: its partner, or itself under
    /// the wrong-partner fault.
    pub fn peer(&self, rank: usize, t: u32, fault: Option<Fault>) -> usize {
        if fault == Some(Fault::WrongPartner) { rank } else { self.partner(rank, t) }
    }

    /// Amplitude offset (within a chunk) of the half that `rank` sends for
    /// a swap of global qubit `t` with the top local qubit: the half whose
    /// top local bit differs from the rank's bit `t`. It receives into the
    /// same half. The wrong-half fault sends the other one.
    pub fn swap_half(&self, rank: usize, t: u32, fault: Option<Fault>) -> u64 {
        let moves_upper = !self.holds_one(rank, t);
        let upper = moves_upper != (fault == Some(Fault::WrongHalf));
        if upper { self.local_amps() / 2 } else { 0 }
    }

    /// Bytes each rank sends (and receives) for one operation: QuEST sends
    /// the whole chunk for a gate on a global qubit, a global↔local swap
    /// half of it (docs/ARCHITECTURE.md, the exchange pattern).
    pub fn message_bytes(&self, pattern: GlobalOp) -> u64 {
        match pattern {
            // QuEST v3/v4: the whole chunk.
            GlobalOp::Gate => self.chunk_bytes(),
            // A global↔local swap moves half of it.
            GlobalOp::Swap => self.chunk_bytes() / 2,
        }
    }
}

/// An operation on a global qubit, by what it makes each rank exchange
/// with its partner (`--pattern`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GlobalOp {
    /// Exchange the whole chunk with the partner, then combine (QuEST).
    Gate,
    /// Exchange the half a global↔local qubit swap moves, then gate the
    /// qubit locally (cuStateVec, Aer, mpiQulacs, QuEST v4).
    Swap,
}

impl GlobalOp {
    pub fn name(self) -> &'static str {
        match self {
            GlobalOp::Gate => "gate",
            GlobalOp::Swap => "swap",
        }
    }

    /// gate, swap or both.
    pub fn parse_list(text: &str) -> Result<Vec<GlobalOp>> {
        match text {
            "gate" => Ok(vec![GlobalOp::Gate]),
            "swap" => Ok(vec![GlobalOp::Swap]),
            "both" => Ok(vec![GlobalOp::Gate, GlobalOp::Swap]),
            _ => Err(Error::Usage(format!("unknown pattern '{text}': use gate, swap or both"))),
        }
    }
}

/// The largest register that fits in `bytes` of memory per device: one
/// device needs the state only; spread over 2^k devices each also holds an
/// exchange buffer as large as its chunk (QuEST's layout).
pub fn largest_register(bytes: u64, precision: Precision, global_qubits: u32) -> u32 {
    let amps = bytes / precision.bytes();
    if amps == 0 {
        return 0;
    }
    let per_device = if global_qubits == 0 { amps } else { amps / 2 };
    (63 - per_device.max(1).leading_zeros()) + global_qubits
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Partners 4 KiB apart: qubit 8 of complex<double>, 9 of complex<float>.
    #[test]
    fn the_slow_qubit_is_4_kib_of_amplitudes() {
        assert_eq!(Precision::Double.qubit_with_partners(SLOW_PARTNER_BYTES), 8);
        assert_eq!(Precision::Single.qubit_with_partners(SLOW_PARTNER_BYTES), 9);
    }

    #[test]
    fn splits_like_quest() {
        let l = Layout::new(33, 2, Precision::Double).unwrap();
        assert_eq!(l.local_qubits(), 32);
        assert_eq!(l.chunk_bytes(), 64 << 30);
        assert_eq!(l.partner(0, 32), 1);
        assert!(l.holds_one(1, 32));
        assert_eq!(l.message_bytes(GlobalOp::Swap), 32 << 30);
        assert_eq!(l.peer(0, 32, Some(Fault::WrongPartner)), 0);
        assert_eq!((l.swap_half(0, 32, None), l.swap_half(1, 32, None)), (1 << 31, 0));
        assert_eq!(l.swap_half(0, 32, Some(Fault::WrongHalf)), 0);
        let l4 = Layout::new(20, 4, Precision::Single).unwrap();
        assert_eq!(l4.local_qubits(), 18);
        assert_eq!(l4.partner(2, 19), 0);
        assert_eq!(l4.partner(2, 18), 3);
    }

    #[test]
    fn rejects_what_cannot_be_spread() {
        assert_eq!(Layout::new(20, 3, Precision::Single).unwrap_err().exit_code(), 2);
        assert_eq!(Layout::new(2, 2, Precision::Single).unwrap_err().exit_code(), 2);
        assert_eq!(Layout::new(70, 2, Precision::Single).unwrap_err().exit_code(), 2);
    }

    #[test]
    fn register_sizes() {
        // 140 GiB: 2^33 double amplitudes fit one device (128 GiB); spread
        // over two, each needs state + buffer: 2^32 each, 33 qubits.
        assert_eq!(largest_register(140 << 30, Precision::Double, 0), 33);
        assert_eq!(largest_register(140 << 30, Precision::Double, 1), 33);
        assert_eq!(largest_register(140 << 30, Precision::Single, 2), 35);
    }
}
