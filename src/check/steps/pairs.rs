//! The pairwise pass (`size`; `iters`, `pairs`, `slow`, `timeout`,
//! `racks`): every process sends to a partner and receives as much by MPI
//! sendrecv, in rounds of disjoint pairs that meet each node with log2(N)
//! partners within its rack and across racks (or every pair), then again
//! with each suspect re-paired with nodes that passed, as Google's Cluster
//! Health Scanner does; `check::localise` judges the pairs and names a
//! node's network, a rack's uplink or a path. Each process's row is its
//! best pair (against the floor) and what the pass says of its node; the
//! job's row holds every pair and what the pass says of the fabric.

use super::{BadKey, Figure, Judged, Metric, Scope, StepKind, bytes, iters};
use crate::check::localise::{self, Fabric, Round, Schedule, Verdict};
use crate::error::{Error, Result};
use crate::libs::Library;
use crate::record::check::{Pair, Status};
use crate::session::Session;
use crate::world::World;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Keys {
    /// Bytes each process sends a round, "1M".
    pub size: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iters: Option<u32>,
    /// "hypercube" (the default: ceil(log2 N) rounds) or "all" (N-1 rounds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pairs: Option<Schedule>,
    /// A pair below this fraction of its level's median is slow (0.5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slow: Option<f64>,
    /// Seconds a pair may take before its partner is taken for lost (10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<f64>,
    /// Rack name → the host names in it (glob patterns: "qn[1-2]",
    /// "r03n*"); without it each host's rack is read from its name
    /// (`localise::rack_in_name`: "r03n12" in "r03"), else one rack.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub racks: Option<BTreeMap<String, Vec<String>>>,
}

const METRICS: &[Metric] = &[Metric::rate("gbps", "GB/s")];

/// The tolerance below the median, and a pair's time limit, when the profile says none.
const SLOW: f64 = 0.5;
const TIMEOUT_S: f64 = 10.0;

impl Keys {
    fn patterns(&self) -> std::result::Result<Vec<(String, glob::Pattern)>, BadKey> {
        let mut out = Vec::new();
        for (rack, hosts) in self.racks.iter().flatten() {
            for h in hosts {
                let p = glob::Pattern::new(h)
                    .map_err(|e| BadKey { key: "racks", why: format!("rack {rack}: '{h}' is no pattern: {e}") })?;
                out.push((rack.clone(), p));
            }
        }
        Ok(out)
    }

    /// Each host's rack: the first whose patterns match it.
    fn racks_of(&self, hosts: &[String]) -> Result<Vec<String>> {
        let patterns = self.patterns().map_err(|b| Error::Usage(b.why))?;
        hosts
            .iter()
            .map(|h| match (&self.racks, patterns.iter().find(|(_, p)| p.matches(h))) {
                (None, _) => Ok(localise::rack_in_name(h).unwrap_or_default()),
                (Some(_), Some((rack, _))) => Ok(rack.clone()),
                (Some(_), None) => Err(Error::Usage(format!("host {h} is in none of the step's racks"))),
            })
            .collect()
    }

    fn limit(&self) -> Duration {
        Duration::from_secs_f64(self.timeout.unwrap_or(TIMEOUT_S))
    }
}

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
        iters(self.iters)?;
        if let Some(s) = self.slow.filter(|s| !(*s > 0.0 && *s < 1.0)) {
            return Err(BadKey { key: "slow", why: format!("{s} is no fraction of the median (between 0 and 1)") });
        }
        if let Some(t) = self.timeout.filter(|t| !(*t > 0.0 && t.is_finite())) {
            return Err(BadKey { key: "timeout", why: format!("{t} is no number of seconds above 0") });
        }
        self.patterns().map(|_| ())
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

    /// This process's best pair and what the pass says of its node; on
    /// rank 0 also the job's row: every pair and what the pass says of the
    /// fabric.
    fn measure(&self, _metric: &str, session: &Session) -> Result<Vec<Figure>> {
        let world = session.world();
        let hosts: Vec<String> = world
            .all_gather(crate::host::short_hostname().as_bytes())
            .into_iter()
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .collect();
        let fabric = Fabric::new(names(&hosts), &self.racks_of(&hosts)?);
        let slow = matches!(crate::fault::Fault::requested("check", &[crate::fault::Kind::Slow])?,
            Some(crate::fault::Fault::Slow(r)) if r == world.rank());
        let size = bytes(&self.size)? as usize;
        let send: Vec<u8> = (0..size).map(|i| crate::pattern::mix(i as u64) as u8).collect();
        let mut pass = Pass {
            world,
            iters: self.iters.unwrap_or(20).max(1),
            limit: self.limit(),
            slow,
            recv: vec![0; size],
            send,
            wrong: 0,
            best: None,
        };
        let schedule = self.pairs.unwrap_or(Schedule::Hypercube);
        let verdict = localise::localise(&fabric, schedule, self.slow.unwrap_or(SLOW), |rounds, n| {
            pass.run(&fabric, rounds, n)
        })?;
        Ok(figures(&verdict, &pass))
    }
}

