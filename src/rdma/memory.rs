//! The buffers of an RDMA test and their registration with the adapter:
//! page-aligned host memory, or GPU memory (GPUDirect RDMA) registered
//! from a dma-buf file descriptor (cuMemGetHandleForAddressRange +
//! ibv_reg_dmabuf_mr) or by address when nvidia_peermem is loaded
//! (ibv_reg_mr), as perftest's --use_cuda=N with and without
//! --use_cuda_dmabuf do, the GPU named by index or by PCI address; or
//! memory another owner holds (the rdma wires register a register's own
//! buffers). The GPU paths have not run on hardware: no machine here has an
//! adapter next to a GPU.

use super::plan::{BufferMemory, GpuDevice, GpuReg, MemoryAsk};
use crate::error::{Error, Result};
use crate::gpu::memory::{dma_buf, exports_dma_buf};
use crate::gpu::{DeviceBuffer, Gpu, copy, cuda_err, driver};
use cudarc::driver::CudaContext;
use cudarc::driver::sys::cudaError_enum;
use sideway::ibverbs::AccessFlags;
use sideway::ibverbs::memory_region::MemoryRegion;
use sideway::ibverbs::protection_domain::ProtectionDomain;
use std::alloc::Layout;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::ptr::NonNull;
use std::sync::Arc;

const PAGE: usize = 4096;

/// Host memory the adapter reads and writes: page-aligned, zeroed, freed on drop.
pub struct HostBuffer {
    ptr: NonNull<u8>,
    layout: Layout,
}

// SAFETY: the buffer is plain bytes owned by this value; the adapter
// touches it only through registrations that the owner of this value
// controls.
unsafe impl Send for HostBuffer {}

impl HostBuffer {
    fn new(len: usize) -> Result<HostBuffer> {
        let layout = Layout::from_size_align(len.max(1).next_multiple_of(PAGE), PAGE)
            .map_err(|e| Error::Runtime(format!("cannot lay out {len} bytes of host memory: {e}")))?;
        // SAFETY: the layout has a non-zero size.
        let ptr = NonNull::new(unsafe { std::alloc::alloc_zeroed(layout) })
            .ok_or_else(|| Error::Runtime(format!("cannot allocate {len} bytes of host memory")))?;
        Ok(HostBuffer { ptr, layout })
    }
}

impl Drop for HostBuffer {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout, freed once; every
        // memory region on it was deregistered first (the owner drops them
        // before the buffer).
        unsafe { std::alloc::dealloc(self.ptr.as_ptr(), self.layout) }
    }
}

/// GPU memory from cuMemAlloc, and the GPU it lives on.
pub struct GpuBuffer {
    gpu: Gpu,
    buf: DeviceBuffer,
}

/// The memory one side of a connection sends from and receives into.
pub enum Region {
    Host {
        buf: HostBuffer,
        len: usize,
    },
    Gpu {
        buf: GpuBuffer,
        len: usize,
    },
    /// Memory of another owner: host memory, or GPU memory of `gpu`'s context.
    Foreign {
        addr: u64,
        len: usize,
        gpu: Option<Arc<CudaContext>>,
    },
}

impl Region {
    pub fn new(memory: BufferMemory, len: usize) -> Result<Region> {
        match memory {
            BufferMemory::Host => Ok(Region::Host { buf: HostBuffer::new(len)?, len }),
            BufferMemory::CudaDmabuf { gpu } | BufferMemory::CudaPeermem { gpu } => {
                crate::gpu::require_gpus(gpu as usize + 1)?;
                let gpu = Gpu::open(gpu as usize)?;
                // Whole pages: dma-buf exports page-aligned ranges.
                let buf = gpu.alloc(len.next_multiple_of(PAGE) as u64)?;
                if buf.ptr() % PAGE as u64 != 0 {
                    return Err(Error::Runtime(format!("GPU memory at {:#x} is not page-aligned", buf.ptr())));
                }
                Ok(Region::Gpu { buf: GpuBuffer { gpu, buf }, len })
            }
        }
    }

    /// `len` bytes at `addr` that another owner holds: host memory, or GPU
    /// memory of the context `gpu`.
    ///
    /// # Safety
    ///
    /// The range must be one live allocation (host memory, or a cuMemAlloc
    /// of that context) that stays in place and alive until every link on
    /// this region has been dropped.
    pub unsafe fn foreign(addr: u64, len: usize, gpu: Option<Arc<CudaContext>>) -> Region {
        Region::Foreign { addr, len, gpu }
    }

    /// The address the adapter uses (a virtual address, or a GPU address).
    pub fn addr(&self) -> u64 {
        match self {
            Region::Host { buf, .. } => buf.ptr.as_ptr() as u64,
            Region::Gpu { buf, .. } => buf.buf.ptr(),
            Region::Foreign { addr, .. } => *addr,
        }
    }

