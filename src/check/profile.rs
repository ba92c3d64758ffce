//! Profiles: what a ready node of one kind measures. A profile names the
//! machines it is for (match), the facts a node must have, and the steps it
//! measures with a floor or ceiling each; levels select the steps and bound
//! the time. Profiles are TOML; an unknown key or a wrong type is refused
//! with the file, line and key. The profiles of profiles/ are built in and
//! chosen by GPU model and count when none is named.

use super::steps::{BadKey, Keys, StepKind};
use crate::error::{Error, Result};
use crate::probe::checks::wanted::Devices;
/// How far below a baseline a step may fall, as fractions of it.
pub use crate::record::check::Tolerance;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// The profiles shipped in profiles/, built into the binary.
pub const BUILT_IN: &[(&str, &str)] = &[
    ("cpu", include_str!("../../profiles/cpu.toml")),
    ("h200x1", include_str!("../../profiles/h200x1.toml")),
    ("h200x2-nvlink", include_str!("../../profiles/h200x2-nvlink.toml")),
    ("h100x8-ndr", include_str!("../../profiles/h100x8-ndr.toml")),
    ("h200x8-ndr", include_str!("../../profiles/h200x8-ndr.toml")),
    ("a100x8-hdr", include_str!("../../profiles/a100x8-hdr.toml")),
    ("mlx4-fdr", include_str!("../../profiles/mlx4-fdr.toml")),
];

/// How long a check may run at each level. Each level runs the steps of
/// the levels below it too: a step marked `prolog` runs at every level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// Before every job (a Slurm Prolog): the facts and one sample of each
    /// step marked `prolog`, in seconds.
    Prolog,
    Quick,
    Standard,
    Full,
}

impl Level {
    pub fn parse(text: &str) -> Result<Level> {
        match text {
            "prolog" => Ok(Level::Prolog),
            "quick" => Ok(Level::Quick),
            "standard" => Ok(Level::Standard),
            "full" => Ok(Level::Full),
            _ => Err(Error::Usage(format!("unknown level '{text}': use prolog, quick, standard or full"))),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Level::Prolog => "prolog",
            Level::Quick => "quick",
            Level::Standard => "standard",
            Level::Full => "full",
        }
    }

    /// Samples each step takes at this level where `--samples` does not
    /// say: one at `prolog` (a short sample of each path), else the step's
    /// or the profile's.
    pub fn samples(self) -> Option<u32> {
        (self == Level::Prolog).then_some(1)
    }
}

/// A profile as its file says it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    pub profile: About,
    /// Which machines the profile is for, when none is named.
    #[serde(default, rename = "match", skip_serializing_if = "Option::is_none")]
    pub matches: Option<Match>,
    /// Seconds each level may take.
    pub levels: Budgets,
    #[serde(default)]
    pub facts: Facts,
    #[serde(default)]
    pub baseline: Tolerance,
    #[serde(default, rename = "step")]
    pub steps: Vec<Step>,
    /// The machine's figures, for `qbench exchange --plan --profile`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<crate::workload::exchange::model::described::MachineFigures>,
}

