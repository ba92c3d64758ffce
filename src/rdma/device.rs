//! Which adapter, port and GID an RDMA test uses, chosen from the facts
//! `qbench probe` reports (its sysfs collector is the one source), with a
//! sentence for each way the choice can fail. The probe can call [`select`]
//! and [`loopback_pairs`] to say what `qbench rdma` would use.

use crate::error::{Error, Result};
use crate::probe::collect::rdma::{Gid, Port, RdmaDevice, RdmaFacts};
use crate::probe::collect::sysfs::Sysfs;

/// This node's adapters as the probe sees them.
pub fn facts() -> RdmaFacts {
    crate::probe::collect::rdma::collect(&Sysfs::new("/"))
}

/// The port one side of a connection uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortChoice {
    pub device: String,
    pub port: u8,
    /// The GID index of the address (RoCE always; InfiniBand only with -x).
    pub gid_index: Option<u32>,
    pub gid: [u8; 16],
    /// The GID as sysfs writes it.
    pub gid_text: String,
    pub lid: u16,
    /// `InfiniBand` or `Ethernet`.
    pub link_layer: String,
}

impl PortChoice {
    pub fn roce(&self) -> bool {
        self.link_layer == "Ethernet"
    }
}

/// Parses sysfs's "fe80:0000:…" (eight groups of four hex digits).
pub fn parse_gid(text: &str) -> Option<[u8; 16]> {
    let groups: Vec<&str> = text.trim().split(':').collect();
    if groups.len() != 8 {
        return None;
    }
    let mut gid = [0u8; 16];
    for (i, g) in groups.iter().enumerate() {
        if g.len() != 4 {
            return None;
        }
        let v = u16::from_str_radix(g, 16).ok()?;
        gid[2 * i..2 * i + 2].copy_from_slice(&v.to_be_bytes());
    }
    Some(gid)
}

fn names(facts: &RdmaFacts) -> String {
    facts.devices.iter().map(|d| d.name.as_str()).collect::<Vec<_>>().join(", ")
}

fn describe_gids(p: &Port) -> String {
    if p.gids.is_empty() {
        return "none".into();
    }
    p.gids.iter().map(|g| format!("{} {} {}", g.index, g.address(), g.kind)).collect::<Vec<_>>().join("; ")
}

/// No adapter at all: the sentence every RDMA request answers with.
fn no_rdma(facts: &RdmaFacts) -> Option<Error> {
    if !facts.class_present {
        return Some(Error::Missing(
            "no RDMA: /sys/class/infiniband does not exist (no RDMA adapter, or its driver is not loaded: modprobe mlx5_ib, or rdma_rxe for soft-RoCE)".into(),
        ));
    }
    facts.devices.is_empty().then(|| Error::Missing("no RDMA: /sys/class/infiniband lists no device".into()))
}

/// The device, port and GID for `-d`, `-i` and `-x`: the named device or
/// the first (by name) with `port` active; perftest's port 1 by default; for
/// RoCE the GID NCCL would pick (RoCE v2 holding an IPv4 address, else the
/// first RoCE v2, else the first) unless `-x` names one.
pub fn select(facts: &RdmaFacts, device: Option<&str>, port: u8, gid_index: Option<u32>) -> Result<PortChoice> {
    if let Some(e) = no_rdma(facts) {
        return Err(e);
    }
    let port_of = |d: &RdmaDevice| d.ports.iter().find(|p| p.port == port as u32).cloned();
    let dev = match device {
        Some(name) => facts.devices.iter().find(|d| d.name == name).ok_or_else(|| {
            Error::Missing(format!("no RDMA device named '{name}' here (-d): the devices are {}", names(facts)))
        })?,
        None => {
            let mut sorted: Vec<&RdmaDevice> = facts.devices.iter().collect();
            sorted.sort_by(|a, b| a.name.cmp(&b.name));
            sorted.iter().copied().find(|d| port_of(d).is_some_and(|p| p.is_active())).unwrap_or(sorted[0])
        }
    };
    choose(dev, port, gid_index)
}

