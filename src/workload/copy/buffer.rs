//! The memory copies read and write (device memory, device memory mapped
//! for the CPU, pinned host memory, write-combined pinned host memory,
//! pageable host memory), each held by its owner in `gpu/`, and the seeded
//! data in it, written and checked on the host with the formula of
//! kernels/copy.cu.

use crate::error::{Error, Result};
use crate::gpu::memory::Pageable;
use crate::gpu::{DeviceBuffer, Gpu, Pinned, cuda_err, gdrcopy};
use cudarc::driver::CudaContext;
use std::sync::Arc;

/// Host memory as a copy sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostKind {
    /// Ordinary memory (a heap allocation): the driver stages it.
    Pageable,
    /// Page-locked, mapped into every GPU's address space.
    Pinned,
    /// Page-locked, mapped, write-combined: fast for the CPU to write and
    /// for the GPU to read, very slow for the CPU to read.
    WriteCombined,
}

impl HostKind {
    pub fn name(self) -> &'static str {
        match self {
            HostKind::Pageable => "pageable",
            HostKind::Pinned => "pinned",
            HostKind::WriteCombined => "write-combined",
        }
    }
}

/// Where a buffer lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// Memory of the GPU with this index.
    Device(usize),
    Host(HostKind),
}

enum Mem {
    /// `ptr` is the allocation's address rounded up to the requested alignment.
    Device {
        mem: DeviceBuffer,
        gpu: usize,
        ptr: u64,
    },
    /// GPU memory mapped into this process (gdrcopy's tests).
    Mapped {
        map: gdrcopy::Mapping,
        gpu: usize,
    },
    Pinned {
        mem: Pinned,
        kind: HostKind,
    },
    Pageable(Pageable),
}

/// One allocation of `bytes` usable bytes, freed on drop.
pub struct Buffer {
    mem: Mem,
    bytes: u64,
}

impl Buffer {
    /// Device memory from cuMemAlloc (not a stream-ordered pool, whose memory
    /// peer access would not reach), starting on an `align`-byte boundary.
    pub fn device(gpu: &Gpu, index: usize, bytes: u64, align: u64) -> Result<Buffer> {
        let what = || format!("allocating {bytes} bytes on GPU {}", gpu.ordinal);
        gpu.ctx.bind_to_thread().map_err(cuda_err(what()))?;
        let total = bytes.max(1) + align.saturating_sub(1);
        let mem = DeviceBuffer::new(&gpu.ctx, total as usize).map_err(cuda_err(what()))?;
        let ptr = mem.ptr().next_multiple_of(align.max(1));
        Ok(Buffer { mem: Mem::Device { mem, gpu: index, ptr }, bytes })
    }

    /// Page-locked host memory, portable and mapped into every context (and
    /// write-combined when asked), allocated in `ctx`.
    pub fn pinned(ctx: &Arc<CudaContext>, kind: HostKind, bytes: u64) -> Result<Buffer> {
        let what = || format!("allocating {bytes} bytes of {} host memory", kind.name());
        ctx.bind_to_thread().map_err(cuda_err(what()))?;
        let mem = Pinned::mapped(bytes as usize, kind == HostKind::WriteCombined).map_err(cuda_err(what()))?;
        if mem.addr().is_null() {
            return Err(Error::Runtime(format!("cuMemHostAlloc returned no memory while {}", what())));
        }
        Ok(Buffer { mem: Mem::Pinned { mem, kind }, bytes })
    }

    /// Ordinary memory of fresh pages (an anonymous mapping, not reused
    /// heap), untouched until filled, so that the thread that first writes
    /// them places them under its memory policy (`--numa`).
    pub fn pageable(bytes: u64) -> Result<Buffer> {
        let mem = Pageable::new(bytes as usize)
            .map_err(|e| Error::Runtime(format!("cannot map {bytes} bytes of pageable host memory: {e}")))?;
        Ok(Buffer { mem: Mem::Pageable(mem), bytes })
    }

    /// This device memory mapped into this process through `backend`, all
    /// of it (its start and length multiples of gdrdrv's page). On error
    /// the memory is freed.
    pub fn mapped(self, backend: &gdrcopy::Backend) -> Result<Buffer> {
        let Mem::Device { mem, gpu, ptr } = self.mem else {
            return Err(Error::Runtime("internal: only device memory is mapped for the CPU".into()));
        };
        let map = gdrcopy::Mapping::new(backend, mem, ptr, self.bytes as usize)?;
        Ok(Buffer { mem: Mem::Mapped { map, gpu }, bytes: self.bytes })
    }

    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    pub fn place(&self) -> Place {
        match &self.mem {
            Mem::Device { gpu, .. } | Mem::Mapped { gpu, .. } => Place::Device(*gpu),
            Mem::Pinned { kind, .. } => Place::Host(*kind),
            Mem::Pageable(_) => Place::Host(HostKind::Pageable),
        }
    }

