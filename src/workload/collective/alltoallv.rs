//! alltoallv: an all-to-all whose blocks differ in size, as nccl-tests'
//! alltoallv_perf generates them. The size is what each rank sends in all;
//! rank i sends rank j the share `(1 − s)·uniform + s·distance` of it, where
//! the distance is (j − i) mod n, both parts rounded down to 16 bytes, and s
//! is `NCCL_TESTS_ALLTOALLV_SPREAD` (0 uniform … 1 by distance, the
//! default). Every rank sends and receives the same total; each rank's
//! output is the blocks it receives, in rank order. Issued as a send and a
//! receive to and from every rank with a non-empty block.

use super::{OpUse, Spec, aligned_block};
use crate::dtype::DataType;
use crate::error::{Error, Result};
use crate::transport::{Call, Collective, Counts, Primitives, Source};
use std::sync::OnceLock;

const SPREAD: &str = "NCCL_TESTS_ALLTOALLV_SPREAD";
const MATRIX: &str = "NCCL_TESTS_ALLTOALLV_MATRIX_FILE";

pub struct AllToAllV;

/// The spread the environment asks for, clamped to 0..=1 as nccl-tests
/// does; Err when it is not a number or a traffic matrix is asked for.
fn asked_spread() -> std::result::Result<f64, String> {
    if let Some(file) = std::env::var_os(MATRIX) {
        return Err(format!(
            "{MATRIX}={} (nccl-tests' alltoallv traffic matrix) cannot be honoured: qbench generates the \
             pattern, shaped by {SPREAD}",
            file.to_string_lossy()
        ));
    }
    match std::env::var(SPREAD) {
        Err(_) => Ok(1.0),
        Ok(v) => match v.trim().parse::<f64>() {
            Ok(s) if !s.is_nan() => Ok(s.clamp(0.0, 1.0)),
            _ => Err(format!("{SPREAD}={v}: give a number from 0 (uniform) to 1 (weighted by distance)")),
        },
    }
}

fn asked() -> &'static std::result::Result<f64, String> {
    static ASKED: OnceLock<std::result::Result<f64, String>> = OnceLock::new();
    ASKED.get_or_init(asked_spread)
}

/// The spread of this run (`fits` has rejected a run whose environment
/// asks for none).
fn spread() -> f64 {
    *asked().as_ref().unwrap_or(&1.0)
}

/// Elements of `dtype` that rank `from` sends rank `to` when each sends
/// `total` bytes in all over `n` ranks (nccl-tests'
/// AlltoAllvGetPeerBytesDistanceWeighted, in the same double arithmetic).
fn peer_count(from: usize, to: usize, n: usize, total: u64, spread: f64, dtype: DataType) -> u64 {
    let bytes = if n == 1 {
        total
    } else {
        let distance = ((to + n - from) % n) as f64;
        let sum = (n * (n - 1) / 2) as f64;
        let uniform = total as f64 / n as f64;
        let weighted = distance * total as f64 / sum;
        ((1.0 - spread) * uniform + spread * weighted) as u64
    };
    (bytes & !15) / dtype.size() as u64
}

/// The bytes each rank sends in all for the count column `param`.
fn total(param: u64, n: usize, dtype: DataType) -> u64 {
    param * n as u64 * dtype.size() as u64
}

impl Collective for AllToAllV {
    fn name(&self) -> &'static str {
        "alltoallv"
    }
    fn issue(&self, p: &mut dyn Primitives, c: &Call) -> Result<()> {
        let (n, s, t) = (c.nranks, spread(), total(c.count, c.nranks, c.dtype));
        let (mut sent, mut received) = (0, 0);
        for peer in 0..n {
            let send = peer_count(c.rank, peer, n, t, s, c.dtype);
            if send > 0 {
                p.send(c.input.at(sent), send, peer)?;
                sent += send;
            }
            let recv = peer_count(peer, c.rank, n, t, s, c.dtype);
            if recv > 0 {
                p.recv(c.output.at(received), recv, peer)?;
                received += recv;
            }
        }
        Ok(())
    }
    fn source(&self, c: &Counts, dtype: DataType, rank: usize, _: usize, n: usize, j: u64) -> Source {
        let (s, t) = (spread(), total(c.param, n, dtype));
        let mut start = 0;
        for from in 0..n {
            let block = peer_count(from, rank, n, t, s, dtype);
            if j < start + block {
                let at: u64 = (0..rank).map(|to| peer_count(from, to, n, t, s, dtype)).sum();
                return Source::Copied { rank: from, index: at + j - start };
            }
            start += block;
        }
        Source::Unchecked
    }
    fn source_cu(&self) -> &'static str {
        static CU: OnceLock<String> = OnceLock::new();
        // The products and sums are rounded one by one (no fused
        // multiply-add), as the host computes them.
        CU.get_or_init(|| {
            format!(
                "const double spread = {:?};
                 const u64 esz = sizeof(typename E::storage);
                 const u64 total = blk * (u64)c.nranks * esz;
                 auto peer = [&](int from, int to) -> u64 {{
                     u64 bytes = total;
                     if (c.nranks > 1) {{
                         double distance = (double)((to - from + c.nranks) % c.nranks);
                         double sum = (double)((u64)c.nranks * (c.nranks - 1) / 2);
                         double uniform = (double)total / (double)c.nranks;
                         double weighted = __ddiv_rn(__dmul_rn(distance, (double)total), sum);
                         bytes = (u64)__dadd_rn(__dmul_rn(1.0 - spread, uniform), __dmul_rn(spread, weighted));
                     }}
                     return (bytes & ~15ULL) / esz;
                 }};
                 u64 start = 0;
                 for (int from = 0; from < c.nranks; from++) {{
                     u64 block = peer(from, c.rank);
                     if (j < start + block) {{
                         u64 at = 0;
                         for (int to = 0; to < c.rank; to++) at += peer(from, to);
                         return input<E>(c, from, at + j - start);
                     }}
                     start += block;
                 }}",
                spread()
            )
        })
    }
}