/// The port and GID of one named device (see [`select`]).
fn choose(dev: &RdmaDevice, port: u8, gid_index: Option<u32>) -> Result<PortChoice> {
    let p = dev.ports.iter().find(|p| p.port == port as u32).ok_or_else(|| {
        let ports: Vec<String> = dev.ports.iter().map(|p| p.port.to_string()).collect();
        Error::Usage(format!("{} has no port {port} (-i): its ports are {}", dev.name, ports.join(", ")))
    })?;
    if !p.is_active() {
        return Err(Error::Missing(format!(
            "{} port {port} is not active (state {}, physical state {}): bring its link up, or pick another port with -d/-i",
            dev.name, p.state, p.phys_state
        )));
    }
    let gid: Option<&Gid> = match gid_index {
        Some(i) => Some(p.gids.iter().find(|g| g.index == i).ok_or_else(|| {
            Error::Usage(format!(
                "GID index {i} does not exist on {} port {port} (-x): its GIDs are {}",
                dev.name,
                describe_gids(p)
            ))
        })?),
        None if p.is_roce() => Some(
            p.gids
                .iter()
                .find(|g| g.is_roce_v2_ipv4())
                .or_else(|| p.gids.iter().find(|g| g.is_roce_v2()))
                .or_else(|| p.gids.first())
                .ok_or_else(|| {
                    Error::Missing(format!(
                        "{} port {port} is RoCE but has no GID: give its netdev an address",
                        dev.name
                    ))
                })?,
        ),
        None => None,
    };
    let (gid_bytes, gid_text) = match gid {
        Some(g) => (
            parse_gid(&g.gid).ok_or_else(|| {
                Error::Runtime(format!("{} port {port}: cannot read GID {} ('{}')", dev.name, g.index, g.gid))
            })?,
            g.gid.clone(),
        ),
        None => ([0; 16], String::new()),
    };
    let lid = p.lid.value().and_then(|l| u16::from_str_radix(l.trim().trim_start_matches("0x"), 16).ok()).unwrap_or(0);
    Ok(PortChoice {
        device: dev.name.clone(),
        port,
        gid_index: gid.map(|g| g.index),
        gid: gid_bytes,
        gid_text,
        lid,
        link_layer: p.link_layer.value().cloned().unwrap_or_default(),
    })
}