/// Each process's node name: its host, or host:rank where the host runs several.
fn names(hosts: &[String]) -> Vec<String> {
    let several = |h: &String| hosts.iter().filter(|x| *x == h).count() > 1;
    hosts.iter().enumerate().map(|(r, h)| if several(h) { format!("{h}:{r}") } else { h.clone() }).collect()
}

/// This process's row, and on rank 0 the job's.
fn figures(v: &Verdict, pass: &Pass) -> Vec<Figure> {
    let me = pass.world.rank();
    let (value, with) = pass.best.unwrap_or((0.0, me));
    let accused = v.of_node(me).map(|x| {
        let fix = format!("{}: check its adapter, port and cable (ethtool, ibstat, ip -s link) and its load", x.says);
        Box::new(Judged { of_job: false, status: Status::Fail, fix, pass: None })
    });
    let mut out =
        vec![Figure { place: Some(format!("rank {me} with {with}")), value, wrong: pass.wrong, judged: accused }];
    if me == 0 {
        let fabric_says = v.fabric_says();
        let mut fix = fabric_says.join("; ");
        if !fix.is_empty() {
            fix.push_str(": check the switch ports, cables and uplinks named (port error counters)");
        }
        if !v.cleared.is_empty() {
            let sep = if fix.is_empty() { "" } else { "; " };
            fix = format!("{fix}{sep}cleared on re-pairing: {}", v.cleared.join("; "));
        }
        let status = if fabric_says.is_empty() { Status::Pass } else { Status::Warn };
        out.push(Figure {
            place: Some("the pass".into()),
            value: v.pass.across_gbps.or(v.pass.within_gbps).unwrap_or(0.0),
            wrong: 0,
            judged: Some(Box::new(Judged { of_job: true, status, fix, pass: Some(v.pass.clone()) })),
        });
    }
    out
}

/// One process's side of the passes.
struct Pass<'a> {
    world: &'a dyn World,
    iters: u32,
    /// How long a pair's timed exchanges may take; a round's first
    /// exchange waits for the partner up to twice that per round so far.
    limit: Duration,
    /// `QBENCH_CORRUPT=slow:RANK` names this process.
    slow: bool,
    send: Vec<u8>,
    recv: Vec<u8>,
    wrong: u64,
    /// The first pass's best figure and its partner.
    best: Option<(f64, usize)>,
}