impl Profile {
    /// Every pairs step on `schedule` (`check --pairs`); refused where the
    /// profile has none, since the option would change nothing.
    pub fn set_pairs(&mut self, schedule: super::localise::Schedule) -> Result<()> {
        let set = self.steps.iter_mut().map(|s| s.keys.set_schedule(schedule)).fold(false, |a, b| a | b);
        if set {
            return Ok(());
        }
        Err(Error::Usage(format!(
            "--pairs: profile {} has no step of kind \"pairs\" (the pairwise pass across the nodes of a job)",
            self.profile.name
        )))
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct About {
    pub name: String,
    pub description: String,
    /// Where the expected values come from: committed results, a vendor's
    /// specification, a published measurement.
    pub source: String,
    /// Whether the expected values were measured on such a machine here.
    pub measured_here: bool,
    /// The fraction of `expected` a floor sits at, by default (0.9 for 90%).
    #[serde(default = "ninety")]
    pub floor_fraction: f64,
    /// WARN when within this fraction above a floor (or below a ceiling).
    #[serde(default = "five")]
    pub warn: f64,
    /// Samples each measured step takes by default; the median is judged.
    #[serde(default = "one")]
    pub samples: u32,
}

fn one() -> u32 {
    1
}

fn ninety() -> f64 {
    0.9
}

fn five() -> f64 {
    0.05
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Match {
    /// Every GPU's name contains this ("H200").
    pub gpu_model: Option<String>,
    pub gpu_count: Option<usize>,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Budgets {
    /// The `prolog` level's, where the profile has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prolog: Option<u64>,
    pub quick: u64,
    pub standard: u64,
    pub full: u64,
}

impl Budgets {
    /// The level's budget: a profile without a `prolog` one gives its
    /// prolog quick's (and `check --level prolog` refuses it first).
    pub fn of(&self, level: Level) -> u64 {
        match level {
            Level::Prolog => self.prolog.unwrap_or(self.quick),
            Level::Quick => self.quick,
            Level::Standard => self.standard,
            Level::Full => self.full,
        }
    }

    /// The levels this profile gives a budget.
    pub fn levels(&self) -> impl Iterator<Item = Level> + '_ {
        let all = [Level::Prolog, Level::Quick, Level::Standard, Level::Full];
        all.into_iter().filter(|l| *l != Level::Prolog || self.prolog.is_some())
    }
}

/// Facts a ready node has (every field optional).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Facts {
    /// At least this many GPUs.
    pub gpu_count: Option<usize>,
    /// Every GPU's name contains this.
    pub gpu_model: Option<String>,
    /// Every pair of GPUs joined by NVLink.
    pub nvlink: Option<bool>,
    /// The RDMA devices the RDMA facts are about: names or glob patterns,
    /// ["mlx5_[0-7]"] for the compute adapters (default: every device).
    pub rdma_devices: Option<Vec<String>>,
    /// At least this many RDMA ports ACTIVE.
    pub rdma_active_ports: Option<usize>,
    /// Every active port at least this fast, Gb/s.
    pub rdma_rate_gbps: Option<f64>,
    /// "InfiniBand" or "Ethernet" (RoCE) on every active port.
    pub rdma_link_layer: Option<String>,
    /// GPUDirect RDMA possible: a peer-memory module, or dma-buf on every GPU.
    pub gpudirect: Option<bool>,
    /// gdrdrv loaded (/dev/gdrdrv).
    pub gdrdrv: Option<bool>,
    /// At least this NCCL version ("2.18.0").
    pub nccl_version: Option<String>,
    /// NCCL variables that must hold these values.
    pub nccl_env: Option<BTreeMap<String, String>>,
    /// This qbench built with MPI support.
    pub mpi: Option<bool>,
}

impl Facts {
    /// The RDMA devices the RDMA facts are about.
    pub fn rdma_devices(&self) -> Result<Devices> {
        Devices::new(self.rdma_devices.as_deref().unwrap_or_default())
            .map_err(|e| Error::Usage(format!("rdma_devices: {e}")))
    }
}

/// One measurement and its bound: the keys every step has, and its
/// kind's own (`kind` names it; check/steps/ has one file per kind).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Step {
    pub name: String,
    #[serde(flatten)]
    pub keys: Keys,
    /// The lowest level that runs the step.
    #[serde(default = "quick")]
    pub level: Level,
    /// One of the kind's metrics.
    pub metric: String,
    /// What a ready node measures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected: Option<f64>,
    /// Whether `expected` was measured or projected (`qbench exchange --plan`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_from: Option<ExpectedFrom>,
    /// At least this (bandwidths); default: floor_fraction × expected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub floor: Option<f64>,
    /// At most this (times, latencies); default: expected / floor_fraction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ceiling: Option<f64>,
    /// Runs again before it FAILs.
    #[serde(default)]
    pub retries: u32,
    /// Samples this step takes (default: the profile's); the median is judged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub samples: Option<u32>,
    /// What one sample costs on such a node, in seconds: the levels'
    /// budgets are checked against the sum when the profile is read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seconds: Option<f64>,
    /// This step's own tolerance against a baseline (a figure that varies
    /// from run to run, as small-copy latencies do); default: `[baseline]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<Tolerance>,
    /// What to do when it fails.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

fn quick() -> Level {
    Level::Quick
}

/// Where a step's expected value comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ExpectedFrom {
    /// A run on such a machine (the profile's `source` names it).
    Measured,
    /// `qbench exchange --plan` from the profile's `[machine]` figures.
    Projected,
}

impl ExpectedFrom {
    pub fn name(self) -> &'static str {
        match self {
            ExpectedFrom::Measured => "measured",
            ExpectedFrom::Projected => "projected",
        }
    }
}

