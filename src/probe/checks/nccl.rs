//! NCCL checks: the library, its net plugin, and every NCCL variable that
//! is set, judged against what is really on this node the way NCCL itself
//! will read it (see nccl_env for the parsing rules).

use super::gpu::label;
use super::{Check, and_list};
use crate::probe::collect::Facts;
use crate::probe::collect::nccl::NcclVar;
use crate::probe::collect::net::NetIf;
use crate::probe::collect::rdma::{Port, RdmaDevice};
use crate::probe::collect::sysfs::Known;
use crate::probe::nccl_env::{
    ALGORITHMS, IfList, Level, ListEntry, MAX_IB_DEVS, MAX_IFS, PROTOCOLS, check_tuning_list, strtoll,
};

pub fn checks(f: &Facts) -> Vec<Check> {
    let mut out = vec![library(f), net_plugin(f)];
    out.extend(f.nccl.variables.iter().filter_map(|v| variable(f, v)));
    out
}

fn variable(f: &Facts, v: &NcclVar) -> Option<Check> {
    Some(match v.name.as_str() {
        "NCCL_IB_HCA" => ib_hca(f, v),
        "NCCL_SOCKET_IFNAME" => socket_ifname(f, v),
        "NCCL_IB_DISABLE" => with_integer(v, |n| ib_disable(f, v, n)),
        "NCCL_IB_GID_INDEX" => with_integer(v, |n| gid_index(f, v, n)),
        "NCCL_NET_GDR_LEVEL" => level(v, "GPUDirect RDMA is allowed up to"),
        "NCCL_P2P_LEVEL" => p2p_level(f, v),
        "NCCL_P2P_DISABLE" => p2p_disable(f, v),
        "NCCL_SHM_DISABLE" => with_integer(v, |n| shm_disable(f, v, n)),
        "NCCL_ALGO" => tuning(v, &ALGORITHMS),
        "NCCL_PROTO" => tuning(v, &PROTOCOLS),
        "NCCL_DEBUG" => debug(v),
        "NCCL_NVLS_ENABLE" => with_integer(v, |n| nvls(v, n)),
        _ => return None,
    })
}

fn name(v: &NcclVar) -> String {
    format!("nccl.env {}", v.name)
}

/// `NAME=value`, and where it came from when not the environment.
fn setting(v: &NcclVar) -> String {
    if v.source == "environment" {
        format!("{}={}", v.name, v.value)
    } else {
        format!("{}={} (from {})", v.name, v.value, v.source)
    }
}

/// The check `judge` makes of an integer variable as NCCL reads it, or
/// the check that says how NCCL misreads it.
fn with_integer(v: &NcclVar, judge: impl FnOnce(i64) -> Check) -> Check {
    integer(v).map_or_else(|misread| misread, judge)
}

/// An integer variable as NCCL reads it (strtoll, base 0), or the check
/// that says how NCCL misreads it.
fn integer(v: &NcclVar) -> Result<i64, Check> {
    if v.value.is_empty() {
        return Err(Check::warn(
            name(v),
            format!("{}: empty, so NCCL uses its default", setting(v)),
            format!("unset {} or give it a number", v.name),
        ));
    }
    match strtoll(&v.value, 0) {
        Some(p) if p.whole => Ok(p.value),
        Some(p) => Err(Check::warn(
            name(v),
            format!("{}: NCCL reads this as {}", setting(v), p.value),
            format!("write the number alone, e.g. {}={}", v.name, p.value),
        )),
        None => Err(Check::warn(
            name(v),
            format!("{}: out of range, so NCCL uses its default", setting(v)),
            "give it a small integer",
        )),
    }
}