    /// Bytes of the region.
    pub fn bytes(&self) -> usize {
        match self {
            Region::Host { len, .. } | Region::Gpu { len, .. } | Region::Foreign { len, .. } => *len,
        }
    }

    /// The context of the GPU memory it is, if it is GPU memory.
    fn gpu(&self) -> Option<&Arc<CudaContext>> {
        match self {
            Region::Host { .. } => None,
            Region::Gpu { buf, .. } => Some(&buf.gpu.ctx),
            Region::Foreign { gpu, .. } => gpu.as_ref(),
        }
    }

    fn bounds(&self, offset: usize, len: usize) -> Result<()> {
        match offset.checked_add(len) {
            Some(end) if end <= self.bytes() => Ok(()),
            _ => Err(Error::Runtime(format!("{len} bytes at offset {offset} overrun a {}-byte buffer", self.bytes()))),
        }
    }

    /// Copies `data` into the buffer at `offset`. The adapter must not be
    /// writing there (no request outstanding on this range).
    pub fn write(&mut self, offset: usize, data: &[u8]) -> Result<()> {
        self.bounds(offset, data.len())?;
        let at = self.addr() + offset as u64;
        match self.gpu() {
            // SAFETY: in bounds (checked above) of a live allocation (owned,
            // or vouched for by `foreign`); no reference into the buffer
            // exists while it is copied to.
            None => unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), at as *mut u8, data.len()) },
            Some(ctx) => {
                ctx.bind_to_thread().map_err(cuda_err("binding a context"))?;
                // The destination range lies inside the allocation (checked above).
                copy::to_device(at, data).map_err(cuda_err("filling GPU memory"))?;
            }
        }
        Ok(())
    }

    /// Copies `out.len()` bytes at `offset` out of the buffer, once the
    /// adapter has finished writing them.
    pub fn read(&self, offset: usize, out: &mut [u8]) -> Result<()> {
        self.bounds(offset, out.len())?;
        let at = self.addr() + offset as u64;
        match self.gpu() {
            // SAFETY: in bounds of a live allocation; the caller waited for
            // every request that writes this range.
            None => unsafe { std::ptr::copy_nonoverlapping(at as *const u8, out.as_mut_ptr(), out.len()) },
            Some(ctx) => {
                ctx.bind_to_thread().map_err(cuda_err("binding a context"))?;
                // The source range lies inside the allocation (checked above).
                copy::from_device(out, at).map_err(cuda_err("reading GPU memory"))?;
            }
        }
        Ok(())
    }

    /// The byte at `offset` as it is now, read past the compiler's caches:
    /// how a latency test sees a peer's RDMA write arrive (host memory only).
    pub fn peek(&self, offset: usize) -> Option<u8> {
        match self {
            // SAFETY: in bounds of a live allocation; a volatile byte read
            // while the adapter may write it sees the old or the new value.
            Region::Host { buf, len } if offset < *len => Some(unsafe { buf.ptr.as_ptr().add(offset).read_volatile() }),
            _ => None,
        }
    }

    /// `len` bytes at `offset` of host memory, for inline sends; the adapter
    /// never writes a source range.
    pub fn host_bytes(&self, offset: usize, len: usize) -> Option<&[u8]> {
        match self {
            Region::Host { buf, len: total } if offset.checked_add(len).is_some_and(|e| e <= *total) => {
                // SAFETY: in bounds of a live allocation that outlives the
                // borrow; source ranges are only written through `write`,
                // which needs `&mut self`.
                Some(unsafe { std::slice::from_raw_parts(buf.ptr.as_ptr().add(offset), len) })
            }
            _ => None,
        }
    }
}

/// Local writes by the adapter (reads, receives) and remote reads and writes.
pub fn access() -> AccessFlags {
    AccessFlags::LocalWrite | AccessFlags::RemoteWrite | AccessFlags::RemoteRead
}

/// The memory asked for, on a GPU of this process: the ordinal of a PCI
/// address (cuDeviceGetByPCIBusId, as perftest's --use_cuda_bus_id), and
/// for `--gpu_reg auto` dma-buf when the GPU can export it, else nvidia_peermem.
pub fn resolve(ask: &MemoryAsk) -> Result<BufferMemory> {
    let MemoryAsk::Gpu { device, reg } = ask else { return Ok(BufferMemory::Host) };
    let gpu = match device {
        GpuDevice::Index(i) => *i,
        GpuDevice::BusId(id) => ordinal_of(id)?,
    };
    crate::gpu::require_gpus(gpu as usize + 1)?;
    Ok(match reg {
        GpuReg::Dmabuf => BufferMemory::CudaDmabuf { gpu },
        GpuReg::Peermem => BufferMemory::CudaPeermem { gpu },
        GpuReg::Auto => {
            let g = Gpu::open(gpu as usize)?;
            if exports_dma_buf(&g.ctx) { BufferMemory::CudaDmabuf { gpu } } else { BufferMemory::CudaPeermem { gpu } }
        }
    })
}

