//! GPU checks: devices present, a driver CUDA can use, NVLinks up, and
//! peer access between every pair.

use super::{Check, and_list, count};
use crate::probe::collect::Facts;
use crate::probe::collect::gpu::Gpu;
use crate::probe::collect::sysfs::Known;

/// nvidia-smi's name for the i-th GPU in PCI order.
pub fn label(i: usize) -> String {
    format!("GPU{i}")
}

/// `expect_gpus`: no GPU is a FAIL; else the GPU checks of a node without
/// one SKIP, as on a CPU or login node.
pub fn checks(f: &Facts, expect_gpus: bool) -> Vec<Check> {
    let gpus = &f.gpu.gpus;
    if gpus.is_empty() {
        return vec![
            devices(f, expect_gpus),
            Check::skip("gpu.driver", "no GPU"),
            Check::skip("gpu.nvlink", "no GPU"),
            Check::skip("gpu.peer_access", "no GPU"),
        ];
    }
    vec![devices(f, expect_gpus), driver(f), nvlink(gpus), peer_access(f)]
}

fn devices(f: &Facts, expect_gpus: bool) -> Check {
    const NAME: &str = "gpu.devices";
    let gpus = &f.gpu.gpus;
    if gpus.is_empty() {
        if !expect_gpus {
            return Check::skip(
                NAME,
                "no NVIDIA GPU on this node (/sys/bus/pci/devices): host-memory runs only (--transport cpu); --expect-gpus makes this a FAIL",
            );
        }
        let cuda = match &f.gpu.driver.cuda {
            Known::Unknown { unknown } if f.host.live => format!("; CUDA: {unknown}"),
            _ => String::new(),
        };
        return Check::fail(
            NAME,
            format!("no NVIDIA GPU on the PCI bus (/sys/bus/pci/devices){cuda}"),
            "run qbench on a GPU node: a node without an NVIDIA GPU and driver can only run `--transport cpu`",
        );
    }
    let list: Vec<String> = gpus
        .iter()
        .enumerate()
        .map(|(i, g)| format!("{} {} ({})", label(i), g.name.value().map_or("model unknown", String::as_str), g.bus_id))
        .collect();
    Check::pass(NAME, format!("{}: {}", count(gpus.len(), "GPU"), and_list(&list)))
}

fn driver(f: &Facts) -> Check {
    const NAME: &str = "gpu.driver";
    let d = &f.gpu.driver;
    let module = match &d.kernel_module {
        Some(v) => format!("nvidia kernel module {v}"),
        None => "no nvidia kernel module".to_string(),
    };
    if !f.host.live {
        return match &d.kernel_module {
            Some(_) => Check::pass(NAME, format!("{module} loaded; CUDA and NVML not queried (fixture run)")),
            None => Check::fail(NAME, format!("GPUs on the PCI bus but {module} (/sys/module/nvidia)"), load_driver()),
        };
    }
    let cuda = match &d.cuda {
        Known::Value(c) => c,
        Known::Unknown { unknown } => {
            return Check::fail(NAME, format!("{module}; CUDA unusable: {unknown}"), cuda_remedy(unknown));
        }
    };
    let nvml = match &d.nvml {
        Known::Value(n) => n,
        Known::Unknown { unknown } => {
            return Check::warn(
                NAME,
                format!("{module}; CUDA {} works but NVML does not: {unknown}", cuda.version),
                "install the driver's libnvidia-ml.so.1 (same package as libcuda): without it NVLinks and topology stay unknown",
            );
        }
    };
    let found = format!(
        "driver {}, {module}, CUDA {} (driver API); CUDA sees {} of {} on the PCI bus",
        nvml.driver_version,
        cuda.version,
        cuda.devices,
        count(f.gpu.gpus.len(), "GPU")
    );
    if cuda.devices < f.gpu.gpus.len() {
        return Check::warn(
            NAME,
            found,
            "CUDA_VISIBLE_DEVICES hides some GPUs, or the container lacks their /dev/nvidia* files; unset it or grant the devices",
        );
    }
    Check::pass(NAME, found)
}