impl Spec for AllToAllV {
    fn command(&self) -> &'static str {
        "alltoallv"
    }
    fn about(&self) -> &'static str {
        "NCCL all-to-all with blocks of different sizes (nccl-tests alltoallv_perf)"
    }
    /// The count column is the uniform per-peer count; each rank's buffers
    /// hold what it sends and receives in all.
    fn counts(&self, count: u64, dtype: DataType, n: u64) -> Counts {
        let param = aligned_block(count, dtype, n);
        let n = n as usize;
        let t = total(param, n, dtype);
        let all: u64 = (0..n).map(|to| peer_count(0, to, n, t, spread(), dtype)).sum();
        Counts { send: all, recv: all, param, send_inplace_offset: 0, recv_inplace_offset: 0 }
    }
    fn bus_factor(&self, n: u64) -> f64 {
        (n as f64 - 1.0) / n as f64
    }
    fn fits(&self, _: usize) -> Result<()> {
        asked().as_ref().map(|_| ()).map_err(|e| Error::Usage(e.clone()))
    }
    fn op_use(&self) -> OpUse {
        OpUse::Ignores
    }
    fn checks_in_place(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// nccl-tests' example: rank 0 of 4 sends nothing to itself and 1, 2
    /// and 3 parts to ranks 1, 2 and 3 at spread 1; equal parts at 0.
    #[test]
    fn shares_follow_distance_and_spread() {
        let f = DataType::Float;
        let t = 6 * 1024;
        let shares: Vec<u64> = (0..4).map(|to| peer_count(0, to, 4, t, 1.0, f)).collect();
        assert_eq!(shares, [0, 256, 512, 768]);
        let uniform: Vec<u64> = (0..4).map(|to| peer_count(0, to, 4, t, 0.0, f)).collect();
        assert_eq!(uniform, [384; 4]);
        // Each part is rounded down to 16 bytes: 100 bytes over 2 ranks at
        // spread 1 is 0 and 100, then 96.
        assert_eq!(peer_count(0, 1, 2, 100, 1.0, DataType::Int8), 96);
        // Every rank receives what it sends in all.
        for rank in 0..5 {
            let sent: u64 = (0..5).map(|to| peer_count(rank, to, 5, 5 << 20, 0.3, f)).sum();
            let received: u64 = (0..5).map(|from| peer_count(from, rank, 5, 5 << 20, 0.3, f)).sum();
            assert_eq!(sent, received);
        }
    }

    /// Rank 2's output is rank 0's, 1's and 3's blocks in order, each taken
    /// at the place its sender keeps for rank 2.
    #[test]
    fn sources_walk_the_blocks_in_rank_order() {
        let f = DataType::Float;
        let c = AllToAllV.counts(1536, f, 4);
        assert_eq!((c.param, c.send, c.recv), (384, 1536, 1536));
        let s = |j| AllToAllV.source(&c, f, 2, 0, 4, j);
        // From rank 0 (distance 2): 512 elements, after its 0 + 256 to ranks 0 and 1.
        assert_eq!(s(0), Source::Copied { rank: 0, index: 256 });
        // From rank 1 (distance 1): 256 elements, after its 768 + 0.
        assert_eq!(s(512), Source::Copied { rank: 1, index: 768 });
        // Nothing from itself; from rank 3 (distance 3): 768 elements, after 256 + 512.
        assert_eq!(s(768), Source::Copied { rank: 3, index: 768 });
        assert_eq!(s(1535), Source::Copied { rank: 3, index: 768 + 767 });
        assert_eq!(s(1536), Source::Unchecked);
    }
}