fn library(f: &Facts) -> Check {
    const NAME: &str = "nccl.library";
    let lib = &f.nccl.library;
    match (&lib.path, &lib.version) {
        (Known::Value(path), Known::Value(version)) => {
            let how = if lib.cudarc_name {
                ""
            } else {
                " (by its soname libnccl.so.2; qbench links it by that name when a benchmark starts)"
            };
            Check::pass(NAME, format!("NCCL {version} at {path}{how}"))
        }
        (Known::Value(path), version) if !f.host.live => Check::pass(NAME, format!("{path}; version {version}")),
        (Known::Value(path), version) => Check::fail(
            NAME,
            format!("{path} found, but {version}"),
            "reinstall NCCL for this CUDA major version (apt install libnccl2, or pip install nvidia-nccl-cu12 and point QBENCH_NCCL_LIB at its libnccl.so.2)",
        ),
        (Known::Unknown { unknown }, _) => {
            let found = format!("NCCL not found: {unknown}");
            let fix = "install NCCL (apt install libnccl2), or pip install nvidia-nccl-cu12 and point QBENCH_NCCL_LIB at its libnccl.so.2";
            if f.gpu.gpus.is_empty() {
                Check::warn(NAME, format!("{found} (needed on GPU nodes only)"), fix)
            } else {
                Check::fail(NAME, found, fix)
            }
        }
    }
}

fn net_plugin(f: &Facts) -> Check {
    const NAME: &str = "nccl.net_plugin";
    let plugin = &f.nccl.net_plugin;
    let internal = "NCCL uses its internal IB and socket transports";
    match (&plugin.found, f.nccl.var("NCCL_NET_PLUGIN")) {
        _ if plugin.tried.is_empty() => Check::pass(NAME, format!("NCCL_NET_PLUGIN=none: {internal}")),
        (Some(path), _) => Check::pass(NAME, format!("{path}: NCCL loads this plugin for inter-node traffic")),
        (None, None) => Check::pass(NAME, format!("no libnccl-net.so on the loader path: {internal}")),
        (None, Some(v)) => Check::warn(
            NAME,
            format!("{}: none of {} found, so {internal}", setting(v), and_list(&plugin.tried)),
            "install the plugin in a loader directory or add its directory to LD_LIBRARY_PATH; unset NCCL_NET_PLUGIN if no plugin is wanted",
        ),
    }
}

fn port_name(d: &RdmaDevice, p: &Port) -> String {
    format!("{}:{}", d.name, p.port)
}

fn entry_text(e: &ListEntry) -> String {
    if e.port == -1 { e.prefix.clone() } else { format!("{}:{}", e.prefix, e.port) }
}

/// NCCL_IB_HCA naming the ACTIVE ports of this node: `=` in front when a
/// plain name would also match longer ones (mlx5_1 and mlx5_10).
fn hca_suggestion(f: &Facts) -> Option<String> {
    let ports: Vec<(&RdmaDevice, &Port)> = f.rdma.ports().filter(|(_, p)| p.usable_by_nccl()).collect();
    if ports.is_empty() {
        return None;
    }
    let ambiguous =
        ports.iter().any(|(d, _)| f.rdma.devices.iter().any(|o| o.name != d.name && o.name.starts_with(&d.name)));
    let list: Vec<String> = ports.iter().map(|(d, p)| port_name(d, p)).collect();
    Some(format!("NCCL_IB_HCA={}{}", if ambiguous { "=" } else { "" }, list.join(",")))
}

fn ib_hca(f: &Facts, v: &NcclVar) -> Check {
    let list = IfList::parse(&v.value, MAX_IB_DEVS);
    let ports: Vec<(&RdmaDevice, &Port)> = f.rdma.ports().collect();
    if f.rdma.devices.is_empty() {
        return Check::fail(
            name(v),
            format!("{}, but this node has no RDMA device", setting(v)),
            "NCCL falls back to TCP sockets: fix the adapter's driver (see rdma.devices), or unset NCCL_IB_HCA on nodes without RDMA",
        );
    }
    let selected: Vec<String> = ports
        .iter()
        .filter(|(d, p)| p.usable_by_nccl() && list.selects(&d.name, p.port as i32))
        .map(|(d, p)| port_name(d, p))
        .collect();
    let problems = hca_problems(f, v, &list, &ports);
    let found: Vec<&str> = problems.iter().map(|(p, _)| p.as_str()).collect();
    if selected.is_empty() {
        return no_active_port(f, v, &ports, &found);
    }
    let selects = format!("{} selects {}", setting(v), and_list(&selected));
    if problems.is_empty() {
        return Check::pass(name(v), selects);
    }
    let fixes: Vec<&str> = problems.iter().map(|(_, fix)| fix.as_str()).collect();
    Check::warn(name(v), format!("{selects}; {}", found.join("; ")), fixes.join("; "))
}

