//! The facts a readiness profile asks for, judged as the probe judges:
//! each requirement one check, which says what was found and what was
//! wanted, SKIPs what the facts cannot tell (a fixture tree holds no NVLink
//! state and no NCCL version), and is marked missing when the hardware it
//! is about is absent. `qbench check` turns them into its fact rows.

use super::gpu::label;
use super::{Check, and_list, count};
use crate::probe::collect::Facts;
use crate::probe::collect::rdma::{Port, RdmaDevice};
use crate::probe::collect::sysfs::Known;
use crate::probe::topo::PathType;

/// The RDMA devices a requirement is about: names or glob patterns
/// ("mlx5_[0-7]"); none means every device.
#[derive(Debug, Clone, Default)]
pub struct Devices(Vec<glob::Pattern>);

impl Devices {
    /// Patterns as a profile gives them; a pattern that is not a glob is refused.
    pub fn new(patterns: &[String]) -> Result<Devices, String> {
        patterns
            .iter()
            .map(|p| glob::Pattern::new(p).map_err(|e| format!("'{p}': {e}")))
            .collect::<Result<_, _>>()
            .map(Devices)
    }

    fn take(&self, name: &str) -> bool {
        self.0.is_empty() || self.0.iter().any(|p| p.matches(name))
    }

    /// " of mlx5_[0-7]", or nothing for every device.
    fn scope(&self) -> String {
        match self.0.as_slice() {
            [] => String::new(),
            ps => format!(" of {}", ps.iter().map(|p| p.as_str()).collect::<Vec<_>>().join(", ")),
        }
    }
}

/// The ports of the devices `devices` takes.
fn ports<'a>(f: &'a Facts, devices: &'a Devices) -> Vec<(&'a RdmaDevice, &'a Port)> {
    f.rdma.ports().filter(|(d, _)| devices.take(&d.name)).collect()
}

fn port_name(d: &RdmaDevice, p: &Port) -> String {
    format!("{}:{}", d.name, p.port)
}

/// "56 Gb/sec (4X FDR)" → 56.
fn rate_gbps(rate: &str) -> Option<f64> {
    rate.split_whitespace().next()?.parse().ok()
}

/// "2.28.3" → (2, 28, 3).
fn version(v: &str) -> Option<(u32, u32, u32)> {
    let mut it = v.trim().split('.').map(|p| p.parse::<u32>().ok());
    Some((it.next()??, it.next().flatten().unwrap_or(0), it.next().flatten().unwrap_or(0)))
}

/// At least `n` GPUs.
pub fn gpu_count(f: &Facts, n: usize) -> Check {
    const NAME: &str = "gpu count";
    let have = f.gpu.gpus.len();
    let found = format!("{} (at least {n} wanted)", count(have, "GPU"));
    if have >= n {
        return Check::pass(NAME, found);
    }
    Check::fail(NAME, found, "a GPU is missing: check nvidia-smi, dmesg for Xid errors and fallen-off-the-bus messages")
        .absent()
}

/// Every GPU's name contains `model`.
pub fn gpu_model(f: &Facts, model: &str) -> Check {
    const NAME: &str = "gpu model";
    let names: Vec<String> =
        f.gpu.gpus.iter().map(|g| g.name.value().cloned().unwrap_or_else(|| "unknown".into())).collect();
    if names.is_empty() {
        return Check::fail(NAME, format!("no GPU ({model} wanted)"), "run the check on a GPU node of this profile")
            .absent();
    }
    let found = format!("{} ({model} wanted)", names.join(", "));
    if names.iter().all(|n| n.contains(model)) {
        return Check::pass(NAME, found);
    }
    Check::fail(NAME, found, format!("this node's GPUs are not {model}s: use the profile of its machine type"))
}

