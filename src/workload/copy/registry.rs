//! The registry of copy tests: each test's name, family, what it copies,
//! how its figure is defined and timed; and `--test` selection.

use super::buffer::HostKind::{self, Pageable, Pinned, WriteCombined};
use super::chase::Target;
use crate::error::{Error, Result};

/// The sizes of every latency table: 1 B to 16 MiB in powers of two, as
/// gdrcopy's copylat.
pub fn latency_sizes() -> Vec<u64> {
    (0..=24).map(|k| 1u64 << k).collect()
}

const FIG_ONE_WAY: &str = "bytes copied / time, one direction; GB/s = 1e9 bytes/s";
const FIG_BOTH_WAYS: &str = "each direction's bytes / time until both directions finished (they start together); total = their sum; GB/s = 1e9 bytes/s";
const FIG_ALL_GPUS: &str = "each GPU's bytes / time until the last GPU finished (all start together); total = their sum, the host link's aggregate; GB/s = 1e9 bytes/s";
const FIG_READ_WRITE: &str =
    "read + write bytes (2 x size) / time, as nvbandwidth's device_local_copy; GB/s = 1e9 bytes/s";
const FIG_LATENCY: &str = "time of one copy, min / median / p99 over --lat_iters copies (exact ranks of every sample)";

const TIME_HELD: &str = "CUDA events around -n back-to-back copies per stream, queued behind a hold kernel and released together; median of --samples samples after -w warm-up copies";
const TIME_PAGEABLE: &str = "CUDA events around -n back-to-back copies without a hold kernel: a copy from or to pageable memory returns only once the driver has staged it, so the host's part is in the figure; median of --samples samples after -w warm-up copies";
const TIME_LATENCY: &str = "host clock from issuing one copy until cuStreamSynchronize returns, nothing else in the loop, as gdrcopy's copylat; 'device' is CUDA events around each copy, in a separate pass";
const FIG_CHASE: &str = "time of one load of a pointer chase (each load waits for the one before), min / median / p99 over --samples kernels; size = the chain's footprint";
const TIME_CHASE: &str = "one thread of a kernel on the first GPU follows a random cycle of 8-byte addresses 256 bytes apart, one turn of it (at least 20000 links, at most 1048576), each load waiting for the one before and uncached (ld.global.cv: host memory fetched again every load, GPU memory read through its L2, so that the 256 MiB row reads the memory itself and smaller ones the warm L2), as nvbandwidth's latency tests; CUDA events around the kernel ('device') and the host clock around its launch and synchronisation, each divided by the loads; after one warm-up kernel";
const TIME_CPU: &str =
    "host clock around -n back-to-back CPU copies; median of --samples samples after -w warm-up copies";
const TIME_CPU_LATENCY: &str = "host clock around one CPU copy";

/// What a test copies; each family's file says how.
#[derive(Debug, Clone, Copy)]
pub(super) enum What {
    HostOneWay { to_gpu: bool, host: HostKind },
    HostBothWays,
    HostAllGpus { h2d: bool, d2h: bool },
    PeerOneWay { engine: Engine, by_destination: bool },
    PeerBothWays { engine: Engine },
    Local { engine: Engine },
    ZeroCopy { to_gpu: bool },
    LatencyHost { to_gpu: bool },
    LatencyPeer,
    LatencyMapped { to_gpu: bool },
    Chase { target: Target },
    ZeroCopyBothWays,
    GdrBandwidth,
    GdrLatency,
}

/// One test of the registry.
#[derive(Debug)]
pub struct Test {
    pub name: &'static str,
    pub family: &'static str,
    pub description: &'static str,
    pub(super) figure: &'static str,
    pub(super) timing: &'static str,
    pub(super) what: What,
}

const fn test(
    name: &'static str,
    family: &'static str,
    description: &'static str,
    figure: &'static str,
    timing: &'static str,
    what: What,
) -> Test {
    Test { name, family, description, figure, timing, what }
}