/// What is wrong with an NCCL_IB_HCA list here, each problem with its own
/// remedy: entries that match nothing, entries that name only ports that
/// are not ACTIVE, and names that also match longer ones as prefixes.
fn hca_problems(f: &Facts, v: &NcclVar, list: &IfList, ports: &[(&RdmaDevice, &Port)]) -> Vec<(String, String)> {
    let matches = |e: &ListEntry| -> Vec<&(&RdmaDevice, &Port)> {
        ports.iter().filter(|(d, p)| list.entry_matches(e, &d.name, p.port as i32)).collect()
    };
    let mut problems: Vec<(String, String)> = Vec::new();
    let dead: Vec<String> = list.entries.iter().filter(|e| matches(e).is_empty()).map(entry_text).collect();
    if !dead.is_empty() {
        let verb = if dead.len() == 1 { "matches" } else { "match" };
        problems
            .push((format!("{} {verb} no device or port here", and_list(&dead)), format!("drop {}", and_list(&dead))));
    }
    if !list.exclude {
        let idle: Vec<String> = list
            .entries
            .iter()
            .filter(|e| {
                let m = matches(e);
                !m.is_empty() && m.iter().all(|(_, p)| !p.usable_by_nccl())
            })
            .map(entry_text)
            .collect();
        if !idle.is_empty() {
            let verb = if idle.len() == 1 { "names" } else { "name" };
            problems.push((
                format!("{} only {verb} ports that are not ACTIVE", and_list(&idle)),
                format!("bring those ports up (see rdma.port) or drop {}", and_list(&idle)),
            ));
        }
    }
    if !list.exact {
        problems.extend(prefix_overlaps(f, v, list));
    }
    problems
}

/// Entries that name a device here and, NCCL matching prefixes, longer
/// names too (mlx5_1 and mlx5_10), with the exact list as the remedy.
fn prefix_overlaps(f: &Facts, v: &NcclVar, list: &IfList) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for e in &list.entries {
        let others: Vec<&str> = f
            .rdma
            .devices
            .iter()
            .map(|d| d.name.as_str())
            .filter(|n| *n != e.prefix && n.starts_with(&e.prefix))
            .collect();
        if f.rdma.devices.iter().any(|d| d.name == e.prefix) && !others.is_empty() {
            let rest = v.value.strip_prefix('^').unwrap_or(&v.value);
            let exact = format!("{}={rest}", if list.exclude { "^" } else { "" });
            out.push((
                format!("{} also matches {} (NCCL matches prefixes)", e.prefix, and_list(&others)),
                format!("write NCCL_IB_HCA={exact} to match names exactly"),
            ));
        }
    }
    out
}

/// The failure of a list that selects no ACTIVE port: what it found wrong,
/// the ports here with their states, and the list that would work.
fn no_active_port(f: &Facts, v: &NcclVar, ports: &[(&RdmaDevice, &Port)], found: &[&str]) -> Check {
    let here: Vec<String> = ports
        .iter()
        .map(|(d, p)| format!("{} {}", port_name(d, p), p.state.value().map_or("state unknown", |s| s.name.as_str())))
        .collect();
    let why = if found.is_empty() { String::new() } else { format!(": {}", found.join("; ")) };
    Check::fail(
        name(v),
        format!(
            "{} selects no ACTIVE port{why} (ports here: {}); NCCL falls back to TCP sockets",
            setting(v),
            and_list(&here)
        ),
        match hca_suggestion(f) {
            Some(s) => {
                format!("set {s} (the ACTIVE ports here), or unset NCCL_IB_HCA to let NCCL use every ACTIVE port")
            }
            None => "no port here is ACTIVE: bring one up first (see rdma.port)".to_string(),
        },
    )
}

