//! The cpu transport across MPI processes: one rank per process, host
//! buffers, NCCL's primitives done by MPI on bytes: reductions as an MPI
//! all-to-all of slices, a local reduction, then an all-gather (or gather);
//! a group of sends and receives as immediate MPI operations completed
//! together. Multi-node CPU clusters get the same table.

use super::cpu::{Issued, Prim, combine, fill_rank, flip_element, share, view_mut, wrong_on_rank};
use super::{Buf, Loop, Op, Region, Timing, Transport};
use crate::dtype::{Element, RedOp};
use crate::error::{Error, Result};
use crate::record::{LibraryInfo, RankInfo};
use crate::with_element;
use crate::world::World;
use crate::world::mpi::{Mpi, partition};
use mpi::datatype::{Partition, PartitionMut};
use mpi::request::{Request, scope};
use mpi::topology::Communicator;
use mpi::traits::*;
use std::time::Instant;

pub struct CpuMpi<'w> {
    mpi: &'w Mpi,
    info: Vec<RankInfo>,
    send: Vec<u64>,
    recv: Vec<u64>,
    stage: Vec<u64>,
    /// A copy of the input when in place (MPI buffers must not overlap).
    scratch: Vec<u64>,
}

fn bytes(words: &[u64], offset: u64, elems: u64, size: usize) -> &[u8] {
    &bytemuck::cast_slice::<u64, u8>(words)[offset as usize * size..(offset + elems) as usize * size]
}

fn bytes_mut(words: &mut [u64], offset: u64, elems: u64, size: usize) -> &mut [u8] {
    &mut bytemuck::cast_slice_mut::<u64, u8>(words)[offset as usize * size..(offset + elems) as usize * size]
}

/// The bytes of `count` elements of an input region: the send buffer, or
/// the copy of the in-place input (which started at element `base` of the
/// receive buffer) taken at the operation's start.
fn input<'b>(send: &'b [u64], scratch: &'b [u64], base: u64, at: Region, count: u64, ws: usize) -> &'b [u8] {
    match at.buffer {
        Buf::Send => bytes(send, at.offset, count, ws),
        Buf::Recv => bytes(scratch, at.offset - base, count, ws),
    }
}

/// Disjoint byte ranges (start, len) of `buf` as slices, in the given order.
fn disjoint_mut<'b>(buf: &'b mut [u8], ranges: &[(usize, usize)]) -> Result<Vec<&'b mut [u8]>> {
    let mut order: Vec<usize> = (0..ranges.len()).collect();
    order.sort_by_key(|&i| ranges[i].0);
    let mut slots: Vec<Option<&'b mut [u8]>> = (0..ranges.len()).map(|_| None).collect();
    let (mut rest, mut at) = (buf, 0usize);
    for i in order {
        let (start, len) = ranges[i];
        if start < at {
            return Err(Error::Runtime("internal: overlapping receive regions in one group".into()));
        }
        let (_, tail) = std::mem::take(&mut rest).split_at_mut(start - at);
        let (piece, tail) = tail.split_at_mut(len);
        slots[i] = Some(piece);
        rest = tail;
        at = start + len;
    }
    Ok(slots.into_iter().flatten().collect())
}