/// Every pair of GPUs joined by NVLink; SKIP where the paths are not known.
pub fn nvlink(f: &Facts) -> Check {
    const NAME: &str = "nvlink";
    let pairs = &f.gpu.pairs;
    if pairs.is_empty() && !f.host.live {
        return Check::skip(NAME, "a fixture tree holds no GPU topology: it is read from the driver on a live node");
    }
    if pairs.is_empty() {
        let found = format!("{} (every pair joined by NVLink wanted)", count(f.gpu.gpus.len(), "GPU"));
        return Check::fail(NAME, found, "a node of this profile has several GPUs: check nvidia-smi").absent();
    }
    if let Some(Known::Unknown { unknown }) = pairs.iter().map(|p| &p.path).find(|p| p.value().is_none()) {
        return Check::skip(NAME, format!("the GPUs' paths are unknown: {unknown}"));
    }
    let pcie: Vec<String> = pairs
        .iter()
        .filter(|p| !matches!(p.path.value(), Some(PathType::Nv(_))))
        .map(|p| format!("{}–{} {}", label(p.a), label(p.b), p.path))
        .collect();
    let found = format!("{} of {} GPU pairs joined by NVLink", pairs.len() - pcie.len(), pairs.len());
    if pcie.is_empty() {
        return Check::pass(NAME, found);
    }
    Check::fail(
        NAME,
        format!("{found} (every pair wanted; not: {})", and_list(&pcie)),
        "GPUs joined by PCIe only: check nvidia-smi topo -m and nvidia-smi nvlink -s; on NVSwitch systems the fabric manager must run",
    )
}

/// At least `n` ports ACTIVE on the devices `devices` takes.
pub fn rdma_ports(f: &Facts, n: usize, devices: &Devices) -> Check {
    const NAME: &str = "rdma ports active";
    let ports = ports(f, devices);
    let wanted = format!("at least {n} wanted{}", devices.scope());
    if ports.is_empty() {
        let found = if f.rdma.devices.is_empty() {
            format!("no RDMA adapter (/sys/class/infiniband is empty; {wanted})")
        } else {
            format!("no port of a device it names ({wanted})")
        };
        return Check::fail(
            NAME,
            found,
            "install the adapter's driver (mlx5_core/mlx4_ib, rdma-core) and check lspci for the card",
        )
        .absent();
    }
    let active = ports.iter().filter(|(_, p)| p.is_active()).count();
    let down: Vec<String> =
        ports.iter().filter(|(_, p)| !p.is_active()).map(|(d, p)| format!("{} {}", port_name(d, p), p.state)).collect();
    let not = if down.is_empty() { String::new() } else { format!("; not: {}", down.join(", ")) };
    let found = format!("{active} of {} ACTIVE ({wanted}{not})", count(ports.len(), "port"));
    if active >= n {
        return Check::pass(NAME, found);
    }
    Check::fail(
        NAME,
        found,
        "a port is not ACTIVE, or an adapter is missing: check the cable and ibstat; INIT means no subnet manager (start opensm), DOWN no link",
    )
}

/// Every active port of the devices `devices` takes at `gbps` or more.
pub fn rdma_rate(f: &Facts, gbps: f64, devices: &Devices) -> Check {
    const NAME: &str = "rdma rate";
    let active: Vec<_> = ports(f, devices).into_iter().filter(|(_, p)| p.is_active()).collect();
    if active.is_empty() {
        return Check::fail(
            NAME,
            format!("no active port{} ({gbps} Gb/s wanted)", devices.scope()),
            "see the ports row",
        )
        .absent();
    }
    let slow: Vec<String> = active
        .iter()
        .filter(|(_, p)| p.rate.value().and_then(|r| rate_gbps(r)).is_none_or(|r| r < gbps))
        .map(|(d, p)| format!("{} {}", port_name(d, p), p.rate))
        .collect();
    if slow.is_empty() {
        return Check::pass(NAME, format!("every active port{} at {gbps} Gb/s or more", devices.scope()));
    }
    Check::fail(
        NAME,
        format!("below the {gbps} Gb/s wanted: {}", slow.join(", ")),
        "a port trained at a lower rate: check the cable and the switch port (ibstat, ibportstate), or name the compute adapters with rdma_devices",
    )
}

/// Every active port of the devices `devices` takes runs `layer`
/// ("InfiniBand", or "Ethernet" for RoCE).
pub fn rdma_link_layer(f: &Facts, layer: &str, devices: &Devices) -> Check {
    const NAME: &str = "rdma link layer";
    let active: Vec<_> = ports(f, devices).into_iter().filter(|(_, p)| p.is_active()).collect();
    if active.is_empty() {
        return Check::fail(NAME, format!("no active port{} ({layer} wanted)", devices.scope()), "see the ports row")
            .absent();
    }
    let other: Vec<String> = active
        .iter()
        .filter(|(_, p)| p.link_layer.value().is_none_or(|l| l != layer))
        .map(|(d, p)| format!("{} {}", port_name(d, p), p.link_layer))
        .collect();
    if other.is_empty() {
        return Check::pass(NAME, format!("every active port{} is {layer}", devices.scope()));
    }
    Check::fail(
        NAME,
        format!("not {layer} as wanted: {}", other.join(", ")),
        "the port runs another link layer: set the port type (mlxconfig LINK_TYPE_P1), use the profile of this fabric, or name the compute adapters with rdma_devices",
    )
}

