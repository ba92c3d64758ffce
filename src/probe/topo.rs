//! How two devices are connected: NVLink (NV#) or the PCIe path types of
//! `nvidia-smi topo -m` (PIX, PXB, PHB, NODE, SYS), derived from sysfs
//! device paths the way NCCL builds its topology.

use crate::probe::collect::sysfs::Sysfs;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// The connection between two devices, best first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathType {
    /// Bonded NVLinks, directly or through NVSwitches.
    Nv(u32),
    /// At most one PCIe switch.
    Pix,
    /// Several PCIe switches, no host bridge.
    Pxb,
    /// Through a PCIe host bridge (the CPU).
    Phb,
    /// Between host bridges of one NUMA node.
    Node,
    /// Across the CPUs' interconnect (QPI/UPI, Infinity Fabric).
    Sys,
}

impl PathType {
    /// NCCL's number for this path (src/graph/topo.h: PATH_NVL 1, PATH_PIX 4,
    /// PATH_PXB 5, PATH_PHB 8, PATH_SYS 9), against which NCCL_NET_GDR_LEVEL
    /// and NCCL_P2P_LEVEL are compared. NCCL has one CPU node per NUMA node,
    /// so nvidia-smi's NODE is its PHB.
    pub fn nccl_rank(self) -> u8 {
        match self {
            PathType::Nv(_) => 1,
            PathType::Pix => 4,
            PathType::Pxb => 5,
            PathType::Phb | PathType::Node => 8,
            PathType::Sys => 9,
        }
    }
}

impl fmt::Display for PathType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathType::Nv(n) => write!(f, "NV{n}"),
            PathType::Pix => f.write_str("PIX"),
            PathType::Pxb => f.write_str("PXB"),
            PathType::Phb => f.write_str("PHB"),
            PathType::Node => f.write_str("NODE"),
            PathType::Sys => f.write_str("SYS"),
        }
    }
}

impl Serialize for PathType {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// As written: NV18, PIX, PXB, PHB, NODE, SYS (`qbench show` of a probe).
impl<'de> Deserialize<'de> for PathType {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Ok(match text.as_str() {
            "PIX" => PathType::Pix,
            "PXB" => PathType::Pxb,
            "PHB" => PathType::Phb,
            "NODE" => PathType::Node,
            "SYS" => PathType::Sys,
            _ => match text.strip_prefix("NV").and_then(|n| n.parse().ok()) {
                Some(n) => PathType::Nv(n),
                None => return Err(serde::de::Error::custom(format!("no PCIe or NVLink path {text:?}"))),
            },
        })
    }
}

/// A PCI device's place in the tree as NCCL sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PciPlace {
    /// The device's real sysfs path (/sys/devices/pci0000:00/…).
    pub path: String,
    /// NCCL's PCI switch nodes above the device, nearest first (sysfs paths).
    pub switches: Vec<String>,
    /// The host bridge the tree hangs from (/sys/devices/pci0000:00).
    pub host_bridge: String,
    /// The NUMA node of that CPU; -1 when the kernel does not say.
    pub numa_node: i32,
}

/// NCCL's checkBDFFormat (src/graph/xml.cc): "BBBB:BB:DD.F" in hex.
fn is_bdf(name: &str) -> bool {
    let b = name.as_bytes();
    b.len() == 12
        && b[4] == b':'
        && b[7] == b':'
        && b[10] == b'.'
        && b.iter().enumerate().all(|(i, c)| matches!(i, 4 | 7 | 10) || c.is_ascii_hexdigit())
}

impl PciPlace {
    /// Places the device whose sysfs path is `device` (any path that
    /// resolves to it). NCCL walks up two path components at a time, so
    /// that a switch's upstream port stands for the whole switch, and stops
    /// at the first component that is not a bus id: the host bridge
    /// (ncclTopoGetXmlFromSys, "Rewind two '/' and follow the upper PCI
    /// switch, or stop if we reach a CPU root complex").
    pub fn locate(sys: &Sysfs, device: &str) -> Option<PciPlace> {
        let path = sys.resolve(device)?;
        let parts: Vec<&str> = path.split('/').collect();
        let prefix = |end: usize| parts[..=end].join("/");
        let mut at = parts.len() - 1;
        if !is_bdf(parts[at]) {
            return None;
        }
        let mut switches = Vec::new();
        while at >= 2 && is_bdf(parts[at - 1]) && is_bdf(parts[at - 2]) {
            at -= 2;
            switches.push(prefix(at));
        }
        let top = prefix(at);
        let host_bridge = prefix((0..at).rev().find(|&i| !is_bdf(parts[i]))?);
        let numa_node =
            sys.parse(&format!("{top}/numa_node"), |t| t.parse::<i32>().ok()).value().copied().unwrap_or(-1);
        Some(PciPlace { path: path.clone(), switches, host_bridge, numa_node })
    }