impl Pass<'_> {
    /// This process's pairs of `rounds`, then every process's figures:
    /// each pair's the slower end's, None where either end got no answer.
    fn run(&mut self, fabric: &Fabric, rounds: &[Round], pass: u8) -> Result<Vec<Pair>> {
        let me = self.world.rank();
        let start = Instant::now();
        // NaN: no pair this round; -1: no answer.
        let mut mine = vec![f64::NAN; rounds.len()];
        let mut lost = Vec::new();
        for (k, round) in rounds.iter().enumerate() {
            let partner = round.iter().find_map(|&(a, b)| (a == me).then_some(b).or((b == me).then_some(a)));
            let Some(peer) = partner else { continue };
            // Rounds are not held together by a barrier (a lost process
            // would hold every one): a round's first exchange may wait
            // for a partner still in its own earlier rounds, each of which
            // ends by its deadline.
            let deadline = start + self.limit * 2 * (k as u32 + 1);
            let tag = (pass as u16 - 1) * 4096 + (k % 4096) as u16;
            let answer = self.pair(peer, tag, deadline.saturating_duration_since(Instant::now()))?;
            if let Answer::Whole(gbps) | Answer::CutShort(gbps) = answer {
                mine[k] = if self.slow { gbps / 1e6 } else { gbps };
                if pass == 1 && self.best.is_none_or(|(b, _)| gbps > b) {
                    self.best = Some((gbps, peer));
                }
            } else {
                mine[k] = -1.0;
            }
            if !matches!(answer, Answer::Whole(_)) {
                lost.push(peer);
            }
        }
        // Where the figures do not come together, the job ends with the
        // words of the first process to give up: those left without an
        // answer give up first (the rest wait one pair's limit longer), so
        // the words name the process that stopped.
        let bound = self.limit * 2 * (rounds.len() as u32 + 1) + if lost.is_empty() { self.limit } else { Duration::ZERO };
        let wait = (start + bound).saturating_duration_since(Instant::now());
        let Some(all) = self.world.all_gather_f64_within(&mine, wait)? else {
            let lost: Vec<&str> = lost.iter().map(|&n| fabric.name(n)).collect();
            crate::world::fail_job(
                self.world,
                &Error::Runtime(format!(
                    "the pairwise pass's figures did not come together: a process stopped or hangs{}",
                    if lost.is_empty() { String::new() } else { format!(" (no answer here from {})", lost.join(", ")) }
                )),
            );
        };
        let figure = |rank: usize, k: usize| all[rank * rounds.len() + k];
        let each = rounds.iter().enumerate().flat_map(|(k, r)| r.iter().map(move |&(a, b)| (k, a, b)));
        Ok(each
            .map(|(round, a, b)| {
                let (x, y) = (figure(a, round), figure(b, round));
                let gbps = (x >= 0.0 && y >= 0.0).then(|| x.min(y));
                Pair { a, b, pass, round, gbps }
            })
            .collect())
    }

    /// One pair: an untimed exchange first (the connection is set up on
    /// first use, and both ends start together), waited for up to `wait`,
    /// then `iters` timed ones within the pair's limit, and the GB/s moved
    /// by those done.
    fn pair(&mut self, peer: usize, tag: u16, wait: Duration) -> Result<Answer> {
        if !self.world.sendrecv_within(peer, &mut self.send, &mut self.recv, tag, wait)? {
            return Ok(Answer::None);
        }
        let t0 = Instant::now();
        let mut done = 0;
        for _ in 0..self.iters {
            let left = self.limit.saturating_sub(t0.elapsed());
            if !self.world.sendrecv_within(peer, &mut self.send, &mut self.recv, tag, left)? {
                break;
            }
            done += 1;
        }
        if done > 0 {
            self.wrong += self.recv.iter().zip(&self.send).filter(|(a, b)| a != b).count() as u64;
        }
        let gbps = (self.send.len() as f64 * done as f64) / t0.elapsed().as_secs_f64() / 1e9;
        Ok(if done == self.iters { Answer::Whole(gbps) } else { Answer::CutShort(gbps) })
    }
}

/// What a partner gave a pair.
enum Answer {
    /// Every exchange within the pair's limit: the GB/s.
    Whole(f64),
    /// The limit cut the exchanges short (a slow link, or a partner that
    /// stopped): the GB/s of those done.
    CutShort(f64),
    /// Nothing: the partner never met the pair.
    None,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(racks: Option<&[(&str, &[&str])]>) -> Keys {
        let racks = racks.map(|r| r.iter().map(|(k, v)| (k.to_string(), v.iter().map(|s| s.to_string()).collect())).collect());
        Keys { size: "1M".into(), iters: None, pairs: None, slow: None, timeout: None, racks }
    }

    #[test]
    fn racks_come_from_the_profile_or_the_names() {
        let hosts: Vec<String> = ["qn1", "qn2", "qn3"].iter().map(|s| s.to_string()).collect();
        assert_eq!(keys(None).racks_of(&hosts).unwrap(), ["", "", ""]);
        let k = keys(Some(&[("r1", &["qn[1-2]"]), ("r2", &["qn3"])]));
        assert_eq!(k.racks_of(&hosts).unwrap(), ["r1", "r1", "r2"]);
        let k = keys(Some(&[("r1", &["qn1"])]));
        assert_eq!(k.racks_of(&hosts).unwrap_err().message(), "host qn2 is in none of the step's racks");
        assert_eq!(keys(Some(&[("r1", &["qn[1"])])).validate("gbps").unwrap_err().key, "racks");
        let named: Vec<String> = ["r1n1", "r2n1"].iter().map(|s| s.to_string()).collect();
        assert_eq!(keys(None).racks_of(&named).unwrap(), ["r1", "r2"]);
        assert_eq!(names(&["a".into(), "a".into(), "b".into()]), ["a:0", "a:1", "b"]);
    }

    #[test]
    fn bad_tolerances_and_limits_are_refused() {
        let k = Keys { slow: Some(1.5), ..keys(None) };
        assert_eq!(k.validate("gbps").unwrap_err().key, "slow");
        let k = Keys { timeout: Some(0.0), ..keys(None) };
        assert_eq!(k.validate("gbps").unwrap_err().key, "timeout");
    }
}