/// The interface NCCL would pick itself: ib* first, then anything but
/// docker* and lo (ncclFindInterfaces).
fn socket_suggestion(net: &[NetIf]) -> Option<&str> {
    let usable = |i: &&NetIf| i.is_up() && i.addresses.value().is_none_or(|a| !a.is_empty());
    net.iter()
        .filter(usable)
        .find(|i| i.name.starts_with("ib"))
        .or_else(|| net.iter().filter(usable).find(|i| !i.name.starts_with("docker") && !i.name.starts_with("lo")))
        .map(|i| i.name.as_str())
}

fn socket_ifname(f: &Facts, v: &NcclVar) -> Check {
    let example = socket_suggestion(&f.net).map_or_else(String::new, |s| format!(", e.g. NCCL_SOCKET_IFNAME={s}"));
    if v.value.len() <= 1 {
        return Check::warn(
            name(v),
            format!("{}: NCCL ignores a value shorter than two characters and picks an interface itself", setting(v)),
            format!("name the interface on the cluster's network{example}"),
        );
    }
    let list = IfList::parse(&v.value, MAX_IFS);
    let matched: Vec<&NetIf> = f.net.iter().filter(|i| list.selects(&i.name, -1)).collect();
    let all: Vec<&str> = f.net.iter().map(|i| i.name.as_str()).collect();
    let bootstrap =
        "NCCL cannot bootstrap (\"no socket interface found\") and its IB transport finds no IP interface either";
    if matched.is_empty() {
        return Check::fail(
            name(v),
            format!(
                "{} matches no interface (interfaces here: {})",
                setting(v),
                if all.is_empty() { "none".to_string() } else { and_list(&all) }
            ),
            format!("set it to the interface on the cluster's network{example}: without one {bootstrap}"),
        );
    }
    let names: Vec<&str> = matched.iter().map(|i| i.name.as_str()).collect();
    // NCCL only considers interfaces with an IPv4 or IPv6 address.
    let addressed: Vec<&&NetIf> =
        matched.iter().filter(|i| i.addresses.value().is_none_or(|a| !a.is_empty())).collect();
    if addressed.is_empty() {
        return Check::fail(
            name(v),
            format!(
                "{} matches {}, which {} no IP address",
                setting(v),
                and_list(&names),
                if names.len() == 1 { "has" } else { "have" }
            ),
            format!("give it an address (for IPoIB: `ip addr add <a.b.c.d/n> dev {}`): {bootstrap}", names[0]),
        );
    }
    if addressed.iter().all(|i| !i.is_up()) {
        return Check::fail(
            name(v),
            format!(
                "{} matches {}, which {} down",
                setting(v),
                and_list(&names),
                if names.len() == 1 { "is" } else { "are" }
            ),
            format!("`ip link set {} up` (an IPoIB interface also needs its IB port ACTIVE)", names[0]),
        );
    }
    let described: Vec<String> = addressed
        .iter()
        .map(|i| match i.addresses.value() {
            Some(a) => format!("{} ({}, {})", i.name, i.operstate, a.join(" ")),
            None => format!("{} ({})", i.name, i.operstate),
        })
        .collect();
    if addressed.iter().all(|i| i.name == "lo") {
        return Check::warn(
            name(v),
            format!("{} matches only the loopback interface: other nodes cannot reach it", setting(v)),
            format!("use the interface on the cluster's network{example}"),
        );
    }
    Check::pass(name(v), format!("{} matches {}", setting(v), and_list(&described)))
}

/// Ports NCCL's IB transport would use: ACTIVE and chosen by NCCL_IB_HCA.
fn nccl_ports(f: &Facts) -> Vec<(&RdmaDevice, &Port)> {
    let list = f.nccl.var("NCCL_IB_HCA").map(|v| IfList::parse(&v.value, MAX_IB_DEVS));
    f.rdma
        .ports()
        .filter(|(d, p)| p.usable_by_nccl() && list.as_ref().is_none_or(|l| l.selects(&d.name, p.port as i32)))
        .collect()
}

