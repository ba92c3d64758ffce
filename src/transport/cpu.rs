//! The cpu transport: ranks are threads of this process, buffers are host
//! memory, and NCCL's primitives run in two phases through shared staging
//! buffers: each rank first stages what it contributes (its share of a
//! reduction, a block it sends), then, after a barrier, writes its output
//! from the stages of the ranks it reads. It is the path CI runs end to end
//! and a baseline for CPU-only nodes.

use super::{Buf, Loop, Op, Primitives, Region, Timing, Transport};
use crate::dtype::{Element, RedOp};
use crate::error::{Error, Result};
use crate::interrupt::Halt;
use crate::record::{LibraryInfo, RankInfo};
use crate::with_element;
use crate::world::World;
use std::sync::{Barrier, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Instant;

/// The byte every output element is set to before an operation, so that an
/// element the operation never writes is caught.
const POISON: u8 = 0xff;

/// How the cpu transports time a cell, for the records.
pub const TIMING: &str = "time: the mean over -n iterations of each rank's host clock around its part of -m operations; iterations: the same iterations";

/// Host ranks one process runs as threads, at most: beyond that the
/// threads, not the data, are what would be measured.
pub const MAX_RANKS: usize = 1024;

#[derive(Default)]
struct RankBuffers {
    send: RwLock<Vec<u64>>,
    recv: RwLock<Vec<u64>>,
    stage: RwLock<Vec<u64>>,
}

impl RankBuffers {
    fn get(&self, b: Buf) -> &RwLock<Vec<u64>> {
        match b {
            Buf::Send => &self.send,
            Buf::Recv => &self.recv,
        }
    }
}

pub struct Cpu {
    ranks: Vec<RankInfo>,
    bufs: Vec<RankBuffers>,
}

fn read(lock: &RwLock<Vec<u64>>) -> RwLockReadGuard<'_, Vec<u64>> {
    lock.read().unwrap_or_else(PoisonError::into_inner)
}

fn write(lock: &RwLock<Vec<u64>>) -> RwLockWriteGuard<'_, Vec<u64>> {
    lock.write().unwrap_or_else(PoisonError::into_inner)
}

/// `len` elements of type T starting at element `offset` of a word buffer.
pub(super) fn view<T: Element>(words: &[u64], offset: u64, len: u64) -> &[T] {
    &bytemuck::cast_slice::<u64, T>(words)[offset as usize..(offset + len) as usize]
}

pub(super) fn view_mut<T: Element>(words: &mut [u64], offset: u64, len: u64) -> &mut [T] {
    &mut bytemuck::cast_slice_mut::<u64, T>(words)[offset as usize..(offset + len) as usize]
}

/// The part of `len` elements rank `r` of `n` reduces for all_reduce/reduce.
pub(super) fn share(len: u64, n: usize, r: usize) -> (u64, u64) {
    let n = n as u64;
    let r = r as u64;
    (len * r / n, len * (r + 1) / n)
}

/// Reduces rank `rank`'s `x` into `acc` (mulsum premultiplying it).
pub(super) fn combine<T: Element>(acc: &mut [T], x: &[T], op: RedOp, rank: usize) {
    if op == RedOp::MulSum {
        acc.iter_mut().zip(x).for_each(|(a, &b)| *a = a.reduce(b.premul(rank), op));
    } else {
        acc.iter_mut().zip(x).for_each(|(a, &b)| *a = a.reduce(b, op));
    }
}

/// One primitive call as a rank issued it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Prim {
    AllReduce { input: Region, output: Region, count: u64 },
    AllGather { input: Region, output: Region, count: u64 },
    ReduceScatter { input: Region, output: Region, count: u64 },
    Broadcast { input: Region, output: Region, count: u64, root: usize },
    Reduce { input: Region, output: Region, count: u64, root: usize },
    Send { input: Region, count: u64, peer: usize },
    Recv { output: Region, count: u64, peer: usize },
}