impl Step {
    /// The floor: given, or for a rate the profile's fraction of the
    /// expected value, unless the step is bounded by a ceiling.
    pub fn floor(&self, about: &About) -> Option<f64> {
        let derived = !self.lower_is_better() && self.ceiling.is_none();
        self.floor.or_else(|| self.expected.filter(|_| derived).map(|e| e * about.floor_fraction))
    }

    /// The ceiling: given, or for a time the expected value over the
    /// profile's fraction, unless the step is bounded by a floor.
    pub fn ceiling(&self, about: &About) -> Option<f64> {
        let derived = self.lower_is_better() && self.floor.is_none();
        self.ceiling.or_else(|| self.expected.filter(|_| derived).map(|e| e / about.floor_fraction))
    }

    /// Samples to take: the step's own, else the profile's.
    pub fn samples(&self, about: &About) -> u32 {
        self.samples.unwrap_or(about.samples)
    }

    /// Whether the step's metric is a time.
    pub fn lower_is_better(&self) -> bool {
        self.kind().metrics().iter().any(|m| m.name == self.metric && m.lower_is_better)
    }

    pub fn kind(&self) -> &dyn StepKind {
        self.keys.kind()
    }

    /// The unit of the step's metric.
    pub fn unit(&self) -> &'static str {
        self.kind().metrics().iter().find(|m| m.name == self.metric).map_or("", |m| m.unit)
    }
}

/// Reads a profile: a built-in name or a file.
pub fn load(spec: &str) -> Result<(Profile, String)> {
    if let Some((name, text)) = BUILT_IN.iter().find(|(n, _)| *n == spec) {
        return Ok((parse(text, &format!("profiles/{name}.toml"))?, format!("built-in {name}")));
    }
    let path = Path::new(spec);
    if !path.exists() && !spec.contains('/') && !spec.ends_with(".toml") {
        let names: Vec<&str> = BUILT_IN.iter().map(|(n, _)| *n).collect();
        return Err(Error::Usage(format!(
            "no profile '{spec}': use a built-in profile ({}) or a TOML file",
            names.join(", ")
        )));
    }
    let text = crate::input::read(path, &format!("profile {spec}"), crate::input::PROFILE_BYTES)?;
    Ok((parse(&text, spec)?, spec.to_string()))
}

/// Parses and checks a profile's text; errors name the file, line and key.
pub fn parse(text: &str, file: &str) -> Result<Profile> {
    let p: Profile = toml::from_str(text).map_err(|e| {
        let what = crate::input::bounded(e.message().trim());
        let Some(start) = e.span().map(|s| s.start.min(text.len())) else {
            return Error::Usage(format!("profile {file}: {what}"));
        };
        let line = text[..start].matches('\n').count() + 1;
        // A step's own keys are reported at its [[step]] header: the step
        // is named, and the line that holds what the message quotes shown.
        if text.lines().nth(line - 1).is_some_and(|l| l.trim() == "[[step]]") {
            let name = line_in_block(text, line, |l| key_of(l) == Some("name")).and_then(|n| {
                text.lines().nth(n - 1)?.split_once('=').map(|(_, v)| v.trim().trim_matches('"').to_string())
            });
            let what = name.map_or(what.clone(), |n| format!("step '{n}': {what}"));
            let at = quoted(&what).find_map(|q| line_in_block(text, line, |l| l.contains(q)));
            return at_line(file, text, at.unwrap_or(line), &what);
        }
        at_line(file, text, line, &what)
    })?;
    if let Err(e) = p.facts.rdma_devices() {
        let what = e.message();
        return Err(match text.lines().position(|l| key_of(l) == Some("rdma_devices")) {
            Some(i) => at_line(file, text, i + 1, &what),
            None => Error::Usage(format!("profile {file}: {what}")),
        });
    }
    validate(&p).map_err(|(step, bad)| {
        // A profile-wide key (no step): its first line.
        if step.is_empty() {
            let what = format!("{}: {}", bad.key, bad.why);
            return match text.lines().position(|l| key_of(l) == Some(bad.key)) {
                Some(i) => at_line(file, text, i + 1, &what),
                None => Error::Usage(format!("profile {file}: {what}")),
            };
        }
        let what = format!("step '{}': {}: {}", step, bad.key, bad.why);
        match step_line(text, &step).and_then(|at| line_in_block(text, at, |l| key_of(l) == Some(bad.key))) {
            Some(line) => at_line(file, text, line, &what),
            None => Error::Usage(format!("profile {file}: {what}")),
        }
    })?;
    Ok(p)
}

