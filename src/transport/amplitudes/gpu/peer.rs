//! The peer-access wires between GPUs of one process: `p2p`, an SM kernel
//! on each GPU writing into its partner's memory over NVLink or PCIe, and
//! `p2p-ce`, cuMemcpyPeerAsync by the copy engines; both directions at once.

use super::{GpuRegister, GpuWire, go};
use crate::error::Result;
use crate::gpu::kernels::streaming;
use crate::gpu::{self, cuda_err};
use crate::transport::amplitudes::{Seconds, WireImpl};
use cudarc::driver::PushKernelArg;

pub struct Kernel;
pub struct CopyEngine;

impl WireImpl for Kernel {
    fn name(&self) -> &'static str {
        "p2p"
    }
    fn how(&self) -> &'static str {
        "SM kernel writing into the peer GPU (peer access)"
    }
    fn gpu(&self) -> Option<&dyn GpuWire> {
        Some(self)
    }
}

impl WireImpl for CopyEngine {
    fn name(&self) -> &'static str {
        "p2p-ce"
    }
    fn how(&self) -> &'static str {
        "cuMemcpyPeerAsync, copy engines"
    }
    fn gpu(&self) -> Option<&dyn GpuWire> {
        Some(self)
    }
}

impl GpuWire for Kernel {
    fn unavailable(&self, reg: &GpuRegister) -> Option<String> {
        reg.no_peer.clone()
    }

    fn exchange(&self, reg: &mut GpuRegister) -> Result<Seconds> {
        let pairs = reg.local_pairs()?;
        reg.span(|me| {
            for &(i, j) in &pairs {
                // Into the partner's memory where it receives.
                let (len, (from, _), (_, to)) = (me.part(i).len, me.ends(i), me.ends(j));
                let src = &me.ranks[i];
                let words = len / 16;
                let mut l = me.kernel(i, "sv_copy16")?;
                l.arg(&to).arg(&from).arg(&words);
                go(l, streaming(&src.gpu, words), "sv_copy16")?;
            }
            Ok(())
        })
    }
}

impl GpuWire for CopyEngine {
    fn unavailable(&self, reg: &GpuRegister) -> Option<String> {
        reg.no_peer.clone()
    }

    fn exchange(&self, reg: &mut GpuRegister) -> Result<Seconds> {
        let pairs = reg.local_pairs()?;
        reg.span(|me| {
            for &(i, j) in &pairs {
                // Into the partner's memory where it receives.
                let (len, (from, _), (_, to)) = (me.part(i).len, me.ends(i), me.ends(j));
                let (src, dst) = (&me.ranks[i], &me.ranks[j]);
                src.gpu.ctx.bind_to_thread().map_err(cuda_err("binding a context"))?;
                // Source and destination ranges lie in the two GPUs' buffers
                // (a message never exceeds a chunk); the contexts own them.
                gpu::copy::peer(&dst.gpu.ctx, to, &src.gpu.ctx, from, len as usize, &src.gpu.stream)
                    .map_err(cuda_err("copying to the peer GPU"))?;
            }
            Ok(())
        })
    }
}
