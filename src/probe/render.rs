//! Renderings of a probe: detail tables per section and the verdict table
//! for people, one JSON document (schema qbench.probe.v1) for programs.

use crate::probe::checks::{Check, Status};
use crate::probe::collect::Facts;
use crate::probe::collect::sysfs::Known;
use crate::probe::topo::PciPlace;
use crate::report::fit;
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};

pub const SCHEMA: &str = "qbench.probe.v1";

/// Past this many rows a table of the text report shows the first ones
/// and counts the rest; `qbench probe --json` has every one.
const ROWS: usize = 64;

/// Past this many GPUs and RDMA devices together the topology matrix (one
/// cell per pair) is summarised: each GPU's nearest adapters.
const MATRIX: usize = 16;

/// The line under a table that showed `ROWS` of `total` rows.
fn more(total: usize, noun: &str) -> String {
    match total.saturating_sub(ROWS) {
        0 => String::new(),
        n => format!("\n  … and {n} more {noun} (qbench probe --json lists every one)"),
    }
}

#[derive(Serialize)]
struct Report<'a> {
    schema: &'static str,
    host: &'a crate::probe::collect::HostFacts,
    facts: &'a Facts,
    checks: &'a [Check],
    verdict: Status,
}

pub fn json(facts: &Facts, checks: &[Check], verdict: Status) -> String {
    let report = Report { schema: SCHEMA, host: &facts.host, facts, checks, verdict };
    serde_json::to_string_pretty(&report).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
}

/// [`Report`] read back.
#[derive(Deserialize)]
struct Reread {
    host: crate::probe::collect::HostFacts,
    facts: Facts,
    checks: Vec<Check>,
    verdict: Status,
}

/// The text report of `qbench probe --json`'s document in `json`, as the
/// probe printed it (fitted to `width`); None when `json` is not one.
pub fn reread(json: &str, width: Option<usize>) -> Option<Result<String>> {
    let value: serde_json::Value = serde_json::from_str(json).ok()?;
    if value.get("schema").and_then(|s| s.as_str()) != Some(SCHEMA) {
        return None;
    }
    Some(
        serde_json::from_value::<Reread>(value)
            .map(|r| text(&Facts { host: r.host, ..r.facts }, &r.checks, r.verdict, width))
            .map_err(|e| Error::Usage(format!("not a valid {SCHEMA} report: {e}"))),
    )
}

/// The report for people; `width` (stdout's terminal, None for a pipe or a
/// file) wraps the tables' widest columns to fit it.
pub fn text(facts: &Facts, checks: &[Check], verdict: Status, width: Option<usize>) -> String {
    let h = &facts.host;
    let mut head = format!("qbench probe: host {}, kernel {}", h.hostname, h.kernel);
    if !h.live {
        head.push_str(&format!(", facts read under {} (GPU libraries not queried)", h.root));
    }
    let mut out = fit::hanging("", &head, width) + "\n";
    let mut section = |title: &str, body: String| out.push_str(&format!("\n{title}\n{body}\n"));
    section("NUMA nodes", numa(facts, width));
    section("GPUs", gpus(facts, width));
    section("Topology (as nvidia-smi topo -m)", topology(facts, width));
    section("RDMA ports", rdma(facts, width));
    section("GPUDirect", gdr(facts, width));
    section("Network interfaces", net(facts, width));
    section("NCCL", nccl(facts, width));
    section("MPI", mpi(facts));
    section("Verdict", verdict_table(checks, width));
    let n = |s: Status| checks.iter().filter(|c| c.status == s).count();
    out.push_str(&format!(
        "\nverdict: {verdict} ({} FAIL, {} WARN, {} PASS, {} SKIP)\n",
        n(Status::Fail),
        n(Status::Warn),
        n(Status::Pass),
        n(Status::Skip)
    ));
    out
}

/// A table, fitted to `width` when one is given.
fn table(header: &[&str], rows: Vec<Vec<String>>, width: Option<usize>) -> tabled::Table {
    crate::report::fit::table(crate::report::table(header.iter().map(|s| s.to_string()), rows), width)
}