    /// The host address of host memory.
    pub fn host_ptr(&self) -> Option<*mut u8> {
        match &self.mem {
            Mem::Device { .. } | Mem::Mapped { .. } => None,
            Mem::Pinned { mem, .. } => Some(mem.addr()),
            Mem::Pageable(mem) => Some(mem.addr()),
        }
    }

    /// Pinned memory as the driver's value, for its volatile words.
    pub fn as_pinned(&self) -> Option<&Pinned> {
        match &self.mem {
            Mem::Pinned { mem, .. } => Some(mem),
            _ => None,
        }
    }

    /// The CPU's mapping of mapped device memory.
    pub fn cpu_mapping(&self) -> Option<&gdrcopy::Mapping> {
        match &self.mem {
            Mem::Mapped { map, .. } => Some(map),
            _ => None,
        }
    }

    /// The address at which `gpu`'s kernels and copies reach this memory.
    pub fn device_addr(&self, gpu: &Gpu) -> Result<u64> {
        match &self.mem {
            Mem::Device { ptr, .. } => Ok(*ptr),
            Mem::Mapped { map, .. } => Ok(map.addr()),
            Mem::Pinned { mem, .. } => {
                gpu.ctx.bind_to_thread().map_err(cuda_err("binding a context"))?;
                mem.device_ptr().map_err(cuda_err(format!("mapping pinned host memory into GPU {}", gpu.ordinal)))
            }
            Mem::Pageable(_) => {
                Err(Error::Runtime("internal: a GPU kernel was given pageable host memory to reach".into()))
            }
        }
    }

    /// The first `bytes` bytes of host memory as a slice.
    ///
    /// # Safety
    /// No copy or kernel may be writing this memory while the slice lives.
    pub unsafe fn host_slice(&mut self, bytes: u64) -> Option<&mut [u8]> {
        let p = self.host_ptr()?;
        // SAFETY: `p` addresses at least `self.bytes` bytes; the caller
        // guarantees nothing else touches them meanwhile.
        Some(unsafe { std::slice::from_raw_parts_mut(p, bytes.min(self.bytes) as usize) })
    }
}

/// Word `i` of the data seeded with `seed` (kernels/copy.cu's `word`).
pub fn word(seed: u64, i: u64) -> u64 {
    crate::pattern::bits(seed, i)
}

/// Bytes each host thread fills or checks, a multiple of 8.
fn part_len(len: usize) -> usize {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(16);
    len.div_ceil(threads).next_multiple_of(8).max(4 << 20)
}

/// Writes the seeded data into `buf`, or its bitwise complement (`invert`:
/// a poison that differs from the data in every byte).
pub fn fill_host(buf: &mut [u8], seed: u64, invert: bool) {
    let flip = if invert { !0u64 } else { 0 };
    let part = part_len(buf.len());
    crate::threads::each(buf.chunks_mut(part).collect(), |k, chunk: &mut [u8]| {
        let first = (k * part / 8) as u64;
        let mut words = chunk.chunks_exact_mut(8);
        let mut i = first;
        for w in &mut words {
            w.copy_from_slice(&(word(seed, i) ^ flip).to_le_bytes());
            i += 1;
        }
        let rest = words.into_remainder();
        let n = rest.len();
        rest.copy_from_slice(&(word(seed, i) ^ flip).to_le_bytes()[..n]);
        // Drains this core's write-combining buffers, so that a copy engine
        // reading write-combined memory next sees every byte.
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
    });
}

/// The number of 8-byte words of `buf` (the last one possibly partial) that
/// differ from the seeded data.
pub fn count_wrong_host(buf: &[u8], seed: u64) -> u64 {
    let part = part_len(buf.len());
    crate::threads::each(buf.chunks(part).collect(), |k, chunk: &[u8]| {
        let first = (k * part / 8) as u64;
        let mut wrong = 0;
        let words = chunk.chunks_exact(8);
        let rest = words.remainder();
        let mut i = first;
        for w in words {
            wrong += (w != word(seed, i).to_le_bytes()) as u64;
            i += 1;
        }
        if !rest.is_empty() {
            wrong += (rest != &word(seed, i).to_le_bytes()[..rest.len()]) as u64;
        }
        wrong
    })
    .into_iter()
    .sum()
}

