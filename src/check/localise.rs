//! Where a pairwise pass's slowness lies. The rounds of disjoint pairs
//! (the hypercube over the nodes ordered by rack, so that every node meets
//! log2(N) partners at each level of the fabric, or every pair), each pair
//! held against the pass's own median, and a second pass that re-pairs
//! each suspect with nodes that passed before anything is accused: a
//! node's network, a rack's uplink, a path between two nodes, a node that
//! did not answer. No MPI here: a pass's figures come from the caller, so
//! that a simulation over a model fabric runs this very judgement.

use crate::error::Result;
use crate::record::check::{Pair, PairPass, figure};
use serde::{Deserialize, Serialize};
use std::collections::HashSet;

/// The nodes of a pass (one a process, in rank order) and their racks.
#[derive(Debug, Clone, PartialEq)]
pub struct Fabric {
    names: Vec<String>,
    /// Each node's rack, an index into `racks`.
    rack: Vec<usize>,
    racks: Vec<String>,
}

impl Fabric {
    /// Nodes `names`, node i in the rack `racks[i]` names.
    pub fn new(names: Vec<String>, racks: &[String]) -> Fabric {
        let mut list: Vec<String> = Vec::new();
        let rack = racks
            .iter()
            .map(|r| {
                list.iter().position(|x| x == r).unwrap_or_else(|| {
                    list.push(r.clone());
                    list.len() - 1
                })
            })
            .collect();
        Fabric { names, rack, racks: list }
    }

    /// How many nodes.
    pub fn nodes(&self) -> usize {
        self.names.len()
    }

    pub fn name(&self, node: usize) -> &str {
        &self.names[node]
    }

    /// The nodes of `rack`, in rank order.
    fn members(&self, rack: usize) -> impl Iterator<Item = usize> + '_ {
        (0..self.nodes()).filter(move |&n| self.rack[n] == rack)
    }

    /// Whether the pair's path leaves a rack.
    fn across(&self, p: &Pair) -> bool {
        self.rack[p.a] != self.rack[p.b]
    }
}

/// The rack a host's name says it is in: the name before its last number
/// and the letters ahead of it, where that holds a number itself
/// ("r03n12" is in "r03", "rack2-node7" in "rack2"). None for a name of
/// one number or none ("qn5", "gpu017"): such nodes share one rack.
pub fn rack_in_name(host: &str) -> Option<String> {
    let head = host.trim_end_matches(|c: char| c.is_ascii_digit());
    if head.len() == host.len() {
        return None;
    }
    let rack = head.trim_end_matches(|c: char| !c.is_ascii_digit());
    (!rack.is_empty()).then(|| rack.to_string())
}

/// How the first pass pairs the nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Schedule {
    /// ceil(log2 N) rounds: node i meets i XOR 2^k, nodes ordered by rack.
    Hypercube,
    /// Every pair: N-1 rounds (N with an odd count, one node idle in each).
    All,
}

/// Disjoint pairs (a < b) measured at once.
pub type Round = Vec<(usize, usize)>;

/// Bits that number `n` things: ceil(log2 n), 0 for one.
fn bits(n: usize) -> u32 {
    if n <= 1 { 0 } else { usize::BITS - (n - 1).leading_zeros() }
}

fn ordered(x: usize, y: usize) -> (usize, usize) {
    (x.min(y), x.max(y))
}

/// The first pass's rounds.
pub fn first_pass(f: &Fabric, s: Schedule) -> Vec<Round> {
    match s {
        Schedule::Hypercube => hypercube(f),
        Schedule::All => round_robin(f.nodes()),
    }
}