/// The value, or "?N" with the reason as note N (printed under the table).
fn cell<T: std::fmt::Display>(k: &Known<T>, notes: &mut Vec<String>) -> String {
    match k {
        Known::Value(v) => v.to_string(),
        Known::Unknown { unknown } => note(unknown, notes),
    }
}

fn note(reason: &str, notes: &mut Vec<String>) -> String {
    let n = match notes.iter().position(|x| x == reason) {
        Some(i) => i + 1,
        None => {
            notes.push(reason.to_string());
            notes.len()
        }
    };
    format!("?{n}")
}

/// `table` and its notes under it, each wrapped to `width` under itself.
fn with_notes(table: String, notes: &[String], width: Option<usize>) -> String {
    let mut s = table;
    for (i, n) in notes.iter().enumerate() {
        s.push('\n');
        s.push_str(&fit::hanging(&format!("  ?{}: ", i + 1), n, width));
    }
    s
}

fn gib(bytes: &u64) -> String {
    format!("{:.1} GiB", *bytes as f64 / (1u64 << 30) as f64)
}

/// At most eight names, then how many more.
fn few(names: &[String]) -> String {
    match names.len() {
        0 => "-".into(),
        n if n > 8 => format!("{} and {} more", names[..8].join(", "), n - 8),
        _ => names.join(", "),
    }
}

/// The GPUs and the RDMA devices whose `numa_node` says `node` (-1: none).
fn devices_on(f: &Facts, node: i32) -> (Vec<String>, Vec<String>) {
    let gpus = f.gpu.gpus.iter().enumerate().filter(|(_, g)| g.numa_node.value() == Some(&node));
    let nics = f.rdma.devices.iter().filter(|d| d.numa_node.value() == Some(&node));
    (gpus.map(|(i, _)| format!("GPU{i}")).collect(), nics.map(|d| d.name.clone()).collect())
}

/// Each node's CPUs and the GPUs and RDMA devices on it: what `qbench
/// copy` and `qbench rdma` bind their host side to.
fn numa(f: &Facts, width: Option<usize>) -> String {
    if f.numa_nodes.is_empty() {
        return format!("none listed ({}): qbench binds nothing to a node", crate::numa::NODES);
    }
    let mut notes = Vec::new();
    let rows = f
        .numa_nodes
        .iter()
        .take(ROWS)
        .map(|n| {
            let (gpus, nics) = devices_on(f, n.node as i32);
            vec![n.node.to_string(), cell(&n.cpus, &mut notes), few(&gpus), few(&nics)]
        })
        .collect();
    let mut t = table(&["NODE", "CPUS", "GPUS", "RDMA DEVICES"], rows, width).to_string();
    t.push_str(&more(f.numa_nodes.len(), "nodes"));
    let (gpus, nics) = devices_on(f, -1);
    let unplaced: Vec<String> = gpus.into_iter().chain(nics).collect();
    if !unplaced.is_empty() {
        t.push_str(&format!("\n  on no node (numa_node -1): {}", few(&unplaced)));
    }
    with_notes(t, &notes, width)
}

