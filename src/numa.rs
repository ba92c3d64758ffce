//! NUMA placement of the host side, so that host-link figures do not depend on where the scheduler put the process.
//!
//! The node a PCI device or RDMA adapter sits on, the CPUs of each node, and
//! binding the calling thread's CPUs and memory to one node as nvbandwidth
//! does, read back from the kernel so that a record states what took effect.
//! Plain syscalls (sched_setaffinity, set_mempolicy, get_mempolicy,
//! move_pages): no libnuma, and a machine without NUMA sysfs binds nothing
//! and says so.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::PathBuf;

/// Where the kernel lists the NUMA nodes (node0, node1, … each with a `cpulist`).
pub const NODES: &str = "/sys/devices/system/node";

/// The file that holds a PCI function's NUMA node (`0000:18:00.0`).
pub fn pci_node_file(bus_id: &str) -> String {
    format!("/sys/bus/pci/devices/{bus_id}/numa_node")
}

/// The file that holds an RDMA adapter's NUMA node (`mlx5_0`).
pub fn rdma_node_file(device: &str) -> String {
    format!("/sys/class/infiniband/{device}/device/numa_node")
}

/// The file that lists node `node`'s CPUs.
pub fn cpulist_file(node: u32) -> String {
    format!("{NODES}/node{node}/cpulist")
}

/// A `numa_node` file's content: a node number, or -1 when the kernel does
/// not know the device's node (one-node machines, many virtual machines).
pub fn parse_node(text: &str) -> Option<i32> {
    text.trim().parse::<i32>().ok().filter(|&n| n >= -1)
}

/// A kernel list of CPUs or nodes ("0-3,8-11", "" for none), sorted, each once.
pub fn parse_list(text: &str) -> Option<Vec<usize>> {
    let mut out = Vec::new();
    for part in text.trim().split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (a.parse::<usize>().ok()?, b.parse::<usize>().ok()?),
            None => {
                let a = part.parse::<usize>().ok()?;
                (a, a)
            }
        };
        if b < a || b >= MAX_CPUS {
            return None;
        }
        out.extend(a..=b);
    }
    out.sort_unstable();
    out.dedup();
    Some(out)
}

/// The kernel's way of writing a list: runs as "a-b", joined by commas; "none" when empty.
pub fn format_list(items: &[usize]) -> String {
    let mut runs: Vec<String> = Vec::new();
    let mut i = 0;
    while i < items.len() {
        let mut j = i;
        while j + 1 < items.len() && items[j + 1] == items[j] + 1 {
            j += 1;
        }
        runs.push(if i == j { items[i].to_string() } else { format!("{}-{}", items[i], items[j]) });
        i = j + 1;
    }
    if runs.is_empty() { "none".into() } else { runs.join(",") }
}

/// What `--numa` asks for the host side of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// The node of the device the host side works with, as nvbandwidth does.
    #[default]
    Auto,
    /// Nothing bound: the process runs where it was started.
    Off,
    /// This node, whichever the device's.
    Node(u32),
}

impl std::str::FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Mode, String> {
        match s.trim() {
            "auto" => Ok(Mode::Auto),
            "off" => Ok(Mode::Off),
            n => n.parse().map(Mode::Node).map_err(|_| format!("'{s}' is not auto, off or a NUMA node number")),
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Mode::Auto => f.write_str("auto"),
            Mode::Off => f.write_str("off"),
            Mode::Node(n) => write!(f, "{n}"),
        }
    }
}

impl Serialize for Mode {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Mode {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Mode, D::Error> {
        String::deserialize(d)?.parse().map_err(serde::de::Error::custom)
    }
}

/// The NUMA facts of a machine, read under `root` ("/" on the machine
/// itself, a fake tree in tests).
pub struct Host {
    root: PathBuf,
}

impl Host {
    pub fn new(root: impl Into<PathBuf>) -> Host {
        Host { root: root.into() }
    }

    /// This machine.
    pub fn this() -> Host {
        Host::new("/")
    }

