//! The register in host memory: each rank holds its chunk and exchange
//! buffer in host memory, gates run on a thread per rank, and the wires
//! that serve host memory (cpu, rdma) move amplitudes between partners
//! through [`HostWire`]. It is what CI checks the exchange pattern with,
//! and the baseline of a CPU-only node.

use super::{Kept, Local, Part, Register, Seconds, Wire};
use crate::error::{Error, Result};
use crate::record::RankInfo;
use crate::statevec::layout::Layout;
use crate::statevec::state::{ProductState, tolerance};
use crate::world::World;
use num_complex::{Complex, Complex64};
use num_traits::Float;
use std::f64::consts::FRAC_1_SQRT_2;
use std::sync::{PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Instant;

/// An amplitude's real type: f32 (single) or f64 (double).
pub trait Real: Float + bytemuck::Pod + Send + Sync + 'static {
    fn of(x: f64) -> Self;
    fn f64(self) -> f64;
}

impl Real for f32 {
    fn of(x: f64) -> Self {
        x as f32
    }
    fn f64(self) -> f64 {
        self as f64
    }
}

impl Real for f64 {
    fn of(x: f64) -> Self {
        x
    }
    fn f64(self) -> f64 {
        self
    }
}

/// A rank's memory as 8-byte words: its chunk, then its exchange buffer
/// (one allocation, so that an RDMA adapter can register both at once).
pub(super) type Words = RwLock<Vec<u64>>;

fn read(l: &Words) -> RwLockReadGuard<'_, Vec<u64>> {
    l.read().unwrap_or_else(PoisonError::into_inner)
}

pub(super) fn write(l: &Words) -> RwLockWriteGuard<'_, Vec<u64>> {
    l.write().unwrap_or_else(PoisonError::into_inner)
}

fn amps<T: Real>(w: &[u64]) -> &[Complex<T>] {
    bytemuck::cast_slice(w)
}

fn amps_mut<T: Real>(w: &mut [u64]) -> &mut [Complex<T>] {
    bytemuck::cast_slice_mut(w)
}

/// One rank's part of an exchange in host memory: `len` bytes from byte
/// `from` of rank `rank`'s memory (its chunk, then its exchange buffer)
/// to byte `to` of rank `peer`'s (ranks of the job); the peer's part comes
/// back to `to` of this rank's the same way.
#[derive(Debug, Clone, Copy)]
pub struct HostMove {
    pub rank: usize,
    pub peer: usize,
    pub from: usize,
    pub to: usize,
    pub len: usize,
}

/// A rank's memory cut around the region an exchange writes into it: what
/// lies before and after the region (what it sends from), and the region.
pub struct Cut<'a> {
    before: &'a [u8],
    after: &'a [u8],
    /// Where `after` starts.
    end: usize,
}

impl<'a> Cut<'a> {
    /// Cuts `mem` around `len` bytes at `to`: the region, and the rest.
    pub fn new(mem: &'a mut [u8], to: usize, len: usize) -> Result<(Cut<'a>, &'a mut [u8])> {
        if to + len > mem.len() {
            return Err(Error::Runtime(format!("internal: {len} bytes at {to} overrun a rank's memory")));
        }
        let (before, rest) = mem.split_at_mut(to);
        let (region, after) = rest.split_at_mut(len);
        Ok((Cut { before, after, end: to + len }, region))
    }

    /// The `len` bytes at `from`, which must lie before or after the region.
    pub fn sent(&self, from: usize, len: usize) -> Result<&'a [u8]> {
        if from + len <= self.before.len() {
            Ok(&self.before[from..from + len])
        } else if from >= self.end && from + len - self.end <= self.after.len() {
            Ok(&self.after[from - self.end..from - self.end + len])
        } else {
            Err(Error::Runtime(format!("internal: the {len} bytes sent from {from} overlap those received")))
        }
    }
}

