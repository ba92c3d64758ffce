//! gdrcopy mode: the CPU copying to and from GPU memory mapped into user
//! space, timed as gdrcopy's copybw and copylat. As gdrcopy 2.6 does, the
//! mapping is gdrdrv's BAR mapping (through libgdrapi, loaded at run time)
//! where /dev/gdrdrv exists, and otherwise the GPU memory exported as a
//! dma-buf and mmap'ed (which CUDA drivers allow from 13.3); without
//! either the tests are listed as unavailable, with the fix.
//!
//! No machine qbench is checked on has gdrdrv. The gdrdrv path follows
//! gdrcopy 2.x's include/gdrapi.h, checks every return, reads only the
//! first field of gdr_info (`va`, the same in every version), and unmaps
//! and unpins before the GPU memory is freed.

use super::buffer::{Buffer, HostKind};
use super::{Bench, FlowMeta, cpu_latency_row, host_side, row};
use crate::error::{Error, Result};
use crate::gpu::cuda_err;
use crate::record::copy::{Endpoint, LatencySeries, TestRecord};
use cudarc::driver::sys;
use std::ffi::{c_int, c_ulong, c_void};
use std::time::Instant;

/// gdrdrv pins and maps GPU memory in pages of this size.
const GPU_PAGE: u64 = 1 << 16;
/// The largest copy timed: CPU reads through the BAR run at a few hundred
/// MB/s at best.
const MAX_BYTES: u64 = 16 << 20;
/// Bytes a sample (bandwidth) or a size (latency) moves at most, so that
/// slow reads stay short.
const BUDGET: u64 = 64 << 20;

const FIX_DRIVER: &str = "load the gdrdrv module (modprobe gdrdrv, from NVIDIA/gdrcopy)";
const FIX_DMA_BUF: &str = "load the gdrdrv module (modprobe gdrdrv, from NVIDIA/gdrcopy), or use a CUDA driver of 13.3 or later, which lets the CPU map GPU memory's dma-buf";

type GdrT = *mut c_void;

/// gdr_mh_t: a handle passed by value.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct MemHandle {
    h: c_ulong,
}

/// libgdrapi's entry points, and an open connection to gdrdrv.
struct Gdr {
    _lib: libloading::Library,
    g: GdrT,
    close: unsafe extern "C" fn(GdrT) -> c_int,
    pin: unsafe extern "C" fn(GdrT, c_ulong, usize, u64, u32, *mut MemHandle) -> c_int,
    unpin: unsafe extern "C" fn(GdrT, MemHandle) -> c_int,
    map: unsafe extern "C" fn(GdrT, MemHandle, *mut *mut c_void, usize) -> c_int,
    unmap: unsafe extern "C" fn(GdrT, MemHandle, *mut c_void, usize) -> c_int,
    info: unsafe extern "C" fn(GdrT, MemHandle, *mut c_void) -> c_int,
    to_mapping: unsafe extern "C" fn(MemHandle, *mut c_void, *const c_void, usize) -> c_int,
    from_mapping: unsafe extern "C" fn(MemHandle, *mut c_void, *const c_void, usize) -> c_int,
}

/// How GPU memory reaches the CPU's address space.
enum Backend {
    /// gdrdrv's BAR mapping, through libgdrapi.
    Gdrdrv(Gdr),
    /// The driver's dma-buf of the memory, mmap'ed.
    DmaBuf,
}

impl Backend {
    /// gdrdrv where /dev/gdrdrv exists, else dma-buf where GPU 0 exports
    /// it, as gdrcopy 2.6 chooses; or None with `rec` marked unavailable,
    /// why and the fix.
    fn open_for(rec: &mut TestRecord, b: &Bench) -> Option<Backend> {
        if std::path::Path::new("/dev/gdrdrv").exists() {
            return Gdr::load().map(Backend::Gdrdrv).map_err(|(reason, fix)| rec.unavailable(reason, fix)).ok();
        }
        let attr = cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED;
        if b.gpus[0].ctx.attribute(attr).unwrap_or(0) == 0 {
            rec.unavailable("/dev/gdrdrv absent and GPU 0 exports no dma-buf (DMA_BUF_SUPPORTED is 0)", FIX_DRIVER);
            return None;
        }
        rec.description.push_str("; here through the GPU memory's dma-buf, mmap'ed (no /dev/gdrdrv)");
        Some(Backend::DmaBuf)
    }