/// A profile error at `line` (1-based): the number and the line's text,
/// which names the key.
fn at_line(file: &str, text: &str, line: usize, what: &str) -> Error {
    let code = crate::input::excerpt(text.lines().nth(line - 1).unwrap_or("").trim(), crate::input::EXCERPT_CHARS);
    Error::Usage(format!("profile {file}:{line}: {what} (in `{code}`)"))
}

/// What an error message quotes: `key` or "value".
fn quoted(what: &str) -> impl Iterator<Item = &str> {
    let ticks = what.split('`').skip(1).step_by(2);
    let quotes = what.split('"').skip(1).step_by(2);
    ticks.chain(quotes).filter(|q| !q.is_empty())
}

/// The key a line sets, `key = value`.
fn key_of(line: &str) -> Option<&str> {
    line.split_once('=').map(|(k, _)| k.trim()).filter(|k| !k.starts_with('#') && !k.starts_with('['))
}

/// The line of the `[[step]]` header whose step is named `name`.
fn step_line(text: &str, name: &str) -> Option<usize> {
    let lines: Vec<&str> = text.lines().collect();
    let named = |l: &str| {
        key_of(l) == Some("name") && l.split_once('=').is_some_and(|(_, v)| v.trim().trim_matches('"') == name)
    };
    let at = lines.iter().position(|l| named(l))?;
    lines[..at].iter().rposition(|l| l.trim() == "[[step]]").map(|i| i + 1)
}

/// The first line from header line `at` (1-based) to the next table
/// header that `hit` accepts.
fn line_in_block(text: &str, at: usize, hit: impl Fn(&str) -> bool) -> Option<usize> {
    text.lines()
        .enumerate()
        .skip(at)
        .take_while(|(_, l)| !l.trim_start().starts_with('['))
        .find(|(_, l)| hit(l))
        .map(|(i, _)| i + 1)
}

/// The most samples a step takes (the profile's, the step's or `--samples`).
pub const MOST_SAMPLES: u32 = 100;

/// The longest budget a level may have, seconds (a week): a check longer
/// than that is a mistake, and its deadline must stay on the clock.
const MOST_BUDGET: u64 = 7 * 24 * 3600;

/// What is wrong with a profile: the step it is in (empty for the profile's
/// own keys) and the key.
type Bad = (String, BadKey);

/// Every step's keys and bounds make sense, the profile's counts and
/// budgets are within their limits and its steps' costs within them: the
/// step (named) and what is wrong.
fn validate(p: &Profile) -> std::result::Result<(), Bad> {
    let bad = |key, why: String| (String::new(), BadKey { key, why });
    if p.steps.is_empty() && p.facts == Facts::default() {
        return Err(bad("name", "the profile has no facts and no steps: it would check nothing".into()));
    }
    about(&p.profile).map_err(|b| (String::new(), b))?;
    tolerance(&p.baseline).map_err(|b| (String::new(), b))?;
    if let Some(r) = p.facts.rdma_rate_gbps.filter(|r| !(r.is_finite() && *r > 0.0)) {
        return Err(bad("rdma_rate_gbps", format!("{r} is not a positive number")));
    }
    for s in &p.steps {
        step(s).map_err(|b| (s.name.clone(), b))?;
    }
    let mut names: Vec<&str> = p.steps.iter().map(|s| s.name.as_str()).collect();
    names.sort_unstable();
    if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
        return Err((w[0].to_string(), BadKey { key: "name", why: "two steps have this name".into() }));
    }
    for level in p.levels.levels() {
        let budget = p.levels.of(level);
        if budget == 0 || budget > MOST_BUDGET {
            return Err(bad(level.name(), format!("{budget} s: a level's budget is 1 to {MOST_BUDGET} s (a week)")));
        }
    }
    // A level's budget holds what its steps say they cost, every sample
    // and retry taken.
    for level in p.levels.levels() {
        let samples = |s: &Step| f64::from(level.samples().unwrap_or_else(|| s.samples(&p.profile)));
        let cost: f64 = p
            .steps
            .iter()
            .filter(|s| s.level <= level)
            .filter_map(|s| Some(s.seconds? * samples(s) * (1.0 + f64::from(s.retries))))
            .sum();
        let budget = p.levels.of(level) as f64;
        if cost > budget {
            return Err(bad(
                level.name(),
                format!(
                    "its steps cost {cost:.0} s by their `seconds` (samples and retries taken), over the {budget:.0} s budget"
                ),
            ));
        }
    }
    Ok(())
}

