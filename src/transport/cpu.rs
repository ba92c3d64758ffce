//! The cpu transport: ranks are threads of this process, buffers are host
//! memory, and every collective runs in two phases through shared memory
//! (each rank first writes its own staging buffer from the inputs, then its
//! output from the staging buffers), with a barrier after each phase. It is
//! the path CI runs end to end and a baseline for CPU-only nodes.

use super::{LibraryInfo, Op, RankInfo, Timing, Transport, short_hostname};
use crate::dtype::{Element, RedOp};
use crate::error::{Error, Result};
use crate::with_element;
use crate::workload::collective::{Kind, Source};
use std::sync::{Barrier, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Instant;

/// The byte every output element is set to before an operation, so that an
/// element the operation never writes is caught.
const POISON: u8 = 0xff;

#[derive(Default)]
struct RankBuffers {
    send: RwLock<Vec<u64>>,
    recv: RwLock<Vec<u64>>,
    stage: RwLock<Vec<u64>>,
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

pub(super) fn combine<T: Element>(acc: &mut [T], x: &[T], op: RedOp) {
    for (a, &b) in acc.iter_mut().zip(x) {
        *a = a.reduce(b, op);
    }
}

impl Cpu {
    pub fn new(nranks: usize) -> Result<Cpu> {
        let pid = std::process::id();
        let host = short_hostname();
        let name = cpu_model();
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

    /// Runs `f(rank)` on one thread per rank and collects the results.
    fn on_ranks<R: Send>(&self, f: impl Fn(usize) -> R + Sync) -> Vec<R> {
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..self.bufs.len())
                .map(|r| {
                    let f = &f;
                    s.spawn(move || f(r))
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e))).collect()
        })
    }

    /// Rank `s`'s input of `op`, under a read lock.
    fn input<T: Element, R>(&self, op: &Op, s: usize, f: impl FnOnce(&[T]) -> R) -> R {
        let b = &self.bufs[s];
        let guard = if op.in_place { read(&b.recv) } else { read(&b.send) };
        f(view::<T>(&guard, op.input_offset(s), op.counts.send))
    }

    /// One operation on rank `r`; every rank calls it together.
    fn step<T: Element>(&self, op: &Op, r: usize, barrier: &Barrier) {
        let n = self.bufs.len();
        let c = op.counts;
        let kind = op.kind();
        {
            let mut stage = write(&self.bufs[r].stage);
            match kind {
                Kind::AllReduce | Kind::Reduce | Kind::ReduceScatter => {
                    let (lo, hi) = if kind == Kind::ReduceScatter {
                        (r as u64 * c.recv, (r as u64 + 1) * c.recv)
                    } else {
                        share(c.param, n, r)
                    };
                    let (lo_u, hi_u) = (lo as usize, hi as usize);
                    let acc = view_mut::<T>(&mut stage, 0, hi - lo);
                    self.input::<T, _>(op, 0, |x| acc.copy_from_slice(&x[lo_u..hi_u]));
                    for s in 1..n {
                        self.input::<T, _>(op, s, |x| combine(acc, &x[lo_u..hi_u], op.redop));
                    }
                    if op.redop == RedOp::Avg {
                        acc.iter_mut().for_each(|v| *v = T::average(*v, n));
                    }
                }
                Kind::Broadcast if r != op.root => {}
                Kind::Broadcast | Kind::AllGather | Kind::AllToAll | Kind::SendRecv => {
                    let dst = view_mut::<T>(&mut stage, 0, c.send);
                    self.input::<T, _>(op, r, |x| dst.copy_from_slice(x));
                }
            }
        }
        barrier.wait();
        {
            let mut recv = write(&self.bufs[r].recv);
            let out = view_mut::<T>(&mut recv, op.output_offset(r), c.recv);
            let stage_of = |s: usize| read(&self.bufs[s].stage);
            match kind {
                Kind::AllReduce | Kind::Reduce => {
                    if kind == Kind::AllReduce || r == op.root {
                        for q in 0..n {
                            let (lo, hi) = share(c.param, n, q);
                            out[lo as usize..hi as usize].copy_from_slice(view::<T>(&stage_of(q), 0, hi - lo));
                        }
                    }
                }
                Kind::ReduceScatter => out.copy_from_slice(view::<T>(&stage_of(r), 0, c.recv)),
                Kind::Broadcast => out.copy_from_slice(view::<T>(&stage_of(op.root), 0, c.recv)),
                Kind::SendRecv => out.copy_from_slice(view::<T>(&stage_of((r + n - 1) % n), 0, c.recv)),
                Kind::AllGather => {
                    for (s, block) in out.chunks_exact_mut(c.param.max(1) as usize).enumerate() {
                        block.copy_from_slice(view::<T>(&stage_of(s), 0, c.param));
                    }
                }
                Kind::AllToAll => {
                    for (s, block) in out.chunks_exact_mut(c.param.max(1) as usize).enumerate() {
                        block.copy_from_slice(view::<T>(&stage_of(s), r as u64 * c.param, c.param));
                    }
                }
            }
        }
        barrier.wait();
    }

    fn timed<T: Element>(&self, op: &Op, warmup: u32, iters: u32) -> Vec<Vec<f64>> {
        let barrier = Barrier::new(self.bufs.len());
        self.on_ranks(|r| {
            for _ in 0..warmup * op.agg {
                self.step::<T>(op, r, &barrier);
            }
            barrier.wait();
            (0..iters)
                .map(|_| {
                    let t0 = Instant::now();
                    for _ in 0..op.agg {
                        self.step::<T>(op, r, &barrier);
                    }
                    t0.elapsed().as_secs_f64() / op.agg as f64
                })
                .collect()
        })
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
        // Send, receive and staging buffers for every rank, plus 1 GiB for the rest.
        let avail = mem_available().unwrap_or(u64::MAX / 2);
        avail.saturating_sub(1 << 30) / (3 * self.bufs.len() as u64)
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
        self.on_ranks(|r| {
            let b = &self.bufs[r];
            with_element!(op.dtype, T => fill_rank::<T>(op, r, &keys, &mut write(&b.send), &mut write(&b.recv)))
        });
        Ok(())
    }

    /// Host ranks have no CUDA graphs; the plan refuses -G for them.
    fn time(&mut self, op: &Op, warmup: u32, iters: u32, _graph: u32) -> Result<Timing> {
        let per_rank: Vec<Vec<f64>> = with_element!(op.dtype, T => self.timed::<T>(op, warmup, iters));
        Ok(Timing::from_threads(&per_rank))
    }

    fn run_once(&mut self, op: &Op) -> Result<()> {
        let barrier = Barrier::new(self.bufs.len());
        with_element!(op.dtype, T => self.on_ranks(|r| self.step::<T>(op, r, &barrier)));
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
        let wrong = self
            .on_ranks(|r| with_element!(op.dtype, T => wrong_on_rank::<T>(op, r, n, &keys, &read(&self.bufs[r].recv))));
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
    let p = &op.pattern;
    let mut wrong = 0;
    for (j, &actual) in out.iter().enumerate() {
        let expected: T = match op.spec.source(&op.counts, r, op.root, n, j as u64) {
            Source::Reduced { index } => p.reduced(keys, op.redop, index),
            Source::Copied { rank, index } => p.element(keys, rank, index),
            Source::Unchecked => continue,
        };
        if !p.matches(actual, expected) {
            wrong += 1;
        }
    }
    wrong
}

/// Flips every bit of output element `index` of rank `r` (the test hook).
pub(super) fn flip_element(op: &Op, r: usize, index: u64, recv: &mut [u64]) {
    if index < op.counts.recv {
        let size = op.dtype.size();
        let at = (op.output_offset(r) + index) as usize * size;
        bytemuck::cast_slice_mut::<u64, u8>(recv)[at..at + size].iter_mut().for_each(|x| *x = !*x);
    }
}

/// MemAvailable from /proc/meminfo, in bytes.
pub fn mem_available() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// The CPU model from /proc/cpuinfo, for the device column.
pub(super) fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|s| s.trim().to_string())
        })
        .unwrap_or_else(|| "host memory".into())
}
