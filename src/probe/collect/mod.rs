//! Collectors: everything `qbench probe` knows about the host, gathered
//! once into typed facts that the checks judge and the renderers print.
//! Files are read under a root (the real / or a fixture tree); the GPU
//! libraries are only touched on a live run.

pub mod gdr;
pub mod gpu;
pub mod libpath;
pub mod mpi;
pub mod nccl;
pub mod net;
pub mod numa;
pub mod rdma;
pub mod sysfs;

mod cuda;
mod gpu_link;
mod nvml;

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;
use sysfs::{Known, Sysfs, Unreadable};

/// Why a fact that needs a GPU library was not read in a fixture run.
pub const NOT_LIVE: &str = "not queried: fixture run (--sysfs-root)";

/// The machine being probed: its files and the environment qbench runs in.
pub struct Host {
    pub sys: Sysfs,
    pub env: BTreeMap<String, String>,
    /// Whether this is the machine qbench runs on (no --sysfs-root), so
    /// that the CUDA driver, NVML, NCCL and the sockets may be asked too.
    pub live: bool,
}

impl Host {
    pub fn new(root: Option<PathBuf>, env: BTreeMap<String, String>) -> Host {
        let live = root.is_none();
        Host { sys: Sysfs::new(root.unwrap_or_else(|| PathBuf::from("/"))), env, live }
    }

    pub fn var(&self, name: &str) -> Option<&str> {
        self.env.get(name).map(String::as_str)
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HostFacts {
    pub hostname: Known<String>,
    pub kernel: Known<String>,
    /// The directory facts were read under ("/" on a live run).
    pub root: String,
    pub live: bool,
}

impl HostFacts {
    /// The host of facts read back without it, until the report's own is put in.
    fn apart() -> HostFacts {
        let unknown = || Known::unknown("not in the facts: the report holds it");
        HostFacts { hostname: unknown(), kernel: unknown(), root: String::new(), live: false }
    }
}

/// Everything probed, section by section.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Facts {
    /// Printed once, at the top of a report (read back from there).
    #[serde(skip_serializing, default = "HostFacts::apart")]
    pub host: HostFacts,
    /// The NUMA nodes and their CPUs.
    pub numa_nodes: Vec<numa::NumaNode>,
    pub gpu: gpu::GpuFacts,
    pub rdma: rdma::RdmaFacts,
    pub net: Vec<net::NetIf>,
    pub gdr: gdr::GdrFacts,
    pub nccl: nccl::NcclFacts,
    pub mpi: mpi::MpiFacts,
    /// Files that were there to be read but could not be.
    pub unreadable: Vec<Unreadable>,
}

pub fn collect(host: &Host) -> Facts {
    let hostfacts = HostFacts {
        hostname: host.sys.read("/proc/sys/kernel/hostname"),
        kernel: host.sys.read("/proc/sys/kernel/osrelease"),
        root: host.sys.root().display().to_string(),
        live: host.live,
    };
    let numa_nodes = numa::collect(&host.sys);
    let gpu = gpu::collect(host);
    let rdma = rdma::collect(&host.sys);
    let net = net::collect(host);
    let gdr = gdr::collect(&host.sys, &gpu, &rdma);
    let dirs = libpath::loader_dirs(host);
    let nccl = nccl::collect(host, &dirs);
    let mpi = mpi::collect(host, &dirs);
    Facts { host: hostfacts, numa_nodes, gpu, rdma, net, gdr, nccl, mpi, unreadable: host.sys.unreadable() }
}
