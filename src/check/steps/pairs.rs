//! The pairwise pass (`size`; `iters`): every process sends to a partner
//! and receives as much by MPI sendrecv, in two pairings, so that a node
//! slow in every pair it was in is the slow one (Google's cluster-health
//! scanner re-pairs the nodes of failed pairs the same way).

use super::{BadKey, Figure, Metric, Scope, StepKind, bytes, iters};
use crate::error::Result;
use crate::libs::Library;
use crate::session::Session;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Keys {
    /// Bytes each process sends a round, "1M".
    pub size: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iters: Option<u32>,
}

/// `me`'s partner in pairing `round` of `n` processes: 2i with 2i+1, then
/// (round 1) 2i+1 with 2i+2, wrapping; None for the one left over.
fn partner(me: usize, n: usize, round: usize) -> Option<usize> {
    let shifted = (me + n - round % n) % n;
    let other = if shifted.is_multiple_of(2) { shifted + 1 } else { shifted - 1 };
    (other < n && other != shifted).then_some((other + round) % n).filter(|&p| p != me)
}

const METRICS: &[Metric] = &[Metric::rate("gbps", "GB/s")];

/// The most bytes a pairwise round sends.
const MOST_BYTES: u64 = 1 << 30;

impl StepKind for Keys {
    fn metrics(&self) -> &'static [Metric] {
        METRICS
    }

    fn validate(&self, _metric: &str) -> std::result::Result<(), BadKey> {
        // Each process holds the size twice, sent by one MPI call.
        if bytes(&self.size).map_err(|e| BadKey::new("size", e))? > MOST_BYTES {
            return Err(BadKey { key: "size", why: format!("\"{}\": at most 1G (MPI counts are 32-bit)", self.size) });
        }
        iters(self.iters)
    }

    fn libraries(&self) -> Vec<Library> {
        Vec::new()
    }

    fn scope(&self) -> Scope {
        Scope::Pairs
    }

    fn uses_gpus(&self) -> bool {
        false
    }

    fn needs_several(&self) -> Option<&'static str> {
        Some("no pair of nodes to test")
    }

    /// Each process's figure is its best pair.
    fn measure(&self, _metric: &str, session: &Session) -> Result<Vec<Figure>> {
        let world = session.world();
        let (n, me) = (world.size(), world.rank());
        let size = bytes(&self.size)? as usize;
        let iters = self.iters.unwrap_or(20).max(1);
        let send: Vec<u8> = (0..size).map(|i| crate::pattern::mix(i as u64) as u8).collect();
        let mut recv = vec![0u8; size];
        let mut best: Option<(f64, usize)> = None;
        let mut wrong = 0;
        for round in 0..2 {
            world.barrier();
            let Some(partner) = partner(me, n, round) else { continue };
            // One untimed exchange first: the connection is set up on first use.
            world.sendrecv(partner, &send, &mut recv)?;
            let t0 = std::time::Instant::now();
            for _ in 0..iters {
                world.sendrecv(partner, &send, &mut recv)?;
            }
            let gbps = (size as f64 * iters as f64) / t0.elapsed().as_secs_f64() / 1e9;
            wrong += recv.iter().zip(&send).filter(|(a, b)| a != b).count() as u64;
            if best.is_none_or(|(b, _)| gbps > b) {
                best = Some((gbps, partner));
            }
        }
        let (value, with) = best.unwrap_or((0.0, me));
        Ok(vec![Figure { place: Some(format!("rank {me} with {with}")), value, wrong }])
    }
}

#[cfg(test)]
mod tests {
    use super::partner;

    #[test]
    fn pairings_are_symmetric_and_re_pair_every_node() {
        for n in 2..9 {
            for round in 0..2 {
                for me in 0..n {
                    if let Some(p) = partner(me, n, round) {
                        assert_eq!(partner(p, n, round), Some(me), "n {n} round {round} rank {me}");
                    }
                }
            }
        }
        assert_eq!((partner(0, 4, 0), partner(1, 4, 1), partner(3, 4, 1)), (Some(1), Some(2), Some(0)));
        assert_eq!(partner(2, 3, 0), None);
    }
}