    /// The mapping of `bytes` of GPU 0's memory; where the dma-buf cannot
    /// be mapped, None with `rec` marked unavailable and the driver's words.
    fn map<'a>(&'a self, rec: &mut TestRecord, b: &Bench, bytes: u64) -> Result<Option<Mapping<'a>>> {
        match (Mapping::new(self, b, bytes), self) {
            (Ok(m), _) => Ok(Some(m)),
            (Err(e), Backend::DmaBuf) => {
                rec.unavailable(e.message(), FIX_DMA_BUF);
                Ok(None)
            }
            (Err(e), Backend::Gdrdrv(_)) => Err(e),
        }
    }
}

impl Gdr {
    /// The library with gdrdrv opened, or why not and the fix.
    fn load() -> std::result::Result<Gdr, (String, String)> {
        // SAFETY: loading gdrcopy's user library runs only its initialisers.
        let lib =
            ["libgdrapi.so.2", "libgdrapi.so"].into_iter().find_map(|n| unsafe { libloading::Library::new(n) }.ok());
        let Some(lib) = lib else {
            return Err((
                "/dev/gdrdrv is present but libgdrapi.so.2 is not on the loader path".into(),
                "install gdrcopy's library (libgdrapi), or add its directory to LD_LIBRARY_PATH".into(),
            ));
        };
        // SAFETY: each symbol's type is the one gdrapi.h declares for its name.
        let (open, mut gdr): (unsafe extern "C" fn() -> GdrT, Gdr) = unsafe {
            (
                symbol(&lib, &["gdr_open"])?,
                Gdr {
                    g: std::ptr::null_mut(),
                    close: symbol(&lib, &["gdr_close"])?,
                    pin: symbol(&lib, &["gdr_pin_buffer"])?,
                    unpin: symbol(&lib, &["gdr_unpin_buffer"])?,
                    map: symbol(&lib, &["gdr_map"])?,
                    unmap: symbol(&lib, &["gdr_unmap"])?,
                    info: symbol(&lib, &["gdr_get_info_v2", "gdr_get_info"])?,
                    to_mapping: symbol(&lib, &["gdr_copy_to_mapping"])?,
                    from_mapping: symbol(&lib, &["gdr_copy_from_mapping"])?,
                    _lib: lib,
                },
            )
        };
        // SAFETY: gdr_open takes no arguments and returns null on failure.
        gdr.g = unsafe { open() };
        if gdr.g.is_null() {
            return Err((
                "gdr_open failed: /dev/gdrdrv exists but could not be opened (permissions, or a gdrdrv older than libgdrapi)".into(),
                "check the permissions of /dev/gdrdrv and reload gdrdrv from the same gdrcopy release as libgdrapi".into(),
            ));
        }
        Ok(gdr)
    }
}

/// The first of `names` that `lib` exports, as a `T`.
///
/// # Safety
/// `T` must be the function type the library gives that symbol.
unsafe fn symbol<T: Copy>(lib: &libloading::Library, names: &[&str]) -> std::result::Result<T, (String, String)> {
    let mut why = String::new();
    for n in names {
        // SAFETY: the caller vouches for `T`.
        match unsafe { lib.get::<T>(*n) } {
            Ok(s) => return Ok(*s),
            Err(e) => why = format!("libgdrapi has no {n} ({e})"),
        }
    }
    Err((why, "install gdrcopy 2.x's libgdrapi".into()))
}

impl Drop for Gdr {
    fn drop(&mut self) {
        if !self.g.is_null() {
            // SAFETY: `g` came from gdr_open and is closed once.
            let _ = unsafe { (self.close)(self.g) };
        }
    }
}

/// GPU memory mapped into this process: pinned and mapped by gdrdrv, or
/// exported as a dma-buf and mmap'ed.
struct Mapping<'a> {
    backend: &'a Backend,
    /// gdrdrv's handle (gdrdrv only).
    mh: MemHandle,
    /// The dma-buf (dma-buf only), closed after the mapping is gone.
    fd: Option<std::os::fd::OwnedFd>,
    va: *mut c_void,
    len: usize,
    /// The CPU address of the first byte of `dev`.
    cpu: *mut c_void,
    /// Freed after the mapping is gone (fields drop after `drop`).
    dev: Buffer,
}

