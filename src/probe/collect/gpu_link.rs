//! What the GPU collectors (sysfs, the CUDA driver, NVML) share, so that
//! each uses it from here and none imports another for it: a GPU's PCI bus
//! id as sysfs spells it, and its NVLinks as NVML reports them.

use super::sysfs::Known;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NvLinks {
    /// Links that report a state, and how many of those are up.
    pub links: u32,
    pub active: u32,
    /// The speed NVML gives for every active link, GB/s each way.
    pub speed_gbps: Known<f64>,
    /// Active links straight to another GPU (by bus id), and to NVSwitches.
    pub to_gpu: BTreeMap<String, u32>,
    pub to_switch: u32,
}

/// `00000000:18:00.0` (NVML) or `0000:18:00.0` (CUDA) as sysfs spells it.
pub fn normalize_bus_id(id: &str) -> String {
    let id = id.trim().to_ascii_lowercase();
    match id.split_once(':') {
        Some((domain, rest)) => match u32::from_str_radix(domain, 16) {
            Ok(d) => format!("{d:04x}:{rest}"),
            Err(_) => id,
        },
        None => id,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bus_ids_are_spelled_like_sysfs() {
        assert_eq!(normalize_bus_id("00000000:18:00.0"), "0000:18:00.0");
        assert_eq!(normalize_bus_id("0000:3B:00.0"), "0000:3b:00.0");
        assert_eq!(normalize_bus_id("00000001:c1:00.0\n"), "0001:c1:00.0");
    }
}