/// Every test, in the order `all` runs them.
pub static TESTS: &[Test] = &[
    test(
        "h2d_pinned",
        "host_device",
        "host -> GPU by the copy engine (cuMemcpyHtoDAsync) from pinned memory, each GPU alone",
        FIG_ONE_WAY,
        TIME_HELD,
        What::HostOneWay { to_gpu: true, host: Pinned },
    ),
    test(
        "d2h_pinned",
        "host_device",
        "GPU -> host by the copy engine (cuMemcpyDtoHAsync) into pinned memory, each GPU alone",
        FIG_ONE_WAY,
        TIME_HELD,
        What::HostOneWay { to_gpu: false, host: Pinned },
    ),
    test(
        "bidir_pinned",
        "host_device",
        "host -> GPU and GPU -> host at once, on two streams of one GPU, pinned memory, each GPU alone",
        FIG_BOTH_WAYS,
        TIME_HELD,
        What::HostBothWays,
    ),
    test(
        "h2d_wc",
        "host_device",
        "host -> GPU by the copy engine from write-combined pinned memory, each GPU alone",
        FIG_ONE_WAY,
        TIME_HELD,
        What::HostOneWay { to_gpu: true, host: WriteCombined },
    ),
    test(
        "d2h_wc",
        "host_device",
        "GPU -> host by the copy engine into write-combined pinned memory, each GPU alone",
        FIG_ONE_WAY,
        TIME_HELD,
        What::HostOneWay { to_gpu: false, host: WriteCombined },
    ),
    test(
        "h2d_pageable",
        "host_device",
        "host -> GPU (cuMemcpyHtoDAsync) from pageable memory, staged by the driver, each GPU alone",
        FIG_ONE_WAY,
        TIME_PAGEABLE,
        What::HostOneWay { to_gpu: true, host: Pageable },
    ),
    test(
        "d2h_pageable",
        "host_device",
        "GPU -> host (cuMemcpyDtoHAsync) into pageable memory, staged by the driver, each GPU alone",
        FIG_ONE_WAY,
        TIME_PAGEABLE,
        What::HostOneWay { to_gpu: false, host: Pageable },
    ),
    test(
        "h2d_all",
        "host_device",
        "host -> GPU on every GPU at once, pinned memory: the shared host link",
        FIG_ALL_GPUS,
        TIME_HELD,
        What::HostAllGpus { h2d: true, d2h: false },
    ),
    test(
        "d2h_all",
        "host_device",
        "GPU -> host on every GPU at once, pinned memory: the shared host link",
        FIG_ALL_GPUS,
        TIME_HELD,
        What::HostAllGpus { h2d: false, d2h: true },
    ),
    test(
        "bidir_all",
        "host_device",
        "host -> GPU and GPU -> host on every GPU at once, pinned memory",
        FIG_ALL_GPUS,
        TIME_HELD,
        What::HostAllGpus { h2d: true, d2h: true },
    ),
    test(
        "peer_ce_write",
        "peer",
        "GPU -> GPU by the source GPU's copy engine writing to its peer (cuMemcpyAsync on the source's stream, as PyTorch's tensor.copy_), every ordered pair",
        FIG_ONE_WAY,
        TIME_HELD,
        What::PeerOneWay { engine: Engine::Ce, by_destination: false },
    ),
    test(
        "peer_ce_read",
        "peer",
        "GPU -> GPU by the destination GPU's copy engine reading from its peer, every ordered pair",
        FIG_ONE_WAY,
        TIME_HELD,
        What::PeerOneWay { engine: Engine::Ce, by_destination: true },
    ),
    test(
        "peer_ce_bidir",
        "peer",
        "GPU <-> GPU both ways at once, each source's copy engine writing to its peer, every pair",
        FIG_BOTH_WAYS,
        TIME_HELD,
        What::PeerBothWays { engine: Engine::Ce },
    ),
    test(
        "peer_sm_write",
        "peer",
        "GPU -> GPU by a copy kernel on the source GPU writing to peer memory, every ordered pair",
        FIG_ONE_WAY,
        TIME_HELD,
        What::PeerOneWay { engine: Engine::Sm, by_destination: false },
    ),
    test(
        "peer_sm_read",
        "peer",
        "GPU -> GPU by a copy kernel on the destination GPU reading peer memory, every ordered pair",
        FIG_ONE_WAY,
        TIME_HELD,
        What::PeerOneWay { engine: Engine::Sm, by_destination: true },
    ),
    test(
        "peer_sm_bidir",
        "peer",
        "GPU <-> GPU both ways at once, a copy kernel on each source writing to its peer, every pair",
        FIG_BOTH_WAYS,
        TIME_HELD,
        What::PeerBothWays { engine: Engine::Sm },
    ),
    test(
        "local_ce",
        "local",
        "copy within one GPU's memory by cuMemcpyDtoDAsync, each GPU",
        FIG_READ_WRITE,
        TIME_HELD,
        What::Local { engine: Engine::Ce },
    ),
    test(
        "local_sm",
        "local",
        "copy within one GPU's memory by the copy kernel (16-byte loads and stores), each GPU",
        FIG_READ_WRITE,
        TIME_HELD,
        What::Local { engine: Engine::Sm },
    ),
    test(
        "zero_copy_read",
        "zero_copy",
        "a copy kernel reading mapped pinned host memory into device memory (the CPU-visible buffer without gdrdrv), each GPU",
        FIG_ONE_WAY,
        TIME_HELD,
        What::ZeroCopy { to_gpu: true },
    ),
    test(
        "zero_copy_write",
        "zero_copy",
        "a copy kernel writing device memory into mapped pinned host memory, each GPU",
        FIG_ONE_WAY,
        TIME_HELD,
        What::ZeroCopy { to_gpu: false },
    ),
    test(
        "zero_copy_bidir",
        "zero_copy",
        "a copy kernel reading mapped pinned host memory into the GPU and another writing the GPU's memory into it, at once on two streams, each on half the GPU's resident blocks (nvbandwidth's bidirectional SM tests), each GPU",
        FIG_BOTH_WAYS,
        TIME_HELD,
        What::ZeroCopyBothWays,
    ),
    test(
        "latency_h2d",
        "latency",
        "one cuMemcpyHtoDAsync at a time from pinned memory to the first GPU",
        FIG_LATENCY,
        TIME_LATENCY,
        What::LatencyHost { to_gpu: true },
    ),
    test(
        "latency_d2h",
        "latency",
        "one cuMemcpyDtoHAsync at a time from the first GPU into pinned memory",
        FIG_LATENCY,
        TIME_LATENCY,
        What::LatencyHost { to_gpu: false },
    ),
    test(
        "latency_peer",
        "latency",
        "one peer copy at a time by the first GPU's copy engine to the second GPU",
        FIG_LATENCY,
        TIME_LATENCY,
        What::LatencyPeer,
    ),
    test(
        "latency_mapped_read",
        "latency",
        "one copy kernel at a time on the first GPU reading mapped pinned host memory",
        FIG_LATENCY,
        TIME_LATENCY,
        What::LatencyMapped { to_gpu: true },
    ),
    test(
        "latency_mapped_write",
        "latency",
        "one copy kernel at a time on the first GPU writing mapped pinned host memory",
        FIG_LATENCY,
        TIME_LATENCY,
        What::LatencyMapped { to_gpu: false },
    ),
    test(
        "latency_chase_host",
        "latency",
        "a pointer chase by the first GPU through mapped pinned host memory: the round trip of one load over the host link (nvbandwidth's host_device_latency_sm)",
        FIG_CHASE,
        TIME_CHASE,
        What::Chase { target: Target::Host },
    ),
    test(
        "latency_chase_peer",
        "latency",
        "a pointer chase by the first GPU through the second GPU's memory: the round trip of one load over the GPU link (nvbandwidth's device_to_device_latency_sm)",
        FIG_CHASE,
        TIME_CHASE,
        What::Chase { target: Target::Peer },
    ),
    test(
        "latency_chase_local",
        "latency",
        "a pointer chase by the first GPU through its own memory: the floor the other two chases are read against",
        FIG_CHASE,
        TIME_CHASE,
        What::Chase { target: Target::Local },
    ),
    test(
        "gdrcopy_bw",
        "gdrcopy",
        "CPU copies to and from the first GPU's memory through a CPU mapping of it (gdrdrv's BAR mapping, or its dma-buf where there is no gdrdrv; gdr_copy_to_mapping, gdr_copy_from_mapping), sizes up to 16 MiB",
        FIG_ONE_WAY,
        TIME_CPU,
        What::GdrBandwidth,
    ),
    test(
        "gdrcopy_lat",
        "gdrcopy",
        "one CPU copy at a time through a CPU mapping of the first GPU's memory (gdrdrv's, or its dma-buf), as gdrcopy's copylat",
        FIG_LATENCY,
        TIME_CPU_LATENCY,
        What::GdrLatency,
    ),
];