fn ib_disable(f: &Facts, v: &NcclVar, n: i64) -> Check {
    let active: Vec<String> =
        f.rdma.ports().filter(|(_, p)| p.usable_by_nccl()).map(|(d, p)| port_name(d, p)).collect();
    if n == 0 {
        return Check::pass(name(v), format!("{}: NCCL's IB transport is on", setting(v)));
    }
    if active.is_empty() {
        return Check::pass(name(v), format!("{}: no ACTIVE RDMA port here anyway", setting(v)));
    }
    Check::fail(
        name(v),
        format!(
            "{} while {} {} ACTIVE: NCCL will use TCP sockets between nodes",
            setting(v),
            and_list(&active),
            if active.len() == 1 { "is" } else { "are" }
        ),
        "unset NCCL_IB_DISABLE (or set it to 0) so that NCCL uses RDMA",
    )
}

fn gid_index(f: &Facts, v: &NcclVar, n: i64) -> Check {
    if n < 0 {
        return Check::pass(name(v), format!("{}: NCCL chooses the GID itself", setting(v)));
    }
    let roce: Vec<(&RdmaDevice, &Port)> = nccl_ports(f).into_iter().filter(|(_, p)| p.is_roce()).collect();
    if roce.is_empty() {
        return Check::pass(
            name(v),
            format!("{}: no ACTIVE RoCE port for it to apply to (InfiniBand ports are addressed by LID)", setting(v)),
        );
    }
    let mut missing = Vec::new();
    let mut v1 = Vec::new();
    let mut good = Vec::new();
    for (d, p) in &roce {
        let used: Vec<String> = p.gids.iter().map(|g| g.index.to_string()).collect();
        match p.gids.iter().find(|g| i64::from(g.index) == n) {
            None => missing.push(format!("{} has no GID {n} (used: {})", port_name(d, p), used.join(", "))),
            Some(g) if !g.is_roce_v2() => v1.push(format!("{} GID {n} is {}", port_name(d, p), g.kind)),
            Some(g) => good.push(format!("{} GID {n} = {} (RoCE v2)", port_name(d, p), g.address())),
        }
    }
    let v2_index = roce.iter().flat_map(|(_, p)| p.gids.iter()).find(|g| g.is_roce_v2_ipv4()).map(|g| g.index);
    let pick = v2_index.map_or_else(|| "a RoCE v2 index".to_string(), |i| format!("the RoCE v2 index {i}"));
    if !missing.is_empty() {
        return Check::fail(
            name(v),
            format!("{}: {}; RDMA connections using it fail", setting(v), and_list(&missing)),
            format!("set NCCL_IB_GID_INDEX to {pick} from the GID table, or unset it to let NCCL choose"),
        );
    }
    if !v1.is_empty() {
        return Check::warn(
            name(v),
            format!("{}: {}, which is not routable beyond one L2 segment", setting(v), and_list(&v1)),
            format!("use {pick}, or unset it to let NCCL choose (RoCE v2 by default)"),
        );
    }
    Check::pass(name(v), format!("{}: {}", setting(v), and_list(&good)))
}

fn unknown_level(v: &NcclVar) -> Check {
    Check::warn(
        name(v),
        format!("{}: not a level NCCL knows, so it keeps its default", setting(v)),
        "use LOC, PIX, PXB, PHB or SYS (upper case, as NCCL compares them), or an old-style number 0–5",
    )
}

fn level(v: &NcclVar, meaning: &str) -> Check {
    match Level::parse(&v.value) {
        Some(l) => Check::pass(name(v), format!("{}: {meaning} {}", setting(v), l.name())),
        None => unknown_level(v),
    }
}

