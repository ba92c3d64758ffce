//! A machine described rather than measured: a profile's `[machine]`
//! table (alone in a file of the user's, or in a readiness profile), each
//! figure checked, the latencies it leaves out named as unknown.

use super::{Level, LevelRate, Machine, Rate, WireFigures};
use crate::error::{Error, Result};
use serde::Deserialize;

/// A profile's `[machine]`: the figures a plan for such a machine prices
/// from, with where they come from.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MachineFigures {
    /// Bytes of one GPU's memory, "141G" (K, M, G, T binary; or a number).
    #[serde(deserialize_with = "size", serialize_with = "size_text")]
    pub gpu_memory: u64,
    #[serde(default = "one")]
    pub gpus_per_node: usize,
    /// A copy within a GPU, read + write, GB/s.
    pub hbm_gbps: f64,
    /// A step's kernel launch and the wait for it, µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launch_us: Option<f64>,
    /// GPU to GPU within a node, per direction, GB/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nvlink_gbps: Option<f64>,
    /// A message's latency within a node, µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nvlink_latency_us: Option<f64>,
    /// GPU to GPU across nodes (each GPU's share of the fabric), per direction, GB/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fabric_gbps: Option<f64>,
    /// A message's latency across nodes, µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fabric_latency_us: Option<f64>,
    #[serde(default)]
    pub source: String,
}

fn one() -> usize {
    1
}

fn size<'de, D: serde::Deserializer<'de>>(d: D) -> std::result::Result<u64, D::Error> {
    let text = String::deserialize(d)?;
    crate::units::parse_size(&text).map_err(|e| serde::de::Error::custom(e.message()))
}

fn size_text<S: serde::Serializer>(v: &u64, s: S) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_str(&crate::units::format_size(*v))
}

/// A file's `[machine]`, whatever else it holds, and its `[profile]` name.
#[derive(Deserialize)]
struct MachineFile {
    #[serde(default)]
    profile: Option<Named>,
    machine: Option<MachineFigures>,
}

#[derive(Deserialize)]
struct Named {
    name: Option<String>,
}

impl MachineFigures {
    /// The `[machine]` of a TOML file's text (a readiness profile or a file
    /// holding only that table), checked; errors name the file, line and key.
    pub fn from_toml(text: &str, file: &str) -> Result<(MachineFigures, Option<String>)> {
        let f: MachineFile = toml::from_str(text).map_err(|e| {
            let line = e.span().map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1);
            let at = line.map_or(String::new(), |l| format!(":{l}"));
            Error::Usage(format!("{file}{at}: {}", crate::input::bounded(e.message().trim())))
        })?;
        let m = f.machine.ok_or_else(|| {
            Error::Usage(format!("{file} has no [machine] table: --plan needs gpu_memory and hbm_gbps at least"))
        })?;
        m.check(file)?;
        Ok((m, f.profile.and_then(|p| p.name)))
    }

    /// Err naming the first key that cannot describe a machine.
    pub fn check(&self, file: &str) -> Result<()> {
        let bad = |key: &str, why: &str| Err(Error::Usage(format!("{file} [machine] {key}: {why}")));
        let positive = |v: f64| v.is_finite() && v > 0.0;
        if self.gpu_memory == 0 {
            return bad("gpu_memory", "a device holds some memory: give its bytes, \"141G\"");
        }
        if !self.gpus_per_node.is_power_of_two() {
            return bad("gpus_per_node", "a power of two from 1 (a register spreads over 2^k devices)");
        }
        if !positive(self.hbm_gbps) {
            return bad("hbm_gbps", "a positive number of GB/s");
        }
        for (key, v) in [("nvlink_gbps", self.nvlink_gbps), ("fabric_gbps", self.fabric_gbps)] {
            if v.is_some_and(|v| !positive(v)) {
                return bad(key, "a positive number of GB/s");
            }
        }
        for (key, v) in [
            ("launch_us", self.launch_us),
            ("nvlink_latency_us", self.nvlink_latency_us),
            ("fabric_latency_us", self.fabric_latency_us),
        ] {
            if v.is_some_and(|v| !(v.is_finite() && (0.0..1e6).contains(&v))) {
                return bad(key, "microseconds, from 0 to under a second");
            }
        }
        Ok(())
    }
}