/// The memory of a host register's ranks in this process, and what wires
/// keep between exchanges.
pub struct HostBuffers<'a> {
    /// The job's rank of the first local rank.
    pub first_rank: usize,
    /// Each local rank's chunk and exchange buffer.
    pub mem: &'a [Words],
    /// Bytes of a chunk: the exchange buffer starts there.
    pub chunk: usize,
    pub world: &'a dyn World,
    /// What the wires keep between exchanges.
    pub kept: &'a mut Kept,
}

/// A wire's way of moving host registers' amplitudes.
pub trait HostWire: Sync {
    /// Why it cannot run for this register, if it cannot.
    fn unavailable(&self, layout: &Layout, world: &dyn World, local: usize) -> Option<String>;
    /// Every local rank's move at once; the slowest local rank's seconds.
    fn exchange(&self, bufs: &mut HostBuffers, moves: &[HostMove]) -> Result<Seconds>;
}

pub struct HostRegister<'w, T: Real> {
    // Dropped first: what wires keep covers `mem`.
    kept: Kept,
    layout: Layout,
    world: &'w dyn World,
    first_rank: usize,
    info: Vec<RankInfo>,
    mem: Vec<Words>,
    _real: std::marker::PhantomData<T>,
}

/// Why `local` ranks of this layout cannot be held in this host's memory, if so.
pub fn does_not_fit(layout: &Layout, local: usize) -> Option<String> {
    let (chunk, buffers) = (layout.chunk_bytes(), 2 * local as u64);
    let avail = crate::host::mem_available()?;
    // Checked: at 59 qubits a chunk is 2^63 bytes, and two pass u64.
    let need = chunk.checked_mul(buffers);
    need.is_none_or(|n| n.saturating_add(1 << 30) > avail).then(|| {
        format!(
            "needs {} of host memory (chunk and exchange buffer per rank), {} is available",
            need.map_or_else(|| format!("{buffers} × {}", crate::units::format_size(chunk)), crate::units::format_size),
            crate::units::format_size(avail)
        )
    })
}

impl<'w, T: Real> HostRegister<'w, T> {
    /// `local` host ranks in this process, as ranks of `layout`'s register
    /// over every process of `world`.
    pub fn new(layout: Layout, local: usize, world: &'w dyn World) -> Result<Self> {
        if local * world.size() != layout.ranks() {
            return Err(Error::Usage(format!(
                "{} ranks ({} processes × {local}) do not match the layout's {}",
                local * world.size(),
                world.size(),
                layout.ranks()
            )));
        }
        if world.size() > 1 && local > 1 {
            return Err(Error::Usage(
                "with host-memory ranks under MPI each process is one rank: use -g 1 and more processes".into(),
            ));
        }
        if let Some(why) = does_not_fit(&layout, local) {
            return Err(Error::Usage(format!("the cpu transport {why}")));
        }
        let words = 2 * (layout.chunk_bytes() / 8) as usize;
        let alloc = || -> Result<Words> {
            let mut v = Vec::new();
            v.try_reserve_exact(words)
                .map_err(|e| Error::Runtime(format!("cannot allocate a chunk and its exchange buffer: {e}")))?;
            v.resize(words, 0);
            Ok(RwLock::new(v))
        };
        let first_rank = world.rank() * local;
        let (host, name) = (crate::host::short_hostname(), crate::host::cpu_model());
        let info = (0..local)
            .map(|i| RankInfo {
                rank: first_rank + i,
                group: 0,
                pid: std::process::id(),
                host: host.clone(),
                device: i,
                bus_id: "host".into(),
                name: name.clone(),
            })
            .collect();
        Ok(HostRegister {
            kept: Kept::default(),
            layout,
            world,
            first_rank,
            info,
            mem: (0..local).map(|_| alloc()).collect::<Result<_>>()?,
            _real: std::marker::PhantomData,
        })
    }

    /// Words of a chunk.
    fn words(&self) -> usize {
        (self.layout.chunk_bytes() / 8) as usize
    }