/// Flips every bit of word `index` of `buf` (the last word when `buf` is
/// shorter): the test hook's corruption.
pub fn flip_word(buf: &mut [u8], index: u64) {
    if buf.is_empty() {
        return;
    }
    let w = (index as usize).min((buf.len() - 1) / 8);
    let end = (w * 8 + 8).min(buf.len());
    buf[w * 8..end].iter_mut().for_each(|b| *b = !*b);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filled_data_checks_clean_at_every_length() {
        for len in [1usize, 7, 8, 9, 15, 16, 17, 1000, (9 << 20) + 3] {
            let mut buf = vec![0u8; len];
            fill_host(&mut buf, 42, false);
            assert_eq!(count_wrong_host(&buf, 42), 0, "len {len}");
            assert_eq!(count_wrong_host(&buf, 43), len.div_ceil(8) as u64, "another seed, len {len}");
        }
    }

    #[test]
    fn poison_differs_in_every_byte() {
        for len in [1usize, 5, 8, 13, 4096] {
            let (mut data, mut poison) = (vec![0u8; len], vec![0u8; len]);
            fill_host(&mut data, 7, false);
            fill_host(&mut poison, 7, true);
            assert!(data.iter().zip(&poison).all(|(a, b)| a != b), "len {len}");
            assert_eq!(count_wrong_host(&poison, 7), len.div_ceil(8) as u64);
        }
    }

    #[test]
    fn one_flipped_word_is_counted_once() {
        for (len, index, expect_at) in
            [(64usize, 3u64, 24usize), (64, 1000, 56), (3, 0, 0), ((8 << 20) + 5, 1 << 20, 8 << 20)]
        {
            let mut buf = vec![0u8; len];
            fill_host(&mut buf, 9, false);
            flip_word(&mut buf, index);
            assert_eq!(count_wrong_host(&buf, 9), 1, "len {len} index {index}");
            let mut clean = vec![0u8; len];
            fill_host(&mut clean, 9, false);
            assert_ne!(buf[expect_at], clean[expect_at]);
        }
    }

    #[test]
    fn a_single_wrong_byte_is_found_in_any_part() {
        let len = (20 << 20) + 11;
        let mut buf = vec![0u8; len];
        fill_host(&mut buf, 1, false);
        for at in [0, 12345, 9 << 20, len - 1] {
            buf[at] ^= 0x10;
            assert_eq!(count_wrong_host(&buf, 1), 1, "byte {at}");
            buf[at] ^= 0x10;
        }
    }

    /// kernels/copy.cu's fill writes the words the host formula computes,
    /// its poison is their complement, and its check counts what the host
    /// counts: on the GPU (`cargo test -- --ignored` on the GPU machine).
    #[test]
    #[ignore = "needs a GPU"]
    fn the_kernels_fill_and_check_what_the_host_computes() {
        crate::libs::require(&[crate::libs::Library::Driver, crate::libs::Library::Nvrtc], None).unwrap();
        let gpu = Gpu::open(0).unwrap();
        let k = crate::gpu::copy_kernels::CopyKernels::load(&gpu).unwrap();
        let counter = Buffer::device(&gpu, 0, 8, 8).unwrap();
        for len in [1u64, 7, 8, 9, 4093, (3 << 20) + 5] {
            let dev = Buffer::device(&gpu, 0, len, 256).unwrap();
            for invert in [false, true] {
                k.fill(&gpu, dev.device_addr(&gpu).unwrap(), len, 77, invert).unwrap();
                gpu.stream.synchronize().unwrap();
                let mut got = vec![0u8; len as usize];
                crate::gpu::copy::from_device(&mut got, dev.device_addr(&gpu).unwrap()).unwrap();
                let mut want = vec![0u8; len as usize];
                fill_host(&mut want, 77, invert);
                assert_eq!(got, want, "len {len} invert {invert}");
                gpu.memset(counter.device_addr(&gpu).unwrap(), 0, 8).unwrap();
                k.check(&gpu, dev.device_addr(&gpu).unwrap(), len, 77, counter.device_addr(&gpu).unwrap()).unwrap();
                gpu.stream.synchronize().unwrap();
                let mut wrong = [0u64; 1];
                crate::gpu::copy::from_device(
                    bytemuck::bytes_of_mut(&mut wrong[0]),
                    counter.device_addr(&gpu).unwrap(),
                )
                .unwrap();
                assert_eq!(wrong[0], count_wrong_host(&want, 77), "len {len} invert {invert}");
            }
        }
    }

    #[test]
    fn pageable_buffers_are_aligned_and_sized() {
        let mut b = Buffer::pageable(13).unwrap();
        assert_eq!(b.place(), Place::Host(HostKind::Pageable));
        assert_eq!(b.host_ptr().unwrap() as usize % 8, 0);
        // SAFETY: nothing else reaches this buffer.
        let s = unsafe { b.host_slice(13) }.unwrap();
        fill_host(s, 3, false);
        assert_eq!(count_wrong_host(s, 3), 0);
    }
}