/// GPUDirect RDMA possible: a peer-memory module, or dma-buf on every GPU.
pub fn gpudirect(f: &Facts) -> Check {
    const NAME: &str = "gpudirect rdma";
    let gpus = &f.gpu.gpus;
    if !f.gdr.peer_memory.is_empty() {
        return Check::pass(NAME, "a peer-memory module is loaded");
    }
    if gpus.is_empty() {
        return Check::fail(NAME, "no GPU", "run the check on a GPU node of this profile").absent();
    }
    if let Some(Known::Unknown { unknown }) = gpus.iter().map(|g| &g.dma_buf).find(|d| d.value().is_none()) {
        return Check::skip(NAME, format!("no peer-memory module, and dma-buf support unknown: {unknown}"));
    }
    if gpus.iter().all(|g| g.dma_buf.value() == Some(&true)) {
        return Check::pass(NAME, "dma-buf on every GPU");
    }
    Check::fail(
        NAME,
        "no peer-memory module and no dma-buf (one of them wanted)",
        "load nvidia_peermem (modprobe nvidia_peermem), or use a driver and kernel with dma-buf (CUDA 11.7+, Linux 5.12+)",
    )
}

/// gdrdrv loaded: /dev/gdrdrv present.
pub fn gdrdrv(f: &Facts) -> Check {
    const NAME: &str = "gdrdrv";
    if f.gdr.gdrdrv_device {
        return Check::pass(NAME, "/dev/gdrdrv present");
    }
    Check::fail(NAME, "/dev/gdrdrv absent (wanted)", "load the gdrdrv module (from NVIDIA/gdrcopy)").absent()
}

/// At least NCCL `min`; SKIP where the version cannot be asked (a fixture).
pub fn nccl_version(f: &Facts, min: &str) -> Check {
    const NAME: &str = "nccl version";
    let lib = &f.nccl.library;
    let fix = format!("install NCCL {min} or newer (apt install libnccl2, or pip install nvidia-nccl-cu12)");
    let Some(found) = lib.version.value() else {
        if lib.path.value().is_some() && !f.host.live {
            return Check::skip(NAME, format!("{}: the version is read from the library on a live run", lib.path));
        }
        return Check::fail(NAME, format!("NCCL not found ({}; {min} or newer wanted)", lib.version), fix).absent();
    };
    let text = format!("NCCL {found} ({min} or newer wanted)");
    match (version(found), version(min)) {
        (Some(have), Some(want)) if have >= want => Check::pass(NAME, text),
        _ => Check::fail(NAME, text, fix),
    }
}

/// NCCL variable `name` set to `value` (the job's environment or /etc/nccl.conf).
pub fn nccl_env(f: &Facts, name: &str, value: &str) -> Check {
    let check = format!("{name}={value}");
    let Some(found) = f.nccl.var(name) else {
        return Check::fail(check, format!("{name} unset ({value} wanted)"), set(name, value));
    };
    let text = format!("{name}={} ({})", found.value, found.source);
    if found.value == value { Check::pass(check, text) } else { Check::fail(check, text, set(name, value)) }
}

fn set(name: &str, value: &str) -> String {
    format!("set {name}={value} in the job's environment or /etc/nccl.conf")
}

/// This qbench built with MPI support.
pub fn mpi_build(f: &Facts) -> Check {
    const NAME: &str = "mpi build";
    if f.mpi.built_with_mpi {
        return Check::pass(NAME, "qbench built with MPI");
    }
    Check::fail(NAME, "qbench built without MPI (wanted)", "rebuild with cargo build --release --features mpi")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_versions_and_device_patterns() {
        assert_eq!(rate_gbps("56 Gb/sec (4X FDR)"), Some(56.0));
        assert_eq!(rate_gbps("400 Gb/sec (4X NDR)"), Some(400.0));
        assert!(version("2.28.3") > version("2.18.0"));
        assert_eq!(version("2.18"), Some((2, 18, 0)));
        assert_eq!(version("x"), None);
        let d = Devices::new(&["mlx5_[0-3]".into(), "ib*".into()]).unwrap();
        assert!(d.take("mlx5_2") && d.take("ibp1s0") && !d.take("mlx5_4") && !d.take("mlx5_10"));
        assert!(Devices::default().take("anything"));
        assert!(Devices::new(&["mlx5_[".into()]).is_err());
    }
}