/// The family names `--test` also accepts, each standing for its tests.
pub const FAMILIES: [&str; 6] = ["host_device", "peer", "local", "zero_copy", "latency", "gdrcopy"];

/// What the copy's work is done by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    /// A copy engine, through cuMemcpy*Async.
    Ce,
    /// The copy kernel of kernels/copy.cu, on the issuing GPU's SMs.
    Sm,
}

impl Engine {
    pub(super) fn name(self) -> &'static str {
        match self {
            Engine::Ce => "ce",
            Engine::Sm => "sm",
        }
    }
}

/// nvbandwidth 0.8's test names, each with the test of this registry that
/// makes the same copies (a bidirectional nvbandwidth test reports one
/// direction; qbench's reports both and their sum).
pub const NVBANDWIDTH: [(&str, &str); 21] = [
    ("host_to_device_memcpy_ce", "h2d_pinned"),
    ("device_to_host_memcpy_ce", "d2h_pinned"),
    ("host_to_device_bidirectional_memcpy_ce", "bidir_pinned"),
    ("device_to_host_bidirectional_memcpy_ce", "bidir_pinned"),
    ("device_to_device_memcpy_read_ce", "peer_ce_read"),
    ("device_to_device_memcpy_write_ce", "peer_ce_write"),
    ("device_to_device_bidirectional_memcpy_write_ce", "peer_ce_bidir"),
    ("all_to_host_memcpy_ce", "d2h_all"),
    ("all_to_host_bidirectional_memcpy_ce", "bidir_all"),
    ("host_to_all_memcpy_ce", "h2d_all"),
    ("host_to_all_bidirectional_memcpy_ce", "bidir_all"),
    ("host_to_device_memcpy_sm", "zero_copy_read"),
    ("device_to_host_memcpy_sm", "zero_copy_write"),
    ("host_to_device_bidirectional_memcpy_sm", "zero_copy_bidir"),
    ("device_to_host_bidirectional_memcpy_sm", "zero_copy_bidir"),
    ("device_to_device_memcpy_read_sm", "peer_sm_read"),
    ("device_to_device_memcpy_write_sm", "peer_sm_write"),
    ("device_to_device_bidirectional_memcpy_write_sm", "peer_sm_bidir"),
    ("host_device_latency_sm", "latency_chase_host"),
    ("device_to_device_latency_sm", "latency_chase_peer"),
    ("device_local_copy", "local_ce"),
];

