//! Memory the CUDA driver allocates, exports or stages, each kind a value
//! that owns it and frees it once, on drop: device memory (cuMemAlloc),
//! page-locked host memory (cuMemHostAlloc), fresh pageable pages for the
//! copy engines to stage, and GPU memory exported as a dma-buf. Each value
//! knows its length, and hands out addresses, never references into memory
//! the GPU may be writing. Every call that can fail returns the driver's
//! error, so that each caller keeps its own words for it; the caller binds
//! the context first where the driver needs one.

use super::{Gpu, cuda_err};
use crate::error::{Error, Result};
use cudarc::driver::sys::{self, CUdevice_attribute, CUmemRangeHandleType};
use cudarc::driver::{CudaContext, DriverError, result};
use std::os::fd::{FromRawFd, OwnedFd};
use std::sync::Arc;

/// Device memory from cuMemAlloc (not a stream-ordered pool: peers and
/// NCCL reach it once peer access is on), freed on drop.
pub struct DeviceBuffer {
    ptr: u64,
    len: usize,
    ctx: Arc<CudaContext>,
}

impl DeviceBuffer {
    /// `len` bytes (at least one is allocated) of the memory of `ctx`,
    /// which the caller has bound to this thread.
    pub fn new(ctx: &Arc<CudaContext>, len: usize) -> std::result::Result<DeviceBuffer, DriverError> {
        // SAFETY: cuMemAlloc returns a fresh allocation in the bound context
        // or fails; it is freed once, in drop. Nothing reads it before its
        // owner writes it (fill or poison).
        let ptr = unsafe { result::malloc_sync(len.max(1)) }?;
        Ok(DeviceBuffer { ptr, len, ctx: ctx.clone() })
    }

    /// The device address.
    pub fn ptr(&self) -> u64 {
        self.ptr
    }

    /// Whether `len` bytes from `addr` lie inside the buffer.
    pub fn holds(&self, addr: u64, len: usize) -> bool {
        addr >= self.ptr && (addr - self.ptr).checked_add(len as u64).is_some_and(|end| end <= self.len as u64)
    }

    /// The context the memory belongs to.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// Copies `bytes` to the start of the buffer, waiting for the copy.
    pub fn upload(&self, bytes: &[u8]) -> Result<()> {
        self.fits(bytes.len())?;
        self.ctx.bind_to_thread().map_err(cuda_err("binding a context"))?;
        super::copy::to_device(self.ptr, bytes).map_err(cuda_err("copying to the GPU"))
    }

    /// Copies the start of the buffer into `out`, waiting for the copy.
    pub fn download(&self, out: &mut [u8]) -> Result<()> {
        self.fits(out.len())?;
        self.ctx.bind_to_thread().map_err(cuda_err("binding a context"))?;
        super::copy::from_device(out, self.ptr).map_err(cuda_err("copying from the GPU"))
    }

    fn fits(&self, len: usize) -> Result<()> {
        match len <= self.len {
            true => Ok(()),
            false => Err(Error::Runtime(format!("internal: {len} bytes copied with a {}-byte GPU buffer", self.len))),
        }
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        let _ = self.ctx.bind_to_thread();
        // SAFETY: `ptr` came from cuMemAlloc in this context and is freed
        // once; every user synchronised its streams before dropping it.
        let _ = unsafe { result::free_sync(self.ptr) };
    }
}

/// Page-locked host memory from cuMemHostAlloc, freed on drop.
pub struct Pinned {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the allocation is plain memory owned by this value, which hands
// out addresses, never references; their users order their accesses
// (stream order, events).
unsafe impl Send for Pinned {}

impl Pinned {
    /// `len` bytes visible to every context (portable), allocated in `gpu`'s.
    pub fn new(gpu: &Gpu, len: usize) -> Result<Pinned> {
        gpu.ctx.bind_to_thread().map_err(cuda_err("binding a context"))?;
        Pinned::alloc(len, sys::CU_MEMHOSTALLOC_PORTABLE)
            .map_err(cuda_err(format!("allocating {} of pinned host memory", crate::units::format_size(len as u64))))
    }

    /// `len` bytes visible to every context and mapped into every GPU's
    /// address space, write-combined when asked (fast for the CPU to write
    /// and the GPU to read, very slow for the CPU to read); in the context
    /// the caller has bound.
    pub fn mapped(len: usize, write_combined: bool) -> std::result::Result<Pinned, DriverError> {
        let mut flags = sys::CU_MEMHOSTALLOC_PORTABLE | sys::CU_MEMHOSTALLOC_DEVICEMAP;
        if write_combined {
            flags |= sys::CU_MEMHOSTALLOC_WRITECOMBINED;
        }
        Pinned::alloc(len, flags)
    }

    fn alloc(len: usize, flags: u32) -> std::result::Result<Pinned, DriverError> {
        // SAFETY: cuMemHostAlloc returns `len` (at least one) bytes of host
        // memory or fails; they are reached only through raw addresses and
        // freed once, in drop.
        let ptr = unsafe { result::malloc_host(len.max(1), flags) }?;
        Ok(Pinned { ptr: ptr.cast(), len })
    }

    /// Bytes asked for.
    pub fn size(&self) -> usize {
        self.len
    }