    /// Runs `f(local index)` on one thread per local rank; the seconds
    /// until the last is done (the threads' start included: a circuit pays
    /// it at every step), the slowest process's.
    fn on_ranks(&self, f: impl Fn(usize) + Sync) -> Seconds {
        let t0 = Instant::now();
        crate::threads::per_rank(self.mem.len(), f);
        t0.elapsed().as_secs_f64()
    }

    /// The amplitudes of local rank `i`'s chunk (a copy), which
    /// tests/exchange_cpu.rs holds against a full state vector.
    #[cfg_attr(qbench_private, allow(dead_code))]
    pub fn chunk(&self, i: usize) -> Vec<Complex<T>> {
        amps::<T>(&read(&self.mem[i])[..self.words()]).to_vec()
    }
}

/// `k` with a 0 inserted at every set bit of `fixed`, lowest first: the
/// k-th index whose bits there are 0 (kernels/statevec.cu, spread).
fn spread(mut k: u64, fixed: u64) -> u64 {
    let mut m = fixed;
    while m != 0 {
        let b = m & m.wrapping_neg();
        k = ((k & !(b - 1)) << 1) | (k & (b - 1));
        m &= m - 1;
    }
    k
}

fn cx<T: Real>(z: Complex64) -> Complex<T> {
    Complex::new(T::of(z.re), T::of(z.im))
}

/// One rank's operation on its chunk `c` and exchange buffer `x`, as the
/// GPU register's kernels do it.
fn local<T: Real>(c: &mut [Complex<T>], x: &mut [Complex<T>], op: Local) {
    let n = c.len() as u64;
    let half = c.len() / 2;
    match op {
        Local::Idle => {}
        Local::H(q) => {
            let s = T::of(FRAC_1_SQRT_2);
            let bit = 1usize << q;
            for block in c.chunks_exact_mut(2 * bit) {
                let (lo, hi) = block.split_at_mut(bit);
                for (a, b) in lo.iter_mut().zip(hi) {
                    let (p, q) = (*a, *b);
                    *a = (p + q) * s;
                    *b = (p - q) * s;
                }
            }
        }
        Local::U { q, m } => {
            let m: Vec<Complex<T>> = m.iter().map(|&z| cx(z)).collect();
            let bit = 1u64 << q;
            for k in 0..n / 2 {
                let i = spread(k, bit) as usize;
                let j = i | bit as usize;
                let (a, b) = (c[i], c[j]);
                c[i] = m[0] * a + m[1] * b;
                c[j] = m[2] * a + m[3] * b;
            }
        }
        Local::Phase { ones, phase } => {
            let p = cx::<T>(phase);
            for k in 0..n >> ones.count_ones() {
                let i = (spread(k, ones) | ones) as usize;
                c[i] = c[i] * p;
            }
        }
        Local::Pairs { ones, zeros, flip } => {
            for k in 0..n >> (ones | zeros).count_ones() {
                let i = spread(k, ones | zeros) | ones;
                c.swap(i as usize, (i ^ flip) as usize);
            }
        }
        Local::Pack { bit, value } => {
            for k in 0..half as u64 {
                x[half + k as usize] = c[(spread(k, 1 << bit) | (value as u64) << bit) as usize];
            }
        }
        Local::Unpack { bit, value } => {
            for k in 0..half as u64 {
                c[(spread(k, 1 << bit) | (value as u64) << bit) as usize] = x[k as usize];
            }
        }
        Local::CombineH { one } => {
            let s = T::of(FRAC_1_SQRT_2);
            for (a, &p) in c.iter_mut().zip(x.iter()) {
                *a = if one { (p - *a) * s } else { (*a + p) * s };
            }
        }
        Local::Mix { own, received } => {
            let (o, r) = (cx::<T>(own), cx::<T>(received));
            for (a, &p) in c.iter_mut().zip(x.iter()) {
                *a = *a * o + p * r;
            }
        }
        Local::Take => c.copy_from_slice(&x[..c.len()]),
    }
}

fn expected(lo: &[Complex64], hi: &[Complex64], split: u32, g: u64) -> Complex64 {
    lo[(g & ((1 << split) - 1)) as usize] * hi[(g >> split) as usize]
}

