//! GPU memory in the CPU's address space, as gdrcopy 2.6 puts it there:
//! gdrdrv's BAR mapping through libgdrapi (`sys.rs`) where /dev/gdrdrv
//! exists, otherwise the memory exported as a dma-buf and mmap'ed (which
//! CUDA drivers allow from 13.3). A [`Mapping`] owns the GPU memory it
//! maps: it is unmapped (and unpinned, and its dma-buf closed) before that
//! memory is freed, and the CPU's copies through it stay inside it.
//!
//! No machine qbench is checked on has gdrdrv. The gdrdrv path follows
//! gdrcopy 2.x's include/gdrapi.h, checks every return, reads only the
//! first field of gdr_info (`va`, the same in every version), and unpins
//! only what it pinned.

pub mod sys;

use super::{DeviceBuffer, cuda_err, driver, memory};
use crate::error::{Error, Result};
use std::ffi::{c_ulong, c_void};
use std::os::fd::{AsRawFd, OwnedFd};
use std::rc::Rc;

/// gdrdrv pins and maps GPU memory in pages of this size.
pub const GPU_PAGE: u64 = 1 << 16;

/// An open connection to gdrdrv through libgdrapi, closed on drop.
pub struct Gdr {
    api: sys::Api,
    g: sys::Handle,
}

impl Gdr {
    /// The library with gdrdrv opened, or why not and the fix.
    pub fn open() -> std::result::Result<Gdr, (String, String)> {
        let api = sys::Api::load()?;
        // SAFETY: gdr_open takes no arguments and returns null on failure.
        let g = unsafe { (api.open)() };
        if g.is_null() {
            return Err((
                "gdr_open failed: /dev/gdrdrv exists but could not be opened (permissions, or a gdrdrv older than libgdrapi)".into(),
                "check the permissions of /dev/gdrdrv and reload gdrdrv from the same gdrcopy release as libgdrapi".into(),
            ));
        }
        Ok(Gdr { api, g })
    }
}

impl Drop for Gdr {
    fn drop(&mut self) {
        // SAFETY: `g` came from gdr_open and is closed once, after every
        // mapping made through it (each holds this value).
        let _ = unsafe { (self.api.close)(self.g) };
    }
}

/// How GPU memory reaches the CPU's address space.
#[derive(Clone)]
pub enum Backend {
    /// gdrdrv's BAR mapping, through libgdrapi.
    Gdrdrv(Rc<Gdr>),
    /// The driver's dma-buf of the memory, mmap'ed.
    DmaBuf,
}

/// What a mapping holds besides the memory, by backend.
enum Held {
    /// The pinned range, once pinned.
    Gdrdrv { gdr: Rc<Gdr>, mh: Option<sys::MemHandle> },
    /// The dma-buf, once exported; closed after the mapping is gone.
    DmaBuf { fd: Option<OwnedFd> },
}

/// `len` bytes of GPU memory from device address `addr`, mapped into this
/// process, with the allocation that holds them.
pub struct Mapping {
    held: Held,
    /// The start of the mapping (gdrdrv maps whole GPU pages).
    va: *mut c_void,
    addr: u64,
    len: usize,
    /// The CPU address of the byte at `addr`.
    cpu: *mut c_void,
    /// Freed after the mapping is gone (fields drop after `drop`).
    mem: DeviceBuffer,
}

impl Mapping {
    /// Maps `len` bytes of `mem` from its address `addr` (a multiple of
    /// [`GPU_PAGE`], `len` too) through `backend`, with SYNC_MEMOPS set on
    /// the allocation as gdrcopy requires, so that cuMemcpy calls on it
    /// complete before returning. On error the memory is freed.
    pub fn new(backend: &Backend, mem: DeviceBuffer, addr: u64, len: usize) -> Result<Mapping> {
        if !mem.holds(addr, len) {
            return Err(Error::Runtime(format!("internal: {len} bytes at {addr:#x} mapped outside their buffer")));
        }
        mem.context().bind_to_thread().map_err(cuda_err("binding a context"))?;
        memory::sync_memops(addr).map_err(cuda_err("setting SYNC_MEMOPS on the gdrcopy buffer"))?;
        let held = match backend {
            Backend::Gdrdrv(gdr) => Held::Gdrdrv { gdr: gdr.clone(), mh: None },
            Backend::DmaBuf => Held::DmaBuf { fd: None },
        };
        let mut m = Mapping { held, va: std::ptr::null_mut(), addr, len, cpu: std::ptr::null_mut(), mem };
        match backend {
            Backend::Gdrdrv(gdr) => m.map_gdrdrv(gdr)?,
            Backend::DmaBuf => m.map_dma_buf()?,
        }
        Ok(m)
    }

    /// The device address of the mapped memory.
    pub fn addr(&self) -> u64 {
        self.addr
    }

