//! `qbench check`: is this node (this cluster) ready for the simulation?
//! The facts a profile requires and the measurements it lists, run in one
//! process (one session), each judged against its floor or ceiling, its
//! warn band and a baseline, into one readiness record. Under MPI every
//! node is judged: per-node steps give a row per node, steps across nodes
//! one row, and a pairwise pass names the slow node.

mod facts;
mod judge;
pub mod localise;
mod measure;
pub mod profile;
pub mod steps;

use crate::error::{Error, Result};
use crate::fault::Fault;
use crate::interrupt;
use crate::libs::Library;
use crate::record::check::{CheckRun, FACTS, KIND, Row, START, Spent, Status};
use crate::record::{Header, Observer, Outcome};
use crate::session::Session;
use crate::workload::Job;
use profile::{ExpectedFrom, Level, Profile};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// What `qbench check` runs, resolved before anything is measured.
#[derive(Debug, Clone)]
pub struct CheckPlan {
    pub profile: Profile,
    /// Where the profile was read from.
    pub profile_from: String,
    pub level: Level,
    /// The earlier check the rows are held against, and its file.
    pub baseline: Option<(String, CheckRun)>,
    /// Read the facts under this directory, measure nothing (fixtures).
    pub sysfs_root: Option<PathBuf>,
    /// Write a profile of what this node measured here.
    pub init: Option<PathBuf>,
    /// Samples every step takes (`--samples`), over the profile's.
    pub samples: Option<u32>,
    /// `--history DIR`: each node's line of the record appended there.
    pub history: Option<PathBuf>,
    /// `QBENCH_CORRUPT=slow:RANK`: the rank whose figures are taken as worse.
    pub fault: Option<Fault>,
}

impl CheckPlan {
    /// The steps of the plan's level, in the profile's order.
    pub fn steps(&self) -> impl Iterator<Item = &profile::Step> {
        self.profile.steps.iter().filter(|s| s.level <= self.level)
    }

    /// The tolerance `step` is held to against a baseline and its history:
    /// its own, else the profile's.
    pub fn tolerance(&self, step: &profile::Step) -> profile::Tolerance {
        step.baseline.unwrap_or(self.profile.baseline)
    }

    /// Err when the baseline measured none of the steps this check runs:
    /// held against it, nothing would be compared.
    pub fn check_baseline(&self) -> Result<()> {
        let Some((file, base)) = &self.baseline else { return Ok(()) };
        let mut held: Vec<&str> = base.rows.iter().filter(|r| r.measured.is_some()).map(|r| r.step.as_str()).collect();
        held.dedup();
        if self.sysfs_root.is_some() || self.steps().any(|s| held.contains(&s.name.as_str())) {
            return Ok(());
        }
        let held: Vec<String> = held.iter().map(|s| format!("'{s}'")).collect();
        let held = match held.len() {
            0 => "no measured step".to_string(),
            n if n <= 3 => held.join(", "),
            n => format!("{} and {} more", held[..3].join(", "), n - 3),
        };
        Err(Error::Usage(format!(
            "--baseline {file} holds none of the steps of this check (it holds {held}, level {}): it would compare nothing; save a baseline of this profile and level",
            base.level
        )))
    }
}

impl Job for CheckPlan {
    type Record = CheckRun;

    /// What the steps of the level need; nothing when only facts are judged.
    fn libraries(&self) -> Vec<Library> {
        if self.sysfs_root.is_some() {
            return Vec::new();
        }
        let mut libs: Vec<Library> = self.steps().flat_map(|s| s.kind().libraries()).collect();
        libs.sort();
        libs.dedup();
        libs
    }

    fn without_gpus(&self) -> Option<&'static str> {
        Some("--profile cpu checks the host ranks")
    }

    fn run(&self, session: &Session, obs: &mut dyn Observer<CheckRun>) -> Outcome<CheckRun> {
        run(self, session, obs)
    }

    fn verdict(&self, record: &CheckRun, rank: usize) -> Result<()> {
        record.verdict(rank)
    }
}