fn gpus(f: &Facts, width: Option<usize>) -> String {
    if f.gpu.gpus.is_empty() {
        return "none".into();
    }
    let mut notes = Vec::new();
    let rows = f
        .gpu
        .gpus
        .iter()
        .enumerate()
        .map(|(i, g)| {
            let nvlink = match &g.nvlink {
                Known::Value(l) => format!("{}/{} up, {} GB/s", l.active, l.links, cell(&l.speed_gbps, &mut notes)),
                Known::Unknown { unknown } => note(unknown, &mut notes),
            };
            vec![
                format!("GPU{i}"),
                g.bus_id.clone(),
                cell(&g.name, &mut notes),
                cell(&g.numa_node, &mut notes),
                cell(&g.memory_bytes.clone().map(|b| gib(&b)), &mut notes),
                cell(&g.compute_capability, &mut notes),
                cell(&g.cuda_ordinal, &mut notes),
                nvlink,
            ]
        })
        .collect();
    let d = &f.gpu.driver;
    let module = d.kernel_module.as_ref().map_or("not loaded".to_string(), |m| m.to_string());
    let driver = format!(
        "nvidia kernel module {module}; CUDA driver API: {}; NVML: {}",
        cell(&d.cuda.clone().map(|c| format!("CUDA {}", c.version)), &mut notes),
        cell(&d.nvml.clone().map(|n| format!("driver {}", n.driver_version)), &mut notes)
    );
    let t = table(&["GPU", "BUS ID", "NAME", "NUMA", "MEMORY", "CC", "CUDA #", "NVLINK"], rows, width).to_string();
    // The UUIDs apart: beside the rest no row fits a terminal.
    let uuids = f.gpu.gpus.iter().enumerate().map(|(i, g)| vec![format!("GPU{i}"), cell(&g.uuid, &mut notes)]).collect();
    let uuids = table(&["GPU", "UUID"], uuids, width);
    with_notes(format!("{driver}\n{t}\n{uuids}"), &notes, width)
}

fn topology(f: &Facts, width: Option<usize>) -> String {
    let gpus = &f.gpu.gpus;
    let nics = &f.rdma.devices;
    if gpus.is_empty() && nics.is_empty() {
        return "no GPU and no RDMA device".into();
    }
    if gpus.len() + nics.len() > MATRIX {
        return nearest(f, width);
    }
    let names: Vec<String> =
        (0..gpus.len()).map(|i| format!("GPU{i}")).chain(nics.iter().map(|d| d.name.clone())).collect();
    let gpu_gpu = |a: usize, b: usize| {
        f.gpu
            .pairs
            .iter()
            .find(|p| (p.a, p.b) == (a.min(b), a.max(b)))
            .and_then(|p| p.path.value())
            .map_or("?".to_string(), |t| t.to_string())
    };
    let gpu_nic = |g: usize, n: usize| {
        f.gdr
            .gpu_nic
            .iter()
            .find(|p| p.gpu == gpus[g].bus_id && p.nic == nics[n].name)
            .map_or("?".to_string(), |p| p.path.to_string())
    };
    let nic_nic = |a: &Option<PciPlace>, b: &Option<PciPlace>| match (a, b) {
        (Some(a), Some(b)) => a.path_to(b).to_string(),
        _ => "?".to_string(),
    };
    let numa = |i: usize| {
        if i < gpus.len() {
            gpus[i].numa_node.value().map(i32::to_string)
        } else {
            nics[i - gpus.len()].numa_node.value().map(i32::to_string)
        }
        .unwrap_or_else(|| "?".into())
    };
    let rows = (0..names.len())
        .map(|i| {
            let mut row = vec![names[i].clone()];
            row.extend((0..names.len()).map(|j| match (i == j, i < gpus.len(), j < gpus.len()) {
                (true, _, _) => "X".to_string(),
                (_, true, true) => gpu_gpu(i, j),
                (_, true, false) => gpu_nic(i, j - gpus.len()),
                (_, false, true) => gpu_nic(j, i - gpus.len()),
                (_, false, false) => nic_nic(&nics[i - gpus.len()].pci, &nics[j - gpus.len()].pci),
            }));
            row.push(numa(i));
            row
        })
        .collect();
    let mut header: Vec<&str> = vec![""];
    header.extend(names.iter().map(String::as_str));
    header.push("NUMA");
    let source = match f.gpu.pairs.first().map(|p| p.source.as_str()) {
        Some("nvml") => "GPU pairs from NVML, the rest from sysfs PCI paths",
        Some(_) => "from sysfs PCI paths: NVLinks are not visible there",
        None => "from sysfs PCI paths",
    };
    let key = format!(
        "X self, NV# bonded NVLinks, PIX one PCIe switch, PXB several switches, PHB through a host bridge,\n  NODE between host bridges of one NUMA node, SYS across CPUs; {source}"
    );
    let key = if width.is_some() { fit::hanging("  ", &key.replace("\n  ", " "), width) } else { format!("  {key}") };
    format!("{}\n{key}", table(&header, rows, width))
}

