//! The driver's copies, one function per operation: synchronous copies
//! between host slices and device memory, and copies queued on a stream
//! (host to device, device to host, within a GPU, between GPUs). Device
//! memory is given by address, as everywhere in qbench: the caller passes a
//! range inside a live allocation of the bound context (or of the contexts
//! named) and keeps it alive until the stream has passed the copy. Host
//! memory is a slice where the copy ends before the call returns, and an
//! address only in the two queued copies, which are `unsafe` for it.
//! Errors are the driver's, for each caller to put in its own words.

use cudarc::driver::{CudaContext, CudaStream, DriverError, result, sys};

/// Copies `src` to device memory at `dst`, returning when it has landed.
pub fn to_device(dst: u64, src: &[u8]) -> Result<(), DriverError> {
    // SAFETY: the source is a live slice read during the call alone; the
    // destination is the caller's range (module doc).
    unsafe { result::memcpy_htod_sync(dst, src) }
}

/// Copies device memory at `src` into `dst`, returning when it has landed.
pub fn from_device(dst: &mut [u8], src: u64) -> Result<(), DriverError> {
    // SAFETY: the destination is a live slice written during the call
    // alone; the source is the caller's range (module doc).
    unsafe { result::memcpy_dtoh_sync(dst, src) }
}

/// Queues a copy of `src` (pageable memory, which the driver stages before
/// the call returns) to device memory at `dst` on `stream`, so that what
/// the stream runs next sees it.
pub fn to_device_queued(dst: u64, src: &[u8], stream: &CudaStream) -> Result<(), DriverError> {
    // SAFETY: a pageable source is staged before the call returns, so the
    // slice need not outlive it; the destination is the caller's range.
    unsafe { result::memcpy_htod_async(dst, src, stream.cu_stream()) }
}

/// Queues a copy of `len` bytes from host memory at `src` to device memory
/// at `dst` on `stream` (cuMemcpyHtoDAsync).
///
/// # Safety
/// `src..src+len` is host memory that stays allocated, and unwritten by
/// anything unordered with the stream, until the stream has passed the copy.
#[inline]
pub unsafe fn host_to_device(dst: u64, src: *const u8, len: usize, stream: &CudaStream) -> Result<(), DriverError> {
    // SAFETY: the caller keeps the host range; the device range is theirs too.
    unsafe { sys::cuMemcpyHtoDAsync_v2(dst, src.cast(), len, stream.cu_stream()) }.result()
}

/// Queues a copy of `len` bytes from device memory at `src` to host memory
/// at `dst` on `stream` (cuMemcpyDtoHAsync).
///
/// # Safety
/// `dst..dst+len` is host memory that stays allocated, and untouched by
/// anything unordered with the stream, until the stream has passed the copy.
#[inline]
pub unsafe fn device_to_host(dst: *mut u8, src: u64, len: usize, stream: &CudaStream) -> Result<(), DriverError> {
    // SAFETY: the caller keeps the host range; the device range is theirs too.
    unsafe { sys::cuMemcpyDtoHAsync_v2(dst.cast(), src, len, stream.cu_stream()) }.result()
}

/// Queues a copy of `len` bytes within one GPU's memory on `stream` (cuMemcpyDtoDAsync).
#[inline]
pub fn within_device(dst: u64, src: u64, len: usize, stream: &CudaStream) -> Result<(), DriverError> {
    // SAFETY: both ranges are the caller's (module doc).
    unsafe { result::memcpy_dtod_async(dst, src, len, stream.cu_stream()) }
}

/// Queues a copy of `len` bytes between two GPUs' memory, given by their
/// unified addresses (peer access on), on `stream` (cuMemcpyAsync).
#[inline]
pub fn between_devices(dst: u64, src: u64, len: usize, stream: &CudaStream) -> Result<(), DriverError> {
    // SAFETY: both ranges are the caller's (module doc).
    unsafe { sys::cuMemcpyAsync(dst, src, len, stream.cu_stream()) }.result()
}

/// Queues a copy of `len` bytes from `src` of `src_ctx`'s GPU to `dst` of
/// `dst_ctx`'s on `stream` (cuMemcpyPeerAsync).
pub fn peer(
    dst_ctx: &CudaContext,
    dst: u64,
    src_ctx: &CudaContext,
    src: u64,
    len: usize,
    stream: &CudaStream,
) -> Result<(), DriverError> {
    // SAFETY: both ranges are the caller's, each in its context's memory
    // (module doc); the contexts are live.
    unsafe { result::memcpy_peer_async(dst_ctx.cu_ctx(), dst, src_ctx.cu_ctx(), src, len, stream.cu_stream()) }
}