    /// The trimmed text of `path`, or why it cannot be read.
    fn read(&self, path: &str) -> Result<String, String> {
        std::fs::read_to_string(self.root.join(path.trim_start_matches('/')))
            .map(|t| t.trim().to_string())
            .map_err(|e| format!("{path}: {e}"))
    }

    /// The node a device's `numa_node` file names: None when the kernel says -1.
    pub fn device_node(&self, file: &str) -> Result<Option<u32>, String> {
        let text = self.read(file)?;
        match parse_node(&text) {
            Some(-1) => Ok(None),
            Some(n) => Ok(Some(n as u32)),
            None => Err(format!("{file}: unexpected content {text:?}")),
        }
    }

    /// Every node the kernel lists, with its CPUs, by number.
    pub fn nodes(&self) -> Result<Vec<(u32, Vec<usize>)>, String> {
        let dir = self.root.join(NODES.trim_start_matches('/'));
        let entries = std::fs::read_dir(&dir).map_err(|e| format!("{NODES}: {e}"))?;
        let mut nodes: Vec<u32> =
            entries.flatten().filter_map(|e| e.file_name().to_str()?.strip_prefix("node")?.parse().ok()).collect();
        nodes.sort_unstable();
        if nodes.is_empty() {
            return Err(format!("{NODES} lists no node"));
        }
        nodes.into_iter().map(|n| Ok((n, self.cpus(n)?))).collect()
    }

    /// Node `node`'s CPUs.
    pub fn cpus(&self, node: u32) -> Result<Vec<usize>, String> {
        let file = cpulist_file(node);
        let text = self.read(&file)?;
        parse_list(&text).ok_or_else(|| format!("{file}: unexpected content {text:?}"))
    }

    /// The nodes that hold any of `cpus` (empty when the nodes are not listed).
    fn nodes_of(&self, cpus: &[usize]) -> Vec<u32> {
        let nodes = self.nodes().unwrap_or_default();
        nodes.into_iter().filter(|(_, c)| c.iter().any(|x| cpus.contains(x))).map(|(n, _)| n).collect()
    }

    /// The node to bind to under `mode` for the device named `device`
    /// (for sentences: "GPU 0", "mlx5_0") whose node is in `file`; Err
    /// says why nothing is bound.
    pub fn choose(&self, mode: Mode, device: &str, file: &str) -> Result<u32, String> {
        let node = match mode {
            Mode::Off => return Err("not bound (--numa off)".into()),
            Mode::Node(n) => n,
            Mode::Auto => match self.device_node(file) {
                Ok(Some(n)) => n,
                Ok(None) => return Err(format!("not bound: the kernel gives {device} no NUMA node ({file} is -1)")),
                Err(e) => return Err(format!("not bound: {device}'s NUMA node is unknown ({e})")),
            },
        };
        self.has_node(node).map(|()| node).map_err(|e| format!("not bound: {e}"))
    }

    /// Err says why there is no node `node` to bind to here.
    pub fn has_node(&self, node: u32) -> Result<(), String> {
        match self.nodes() {
            Ok(nodes) if nodes.iter().any(|(n, _)| *n == node) => Ok(()),
            Ok(nodes) => {
                let listed: Vec<usize> = nodes.iter().map(|(n, _)| *n as usize).collect();
                Err(format!("no NUMA node {node} here (nodes {})", format_list(&listed)))
            }
            Err(e) => Err(format!("no NUMA nodes listed ({e})")),
        }
    }

    /// Binds the calling thread under `mode` for the device `device` whose
    /// node is in `file` (see [`Host::choose`]), or leaves it as it is;
    /// either way, what the thread has then, read back.
    pub fn bind_for(&self, mode: Mode, device: &str, file: &str) -> Bound {
        let device_node = self.device_node(file).ok().map(|n| n.map_or(-1, |n| n as i32));
        let mut bound = match self.choose(mode, device, file) {
            Ok(node) => self.bind(node),
            Err(why) => Bound { restore: None, placement: self.placement(None, vec![why]) },
        };
        bound.placement.device_node = device_node;
        bound
    }