/// The profile's own figures: fractions between 0 and 1, samples counted.
fn about(a: &About) -> std::result::Result<(), BadKey> {
    if !(a.floor_fraction > 0.0 && a.floor_fraction <= 1.0) {
        return Err(BadKey { key: "floor_fraction", why: format!("{} is not a fraction in (0, 1]", a.floor_fraction) });
    }
    if !(0.0..1.0).contains(&a.warn) {
        return Err(BadKey { key: "warn", why: format!("{} is not a fraction in [0, 1)", a.warn) });
    }
    samples(a.samples)
}

/// A tolerance against a baseline: fractions, the warning's no larger
/// than the failure's.
fn tolerance(t: &Tolerance) -> std::result::Result<(), BadKey> {
    for (key, v) in [("warn", t.warn), ("fail", t.fail)] {
        if !(0.0..1.0).contains(&v) {
            return Err(BadKey { key, why: format!("{v} is not a fraction in [0, 1)") });
        }
    }
    match t.warn <= t.fail {
        true => Ok(()),
        false => Err(BadKey { key: "warn", why: format!("{} is above fail = {}", t.warn, t.fail) }),
    }
}

/// A count of samples: 1 to [`MOST_SAMPLES`].
fn samples(n: u32) -> std::result::Result<(), BadKey> {
    match n {
        1..=MOST_SAMPLES => Ok(()),
        _ => Err(BadKey { key: "samples", why: format!("{n}: use 1 to {MOST_SAMPLES}") }),
    }
}

/// A step's keys (its kind's, checked as the command line checks them) and
/// its bounds.
fn step(s: &Step) -> std::result::Result<(), BadKey> {
    let bad = |key, why: String| BadKey { key, why };
    if s.name.trim().is_empty() {
        return Err(bad("name", "a step needs a name (baselines match steps by it)".into()));
    }
    s.kind().validate(&s.metric)?;
    let metrics: Vec<&str> = s.kind().metrics().iter().map(|m| m.name).collect();
    if !metrics.contains(&s.metric.as_str()) {
        return Err(bad("metric", format!("'{}' is not one of {}", s.metric, metrics.join(", "))));
    }
    if s.expected.is_none() && s.floor.is_none() && s.ceiling.is_none() {
        return Err(bad("name", "give `expected`, `floor` or `ceiling`".into()));
    }
    if let Some(n) = s.samples {
        samples(n)?;
    }
    if let Some(t) = &s.baseline {
        tolerance(t).map_err(|b| bad("baseline", format!("{}: {}", b.key, b.why)))?;
    }
    // A bound that is not a positive number checks nothing (NaN, -inf
    // and 0 pass every figure).
    for (key, v) in [("expected", s.expected), ("floor", s.floor), ("ceiling", s.ceiling), ("seconds", s.seconds)] {
        if let Some(v) = v.filter(|v| !(v.is_finite() && *v > 0.0)) {
            return Err(bad(key, format!("{v} is not a positive number")));
        }
    }
    Ok(())
}