/// The primitives of one rank's part of an operation, in issue order.
#[derive(Default)]
pub(super) struct Issued(pub(super) Vec<Prim>);

impl Primitives for Issued {
    fn all_reduce(&mut self, input: Region, output: Region, count: u64) -> Result<()> {
        self.0.push(Prim::AllReduce { input, output, count });
        Ok(())
    }
    fn all_gather(&mut self, input: Region, output: Region, count: u64) -> Result<()> {
        self.0.push(Prim::AllGather { input, output, count });
        Ok(())
    }
    fn reduce_scatter(&mut self, input: Region, output: Region, count: u64) -> Result<()> {
        self.0.push(Prim::ReduceScatter { input, output, count });
        Ok(())
    }
    fn broadcast(&mut self, input: Region, output: Region, count: u64, root: usize) -> Result<()> {
        self.0.push(Prim::Broadcast { input, output, count, root });
        Ok(())
    }
    fn reduce(&mut self, input: Region, output: Region, count: u64, root: usize) -> Result<()> {
        self.0.push(Prim::Reduce { input, output, count, root });
        Ok(())
    }
    fn send(&mut self, input: Region, count: u64, peer: usize) -> Result<()> {
        self.0.push(Prim::Send { input, count, peer });
        Ok(())
    }
    fn recv(&mut self, output: Region, count: u64, peer: usize) -> Result<()> {
        self.0.push(Prim::Recv { output, count, peer });
        Ok(())
    }
}

impl Issued {
    /// Rank `rank`'s primitives for step `step` of `op`.
    pub(super) fn of(op: &Op, rank: usize, nranks: usize, step: usize) -> Result<Issued> {
        let mut issued = Issued::default();
        op.collective.issue(&mut issued, &op.call(rank, nranks, step))?;
        Ok(issued)
    }
}

/// Every rank's primitives for one operation, each with the element offset
/// in the rank's staging buffer where it stages what it contributes.
struct Schedule {
    ranks: Vec<Vec<(Prim, u64)>>,
}

impl Schedule {
    /// The schedule of each step of `op`, in order.
    fn steps(op: &Op, n: usize) -> Result<Vec<Schedule>> {
        (0..op.collective.steps(n)).map(|step| Schedule::new(op, n, step)).collect()
    }

    fn new(op: &Op, n: usize, step: usize) -> Result<Schedule> {
        let mut ranks = Vec::with_capacity(n);
        for r in 0..n {
            let mut at = 0;
            let mut placed = Vec::new();
            for p in Issued::of(op, r, n, step)?.0 {
                placed.push((p, at));
                at += match p {
                    Prim::AllReduce { count, .. } | Prim::Reduce { count, .. } => {
                        let (lo, hi) = share(count, n, r);
                        hi - lo
                    }
                    Prim::Broadcast { count, root, .. } if root == r => count,
                    Prim::AllGather { count, .. } | Prim::ReduceScatter { count, .. } | Prim::Send { count, .. } => {
                        count
                    }
                    Prim::Broadcast { .. } | Prim::Recv { .. } => 0,
                };
            }
            ranks.push(placed);
        }
        Ok(Schedule { ranks })
    }

    /// The stage offset of the `k`-th send from `from` to `to`.
    fn send_stage(&self, from: usize, to: usize, k: usize) -> Option<u64> {
        self.ranks[from]
            .iter()
            .filter_map(|&(p, at)| matches!(p, Prim::Send { peer, .. } if peer == to).then_some(at))
            .nth(k)
    }
}

impl Cpu {
    pub fn new(nranks: usize) -> Result<Cpu> {
        if nranks > MAX_RANKS {
            return Err(Error::Usage(format!(
                "{nranks} host ranks in one process: the cpu transport runs a thread per rank, at most {MAX_RANKS} (lower -t × -g, or use more processes)"
            )));
        }
        let pid = std::process::id();
        let host = crate::host::short_hostname();
        let name = crate::host::cpu_model();
        let ranks = (0..nranks)
            .map(|r| RankInfo {
                rank: r,
                group: 0,
                pid,
                host: host.clone(),
                device: r,
                bus_id: "host".into(),
                name: name.clone(),
            })
            .collect();
        Ok(Cpu { ranks, bufs: (0..nranks).map(|_| RankBuffers::default()).collect() })
    }