    /// Binds the calling thread, and the threads it starts from now on, to
    /// node `node`: its CPUs (those of them the thread may use already), and
    /// a memory policy that prefers the node for what the thread touches
    /// first. Dropping the result restores both.
    pub fn bind(&self, node: u32) -> Bound {
        let mut notes = Vec::new();
        let saved_cpus = affinity();
        let saved_policy = policy();
        match (self.cpus(node), &saved_cpus) {
            (Err(e), _) => notes.push(format!("CPUs not bound: {e}")),
            (_, Err(e)) => notes.push(format!("CPUs not bound: {e}")),
            (Ok(mine), Ok(allowed)) => {
                let both: Vec<usize> = mine.iter().copied().filter(|c| allowed.contains(c)).collect();
                if both.is_empty() {
                    notes.push(format!(
                        "CPUs not bound: node {node} has none this thread may use (it may use {})",
                        format_list(allowed)
                    ));
                } else if let Err(e) = set_affinity(&both) {
                    notes.push(format!("CPUs not bound: {e}"));
                }
            }
        }
        let cpus_bound = notes.is_empty();
        let memory_bound = set_policy(MPOL_PREFERRED, &[node as usize])
            .map_err(|e| notes.push(format!("memory not bound: {e}")))
            .is_ok();
        let restore = Restore { cpus: saved_cpus.ok(), policy: saved_policy.ok() };
        // A binding of which nothing took effect is none.
        let bound = (cpus_bound || memory_bound).then_some(node);
        if bound.is_none() {
            notes.insert(0, format!("not bound to node {node}"));
        }
        Bound { restore: Some(restore), placement: self.placement(bound, notes) }
    }

    /// What the calling thread has now: its CPUs and memory policy, read back.
    fn placement(&self, node: Option<u32>, mut notes: Vec<String>) -> Placement {
        let (cpus, cpu_nodes) = match affinity() {
            Ok(c) => (format_list(&c), self.nodes_of(&c)),
            Err(e) => {
                notes.push(e);
                ("unknown".into(), Vec::new())
            }
        };
        let memory_policy = match policy() {
            Ok((mode, nodes)) => Some(describe_policy(mode, &nodes)),
            Err(e) => {
                notes.push(e);
                None
            }
        };
        Placement { node, device_node: None, cpus, cpu_nodes, memory_policy, memory_pages: Vec::new(), notes }
    }
}

/// Where a thread and its memory were, as the kernel answered after the
/// binding (or after none).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Placement {
    /// The node bound to; None when nothing was bound (see `notes`).
    pub node: Option<u32>,
    /// The device's node from sysfs (-1: the kernel does not say); None when unreadable.
    pub device_node: Option<i32>,
    /// The CPUs the thread may run on (sched_getaffinity), as a list.
    pub cpus: String,
    /// The nodes those CPUs belong to.
    pub cpu_nodes: Vec<u32>,
    /// The thread's memory policy (get_mempolicy): "default", "preferred 1", …
    pub memory_policy: Option<String>,
    /// Where the pages of its host buffers are (move_pages), node by node,
    /// once they were written: up to [`PAGES_ASKED`] pages of each buffer,
    /// spread evenly over it.
    pub memory_pages: Vec<NodePages>,
    /// Why nothing or not everything was bound, or a fact not read back.
    pub notes: Vec<String>,
}

/// Pages found on one node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodePages {
    pub node: u32,
    pub pages: u64,
}

/// Pages of one buffer whose node is asked, at most.
pub const PAGES_ASKED: usize = 4096;

impl Placement {
    /// Asks the kernel where the pages of each `(address, bytes)` range are,
    /// and adds them to `memory_pages`; what cannot be asked goes to `notes`.
    pub fn count_pages(&mut self, ranges: &[(usize, usize)]) {
        for &(addr, len) in ranges {
            match pages_by_node(addr, len) {
                Ok(found) => {
                    for (node, pages) in found {
                        match self.memory_pages.iter_mut().find(|p| p.node == node) {
                            Some(p) => p.pages += pages,
                            None => self.memory_pages.push(NodePages { node, pages }),
                        }
                    }
                }
                Err(e) => {
                    if !self.notes.contains(&e) {
                        self.notes.push(e);
                    }
                }
            }
        }
        self.memory_pages.sort_by_key(|p| p.node);
    }
}

