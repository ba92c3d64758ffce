//! Host staging, shared by every wire that moves GPU amplitudes through
//! host memory (host, host-unpipelined, mpi, rdma-staged):
//! each rank copies its message out of the GPU into pinned send slots, a
//! [`Hop`] carries each piece to the partner's receive slot (nothing within
//! a process, MPI_Sendrecv, RDMA WRITE), and the partner copies it into its
//! exchange buffer. [`pipelined`] keeps several pieces in flight so that the
//! three overlap; [`unpipelined`] does one step after the other, in the
//! order QuEST's exchange follows without GPU-aware MPI (QuEST's exact
//! exchange, with its pageable buffers and message sizes, is quest.rs).

use super::{GpuRegister, copy_d2h, copy_h2d, record};
use crate::error::{Error, Result};
use crate::gpu::{self, Gpu, Pinned, cuda_err};
use crate::transport::amplitudes::Seconds;
use cudarc::driver::CudaEvent;
use std::time::Instant;

/// One rank's pinned host memory for staging: `slots` send slots, then as
/// many receive slots (none where the partner reads the send slots), of
/// `piece` bytes each, in one allocation (which an adapter registers
/// whole), and the events that order their reuse.
pub struct Stage {
    mem: Pinned,
    slots: usize,
    piece: u64,
    receive: bool,
    /// Recorded on the rank's device-to-host stream: send slot s holds its piece.
    filled: Vec<CudaEvent>,
    /// Recorded on the rank's host-to-device stream: the piece that landed
    /// for this rank in slot s has been copied into its GPU.
    emptied: Vec<CudaEvent>,
}

impl Stage {
    pub fn new(gpu: &Gpu, slots: usize, piece: u64, receive: bool) -> Result<Stage> {
        let event = || gpu.ctx.new_event(None).map_err(cuda_err("creating an event"));
        let sides = if receive { 2 } else { 1 };
        Ok(Stage {
            mem: Pinned::new(gpu, sides * slots * piece as usize)?,
            slots,
            piece,
            receive,
            filled: (0..slots).map(|_| event()).collect::<Result<_>>()?,
            emptied: (0..slots).map(|_| event()).collect::<Result<_>>()?,
        })
    }

    pub fn shaped(&self, slots: usize, piece: u64, receive: bool) -> bool {
        self.slots == slots && self.piece == piece && self.receive == receive
    }

    /// Offsets of send slot `s` and receive slot `s` in the allocation.
    pub fn send_offset(&self, s: usize) -> u64 {
        s as u64 * self.piece
    }

    pub fn recv_offset(&self, s: usize) -> u64 {
        (self.slots + s) as u64 * self.piece
    }

    pub fn send(&self, s: usize) -> *mut u8 {
        self.at(self.send_offset(s))
    }

    pub fn recv(&self, s: usize) -> *mut u8 {
        self.at(self.recv_offset(s))
    }

    fn at(&self, offset: u64) -> *mut u8 {
        self.mem.addr().wrapping_add(offset as usize)
    }

    /// The whole allocation: (address, bytes).
    pub fn span(&self) -> (u64, usize) {
        (self.mem.addr() as u64, self.mem.size())
    }
}

/// One piece to carry: `len` bytes in slot `slot` of every local rank, and
/// each local rank's partner (a rank of the job).
pub struct Piece<'a> {
    pub slot: usize,
    pub len: u64,
    pub peers: &'a [usize],
}

/// How a piece in each rank's send slot reaches its partner's receive slot.
pub trait Hop {
    /// Whether the partner's GPU may copy a piece straight out of the
    /// sender's send slot, ordered by events alone (ranks of one process).
    fn direct(&self) -> bool {
        false
    }
    /// Moves the piece of every local rank's send slot into its partner's
    /// receive slot. The pieces are in host memory and the receive slots
    /// free when it is called; when it returns, every local rank's receive
    /// slot holds its partner's piece.
    fn carry(&mut self, reg: &GpuRegister, piece: &Piece) -> Result<()>;
}