impl<'a> Mapping<'a> {
    fn new(backend: &'a Backend, b: &Bench, bytes: u64) -> Result<Mapping<'a>> {
        let gpu = &b.gpus[0];
        let len = bytes.next_multiple_of(GPU_PAGE);
        let dev = Buffer::device(gpu, 0, len, GPU_PAGE)?;
        let addr = dev.device_addr(gpu)?;
        let one: u32 = 1;
        gpu.ctx.bind_to_thread().map_err(cuda_err("binding a context"))?;
        // SAFETY: `addr` is a live allocation of the bound context; the
        // attribute takes a pointer to an unsigned int. gdrcopy requires it
        // so that cuMemcpy calls on the buffer complete before returning.
        unsafe {
            sys::cuPointerSetAttribute(
                (&one as *const u32).cast(),
                sys::CUpointer_attribute::CU_POINTER_ATTRIBUTE_SYNC_MEMOPS,
                addr,
            )
        }
        .result()
        .map_err(cuda_err("setting SYNC_MEMOPS on the gdrcopy buffer"))?;
        let mut m = Mapping {
            backend,
            mh: MemHandle::default(),
            fd: None,
            va: std::ptr::null_mut(),
            len: len as usize,
            cpu: std::ptr::null_mut(),
            dev,
        };
        match backend {
            Backend::Gdrdrv(gdr) => m.map_gdrdrv(gdr, addr)?,
            Backend::DmaBuf => m.map_dma_buf(&gpu.ctx, addr)?,
        }
        Ok(m)
    }

    /// gdr_pin_buffer, gdr_map and gdr_get_info, as gdrcopy's tests call them.
    fn map_gdrdrv(&mut self, gdr: &Gdr, addr: u64) -> Result<()> {
        let len = self.len;
        // SAFETY: `addr..addr+len` is GPU memory aligned to gdrdrv's page;
        // `mh` is a valid out-pointer.
        let rc = unsafe { (gdr.pin)(gdr.g, addr as c_ulong, len, 0, 0, &mut self.mh) };
        if rc != 0 {
            return Err(Error::Runtime(format!("gdr_pin_buffer of {len} bytes on GPU 0 failed ({rc})")));
        }
        // SAFETY: `mh` is pinned; `va` is a valid out-pointer.
        let rc = unsafe { (gdr.map)(gdr.g, self.mh, &mut self.va, len) };
        if rc != 0 || self.va.is_null() {
            return Err(Error::Runtime(format!("gdr_map of {len} bytes failed ({rc})")));
        }
        // gdr_info_v2 is 48 bytes; `va`, its first field, is all that is read.
        let mut info = [0u64; 16];
        // SAFETY: `info` is larger than any version of gdr_info.
        let rc = unsafe { (gdr.info)(gdr.g, self.mh, info.as_mut_ptr().cast()) };
        if rc != 0 || info[0] > addr {
            return Err(Error::Runtime(format!("gdr_get_info failed ({rc}, va {:#x} for {addr:#x})", info[0])));
        }
        // SAFETY: the mapping starts at GPU address info[0] and covers `addr`.
        self.cpu = unsafe { self.va.cast::<u8>().add((addr - info[0]) as usize) }.cast();
        Ok(())
    }

    /// gdrcopy 2.6's dma-buf backend: the range exported as a dma-buf,
    /// mapped shared, read and write.
    fn map_dma_buf(&mut self, ctx: &cudarc::driver::CudaContext, addr: u64) -> Result<()> {
        use std::os::fd::AsRawFd;
        let fd = crate::gpu::export_dma_buf(ctx, addr, self.len)?;
        // SAFETY: a fresh shared mapping of the whole dma-buf; the kernel
        // picks the address and the mapping is unmapped once in drop.
        let va = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                self.len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if va == libc::MAP_FAILED {
            let e = std::io::Error::last_os_error();
            return Err(Error::Runtime(format!(
                "the CPU cannot map GPU 0's dma-buf (mmap: {e}; CUDA {}): gdrcopy's dma-buf backend needs CUDA 13.3 or later and no gdrdrv is loaded",
                driver_version()
            )));
        }
        (self.fd, self.va, self.cpu) = (Some(fd), va, va);
        Ok(())
    }

    fn write_gpu(&self, host: &Buffer, bytes: u64) -> Result<()> {
        let src = host.host_ptr().ok_or_else(|| Error::Runtime("internal: no host buffer".into()))?;
        let rc = match self.backend {
            // SAFETY: both ends hold at least `bytes` bytes; nothing else uses them now.
            Backend::Gdrdrv(gdr) => unsafe {
                (gdr.to_mapping)(self.mh, self.cpu, src.cast_const().cast(), bytes as usize)
            },
            Backend::DmaBuf => {
                // SAFETY: as above; the mapping is write-combined device memory.
                unsafe { std::ptr::copy_nonoverlapping(src.cast_const(), self.cpu.cast::<u8>(), bytes as usize) };
                0
            }
        };
        if rc != 0 { Err(Error::Runtime(format!("gdr_copy_to_mapping failed ({rc})"))) } else { Ok(()) }
    }

    fn read_gpu(&self, host: &Buffer, bytes: u64) -> Result<()> {
        let dst = host.host_ptr().ok_or_else(|| Error::Runtime("internal: no host buffer".into()))?;
        let rc = match self.backend {
            // SAFETY: both ends hold at least `bytes` bytes; nothing else uses them now.
            Backend::Gdrdrv(gdr) => unsafe {
                (gdr.from_mapping)(self.mh, dst.cast(), self.cpu.cast_const(), bytes as usize)
            },
            Backend::DmaBuf => {
                // SAFETY: as above.
                unsafe { std::ptr::copy_nonoverlapping(self.cpu.cast_const().cast::<u8>(), dst, bytes as usize) };
                0
            }
        };
        if rc != 0 { Err(Error::Runtime(format!("gdr_copy_from_mapping failed ({rc})"))) } else { Ok(()) }
    }
}

impl Drop for Mapping<'_> {
    fn drop(&mut self) {
        match self.backend {
            // SAFETY: unmapped and unpinned once, before `dev` is freed.
            Backend::Gdrdrv(gdr) => unsafe {
                if !self.va.is_null() {
                    let _ = (gdr.unmap)(gdr.g, self.mh, self.va, self.len);
                }
                let _ = (gdr.unpin)(gdr.g, self.mh);
            },
            Backend::DmaBuf => {
                if !self.va.is_null() {
                    // SAFETY: the mapping made in map_dma_buf, unmapped once;
                    // the dma-buf closes after it, `dev` after both.
                    let _ = unsafe { libc::munmap(self.va, self.len) };
                }
            }
        }
    }
}