/// The pairs a loopback run tests: the two named devices (`-d A,B`), or
/// every pair of devices with `port` active; a node with one such device
/// pairs it with itself.
pub fn loopback_pairs(
    facts: &RdmaFacts,
    devices: Option<(&str, &str)>,
    port: u8,
    gid_index: Option<u32>,
) -> Result<Vec<(PortChoice, PortChoice)>> {
    if let Some((a, b)) = devices {
        return Ok(vec![(select(facts, Some(a), port, gid_index)?, select(facts, Some(b), port, gid_index)?)]);
    }
    if let Some(e) = no_rdma(facts) {
        return Err(e);
    }
    let mut active: Vec<&RdmaDevice> =
        facts.devices.iter().filter(|d| d.ports.iter().any(|p| p.port == port as u32 && p.is_active())).collect();
    active.sort_by(|a, b| a.name.cmp(&b.name));
    let Some(first) = active.first() else {
        // Let the first device say why its port cannot be used.
        let one = select(facts, None, port, gid_index)?;
        return Ok(vec![(one.clone(), one)]);
    };
    let choices: Vec<PortChoice> = active.iter().map(|d| choose(d, port, gid_index)).collect::<Result<_>>()?;
    if choices.len() == 1 {
        let one = choose(first, port, gid_index)?;
        return Ok(vec![(one.clone(), one)]);
    }
    let mut pairs = Vec::new();
    for i in 0..choices.len() {
        for j in i + 1..choices.len() {
            pairs.push((choices[i].clone(), choices[j].clone()));
        }
    }
    Ok(pairs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::collect::rdma::Coded;
    use crate::probe::collect::sysfs::Known;

    fn port(n: u32, active: bool, gids: &[(u32, &str, &str)]) -> Port {
        let coded = |code: u32, name: &str| Known::Value(Coded { code, name: name.into() });
        Port {
            port: n,
            state: if active { coded(4, "ACTIVE") } else { coded(1, "DOWN") },
            phys_state: if active { coded(5, "LinkUp") } else { coded(3, "Disabled") },
            rate: Known::Value("100 Gb/sec".into()),
            link_layer: Known::Value("Ethernet".into()),
            lid: Known::Value("0x0".into()),
            gids: gids
                .iter()
                .map(|&(index, gid, kind)| Gid {
                    index,
                    gid: gid.into(),
                    kind: Known::Value(kind.into()),
                    netdev: None,
                })
                .collect(),
        }
    }

    fn device(name: &str, ports: Vec<Port>) -> RdmaDevice {
        RdmaDevice {
            name: name.into(),
            node_guid: Known::unknown("-"),
            fw_ver: Known::unknown("-"),
            board_id: None,
            hca_type: None,
            numa_node: Known::unknown("-"),
            pci: None,
            netdevs: vec![],
            ports,
        }
    }

    const LL: &str = "fe80:0000:0000:0000:a002:d4ff:fe41:d159";
    const V4: &str = "0000:0000:0000:0000:0000:ffff:c0a8:010a";

    fn rxe() -> RdmaFacts {
        RdmaFacts {
            class_present: true,
            devices: vec![
                device("rxe1", vec![port(1, true, &[(0, LL, "RoCE v2")])]),
                device("rxe0", vec![port(1, true, &[(0, LL, "RoCE v1"), (1, LL, "RoCE v2"), (3, V4, "RoCE v2")])]),
                device("mlx5_0", vec![port(1, false, &[(0, LL, "RoCE v2")])]),
            ],
        }
    }

    #[test]
    fn picks_the_first_active_device_and_nccls_gid() {
        let c = select(&rxe(), None, 1, None).unwrap();
        assert_eq!((c.device.as_str(), c.gid_index), ("rxe0", Some(3)));
        assert_eq!(&c.gid[10..], &[0xff, 0xff, 192, 168, 1, 10]);
        let c = select(&rxe(), Some("rxe1"), 1, Some(0)).unwrap();
        assert_eq!((c.device.as_str(), c.gid_index, c.gid[0], c.gid[1]), ("rxe1", Some(0), 0xfe, 0x80));
    }

    #[test]
    fn one_sentence_for_each_wrong_choice() {
        let f = rxe();
        let e = select(&f, Some("mlx5_9"), 1, None).unwrap_err();
        assert_eq!(e.exit_code(), 3);
        assert!(e.message().contains("no RDMA device named 'mlx5_9'") && e.message().contains("rxe0"), "{e}");
        let e = select(&f, Some("mlx5_0"), 1, None).unwrap_err();
        assert_eq!(e.exit_code(), 3);
        assert!(e.message().contains("not active"), "{e}");
        let e = select(&f, Some("rxe1"), 2, None).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        let e = select(&f, Some("rxe1"), 1, Some(1)).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(
            e.message().contains("GID index 1 does not exist on rxe1 port 1") && e.message().contains("0 fe80::"),
            "{e}"
        );
        let none = RdmaFacts { class_present: false, devices: vec![] };
        assert!(select(&none, None, 1, None).unwrap_err().message().starts_with("no RDMA"));
    }

    #[test]
    fn loopback_pairs_every_active_device() {
        let pairs = loopback_pairs(&rxe(), None, 1, Some(0)).unwrap();
        assert_eq!(pairs.len(), 1);
        assert_eq!((pairs[0].0.device.as_str(), pairs[0].1.device.as_str()), ("rxe0", "rxe1"));
        let mut f = rxe();
        f.devices.retain(|d| d.name == "rxe1");
        let pairs = loopback_pairs(&f, None, 1, None).unwrap();
        assert_eq!((pairs[0].0.device.as_str(), pairs[0].1.device.as_str()), ("rxe1", "rxe1"));
        assert!(parse_gid("fe80::1").is_none());
    }
}