    /// gdr_pin_buffer, gdr_map and gdr_get_info, as gdrcopy's tests call them.
    fn map_gdrdrv(&mut self, gdr: &Gdr) -> Result<()> {
        let (addr, len, ordinal) = (self.addr, self.len, self.mem.context().ordinal());
        let mut mh = sys::MemHandle::default();
        // SAFETY: `addr..addr+len` is GPU memory of `mem` aligned to
        // gdrdrv's page; `mh` is a valid out-pointer.
        let rc = unsafe { (gdr.api.pin_buffer)(gdr.g, addr as c_ulong, len, 0, 0, &mut mh) };
        if rc != 0 {
            return Err(Error::Runtime(format!("gdr_pin_buffer of {len} bytes on GPU {ordinal} failed ({rc})")));
        }
        if let Held::Gdrdrv { mh: held, .. } = &mut self.held {
            *held = Some(mh);
        }
        // SAFETY: `mh` is pinned; `va` is a valid out-pointer.
        let rc = unsafe { (gdr.api.map)(gdr.g, mh, &mut self.va, len) };
        if rc != 0 || self.va.is_null() {
            return Err(Error::Runtime(format!("gdr_map of {len} bytes failed ({rc})")));
        }
        // gdr_info_v2 is 48 bytes; `va`, its first field, is all that is read.
        let mut info = [0u64; 16];
        // SAFETY: `info` is larger than any version of gdr_info.
        let rc = unsafe { (gdr.api.get_info)(gdr.g, mh, info.as_mut_ptr().cast()) };
        if rc != 0 || info[0] > addr {
            return Err(Error::Runtime(format!("gdr_get_info failed ({rc}, va {:#x} for {addr:#x})", info[0])));
        }
        // SAFETY: the mapping starts at GPU address info[0] and covers `addr`.
        self.cpu = unsafe { self.va.cast::<u8>().add((addr - info[0]) as usize) }.cast();
        Ok(())
    }

    /// gdrcopy 2.6's dma-buf backend: the range exported as a dma-buf,
    /// mapped shared, read and write.
    fn map_dma_buf(&mut self) -> Result<()> {
        let fd = memory::export_dma_buf(self.mem.context(), self.addr, self.len)?;
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
            let cuda = driver::version().map_or_else(|_| "of unknown version".into(), driver::version_text);
            return Err(Error::Runtime(format!(
                "the CPU cannot map GPU {}'s dma-buf (mmap: {e}; CUDA {cuda}): gdrcopy's dma-buf backend needs CUDA 13.3 or later and no gdrdrv is loaded",
                self.mem.context().ordinal()
            )));
        }
        self.held = Held::DmaBuf { fd: Some(fd) };
        (self.va, self.cpu) = (va, va);
        Ok(())
    }

    #[inline]
    fn fits(&self, len: usize) -> Result<()> {
        match len <= self.len {
            true => Ok(()),
            false => Err(Error::Runtime(format!("internal: {len} bytes copied through a {}-byte mapping", self.len))),
        }
    }

    /// Copies `src` to the start of the mapped GPU memory, by the CPU
    /// (gdr_copy_to_mapping, or a plain copy into the dma-buf's mapping).
    #[inline]
    pub fn copy_to(&self, src: &[u8]) -> Result<()> {
        self.fits(src.len())?;
        let rc = match &self.held {
            // SAFETY: `cpu` maps at least `src.len()` bytes (checked above)
            // of pinned memory; `src` is a live slice.
            Held::Gdrdrv { gdr, mh: Some(mh) } => unsafe {
                (gdr.api.copy_to_mapping)(*mh, self.cpu, src.as_ptr().cast(), src.len())
            },
            Held::DmaBuf { fd: Some(_) } => {
                // SAFETY: as above; the mapping is write-combined device
                // memory that no Rust reference covers.
                unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), self.cpu.cast::<u8>(), src.len()) };
                0
            }
            _ => return Err(Error::Runtime("internal: a copy through memory that is not mapped".into())),
        };
        if rc != 0 { Err(Error::Runtime(format!("gdr_copy_to_mapping failed ({rc})"))) } else { Ok(()) }
    }

    /// Copies the start of the mapped GPU memory into `dst`, by the CPU
    /// (gdr_copy_from_mapping, or a plain copy out of the dma-buf's mapping).
    #[inline]
    pub fn copy_from(&self, dst: &mut [u8]) -> Result<()> {
        self.fits(dst.len())?;
        let rc = match &self.held {
            // SAFETY: `cpu` maps at least `dst.len()` bytes (checked above)
            // of pinned memory; `dst` is a live slice.
            Held::Gdrdrv { gdr, mh: Some(mh) } => unsafe {
                (gdr.api.copy_from_mapping)(*mh, dst.as_mut_ptr().cast(), self.cpu.cast_const(), dst.len())
            },
            Held::DmaBuf { fd: Some(_) } => {
                // SAFETY: as above.
                unsafe {
                    std::ptr::copy_nonoverlapping(self.cpu.cast_const().cast::<u8>(), dst.as_mut_ptr(), dst.len())
                };
                0
            }
            _ => return Err(Error::Runtime("internal: a copy through memory that is not mapped".into())),
        };
        if rc != 0 { Err(Error::Runtime(format!("gdr_copy_from_mapping failed ({rc})"))) } else { Ok(()) }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        match &self.held {
            Held::Gdrdrv { gdr, mh } => {
                if let Some(mh) = *mh {
                    if !self.va.is_null() {
                        // SAFETY: the mapping made by gdr_map, unmapped once.
                        let _ = unsafe { (gdr.api.unmap)(gdr.g, mh, self.va, self.len) };
                    }
                    // SAFETY: the range pinned by gdr_pin_buffer, unpinned
                    // once, before `mem` is freed.
                    let _ = unsafe { (gdr.api.unpin_buffer)(gdr.g, mh) };
                }
            }
            Held::DmaBuf { .. } => {
                if !self.va.is_null() {
                    // SAFETY: the mapping made in map_dma_buf, unmapped once;
                    // the dma-buf closes after it, `mem` after both.
                    let _ = unsafe { libc::munmap(self.va, self.len) };
                }
            }
        }
    }
}