impl<T: Real> Register for HostRegister<'_, T> {
    fn layout(&self) -> &Layout {
        &self.layout
    }

    fn ranks(&self) -> &[RankInfo] {
        &self.info
    }

    fn world(&self) -> &dyn World {
        self.world
    }

    fn device_memory(&self) -> u64 {
        crate::host::mem_available().unwrap_or(0)
    }

    fn init(&mut self, state: &ProductState) -> Result<()> {
        let (split, lo, hi) = state.tables();
        let n = self.layout.local_amps();
        let (mem, first, w) = (&self.mem, self.first_rank, self.words());
        self.on_ranks(|i| {
            for (k, a) in amps_mut::<T>(&mut write(&mem[i])[..w]).iter_mut().enumerate() {
                let e = expected(&lo, &hi, split, (first + i) as u64 * n + k as u64);
                *a = Complex::new(T::of(e.re), T::of(e.im));
            }
        });
        Ok(())
    }

    fn count_wrong(&mut self, state: &ProductState, floor: f64) -> Result<u64> {
        let (split, lo, hi) = state.tables();
        let n = self.layout.local_amps();
        let rel = tolerance(std::mem::size_of::<T>() == 4);
        let (mem, first, w) = (&self.mem, self.first_rank, self.words());
        let wrong = crate::threads::per_rank(mem.len(), |i| {
            amps::<T>(&read(&mem[i])[..w])
                .iter()
                .enumerate()
                .filter(|(k, a)| {
                    let e = expected(&lo, &hi, split, (first + i) as u64 * n + *k as u64);
                    let d = Complex64::new(a.re.f64(), a.im.f64()) - e;
                    // NaN counts as wrong.
                    d.norm().is_nan() || d.norm() > rel * e.norm().max(floor)
                })
                .count() as u64
        });
        Ok(self.world.sum_u64(wrong.iter().sum()))
    }

    fn apply(&mut self, op: &dyn Fn(usize) -> Local) -> Result<Seconds> {
        let ops: Vec<Local> = (0..self.mem.len()).map(|i| op(self.first_rank + i)).collect();
        let (mem, w) = (&self.mem, self.words());
        Ok(self.on_ranks(|i| {
            let mut m = write(&mem[i]);
            let (c, x) = m.split_at_mut(w);
            local::<T>(amps_mut::<T>(c), amps_mut::<T>(x), ops[i]);
        }))
    }

    fn local_copy(&mut self) -> Result<Seconds> {
        let (mem, w) = (&self.mem, self.words());
        Ok(self.on_ranks(|i| {
            let mut m = write(&mem[i]);
            let (c, x) = m.split_at_mut(w);
            x.copy_from_slice(c);
        }))
    }

    fn exchange(&mut self, wire: Wire, parts: &dyn Fn(usize) -> Part) -> Result<Seconds> {
        if let Some(why) = self.unavailable(wire) {
            return Err(Error::Usage(format!("{}: {why}", wire.name())));
        }
        let host = wire.imp().host().ok_or_else(|| Error::Runtime("internal: not a host wire".into()))?;
        let moves: Vec<HostMove> = (0..self.mem.len())
            .map(|i| {
                let rank = self.first_rank + i;
                let p = parts(rank);
                HostMove { rank, peer: p.peer, from: p.send as usize, to: p.recv as usize, len: p.len as usize }
            })
            .collect();
        let mut bufs = HostBuffers {
            first_rank: self.first_rank,
            mem: &self.mem,
            chunk: self.layout.chunk_bytes() as usize,
            world: self.world,
            kept: &mut self.kept,
        };
        host.exchange(&mut bufs, &moves)
    }

    fn unavailable(&self, wire: Wire) -> Option<String> {
        match wire.imp().host() {
            Some(h) => h.unavailable(&self.layout, self.world, self.mem.len()),
            None => Some(format!("{} moves GPU memory; this register is in host memory", wire.name())),
        }
    }
}