/// The topology of a node too large for the matrix: for each GPU, the
/// nearest RDMA devices and the path to them.
fn nearest(f: &Facts, width: Option<usize>) -> String {
    let (gpus, nics) = (&f.gpu.gpus, &f.rdma.devices);
    let head = format!(
        "{} GPUs and {} RDMA devices: {} pairs, more than a matrix can show; qbench probe --json has every pair",
        gpus.len(),
        nics.len(),
        (gpus.len() + nics.len()) * (gpus.len() + nics.len() - 1) / 2
    );
    if gpus.is_empty() || nics.is_empty() {
        return head;
    }
    let rows: Vec<Vec<String>> = gpus
        .iter()
        .take(ROWS)
        .enumerate()
        .map(|(i, g)| {
            let pairs: Vec<_> = f.gdr.gpu_nic.iter().filter(|p| p.gpu == g.bus_id).collect();
            let Some(best) = pairs.iter().map(|p| p.path).min_by_key(|t| t.nccl_rank()) else {
                return vec![format!("GPU{i}"), "?".into(), "0".into(), String::new()];
            };
            let at: Vec<&str> = pairs.iter().filter(|p| p.path == best).map(|p| p.nic.as_str()).collect();
            let named = match at.len() {
                n if n > 4 => format!("{} and {} more", at[..4].join(", "), n - 4),
                _ => at.join(", "),
            };
            vec![format!("GPU{i}"), best.to_string(), at.len().to_string(), named]
        })
        .collect();
    let t = table(&["GPU", "NEAREST PATH", "ADAPTERS AT IT", "THEY ARE"], rows, width);
    format!("{head}\n{t}{}", more(gpus.len(), "GPUs"))
}

/// The adapters, their ports and the ports' GIDs: three tables, so that
/// each fits a terminal where one row of everything would not.
fn rdma(f: &Facts, width: Option<usize>) -> String {
    if f.rdma.devices.is_empty() {
        return "none".into();
    }
    let mut notes = Vec::new();
    let devices = f
        .rdma
        .devices
        .iter()
        .take(ROWS)
        .map(|d| {
            vec![
                d.name.clone(),
                d.pci.as_ref().map_or("?".to_string(), |p| p.bus_id().to_string()),
                cell(&d.numa_node, &mut notes),
                cell(&d.node_guid, &mut notes),
                cell(&d.fw_ver, &mut notes),
                d.board_id.as_ref().map_or(String::new(), |b| cell(b, &mut notes)),
            ]
        })
        .collect();
    let head = ["DEVICE", "PCI", "NUMA", "NODE GUID", "FIRMWARE", "BOARD"];
    let mut s = table(&head, devices, width).to_string() + &more(f.rdma.devices.len(), "devices");
    let (mut ports, mut gids) = (Vec::new(), Vec::new());
    for (d, p) in f.rdma.ports().take(ROWS) {
        let port = format!("{}/{}", d.name, p.port);
        ports.push(vec![
            port.clone(),
            cell(&p.state.clone().map(|s| s.name), &mut notes),
            cell(&p.phys_state.clone().map(|s| s.name), &mut notes),
            cell(&p.rate, &mut notes),
            cell(&p.link_layer, &mut notes),
            cell(&p.lid, &mut notes),
            d.netdevs.join(", "),
        ]);
        gids.extend(p.gids.iter().map(|g| {
            let netdev = g.netdev.as_ref().and_then(|n| n.value()).map_or(String::new(), String::clone);
            vec![port.clone(), g.index.to_string(), g.address(), g.kind.value().map_or("?", String::as_str).into(), netdev]
        }));
    }
    let head = ["PORT", "STATE", "PHYS", "RATE", "LINK", "LID", "NETDEV"];
    s.push_str(&format!("\n{}{}", table(&head, ports, width), more(f.rdma.ports().count(), "ports")));
    if !gids.is_empty() {
        let total = gids.len();
        gids.truncate(ROWS);
        let head = ["PORT", "GID", "ADDRESS", "TYPE", "NETDEV"];
        s.push_str(&format!("\n{}{}", table(&head, gids, width), more(total, "GIDs")));
    }
    with_notes(s, &notes, width)
}

