//! GPUs: the NVIDIA devices on the PCI bus (from sysfs, so that fixtures
//! have them too), completed on a live run by the CUDA driver and NVML,
//! and the connection between every pair.

use super::gpu_link::NvLinks;
use super::sysfs::{Known, Sysfs};
use super::{Host, NOT_LIVE, cuda, nvml};
use crate::probe::topo::{PathType, PciPlace};
use serde::{Deserialize, Serialize};

const NVIDIA: &str = "0x10de";

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Gpu {
    /// PCI bus id as sysfs spells it (0000:18:00.0).
    pub bus_id: String,
    pub name: Known<String>,
    pub uuid: Known<String>,
    /// Its NUMA node (sysfs `numa_node`); -1 when the kernel does not say.
    pub numa_node: Known<i32>,
    pub memory_bytes: Known<u64>,
    pub compute_capability: Known<String>,
    /// CUDA's device number (after CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER).
    pub cuda_ordinal: Known<i32>,
    /// CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED.
    pub gpu_direct_rdma: Known<bool>,
    /// CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED.
    pub dma_buf: Known<bool>,
    pub nvlink: Known<NvLinks>,
    pub pci: Option<PciPlace>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GpuPair {
    /// Positions in `GpuFacts::gpus`.
    pub a: usize,
    pub b: usize,
    pub path: Known<PathType>,
    /// "nvml", or "sysfs" (PCIe only: NVLinks are not visible there).
    pub source: String,
    /// cuDeviceCanAccessPeer, both ways.
    pub cuda_peer_access: Known<bool>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CudaDriver {
    /// The CUDA version the driver supports ("13.0").
    pub version: Known<String>,
    pub devices: usize,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NvmlDriver {
    pub driver_version: Known<String>,
    pub cuda_version: Known<String>,
    pub devices: usize,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Driver {
    /// /sys/module/nvidia/version; None when the module is not loaded.
    pub kernel_module: Option<Known<String>>,
    pub cuda: Known<CudaDriver>,
    pub nvml: Known<NvmlDriver>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GpuFacts {
    pub driver: Driver,
    /// In PCI bus order, as nvidia-smi numbers them.
    pub gpus: Vec<Gpu>,
    pub pairs: Vec<GpuPair>,
}

pub fn collect(host: &Host) -> GpuFacts {
    let sys = &host.sys;
    let kernel_module = sys.read_opt("/sys/module/nvidia/version");
    let (cuda, nvml) =
        if host.live { (cuda::query(), nvml::query()) } else { (Known::unknown(NOT_LIVE), Known::unknown(NOT_LIVE)) };
    let not_reported = "not reported for this GPU";
    let why = Unasked {
        cuda: cuda.reason().unwrap_or(not_reported).to_string(),
        nvml: nvml.reason().unwrap_or(not_reported).to_string(),
    };
    let mut gpus = on_pci_bus(sys, &why);
    if let Known::Value(view) = &cuda {
        for c in view.gpus.iter().filter(|c| !c.bus_id.is_empty()) {
            let g = find_or_add(&mut gpus, sys, &c.bus_id, &why);
            g.cuda_ordinal = Known::Value(c.ordinal);
            g.name = c.name.clone().or_else(|| g.name.clone());
            g.uuid = c.uuid.clone().or_else(|| g.uuid.clone());
            g.memory_bytes = c.memory_bytes.clone();
            g.compute_capability = c.compute_capability.clone();
            g.gpu_direct_rdma = c.gpu_direct_rdma.clone();
            g.dma_buf = c.dma_buf.clone();
        }
    }
    if let Known::Value(view) = &nvml {
        for n in view.gpus.iter().filter(|n| !n.bus_id.is_empty()) {
            let g = find_or_add(&mut gpus, sys, &n.bus_id, &why);
            g.name = n.name.clone().or_else(|| g.name.clone());
            g.uuid = n.uuid.clone().or_else(|| g.uuid.clone());
            g.memory_bytes = g.memory_bytes.clone().or_else(|| n.memory_bytes.clone());
            g.compute_capability = g.compute_capability.clone().or_else(|| n.compute_capability.clone());
            g.nvlink = n.nvlink.clone();
        }
    }
    gpus.sort_by(|a, b| a.bus_id.cmp(&b.bus_id));
    let pairs = pairs(&gpus, &cuda, &nvml);
    let driver = Driver {
        kernel_module,
        cuda: cuda.map(|v| CudaDriver { version: v.version, devices: v.gpus.len() }),
        nvml: nvml.map(|v| NvmlDriver {
            driver_version: v.driver_version,
            cuda_version: v.cuda_version,
            devices: v.gpus.len(),
        }),
    };
    GpuFacts { driver, gpus, pairs }
}

/// Why the CUDA driver's and NVML's facts are missing, until they are found.
struct Unasked {
    cuda: String,
    nvml: String,
}

/// NVIDIA display and 3D controllers (PCI class 0x0300, 0x0302).
fn on_pci_bus(sys: &Sysfs, why: &Unasked) -> Vec<Gpu> {
    sys.list("/sys/bus/pci/devices")
        .into_iter()
        .filter(|bdf| {
            let dev = format!("/sys/bus/pci/devices/{bdf}");
            sys.read(&format!("{dev}/vendor")).value().is_some_and(|v| v == NVIDIA)
                && sys
                    .read(&format!("{dev}/class"))
                    .value()
                    .is_some_and(|c| c.starts_with("0x0300") || c.starts_with("0x0302"))
        })
        .map(|bdf| from_sysfs(sys, &bdf, why))
        .collect()
}

/// What sysfs and the driver's /proc files say about one GPU.
fn from_sysfs(sys: &Sysfs, bdf: &str, why: &Unasked) -> Gpu {
    let dev = format!("/sys/bus/pci/devices/{bdf}");
    let info_path = format!("/proc/driver/nvidia/gpus/{bdf}/information");
    let info = sys
        .read_opt(&info_path)
        .unwrap_or_else(|| Known::unknown(format!("no {info_path}: the nvidia driver is not loaded")));
    // Lines such as "Model: \t\t NVIDIA H200" and "GPU UUID: \t GPU-…".
    let field = |key: &str| {
        info.clone().and_then(|text| match text.lines().find_map(|l| l.strip_prefix(key)) {
            Some(v) => Known::Value(v.trim().to_string()),
            None => sys.fail(&info_path, &format!("no {key:?} line")),
        })
    };
    Gpu {
        bus_id: bdf.to_string(),
        name: field("Model:"),
        uuid: field("GPU UUID:"),
        numa_node: sys.parse(&crate::numa::pci_node_file(bdf), crate::numa::parse_node),
        memory_bytes: Known::unknown(&why.cuda),
        compute_capability: Known::unknown(&why.cuda),
        cuda_ordinal: Known::unknown(&why.cuda),
        gpu_direct_rdma: Known::unknown(&why.cuda),
        dma_buf: Known::unknown(&why.cuda),
        nvlink: Known::unknown(&why.nvml),
        pci: PciPlace::locate(sys, &dev),
    }
}

fn find_or_add<'a>(gpus: &'a mut Vec<Gpu>, sys: &Sysfs, bus_id: &str, why: &Unasked) -> &'a mut Gpu {
    match gpus.iter().position(|g| g.bus_id == bus_id) {
        Some(i) => &mut gpus[i],
        None => {
            gpus.push(from_sysfs(sys, bus_id, why));
            gpus.last_mut().expect("just pushed")
        }
    }
}

/// NVLinks between two GPUs as nvidia-smi counts them: links straight to
/// the peer, or, when both reach NVSwitches, the links into the fabric.
fn nvlink_count(a: &NvLinks, b: &NvLinks, b_bus: &str) -> u32 {
    let direct = a.to_gpu.get(b_bus).copied().unwrap_or(0);
    let switched = if a.to_switch > 0 && b.to_switch > 0 { a.to_switch.min(b.to_switch) } else { 0 };
    direct + switched
}

fn pairs(gpus: &[Gpu], cuda: &Known<cuda::CudaView>, nvml: &Known<nvml::NvmlView>) -> Vec<GpuPair> {
    let nvml_index = |g: &Gpu| nvml.value().and_then(|v| v.gpus.iter().position(|n| n.bus_id == g.bus_id));
    let mut out = Vec::new();
    for (a, ga) in gpus.iter().enumerate() {
        for (b, gb) in gpus.iter().enumerate().skip(a + 1) {
            let links = match (ga.nvlink.value(), gb.nvlink.value()) {
                (Some(la), Some(lb)) => nvlink_count(la, lb, &gb.bus_id),
                _ => 0,
            };
            let topology = match (nvml.value(), nvml_index(ga), nvml_index(gb)) {
                (Some(v), Some(i), Some(j)) => v.topology.get(&(i.min(j), i.max(j))).cloned(),
                _ => None,
            };
            let (path, source) = if links > 0 {
                (Known::Value(PathType::Nv(links)), "nvml")
            } else if let Some(t) = topology {
                (t, "nvml")
            } else {
                match (&ga.pci, &gb.pci) {
                    (Some(pa), Some(pb)) => (Known::Value(pa.path_to(pb)), "sysfs"),
                    _ => (Known::unknown("neither NVML nor a sysfs PCI path"), "none"),
                }
            };
            let cuda_peer_access = match (cuda, ga.cuda_ordinal.value(), gb.cuda_ordinal.value()) {
                (Known::Value(v), Some(&i), Some(&j)) => {
                    let get = |x: i32, y: i32| v.peer[x as usize][y as usize].clone();
                    get(i, j).and_then(|ab| get(j, i).map(|ba| ab && ba))
                }
                (Known::Unknown { unknown }, _, _) => Known::unknown(unknown.clone()),
                _ => Known::unknown("not visible to CUDA"),
            };
            out.push(GpuPair { a, b, path, source: source.to_string(), cuda_peer_access });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nvlinks_count_direct_and_switched() {
        let links = |to_gpu: &[(&str, u32)], to_switch| NvLinks {
            links: 18,
            active: 18,
            speed_gbps: Known::Value(26.562),
            to_gpu: to_gpu.iter().map(|(b, n)| (b.to_string(), *n)).collect(),
            to_switch,
        };
        // Two H200 on one NVSwitch fabric: nvidia-smi says NV18.
        assert_eq!(nvlink_count(&links(&[], 18), &links(&[], 18), "0000:2a:00.0"), 18);
        // A bridge: links straight to the peer.
        assert_eq!(
            nvlink_count(&links(&[("0000:2a:00.0", 4)], 0), &links(&[("0000:18:00.0", 4)], 0), "0000:2a:00.0"),
            4
        );
        assert_eq!(nvlink_count(&links(&[], 0), &links(&[], 18), "0000:2a:00.0"), 0);
    }
}
