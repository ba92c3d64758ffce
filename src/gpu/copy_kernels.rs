//! The kernels of kernels/copy.cu (`qbench copy`'s) in one GPU's context,
//! each launched by a safe function that pushes its argument list: the
//! copy by SMs, the fill and the check of the seeded data, the hold kernel
//! that keeps a stream waiting on a host flag, and the pointer chase.
//! Device memory is given by address, each range inside a live buffer of
//! the caller's, as the copies of `copy.rs` take it.

use super::{Gpu, cuda_err, kernels};
use crate::error::{Error, Result};
use cudarc::driver::{CudaFunction, CudaStream, LaunchConfig, PushKernelArg};

/// How long the hold kernel waits for the host before giving up.
pub const HOLD_TIMEOUT_NS: u64 = 2_000_000_000;

/// The kernels of kernels/copy.cu in one GPU's context.
pub struct CopyKernels {
    copy: CudaFunction,
    fill: CudaFunction,
    check: CudaFunction,
    hold: CudaFunction,
    chase: CudaFunction,
    /// Blocks of the copy kernel the GPU holds resident at once.
    resident: u64,
}

impl CopyKernels {
    pub fn load(gpu: &Gpu) -> Result<CopyKernels> {
        let names = ["qb_copy", "qb_fill", "qb_check", "qb_hold", "qb_chase"].map(String::from);
        let mut f = kernels::load(gpu, "kernels/copy.cu", include_str!("../../kernels/copy.cu"), &names)?;
        let mut take = |n: &str| f.remove(n).ok_or_else(|| Error::Runtime(format!("kernel {n} missing from copy.cu")));
        Ok(CopyKernels {
            copy: take("qb_copy")?,
            fill: take("qb_fill")?,
            check: take("qb_check")?,
            hold: take("qb_hold")?,
            chase: take("qb_chase")?,
            resident: kernels::resident_blocks(gpu)?,
        })
    }

    /// dst[0..bytes) = src[0..bytes) on `stream`; both addresses 16-byte
    /// aligned; on 1/`share` of the GPU's resident blocks when `share` > 1
    /// (copies on other streams of the GPU beside it), else a block a tile.
    pub fn copy(&self, gpu: &Gpu, stream: &CudaStream, dst: u64, src: u64, bytes: u64, share: u32) -> Result<()> {
        let vectors = bytes.div_ceil(16);
        let launch = if share > 1 {
            kernels::streaming_within(gpu, vectors, self.resident / share as u64)
        } else {
            kernels::streaming(gpu, vectors)
        };
        let mut l = stream.launch_builder(&self.copy);
        l.arg(&dst).arg(&src).arg(&bytes);
        // SAFETY: the arguments match qb_copy; both addresses reach at least
        // `bytes` bytes from `gpu` (the flow's buffers, sized for them).
        unsafe { l.launch(launch) }
            .map(|_| ())
            .map_err(cuda_err(format!("launching the copy kernel on GPU {}", gpu.ordinal)))
    }

    /// Writes the seeded data (or its complement) at `addr`, on the GPU's own stream.
    pub fn fill(&self, gpu: &Gpu, addr: u64, bytes: u64, seed: u64, invert: bool) -> Result<()> {
        let invert = invert as i32;
        let mut l = gpu.stream.launch_builder(&self.fill);
        l.arg(&addr).arg(&bytes).arg(&seed).arg(&invert);
        // SAFETY: the arguments match qb_fill; `addr` reaches `bytes` bytes from this GPU.
        unsafe { l.launch(kernels::grid(gpu, bytes.div_ceil(8))) }
            .map(|_| ())
            .map_err(cuda_err(format!("launching the fill kernel on GPU {}", gpu.ordinal)))
    }

    /// Adds the wrong words at `addr` to the u64 at `counter`, on the GPU's own stream.
    pub fn check(&self, gpu: &Gpu, addr: u64, bytes: u64, seed: u64, counter: u64) -> Result<()> {
        let mut l = gpu.stream.launch_builder(&self.check);
        l.arg(&addr).arg(&bytes).arg(&seed).arg(&counter);
        // SAFETY: the arguments match qb_check; `addr` reaches `bytes` bytes
        // and `counter` one u64 from this GPU.
        unsafe { l.launch(kernels::grid(gpu, bytes.div_ceil(8))) }
            .map(|_| ())
            .map_err(cuda_err(format!("launching the check kernel on GPU {}", gpu.ordinal)))
    }

    /// Follows `loads` links of the chain at `start` on `stream`, one
    /// thread, and writes the address it ended at to the u64 at `end`.
    pub fn chase(&self, stream: &CudaStream, start: u64, loads: u64, end: u64) -> Result<()> {
        let mut l = stream.launch_builder(&self.chase);
        l.arg(&start).arg(&loads).arg(&end);
        let one = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (1, 1, 1), shared_mem_bytes: 0 };
        // SAFETY: the arguments match qb_chase; every link of the chain is
        // the address, reachable from the stream's GPU, of another link of
        // the same live buffer, and `end` is one u64 on that GPU.
        unsafe { l.launch(one) }.map(|_| ()).map_err(cuda_err("launching the pointer-chase kernel"))
    }

    /// Holds `stream` until the gate at `flag` opens.
    pub fn hold(&self, stream: &CudaStream, flag: u64) -> Result<()> {
        let timeout = HOLD_TIMEOUT_NS;
        let mut l = stream.launch_builder(&self.hold);
        l.arg(&flag).arg(&timeout);
        let one = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (1, 1, 1), shared_mem_bytes: 0 };
        // SAFETY: the arguments match qb_hold; `flag` is the gate's two
        // mapped u32 words, reachable from the stream's GPU.
        unsafe { l.launch(one) }.map(|_| ()).map_err(cuda_err("launching the hold kernel"))
    }
}