/// Piece `k` of a message of `len` bytes cut into pieces of `piece` bytes
/// that take `slots` slots in turn: (slot, offset, bytes); the last piece
/// holds what is left.
fn piece_bounds(k: u64, len: u64, piece: u64, slots: usize) -> (usize, u64, u64) {
    ((k % slots as u64) as usize, k * piece, piece.min(len - k * piece))
}

/// Each local rank's partner in this exchange, as a rank of the job.
fn peers(reg: &GpuRegister) -> Vec<usize> {
    (0..reg.ranks.len()).map(|i| reg.part(i).peer).collect()
}

/// Every rank's message in pieces of `piece` bytes through `slots` slots,
/// so that copies out of the GPUs, the hops and copies into the GPUs
/// overlap; timed with events on the GPUs. A direct hop leaves all the
/// ordering to the GPUs; any other is called once a piece is in host memory.
pub fn pipelined(reg: &mut GpuRegister, hop: &mut dyn Hop, piece: u64, slots: usize) -> Result<Seconds> {
    let peers = peers(reg);
    // The local index of each rank's partner, for a direct hop.
    let partner: Vec<usize> = match hop.direct() {
        true => reg.local_pairs()?.into_iter().map(|(_, j)| j).collect(),
        false => Vec::new(),
    };
    reg.ensure_stages(slots, piece, partner.is_empty())?;
    let ends: Vec<(u64, u64)> = (0..reg.ranks.len()).map(|i| reg.ends(i)).collect();
    let len = reg.part(0).len;
    let pieces = len.div_ceil(piece);
    let bounds = |k: u64| piece_bounds(k, len, piece, slots);
    reg.span(|me| {
        for r in &me.ranks {
            let fork = record(&r.gpu.stream, false)?;
            r.d2h.wait(&fork).map_err(cuda_err("ordering streams"))?;
            r.h2d.wait(&fork).map_err(cuda_err("ordering streams"))?;
        }
        // Piece k out of every GPU, into send slot k % slots once whoever
        // reads that slot has copied its last piece out (a direct hop; any
        // other has carried it before this is called).
        let out = |k: u64| -> Result<()> {
            let (s, off, n) = bounds(k);
            for (i, (r, st)) in me.ranks.iter().zip(&me.stages).enumerate() {
                if let Some(&j) = partner.get(i) {
                    r.d2h.wait(&me.stages[j].emptied[s]).map_err(cuda_err("ordering streams"))?;
                }
                copy_d2h(st.send(s), ends[i].0 + off, n, &r.d2h)?;
                st.filled[s].record(&r.d2h).map_err(cuda_err("recording an event"))?;
            }
            Ok(())
        };
        out(0)?;
        for k in 0..pieces {
            if k + 1 < pieces {
                out(k + 1)?;
            }
            let (s, off, n) = bounds(k);
            if partner.is_empty() {
                let ready: Vec<&CudaEvent> = me.stages.iter().flat_map(|st| [&st.filled[s], &st.emptied[s]]).collect();
                gpu::wait_events(&ready, None, || Ok(()))?;
                hop.carry(me, &Piece { slot: s, len: n, peers: &peers })?;
            } else {
                for (j, r) in me.ranks.iter().enumerate() {
                    r.h2d.wait(&me.stages[partner[j]].filled[s]).map_err(cuda_err("ordering streams"))?;
                }
            }
            for (j, (r, st)) in me.ranks.iter().zip(&me.stages).enumerate() {
                let from = partner.get(j).map_or(st.recv(s), |&i| me.stages[i].send(s));
                copy_h2d(ends[j].1 + off, from, n, &r.h2d)?;
                st.emptied[s].record(&r.h2d).map_err(cuda_err("recording an event"))?;
            }
        }
        for r in &me.ranks {
            r.gpu.stream.wait(&record(&r.d2h, false)?).map_err(cuda_err("ordering streams"))?;
            r.gpu.stream.wait(&record(&r.h2d, false)?).map_err(cuda_err("ordering streams"))?;
        }
        Ok(())
    })
}

