//! The cpu transport across MPI processes: one rank per process, host
//! buffers, data moved by MPI collectives on bytes and reduced on the CPU
//! (reductions as an MPI all-to-all of slices, a local reduction, then an
//! all-gather), so that multi-node CPU clusters get the same table.

use super::cpu::{combine, cpu_model, fill_rank, flip_element, mem_available, share, view_mut, wrong_on_rank};
use super::{LibraryInfo, Op, RankInfo, Timing, Transport, short_hostname};
use crate::dtype::{Element, RedOp};
use crate::error::{Error, Result};
use crate::with_element;
use crate::workload::collective::Kind;
use crate::world::World;
use crate::world::mpi::{Mpi, partition};
use mpi::datatype::{Partition, PartitionMut};
use mpi::point_to_point::send_receive_into;
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

fn bytes(words: &[u64], elems: u64, size: usize) -> &[u8] {
    &bytemuck::cast_slice::<u64, u8>(words)[..elems as usize * size]
}

fn bytes_mut(words: &mut [u64], offset: u64, elems: u64, size: usize) -> &mut [u8] {
    &mut bytemuck::cast_slice_mut::<u64, u8>(words)[offset as usize * size..(offset + elems) as usize * size]
}

impl<'w> CpuMpi<'w> {
    pub fn new(mpi: &'w Mpi) -> CpuMpi<'w> {
        let info = vec![RankInfo {
            rank: mpi.rank(),
            group: 0,
            pid: std::process::id(),
            host: short_hostname(),
            device: mpi.local_rank(),
            bus_id: "host".into(),
            name: cpu_model(),
        }];
        CpuMpi { mpi, info, send: Vec::new(), recv: Vec::new(), stage: Vec::new(), scratch: Vec::new() }
    }

    /// One operation; every process calls it together.
    fn step<T: Element>(&mut self, op: &Op) {
        let comm = self.mpi.comm();
        let (r, n) = (self.mpi.rank(), self.mpi.size());
        let c = op.counts;
        let ws = T::TYPE.size();
        let input: &[u8] = if op.in_place {
            let off = op.input_offset(r) as usize * ws;
            let len = c.send as usize * ws;
            bytemuck::cast_slice_mut::<u64, u8>(&mut self.scratch)[..len]
                .copy_from_slice(&bytemuck::cast_slice::<u64, u8>(&self.recv)[off..off + len]);
            bytes(&self.scratch, c.send, ws)
        } else {
            bytes(&self.send, c.send, ws)
        };
        let out = bytes_mut(&mut self.recv, op.output_offset(r), c.recv, ws);
        match op.kind() {
            Kind::AllReduce | Kind::Reduce => {
                let shares: Vec<(u64, u64)> = (0..n).map(|q| share(c.param, n, q)).collect();
                let mine = (shares[r].1 - shares[r].0) as usize;
                let (counts, displs) =
                    partition(&shares.iter().map(|(lo, hi)| (hi - lo) as usize * ws).collect::<Vec<_>>());
                let (rcounts, rdispls) = partition(&vec![mine * ws; n]);
                let stage = bytes_mut(&mut self.stage, 0, (mine * n) as u64, ws);
                comm.all_to_all_varcount_into(
                    &Partition::new(input, &counts[..], &displs[..]),
                    &mut PartitionMut::new(stage, &rcounts[..], &rdispls[..]),
                );
                reduce_blocks::<T>(&mut self.stage, mine, n, op.redop);
                let acc = bytes(&self.stage, mine as u64, ws);
                if op.kind() == Kind::AllReduce {
                    comm.all_gather_varcount_into(acc, &mut PartitionMut::new(out, &counts[..], &displs[..]));
                } else if r == op.root {
                    comm.this_process()
                        .gather_varcount_into_root(acc, &mut PartitionMut::new(out, &counts[..], &displs[..]));
                } else {
                    comm.process_at_rank(op.root as i32).gather_varcount_into(acc);
                }
            }
            Kind::ReduceScatter => {
                let b = c.recv as usize;
                comm.all_to_all_into(input, bytes_mut(&mut self.stage, 0, c.send, ws));
                reduce_blocks::<T>(&mut self.stage, b, n, op.redop);
                out.copy_from_slice(bytes(&self.stage, b as u64, ws));
            }
            Kind::AllGather => comm.all_gather_into(input, out),
            Kind::AllToAll => comm.all_to_all_into(input, out),
            Kind::Broadcast => {
                if r == op.root {
                    out.copy_from_slice(input);
                }
                comm.process_at_rank(op.root as i32).broadcast_into(out);
            }
            Kind::SendRecv => {
                let (to, from) =
                    (comm.process_at_rank(((r + 1) % n) as i32), comm.process_at_rank(((r + n - 1) % n) as i32));
                send_receive_into(input, &to, out, &from);
            }
        }
    }

    fn timed<T: Element>(&mut self, op: &Op, warmup: u32, iters: u32) -> Vec<f64> {
        for _ in 0..warmup * op.agg {
            self.step::<T>(op);
        }
        self.mpi.barrier();
        (0..iters)
            .map(|_| {
                let t0 = Instant::now();
                for _ in 0..op.agg {
                    self.step::<T>(op);
                }
                t0.elapsed().as_secs_f64() / op.agg as f64
            })
            .collect()
    }
}

/// Reduces `n` consecutive blocks of `len` elements into the first one.
fn reduce_blocks<T: Element>(stage: &mut [u64], len: usize, n: usize, op: RedOp) {
    let all = view_mut::<T>(stage, 0, (len * n) as u64);
    let (acc, rest) = all.split_at_mut(len);
    for block in rest.chunks_exact(len.max(1)).take(n - 1) {
        combine(acc, block, op);
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
        let avail = mem_available().unwrap_or(u64::MAX / 2);
        (avail.saturating_sub(1 << 30) / (4 * self.mpi.local_size() as u64)).min(i32::MAX as u64)
    }

    fn allocate(&mut self, bytes: u64) -> Result<()> {
        let words = bytes.div_ceil(8) as usize;
        for v in [&mut self.send, &mut self.recv, &mut self.stage, &mut self.scratch] {
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
    fn time(&mut self, op: &Op, warmup: u32, iters: u32, _graph: u32) -> Result<Timing> {
        let times = with_element!(op.dtype, T => self.timed::<T>(op, warmup, iters));
        Ok(Timing::from_threads(&[times]))
    }

    fn run_once(&mut self, op: &Op) -> Result<()> {
        with_element!(op.dtype, T => self.step::<T>(&Op { agg: 1, ..*op }));
        Ok(())
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