/// The name this process's rows carry: its host, or host:rank where the
/// host runs several processes of the job.
fn node_name(session: &Session, facts: &crate::probe::collect::Facts) -> String {
    // A fixture tree's own host name, when it has one.
    let host = match (facts.host.live, facts.host.hostname.value()) {
        (false, Some(name)) => name.split('.').next().unwrap_or(name).to_string(),
        _ => crate::host::short_hostname(),
    };
    let world = session.world();
    let on_host = crate::world::launched_on_this_node().map_or(1, |(_, n)| n);
    if world.size() > 1 && on_host > 1 { format!("{host}:{}", world.rank()) } else { host }
}

fn run(plan: &CheckPlan, session: &Session, obs: &mut dyn Observer<CheckRun>) -> Outcome<CheckRun> {
    let p = &plan.profile;
    let mut out = CheckRun {
        header: Header::start(KIND, plan.fault),
        profile: p.profile.name.clone(),
        profile_from: plan.profile_from.clone(),
        source: p.profile.source.clone(),
        measured_here: p.profile.measured_here,
        level: plan.level.name().into(),
        budget_s: p.levels.of(plan.level),
        elapsed_s: 0.0,
        baseline: plan.baseline.as_ref().map(|(f, _)| f.clone()),
        nodes: Vec::new(),
        rank_nodes: Vec::new(),
        rows: Vec::new(),
        spent: Vec::new(),
        tolerance: plan.steps().map(|s| (s.name.clone(), plan.tolerance(s))).collect(),
        init: None,
        verdict: None,
    };
    obs.started(&out);
    let result = check(plan, session, obs, &mut out);
    if result.is_ok() {
        out.settle();
    }
    let mut outcome = Outcome::new(out, result);
    // A finished run's lines, each node's by the node's first process.
    if let (Some(dir), None) = (&plan.history, &outcome.error)
        && let Err(e) = crate::record::history::append(dir, &outcome.record, session.world().rank())
    {
        outcome.error = Some(e);
    }
    outcome
}

fn check(plan: &CheckPlan, session: &Session, obs: &mut dyn Observer<CheckRun>, out: &mut CheckRun) -> Result<()> {
    session.need(&plan.libraries())?;
    let world = session.world();
    if let Some(Fault::Slow(rank)) = plan.fault
        && rank >= world.size()
    {
        return Err(Error::Usage(format!(
            "{}=slow:{rank} names rank {rank} but the job's ranks are 0 to {}: no figure would be slowed",
            crate::fault::VAR,
            world.size() - 1
        )));
    }
    let start = Instant::now();
    interrupt::step("check: the facts");
    let env = std::env::vars_os().filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?))).collect();
    let facts = crate::probe::collect::collect(&crate::probe::collect::Host::new(plan.sysfs_root.clone(), env));
    let node = node_name(session, &facts);
    out.rank_nodes = gather_strings(session, &node)?;
    out.nodes = out.rank_nodes.clone();
    out.nodes.dedup();
    obs.begin(out);
    let mut mine = Mine::default();
    mine.rows.extend(facts::judge(&plan.profile.facts, &facts, &node)?.into_iter().map(|r| (0, r)));
    if let Some(age) = process_age(start) {
        mine.spent.push((0, Spent { step: START.into(), node: node.clone(), seconds: age }));
    }
    mine.spent.push((0, Spent { step: FACTS.into(), node: node.clone(), seconds: start.elapsed().as_secs_f64() }));
    let cx = context(plan, session, &node, &facts, start);
    // Each step opens its GPUs: their contexts are made once, not per step.
    let kept = crate::gpu::KeepContexts::start();
    run_steps(plan, &cx, start, &mut mine)?;
    drop(kept);
    out.elapsed_s = start.elapsed().as_secs_f64();
    (out.rows, out.spent) = gather(session, mine)?;
    for r in out.rows.clone() {
        obs.part(out, &r);
    }
    match &plan.init {
        Some(path) => init(plan, out, &facts, path, world.rank()),
        None => Ok(()),
    }
}