    /// Reads `len` elements of rank `s`'s region `at` + `from`.
    fn with_input<T: Element, R>(&self, s: usize, at: Region, from: u64, len: u64, f: impl FnOnce(&[T]) -> R) -> R {
        let guard = read(self.bufs[s].get(at.buffer));
        f(view::<T>(&guard, at.offset + from, len))
    }

    /// Reduces elements [lo, hi) of every rank's `k`-th primitive's input into `acc`.
    fn reduce_into<T: Element>(&self, sched: &Schedule, k: usize, lo: u64, acc: &mut [T], op: RedOp) {
        let n = self.bufs.len();
        let input = |s: usize| match sched.ranks[s][k].0 {
            Prim::AllReduce { input, .. } | Prim::Reduce { input, .. } | Prim::ReduceScatter { input, .. } => input,
            _ => unreachable!("every rank issues the same primitive at the same place"),
        };
        let len = acc.len() as u64;
        self.with_input::<T, _>(0, input(0), lo, len, |x| acc.copy_from_slice(x));
        for s in 1..n {
            self.with_input::<T, _>(s, input(s), lo, len, |x| combine(acc, x, op, s));
        }
        if op == RedOp::Avg {
            acc.iter_mut().for_each(|v| *v = T::average(*v, n));
        }
    }

    /// One operation on rank `r`, its steps in order; every rank calls it together.
    fn operation<T: Element>(&self, op: &Op, steps: &[Schedule], r: usize, barrier: &Barrier) {
        for sched in steps {
            self.step::<T>(op, sched, r, barrier);
        }
    }

    /// One step of an operation on rank `r`; every rank calls it together.
    fn step<T: Element>(&self, op: &Op, sched: &Schedule, r: usize, barrier: &Barrier) {
        let n = self.bufs.len();
        {
            let mut stage = write(&self.bufs[r].stage);
            for (k, &(p, at)) in sched.ranks[r].iter().enumerate() {
                match p {
                    Prim::AllReduce { count, .. } | Prim::Reduce { count, .. } => {
                        let (lo, hi) = share(count, n, r);
                        self.reduce_into::<T>(sched, k, lo, view_mut(&mut stage, at, hi - lo), op.redop);
                    }
                    Prim::ReduceScatter { count, .. } => {
                        self.reduce_into::<T>(sched, k, r as u64 * count, view_mut(&mut stage, at, count), op.redop);
                    }
                    Prim::Broadcast { input, count, root, .. } if root == r => {
                        let dst = view_mut::<T>(&mut stage, at, count);
                        self.with_input::<T, _>(r, input, 0, count, |x| dst.copy_from_slice(x));
                    }
                    Prim::AllGather { input, count, .. } | Prim::Send { input, count, .. } => {
                        let dst = view_mut::<T>(&mut stage, at, count);
                        self.with_input::<T, _>(r, input, 0, count, |x| dst.copy_from_slice(x));
                    }
                    Prim::Broadcast { .. } | Prim::Recv { .. } => {}
                }
            }
        }
        barrier.wait();
        {
            let mut recv = write(&self.bufs[r].recv);
            let stage_of = |s: usize| read(&self.bufs[s].stage);
            let at_of = |s: usize, k: usize| sched.ranks[s][k].1;
            let mut received = vec![0usize; n];
            for (k, &(p, _)) in sched.ranks[r].iter().enumerate() {
                match p {
                    Prim::AllReduce { output, count, .. } => {
                        for q in 0..n {
                            let (lo, hi) = share(count, n, q);
                            let out = view_mut::<T>(&mut recv, output.offset + lo, hi - lo);
                            out.copy_from_slice(view::<T>(&stage_of(q), at_of(q, k), hi - lo));
                        }
                    }
                    Prim::Reduce { output, count, root, .. } if root == r => {
                        for q in 0..n {
                            let (lo, hi) = share(count, n, q);
                            let out = view_mut::<T>(&mut recv, output.offset + lo, hi - lo);
                            out.copy_from_slice(view::<T>(&stage_of(q), at_of(q, k), hi - lo));
                        }
                    }
                    Prim::ReduceScatter { output, count, .. } => view_mut::<T>(&mut recv, output.offset, count)
                        .copy_from_slice(view::<T>(&stage_of(r), at_of(r, k), count)),
                    Prim::Broadcast { output, count, root, .. } => view_mut::<T>(&mut recv, output.offset, count)
                        .copy_from_slice(view::<T>(&stage_of(root), at_of(root, k), count)),
                    Prim::AllGather { output, count, .. } => {
                        for s in 0..n {
                            view_mut::<T>(&mut recv, output.offset + s as u64 * count, count)
                                .copy_from_slice(view::<T>(&stage_of(s), at_of(s, k), count));
                        }
                    }
                    Prim::Recv { output, count, peer } => {
                        let nth = received[peer];
                        received[peer] += 1;
                        if let Some(at) = sched.send_stage(peer, r, nth) {
                            view_mut::<T>(&mut recv, output.offset, count).copy_from_slice(view::<T>(
                                &stage_of(peer),
                                at,
                                count,
                            ));
                        }
                    }
                    Prim::Reduce { .. } | Prim::Send { .. } => {}
                }
            }
        }
        barrier.wait();
    }