/// Each node at position rack · 2^b + its index in the rack (b the bits
/// of the largest rack), so that the low rounds pair nodes within a rack
/// and the high ones across racks. A node whose partner position is empty
/// (N not a power of two, racks of unequal size) is paired in that round
/// with another such node it has not met and will not meet, where there
/// is one; otherwise it sits the round out.
fn hypercube(f: &Fabric) -> Vec<Round> {
    let widest = (0..f.racks.len()).map(|r| f.members(r).count()).max().unwrap_or(1);
    let b = bits(widest);
    let mut at: Vec<(usize, usize)> = Vec::with_capacity(f.nodes());
    for r in 0..f.racks.len() {
        at.extend(f.members(r).enumerate().map(|(i, n)| ((r << b) | i, n)));
    }
    at.sort_unstable();
    let node_at = |p: usize| at.binary_search_by_key(&p, |&(q, _)| q).ok().map(|i| at[i].1);
    let mut met: HashSet<(usize, usize)> = HashSet::new();
    let mut rounds = Vec::new();
    for k in 0..b + bits(f.racks.len()) {
        let mut round = Round::new();
        let mut left: Vec<(usize, usize)> = Vec::new();
        for &(p, n) in &at {
            match node_at(p ^ (1 << k)) {
                Some(m) if p < p ^ (1 << k) => round.push(ordered(n, m)),
                Some(_) => {}
                None => left.push((p, n)),
            }
        }
        while let Some((p, n)) = left.first().copied() {
            left.remove(0);
            let fresh = left.iter().position(|&(q, m)| !(p ^ q).is_power_of_two() && !met.contains(&ordered(n, m)));
            if let Some(i) = fresh {
                round.push(ordered(n, left.remove(i).1));
            }
        }
        met.extend(round.iter().copied());
        rounds.push(round);
    }
    rounds
}

/// The circle method: node 0 fixed, the others turning.
fn round_robin(n: usize) -> Vec<Round> {
    let m = n + n % 2;
    let mut ring: Vec<usize> = (0..m).collect();
    let mut rounds = Vec::with_capacity(m - 1);
    for _ in 0..m.saturating_sub(1) {
        let round = (0..m / 2).map(|i| (ring[i], ring[m - 1 - i])).filter(|&(x, y)| x < n && y < n);
        rounds.push(round.map(|(x, y)| ordered(x, y)).collect());
        ring[1..].rotate_right(1);
    }
    rounds
}

/// The median of `values` (the mean of the middle two of an even count).
fn median(values: &mut [f64]) -> Option<f64> {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(values[n / 2]),
        _ => Some((values[n / 2 - 1] + values[n / 2]) / 2.0),
    }
}

/// What the pairs of one level are held against: the median of those
/// within half of the level's best. A pair cannot beat its path, so the
/// best is the level's speed give or take its noise; leaving out what is
/// far below it keeps the median that of the healthy pairs even where
/// most pairs touch a fault (8 nodes with three faults among them).
fn level_median(pairs: &[Pair], keep: impl Fn(&Pair) -> bool) -> Option<f64> {
    let figures = || pairs.iter().filter(|p| keep(p)).filter_map(|p| p.gbps);
    let best = figures().fold(0.0f64, f64::max);
    median(&mut figures().filter(|g| *g >= best / 2.0).collect::<Vec<_>>()).filter(|m| *m > 0.0)
}

/// The first pass held against its own medians: who is suspected of what.
#[derive(Debug, Clone, PartialEq)]
pub struct Suspects {
    within: Option<f64>,
    across: Option<f64>,
    slow_below: f64,
    /// Nodes whose every pair got no answer.
    lost: Vec<usize>,
    /// Nodes slow with every partner.
    nodes: Vec<usize>,
    /// Racks slow with every partner outside them (their nodes' own
    /// faults aside) and not within.
    uplinks: Vec<usize>,
    /// Slow pairs that none of the above explains.
    paths: Vec<(usize, usize)>,
    /// Nodes that passed, partners to re-pair with: neither lost nor slow
    /// with every partner (an end of a slow path is fast with the others).
    cleared: Vec<bool>,
}