impl<'w> CpuMpi<'w> {
    pub fn new(mpi: &'w Mpi) -> CpuMpi<'w> {
        let info = vec![RankInfo {
            rank: mpi.rank(),
            group: 0,
            pid: std::process::id(),
            host: crate::host::short_hostname(),
            device: mpi.local_rank(),
            bus_id: "host".into(),
            name: crate::host::cpu_model(),
        }];
        CpuMpi { mpi, info, send: Vec::new(), recv: Vec::new(), stage: Vec::new(), scratch: Vec::new() }
    }

    /// One operation, its steps in order; every process calls it together.
    fn operation<T: Element>(&mut self, op: &Op, steps: &[Vec<Prim>]) -> Result<()> {
        steps.iter().try_for_each(|prims| self.step::<T>(op, prims))
    }

    /// One step of an operation; every process calls it together.
    fn step<T: Element>(&mut self, op: &Op, prims: &[Prim]) -> Result<()> {
        let ws = T::TYPE.size();
        let r = self.mpi.rank();
        if op.in_place {
            let (off, len) = (op.input_offset(r), op.counts.send);
            let src = bytes(&self.recv, off, len, ws).to_vec();
            bytes_mut(&mut self.scratch, 0, len, ws).copy_from_slice(&src);
        }
        let mut k = 0;
        while k < prims.len() {
            if matches!(prims[k], Prim::Send { .. } | Prim::Recv { .. }) {
                let end = prims[k..].iter().position(|p| !matches!(p, Prim::Send { .. } | Prim::Recv { .. }));
                let end = end.map_or(prims.len(), |e| k + e);
                self.point_to_point(&prims[k..end], ws)?;
                k = end;
            } else {
                self.collective::<T>(op, prims[k], ws);
                k += 1;
            }
        }
        Ok(())
    }

    /// A group of sends and receives, started together and waited for.
    fn point_to_point(&mut self, group: &[Prim], ws: usize) -> Result<()> {
        let comm = self.mpi.comm();
        let targets: Vec<(usize, usize, usize)> = group
            .iter()
            .filter_map(|p| match *p {
                Prim::Recv { output, count, peer } => Some((output.offset as usize * ws, count as usize * ws, peer)),
                _ => None,
            })
            .collect();
        let ranges: Vec<(usize, usize)> = targets.iter().map(|&(s, l, _)| (s, l)).collect();
        // Sends from the receive buffer read it as the step starts (a step
        // may send what the one before received, and MPI's buffers of one
        // group must not overlap).
        let sends: Vec<(std::borrow::Cow<'_, [u8]>, usize)> = group
            .iter()
            .filter_map(|p| match *p {
                Prim::Send { input: at, count, peer } => Some((
                    match at.buffer {
                        Buf::Send => bytes(&self.send, at.offset, count, ws).into(),
                        Buf::Recv => bytes(&self.recv, at.offset, count, ws).to_vec().into(),
                    },
                    peer,
                )),
                _ => None,
            })
            .collect();
        let recv = bytemuck::cast_slice_mut::<u64, u8>(&mut self.recv);
        let outs = disjoint_mut(recv, &ranges)?;
        scope(|s| {
            let mut reqs: Vec<Request<'_, [u8], _>> = Vec::with_capacity(sends.len() + outs.len());
            for (buf, (_, _, peer)) in outs.into_iter().zip(&targets) {
                reqs.push(comm.process_at_rank(*peer as i32).immediate_receive_into(s, buf));
            }
            for (buf, peer) in &sends {
                reqs.push(comm.process_at_rank(*peer as i32).immediate_send(s, &buf[..]));
            }
            for req in reqs {
                req.wait();
            }
        });
        Ok(())
    }

    /// One collective primitive, by MPI collectives on bytes.
    fn collective<T: Element>(&mut self, op: &Op, p: Prim, ws: usize) {
        let comm = self.mpi.comm();
        let (r, n) = (self.mpi.rank(), self.mpi.size());
        let base = op.input_offset(r);
        let (send, scratch) = (&self.send, &self.scratch);
        let inp = |at: Region, count: u64| input(send, scratch, base, at, count, ws);
        match p {
            Prim::AllReduce { input: at, output, count } | Prim::Reduce { input: at, output, count, .. } => {
                let shares: Vec<(u64, u64)> = (0..n).map(|q| share(count, n, q)).collect();
                let mine = (shares[r].1 - shares[r].0) as usize;
                let (counts, displs) =
                    partition(&shares.iter().map(|(lo, hi)| (hi - lo) as usize * ws).collect::<Vec<_>>());
                let (rcounts, rdispls) = partition(&vec![mine * ws; n]);
                let stage = bytes_mut(&mut self.stage, 0, (mine * n) as u64, ws);
                comm.all_to_all_varcount_into(
                    &Partition::new(inp(at, count), &counts[..], &displs[..]),
                    &mut PartitionMut::new(stage, &rcounts[..], &rdispls[..]),
                );
                reduce_blocks::<T>(&mut self.stage, mine, n, op.redop);
                let acc = bytes(&self.stage, 0, mine as u64, ws);
                let out = bytes_mut(&mut self.recv, output.offset, count, ws);
                match p {
                    Prim::AllReduce { .. } => {
                        comm.all_gather_varcount_into(acc, &mut PartitionMut::new(out, &counts[..], &displs[..]))
                    }
                    Prim::Reduce { root, .. } if root == r => comm
                        .this_process()
                        .gather_varcount_into_root(acc, &mut PartitionMut::new(out, &counts[..], &displs[..])),
                    Prim::Reduce { root, .. } => comm.process_at_rank(root as i32).gather_varcount_into(acc),
                    _ => {}
                }
            }
            Prim::ReduceScatter { input: at, output, count } => {
                comm.all_to_all_into(inp(at, count * n as u64), bytes_mut(&mut self.stage, 0, count * n as u64, ws));
                reduce_blocks::<T>(&mut self.stage, count as usize, n, op.redop);
                let acc = bytes(&self.stage, 0, count, ws).to_vec();
                bytes_mut(&mut self.recv, output.offset, count, ws).copy_from_slice(&acc);
            }
            Prim::AllGather { input: at, output, count } => {
                let mine = inp(at, count).to_vec();
                comm.all_gather_into(&mine[..], bytes_mut(&mut self.recv, output.offset, count * n as u64, ws));
            }
            Prim::Broadcast { input: at, output, count, root } => {
                if r == root {
                    let mine = inp(at, count).to_vec();
                    bytes_mut(&mut self.recv, output.offset, count, ws).copy_from_slice(&mine);
                }
                comm.process_at_rank(root as i32).broadcast_into(bytes_mut(&mut self.recv, output.offset, count, ws));
            }
            Prim::Send { .. } | Prim::Recv { .. } => {}
        }
    }

    /// The warm-up, then `l.iters` timed iterations of `op.agg` operations.
    /// Every few iterations (outside the timed window) the processes agree
    /// on whether one was signalled, so that all stop at the same one. Each
    /// operation completes before the next; -z 1 adds a barrier after each
    /// (timed), -z 3 one after each iteration (untimed).
    fn timed<T: Element>(&mut self, op: &Op, steps: &[Vec<Prim>], l: &Loop) -> Result<Vec<f64>> {
        let every = agree_every(op.counts.bytes(op.dtype));
        for k in 0..(l.warmup * op.agg) as u64 {
            if k % every == 0 {
                crate::world::check_interrupt(self.mpi)?;
            }
            self.operation::<T>(op, steps)?;
        }
        self.mpi.barrier();
        let mut times = Vec::with_capacity(l.iters as usize);
        for i in 0..l.iters as u64 {
            if i % every == 0 {
                crate::world::check_interrupt(self.mpi)?;
            }
            let t0 = Instant::now();
            for _ in 0..op.agg {
                self.operation::<T>(op, steps)?;
                if l.blocking == 1 {
                    self.mpi.barrier();
                }
            }
            times.push(t0.elapsed().as_secs_f64() / op.agg as f64);
            if l.blocking == 3 {
                self.mpi.barrier();
            }
        }
        Ok(times)
    }

    /// This process's primitives of each step of `op`.
    fn steps(&self, op: &Op) -> Result<Vec<Vec<Prim>>> {
        let (r, n) = (self.mpi.rank(), self.mpi.size());
        (0..op.collective.steps(n)).map(|step| Ok(Issued::of(op, r, n, step)?.0)).collect()
    }
}

/// Operations between two agreements on an interrupt: about 64 MiB moved
/// per rank (tens of milliseconds on any host), at most 1024 operations.
fn agree_every(bytes: u64) -> u64 {
    ((64 << 20) / bytes.max(1)).clamp(1, 1024)
}

/// Reduces `n` consecutive blocks of `len` elements into the first one.
fn reduce_blocks<T: Element>(stage: &mut [u64], len: usize, n: usize, op: RedOp) {
    let all = view_mut::<T>(stage, 0, (len * n) as u64);
    let (acc, rest) = all.split_at_mut(len);
    for (q, block) in rest.chunks_exact(len.max(1)).take(n - 1).enumerate() {
        combine(acc, block, op, q + 1);
    }
    if op == RedOp::Avg {
        acc.iter_mut().for_each(|v| *v = T::average(*v, n));
    }
}

impl Transport for CpuMpi<'_> {
    fn ranks(&self) -> &[RankInfo] {
        &self.info
    }

    fn nranks(&self) -> usize {
        self.mpi.size()
    }

    fn library(&self) -> Option<&LibraryInfo> {
        None
    }

    fn buffer_limit(&self) -> u64 {
        // Four buffers per process, every process of this node, 1 GiB spare;
        // MPI counts are 32-bit.
        let avail = crate::host::mem_available().unwrap_or(u64::MAX / 2);
        (avail.saturating_sub(1 << 30) / (4 * self.mpi.local_size() as u64)).min(i32::MAX as u64)
    }

    fn allocate(&mut self, bytes: u64) -> Result<()> {
        let words = bytes.div_ceil(8) as usize;
        // A reduction stages one block of this rank's share from every
        // rank; shares of a count the ranks do not divide differ by one
        // element, so the blocks take up to n − 1 elements (of at most a
        // word each) beyond the count.
        let staged = words + self.mpi.size() - 1;
        for (v, words) in
            [(&mut self.send, words), (&mut self.recv, words), (&mut self.stage, staged), (&mut self.scratch, words)]
        {
            v.clear();
            v.try_reserve_exact(words).map_err(|e| {
                Error::Runtime(format!("cannot allocate {bytes} bytes of host memory for a buffer: {e}"))
            })?;
            v.resize(words, 0);
        }
        Ok(())
    }

    fn fill(&mut self, op: &Op) -> Result<()> {
        let keys = op.pattern.keys();
        let r = self.mpi.rank();
        with_element!(op.dtype, T => fill_rank::<T>(op, r, &keys, &mut self.send, &mut self.recv));
        Ok(())
    }

    /// Host ranks have no CUDA graphs; the plan refuses -G for them.
    fn time(&mut self, op: &Op, l: &Loop, _world: &dyn World) -> Result<Timing> {
        let steps = self.steps(op)?;
        let times = with_element!(op.dtype, T => self.timed::<T>(op, &steps, l))?;
        Ok(Timing::from_threads(&[times]))
    }

    fn timing(&self) -> &'static str {
        super::cpu::TIMING
    }