/// A binding in force on the calling thread, and what it took.
pub struct Bound {
    restore: Option<Restore>,
    pub placement: Placement,
}

/// What the thread had before a binding.
struct Restore {
    cpus: Option<Vec<usize>>,
    policy: Option<(i32, Vec<usize>)>,
}

impl Bound {
    /// Ends the binding (the thread gets back what it had) and gives what
    /// it took, for buffers placed under it.
    pub fn release(mut self) -> Placement {
        self.undo();
        self.placement.clone()
    }

    fn undo(&mut self) {
        if let Some(r) = self.restore.take() {
            if let Some(c) = r.cpus {
                let _ = set_affinity(&c);
            }
            if let Some((mode, nodes)) = r.policy {
                let _ = set_policy(mode, &nodes);
            }
        }
    }
}

impl Drop for Bound {
    fn drop(&mut self) {
        self.undo();
    }
}

/// CPUs (and nodes) a mask covers at most.
const MAX_CPUS: usize = 8192;
const WORDS: usize = MAX_CPUS / 64;

/// set_mempolicy's modes (include/uapi/linux/mempolicy.h).
const MPOL_DEFAULT: i32 = 0;
const MPOL_PREFERRED: i32 = 1;
/// get_mempolicy's mode carries these flags above the mode itself.
const MPOL_MODE_FLAGS: i32 = (1 << 15) | (1 << 14) | (1 << 13);

fn to_mask(items: &[usize]) -> Vec<u64> {
    let mut mask = vec![0u64; WORDS];
    for &i in items.iter().filter(|&&i| i < MAX_CPUS) {
        mask[i / 64] |= 1 << (i % 64);
    }
    mask
}

fn from_mask(mask: &[u64]) -> Vec<usize> {
    (0..mask.len() * 64).filter(|&i| mask[i / 64] & (1 << (i % 64)) != 0).collect()
}

fn errno(call: &str) -> String {
    format!("{call}: {}", std::io::Error::last_os_error())
}

/// The CPUs the calling thread may run on.
fn affinity() -> Result<Vec<usize>, String> {
    let mut mask = vec![0u64; WORDS];
    // SAFETY: the kernel writes at most the given size into `mask`, which
    // holds that many bytes.
    let rc = unsafe { libc::sched_getaffinity(0, WORDS * 8, mask.as_mut_ptr().cast()) };
    if rc != 0 { Err(errno("sched_getaffinity")) } else { Ok(from_mask(&mask)) }
}

fn set_affinity(cpus: &[usize]) -> Result<(), String> {
    let mask = to_mask(cpus);
    // SAFETY: the kernel reads the given size from `mask`, which holds that many bytes.
    let rc = unsafe { libc::sched_setaffinity(0, WORDS * 8, mask.as_ptr().cast()) };
    if rc != 0 { Err(errno("sched_setaffinity")) } else { Ok(()) }
}

/// The calling thread's memory policy: its mode and nodes.
fn policy() -> Result<(i32, Vec<usize>), String> {
    let mut mode: libc::c_int = 0;
    let mut mask = vec![0u64; WORDS];
    // SAFETY: `mode` is a live int and `mask` holds MAX_CPUS bits, the
    // maximum given; no address is asked about (flags 0).
    let rc = unsafe {
        libc::syscall(
            libc::SYS_get_mempolicy,
            &mut mode as *mut libc::c_int,
            mask.as_mut_ptr(),
            MAX_CPUS as libc::c_ulong,
            std::ptr::null::<libc::c_void>(),
            0 as libc::c_ulong,
        )
    };
    if rc != 0 { Err(errno("get_mempolicy")) } else { Ok((mode, from_mask(&mask))) }
}

