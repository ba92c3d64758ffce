//! gdrcopy mode: the CPU copying to and from GPU memory through the BAR
//! mapping that gdrdrv gives user space, timed as gdrcopy's copybw and
//! copylat. libgdrapi is loaded at run time; without /dev/gdrdrv or the
//! library the tests are listed as unavailable, with the fix.
//!
//! The 2xH200 machine qbench is checked on has no gdrdrv, so this path has
//! not run on hardware. It follows gdrcopy 2.x's include/gdrapi.h, checks
//! every return, reads only the first field of gdr_info (`va`, the same in
//! every version), and unmaps and unpins before the GPU memory is freed.

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

impl Gdr {
    /// The library, or None with `rec` marked unavailable, why and the fix.
    fn open_for(rec: &mut TestRecord) -> Option<Gdr> {
        Gdr::load().map_err(|(reason, fix)| rec.unavailable(reason, fix)).ok()
    }

    /// The library with gdrdrv opened, or why not and the fix.
    fn load() -> std::result::Result<Gdr, (String, String)> {
        if !std::path::Path::new("/dev/gdrdrv").exists() {
            return Err(("/dev/gdrdrv absent".into(), FIX_DRIVER.into()));
        }
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

/// GPU memory pinned by gdrdrv and mapped into this process.
struct Mapping<'a> {
    gdr: &'a Gdr,
    mh: MemHandle,
    va: *mut c_void,
    len: usize,
    /// The CPU address of the first byte of `dev`.
    cpu: *mut c_void,
    /// Freed after the mapping is gone (fields drop after `drop`).
    dev: Buffer,
}

impl<'a> Mapping<'a> {
    fn new(gdr: &'a Gdr, b: &Bench, bytes: u64) -> Result<Mapping<'a>> {
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
        let mut mh = MemHandle::default();
        // SAFETY: `addr..addr+len` is GPU memory aligned to gdrdrv's page;
        // `mh` is a valid out-pointer.
        let rc = unsafe { (gdr.pin)(gdr.g, addr as c_ulong, len as usize, 0, 0, &mut mh) };
        if rc != 0 {
            return Err(Error::Runtime(format!("gdr_pin_buffer of {len} bytes on GPU 0 failed ({rc})")));
        }
        let mut m = Mapping { gdr, mh, va: std::ptr::null_mut(), len: len as usize, cpu: std::ptr::null_mut(), dev };
        // SAFETY: `mh` is pinned; `va` is a valid out-pointer.
        let rc = unsafe { (gdr.map)(gdr.g, mh, &mut m.va, m.len) };
        if rc != 0 || m.va.is_null() {
            return Err(Error::Runtime(format!("gdr_map of {len} bytes failed ({rc})")));
        }
        // gdr_info_v2 is 48 bytes; `va`, its first field, is all that is read.
        let mut info = [0u64; 16];
        // SAFETY: `info` is larger than any version of gdr_info.
        let rc = unsafe { (gdr.info)(gdr.g, mh, info.as_mut_ptr().cast()) };
        if rc != 0 || info[0] > addr {
            return Err(Error::Runtime(format!("gdr_get_info failed ({rc}, va {:#x} for {addr:#x})", info[0])));
        }
        // SAFETY: the mapping starts at GPU address info[0] and covers `addr`.
        m.cpu = unsafe { m.va.cast::<u8>().add((addr - info[0]) as usize) }.cast();
        Ok(m)
    }

    fn write_gpu(&self, host: &Buffer, bytes: u64) -> Result<()> {
        let src = host.host_ptr().ok_or_else(|| Error::Runtime("internal: no host buffer".into()))?;
        // SAFETY: both ends hold at least `bytes` bytes; nothing else uses them now.
        let rc = unsafe { (self.gdr.to_mapping)(self.mh, self.cpu, src.cast_const().cast(), bytes as usize) };
        if rc != 0 { Err(Error::Runtime(format!("gdr_copy_to_mapping failed ({rc})"))) } else { Ok(()) }
    }

    fn read_gpu(&self, host: &Buffer, bytes: u64) -> Result<()> {
        let dst = host.host_ptr().ok_or_else(|| Error::Runtime("internal: no host buffer".into()))?;
        // SAFETY: both ends hold at least `bytes` bytes; nothing else uses them now.
        let rc = unsafe { (self.gdr.from_mapping)(self.mh, dst.cast(), self.cpu.cast_const(), bytes as usize) };
        if rc != 0 { Err(Error::Runtime(format!("gdr_copy_from_mapping failed ({rc})"))) } else { Ok(()) }
    }
}

impl Drop for Mapping<'_> {
    fn drop(&mut self) {
        // SAFETY: unmapped and unpinned once, before `dev` is freed.
        unsafe {
            if !self.va.is_null() {
                let _ = (self.gdr.unmap)(self.gdr.g, self.mh, self.va, self.len);
            }
            let _ = (self.gdr.unpin)(self.gdr.g, self.mh);
        }
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
    fn prepare(self, b: &Bench, m: &mut Mapping, host: &mut Buffer, bytes: u64) -> Result<()> {
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
    let Some(gdr) = Gdr::open_for(rec) else { return Ok(()) };
    let (sizes, out): (Vec<u64>, Vec<u64>) = b.plan.sizes.iter().partition(|&&s| s <= MAX_BYTES);
    rec.sizes_left_out = out;
    let Some(&max) = sizes.last() else {
        rec.unavailable("every size of the sweep is above 16 MiB, the largest gdrcopy copy timed", "lower -b");
        return Ok(());
    };
    let bound = b.bind_host(0);
    let mut m = Mapping::new(&gdr, b, max)?;
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
    let Some(gdr) = Gdr::open_for(rec) else { return Ok(()) };
    let cfg = b.config().clone();
    let max = cfg.lat_sizes.iter().copied().max().unwrap_or(1);
    let bound = b.bind_host(0);
    let mut m = Mapping::new(&gdr, b, max)?;
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