/// What every step runs with on this process: the node, whether it is
/// short of GPUs or shares them, the samples and the level's deadline.
fn context<'a>(
    plan: &'a CheckPlan,
    session: &'a Session,
    node: &'a str,
    facts: &crate::probe::collect::Facts,
    start: Instant,
) -> measure::Context<'a> {
    let world = session.world();
    // More processes on a node than it has GPUs: they would share them.
    let gpus = facts.gpu.gpus.len();
    let sharing = if gpus > 0 && world.local_size() > gpus { world.local_size() } else { 0 };
    let sharing = world.max_f64(&[sharing as f64])[0] as usize;
    measure::Context {
        profile: &plan.profile,
        session,
        node,
        short_of_gpus: plan.profile.facts.gpu_count.is_some_and(|n| gpus < n),
        shared_gpus: (sharing > 0).then_some(sharing),
        samples: plan.samples.or(plan.level.samples()),
        slow: matches!(plan.fault, Some(Fault::Slow(r)) if r == world.rank()),
        // Budgets are bounded when the profile is read; past the clock's
        // end there would be no deadline to keep.
        deadline: start
            .checked_add(std::time::Duration::from_secs(plan.profile.levels.of(plan.level)))
            .unwrap_or(start),
    }
}

/// This process's rows and seconds, each with its position in the run
/// (0 for the facts, then the steps in order), sorted when gathered.
#[derive(Default, serde::Serialize, serde::Deserialize)]
struct Mine {
    rows: Vec<(usize, Row)>,
    spent: Vec<(usize, Spent)>,
}

/// Runs the level's steps in order, each judged against its bound and the
/// baseline, each timed where this process speaks for it; a step that
/// would start after the level's budget is spent is not run (a WARN).
fn run_steps(plan: &CheckPlan, cx: &measure::Context, start: Instant, mine: &mut Mine) -> Result<()> {
    let budget = plan.profile.levels.of(plan.level) as f64;
    for (i, step) in plan.steps().enumerate() {
        interrupt::check()?;
        interrupt::step(format!("check: {}", step.name));
        let began = Instant::now();
        // Every process must take the same path through steps that span them.
        let over = agree(cx.session, start.elapsed().as_secs_f64() > budget);
        let rows = if plan.sysfs_root.is_some() {
            vec![measure::skipped(step, cx.node, "not measured: facts only (--sysfs-root)")]
        } else if over {
            let why = format!("not run: the {} level's {budget:.0} s were spent", plan.level.name());
            vec![measure::skipped(step, cx.node, &why)]
        } else {
            measure::run(step, cx)?
        };
        if !rows.is_empty() {
            let seconds = began.elapsed().as_secs_f64();
            mine.spent.push((i + 1, Spent { step: step.name.clone(), node: cx.node.into(), seconds }));
        }
        for mut r in rows {
            judge::baseline(&mut r, plan.baseline.as_ref().map(|(_, b)| b), &plan.tolerance(step));
            if r.status == Status::Skip && over {
                r.status = Status::Warn;
                r.fix = format!("run a higher level, or raise the {} budget in the profile", plan.level.name());
            }
            mine.rows.push((i + 1, r));
        }
    }
    Ok(())
}

/// Seconds from this process's start to `now`: what loading the libraries
/// and joining the MPI world took before the check began (Linux: the
/// process's start in clock ticks after boot, the 22nd field of
/// /proc/self/stat, against /proc/uptime).
fn process_age(now: Instant) -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command's name (field 2) may hold spaces: count after its ')'.
    let started: f64 = stat[stat.rfind(')')? + 1..].split_whitespace().nth(19)?.parse().ok()?;
    let uptime: f64 = std::fs::read_to_string("/proc/uptime").ok()?.split_whitespace().next()?.parse().ok()?;
    // SAFETY: sysconf reads one of the system's constants.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    (hz > 0).then(|| (uptime - started / hz as f64 - now.elapsed().as_secs_f64()).max(0.0))
}

/// `--init`: a profile of this node, written by rank 0, refused on a node
/// that is not ready.
fn init(
    plan: &CheckPlan,
    out: &mut CheckRun,
    facts: &crate::probe::collect::Facts,
    path: &PathBuf,
    rank: usize,
) -> Result<()> {
    let failing: Vec<&str> = out.rows.iter().filter(|r| r.status == Status::Fail).map(|r| r.step.as_str()).collect();
    if !failing.is_empty() {
        return Err(Error::Usage(format!(
            "--init: no profile written: this node is not ready ({}), and a profile of it would expect what is wrong",
            failing.join(", ")
        )));
    }
    if rank == 0 {
        out.init = Some(write_profile(path, plan, out, facts)?);
    }
    Ok(())
}