/// nvbandwidth 0.8's tests that no test here measures yet.
const NVBANDWIDTH_MISSING: [&str; 14] = [
    "device_to_device_bidirectional_memcpy_read_ce",
    "device_to_device_bidirectional_memcpy_read_sm",
    "all_to_one_write_ce",
    "all_to_one_read_ce",
    "one_to_all_write_ce",
    "one_to_all_read_ce",
    "all_to_one_write_sm",
    "all_to_one_read_sm",
    "one_to_all_write_sm",
    "one_to_all_read_sm",
    "all_to_host_memcpy_sm",
    "all_to_host_bidirectional_memcpy_sm",
    "host_to_all_memcpy_sm",
    "host_to_all_bidirectional_memcpy_sm",
];

/// The tests `--test` names (qbench's names, families, nvbandwidth's
/// names, or all), in registry order.
pub(super) fn select(spec: &str) -> Result<Vec<&'static Test>> {
    let mut wanted: Vec<&str> = Vec::new();
    for word in spec.split(',').map(str::trim).filter(|w| !w.is_empty()) {
        if let Some(&(_, ours)) = NVBANDWIDTH.iter().find(|(theirs, _)| *theirs == word) {
            wanted.push(ours);
        } else if NVBANDWIDTH_MISSING.contains(&word) || word.starts_with("multinode_") {
            return Err(Error::Usage(format!(
                "nvbandwidth's {word} has no counterpart in qbench copy yet: qbench copy --list names the tests it has"
            )));
        } else if word == "all" {
            wanted.extend(TESTS.iter().map(|t| t.name));
        } else if FAMILIES.contains(&word) {
            wanted.extend(TESTS.iter().filter(|t| t.family == word).map(|t| t.name));
        } else if TESTS.iter().any(|t| t.name == word) {
            wanted.push(word);
        } else {
            return Err(Error::Usage(format!(
                "unknown copy test '{word}': use test names (qbench copy --list), family names ({}) or all",
                FAMILIES.join(", ")
            )));
        }
    }
    if wanted.is_empty() {
        return Err(Error::Usage("--test names no test: use test names (qbench copy --list) or all".into()));
    }
    Ok(TESTS.iter().filter(|t| wanted.contains(&t.name)).collect())
}