impl Suspects {
    /// The median a pair of this level is held against.
    fn median_for(&self, across: bool) -> Option<f64> {
        if across { self.across.or(self.within) } else { self.within.or(self.across) }
    }

    fn slow(&self, f: &Fabric, p: &Pair) -> bool {
        match (p.gbps, self.median_for(f.across(p))) {
            (None, _) => true,
            (Some(g), Some(m)) => g < self.slow_below * m,
            (Some(_), None) => false,
        }
    }

    /// Whether a node suspect (or a lost one) is an end of the pair.
    fn by_node(&self, p: &Pair) -> bool {
        [p.a, p.b].iter().any(|n| self.nodes.contains(n) || self.lost.contains(n))
    }

    /// Whether a suspect explains the slow pair.
    fn explained(&self, f: &Fabric, p: &Pair) -> bool {
        self.by_node(p) || (f.across(p) && [p.a, p.b].iter().any(|&n| self.uplinks.contains(&f.rack[n])))
    }
}

/// The first pass's suspects, each pair held against `slow_below` of its
/// level's median.
pub fn suspects(f: &Fabric, pairs: &[Pair], slow_below: f64) -> Suspects {
    let mut s = Suspects {
        within: level_median(pairs, |p| !f.across(p)),
        across: level_median(pairs, |p| f.across(p)),
        slow_below,
        lost: Vec::new(),
        nodes: Vec::new(),
        uplinks: Vec::new(),
        paths: Vec::new(),
        cleared: vec![false; f.nodes()],
    };
    let mut at: Vec<Vec<&Pair>> = vec![Vec::new(); f.nodes()];
    for p in pairs {
        at[p.a].push(p);
        at[p.b].push(p);
    }
    for (n, of) in at.iter().enumerate().filter(|(_, of)| !of.is_empty()) {
        if of.iter().all(|p| p.gbps.is_none()) {
            s.lost.push(n);
        } else if of.iter().all(|p| s.slow(f, p)) {
            s.nodes.push(n);
        }
    }
    for r in 0..f.racks.len() {
        let own = |p: &&Pair| f.rack[p.a] == r || f.rack[p.b] == r;
        let free: Vec<&Pair> = pairs.iter().filter(own).filter(|p| !s.by_node(p)).collect();
        let (out, within): (Vec<&Pair>, Vec<&Pair>) = free.into_iter().partition(|p| f.across(p));
        if !out.is_empty() && out.iter().all(|p| s.slow(f, p)) && within.iter().any(|p| !s.slow(f, p)) {
            s.uplinks.push(r);
        }
    }
    s.paths = pairs.iter().filter(|p| s.slow(f, p) && !s.explained(f, p)).map(|p| (p.a, p.b)).collect();
    s.cleared = at.iter().enumerate().map(|(n, of)| !of.is_empty() && !s.nodes.contains(&n) && !s.lost.contains(&n)).collect();
    s
}

/// One pair the second pass wants: `x` with the first free of `with`.
struct Test {
    x: usize,
    with: Vec<usize>,
}

