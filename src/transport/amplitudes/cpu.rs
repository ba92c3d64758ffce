//! The register in host memory: ranks are threads of this process, each
//! with its chunk and exchange buffer; amplitudes move by memcpy between
//! the ranks' buffers. It is what CI checks the exchange pattern with, and
//! the baseline of a CPU-only node.

use super::super::{RankInfo, short_hostname};
use crate::error::{Error, Result};
use crate::workload::exchange::layout::{Layout, Pattern};
use crate::workload::exchange::register::{Fault, Register, Seconds, Wire, peer_of, swap_half};
use crate::workload::exchange::state::{ProductState, tolerance};
use num_complex::Complex;
use num_traits::Float;
use std::f64::consts::FRAC_1_SQRT_2;
use std::sync::{PoisonError, RwLock};
use std::time::Instant;

/// An amplitude's real type: f32 (single) or f64 (double).
pub trait Real: Float + Send + Sync + 'static {
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

type Chunk<T> = RwLock<Vec<Complex<T>>>;

pub struct CpuRegister<T: Real> {
    layout: Layout,
    info: Vec<RankInfo>,
    chunks: Vec<Chunk<T>>,
    xbufs: Vec<Chunk<T>>,
}

/// Why a host-memory register of this layout cannot be held here, if so.
pub fn does_not_fit(layout: &Layout) -> Option<String> {
    let need = 2 * layout.chunk_bytes() * layout.ranks() as u64;
    let avail = super::super::cpu::mem_available()?;
    (need + (1 << 30) > avail).then(|| {
        format!(
            "needs {} of host memory (chunk and exchange buffer per rank), {} is available",
            crate::units::format_size(need),
            crate::units::format_size(avail)
        )
    })
}

impl<T: Real> CpuRegister<T> {
    pub fn new(layout: Layout) -> Result<CpuRegister<T>> {
        if let Some(why) = does_not_fit(&layout) {
            return Err(Error::Usage(format!("the cpu transport {why}")));
        }
        let n = layout.local_amps() as usize;
        let alloc = || -> Result<Chunk<T>> {
            let mut v = Vec::new();
            v.try_reserve_exact(n).map_err(|e| Error::Runtime(format!("cannot allocate a chunk: {e}")))?;
            v.resize(n, Complex::new(T::zero(), T::zero()));
            Ok(RwLock::new(v))
        };
        let ranks = layout.ranks();
        let host = short_hostname();
        let info = (0..ranks)
            .map(|r| RankInfo {
                rank: r,
                group: 0,
                pid: std::process::id(),
                host: host.clone(),
                device: r,
                bus_id: "host".into(),
                name: super::super::cpu::cpu_model(),
            })
            .collect();
        Ok(CpuRegister {
            layout,
            info,
            chunks: (0..ranks).map(|_| alloc()).collect::<Result<_>>()?,
            xbufs: (0..ranks).map(|_| alloc()).collect::<Result<_>>()?,
        })
    }

    /// Runs `f(rank)` on one thread per rank; the slowest rank's seconds.
    fn on_ranks(&self, f: impl Fn(usize) + Sync) -> Seconds {
        let times: Vec<f64> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..self.chunks.len())
                .map(|r| {
                    let f = &f;
                    s.spawn(move || {
                        let t0 = Instant::now();
                        f(r);
                        t0.elapsed().as_secs_f64()
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e))).collect()
        });
        times.into_iter().fold(0.0, f64::max)
    }

    /// The amplitudes of rank `r`'s chunk (a copy), for tests.
    pub fn chunk(&self, r: usize) -> Vec<Complex<T>> {
        self.chunks[r].read().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

fn write<T>(l: &RwLock<Vec<T>>) -> std::sync::RwLockWriteGuard<'_, Vec<T>> {
    l.write().unwrap_or_else(PoisonError::into_inner)
}

fn read<T>(l: &RwLock<Vec<T>>) -> std::sync::RwLockReadGuard<'_, Vec<T>> {
    l.read().unwrap_or_else(PoisonError::into_inner)
}

fn expected(
    lo: &[num_complex::Complex64],
    hi: &[num_complex::Complex64],
    split: u32,
    g: u64,
) -> num_complex::Complex64 {
    lo[(g & ((1 << split) - 1)) as usize] * hi[(g >> split) as usize]
}