fn set_policy(mode: i32, nodes: &[usize]) -> Result<(), String> {
    let mode = mode & !MPOL_MODE_FLAGS;
    let mask = to_mask(nodes);
    let (ptr, bits) = if mode == MPOL_DEFAULT { (std::ptr::null(), 0) } else { (mask.as_ptr(), MAX_CPUS + 1) };
    // SAFETY: the kernel reads `bits - 1` bits from `mask`, which holds MAX_CPUS bits.
    let rc = unsafe { libc::syscall(libc::SYS_set_mempolicy, mode as libc::c_int, ptr, bits as libc::c_ulong) };
    if rc != 0 { Err(errno("set_mempolicy")) } else { Ok(()) }
}

/// get_mempolicy's answer in words: "default", "preferred 1", "bind 0-1", …
fn describe_policy(mode: i32, nodes: &[usize]) -> String {
    let name = match mode & !MPOL_MODE_FLAGS {
        MPOL_DEFAULT => return "default".into(),
        MPOL_PREFERRED if nodes.is_empty() => return "local".into(),
        MPOL_PREFERRED => "preferred",
        2 => "bind",
        3 => "interleave",
        4 => return "local".into(),
        5 => "preferred-many",
        6 => "weighted-interleave",
        m => return format!("mode {m}"),
    };
    format!("{name} {}", format_list(nodes))
}