    /// The address the host and the copy engines read or write.
    pub fn addr(&self) -> *mut u8 {
        self.ptr
    }

    /// The address at which the GPU of the bound context reaches memory
    /// allocated [`Pinned::mapped`] (an error for any other).
    pub fn device_ptr(&self) -> std::result::Result<u64, DriverError> {
        let mut d: sys::CUdeviceptr = 0;
        // SAFETY: `ptr` came from cuMemHostAlloc; the driver writes one
        // device pointer through a valid out-pointer, or refuses memory it
        // did not map.
        unsafe { sys::cuMemHostGetDevicePointer_v2(&mut d, self.ptr.cast(), 0) }.result()?;
        Ok(d)
    }

    /// Writes `value` to the u32 word `index` of the memory, past the
    /// compiler's caches (a GPU kernel reads it); None if it lies outside.
    #[inline]
    pub fn store_u32(&self, index: usize, value: u32) -> Option<()> {
        let word = self.word(index)?;
        // SAFETY: in bounds (checked by `word`) and aligned (cuMemHostAlloc
        // returns page-aligned memory); a volatile store of plain bits.
        unsafe { word.write_volatile(value) };
        Some(())
    }

    /// Reads the u32 word `index` of the memory past the compiler's caches
    /// (a GPU kernel writes it); None if it lies outside.
    pub fn load_u32(&self, index: usize) -> Option<u32> {
        let word = self.word(index)?;
        // SAFETY: as in `store_u32`; any bits are a valid u32.
        Some(unsafe { word.read_volatile() })
    }

    #[inline]
    fn word(&self, index: usize) -> Option<*mut u32> {
        let end = index.checked_add(1)?.checked_mul(4)?;
        (end <= self.len).then(|| self.ptr.cast::<u32>().wrapping_add(index))
    }
}

impl Drop for Pinned {
    fn drop(&mut self) {
        if !self.ptr.is_null() {
            // SAFETY: `ptr` came from cuMemHostAlloc and is freed once.
            let _ = unsafe { result::free_host(self.ptr.cast()) };
        }
    }
}

/// Ordinary host memory of fresh pages (a private anonymous mapping, not
/// reused heap), untouched until written, so that the thread that first
/// writes them places them under its memory policy; the copy engines
/// stage it. Unmapped on drop.
pub struct Pageable {
    ptr: *mut u8,
    len: usize,
}

impl Pageable {
    pub fn new(len: usize) -> std::io::Result<Pageable> {
        let len = len.max(1);
        // SAFETY: a new private anonymous mapping that overlaps nothing;
        // it is unmapped once, in drop.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Pageable { ptr: ptr.cast(), len })
    }

    /// The address the host and the copy engines read or write.
    pub fn addr(&self) -> *mut u8 {
        self.ptr
    }
}

impl Drop for Pageable {
    fn drop(&mut self) {
        // SAFETY: `ptr` and `len` are those of the mapping, unmapped once.
        let _ = unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

/// Whether the GPU of `ctx` exports its memory as dma-buf
/// (CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED), no when the driver cannot say.
pub fn exports_dma_buf(ctx: &CudaContext) -> bool {
    ctx.attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED).unwrap_or(0) != 0
}

/// `len` bytes of GPU memory from `addr` (host-page aligned, inside one
/// allocation of the bound context) exported by the driver as a dma-buf
/// file descriptor (cuMemGetHandleForAddressRange), for an adapter to
/// register or the CPU to map; Err is the driver's refusal.
pub fn dma_buf(addr: u64, len: usize) -> std::result::Result<OwnedFd, DriverError> {
    let mut fd: libc::c_int = -1;
    // SAFETY: `fd` is a live c_int the driver writes the descriptor to; a
    // range the driver does not know is an error return.
    unsafe {
        sys::cuMemGetHandleForAddressRange(
            (&mut fd as *mut libc::c_int).cast(),
            addr,
            len,
            CUmemRangeHandleType::CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD,
            0,
        )
    }
    .result()?;
    // SAFETY: the driver opened `fd` for this process and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// [`dma_buf`] of `ctx`'s memory, binding the context first; its errors in
/// qbench's words.
pub fn export_dma_buf(ctx: &CudaContext, addr: u64, len: usize) -> Result<OwnedFd> {
    ctx.bind_to_thread().map_err(cuda_err("binding a context"))?;
    dma_buf(addr, len).map_err(cuda_err("exporting GPU memory as a dma-buf"))
}

/// Makes every copy on the allocation holding `addr` (of the bound
/// context) finish before its call returns (CU_POINTER_ATTRIBUTE_SYNC_MEMOPS),
/// as gdrcopy requires of the memory it maps.
pub fn sync_memops(addr: u64) -> std::result::Result<(), DriverError> {
    let one: u32 = 1;
    // SAFETY: the attribute takes a pointer to an unsigned int, live for
    // the call; an address of no allocation is an error return.
    unsafe {
        sys::cuPointerSetAttribute(
            (&one as *const u32).cast(),
            sys::CUpointer_attribute::CU_POINTER_ATTRIBUTE_SYNC_MEMOPS,
            addr,
        )
    }
    .result()
}