/// The CUDA driver's version, as "13.0".
fn driver_version() -> String {
    let mut v: std::ffi::c_int = 0;
    // SAFETY: cuDriverGetVersion writes one int through a valid pointer.
    match unsafe { sys::cuDriverGetVersion(&mut v) }.result() {
        Ok(()) => format!("{}.{}", v / 1000, v % 1000 / 10),
        Err(_) => "of unknown version".into(),
    }
}

/// One direction through the mapping: which way, its seed.
#[derive(Clone, Copy)]
struct Way {
    to_gpu: bool,
    seed: u64,
}

impl Way {
    fn both(b: &Bench) -> [Way; 2] {
        let s = b.config().seed;
        [
            Way { to_gpu: true, seed: crate::pattern::mix(s ^ 0x6d72) },
            Way { to_gpu: false, seed: crate::pattern::mix(s ^ 0x6d73) },
        ]
    }

    fn name(self) -> &'static str {
        if self.to_gpu { "gdr_copy_to_mapping" } else { "gdr_copy_from_mapping" }
    }

    fn meta(self) -> FlowMeta {
        let (src, dst, direction) = if self.to_gpu {
            (Endpoint::Host, Endpoint::Gpu(0), "h2d")
        } else {
            (Endpoint::Gpu(0), Endpoint::Host, "d2h")
        };
        FlowMeta {
            src,
            dst,
            direction,
            issuer: 0,
            engine: "cpu",
            host_memory: Some(HostKind::Pageable.name()),
            factor: 1,
        }
    }

    /// Seeds the source and poisons the destination of `bytes` bytes.
    fn prepare(self, b: &Bench, m: &mut Mapping<'_>, host: &mut Buffer, bytes: u64) -> Result<()> {
        b.fill(&mut m.dev, bytes, self.seed, self.to_gpu)?;
        b.fill(host, bytes, self.seed, !self.to_gpu)?;
        b.sync_gpus()
    }

    fn copy(self, m: &Mapping, host: &Buffer, bytes: u64) -> Result<()> {
        if self.to_gpu { m.write_gpu(host, bytes) } else { m.read_gpu(host, bytes) }
    }

    fn verify(self, b: &Bench, m: &mut Mapping, host: &mut Buffer, bytes: u64) -> Result<u64> {
        // The CPU's last writes through the write-combined BAR mapping reach
        // the GPU before its check kernel reads them.
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        b.verify(if self.to_gpu { &mut m.dev } else { host }, bytes, self.seed, 0)
    }
}