impl Machine {
    /// The machine `name`'s figures describe.
    pub fn of_figures(name: &str, m: &MachineFigures) -> Machine {
        let mut unknown = Vec::new();
        let mut latency = |v: Option<f64>, what: &str, key: &str| match v {
            Some(us) => us * 1e-6,
            None => {
                unknown.push(format!("{what} ({key})"));
                0.0
            }
        };
        let local = Rate { alpha_s: latency(m.launch_us, "a step's launch", "launch_us"), gbps: m.hbm_gbps };
        let mut levels = Vec::new();
        if let Some(gbps) = m.nvlink_gbps {
            let alpha_s = latency(m.nvlink_latency_us, "a message's latency within a node", "nvlink_latency_us");
            levels.push(LevelRate { level: Level::Node, rate: Rate { alpha_s, gbps }, sharing: 1, ceiling_gbps: None });
        }
        let within = levels.clone();
        if let Some(gbps) = m.fabric_gbps {
            let alpha_s = latency(m.fabric_latency_us, "a message's latency across nodes", "fabric_latency_us");
            levels.push(LevelRate { level: Level::Fabric, rate: Rate { alpha_s, gbps }, sharing: 1, ceiling_gbps: None });
        }
        let mut wires = vec![WireFigures { name: "nccl".into(), levels, piece_amps: Some(1 << 28), overlaps: false }];
        if !within.is_empty() {
            wires.push(WireFigures { name: "p2p-ce".into(), levels: within, piece_amps: None, overlaps: false });
        }
        let source = if m.source.is_empty() { String::new() } else { format!(" ({})", m.source) };
        Machine {
            source: format!("{name}'s machine figures{source}"),
            gpu_memory: m.gpu_memory,
            gpus_per_node: m.gpus_per_node,
            host: false,
            step_s: local.alpha_s,
            dispatch: Vec::new(),
            processes_measured: false,
            local,
            unknown,
            wires,
            tables: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_with_only_a_machine_table_describes_a_machine() {
        let (m, name) =
            MachineFigures::from_toml("[machine]\ngpu_memory = \"80G\"\nhbm_gbps = 1800\n", "mine.toml").unwrap();
        assert_eq!((m.gpu_memory, m.gpus_per_node, name), (80 << 30, 1, None));
        let machine = Machine::of_figures("mine.toml", &m);
        assert_eq!(machine.unknown, ["a step's launch (launch_us)"]);
        assert_eq!(machine.wires.len(), 1);
        for (text, key) in [
            ("[machine]\ngpu_memory = \"80G\"\nhbm_gbps = 0\n", "hbm_gbps"),
            ("[machine]\ngpu_memory = \"80G\"\nhbm_gbps = nan\n", "hbm_gbps"),
            ("[machine]\ngpu_memory = \"80G\"\nhbm_gbps = 1\ngpus_per_node = 0\n", "gpus_per_node"),
            ("[machine]\ngpu_memory = \"80G\"\nhbm_gbps = 1\nfabric_gbps = -1\n", "fabric_gbps"),
            ("[machine]\ngpu_memory = \"80G\"\nhbm_gbps = 1\nlaunch_us = inf\n", "launch_us"),
        ] {
            let e = MachineFigures::from_toml(text, "mine.toml").unwrap_err().message();
            assert!(e.starts_with(&format!("mine.toml [machine] {key}:")), "{e}");
        }
        let e = MachineFigures::from_toml("[profile]\nname = \"x\"\n", "mine.toml").unwrap_err().message();
        assert!(e.contains("no [machine] table"), "{e}");
        let e =
            MachineFigures::from_toml("[machine]\ngpu_memory = \"80G\"\nhbm = 1\n", "m.toml").unwrap_err().message();
        assert!(e.starts_with("m.toml:3: unknown field `hbm`"), "{e}");
    }
}