fn load_driver() -> &'static str {
    "install the NVIDIA driver and load it (modprobe nvidia); dmesg says why it did not load"
}

/// What to do about a CUDA driver API that does not start, by its error.
fn cuda_remedy(error: &str) -> &'static str {
    if error.contains("cannot be loaded") {
        "install the driver's user-space library libcuda.so.1 (e.g. libnvidia-compute-<version>); in a container, start it with the NVIDIA container toolkit (--gpus all)"
    } else if error.contains("CUDA_ERROR_SYSTEM_NOT_READY") {
        "start the fabric manager (systemctl start nvidia-fabricmanager): NVSwitch systems need it before CUDA can start"
    } else if error.contains("CUDA_ERROR_NO_DEVICE") {
        "CUDA sees no GPU: check CUDA_VISIBLE_DEVICES and the container's access to /dev/nvidia*"
    } else if error.contains("MISMATCH") || error.contains("COMPAT") {
        "the user-space driver and the kernel module differ (an upgrade without reboot): reload the nvidia modules or reboot"
    } else {
        "nvidia-smi and dmesg usually say more about this error"
    }
}

fn nvlink(gpus: &[Gpu]) -> Check {
    const NAME: &str = "gpu.nvlink";
    let known: Vec<(usize, _)> =
        gpus.iter().enumerate().filter_map(|(i, g)| g.nvlink.value().map(|l| (i, l))).collect();
    if known.is_empty() {
        let why = gpus.iter().find_map(|g| match &g.nvlink {
            Known::Unknown { unknown } => Some(unknown.clone()),
            Known::Value(_) => None,
        });
        return Check::skip(NAME, why.unwrap_or_default());
    }
    let down: Vec<String> = known
        .iter()
        .filter(|(_, l)| l.active < l.links)
        .map(|(i, l)| format!("{}: {} of {} NVLinks up", label(*i), l.active, l.links))
        .collect();
    if !down.is_empty() {
        return Check::warn(
            NAME,
            and_list(&down),
            "`nvidia-smi nvlink -s` shows which links are down: reseat the bridge or check the NVSwitch fabric (nvidia-fabricmanager), then reset the GPU",
        );
    }
    let up: Vec<String> =
        known.iter().map(|(i, l)| format!("{}: {} × {} GB/s", label(*i), l.active, l.speed_gbps)).collect();
    Check::pass(NAME, and_list(&up))
}

fn peer_access(f: &Facts) -> Check {
    const NAME: &str = "gpu.peer_access";
    let pairs = &f.gpu.pairs;
    if pairs.is_empty() {
        return Check::skip(NAME, "fewer than two GPUs");
    }
    let describe = |p: &crate::probe::collect::gpu::GpuPair| format!("{}–{} {}", label(p.a), label(p.b), p.path);
    if let Some(Known::Unknown { unknown }) = pairs.iter().map(|p| &p.cuda_peer_access).find(|a| a.value().is_none()) {
        let paths: Vec<String> = pairs.iter().map(describe).collect();
        return Check::skip(NAME, format!("{}; peer access unknown: {unknown}", and_list(&paths)));
    }
    let denied: Vec<String> =
        pairs.iter().filter(|p| p.cuda_peer_access.value() == Some(&false)).map(describe).collect();
    if !denied.is_empty() {
        return Check::warn(
            NAME,
            format!("no peer access between {}", and_list(&denied)),
            "NCCL then copies through host memory (SHM); over PCIe, peer access needs IOMMU passthrough (iommu=pt) and ACS off on the switches, and in a VM a hypervisor that allows P2P",
        );
    }
    let ok: Vec<String> = pairs.iter().map(describe).collect();
    Check::pass(NAME, format!("{}: peer access both ways", and_list(&ok)))
}