    fn run_once(&mut self, op: &Op) -> Result<()> {
        let steps = self.steps(op)?;
        with_element!(op.dtype, T => self.operation::<T>(op, &steps))
    }

    fn corrupt(&mut self, op: &Op, rank: usize, index: u64) -> Result<()> {
        if rank == self.mpi.rank() {
            flip_element(op, rank, index, &mut self.recv);
        }
        Ok(())
    }

    fn count_wrong(&mut self, op: &Op) -> Result<u64> {
        let keys = op.pattern.keys();
        let (r, n) = (self.mpi.rank(), self.mpi.size());
        Ok(with_element!(op.dtype, T => wrong_on_rank::<T>(op, r, n, &keys, &self.recv)))
    }
}

#[cfg(test)]
mod tests {
    use super::disjoint_mut;

    #[test]
    fn disjoint_ranges_come_back_in_order() {
        let mut buf: Vec<u8> = (0..10).collect();
        let parts = disjoint_mut(&mut buf, &[(6, 2), (0, 3), (3, 1)]).unwrap();
        assert_eq!(parts.iter().map(|p| p.to_vec()).collect::<Vec<_>>(), vec![vec![6, 7], vec![0, 1, 2], vec![3]]);
        assert!(disjoint_mut(&mut buf, &[(0, 4), (3, 2)]).is_err());
    }
}