impl<T: Real> Register for CpuRegister<T> {
    fn layout(&self) -> &Layout {
        &self.layout
    }

    fn ranks(&self) -> &[RankInfo] {
        &self.info
    }

    fn init(&mut self, state: &ProductState) -> Result<()> {
        let (split, lo, hi) = state.tables();
        let n = self.layout.local_amps();
        self.on_ranks(|r| {
            for (i, a) in write(&self.chunks[r]).iter_mut().enumerate() {
                let e = expected(&lo, &hi, split, r as u64 * n + i as u64);
                *a = Complex::new(T::of(e.re), T::of(e.im));
            }
        });
        Ok(())
    }

    fn count_wrong(&mut self, state: &ProductState) -> Result<u64> {
        let (split, lo, hi) = state.tables();
        let n = self.layout.local_amps();
        let rel = tolerance(std::mem::size_of::<T>() == 4);
        let wrong = std::sync::atomic::AtomicU64::new(0);
        self.on_ranks(|r| {
            let bad = read(&self.chunks[r])
                .iter()
                .enumerate()
                .filter(|(i, a)| {
                    let e = expected(&lo, &hi, split, r as u64 * n + *i as u64);
                    let d = num_complex::Complex64::new(a.re.f64(), a.im.f64()) - e;
                    // NaN counts as wrong.
                    d.norm().is_nan() || d.norm() > rel * e.norm()
                })
                .count() as u64;
            wrong.fetch_add(bad, std::sync::atomic::Ordering::Relaxed);
        });
        Ok(wrong.into_inner())
    }

    fn local_h(&mut self, q: u32) -> Result<Seconds> {
        let s = T::of(FRAC_1_SQRT_2);
        let bit = 1usize << q;
        Ok(self.on_ranks(|r| {
            let mut c = write(&self.chunks[r]);
            for block in c.chunks_exact_mut(2 * bit) {
                let (lo, hi) = block.split_at_mut(bit);
                for (a, b) in lo.iter_mut().zip(hi) {
                    let (x, y) = (*a, *b);
                    *a = (x + y) * s;
                    *b = (x - y) * s;
                }
            }
        }))
    }

    fn local_copy(&mut self) -> Result<Seconds> {
        Ok(self.on_ranks(|r| write(&self.xbufs[r]).copy_from_slice(&read(&self.chunks[r]))))
    }

    fn exchange(&mut self, wire: Wire, pattern: Pattern, t: u32, fault: Option<Fault>) -> Result<Seconds> {
        if let Some(why) = self.unavailable(wire) {
            return Err(Error::Usage(why));
        }
        let half = self.layout.local_amps() as usize / 2;
        Ok(self.on_ranks(|r| {
            let p = peer_of(&self.layout, r, t, fault);
            let mut x = write(&self.xbufs[r]);
            // The peer's chunk is only read during an exchange.
            let src = read(&self.chunks[p]);
            match pattern {
                Pattern::Gate => x.copy_from_slice(&src),
                Pattern::Swap => {
                    let from = swap_half(&self.layout, p, t, fault) as usize;
                    x[..half].copy_from_slice(&src[from..from + half]);
                }
            }
        }))
    }

    fn combine(&mut self, t: u32) -> Result<Seconds> {
        let s = T::of(FRAC_1_SQRT_2);
        Ok(self.on_ranks(|r| {
            let one = self.layout.holds_one(r, t);
            let x = read(&self.xbufs[r]);
            for (a, &p) in write(&self.chunks[r]).iter_mut().zip(x.iter()) {
                *a = if one { (p - *a) * s } else { (*a + p) * s };
            }
        }))
    }

    fn place(&mut self, t: u32) -> Result<Seconds> {
        let half = self.layout.local_amps() as usize / 2;
        Ok(self.on_ranks(|r| {
            let at = swap_half(&self.layout, r, t, None) as usize;
            write(&self.chunks[r])[at..at + half].copy_from_slice(&read(&self.xbufs[r])[..half]);
        }))
    }

    fn unavailable(&self, wire: Wire) -> Option<String> {
        (wire != Wire::Cpu).then(|| format!("{} needs GPUs; this register is in host memory", wire.name()))
    }
}
