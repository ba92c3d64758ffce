//! Network interfaces, the candidates for NCCL_SOCKET_IFNAME: names and
//! states from /sys/class/net, and on a live run the addresses NCCL's
//! interface search requires (getifaddrs, as src/misc/socket.cc does).

use super::sysfs::Known;
use super::{Host, NOT_LIVE};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NetIf {
    pub name: String,
    /// `up`, `down`, `unknown` (loopback and some virtual links).
    pub operstate: Known<String>,
    /// ARPHRD type: `ether`, `infiniband` (IPoIB), `loopback` or the number.
    pub kind: Known<String>,
    /// IPv4 and non-loopback IPv6 addresses: the ones NCCL can use.
    pub addresses: Known<Vec<String>>,
}

impl NetIf {
    pub fn is_up(&self) -> bool {
        self.operstate.value().is_none_or(|s| s != "down")
    }
}

pub fn collect(host: &Host) -> Vec<NetIf> {
    let sys = &host.sys;
    let addresses = if host.live { addresses() } else { Known::unknown(NOT_LIVE) };
    sys.list("/sys/class/net")
        .into_iter()
        .map(|name| {
            let dir = format!("/sys/class/net/{name}");
            NetIf {
                operstate: sys.read(&format!("{dir}/operstate")),
                kind: sys.parse(&format!("{dir}/type"), |t| {
                    Some(match t.parse::<u32>().ok()? {
                        1 => "ether".to_string(),
                        32 => "infiniband".to_string(),
                        772 => "loopback".to_string(),
                        n => n.to_string(),
                    })
                }),
                addresses: addresses.clone().map(|a| a.get(&name).cloned().unwrap_or_default()),
                name,
            }
        })
        .collect()
}

/// Addresses by interface name, as findInterfaces sees them.
fn addresses() -> Known<BTreeMap<String, Vec<String>>> {
    let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills `list` with a linked list we free below.
    if unsafe { libc::getifaddrs(&mut list) } != 0 {
        return Known::unknown(format!("getifaddrs: {}", std::io::Error::last_os_error()));
    }
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut cur = list;
    while !cur.is_null() {
        // SAFETY: `cur` is a node of the list getifaddrs returned, alive
        // until freeifaddrs; its name is a NUL-terminated string and its
        // address, when not null, is a sockaddr of the family it states.
        let (name, addr) = unsafe {
            let ifa = &*cur;
            cur = ifa.ifa_next;
            (std::ffi::CStr::from_ptr(ifa.ifa_name).to_string_lossy().into_owned(), sockaddr_ip(ifa.ifa_addr))
        };
        // NCCL skips IPv6 loopback but keeps 127.0.0.1.
        if let Some(ip) = addr.filter(|ip| !(ip.is_ipv6() && ip.is_loopback())) {
            out.entry(name).or_default().push(ip.to_string());
        }
    }
    // SAFETY: `list` came from getifaddrs and is freed once.
    unsafe { libc::freeifaddrs(list) };
    Known::Value(out)
}

/// # Safety
/// `addr` is null or points to a sockaddr valid for its family.
unsafe fn sockaddr_ip(addr: *const libc::sockaddr) -> Option<IpAddr> {
    if addr.is_null() {
        return None;
    }
    // SAFETY: the caller vouches for `addr`; the family says which struct it is.
    unsafe {
        match (*addr).sa_family as i32 {
            libc::AF_INET => {
                let a = &*(addr as *const libc::sockaddr_in);
                Some(IpAddr::V4(Ipv4Addr::from(u32::from_be(a.sin_addr.s_addr))))
            }
            libc::AF_INET6 => {
                let a = &*(addr as *const libc::sockaddr_in6);
                Some(IpAddr::V6(Ipv6Addr::from(a.sin6_addr.s6_addr)))
            }
            _ => None,
        }
    }
}