/// The ordinal of the GPU at PCI address `id`.
fn ordinal_of(id: &str) -> Result<u32> {
    if crate::gpu::device_count()? == 0 {
        return Err(Error::Missing("no CUDA GPU is visible (check nvidia-smi and CUDA_VISIBLE_DEVICES)".into()));
    }
    let text = std::ffi::CString::new(id)
        .map_err(|_| Error::Usage(format!("'{id}' (--use_cuda_bus_id) is not a PCI address")))?;
    // The driver was initialised by device_count.
    let (rc, device) = match driver::device_at(&text) {
        Ok(d) => (cudaError_enum::CUDA_SUCCESS, d),
        Err(e) => (e.0, -1),
    };
    if device < 0 {
        return Err(Error::Missing(format!(
            "no GPU of this process is at PCI address {id} (--use_cuda_bus_id; cuDeviceGetByPCIBusId: {rc:?}): nvidia-smi lists them, and CUDA_VISIBLE_DEVICES hides some"
        )));
    }
    Ok(device as u32)
}

/// Whether a peer-memory module lets adapters register GPU memory by address.
pub fn peermem_loaded() -> bool {
    ["/sys/module/nvidia_peermem", "/sys/module/nv_peer_mem"].iter().any(|p| Path::new(p).exists())
}

/// Registers the whole of `region` with `pd`.
pub fn register(pd: &Arc<ProtectionDomain>, region: &Region, memory: BufferMemory) -> Result<Arc<MemoryRegion>> {
    let len = region.bytes().max(1);
    match (region.gpu(), memory) {
        (None, _) => {
            // SAFETY: the range is a live allocation of at least `len`
            // bytes that outlives the registration (its owner drops the
            // memory region first).
            unsafe { pd.reg_mr(region.addr() as usize, len, access()) }.map_err(|e| {
                Error::Runtime(format!(
                    "cannot register {len} bytes of host memory: {} (raise the locked-memory limit: ulimit -l unlimited)",
                    source(&e)
                ))
            })
        }
        (Some(ctx), BufferMemory::CudaDmabuf { gpu }) => {
            let len = len.next_multiple_of(PAGE);
            if !exports_dma_buf(ctx) {
                return Err(Error::Missing(format!(
                    "GPU {gpu} cannot export dma-buf (CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED is 0; it needs the open kernel modules and CUDA 11.7+): register by address (--gpu_reg peermem) with nvidia_peermem loaded"
                )));
            }
            ctx.bind_to_thread().map_err(cuda_err("binding a context"))?;
            // The range is one whole page-aligned allocation of this context.
            let fd = dma_buf(region.addr(), len).map_err(|e| {
                Error::Missing(format!(
                    "GPU {gpu} did not export its memory as a dma-buf ({:?}): register by address (--gpu_reg peermem) with nvidia_peermem loaded",
                    e.0
                ))
            })?;
            // SAFETY: `fd` is the dma-buf of exactly this allocation, which
            // outlives the registration.
            let mr = unsafe { pd.reg_dmabuf_mr(0, len, region.addr(), fd.as_raw_fd(), access()) };
            // Closed once registered; the memory region keeps its own
            // reference to the dma-buf.
            drop(fd);
            mr.map_err(|e| {
                Error::Missing(format!(
                    "the adapter refused GPU {gpu}'s dma-buf (ibv_reg_dmabuf_mr: {}): it needs a kernel and driver with dma-buf support for RDMA",
                    source(&e)
                ))
            })
        }
        (Some(_), _) => {
            if !peermem_loaded() {
                return Err(Error::Missing(
                    "GPU memory by address (perftest's --use_cuda without --use_cuda_dmabuf) needs the nvidia_peermem module (modprobe nvidia_peermem), or register through dma-buf: --use_cuda_dmabuf".into(),
                ));
            }
            // SAFETY: a live GPU allocation of at least `len` bytes that
            // outlives the registration; nvidia_peermem pins it.
            unsafe { pd.reg_mr(region.addr() as usize, len, access()) }.map_err(|e| {
                Error::Missing(format!(
                    "Couldn't allocate MR on GPU memory (ibv_reg_mr: {}): check that nvidia_peermem matches the driver",
                    source(&e)
                ))
            })
        }
    }
}

/// The innermost cause of an error, where sideway wraps the errno.
pub fn source(e: &dyn std::error::Error) -> String {
    let mut inner: &dyn std::error::Error = e;
    while let Some(s) = inner.source() {
        inner = s;
    }
    inner.to_string()
}
