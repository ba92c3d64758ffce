//! Latency by pointer chase, as nvbandwidth's host_device_latency_sm and
//! device_to_device_latency_sm measure it: one thread of a kernel on GPU 0
//! follows a chain of addresses laid through pinned host memory, GPU 1's
//! memory or its own, each load waiting for the one before and fetched
//! from where the chain lives (never from the GPU's caches). The chain is
//! a random cycle over links 256 bytes apart, so that no two links share a
//! cache line and no prefetcher guesses the next; one table row per
//! footprint of the chain (see [`loads`] for what each row reads). Where the chain ended is checked against the
//! host's walk of the same cycle after every timed kernel.

use super::buffer::{Buffer, HostKind};
use super::{Bench, host_side};
use crate::error::{Error, Result};
use crate::gpu::{copy, cuda_err};
use crate::interrupt;
use crate::pattern::mix;
use crate::record::copy::{LatencyRow, LatencySeries, TestRecord};
use crate::stats::Summary;
use std::time::Instant;

/// The footprints of the chain, one row each.
pub const FOOTPRINTS: [u64; 5] = [4 << 10, 64 << 10, 1 << 20, 16 << 20, 256 << 20];
/// Bytes between two links of the chain.
const SPACING: u64 = 256;
/// Loads per timed kernel: at least this many…
pub const MIN_LOADS: u64 = 20_000;
/// …and one turn of the cycle where it is longer, up to this many.
pub const MAX_LOADS: u64 = 1 << 20;

/// Loads per kernel over a chain of `links`: one turn (each link once), at
/// least MIN_LOADS and at most MAX_LOADS. GPU memory is read through the
/// GPU's L2 even by ld.global.cv, so that a chain whose links take more
/// lines than the L2 holds (the 256 MiB row: 2^20 lines of 128 bytes)
/// reads the memory itself and a smaller one the L2, once warm; pinned
/// host memory is fetched again on every load.
fn loads(links: u64) -> u64 {
    links.clamp(MIN_LOADS, MAX_LOADS)
}

/// Where the chain lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// Pinned host memory, mapped into GPU 0.
    Host,
    /// GPU 1's memory, reached by peer access.
    Peer,
    /// GPU 0's own memory.
    Local,
}

/// The successor of each link: the links in a random order (drawn from
/// `seed`), each leading to the next and the last to the first, one cycle.
fn cycle(links: usize, seed: u64) -> Vec<usize> {
    let mut order: Vec<usize> = (0..links).collect();
    let mut state = seed;
    for i in (1..links).rev() {
        state = mix(state.wrapping_add(i as u64));
        let j = (state % i as u64) as usize;
        order.swap(i, j);
    }
    let mut next = vec![0; links];
    for w in 0..links {
        next[order[w]] = order[(w + 1) % links];
    }
    next
}

/// The link a walk of `loads` steps from link 0 ends at.
fn walk(next: &[usize], loads: u64) -> usize {
    (0..loads).fold(0, |at, _| next[at])
}

/// Every footprint of the chain on `target`, `--samples` timed kernels each.
pub fn run(b: &mut Bench, rec: &mut TestRecord, target: Target) -> Result<()> {
    if target == Target::Peer {
        if !b.has_peer(rec) {
            return Ok(());
        }
        if let Some(why) = b.blocked(0, 1) {
            rec.unavailable(why.to_string(), "use GPUs joined by NVLink or a PCIe switch that allows peer access");
            return Ok(());
        }
    }
    let largest = FOOTPRINTS[FOOTPRINTS.len() - 1];
    let bound = (target == Target::Host).then(|| b.bind_host(0));
    let mut chain = match target {
        Target::Host => b.host(HostKind::Pinned, largest)?,
        Target::Peer => b.device(1, largest)?,
        Target::Local => b.device(0, largest)?,
    };
    let end = b.device(0, 8)?;
    let (label, placement) = match target {
        Target::Host => ("pointer chase, pinned host memory", "GPU 0 reads host"),
        Target::Peer => ("pointer chase, peer memory", "GPU 0 reads GPU 1"),
        Target::Local => ("pointer chase, own memory", "GPU 0 reads GPU 0"),
    };
    let mut rows = Vec::new();
    for &footprint in &FOOTPRINTS {
        interrupt::check()?;
        rows.push(b.chase(&mut chain, &end, footprint)?);
    }
    rec.latency.push(LatencySeries { label: label.into(), placement: placement.into(), rows });
    if let Some(bound) = bound {
        host_side(rec, 0, bound.release(), [&chain]);
    }
    Ok(())
}