fn p2p_level(f: &Facts, v: &NcclVar) -> Check {
    let Some(l) = Level::parse(&v.value) else {
        return unknown_level(v);
    };
    let beyond: Vec<String> = f
        .gpu
        .pairs
        .iter()
        .filter_map(|p| {
            p.path.value().filter(|t| t.nccl_rank() > l.rank).map(|t| format!("{}–{} {t}", label(p.a), label(p.b)))
        })
        .collect();
    if beyond.is_empty() {
        return Check::pass(name(v), format!("{}: P2P allowed up to {}", setting(v), l.name()));
    }
    Check::warn(
        name(v),
        format!(
            "{}: no P2P between {}, which {} beyond {}",
            setting(v),
            and_list(&beyond),
            if beyond.len() == 1 { "is" } else { "are" },
            l.name()
        ),
        "NCCL copies through host memory between those GPUs: unset NCCL_P2P_LEVEL unless P2P over that path is known to be broken",
    )
}

/// ncclGetLevel: only the value 1 disables P2P.
fn p2p_disabled(f: &Facts) -> bool {
    f.nccl.var("NCCL_P2P_DISABLE").and_then(|v| strtoll(&v.value, 0)).is_some_and(|p| p.value == 1)
}

fn p2p_disable(f: &Facts, v: &NcclVar) -> Check {
    if !p2p_disabled(f) {
        return Check::pass(name(v), format!("{}: P2P stays on (only the value 1 turns it off)", setting(v)));
    }
    if f.gpu.gpus.len() < 2 {
        return Check::pass(name(v), format!("{}: no effect with fewer than two GPUs", setting(v)));
    }
    Check::warn(
        name(v),
        format!(
            "{}: NCCL will not use NVLink or PCIe peer copies between this node's GPUs, only host memory (SHM)",
            setting(v)
        ),
        "unset NCCL_P2P_DISABLE unless P2P is known to be broken here (then see gpu.peer_access)",
    )
}

fn shm_disable(f: &Facts, v: &NcclVar, n: i64) -> Check {
    if n != 0 && p2p_disabled(f) && f.gpu.gpus.len() > 1 {
        return Check::warn(
            name(v),
            format!(
                "{} with NCCL_P2P_DISABLE=1: traffic between this node's GPUs goes through the network",
                setting(v)
            ),
            "unset NCCL_SHM_DISABLE or NCCL_P2P_DISABLE",
        );
    }
    let effect = if n != 0 { "the SHM transport is off" } else { "the SHM transport is on" };
    Check::pass(name(v), format!("{}: {effect}", setting(v)))
}

fn tuning(v: &NcclVar, names: &[&str]) -> Check {
    match check_tuning_list(&v.value, names) {
        Ok(()) => Check::pass(
            name(v),
            format!(
                "{}: forces NCCL's choice, so results describe this setting rather than NCCL's own tuning",
                setting(v)
            ),
        ),
        Err(why) => Check::fail(
            name(v),
            format!("{}: NCCL refuses to create a communicator: {why}", setting(v)),
            format!(
                "use names from {} (any case), optionally per collective: allreduce:{};broadcast:{}",
                names.join(", "),
                names[0],
                names[1]
            ),
        ),
    }
}

fn debug(v: &NcclVar) -> Check {
    const LEVELS: [&str; 5] = ["VERSION", "WARN", "INFO", "ABORT", "TRACE"];
    if LEVELS.iter().any(|l| l.eq_ignore_ascii_case(&v.value)) {
        return Check::pass(name(v), setting(v));
    }
    Check::warn(
        name(v),
        format!("{}: not a level NCCL knows ({})", setting(v), LEVELS.join(", ")),
        "NCCL_DEBUG=INFO makes NCCL print the transport it picks for every connection",
    )
}

fn nvls(v: &NcclVar, n: i64) -> Check {
    if n == 0 {
        return Check::pass(name(v), format!("{}: NVLink multicast off", setting(v)));
    }
    Check::warn(
        name(v),
        format!("{}: NVLink SHARP (multicast) requested", setting(v)),
        "set NCCL_NVLS_ENABLE=0: qbench runs with NVLink multicast off",
    )
}