/// The second pass's tests: each suspect node with nodes that passed,
/// within its rack and across racks whose uplinks are not suspected; two
/// nodes of a suspected rack with nodes that passed in other racks; each
/// suspected path measured again, and each end of one with a node that
/// passed (once, however many paths it ends).
fn tests(f: &Fabric, s: &Suspects) -> Vec<Test> {
    let cleared_in = |r: usize, not: &[usize]| -> Vec<usize> {
        f.members(r).filter(|n| s.cleared[*n] && !not.contains(n)).collect()
    };
    let outside = |r: usize| -> Vec<usize> {
        (0..f.nodes()).filter(|&n| s.cleared[n] && f.rack[n] != r && !s.uplinks.contains(&f.rack[n])).collect()
    };
    let mut out = Vec::new();
    // `x` with nodes that passed: within its rack, and across racks where
    // its own uplink is not suspected (`both`), or the first of the two.
    let with_passed = |x: usize, out: &mut Vec<Test>, not: &[usize], both: bool| {
        let r = f.rack[x];
        let within = cleared_in(r, not);
        let across = if s.uplinks.contains(&r) { Vec::new() } else { outside(r) };
        let tests = [within, across].into_iter().filter(|w| !w.is_empty()).map(|with| Test { x, with });
        out.extend(tests.take(if both { 2 } else { 1 }));
    };
    for &n in s.lost.iter().chain(&s.nodes) {
        with_passed(n, &mut out, &[], true);
    }
    for &r in &s.uplinks {
        for x in cleared_in(r, &[]).into_iter().take(2) {
            out.push(Test { x, with: outside(r) });
        }
    }
    out.extend(s.paths.iter().map(|&(a, b)| Test { x: a, with: vec![b] }));
    let mut ends: Vec<usize> = s.paths.iter().flat_map(|&(a, b)| [a, b]).collect();
    ends.sort_unstable();
    ends.dedup();
    for x in ends {
        let not: Vec<usize> = s.paths.iter().filter_map(|&(a, b)| (a == x).then_some(b).or((b == x).then_some(a))).collect();
        with_passed(x, &mut out, &not, false);
    }
    out
}

/// The second pass's rounds: each test in the first round where its node
/// and a partner of its list are free, the partner used least so far (and
/// not met in the first pass) first.
pub fn second_pass(f: &Fabric, s: &Suspects, first: &[Pair]) -> Vec<Round> {
    let n = f.nodes();
    let met_before: HashSet<(usize, usize)> = first.iter().map(|p| (p.a, p.b)).collect();
    let mut rounds: Vec<Round> = Vec::new();
    let mut busy: Vec<Vec<bool>> = Vec::new();
    let mut uses = vec![0usize; n];
    let mut met: HashSet<(usize, usize)> = HashSet::new();
    for t in tests(f, s) {
        let possible: Vec<usize> = t.with.iter().copied().filter(|&y| y != t.x && !met.contains(&ordered(t.x, y))).collect();
        if possible.is_empty() {
            continue;
        }
        for r in 0.. {
            if r == rounds.len() {
                rounds.push(Round::new());
                busy.push(vec![false; n]);
            }
            if busy[r][t.x] {
                continue;
            }
            let free = possible.iter().copied().filter(|&y| !busy[r][y]);
            let key = |y: &usize| (uses[*y], met_before.contains(&ordered(t.x, *y)), (y + n - t.x) % n);
            if let Some(y) = free.min_by_key(key) {
                rounds[r].push(ordered(t.x, y));
                (busy[r][t.x], busy[r][y]) = (true, true);
                uses[y] += 1;
                met.insert(ordered(t.x, y));
                break;
            }
        }
    }
    rounds
}

/// A fault the passes name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Fault {
    /// A node slow with every partner, those that passed included: its
    /// adapter, port or cable.
    Node(usize),
    /// A node with which no exchange completed.
    Lost(usize),
    /// A rack slow with every partner outside it and not within: its uplink.
    Uplink(usize),
    /// Two nodes slow together and not with others: the path between them.
    Path(usize, usize),
}

/// A fault named, with its evidence in words.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    pub fault: Fault,
    pub says: String,
}

/// What the passes found: the faults, the suspects the second pass
/// cleared (in words), and every pair.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub findings: Vec<Finding>,
    pub cleared: Vec<String>,
    pub pass: PairPass,
}

impl Verdict {
    /// The finding that names `node` itself (its network, or no answer).
    pub fn of_node(&self, node: usize) -> Option<&Finding> {
        self.findings.iter().find(|x| matches!(x.fault, Fault::Node(n) | Fault::Lost(n) if n == node))
    }

