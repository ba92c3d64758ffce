//! GPUDirect: the peer-memory module found by NCCL's own three paths,
//! gdrcopy's device, and the PCIe path between every GPU and RDMA adapter.

use super::gpu::GpuFacts;
use super::rdma::RdmaFacts;
use super::sysfs::{Known, Sysfs};
use crate::probe::topo::PathType;
use serde::{Deserialize, Serialize};

/// The files whose existence NCCL takes as "GPUDirect RDMA module loaded"
/// (ncclIbGdrSupport, src/transport/net_ib/gdr.cc): legacy nv_peer_mem,
/// its non-coherent variant, and the driver's nvidia_peermem.
pub const PEER_MEMORY_PATHS: [&str; 3] = [
    "/sys/kernel/mm/memory_peers/nv_mem/version",
    "/sys/kernel/mm/memory_peers/nv_mem_nc/version",
    "/sys/module/nvidia_peermem/version",
];

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PeerMemory {
    pub path: String,
    pub version: Known<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GpuNic {
    pub gpu: String,
    pub nic: String,
    pub path: PathType,
    /// Whether both sit on one NUMA node (their `numa_node` files); None
    /// when either is unknown. Apart, their traffic crosses the CPUs'
    /// interconnect: NCCL's SYS path.
    pub same_numa_node: Option<bool>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GdrFacts {
    /// The NCCL peer-memory paths that exist.
    pub peer_memory: Vec<PeerMemory>,
    /// /dev/gdrdrv, gdrcopy's device.
    pub gdrdrv_device: bool,
    /// /sys/module/gdrdrv/version, when the module is loaded.
    pub gdrdrv_module: Option<Known<String>>,
    /// Every GPU and RDMA device both placed on the PCI tree.
    pub gpu_nic: Vec<GpuNic>,
}

pub fn collect(sys: &Sysfs, gpu: &GpuFacts, rdma: &RdmaFacts) -> GdrFacts {
    let peer_memory = PEER_MEMORY_PATHS
        .iter()
        .filter_map(|p| sys.read_opt(p).map(|version| PeerMemory { path: p.to_string(), version }))
        .collect();
    let gpu_nic = gpu
        .gpus
        .iter()
        .filter_map(|g| Some((g, g.pci.as_ref()?)))
        .flat_map(|(g, gp)| {
            rdma.devices.iter().filter_map(move |d| {
                let node = |k: &Known<i32>| k.value().copied().filter(|&n| n >= 0);
                Some(GpuNic {
                    gpu: g.bus_id.clone(),
                    nic: d.name.clone(),
                    path: gp.path_to(d.pci.as_ref()?),
                    same_numa_node: node(&g.numa_node).zip(node(&d.numa_node)).map(|(a, b)| a == b),
                })
            })
        })
        .collect();
    GdrFacts {
        peer_memory,
        gdrdrv_device: sys.exists("/dev/gdrdrv"),
        gdrdrv_module: sys.read_opt("/sys/module/gdrdrv/version"),
        gpu_nic,
    }
}