/// The built-in profile whose match fits these GPUs: their model and
/// their count both (a match without a count takes any); the cpu profile
/// without GPUs. None fits: refused, naming the nearest (the same model,
/// the count nearest), so that a node is never held to another's GPUs.
pub fn choose(gpu_names: &[String]) -> Result<(Profile, String)> {
    if gpu_names.is_empty() {
        return load("cpu");
    }
    let n = gpu_names.len();
    // (how far its count is from the node's, its name, its count)
    let mut near: Vec<(usize, &str, Option<usize>)> = Vec::new();
    for (name, text) in BUILT_IN {
        let Some(m) = parse(text, name)?.matches else { continue };
        let Some(model) = m.gpu_model.as_deref() else { continue };
        if gpu_names.iter().all(|g| g.contains(model)) {
            near.push((m.gpu_count.map_or(0, |c| c.abs_diff(n)), name, m.gpu_count));
        }
    }
    near.sort_by_key(|&(far, name, _)| (far, name));
    match near.first() {
        Some(&(0, name, _)) => load(name),
        Some(&(_, name, count)) => Err(Error::Usage(format!(
            "no built-in profile matches {n} × {}: the nearest, {name}, is for {} of them: name a profile with --profile (--profile {name} holds this node to it anyway), or write one of this node with --init FILE",
            gpu_names[0],
            count.unwrap_or(0)
        ))),
        None => Err(Error::Usage(format!(
            "no built-in profile matches {n} × {}: none is for this model; name a profile with --profile, or write one of this node with --init FILE",
            gpu_names[0]
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_built_in_profile_parses() {
        for (name, text) in BUILT_IN {
            let p = parse(text, name).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(p.profile.name, *name);
            assert!(!p.profile.source.is_empty());
        }
    }

    #[test]
    fn malformed_profiles_name_the_file_line_and_key() {
        let ok = BUILT_IN[0].1;
        let unknown = ok.replacen("[levels]", "[levels]\nsprint = 5", 1);
        let e = parse(&unknown, "x.toml").unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.message().contains("x.toml:") && e.message().contains("sprint"), "{e}");
        let wrong = ok.replacen("quick = ", "quick = \"soon\" # ", 1);
        let e = parse(&wrong, "y.toml").unwrap_err();
        assert!(e.message().contains("y.toml:") && e.message().contains("quick"), "{e}");
        let e = parse("not toml at all [", "z.toml").unwrap_err();
        assert!(e.message().starts_with("profile z.toml:1"), "{e}");
        assert!(load("/nonexistent/p.toml").unwrap_err().message().contains("cannot read profile"));
        assert!(load("no-such-profile").unwrap_err().message().contains("built-in profile"));
    }

    /// A prolog budget holds one sample of each step marked prolog; the
    /// steps of the prolog run at every level; a profile may have none.
    #[test]
    fn the_prolog_level_is_one_sample_of_its_steps_within_its_budget() {
        let cpu = BUILT_IN[0].1;
        let p = parse(cpu, "cpu.toml").unwrap();
        assert_eq!(p.levels.levels().collect::<Vec<_>>(), [Level::Prolog, Level::Quick, Level::Standard, Level::Full]);
        assert!(p.steps.iter().filter(|s| s.level == Level::Prolog).count() >= 3);
        assert!(Level::Prolog < Level::Quick && Level::parse("prolog").unwrap() == Level::Prolog);
        assert_eq!((Level::Prolog.samples(), Level::Quick.samples()), (Some(1), None));
        // Each prolog step costs 3 s a sample: three of them fit 10 s once
        // each at prolog, five times each (the profile's samples) at quick.
        let costly = cpu.replace("level = \"prolog\"\n", "level = \"prolog\"\nseconds = 3\n");
        let cost = |prolog: &str, quick: &str| {
            parse(&costly.replace("prolog = 10", prolog).replace("quick = 60", quick), "c.toml").map(|_| ())
        };
        assert!(cost("prolog = 10", "quick = 60").is_ok());
        let e = cost("prolog = 8", "quick = 60").unwrap_err();
        assert!(e.message().contains("c.toml:") && e.message().contains("prolog: its steps cost 9 s"), "{e}");
        let e = cost("prolog = 10", "quick = 40").unwrap_err();
        assert!(e.message().contains("quick: its steps cost 45 s"), "{e}");
        // No prolog budget: the level is not among the profile's.
        let none = parse(&cpu.replace("prolog = 10\n", ""), "n.toml").unwrap();
        assert_eq!(none.levels.levels().next(), Some(Level::Quick));
        assert_eq!(none.levels.of(Level::Prolog), none.levels.quick);
    }

    #[test]
    fn the_profile_is_chosen_by_gpu_model_and_count() {
        let h200 = |n| vec!["NVIDIA H200".to_string(); n];
        assert_eq!(choose(&h200(1)).unwrap().0.profile.name, "h200x1");
        assert_eq!(choose(&h200(2)).unwrap().0.profile.name, "h200x2-nvlink");
        assert_eq!(choose(&h200(8)).unwrap().0.profile.name, "h200x8-ndr");
        assert_eq!(choose(&[]).unwrap().0.profile.name, "cpu");
        assert_eq!(choose(&["NVIDIA GeForce GTX 1080".to_string()]).unwrap_err().exit_code(), 2);
        // A count no profile of the model has: refused, the nearest named.
        let e = choose(&vec!["NVIDIA A100-SXM4-80GB".to_string(); 2]).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.message().starts_with("no built-in profile matches 2 × NVIDIA A100-SXM4-80GB"), "{e}");
        assert!(e.message().contains("the nearest, a100x8-hdr, is for 8 of them"), "{e}");
        let e = choose(&h200(4)).unwrap_err();
        assert!(e.message().contains("the nearest, h200x2-nvlink, is for 2"), "{e}");
        let e = choose(&["NVIDIA GeForce GTX 1080".to_string()]).unwrap_err();
        assert!(e.message().contains("none is for this model"), "{e}");
    }
}