/// (name, meaning) of each kind of figure.
pub(super) const DEFINITIONS: [(&str, &str); 6] = [
    ("one_way", FIG_ONE_WAY),
    ("both_ways", FIG_BOTH_WAYS),
    ("all_gpus", FIG_ALL_GPUS),
    ("read_write", FIG_READ_WRITE),
    ("latency", FIG_LATENCY),
    ("chase", FIG_CHASE),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selection_by_name_family_and_all() {
        assert_eq!(select("all").unwrap().len(), TESTS.len());
        let peer: Vec<_> = select("peer").unwrap().iter().map(|t| t.name).collect();
        assert!(peer.iter().all(|n| n.starts_with("peer_")) && peer.len() == 6);
        let two: Vec<_> = select(" local_sm , h2d_pinned,local_sm").unwrap().iter().map(|t| t.name).collect();
        assert_eq!(two, ["h2d_pinned", "local_sm"]);
        assert_eq!(select("nope").unwrap_err().exit_code(), 2);
        assert_eq!(select(",").unwrap_err().exit_code(), 2);
    }

    /// nvbandwidth's names stand for the test making the same copies; one
    /// qbench has no counterpart for is one line, exit 2.
    #[test]
    fn nvbandwidth_names_select_their_counterparts() {
        let got: Vec<_> = select("device_to_device_memcpy_read_ce,host_device_latency_sm,device_local_copy")
            .unwrap()
            .iter()
            .map(|t| t.name)
            .collect();
        assert_eq!(got, ["peer_ce_read", "local_ce", "latency_chase_host"]);
        for (theirs, ours) in NVBANDWIDTH {
            assert!(TESTS.iter().any(|t| t.name == ours), "{theirs} -> {ours}");
            assert!(!NVBANDWIDTH_MISSING.contains(&theirs), "{theirs}");
        }
        let e = select("all_to_one_write_ce").unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("all_to_one_write_ce has no counterpart"), "{e}");
    }

    #[test]
    fn the_chase_timing_names_its_load_counts() {
        use super::super::chase::{MAX_LOADS, MIN_LOADS};
        assert!(TIME_CHASE.contains(&format!("at least {MIN_LOADS} links, at most {MAX_LOADS}")));
    }

    #[test]
    fn registry_names_are_unique_and_families_known() {
        for (i, t) in TESTS.iter().enumerate() {
            assert!(FAMILIES.contains(&t.family), "{}", t.name);
            assert!(TESTS[..i].iter().all(|u| u.name != t.name), "{}", t.name);
        }
    }

    #[test]
    fn latency_sizes_are_copylat_s() {
        let s = latency_sizes();
        assert_eq!((s[0], s.len(), *s.last().unwrap()), (1, 25, 16 << 20));
    }
}