/// `--init FILE`, before anything is measured: refused where FILE exists
/// (unless `force`) or cannot be written, so that a run of many seconds
/// does not end in a refusal. A file of this process's own is made beside
/// it and removed, so that the path is tried as it will be written.
pub fn init_target(path: &Path, force: bool) -> Result<()> {
    let refuse = |why: String| Err(Error::Usage(format!("--init {}: {why}", path.display())));
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => return refuse("a directory, not a file".into()),
        Ok(_) if !force => return refuse("the file exists: add --force to replace it".into()),
        Ok(_) => {
            if let Err(e) = std::fs::OpenOptions::new().append(true).open(path) {
                return refuse(format!("cannot be written: {e}"));
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return refuse(e.to_string()),
    }
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let trial = path.with_file_name(format!(".{name}.qbench-{}", std::process::id()));
    match std::fs::OpenOptions::new().write(true).create_new(true).open(&trial) {
        Ok(_) => {
            let _ = std::fs::remove_file(&trial);
            Ok(())
        }
        Err(e) => refuse(format!("cannot be written: {e}")),
    }
}

/// Whether any process says yes.
fn any(session: &Session, mine: bool) -> bool {
    session.world().max_f64(&[if mine { 1.0 } else { 0.0 }])[0] > 0.0
}

/// Rank 0's answer, for every process.
fn agree(session: &Session, mine: bool) -> bool {
    let mut b = [mine as u8];
    session.world().broadcast(0, &mut b);
    b[0] != 0
}

fn gather_strings(session: &Session, mine: &str) -> Result<Vec<String>> {
    let all: Vec<String> = session
        .world()
        .all_gather(mine.as_bytes())
        .into_iter()
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .collect();
    Ok(all)
}

/// Every process's rows and seconds in step order, then node order.
fn gather(session: &Session, mine: Mine) -> Result<(Vec<Row>, Vec<Spent>)> {
    let bytes = serde_json::to_vec(&mine).map_err(|e| Error::Runtime(format!("cannot encode the rows: {e}")))?;
    let mut all = Mine::default();
    for b in session.world().all_gather(&bytes) {
        let theirs: Mine =
            serde_json::from_slice(&b).map_err(|e| Error::Runtime(format!("cannot decode a node's rows: {e}")))?;
        all.rows.extend(theirs.rows);
        all.spent.extend(theirs.spent);
    }
    all.rows.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.node.cmp(&b.1.node)));
    // The start before the facts, then the steps.
    all.spent.sort_by_key(|s| (s.0, s.1.step != START, s.1.node.clone()));
    Ok((all.rows.into_iter().map(|(_, r)| r).collect(), all.spent.into_iter().map(|(_, s)| s).collect()))
}

/// How `--init` sets a bound, in the words the profile it writes says it.
const ROOM: &str = "its floor (a time's ceiling) is its worst sample moved away from the median by as much again, and by half the median at least (at most to a quarter, or four times, the worst; a 2-core host's all_reduce moved its median to 0.37 of the one --init saw), then by the profile's floor_fraction and its warn band: a later run as far from the median as this one's worst sample went, and as far again, still passes; a step that fails is measured once more before it counts (a 2-core host's sendrecv ran at 0.19 of its median for four samples in a row)";

/// A step's bound from its median `m` and worst sample `w` (see [`ROOM`]):
/// a bandwidth's floor, or a time's ceiling, where the node's own spread
/// from run to run passes.
fn room(time: bool, m: f64, w: f64, ff: f64, warn: f64) -> f64 {
    let spread = (w - m).abs().max(0.5 * m);
    if time { (w + spread).min(4.0 * w) / ff * (1.0 + warn) } else { (w - spread).max(0.25 * w) * ff / (1.0 + warn) }
}

