//! RDMA checks: adapters present, every port up, and on RoCE ports a GID
//! NCCL's default selection can use.

use super::{Check, and_list, count};
use crate::probe::collect::Facts;
use crate::probe::collect::rdma::{PHYS_LINK_UP, Port, RdmaDevice};

pub fn checks(f: &Facts) -> Vec<Check> {
    let rdma = &f.rdma;
    if rdma.devices.is_empty() {
        let where_ = if rdma.class_present { "/sys/class/infiniband is empty" } else { "no /sys/class/infiniband" };
        return vec![Check::warn(
            "rdma.devices",
            format!(
                "no RDMA device ({where_}): NCCL will carry inter-node traffic over TCP sockets (NET/Socket); single-node runs are unaffected"
            ),
            "if this node has an InfiniBand or RoCE adapter, load its RDMA driver (modprobe mlx5_ib, or mlx4_ib for ConnectX-3) and install rdma-core; otherwise run single-node only",
        )];
    }
    let list: Vec<String> = rdma.devices.iter().map(describe_device).collect();
    let mut out = vec![Check::pass("rdma.devices", format!("{}: {}", count(list.len(), "device"), and_list(&list)))];
    let any_active = rdma.ports().any(|(_, p)| p.is_active());
    for (d, p) in rdma.ports() {
        out.push(port(d, p, any_active));
        if p.is_active() && p.is_roce() {
            out.push(roce_gid(d, p));
        }
    }
    out
}

fn describe_device(d: &RdmaDevice) -> String {
    let pci = d.pci.as_ref().map_or("PCI address unknown", |p| p.bus_id());
    format!("{} ({pci}, firmware {})", d.name, d.fw_ver)
}

fn port(d: &RdmaDevice, p: &Port, any_active: bool) -> Check {
    let name = format!("rdma.port {}/{}", d.name, p.port);
    let roce = p.is_roce();
    let layer = if roce { "Ethernet (RoCE)".to_string() } else { p.link_layer.to_string() };
    let found = format!("{}, {}, {}, {layer}", p.state, p.phys_state, p.rate);
    if p.is_active() {
        let detail = if roce { format!("netdev {}", netdevs(d, p)) } else { format!("LID {}", p.lid) };
        return Check::pass(name, format!("{found}, {detail}"));
    }
    let phys = p.phys_state.value().map(|s| s.code);
    let fix = match (p.state.value().map(|s| s.name.as_str()), phys) {
        (None, _) => "the port state could not be read: compare with `ibstat`, and reload the driver if sysfs is incomplete".to_string(),
        (_, Some(3)) => format!("the port is disabled: enable it (ibportstate, or `ip link set {} up` for RoCE)", netdevs(d, p)),
        (_, Some(2)) | (_, Some(1)) => {
            format!("no link: check the cable, the transceiver and the switch port (`mlxlink -d {}`, `ibstat`)", d.name)
        }
        (Some("INIT") | Some("ARMED"), Some(PHYS_LINK_UP)) if !roce => {
            "the link is up but no subnet manager has activated the port: run opensm on one node of the fabric, or check the fabric's SM (`sminfo`)".to_string()
        }
        _ if roce => format!("bring the netdev up (`ip link set {} up`) and check the cable and switch port", netdevs(d, p)),
        _ => "check the port with `ibstat` and the switch side of the link".to_string(),
    };
    if p.state.value().is_none() {
        return Check::warn(name, found, fix);
    }
    let found = format!("{found}: NCCL does not use a port that is not ACTIVE");
    if any_active {
        Check::warn(name, found, fix)
    } else {
        Check::fail(name, format!("{found}, and no port here is"), fix)
    }
}

/// The port's network interfaces: those of the adapter's PCI function,
/// else (soft-RoCE, whose rxe0 has no PCI device) those its GIDs name.
fn netdevs(d: &RdmaDevice, p: &Port) -> String {
    if !d.netdevs.is_empty() {
        return d.netdevs.join(",");
    }
    let mut names: Vec<&str> = p.gids.iter().filter_map(|g| g.netdev.as_ref()?.value().map(String::as_str)).collect();
    names.sort_unstable();
    names.dedup();
    if names.is_empty() { "<netdev>".to_string() } else { names.join(",") }
}

/// Whether a RoCE port has a GID that NCCL's default choice can use.
fn roce_gid(d: &RdmaDevice, p: &Port) -> Check {
    let name = format!("rdma.gid {}/{}", d.name, p.port);
    match p.gids.iter().find(|g| g.is_roce_v2_ipv4()) {
        Some(g) => Check::pass(name, format!("RoCE v2 GID index {} = {}", g.index, g.address())),
        None => Check::warn(
            name,
            format!(
                "no RoCE v2 GID with an IPv4 address among {} GIDs: NCCL's default GID choice finds none",
                p.gids.len()
            ),
            format!(
                "give the netdev an IPv4 address (`ip addr add <a.b.c.d/n> dev {}`), or set NCCL_IB_GID_INDEX to a RoCE v2 index",
                netdevs(d, p)
            ),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::collect::rdma::{Coded, Gid};
    use crate::probe::collect::sysfs::Known;

    /// rxe0 has no PCI function, so no netdev under it: its GIDs name veth0.
    #[test]
    fn soft_roce_ports_name_the_netdev_of_their_gids() {
        let coded = |code: u32, name: &str| Known::Value(Coded { code, name: name.into() });
        let gid = Gid {
            index: 0,
            gid: "fe80:0000:0000:0000:a002:d4ff:fe41:d159".into(),
            kind: Known::Value("RoCE v2".into()),
            netdev: Some(Known::Value("veth0".into())),
        };
        let p = Port {
            port: 1,
            state: coded(4, "ACTIVE"),
            phys_state: coded(5, "LinkUp"),
            rate: Known::Value("100 Gb/sec".into()),
            link_layer: Known::Value("Ethernet".into()),
            lid: Known::Value("0x0".into()),
            gids: vec![gid.clone(), Gid { index: 1, ..gid }],
        };
        let d = RdmaDevice {
            name: "rxe0".into(),
            node_guid: Known::unknown("-"),
            fw_ver: Known::unknown("-"),
            board_id: None,
            hca_type: None,
            numa_node: Known::unknown("-"),
            pci: None,
            netdevs: vec![],
            ports: vec![p.clone()],
        };
        let c = port(&d, &p, true);
        assert!(c.found.ends_with("Ethernet (RoCE), netdev veth0"), "{}", c.found);
        let bare = Port { gids: vec![], ..p.clone() };
        assert!(port(&d, &bare, true).found.ends_with("netdev <netdev>"));
        let pci = RdmaDevice { netdevs: vec!["ens1f0np0".into()], ..d };
        assert!(port(&pci, &p, true).found.ends_with("netdev ens1f0np0"));
    }
}