    /// What the findings of the fabric say: each uplink's words; a path's,
    /// but where three or more slow paths leave one rack (one of the links
    /// between its leaf and the spines, which carries a share of the pairs
    /// leaving it), once for the rack.
    pub fn fabric_says(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        let mut paths: Vec<(usize, usize)> = Vec::new();
        for x in &self.findings {
            match x.fault {
                Fault::Uplink(_) => out.push(x.says.clone()),
                Fault::Path(a, b) => paths.push((a, b)),
                _ => {}
            }
        }
        let racks = &self.pass.racks;
        while let Some(r) = busiest_rack(racks, &paths) {
            let leaves = |&(a, b): &(usize, usize)| racks[a] != racks[b] && (&racks[a] == r || &racks[b] == r);
            let (group, rest): (Vec<_>, Vec<_>) = paths.into_iter().partition(leaves);
            paths = rest;
            let slow: Vec<&Pair> =
                self.pass.pairs.iter().filter(|p| p.pass == 2 && group.contains(&(p.a, p.b))).collect();
            out.push(format!(
                "{} slow paths leaving rack {r} ({} GB/s) while its other pairs leaving it are fast: one of the links between its leaf and the spines",
                group.len(),
                typical(&slow),
            ));
        }
        let says = |&(a, b): &(usize, usize)| self.findings.iter().find(|x| x.fault == Fault::Path(a, b));
        out.extend(paths.iter().filter_map(says).map(|x| x.says.clone()));
        out
    }
}

/// The rack that three or more of `paths` leave, the most of them.
fn busiest_rack<'a>(racks: &'a [String], paths: &[(usize, usize)]) -> Option<&'a String> {
    let leaves = |r: &String, a: usize, b: usize| racks[a] != racks[b] && (&racks[a] == r || &racks[b] == r);
    let ends = |r: &String| paths.iter().filter(|&&(a, b)| leaves(r, a, b)).count();
    racks.iter().map(|r| (ends(r), r)).filter(|(k, _)| *k >= 3).max_by_key(|(k, _)| *k).map(|(_, r)| r)
}

/// Runs the passes: the first with `measure` (the rounds, the pass's
/// number: each pair's figure back), the suspects, the second with each
/// suspect re-paired, and the verdict.
pub fn localise(
    f: &Fabric,
    schedule: Schedule,
    slow_below: f64,
    mut measure: impl FnMut(&[Round], u8) -> Result<Vec<Pair>>,
) -> Result<Verdict> {
    let rounds = first_pass(f, schedule);
    let first = measure(&rounds, 1)?;
    let s = suspects(f, &first, slow_below);
    let again = second_pass(f, &s, &first);
    let second = if again.is_empty() { Vec::new() } else { measure(&again, 2)? };
    let (findings, cleared) = judge(f, &s, &first, &second);
    let pass = PairPass {
        racks: f.rack.iter().map(|&r| f.racks[r].clone()).collect(),
        within_gbps: s.within,
        across_gbps: s.across,
        slow_below,
        rounds: [rounds.len(), again.len()],
        pairs: first.into_iter().chain(second).collect(),
    };
    Ok(Verdict { findings, cleared, pass })
}

