//! The facts a profile requires, judged against what probe found on this
//! node: GPU model and count, NVLink, RDMA ports with state, rate and link
//! layer, GPUDirect, gdrdrv, NCCL's version and variables, the MPI build.

use super::profile::Facts as Required;
use crate::probe::collect::Facts;
use crate::probe::collect::rdma::PORT_ACTIVE;
use crate::probe::topo::PathType;
use crate::record::check::{Row, Status};

/// A fact row: what was found, and the status.
fn row(step: &str, node: &str, found: String, ok: bool, missing: bool, fix: &str) -> Row {
    Row {
        step: format!("fact: {step}"),
        place: None,
        kind: "fact".into(),
        node: node.into(),
        found,
        measured: None,
        unit: String::new(),
        expected: None,
        floor: None,
        ceiling: None,
        ratio: None,
        baseline: None,
        vs_baseline: None,
        status: if ok { Status::Pass } else { Status::Fail },
        fix: if ok { String::new() } else { fix.into() },
        attempts: 1,
        missing: !ok && missing,
    }
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

/// Every fact `want` names, judged on `facts`, as rows of `node`.
pub fn judge(want: &Required, facts: &Facts, node: &str) -> Vec<Row> {
    let mut rows = Vec::new();
    let gpus = &facts.gpu.gpus;
    let names: Vec<String> = gpus.iter().map(|g| g.name.value().cloned().unwrap_or_else(|| "unknown".into())).collect();
    if let Some(n) = want.gpu_count {
        rows.push(row(
            "gpu count",
            node,
            format!("{} GPU{} (at least {n} wanted)", gpus.len(), if gpus.len() == 1 { "" } else { "s" }),
            gpus.len() >= n,
            gpus.len() < n,
            "a GPU is missing: check nvidia-smi, dmesg for Xid errors and fallen-off-the-bus messages",
        ));
    }
    if let Some(model) = &want.gpu_model {
        let ok = !names.is_empty() && names.iter().all(|n| n.contains(model.as_str()));
        rows.push(row(
            "gpu model",
            node,
            if names.is_empty() { "no GPU".into() } else { names.join(", ") },
            ok,
            names.is_empty(),
            &format!("this node's GPUs are not {model}s: use the profile of its machine type"),
        ));
    }
    if want.nvlink == Some(true) {
        let pairs = &facts.gpu.pairs;
        let nv = pairs.iter().filter(|p| matches!(p.path.value(), Some(PathType::Nv(_)))).count();
        rows.push(row(
            "nvlink",
            node,
            format!("{nv} of {} GPU pairs joined by NVLink", pairs.len()),
            !pairs.is_empty() && nv == pairs.len(),
            pairs.is_empty(),
            "GPUs joined by PCIe only: check nvidia-smi topo -m and nvidia-smi nvlink -s; on NVSwitch systems the fabric manager must run",
        ));
    }
    let ports: Vec<(&str, &crate::probe::collect::rdma::Port)> =
        facts.rdma.devices.iter().flat_map(|d| d.ports.iter().map(move |p| (d.name.as_str(), p))).collect();
    let active: Vec<&(&str, &crate::probe::collect::rdma::Port)> =
        ports.iter().filter(|(_, p)| p.state.value().is_some_and(|s| s.code == PORT_ACTIVE)).collect();
    let none = ports.is_empty();
    if let Some(n) = want.rdma_active_ports {
        let down: Vec<String> = ports
            .iter()
            .filter(|(_, p)| p.state.value().is_none_or(|s| s.code != PORT_ACTIVE))
            .map(|(d, p)| format!("{d}:{} {}", p.port, p.state))
            .collect();
        rows.push(row(
            "rdma ports active",
            node,
            if none {
                "no RDMA adapter (/sys/class/infiniband is empty)".into()
            } else {
                format!("{} of {} ports ACTIVE{}", active.len(), ports.len(), if down.is_empty() { String::new() } else { format!(" (not: {})", down.join(", ")) })
            },
            active.len() >= n,
            none,
            if none {
                "install the adapter's driver (mlx5_core/mlx4_ib, rdma-core) and check lspci for the card"
            } else {
                "a port is not ACTIVE: check the cable and ibstat; INIT means no subnet manager (start opensm), DOWN no link"
            },
        ));
    }
    if let Some(rate) = want.rdma_rate_gbps {
        let slow: Vec<String> = active
            .iter()
            .filter(|(_, p)| p.rate.value().and_then(|r| rate_gbps(r)).is_none_or(|r| r < rate))
            .map(|(d, p)| format!("{d}:{} {}", p.port, p.rate))
            .collect();
        rows.push(row(
            "rdma rate",
            node,
            if active.is_empty() {
                "no active port".into()
            } else if slow.is_empty() {
                format!("every active port at {rate} Gb/s or more")
            } else {
                format!("below {rate} Gb/s: {}", slow.join(", "))
            },
            !active.is_empty() && slow.is_empty(),
            none,
            if active.is_empty() {
                "no active port to judge: see the ports row"
            } else {
                "a port trained at a lower rate: check the cable and the switch port (ibstat, ibportstate)"
            },
        ));
    }
    if let Some(layer) = &want.rdma_link_layer {
        let other: Vec<String> = active
            .iter()
            .filter(|(_, p)| p.link_layer.value().is_none_or(|l| l != layer))
            .map(|(d, p)| format!("{d}:{} {}", p.port, p.link_layer))
            .collect();
        rows.push(row(
            "rdma link layer",
            node,
            if active.is_empty() {
                "no active port".into()
            } else if other.is_empty() {
                format!("every active port is {layer}")
            } else {
                format!("not {layer}: {}", other.join(", "))
            },
            !active.is_empty() && other.is_empty(),
            none,
            if active.is_empty() {
                "no active port to judge: see the ports row"
            } else {
                "the port runs another link layer: set the port type (mlxconfig LINK_TYPE_P1) or use the profile of this fabric"
            },
        ));
    }
    if let Some(true) = want.gpudirect {
        let peermem = !facts.gdr.peer_memory.is_empty();
        let dmabuf = !gpus.is_empty() && gpus.iter().all(|g| g.dma_buf.value() == Some(&true));
        rows.push(row(
            "gpudirect rdma",
            node,
            match (peermem, dmabuf) {
                (true, _) => "a peer-memory module is loaded".into(),
                (false, true) => "dma-buf on every GPU".into(),
                _ => "no peer-memory module and no dma-buf".into(),
            },
            peermem || dmabuf,
            false,
            "load nvidia_peermem (modprobe nvidia_peermem), or use a driver and kernel with dma-buf (CUDA 11.7+, Linux 5.12+)",
        ));
    }
    if let Some(true) = want.gdrdrv {
        let ok = facts.gdr.gdrdrv_device;
        rows.push(row(
            "gdrdrv",
            node,
            if ok { "/dev/gdrdrv present".into() } else { "/dev/gdrdrv absent".into() },
            ok,
            !ok,
            "load the gdrdrv module (from NVIDIA/gdrcopy)",
        ));
    }
    if let Some(min) = &want.nccl_version {
        let found = facts.nccl.library.version.value().cloned();
        let ok = match (found.as_deref().and_then(version), version(min)) {
            (Some(have), Some(want)) => have >= want,
            _ => false,
        };
        rows.push(row(
            "nccl version",
            node,
            found.map_or_else(|| format!("NCCL not found ({})", facts.nccl.library.version), |v| format!("NCCL {v}")),
            ok,
            facts.nccl.library.path.value().is_none(),
            &format!("install NCCL {min} or newer (apt install libnccl2, or pip install nvidia-nccl-cu12)"),
        ));
    }
    for (name, value) in want.nccl_env.iter().flatten() {
        let found = facts.nccl.var(name);
        rows.push(row(
            &format!("{name}={value}"),
            node,
            found.map_or_else(|| format!("{name} unset"), |v| format!("{name}={} ({})", v.value, v.source)),
            found.is_some_and(|v| &v.value == value),
            false,
            &format!("set {name}={value} in the job's environment or /etc/nccl.conf"),
        ));
    }
    if let Some(true) = want.mpi {
        let built = cfg!(feature = "mpi");
        rows.push(row(
            "mpi build",
            node,
            if built { "qbench built with MPI".into() } else { "qbench built without MPI".into() },
            built,
            false,
            "rebuild with cargo build --release --features mpi",
        ));
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_and_versions_parse() {
        assert_eq!(rate_gbps("56 Gb/sec (4X FDR)"), Some(56.0));
        assert_eq!(rate_gbps("400 Gb/sec (4X NDR)"), Some(400.0));
        assert!(version("2.28.3") > version("2.18.0"));
        assert_eq!(version("2.18"), Some((2, 18, 0)));
        assert_eq!(version("x"), None);
    }
}
