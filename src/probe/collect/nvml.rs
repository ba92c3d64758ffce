//! GPU facts from NVML (libnvidia-ml), what nvidia-smi reports: NUMA
//! affinity, NVLinks and the topology between GPUs. Asked only on a live
//! run; a missing library is an error from `Nvml::init`, not a crash.

use super::gpu_link::{NvLinks, normalize_bus_id};
use super::sysfs::Known;
use crate::probe::topo::PathType;
use nvml_wrapper::enum_wrappers::device::TopologyLevel;
use nvml_wrapper::enums::device::SampleValue;
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::structs::device::FieldId;
use nvml_wrapper::{Device, Nvml};
use std::collections::BTreeMap;

/// NVML_NVLINK_MAX_LINKS of the NVML headers qbench is built with.
const MAX_LINKS: u32 = 18;
/// NVML_FI_DEV_NVLINK_SPEED_MBPS_COMMON: the speed all active links share.
const FI_NVLINK_SPEED_COMMON: u32 = 90;
/// nvmlIntNvLinkDeviceType_t values.
const REMOTE_GPU: u32 = 0;
const REMOTE_NPU: u32 = 1;
const REMOTE_SWITCH: u32 = 2;

pub struct NvmlGpu {
    pub bus_id: String,
    pub name: Known<String>,
    pub uuid: Known<String>,
    pub memory_bytes: Known<u64>,
    pub compute_capability: Known<String>,
    pub nvlink: Known<NvLinks>,
}

pub struct NvmlView {
    pub driver_version: Known<String>,
    pub cuda_version: Known<String>,
    pub gpus: Vec<NvmlGpu>,
    /// nvmlDeviceGetTopologyCommonAncestor for each pair (i < j).
    pub topology: BTreeMap<(usize, usize), Known<PathType>>,
}

pub fn query() -> Known<NvmlView> {
    let nvml = match Nvml::init() {
        Ok(n) => n,
        Err(e) => return Known::unknown(format!("NVML: {e}")),
    };
    let count = match nvml.device_count() {
        Ok(n) => n,
        Err(e) => return Known::unknown(format!("NVML device count: {e}")),
    };
    let devices: Vec<(u32, Device)> = (0..count).filter_map(|i| nvml.device_by_index(i).ok().map(|d| (i, d))).collect();
    let bus_ids: Vec<String> =
        devices.iter().map(|(_, d)| d.pci_info().map(|p| normalize_bus_id(&p.bus_id)).unwrap_or_default()).collect();
    let gpus = devices.iter().zip(&bus_ids).map(|((_, d), bus)| gpu(&nvml, d, bus, &bus_ids)).collect();
    let mut topology = BTreeMap::new();
    for (i, (_, a)) in devices.iter().enumerate() {
        for (j, (index, _)) in devices.iter().enumerate().skip(i + 1) {
            // The call takes the peer by value; a second handle is cheap.
            let peer = nvml.device_by_index(*index);
            let level = Known::from(peer.and_then(|b| a.topology_common_ancestor(b))).map(|l| match l {
                TopologyLevel::Internal | TopologyLevel::Single => PathType::Pix,
                TopologyLevel::Multiple => PathType::Pxb,
                TopologyLevel::HostBridge => PathType::Phb,
                TopologyLevel::Node => PathType::Node,
                TopologyLevel::System => PathType::Sys,
            });
            topology.insert((i, j), level);
        }
    }
    let cuda_version = Known::from(nvml.sys_cuda_driver_version()).map(|v| format!("{}.{}", v / 1000, v % 1000 / 10));
    Known::Value(NvmlView { driver_version: nvml.sys_driver_version().into(), cuda_version, gpus, topology })
}

/// NVML's nvmlDeviceGetNumaNodeId is left out on purpose: it numbers GPU
/// memory exposed as a NUMA node (Grace), not the CPU a GPU hangs from,
/// which sysfs gives.
fn gpu(nvml: &Nvml, d: &Device, bus_id: &str, gpus: &[String]) -> NvmlGpu {
    NvmlGpu {
        bus_id: bus_id.to_string(),
        name: d.name().into(),
        uuid: d.uuid().into(),
        memory_bytes: Known::from(d.memory_info()).map(|m| m.total),
        compute_capability: Known::from(d.cuda_compute_capability()).map(|c| format!("{}.{}", c.major, c.minor)),
        nvlink: nvlinks(nvml, d, gpus),
    }
}

/// Every link that reports a state; where each active one leads. A link
/// whose far end NVML will not name, and which does not reach one of
/// `gpus`, is counted as a switch link: on x86 an NVLink ends at a GPU or
/// an NVSwitch, and VMs often hide the NVSwitches.
fn nvlinks(nvml: &Nvml, d: &Device, gpus: &[String]) -> Known<NvLinks> {
    let mut links = NvLinks {
        links: 0,
        active: 0,
        speed_gbps: Known::unknown("no active link"),
        to_gpu: BTreeMap::new(),
        to_switch: 0,
    };
    let mut first_error: Option<NvmlError> = None;
    for l in 0..MAX_LINKS {
        let link = d.link_wrapper_for(l);
        match link.is_active() {
            Ok(active) => {
                links.links += 1;
                if !active {
                    continue;
                }
                links.active += 1;
                let remote = link.remote_pci_info().map(|p| normalize_bus_id(&p.bus_id)).ok();
                match (remote_type(nvml, d, l), remote) {
                    (Some(REMOTE_SWITCH), _) => links.to_switch += 1,
                    (Some(REMOTE_GPU), Some(bus)) => *links.to_gpu.entry(bus).or_default() += 1,
                    (Some(REMOTE_GPU), None) | (Some(REMOTE_NPU), _) => {}
                    (_, Some(bus)) if gpus.contains(&bus) => *links.to_gpu.entry(bus).or_default() += 1,
                    _ => links.to_switch += 1,
                }
            }
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    if links.links == 0 {
        return Known::unknown(match first_error {
            Some(NvmlError::NotSupported) | None => "no NVLink on this GPU".to_string(),
            Some(e) => format!("NVLink state: {e}"),
        });
    }
    if links.active > 0 {
        links.speed_gbps = match d.field_values_for(&[FieldId(FI_NVLINK_SPEED_COMMON)]) {
            Ok(mut v) => match v.pop().map(|s| s.and_then(|s| s.value)) {
                Some(Ok(SampleValue::U32(mbps))) => Known::Value(mbps as f64 / 1000.0),
                Some(Ok(SampleValue::U64(mbps))) => Known::Value(mbps as f64 / 1000.0),
                Some(Ok(other)) => Known::unknown(format!("unexpected NVLink speed value {other:?}")),
                Some(Err(e)) => Known::unknown(format!("NVLink speed: {e}")),
                None => Known::unknown("NVLink speed: no value"),
            },
            Err(e) => Known::unknown(format!("NVLink speed: {e}")),
        };
    }
    Known::Value(links)
}

/// What link `l` leads to (nvmlDeviceGetNvLinkRemoteDeviceType), called
/// directly because the wrapper's own method discards the answer.
fn remote_type(nvml: &Nvml, d: &Device, l: u32) -> Option<u32> {
    let f = nvml.lib().nvmlDeviceGetNvLinkRemoteDeviceType.as_ref().ok()?;
    let mut kind: u32 = 255;
    // SAFETY: the handle belongs to this live Nvml instance, `l` is a link
    // index NVML just answered for, and NVML writes one enum value.
    let ret = unsafe { f(d.handle(), l, &mut kind) };
    (ret == 0).then_some(kind)
}