/// A profile of this node: its facts and a `[match]` for it, every
/// measured step expected at its median (the lowest node's, or the
/// slowest's for a time), its floor below its worst sample (a ceiling
/// above it) as [`ROOM`] says, so that the spread this node showed is not
/// a failure, nor a warning, of its next run. Returns what was written.
fn write_profile(
    path: &PathBuf,
    plan: &CheckPlan,
    run: &CheckRun,
    facts: &crate::probe::collect::Facts,
) -> Result<String> {
    let mut p = plan.profile.clone();
    let host = crate::host::short_hostname();
    p.profile.name = format!("{host}-init");
    p.profile.description = format!("{} as measured on {host}", plan.profile.profile.description);
    p.profile.source = format!("qbench check --init on {host} at {}", run.header.start_time);
    p.profile.measured_here = true;
    let names: Vec<&String> = facts.gpu.gpus.iter().filter_map(|g| g.name.value()).collect();
    let model = names.first().filter(|n| names.iter().all(|m| m == *n)).map(|n| n.to_string());
    p.matches = model.as_ref().map(|m| profile::Match { gpu_model: Some(m.clone()), gpu_count: Some(names.len()) });
    if !names.is_empty() {
        p.facts.gpu_count = Some(names.len());
        p.facts.gpu_model = model;
    }
    let ff = p.profile.floor_fraction;
    // Four significant figures: what the table shows, not the noise below it.
    let round = |x: f64| {
        let scale = 10f64.powi(3 - x.abs().log10().floor() as i32);
        (x * scale).round() / scale
    };
    let mut written = 0;
    for s in &mut p.steps {
        let rows: Vec<&Row> = run.rows.iter().filter(|r| r.step == s.name && r.measured.is_some()).collect();
        let time = s.lower_is_better();
        let pick =
            |f: fn(f64, f64) -> f64, of: &dyn Fn(&Row) -> Option<f64>| rows.iter().filter_map(|r| of(r)).reduce(f);
        let (median, worst) = if time {
            (pick(f64::max, &|r| r.measured), pick(f64::max, &|r| r.worst_sample()))
        } else {
            (pick(f64::min, &|r| r.measured), pick(f64::min, &|r| r.worst_sample()))
        };
        let (Some(m), Some(w)) = (median.filter(|m| *m > 0.0), worst.filter(|w| *w > 0.0)) else { continue };
        s.expected = Some(round(m));
        s.expected_from = Some(ExpectedFrom::Measured);
        let room = room(time, m, w, ff, p.profile.warn);
        if time {
            s.ceiling = Some(round(room));
            s.floor = None;
        } else {
            s.floor = Some(round(room));
            s.ceiling = None;
        }
        // Bounds from a few seconds of this node see few of its bursts of
        // other work: a FAIL is measured once more before it drains the
        // node (where the step states its cost, the level's budget holds
        // the retries it already says).
        if s.retries == 0 && s.seconds.is_none() {
            s.retries = 1;
        }
        written += 1;
    }
    let text = toml::to_string(&p).map_err(|e| Error::Runtime(format!("cannot write the profile: {e}")))?;
    let head = format!("# Written by qbench check --init on {host}: each step expected at the median it measured; {ROOM}.\n");
    std::fs::write(path, head + &text).map_err(|e| Error::Usage(format!("cannot write {}: {e}", path.display())))?;
    Ok(format!(
        "profile {} written to {}: {written} steps expected as measured, bounds below each one's worst sample by its spread{}",
        p.profile.name,
        path.display(),
        p.matches
            .as_ref()
            .map(|m| format!(", chosen on {} × {}", m.gpu_count.unwrap_or(0), m.gpu_model.as_deref().unwrap_or("")))
            .unwrap_or_default()
    ))
}

#[cfg(test)]
mod tests {
    /// A bound leaves the node's spread, twice, and half the median at
    /// least: a bandwidth of median 10 and worst 7 gets 2 × 0.9 / 1.05; one
    /// of worst 9 or a steady one half the median below the worst; a time's
    /// ceiling mirrors it; never past a quarter (four times) the worst.
    #[test]
    fn init_bounds_leave_room_for_the_nodes_spread() {
        let near = |a: f64, b: f64| (a - b).abs() < 1e-9;
        assert!(near(super::room(false, 10.0, 7.0, 0.9, 0.05), 2.0 * 0.9 / 1.05));
        assert!(near(super::room(false, 10.0, 9.0, 0.9, 0.05), 4.0 * 0.9 / 1.05));
        assert!(near(super::room(false, 10.0, 10.0, 0.9, 0.05), 5.0 * 0.9 / 1.05));
        assert!(near(super::room(true, 10.0, 13.0, 0.9, 0.05), 18.0 / 0.9 * 1.05));
        assert!(near(super::room(false, 10.0, 4.0, 0.9, 0.05), 1.0 * 0.9 / 1.05));
        assert!(near(super::room(true, 10.0, 30.0, 0.9, 0.05), 50.0 / 0.9 * 1.05));
    }
}