    /// The warm-up, then `iters` timed iterations of `op.agg` steps; each
    /// rank's times. A signal stops every rank after the same step.
    fn timed<T: Element>(&self, op: &Op, steps: &[Schedule], warmup: u32, iters: u32) -> Result<Vec<Vec<f64>>> {
        let barrier = Barrier::new(self.bufs.len());
        let halt = Halt::new(self.bufs.len());
        crate::threads::per_rank(self.bufs.len(), |r| {
            let mut k = 0u64;
            let mut step = || {
                halt.before(r, k)?;
                k += 1;
                self.operation::<T>(op, steps, r, &barrier);
                Ok(())
            };
            for _ in 0..warmup * op.agg {
                step()?;
            }
            barrier.wait();
            (0..iters)
                .map(|_| {
                    let t0 = Instant::now();
                    for _ in 0..op.agg {
                        step()?;
                    }
                    Ok(t0.elapsed().as_secs_f64() / op.agg as f64)
                })
                .collect()
        })
        .into_iter()
        .collect()
    }
}

impl Transport for Cpu {
    fn ranks(&self) -> &[RankInfo] {
        &self.ranks
    }

    fn nranks(&self) -> usize {
        self.bufs.len()
    }

    fn library(&self) -> Option<&LibraryInfo> {
        None
    }

    fn buffer_limit(&self) -> u64 {
        // Send, receive and staging buffers for every rank in half the
        // available memory: the rest stays for the system and the threads.
        let avail = crate::host::mem_available().unwrap_or(u64::MAX / 2);
        avail / 2 / (3 * self.bufs.len() as u64)
    }

    fn allocate(&mut self, bytes: u64) -> Result<()> {
        let words = bytes.div_ceil(8) as usize;
        for b in &self.bufs {
            for lock in [&b.send, &b.recv, &b.stage] {
                let mut v = write(lock);
                v.clear();
                v.try_reserve_exact(words).map_err(|e| {
                    Error::Runtime(format!("cannot allocate {bytes} bytes of host memory for a rank's buffer: {e}"))
                })?;
                v.resize(words, 0);
            }
        }
        Ok(())
    }

