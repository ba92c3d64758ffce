//! NUMA nodes and their CPUs as the kernel lists them, so that a GPU's or
//! an adapter's node (their own `numa_node` files) can be read against the
//! CPUs that are near it.

use super::sysfs::{Known, Sysfs};
use crate::numa::{NODES, cpulist_file, format_list, parse_list};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NumaNode {
    pub node: u32,
    /// Its CPUs, as the kernel writes a list ("0-31,64-95").
    pub cpus: Known<String>,
}

/// Every node of /sys/devices/system/node, by number; none when the
/// kernel lists none (no NUMA support, or a container that hides it).
pub fn collect(sys: &Sysfs) -> Vec<NumaNode> {
    let mut nodes: Vec<u32> = sys.list(NODES).iter().filter_map(|n| n.strip_prefix("node")?.parse().ok()).collect();
    nodes.sort_unstable();
    nodes
        .into_iter()
        .map(|node| NumaNode { node, cpus: sys.parse(&cpulist_file(node), |t| parse_list(t).map(|c| format_list(&c))) })
        .collect()
}