/// "a, b", or "none" for no items.
fn joined_or_none(items: impl Iterator<Item = String>) -> String {
    let items: Vec<String> = items.collect();
    if items.is_empty() { "none".to_string() } else { items.join(", ") }
}

fn gdr(f: &Facts, width: Option<usize>) -> String {
    let g = &f.gdr;
    let peer = joined_or_none(g.peer_memory.iter().map(|m| format!("{} ({})", m.path, m.version)));
    let gdrdrv = if g.gdrdrv_device { "present" } else { "absent" };
    let mut s = format!("peer-memory module: {peer}\n/dev/gdrdrv: {gdrdrv}");
    if !g.gpu_nic.is_empty() {
        let gpu_index =
            |bus: &str| f.gpu.gpus.iter().position(|x| x.bus_id == bus).map_or(bus.to_string(), |i| format!("GPU{i}"));
        let numa = |same: Option<bool>| match same {
            Some(true) => "same",
            Some(false) => "apart",
            None => "?",
        };
        let rows = g
            .gpu_nic
            .iter()
            .take(ROWS)
            .map(|p| vec![gpu_index(&p.gpu), p.nic.clone(), p.path.to_string(), numa(p.same_numa_node).into()])
            .collect();
        s.push('\n');
        s.push_str(&table(&["GPU", "NIC", "PCIe PATH", "NUMA NODE"], rows, width).to_string());
        s.push_str(&more(g.gpu_nic.len(), "GPU-adapter pairs"));
    }
    if let Some(line) = numa_apart(f) {
        s.push('\n');
        s.push_str(&fit::hanging("", &line, width));
    }
    s
}

/// The GPUs with RDMA devices on other NUMA nodes and none on their own,
/// in a sentence; None when there are none (or the nodes are unknown).
fn numa_apart(f: &Facts) -> Option<String> {
    let apart: Vec<String> = f
        .gpu
        .gpus
        .iter()
        .enumerate()
        .filter(|(_, g)| {
            let mine = || f.gdr.gpu_nic.iter().filter(|p| p.gpu == g.bus_id);
            mine().any(|p| p.same_numa_node == Some(false)) && !mine().any(|p| p.same_numa_node == Some(true))
        })
        .map(|(i, g)| format!("GPU{i} (node {})", g.numa_node))
        .collect();
    let (one, n) = (apart.len() == 1, apart.len());
    (n > 0).then(|| {
        format!(
            "NUMA: {} {} no RDMA device on {} node: {} traffic to the network crosses the CPUs' interconnect (NCCL's SYS path)",
            few(&apart),
            if one { "has" } else { "have" },
            if one { "its" } else { "their" },
            if one { "its" } else { "their" },
        )
    })
}

fn net(f: &Facts, width: Option<usize>) -> String {
    if f.net.is_empty() {
        return "none".into();
    }
    let mut notes = Vec::new();
    let rows = f
        .net
        .iter()
        .take(ROWS)
        .map(|i| {
            vec![
                i.name.clone(),
                cell(&i.operstate, &mut notes),
                cell(&i.kind, &mut notes),
                cell(&i.addresses.clone().map(|a| a.join(" ")), &mut notes),
            ]
        })
        .collect();
    let t = table(&["INTERFACE", "STATE", "TYPE", "ADDRESSES"], rows, width).to_string();
    with_notes(t + &more(f.net.len(), "interfaces"), &notes, width)
}

