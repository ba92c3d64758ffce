//! GPUDirect checks: what NCCL needs to move data straight between GPU
//! memory and the adapter (a peer-memory module or DMA-BUF, GPU support,
//! a short PCIe path), and gdrcopy's device.

use super::gpu::label;
use super::{Check, and_list};
use crate::probe::collect::Facts;
use crate::probe::collect::gdr::PEER_MEMORY_PATHS;
use crate::probe::collect::sysfs::Known;
use crate::probe::nccl_env::Level;

pub fn checks(f: &Facts) -> Vec<Check> {
    if f.gpu.gpus.is_empty() {
        return ["gdr.peer_memory", "gdr.gpu_support", "gdr.gpu_nic", "gdr.gdrcopy"]
            .map(|n| Check::skip(n, "no GPU"))
            .into();
    }
    vec![peer_memory(f), gpu_support(f), gpu_nic(f), gdrcopy(f)]
}

fn no_rdma(f: &Facts) -> bool {
    f.rdma.devices.is_empty()
}

fn peer_memory(f: &Facts) -> Check {
    const NAME: &str = "gdr.peer_memory";
    let gdr = &f.gdr;
    if let Some(m) = gdr.peer_memory.first() {
        return Check::pass(NAME, format!("{} (version {})", m.path, m.version));
    }
    let none = format!("no peer-memory module (none of {})", PEER_MEMORY_PATHS.join(", "));
    if no_rdma(f) {
        return Check::skip(NAME, format!("{none}; not needed without an RDMA device"));
    }
    let dma_buf = f.gpu.gpus.iter().all(|g| g.dma_buf.value() == Some(&true));
    let fix = "modprobe nvidia_peermem (it ships with the NVIDIA driver; install the adapter's OFED/rdma-core before the driver so that it is built), or the legacy nv_peer_mem";
    if dma_buf {
        Check::warn(
            NAME,
            format!(
                "{none}; every GPU supports DMA-BUF, which NCCL uses instead when the kernel (5.12 or later) and the adapter's driver support it"
            ),
            format!("confirm with NCCL_DEBUG=INFO (\"DMABUF\" on the NET/IB lines), or {fix}"),
        )
    } else {
        Check::warn(NAME, format!("{none}: NCCL stages every GPU↔adapter transfer through host memory"), fix)
    }
}

fn gpu_support(f: &Facts) -> Check {
    const NAME: &str = "gdr.gpu_support";
    let gpus = &f.gpu.gpus;
    if let Some(Known::Unknown { unknown }) = gpus.iter().map(|g| &g.gpu_direct_rdma).find(|k| k.value().is_none()) {
        return Check::skip(NAME, format!("GPU_DIRECT_RDMA_SUPPORTED unknown: {unknown}"));
    }
    let attrs: Vec<String> = gpus
        .iter()
        .enumerate()
        .map(|(i, g)| {
            let flag = |k: &Known<bool>| match k.value() {
                Some(true) => "1".to_string(),
                Some(false) => "0".to_string(),
                None => "unknown".to_string(),
            };
            format!(
                "{}: GPU_DIRECT_RDMA_SUPPORTED={} DMA_BUF_SUPPORTED={}",
                label(i),
                flag(&g.gpu_direct_rdma),
                flag(&g.dma_buf)
            )
        })
        .collect();
    let found = and_list(&attrs);
    if gpus.iter().any(|g| g.gpu_direct_rdma.value() == Some(&false)) && !no_rdma(f) {
        return Check::warn(
            NAME,
            found,
            "a GPU that does not support GPUDirect RDMA (most GeForce boards, some virtualised GPUs) makes NCCL stage its traffic through host memory: use data-centre GPUs or pass the whole GPU through",
        );
    }
    Check::pass(NAME, found)
}

/// For each GPU, the closest adapter with an active port, against
/// NCCL_NET_GDR_LEVEL (default PXB): NCCL disables GPUDirect RDMA for a
/// pair whose path is longer (ncclTopoCheckGdr).
fn gpu_nic(f: &Facts) -> Check {
    const NAME: &str = "gdr.gpu_nic";
    let active: Vec<&str> =
        f.rdma.devices.iter().filter(|d| d.ports.iter().any(|p| p.usable_by_nccl())).map(|d| d.name.as_str()).collect();
    if active.is_empty() {
        return Check::skip(NAME, if no_rdma(f) { "no RDMA device" } else { "no RDMA port is ACTIVE" });
    }
    let set = f.nccl.var("NCCL_NET_GDR_LEVEL").and_then(|v| Level::parse(&v.value));
    let level = set.unwrap_or(Level::DEFAULT_GDR);
    let level_text = if set.is_some() {
        format!("NCCL_NET_GDR_LEVEL={}", level.name())
    } else {
        format!("the default level {}", level.name())
    };
    let mut near = Vec::new();
    let mut far = Vec::new();
    for (i, g) in f.gpu.gpus.iter().enumerate() {
        let best = f
            .gdr
            .gpu_nic
            .iter()
            .filter(|p| p.gpu == g.bus_id && active.contains(&p.nic.as_str()))
            .min_by_key(|p| p.path.nccl_rank());
        match best {
            Some(p) if p.path.nccl_rank() <= level.rank => near.push(format!("{}–{} {}", label(i), p.nic, p.path)),
            Some(p) => far.push(format!("{}–{} {}", label(i), p.nic, p.path)),
            None => far.push(format!("{} (PCI path unknown)", label(i))),
        }
    }
    if far.is_empty() {
        return Check::pass(NAME, format!("within {level_text}: {}", and_list(&near)));
    }
    Check::warn(
        NAME,
        format!("beyond {level_text}, so no GPUDirect RDMA for {}", and_list(&far)),
        "put an adapter under the same PCIe switch as each GPU (PIX or PXB); or, after measuring that it helps, allow the longer path with NCCL_NET_GDR_LEVEL=PHB or SYS",
    )
}

fn gdrcopy(f: &Facts) -> Check {
    const NAME: &str = "gdr.gdrcopy";
    let module = match &f.gdr.gdrdrv_module {
        Some(v) => format!("gdrdrv module {v}"),
        None => "no gdrdrv module".to_string(),
    };
    if f.gdr.gdrdrv_device {
        return Check::pass(NAME, format!("/dev/gdrdrv present, {module}"));
    }
    Check::warn(
        NAME,
        format!(
            "no /dev/gdrdrv ({module}): CPU-mapped GPU memory (gdrcopy) is unavailable, so qbench's gdrcopy tests cannot run"
        ),
        "install gdrcopy and load its driver (modprobe gdrdrv, or the gdrcopy service)",
    )
}