    fn fill(&mut self, op: &Op) -> Result<()> {
        let keys = op.pattern.keys();
        crate::threads::per_rank(self.bufs.len(), |r| {
            let b = &self.bufs[r];
            with_element!(op.dtype, T => fill_rank::<T>(op, r, &keys, &mut write(&b.send), &mut write(&b.recv)))
        });
        Ok(())
    }

    /// Host ranks have no CUDA graphs; the plan refuses -G for them.
    /// Every step ends at a barrier of the ranks, so -z changes nothing here.
    fn time(&mut self, op: &Op, l: &Loop, _world: &dyn World) -> Result<Timing> {
        let steps = Schedule::steps(op, self.bufs.len())?;
        let per_rank: Vec<Vec<f64>> = with_element!(op.dtype, T => self.timed::<T>(op, &steps, l.warmup, l.iters))?;
        Ok(Timing::from_threads(&per_rank))
    }

    fn timing(&self) -> &'static str {
        super::cpu::TIMING
    }

    fn run_once(&mut self, op: &Op) -> Result<()> {
        let steps = Schedule::steps(op, self.bufs.len())?;
        let barrier = Barrier::new(self.bufs.len());
        with_element!(op.dtype, T => crate::threads::per_rank(self.bufs.len(), |r| self.operation::<T>(op, &steps, r, &barrier)));
        Ok(())
    }

    fn corrupt(&mut self, op: &Op, rank: usize, index: u64) -> Result<()> {
        if let Some(b) = self.bufs.get(rank) {
            flip_element(op, rank, index, &mut write(&b.recv));
        }
        Ok(())
    }

    fn count_wrong(&mut self, op: &Op) -> Result<u64> {
        let keys = op.pattern.keys();
        let n = self.bufs.len();
        let wrong = crate::threads::per_rank(
            n,
            |r| with_element!(op.dtype, T => wrong_on_rank::<T>(op, r, n, &keys, &read(&self.bufs[r].recv))),
        );
        Ok(wrong.iter().sum())
    }
}

/// Writes `rank`'s input (in `send`, or in `recv` when in place) and
/// poisons the rest of its output region.
pub(super) fn fill_rank<T: Element>(op: &Op, r: usize, keys: &[u64], send: &mut [u64], recv: &mut [u64]) {
    let c = op.counts;
    let poison_len = if op.in_place { (op.input_offset(r) + c.send).max(op.output_offset(r) + c.recv) } else { c.recv }
        as usize
        * T::TYPE.size();
    bytemuck::cast_slice_mut::<u64, u8>(recv)[..poison_len].fill(POISON);
    let (words, offset) = if op.in_place { (recv, op.input_offset(r)) } else { (send, 0) };
    for (i, v) in view_mut::<T>(words, offset, c.send).iter_mut().enumerate() {
        *v = op.pattern.element(keys, r, i as u64);
    }
}

/// Output elements of rank `r` (in `recv`) that differ from their expected values.
pub(super) fn wrong_on_rank<T: Element>(op: &Op, r: usize, n: usize, keys: &[u64], recv: &[u64]) -> u64 {
    if !op.checks_rank(r, n) {
        return 0;
    }
    let out = view::<T>(recv, op.output_offset(r), op.counts.recv);
    let mut wrong = 0;
    for (j, &actual) in out.iter().enumerate() {
        if let Some(expected) = op.expected::<T>(keys, r, n, j as u64)
            && !op.pattern.matches(actual, expected)
        {
            wrong += 1;
        }
    }
    wrong
}

/// Flips every bit of output element `index` of rank `r` (the fault hook).
pub(super) fn flip_element(op: &Op, r: usize, index: u64, recv: &mut [u64]) {
    if index < op.counts.recv {
        let size = op.dtype.size();
        let at = (op.output_offset(r) + index) as usize * size;
        bytemuck::cast_slice_mut::<u64, u8>(recv)[at..at + size].iter_mut().for_each(|x| *x = !*x);
    }
}