    /// The bus id (last path component).
    pub fn bus_id(&self) -> &str {
        self.path.rsplit('/').next().unwrap_or_default()
    }

    /// The PCIe path type between two devices (NCCL's ncclTopoComputePaths:
    /// a PCI→PCI link makes PXB, a link through a CPU makes PHB, CPU→CPU
    /// makes SYS), named as nvidia-smi does (NODE when the two host bridges
    /// differ but the NUMA node is the same).
    pub fn path_to(&self, other: &PciPlace) -> PathType {
        // Functions of one card (mlx5_0 and mlx5_1 on 41:00.0 and 41:00.1).
        if self.path.len() == other.path.len() && self.path[..self.path.len() - 1] == other.path[..other.path.len() - 1]
        {
            return PathType::Pix;
        }
        for (i, s) in self.switches.iter().enumerate() {
            if let Some(j) = other.switches.iter().position(|o| o == s) {
                return if i == 0 && j == 0 { PathType::Pix } else { PathType::Pxb };
            }
        }
        if self.numa_node != other.numa_node {
            PathType::Sys
        } else if self.host_bridge == other.host_bridge {
            PathType::Phb
        } else {
            PathType::Node
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn place(path: &str, switches: &[&str], numa: i32) -> PciPlace {
        let bridge = path.split('/').take(4).collect::<Vec<_>>().join("/");
        PciPlace {
            path: path.into(),
            switches: switches.iter().map(|s| s.to_string()).collect(),
            host_bridge: bridge,
            numa_node: numa,
        }
    }

    #[test]
    fn bus_ids() {
        assert!(is_bdf("0000:3b:00.0"));
        assert!(!is_bdf("pci0000:00"));
        assert!(!is_bdf("0000:3b:00.00"));
        assert!(!is_bdf("0000:3g:00.0"));
    }

    #[test]
    fn path_types_follow_nccl() {
        let sw = "/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0";
        let sw2 = "/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:00.0/0000:03:00.0";
        let gpu = place(&format!("{sw}/0000:02:08.0/0000:05:00.0"), &[sw], 0);
        let nic = place(&format!("{sw}/0000:02:10.0/0000:06:00.0"), &[sw], 0);
        let deep = place(&format!("{sw2}/0000:04:00.0/0000:07:00.0"), &[sw2, sw], 0);
        let other_sw = place("/sys/devices/pci0000:00/0000:00:02.0/0000:09:00.0/0000:0a:00.0/0000:0b:00.0", &["x"], 0);
        let other_bridge = place("/sys/devices/pci0000:40/0000:40:01.0/0000:41:00.0", &[], 0);
        let other_numa = place("/sys/devices/pci0000:80/0000:80:01.0/0000:81:00.0", &[], 1);
        assert_eq!(gpu.path_to(&nic), PathType::Pix);
        assert_eq!(gpu.path_to(&deep), PathType::Pxb);
        assert_eq!(deep.path_to(&gpu), PathType::Pxb);
        assert_eq!(gpu.path_to(&other_sw), PathType::Phb);
        assert_eq!(gpu.path_to(&other_bridge), PathType::Node);
        assert_eq!(gpu.path_to(&other_numa), PathType::Sys);
        let f1 = place("/sys/devices/pci0000:40/0000:40:01.0/0000:41:00.1", &[], 0);
        assert_eq!(other_bridge.path_to(&f1), PathType::Pix);
    }

    #[test]
    fn nccl_ranks_order_paths() {
        for t in [PathType::Nv(18), PathType::Pix, PathType::Pxb, PathType::Phb, PathType::Node, PathType::Sys] {
            assert_eq!(serde_json::from_value::<PathType>(serde_json::to_value(t).unwrap()).unwrap(), t);
        }
        assert!(serde_json::from_str::<PathType>("\"NVX\"").is_err());
        let ranks: Vec<u8> = [PathType::Nv(18), PathType::Pix, PathType::Pxb, PathType::Phb, PathType::Sys]
            .map(PathType::nccl_rank)
            .into();
        assert!(ranks.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(PathType::Node.nccl_rank(), PathType::Phb.nccl_rank());
        assert_eq!(PathType::Nv(18).to_string(), "NV18");
    }
}