/// How many of the asked pages of `addr..addr+len` are on each node: up to
/// [`PAGES_ASKED`] pages spread evenly, those not in memory left out.
fn pages_by_node(addr: usize, len: usize) -> Result<Vec<(u32, u64)>, String> {
    // SAFETY: sysconf only reads a constant.
    let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096).max(1);
    let first = addr / page;
    let last = (addr + len.max(1) - 1) / page;
    let count = last - first + 1;
    let step = count.div_ceil(PAGES_ASKED).max(1);
    let pages: Vec<*const libc::c_void> =
        (first..=last).step_by(step).map(|p| (p * page) as *const libc::c_void).collect();
    let mut status = vec![0 as libc::c_int; pages.len()];
    // SAFETY: with no target nodes move_pages only reports where each page
    // is, into `status`, which has one int per address; the addresses are
    // numbers the kernel checks, never dereferenced here.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_move_pages,
            0 as libc::pid_t,
            pages.len() as libc::c_ulong,
            pages.as_ptr(),
            std::ptr::null::<libc::c_int>(),
            status.as_mut_ptr(),
            0 as libc::c_int,
        )
    };
    if rc < 0 {
        return Err(format!("pages not asked: {}", errno("move_pages")));
    }
    let mut out: Vec<(u32, u64)> = Vec::new();
    for &s in status.iter().filter(|&&s| s >= 0) {
        match out.iter_mut().find(|(n, _)| *n == s as u32) {
            Some((_, c)) => *c += 1,
            None => out.push((s as u32, 1)),
        }
    }
    match status.iter().find(|&&s| s < 0) {
        Some(&e) if out.is_empty() => Err(format!(
            "no page of a {len}-byte buffer has a node (move_pages: {})",
            std::io::Error::from_raw_os_error(-e)
        )),
        _ => Ok(out),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake root whose /sys lists `nodes` (number, cpulist) and a PCI
    /// device 0000:18:00.0 on `device_node`.
    fn tree(name: &str, nodes: &[(u32, &str)], device_node: Option<&str>) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("qbench-numa-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for (n, cpus) in nodes {
            let d = dir.join(format!("sys/devices/system/node/node{n}"));
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("cpulist"), format!("{cpus}\n")).unwrap();
        }
        if let Some(text) = device_node {
            let d = dir.join("sys/bus/pci/devices/0000:18:00.0");
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("numa_node"), format!("{text}\n")).unwrap();
        }
        dir
    }

    const GPU: &str = "/sys/bus/pci/devices/0000:18:00.0/numa_node";

    #[test]
    fn lists_parse_and_print_as_the_kernel_writes_them() {
        assert_eq!(parse_list("0-3,8-11\n"), Some(vec![0, 1, 2, 3, 8, 9, 10, 11]));
        assert_eq!(parse_list("5"), Some(vec![5]));
        assert_eq!(parse_list(""), Some(vec![]));
        assert_eq!(parse_list("3,1-2,2"), Some(vec![1, 2, 3]));
        for bad in ["a", "3-1", "1-", "-1", "0-99999"] {
            assert_eq!(parse_list(bad), None, "{bad}");
        }
        assert_eq!(format_list(&[0, 1, 2, 3, 8, 9, 10, 11]), "0-3,8-11");
        assert_eq!(format_list(&[4, 6]), "4,6");
        assert_eq!(format_list(&[]), "none");
        assert_eq!(parse_node("-1\n"), Some(-1));
        assert_eq!(parse_node("1"), Some(1));
        assert_eq!(parse_node("-2"), None);
        assert_eq!(parse_node("zz"), None);
    }

    #[test]
    fn modes_parse_from_the_command_line_and_round_trip() {
        assert_eq!("auto".parse::<Mode>(), Ok(Mode::Auto));
        assert_eq!("off".parse::<Mode>(), Ok(Mode::Off));
        assert_eq!("3".parse::<Mode>(), Ok(Mode::Node(3)));
        assert!("-1".parse::<Mode>().unwrap_err().contains("'-1'"));
        assert!("on".parse::<Mode>().is_err());
        for m in [Mode::Auto, Mode::Off, Mode::Node(7)] {
            let text = serde_json::to_string(&m).unwrap();
            assert_eq!(serde_json::from_str::<Mode>(&text).unwrap(), m);
        }
    }

    #[test]
    fn nodes_and_device_nodes_come_from_the_root() {
        let dir = tree("lookup", &[(1, "4-7"), (0, "0-3")], Some("1"));
        let host = Host::new(&dir);
        assert_eq!(host.nodes().unwrap(), vec![(0, vec![0, 1, 2, 3]), (1, vec![4, 5, 6, 7])]);
        assert_eq!(host.device_node(GPU), Ok(Some(1)));
        assert_eq!(host.choose(Mode::Auto, "GPU 0", GPU), Ok(1));
        assert_eq!(host.choose(Mode::Node(0), "GPU 0", GPU), Ok(0));
        assert_eq!(host.nodes_of(&[2, 5]), vec![0, 1]);
        let e = host.choose(Mode::Node(2), "GPU 0", GPU).unwrap_err();
        assert_eq!(e, "not bound: no NUMA node 2 here (nodes 0-1)");
        assert_eq!(host.choose(Mode::Off, "GPU 0", GPU).unwrap_err(), "not bound (--numa off)");
        let e = host.choose(Mode::Auto, "GPU 1", "/sys/bus/pci/devices/0000:2a:00.0/numa_node").unwrap_err();
        assert!(
            e.starts_with("not bound: GPU 1's NUMA node is unknown (/sys/bus/pci/devices/0000:2a:00.0/numa_node: ")
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_unknown_node_or_no_numa_sysfs_binds_nothing_and_says_why() {
        let dir = tree("unknown", &[(0, "0-3")], Some("-1"));
        let b = Host::new(&dir).bind_for(Mode::Auto, "GPU 0", GPU);
        assert_eq!(b.placement.node, None);
        assert_eq!(b.placement.device_node, Some(-1));
        assert_eq!(
            b.placement.notes,
            ["not bound: the kernel gives GPU 0 no NUMA node (/sys/bus/pci/devices/0000:18:00.0/numa_node is -1)"]
        );
        std::fs::remove_dir_all(&dir).unwrap();

        let dir = tree("bare", &[], Some("0"));
        let b = Host::new(&dir).bind_for(Mode::Auto, "GPU 0", GPU);
        assert_eq!(b.placement.node, None);
        assert!(b.placement.notes[0].starts_with("not bound: no NUMA nodes listed (/sys/devices/system/node: "));
        assert!(b.placement.cpu_nodes.is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn off_leaves_the_thread_as_it_was() {
        let before = affinity().unwrap();
        let b = Host::this().bind_for(Mode::Off, "GPU 0", GPU);
        assert_eq!(b.placement.node, None);
        assert_eq!(b.placement.notes, ["not bound (--numa off)"]);
        assert_eq!(b.placement.cpus, format_list(&before));
        assert_eq!(b.placement.memory_policy.as_deref(), Some("default"));
        drop(b);
        assert_eq!(affinity().unwrap(), before);
        assert_eq!(policy().unwrap().0, MPOL_DEFAULT);
    }

    /// Node 0 of this machine: the thread's CPUs become node 0's (those it
    /// may use), its memory policy prefers node 0, the pages it then writes
    /// are on node 0, and dropping the binding gives back what it had.
    #[test]
    fn binding_to_node_0_here_takes_effect_and_is_undone() {
        let host = Host::this();
        let node0 = host.cpus(0).expect("this machine lists node 0");
        let before = affinity().unwrap();
        let b = host.bind(0);
        assert!(b.placement.notes.is_empty(), "{:?}", b.placement.notes);
        let now = affinity().unwrap();
        let want: Vec<usize> = node0.iter().copied().filter(|c| before.contains(c)).collect();
        assert_eq!(now, want);
        assert_eq!(b.placement.cpus, format_list(&want));
        assert_eq!(b.placement.cpu_nodes, vec![0]);
        assert_eq!(b.placement.memory_policy.as_deref(), Some("preferred 0"));
        let mut p = b.placement.clone();
        let buf = vec![1u8; 1 << 20];
        p.count_pages(&[(buf.as_ptr() as usize, buf.len())]);
        assert_eq!(p.memory_pages.len(), 1, "{:?}", p.memory_pages);
        assert_eq!(p.memory_pages[0].node, 0);
        assert!(p.memory_pages[0].pages >= 256, "{:?}", p.memory_pages);
        // Pages never written have no node yet, and the record says so.
        let mut q = b.placement.clone();
        // SAFETY: a fresh private anonymous mapping, unmapped below.
        let fresh = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                1 << 16,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(fresh, libc::MAP_FAILED);
        q.count_pages(&[(fresh as usize, 1 << 16)]);
        // SAFETY: the mapping above, unmapped once.
        unsafe { libc::munmap(fresh, 1 << 16) };
        assert!(q.memory_pages.is_empty());
        assert_eq!(
            q.notes,
            ["no page of a 65536-byte buffer has a node (move_pages: No such file or directory (os error 2))"]
        );
        drop(b);
        assert_eq!(affinity().unwrap(), before);
        assert_eq!(policy().unwrap().0, MPOL_DEFAULT);
    }

    /// A fake node 0 that holds only the first CPU this thread may use:
    /// binding narrows the thread to that CPU, and dropping widens it again.
    #[test]
    fn binding_restricts_the_thread_to_the_nodes_cpus() {
        let before = affinity().unwrap();
        let first = before[0];
        let dir = tree("narrow", &[(0, &first.to_string()), (1, "8000")], Some("0"));
        let b = Host::new(&dir).bind_for(Mode::Auto, "GPU 0", GPU);
        assert_eq!(b.placement.node, Some(0));
        assert_eq!(affinity().unwrap(), vec![first]);
        assert_eq!(b.placement.cpus, first.to_string());
        assert_eq!(b.placement.cpu_nodes, vec![0]);
        drop(b);
        assert_eq!(affinity().unwrap(), before);
        // A node whose CPUs this thread may not use: CPUs left as they
        // were, memory bound only where the kernel has that node, and a
        // binding of which nothing took effect is none.
        let b = Host::new(&dir).bind(1);
        assert_eq!(affinity().unwrap(), before);
        let notes = &b.placement.notes;
        assert!(
            notes.iter().any(|n| n.starts_with("CPUs not bound: node 1 has none this thread may use")),
            "{notes:?}"
        );
        let here = Host::this().has_node(1).is_ok();
        assert_eq!(b.placement.node, here.then_some(1), "{notes:?}");
        if !here {
            assert_eq!(notes[0], "not bound to node 1", "{notes:?}");
            assert!(notes[2].starts_with("memory not bound: set_mempolicy: "), "{notes:?}");
        }
        drop(b);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