/// Every rank's message in pieces of up to `piece` bytes, one step after
/// the other: out of every GPU, the hop, into every GPU. Host-clock timed,
/// since the hop is part of it.
pub fn unpipelined(reg: &mut GpuRegister, hop: &mut dyn Hop, piece: u64) -> Result<Seconds> {
    let peers = peers(reg);
    let ends: Vec<(u64, u64)> = (0..reg.ranks.len()).map(|i| reg.ends(i)).collect();
    let len = reg.part(0).len;
    let piece = piece.min(len);
    reg.ensure_stages(1, piece, true)?;
    reg.sync_all()?;
    let t0 = Instant::now();
    for k in 0..len.div_ceil(piece) {
        let (_, off, n) = piece_bounds(k, len, piece, 1);
        for (i, (r, st)) in reg.ranks.iter().zip(&reg.stages).enumerate() {
            copy_d2h(st.send(0), ends[i].0 + off, n, &r.d2h)?;
        }
        reg.sync_streams(|r| &r.d2h)?;
        hop.carry(reg, &Piece { slot: 0, len: n, peers: &peers })?;
        for ((r, st), e) in reg.ranks.iter().zip(&reg.stages).zip(&ends) {
            copy_h2d(e.1 + off, st.recv(0), n, &r.h2d)?;
        }
        reg.sync_streams(|r| &r.h2d)?;
    }
    Ok(t0.elapsed().as_secs_f64())
}

/// The hop between ranks of one process: direct when pipelined, a host
/// copy (as MPI would make within a node) when not, a thread per rank.
pub struct InProcess;

impl Hop for InProcess {
    fn direct(&self) -> bool {
        true
    }

    fn carry(&mut self, reg: &GpuRegister, piece: &Piece) -> Result<()> {
        let s = piece.slot;
        let copies: Vec<(u64, u64)> = piece
            .peers
            .iter()
            .enumerate()
            .map(|(j, &p)| {
                let i = p.checked_sub(reg.first_rank).filter(|&i| i < reg.stages.len());
                let i = i.ok_or_else(|| Error::Usage("the partner GPU is in another process".into()))?;
                Ok((reg.stages[i].send(s) as u64, reg.stages[j].recv(s) as u64))
            })
            .collect::<Result<_>>()?;
        let len = piece.len as usize;
        crate::threads::each(copies, |_, (from, to)| {
            // SAFETY: a send slot and a receive slot of `piece` ≥ `len` bytes
            // each, in pinned allocations this register holds, distinct (a
            // receive slot is never a send slot); the GPUs are idle and no
            // other thread writes this receive slot.
            unsafe { std::ptr::copy_nonoverlapping(from as *const u8, to as *mut u8, len) }
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::piece_bounds;

    #[test]
    fn pieces_cover_the_message_once_and_take_the_slots_in_turn() {
        for (len, piece, slots) in [(64u64 << 20, 64u64 << 20, 4usize), (100, 16, 4), (1 << 30, 3 << 20, 4), (5, 8, 1)]
        {
            let pieces: Vec<_> = (0..len.div_ceil(piece)).map(|k| piece_bounds(k, len, piece, slots)).collect();
            let mut at = 0;
            for (k, &(slot, off, n)) in pieces.iter().enumerate() {
                assert_eq!((slot, off), (k % slots, at), "{len} in {piece}: piece {k}");
                assert!(n > 0 && n <= piece, "{len} in {piece}: piece {k} of {n} bytes");
                at += n;
            }
            assert_eq!(at, len, "{len} in {piece}");
        }
        assert_eq!(piece_bounds(6, 100, 16, 4), (2, 96, 4));
    }
}