fn nccl(f: &Facts, width: Option<usize>) -> String {
    let n = &f.nccl;
    let mut notes = Vec::new();
    let plugin =
        n.net_plugin.found.clone().unwrap_or_else(|| format!("none (tried {})", n.net_plugin.tried.join(", ")));
    let mut s = format!(
        "library: {}, version {}\nnet plugin: {plugin}",
        cell(&n.library.path, &mut notes),
        cell(&n.library.version, &mut notes)
    );
    s = with_notes(s, &notes, width);
    if n.variables.is_empty() {
        s.push_str("\nno NCCL_* variable set");
    } else {
        let rows =
            n.variables.iter().take(ROWS).map(|v| vec![v.name.clone(), v.value.clone(), v.source.clone()]).collect();
        s.push('\n');
        s.push_str(&table(&["VARIABLE", "VALUE", "SOURCE"], rows, width).to_string());
        s.push_str(&more(n.variables.len(), "variables"));
    }
    s
}

fn mpi(f: &Facts) -> String {
    let m = &f.mpi;
    let launchers = joined_or_none(m.launchers.iter().map(|l| format!("{} → {}", l.path, l.target)));
    format!(
        "launchers: {launchers}\nlibrary: {}\nbuilt with MPI: {}",
        m.library.as_deref().unwrap_or("none"),
        if m.built_with_mpi { "yes" } else { "no" }
    )
}

/// The checks with what was found and the remedy: those two columns
/// wrapped at fixed widths, or, when that is still wider than the terminal,
/// the status first and the remedy under the finding, wrapped to fit it.
/// Past [`ROWS`] checks, the FAILs and WARNs come first, then the others
/// while room is left, in the checks' order; a line counts those left out.
fn verdict_table(checks: &[Check], width: Option<usize>) -> String {
    let shown = shown(checks);
    let rows = shown
        .iter()
        .map(|c| {
            vec![c.check.clone(), c.status.to_string(), fit::words(&c.found, 64).join("\n"), fit::words(&c.fix, 52).join("\n")]
        })
        .collect();
    let t = table(&["CHECK", "STATUS", "FOUND", "FIX"], rows, None);
    let t = match width {
        Some(w) if t.total_width() > w => {
            let rows = shown
                .iter()
                .map(|c| {
                    let fix = if c.fix.is_empty() { String::new() } else { format!("\nfix: {}", c.fix) };
                    vec![c.status.to_string(), c.check.clone(), format!("{}{fix}", c.found)]
                })
                .collect();
            table(&["STATUS", "CHECK", "FOUND, AND THE FIX"], rows, width).to_string()
        }
        _ => t.to_string(),
    };
    let left: Vec<&Check> = checks.iter().filter(|c| !shown.iter().any(|s| std::ptr::eq(*s, *c))).collect();
    if left.is_empty() {
        return t;
    }
    let of = |s: Status| left.iter().filter(|c| c.status == s).count();
    let counts: Vec<String> = [Status::Fail, Status::Warn, Status::Pass, Status::Skip]
        .into_iter()
        .filter(|&s| of(s) > 0)
        .map(|s| format!("{} {s}", of(s)))
        .collect();
    format!("{t}\n  … and {} more checks ({}; qbench probe --json lists every one)", left.len(), counts.join(", "))
}

/// The checks the verdict table shows: all of them up to [`ROWS`], else
/// the FAILs and WARNs first and the rest while room is left, in order.
fn shown(checks: &[Check]) -> Vec<&Check> {
    if checks.len() <= ROWS {
        return checks.iter().collect();
    }
    let bad = |c: &Check| matches!(c.status, Status::Fail | Status::Warn);
    let room = ROWS.saturating_sub(checks.iter().filter(|c| bad(c)).count().min(ROWS));
    let mut others = 0;
    let mut bads = 0;
    checks
        .iter()
        .filter(|c| {
            if bad(c) {
                bads += 1;
                bads <= ROWS
            } else {
                others += 1;
                others <= room
            }
        })
        .collect()
}
