//! RDMA adapters as the kernel shows them in /sys/class/infiniband (what
//! ibv_devinfo prints, without needing libibverbs): devices, ports, GID
//! tables, their netdevs and where they sit on the PCI bus.

use super::sysfs::{Known, Sysfs};
use crate::probe::topo::PciPlace;
use serde::{Deserialize, Serialize};
use std::net::Ipv6Addr;

const CLASS: &str = "/sys/class/infiniband";
/// An unused GID table slot.
const ZERO_GID: &str = "0000:0000:0000:0000:0000:0000:0000:0000";

/// A sysfs value written as "<code>: <NAME>" (`4: ACTIVE`, `5: LinkUp`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Coded {
    pub code: u32,
    pub name: String,
}

impl Coded {
    fn parse(text: &str) -> Option<Coded> {
        let (code, name) = text.split_once(':')?;
        let (code, name) = (code.trim().parse().ok()?, name.trim());
        (!name.is_empty()).then(|| Coded { code, name: name.to_string() })
    }
}

impl std::fmt::Display for Coded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name)
    }
}

/// ib_port_state and phys_state codes (include/rdma/ib_verbs.h).
pub const PORT_ACTIVE: u32 = 4;
pub const PHYS_LINK_UP: u32 = 5;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Gid {
    pub index: u32,
    /// As sysfs writes it, eight groups of four hex digits.
    pub gid: String,
    /// `IB/RoCE v1` or `RoCE v2`.
    pub kind: Known<String>,
    /// The netdev a RoCE GID belongs to.
    pub netdev: Option<Known<String>>,
}

impl Gid {
    /// The address as text: `::ffff:192.168.1.10` for an IPv4 one.
    pub fn address(&self) -> String {
        let hex: String = self.gid.chars().filter(|c| *c != ':').collect();
        match u128::from_str_radix(&hex, 16) {
            Ok(v) if hex.len() == 32 => {
                let ip = Ipv6Addr::from(v);
                match ip.to_ipv4_mapped() {
                    Some(v4) => format!("::ffff:{v4}"),
                    None => ip.to_string(),
                }
            }
            _ => self.gid.clone(),
        }
    }

    pub fn is_roce_v2(&self) -> bool {
        self.kind.value().is_some_and(|k| k == "RoCE v2")
    }