/// The suspects the second pass confirms, and those it clears (in words).
fn judge(f: &Fabric, s: &Suspects, first: &[Pair], second: &[Pair]) -> (Vec<Finding>, Vec<String>) {
    let mut found = Vec::new();
    let mut cleared = Vec::new();
    let of = |pairs: &[Pair], n: usize| -> Vec<Pair> { pairs.iter().filter(|p| p.a == n || p.b == n).copied().collect() };
    for &n in s.lost.iter().chain(&s.nodes) {
        let again = of(second, n);
        let fault = match again.iter().all(|p| p.gbps.is_none()) {
            true if s.lost.contains(&n) => Fault::Lost(n),
            _ => Fault::Node(n),
        };
        if again.is_empty() {
            cleared.push(format!("{}: not re-paired (no node that passed to pair it with)", f.name(n)));
        } else if again.iter().all(|p| s.slow(f, p)) {
            found.push(Finding { fault, says: node_says(f, s, fault, &of(first, n), &again) });
        } else {
            cleared.push(format!("{}: slow in the first pass, not with the nodes that passed", f.name(n)));
        }
    }
    for &r in &s.uplinks {
        let out = |p: &&Pair| f.across(p) && (f.rack[p.a] == r || f.rack[p.b] == r) && !s.by_node(p);
        let again: Vec<Pair> = second.iter().filter(out).copied().collect();
        if again.is_empty() {
            cleared.push(format!("uplink of rack {}: not re-paired (no node that passed to pair it with)", f.racks[r]));
        } else if again.iter().all(|p| s.slow(f, p)) {
            found.push(Finding { fault: Fault::Uplink(r), says: uplink_says(f, s, r, first, &again) });
        } else {
            let slow = again.iter().filter(|p| s.slow(f, p)).count();
            cleared.push(format!(
                "uplink of rack {}: slow with {slow} of the {} nodes that passed it was re-paired with, not all",
                f.racks[r],
                again.len()
            ));
        }
    }
    for &(a, b) in &s.paths {
        let again: Vec<Pair> = second.iter().filter(|p| (p.a, p.b) == (a, b)).copied().collect();
        if !again.is_empty() && again.iter().all(|p| s.slow(f, p)) {
            found.push(Finding { fault: Fault::Path(a, b), says: path_says(f, s, (a, b), first, second) });
        } else {
            cleared.push(format!("path {}–{}: slow once, not when measured again", f.name(a), f.name(b)));
        }
    }
    found.sort_by_key(|x| x.fault);
    (found, cleared)
}

/// "0.020" GB/s: the median of the pairs' figures, a pair without an answer as 0.
fn typical(pairs: &[&Pair]) -> String {
    figure(median(&mut pairs.iter().map(|p| p.gbps.unwrap_or(0.0)).collect::<Vec<_>>()).unwrap_or(0.0))
}

/// The pass's median in words, for a pair of this level.
fn held_against(s: &Suspects, across: bool) -> String {
    s.median_for(across).map_or("no median".into(), |m| format!("the pass's median {} GB/s", figure(m)))
}

/// "network of qn5: 0.020 GB/s with 8 of 8 partners (2 re-paired with
/// nodes that passed), the pass's median 1.100 GB/s".
fn node_says(f: &Fabric, s: &Suspects, fault: Fault, first: &[Pair], again: &[Pair]) -> String {
    let all: Vec<&Pair> = first.iter().chain(again).collect();
    let slow = all.iter().filter(|p| s.slow(f, p)).count();
    let re = format!("{} re-paired", again.len());
    match fault {
        Fault::Lost(n) => format!(
            "{} did not answer: no exchange completed with {slow} of {} partners ({re})",
            f.name(n),
            all.len()
        ),
        Fault::Node(n) => format!(
            "network of {}: {} GB/s with {slow} of {} partners ({re}), {}",
            f.name(n),
            typical(&all),
            all.len(),
            held_against(s, all.iter().any(|p| f.across(p)))
        ),
        _ => String::new(),
    }
}

/// "uplink of rack r3: 0.100 GB/s with 26 of 26 pairs leaving it (2 of
/// them re-paired), 1.100 GB/s within it, the pass's median 1.000 GB/s".
fn uplink_says(f: &Fabric, s: &Suspects, r: usize, first: &[Pair], again: &[Pair]) -> String {
    let own = |p: &&Pair| (f.rack[p.a] == r || f.rack[p.b] == r) && !s.by_node(p);
    let (out, within): (Vec<&Pair>, Vec<&Pair>) = first.iter().chain(again).filter(own).partition(|p| f.across(p));
    let slow = out.iter().filter(|p| s.slow(f, p)).count();
    format!(
        "uplink of rack {}: {} GB/s with {slow} of {} pairs leaving it ({} re-paired), {} GB/s within it, {}",
        f.racks[r],
        typical(&out),
        out.len(),
        again.len(),
        typical(&within),
        held_against(s, true)
    )
}