/// Times `n` copies by the host clock.
fn timed(way: Way, m: &Mapping, host: &Buffer, bytes: u64, n: u32) -> Result<f64> {
    let t0 = Instant::now();
    for _ in 0..n {
        way.copy(m, host, bytes)?;
    }
    Ok(t0.elapsed().as_secs_f64())
}

/// copybw: the sweep's sizes up to 16 MiB, each way in turn, with at most
/// 64 MiB moved per sample (fewer than -n copies at the largest sizes).
pub fn bandwidth(b: &mut Bench, rec: &mut TestRecord) -> Result<()> {
    let Some(backend) = Backend::open_for(rec, b) else { return Ok(()) };
    let (sizes, out): (Vec<u64>, Vec<u64>) = b.plan.sizes.iter().partition(|&&s| s <= MAX_BYTES);
    rec.sizes_left_out = out;
    let Some(&max) = sizes.last() else {
        rec.unavailable("every size of the sweep is above 16 MiB, the largest gdrcopy copy timed", "lower -b");
        return Ok(());
    };
    let bound = b.bind_host(0);
    let Some(mut m) = backend.map(rec, b, max)? else { return Ok(()) };
    let mut host = Buffer::pageable(max)?;
    let cfg = b.config().clone();
    for way in Way::both(b) {
        for &size in &sizes {
            let n = cfg.iters.min((BUDGET / size).max(1) as u32);
            way.prepare(b, &mut m, &mut host, size)?;
            timed(way, &m, &host, size, cfg.warmup_iters.min(n))?;
            let samples =
                (0..cfg.samples).map(|_| Ok(vec![timed(way, &m, &host, size, n)?])).collect::<Result<Vec<_>>>()?;
            let wrong = way.verify(b, &mut m, &mut host, size)?;
            rec.rows.push(row(size, &format!("GPU 0 {}", way.name()), &[way.meta()], &samples, n, &[wrong]));
        }
    }
    host_side(rec, 0, bound.release(), [&host]);
    Ok(())
}

/// copylat: 1 B to 16 MiB, one copy at a time, each way in turn; at most
/// 64 MiB moved per size (at least 10 copies).
pub fn latency(b: &mut Bench, rec: &mut TestRecord) -> Result<()> {
    let Some(backend) = Backend::open_for(rec, b) else { return Ok(()) };
    let cfg = b.config().clone();
    let max = cfg.lat_sizes.iter().copied().max().unwrap_or(1);
    let bound = b.bind_host(0);
    let Some(mut m) = backend.map(rec, b, max)? else { return Ok(()) };
    let mut host = Buffer::pageable(max)?;
    for way in Way::both(b) {
        let mut rows = Vec::new();
        for &size in &cfg.lat_sizes {
            let n = (BUDGET / size).clamp(10, cfg.lat_iters.max(10) as u64);
            way.prepare(b, &mut m, &mut host, size)?;
            timed(way, &m, &host, size, cfg.warmup_iters.min(n as u32))?;
            let seconds = (0..n).map(|_| timed(way, &m, &host, size, 1)).collect::<Result<Vec<_>>>()?;
            rows.push(cpu_latency_row(size, &seconds, way.verify(b, &mut m, &mut host, size)?));
        }
        rec.latency.push(LatencySeries { label: way.name().into(), placement: "GPU 0".into(), rows });
    }
    host_side(rec, 0, bound.release(), [&host]);
    Ok(())
}