impl Bench {
    /// One row: the chain laid over `footprint` bytes of `chain`, followed
    /// by GPU 0 once to warm up and then `--samples` times, timed.
    fn chase(&self, chain: &mut Buffer, end: &Buffer, footprint: u64) -> Result<LatencyRow> {
        let gpu = &self.gpus[0];
        let base = chain.device_addr(gpu)?;
        let links = (footprint / SPACING) as usize;
        let next = cycle(links, mix(self.plan.config.seed ^ footprint));
        let mut words = vec![0u64; (footprint / 8) as usize];
        for (k, &n) in next.iter().enumerate() {
            words[k * (SPACING / 8) as usize] = base + n as u64 * SPACING;
        }
        let bytes: &[u8] = bytemuck::cast_slice(&words);
        match chain.host_ptr() {
            Some(_) => {
                // SAFETY: no kernel reads the chain while it is laid.
                let s = unsafe { chain.host_slice(footprint) }
                    .ok_or_else(|| Error::Runtime("internal: no host slice".into()))?;
                s.copy_from_slice(bytes);
            }
            None => {
                gpu.ctx.bind_to_thread().map_err(cuda_err("binding a context"))?;
                // The chain's buffer holds `footprint` bytes; no kernel reads it now.
                copy::to_device(base, bytes).map_err(cuda_err("laying the pointer chain"))?;
            }
        }
        let loads = loads(links as u64);
        let expected = base + walk(&next, loads) as u64 * SPACING;
        let (end_addr, stream) = (end.device_addr(gpu)?, &gpu.stream);
        let (start, stop) = (gpu.timing_event()?, gpu.timing_event()?);
        let run = || -> Result<(f64, f64, bool)> {
            let t0 = Instant::now();
            start.record(stream).map_err(cuda_err("recording an event"))?;
            self.kernels[0].chase(stream, base, loads, end_addr)?;
            stop.record(stream).map_err(cuda_err("recording an event"))?;
            stop.synchronize().map_err(cuda_err("waiting for the pointer chase"))?;
            let host = t0.elapsed().as_secs_f64();
            let device = start.elapsed_ms(&stop).map_err(cuda_err("reading event times"))? as f64 * 1e-3;
            let mut ended = 0u64;
            // `end_addr` is one u64 on GPU 0, written by the kernel the
            // synchronisation above waited for.
            copy::from_device(bytemuck::bytes_of_mut(&mut ended), end_addr)
                .map_err(cuda_err("reading where the chase ended"))?;
            if self.plan.config.corrupt_word.is_some() {
                ended ^= 1; // QBENCH_CORRUPT=copy: the word read back is flipped before its check
            }
            Ok((host, device, ended == expected))
        };
        run()?;
        let (mut host, mut device, mut wrong) = (Vec::new(), Vec::new(), 0);
        for _ in 0..self.plan.config.samples {
            let (h, d, right) = run()?;
            host.push(h / loads as f64);
            device.push(d / loads as f64);
            wrong += !right as u64;
        }
        Ok(LatencyRow {
            size: footprint,
            host: Summary::of(&host).scaled(1e6),
            device: Some(Summary::of(&device).scaled(1e6)),
            wrong_words: wrong,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every link is visited once per turn of the cycle, whatever the seed.
    #[test]
    fn the_chain_is_one_cycle_through_every_link() {
        for (links, seed) in [(16, 1), (256, 7), (4096, 0x5eed)] {
            let next = cycle(links, seed);
            let mut seen = vec![false; links];
            let mut at = 0;
            for _ in 0..links {
                assert!(!seen[at], "link {at} visited twice");
                seen[at] = true;
                at = next[at];
            }
            assert_eq!(at, 0);
            assert!(seen.iter().all(|&s| s));
            assert_eq!(walk(&next, links as u64 + 3), walk(&next, 3));
        }
        assert_ne!(cycle(64, 1), cycle(64, 2));
    }
}