/// "path qn1–qn7: 0.100 GB/s in both passes, where qn1 and qn7 reach
/// 1.050 and 1.100 GB/s with others, the pass's median 1.000 GB/s".
fn path_says(f: &Fabric, s: &Suspects, (a, b): (usize, usize), first: &[Pair], second: &[Pair]) -> String {
    let all: Vec<&Pair> = first.iter().chain(second).collect();
    let this: Vec<&Pair> = all.iter().copied().filter(|p| (p.a, p.b) == (a, b)).collect();
    let others = |n: usize| {
        let with: Vec<&Pair> = all.iter().copied().filter(|p| (p.a == n || p.b == n) && (p.a, p.b) != (a, b)).collect();
        typical(&with)
    };
    format!(
        "path {}–{}: {} GB/s in both passes, where {} and {} reach {} and {} GB/s with others, {}",
        f.name(a),
        f.name(b),
        typical(&this),
        f.name(a),
        f.name(b),
        others(a),
        others(b),
        held_against(s, f.rack[a] != f.rack[b])
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` nodes "n0".., `per` to a rack "r0"...
    fn fabric(n: usize, per: usize) -> Fabric {
        let racks: Vec<String> = (0..n).map(|i| format!("r{}", i / per)).collect();
        Fabric::new((0..n).map(|i| format!("n{i}")).collect(), &racks)
    }

    /// Every pair of `rounds` at `speed(a, b)` GB/s.
    fn measured(rounds: &[Round], pass: u8, speed: &dyn Fn(usize, usize) -> Option<f64>) -> Vec<Pair> {
        let each = rounds.iter().enumerate().flat_map(|(round, r)| r.iter().map(move |&(a, b)| (round, a, b)));
        each.map(|(round, a, b)| Pair { a, b, pass, round, gbps: speed(a, b) }).collect()
    }

    fn faults(f: &Fabric, speed: &dyn Fn(usize, usize) -> Option<f64>) -> Vec<Fault> {
        let v = localise(f, Schedule::Hypercube, 0.5, |r, pass| Ok(measured(r, pass, speed))).unwrap();
        v.findings.iter().map(|x| x.fault).collect()
    }

    #[test]
    fn every_round_is_disjoint_and_no_pair_repeats() {
        for n in 2..70 {
            for per in [1, 3, 4, 8, 32] {
                let f = fabric(n, per);
                let rounds = first_pass(&f, Schedule::Hypercube);
                let mut seen = HashSet::new();
                for r in &rounds {
                    let mut busy = HashSet::new();
                    for &(a, b) in r {
                        assert!(a < b && b < n && busy.insert(a) && busy.insert(b), "n {n} per {per}: {r:?}");
                        assert!(seen.insert((a, b)), "n {n} per {per}: ({a}, {b}) twice");
                    }
                }
                let widest = per.min(n);
                assert_eq!(rounds.len() as u32, bits(widest) + bits(n.div_ceil(per)), "n {n} per {per}");
                assert!((0..n).all(|x| seen.iter().any(|&(a, b)| a == x || b == x)), "n {n} per {per}: someone idle");
            }
        }
    }

    #[test]
    fn the_hypercube_meets_log2_n_partners_within_racks_first() {
        let f = fabric(64, 8);
        let rounds = first_pass(&f, Schedule::Hypercube);
        assert_eq!(rounds.len(), 6);
        for (k, r) in rounds.iter().enumerate() {
            assert_eq!(r.len(), 32, "round {k}: everyone paired");
            assert!(r.iter().all(|&(a, b)| (f.rack[a] == f.rack[b]) == (k < 3)), "round {k}: {r:?}");
        }
        let all = first_pass(&fabric(7, 7), Schedule::All);
        assert_eq!(all.len(), 7);
        assert_eq!(all.iter().map(Vec::len).sum::<usize>(), 21, "every pair of 7 once");
    }

    #[test]
    fn a_node_an_uplink_and_a_path_are_told_apart() {
        let f = fabric(64, 8);
        // n5 slow everywhere, rack r3 (n24..n31) slow leaving it, n40–n41 slow together.
        let speed = |a: usize, b: usize| -> Option<f64> {
            let cross = f.rack[a] != f.rack[b];
            let node = if a == 5 || b == 5 { 0.05 } else { 1.0 };
            let uplink = if cross && (f.rack[a] == 3 || f.rack[b] == 3) { 0.1 } else { 1.0 };
            let path = if (a, b) == (40, 41) { 0.2 } else { 1.0 };
            Some(node * uplink * path * if cross { 0.8 } else { 1.0 })
        };
        assert_eq!(faults(&f, &speed), [Fault::Node(5), Fault::Uplink(3), Fault::Path(40, 41)]);
        let healthy = |_: usize, _: usize| Some(1.0);
        assert_eq!(faults(&f, &healthy), []);
    }

    #[test]
    fn paths_leaving_one_rack_are_said_once_for_it() {
        let f = fabric(64, 8);
        // Half of the pairs leaving rack r2 (n16..n23) slow: one of its links
        // to two spines, a pair's spine a hash of its ends (as ECMP's).
        let speed = |a: usize, b: usize| {
            let leaves = f.rack[a] != f.rack[b] && (f.rack[a] == 2 || f.rack[b] == 2);
            Some(if leaves && crate::pattern::mix((a * 64 + b) as u64).is_multiple_of(2) { 0.1 } else { 1.0 })
        };
        let v = localise(&f, Schedule::Hypercube, 0.5, |r, pass| Ok(measured(r, pass, &speed))).unwrap();
        assert!(v.findings.iter().all(|x| matches!(x.fault, Fault::Path(..))), "{:?}", v.findings);
        let says = v.fabric_says();
        assert_eq!(says.len(), 1, "{says:?}");
        let paths = v.findings.len();
        assert!(paths >= 3 && says[0].starts_with(&format!("{paths} slow paths leaving rack r2 (0.100 GB/s)")), "{says:?}");
    }

    #[test]
    fn a_node_without_answers_is_lost_and_its_partners_are_not() {
        let f = fabric(16, 4);
        let speed = |a: usize, b: usize| if a == 9 || b == 9 { None } else { Some(1.0) };
        let v = localise(&f, Schedule::Hypercube, 0.5, |r, pass| Ok(measured(r, pass, &speed))).unwrap();
        assert_eq!(v.findings.iter().map(|x| x.fault).collect::<Vec<_>>(), [Fault::Lost(9)]);
        assert!(v.of_node(9).unwrap().says.starts_with("n9 did not answer: no exchange completed with 6 of 6"));
        assert_eq!(v.pass.rounds, [4, 2]);
    }

    #[test]
    fn a_slow_pair_that_is_fast_again_is_cleared() {
        let f = fabric(16, 4);
        let v = localise(&f, Schedule::Hypercube, 0.5, |r, pass| {
            Ok(measured(r, pass, &|a, b| Some(if (a, b) == (0, 1) && pass == 1 { 0.1 } else { 1.0 })))
        })
        .unwrap();
        assert!(v.findings.is_empty(), "{:?}", v.findings);
        assert_eq!(v.cleared, ["path n0–n1: slow once, not when measured again"]);
    }

    #[test]
    fn racks_come_from_names_with_two_numbers() {
        assert_eq!(rack_in_name("r03n12").as_deref(), Some("r03"));
        assert_eq!(rack_in_name("rack2-node7").as_deref(), Some("rack2"));
        assert_eq!(rack_in_name("qn5"), None);
        assert_eq!(rack_in_name("login"), None);
    }
}