    /// What NCCL picks by default: RoCE v2 holding an IPv4 address
    /// (NCCL_IB_ROCE_VERSION_NUM=2, NCCL_IB_ADDR_FAMILY=AF_INET).
    pub fn is_roce_v2_ipv4(&self) -> bool {
        self.is_roce_v2() && self.address().starts_with("::ffff:")
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Port {
    pub port: u32,
    pub state: Known<Coded>,
    pub phys_state: Known<Coded>,
    pub rate: Known<String>,
    /// `InfiniBand`, or `Ethernet` for RoCE.
    pub link_layer: Known<String>,
    pub lid: Known<String>,
    /// The GID table's used slots.
    pub gids: Vec<Gid>,
}

impl Port {
    pub fn is_active(&self) -> bool {
        self.state.value().is_some_and(|s| s.code == PORT_ACTIVE)
    }

    pub fn is_roce(&self) -> bool {
        self.link_layer.value().is_some_and(|l| l == "Ethernet")
    }

    /// Whether NCCL's IB transport takes the port: ACTIVE, and InfiniBand
    /// or Ethernet (ncclIbInitDevices).
    pub fn usable_by_nccl(&self) -> bool {
        self.is_active() && self.link_layer.value().is_some_and(|l| l == "InfiniBand" || l == "Ethernet")
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RdmaDevice {
    pub name: String,
    pub node_guid: Known<String>,
    pub fw_ver: Known<String>,
    pub board_id: Option<Known<String>>,
    pub hca_type: Option<Known<String>>,
    /// Its NUMA node (sysfs `device/numa_node`); -1 when the kernel does not say.
    pub numa_node: Known<i32>,
    /// Its PCI place; the bus id is the PCI address.
    pub pci: Option<PciPlace>,
    /// Network interfaces of the same PCI function (ib0, ens1f0np0).
    pub netdevs: Vec<String>,
    pub ports: Vec<Port>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RdmaFacts {
    /// Whether /sys/class/infiniband exists at all (the ib_core module).
    pub class_present: bool,
    pub devices: Vec<RdmaDevice>,
}

impl RdmaFacts {
    /// Every (device, port) pair.
    pub fn ports(&self) -> impl Iterator<Item = (&RdmaDevice, &Port)> {
        self.devices.iter().flat_map(|d| d.ports.iter().map(move |p| (d, p)))
    }
}

pub fn collect(sys: &Sysfs) -> RdmaFacts {
    let devices = sys.list(CLASS).into_iter().map(|name| device(sys, name)).collect();
    RdmaFacts { class_present: sys.exists(CLASS), devices }
}

fn device(sys: &Sysfs, name: String) -> RdmaDevice {
    let dir = format!("{CLASS}/{name}");
    let ports_dir = format!("{dir}/ports");
    let mut ports = Vec::new();
    for p in sys.list(&ports_dir) {
        let path = format!("{ports_dir}/{p}");
        match p.parse() {
            Ok(n) => ports.push(port(sys, &path, n)),
            Err(_) => {
                sys.fail::<()>(&path, "not a port number");
            }
        }
    }
    ports.sort_by_key(|p| p.port);
    RdmaDevice {
        node_guid: sys.read(&format!("{dir}/node_guid")),
        fw_ver: sys.read(&format!("{dir}/fw_ver")),
        board_id: sys.read_opt(&format!("{dir}/board_id")),
        hca_type: sys.read_opt(&format!("{dir}/hca_type")),
        numa_node: sys.parse(&crate::numa::rdma_node_file(&name), crate::numa::parse_node),
        pci: PciPlace::locate(sys, &format!("{dir}/device")),
        netdevs: sys.list(&format!("{dir}/device/net")),
        ports,
        name,
    }
}

fn port(sys: &Sysfs, dir: &str, number: u32) -> Port {
    let link_layer = sys.read(&format!("{dir}/link_layer"));
    // Only RoCE GIDs have a netdev; the kernel answers EINVAL for the others.
    let roce = link_layer.value().is_some_and(|l| l == "Ethernet");
    let gids_dir = format!("{dir}/gids");
    let mut gids: Vec<Gid> = sys
        .list(&gids_dir)
        .into_iter()
        .filter_map(|i| i.parse::<u32>().ok())
        .filter_map(|index| {
            let gid = sys.read(&format!("{gids_dir}/{index}")).value()?.clone();
            (gid != ZERO_GID).then(|| Gid {
                index,
                gid,
                kind: sys.read(&format!("{dir}/gid_attrs/types/{index}")),
                netdev: roce.then(|| sys.read(&format!("{dir}/gid_attrs/ndevs/{index}"))),
            })
        })
        .collect();
    gids.sort_by_key(|g| g.index);
    Port {
        port: number,
        state: sys.parse(&format!("{dir}/state"), Coded::parse),
        phys_state: sys.parse(&format!("{dir}/phys_state"), Coded::parse),
        rate: sys.read(&format!("{dir}/rate")),
        link_layer,
        lid: sys.read(&format!("{dir}/lid")),
        gids,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gid_addresses() {
        let gid = |g: &str| Gid { index: 0, gid: g.into(), kind: Known::Value("RoCE v2".into()), netdev: None };
        assert_eq!(gid("0000:0000:0000:0000:0000:ffff:c0a8:010a").address(), "::ffff:192.168.1.10");
        assert!(gid("0000:0000:0000:0000:0000:ffff:c0a8:010a").is_roce_v2_ipv4());
        assert_eq!(gid("fe80:0000:0000:0000:0202:c9ff:fe10:1234").address(), "fe80::202:c9ff:fe10:1234");
        assert!(!gid("fe80:0000:0000:0000:0202:c9ff:fe10:1234").is_roce_v2_ipv4());
        assert_eq!(gid("garbage").address(), "garbage");
    }

    #[test]
    fn coded_values() {
        assert_eq!(Coded::parse("4: ACTIVE"), Some(Coded { code: 4, name: "ACTIVE".into() }));
        assert_eq!(Coded::parse("5: LinkUp"), Some(Coded { code: 5, name: "LinkUp".into() }));
        assert_eq!(Coded::parse("ACTIVE"), None);
        assert_eq!(Coded::parse("x: ACTIVE"), None);
        assert_eq!(Coded::parse("4:"), None);
    }
}
