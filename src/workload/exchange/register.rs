//! The distributed register as the exchange workload drives it: whatever
//! holds the amplitudes (GPUs or host memory) implements [`Register`], and
//! each way of moving amplitudes between partner ranks is a [`Wire`].

use super::layout::{Layout, Pattern};
use super::state::ProductState;
use crate::error::Result;
use crate::transport::RankInfo;
use serde::Serialize;

/// A way amplitudes travel between partner ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Wire {
    /// Grouped ncclSend/ncclRecv between the partners.
    Nccl,
    /// An SM kernel on each GPU writing into its partner's memory over
    /// NVLink/PCIe (CUDA peer access), both directions at once.
    P2p,
    /// cuMemcpyPeerAsync by the copy engines, both directions at once.
    P2pCe,
    /// GPU → pinned host → partner GPU, in chunks over several streams so
    /// the device-to-host and host-to-device copies overlap.
    Host,
    /// The same without overlap, as QuEST does without GPU-aware MPI:
    /// device-to-host, the host hand-over (a copy, as MPI would make), then
    /// host-to-device, one after the other.
    HostUnpipelined,
    /// Host memory ranks (threads, or MPI processes), memcpy or MPI.
    Cpu,
}

impl Wire {
    pub fn name(self) -> &'static str {
        match self {
            Wire::Nccl => "nccl",
            Wire::P2p => "p2p",
            Wire::P2pCe => "p2p-ce",
            Wire::Host => "host",
            Wire::HostUnpipelined => "host-unpipelined",
            Wire::Cpu => "cpu",
        }
    }

    pub fn parse(text: &str) -> Option<Wire> {
        [Wire::Nccl, Wire::P2p, Wire::P2pCe, Wire::Host, Wire::HostUnpipelined, Wire::Cpu]
            .into_iter()
            .find(|w| w.name() == text)
    }

    /// Whether the wire moves GPU memory (else host memory ranks).
    pub fn on_gpu(self) -> bool {
        self != Wire::Cpu
    }
}

/// A deliberate mistake, to prove that checking catches it
/// (`QBENCH_CORRUPT=partner` or `=half`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Exchange with the wrong rank (yourself, with two ranks).
    WrongPartner,
    /// Send the half a swap keeps instead of the half it moves.
    WrongHalf,
}

impl Fault {
    pub fn from_env() -> Option<Fault> {
        match std::env::var("QBENCH_CORRUPT").ok()?.as_str() {
            "partner" => Some(Fault::WrongPartner),
            "half" => Some(Fault::WrongHalf),
            _ => None,
        }
    }
}

/// The rank a rank actually exchanges with: its partner, or itself under
/// the wrong-partner fault.
pub fn peer_of(layout: &Layout, rank: usize, t: u32, fault: Option<Fault>) -> usize {
    if fault == Some(Fault::WrongPartner) { rank } else { layout.partner(rank, t) }
}

/// Amplitude offset (within a chunk) of the half that rank `rank` sends
/// for a swap of global qubit `t` with the top local qubit: the half whose
/// top local bit differs from the rank's bit `t`. It receives into the same
/// half.
pub fn swap_half(layout: &Layout, rank: usize, t: u32, fault: Option<Fault>) -> u64 {
    let moves_upper = !layout.holds_one(rank, t);
    let upper = moves_upper != (fault == Some(Fault::WrongHalf));
    if upper { layout.local_amps() / 2 } else { 0 }
}

/// Seconds of one operation: the slowest rank's.
pub type Seconds = f64;

pub trait Register {
    fn layout(&self) -> &Layout;
    /// The ranks this process holds.
    fn ranks(&self) -> &[RankInfo];
    /// Writes the product state into every rank's chunk.
    fn init(&mut self, state: &ProductState) -> Result<()>;
    /// Amplitudes on this process's ranks that differ from `state`.
    fn count_wrong(&mut self, state: &ProductState) -> Result<u64>;
    /// H on local qubit `q` of every rank.
    fn local_h(&mut self, q: u32) -> Result<Seconds>;
    /// A copy of one chunk within each rank's memory (the bandwidth ceiling
    /// of a local gate, which reads and writes every amplitude once).
    fn local_copy(&mut self) -> Result<Seconds>;
    /// Every rank sends its chunk (gate) or the half a swap moves (swap) to
    /// its partner for global qubit `t`, receiving the partner's into its
    /// exchange buffer.
    fn exchange(&mut self, wire: Wire, pattern: Pattern, t: u32, fault: Option<Fault>) -> Result<Seconds>;
    /// The gate pattern's update: H on global qubit `t` from own and
    /// received amplitudes.
    fn combine(&mut self, t: u32) -> Result<Seconds>;
    /// The swap pattern's update: the received half into the half it
    /// replaces, completing the swap of `t` with the top local qubit.
    fn place(&mut self, t: u32) -> Result<Seconds>;
    /// Why `wire` cannot run here, if it cannot.
    fn unavailable(&self, wire: Wire) -> Option<String>;
    /// Device-to-host and host-to-device copies of `bytes` at once on every
    /// rank through pinned memory, where ranks are GPUs.
    fn host_link(&mut self, _bytes: u64) -> Result<Option<Seconds>> {
        Ok(None)
    }
    /// nccl-tests' sendrecv ring of `bytes` per rank, where NCCL is set up.
    fn nccl_sendrecv(&mut self, _bytes: u64) -> Result<Option<Seconds>> {
        Ok(None)
    }
}
