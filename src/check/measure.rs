//! A step on this process: who measures it under MPI (its scope), the
//! runs and retries, and its rows. Wrong data is a FAIL whatever the
//! figure; a step that cannot run here is a FAIL too, marked missing when
//! the hardware it needs is absent.

use super::judge::bound;
use super::profile::{Profile, Step};
use super::steps::Scope;
use crate::error::{Error, Result};
use crate::record::check::{Row, Status, host_of};
use crate::session::Session;
use crate::stats::Summary;
use std::time::Instant;

fn row(step: &Step, node: &str, found: String, status: Status, fix: String) -> Row {
    Row {
        step: step.name.clone(),
        place: None,
        kind: step.keys.name().into(),
        node: node.into(),
        found,
        measured: None,
        samples: Vec::new(),
        unit: step.unit().into(),
        expected: step.expected,
        expected_from: step.expected_from.map(|f| f.name().into()),
        floor: None,
        ceiling: step.ceiling,
        ratio: None,
        baseline: None,
        vs_baseline: None,
        status,
        fix,
        attempts: 1,
        missing: false,
    }
}

/// The row of a step that did not run.
pub fn skipped(step: &Step, node: &str, why: &str) -> Row {
    row(step, node, why.into(), Status::Skip, String::new())
}

/// What an error that stopped a step means for its row.
fn failed(step: &Step, node: &str, e: &Error) -> Row {
    let missing = matches!(e, Error::Missing(_));
    let mut r = row(step, node, e.message(), Status::Fail, step.fix.clone().unwrap_or_default());
    if missing {
        r.fix = "the hardware or library the step needs is not here: check the node against the profile's facts".into();
    }
    r.missing = missing;
    r
}

/// What every step of a check is run with on this process.
pub struct Context<'a> {
    pub profile: &'a Profile,
    pub session: &'a Session,
    /// This process's node name (host, or host:rank).
    pub node: &'a str,
    /// This node has fewer GPUs than the profile's facts want, so that no
    /// GPU step is measured against figures of a machine it is not (they
    /// are FAILs of missing hardware instead).
    pub short_of_gpus: bool,
    /// Processes of this job share a node's GPUs: its GPU steps run once,
    /// on the node's first process alone, not by ranks measuring each other.
    pub shared_gpus: Option<usize>,
    /// Samples for every step (`--samples`), over the profile's.
    pub samples: Option<u32>,
    /// `QBENCH_CORRUPT=slow:RANK` names this process.
    pub slow: bool,
    /// When the level's budget is spent: no retry starts after it.
    pub deadline: Instant,
}

/// Runs a step on this process: its rows (none where another process
/// speaks for the step).
pub fn run(step: &Step, cx: &Context) -> Result<Vec<Row>> {
    let world = cx.session.world();
    let kind = step.kind();
    let alone = kind.uses_gpus() && cx.shared_gpus.is_some();
    let scope = if alone { Scope::Node } else { kind.scope() };
    if scope == Scope::Node && world.local_rank() != 0 {
        // One run a node: the others would measure each other.
        return Ok(Vec::new());
    }
    if let (Some(lacks), 1) = (kind.needs_several(), world.size()) {
        return Ok(if world.rank() == 0 {
            vec![skipped(step, cx.node, &format!("one process: {lacks} (run under mpirun or srun)"))]
        } else {
            Vec::new()
        });
    }
    let across = scope == Scope::Job;
    let name = match scope {
        Scope::Job if world.size() > 1 => "all",
        Scope::Node => host_of(cx.node),
        _ => cx.node,
    };
    // A step across the job speaks through rank 0.
    let speak = |rows: Vec<Row>| if across && world.rank() != 0 { Vec::new() } else { rows };
    if kind.uses_gpus() && if across { super::any(cx.session, cx.short_of_gpus) } else { cx.short_of_gpus } {
        return Ok(speak(vec![short_of_gpus(step, name)]));
    }
    let solo;
    let session = if alone {
        solo = cx.session.alone();
        &solo
    } else {
        cx.session
    };
    let how = Attempts { name, across, shared: cx.shared_gpus.filter(|_| alone) };
    Ok(speak(attempts(step, cx, session, &how)?))
}

/// The FAIL of a GPU step on a node with fewer GPUs than the profile's facts want.
fn short_of_gpus(step: &Step, name: &str) -> Row {
    let mut r = row(
        step,
        name,
        "not run: fewer GPUs than the profile's facts want (fact: gpu count)".into(),
        Status::Fail,
        "a GPU is missing, or this is not the profile of this node: check nvidia-smi, or name the right --profile"
            .into(),
    );
    r.missing = true;
    r
}

/// How a step's attempts are made and named.
struct Attempts<'a> {
    /// The rows' node: this process's, its host's, or "all".
    name: &'a str,
    /// Across the job: rank 0 decides each retry for every process.
    across: bool,
    /// The processes sharing the node's GPUs, where this one measures alone for them.
    shared: Option<usize>,
}

/// Samples the step until it passes, its retries are used or the level's
/// budget is spent: the last attempt's rows.
fn attempts(step: &Step, cx: &Context, session: &Session, how: &Attempts) -> Result<Vec<Row>> {
    let samples = cx.samples.unwrap_or_else(|| step.samples(&cx.profile.profile));
    let mut attempts: u32 = 0;
    loop {
        attempts += 1;
        let taken = match sample(step, session, samples, cx.slow) {
            Ok(f) => f,
            Err(e) if e.is_interruption() => return Err(e),
            Err(e) => {
                let mut r = failed(step, how.name, &e);
                r.attempts = attempts;
                return Ok(vec![r]);
            }
        };
        let mut rows: Vec<Row> = taken.iter().map(|t| judged(step, cx.profile, how.name, t, attempts)).collect();
        if let Some(n) = how.shared {
            for r in &mut rows {
                r.found = format!("{} (once for the node: {n} processes share its GPUs)", r.found);
            }
        }
        let failing = rows.iter().any(|r| r.status == Status::Fail);
        let left = attempts <= step.retries;
        let in_time = Instant::now() < cx.deadline;
        let retry = failing && left && in_time;
        // A retry of a step across processes is rank 0's decision for all.
        if if how.across { super::agree(session, retry) } else { retry } {
            continue;
        }
        if failing && left && !in_time {
            for r in rows.iter_mut().filter(|r| r.status == Status::Fail) {
                r.fix = format!(
                    "{} ({attempts} of {} attempts ran: the level's budget was spent)",
                    r.fix,
                    1 + step.retries
                );
            }
        }
        return Ok(rows);
    }
}

/// One figure's samples of a step, and their median.
struct Taken {
    /// Where: the place of the sample nearest the median (a pairwise pass
    /// names the partner it measured, which may change from sample to sample).
    place: Option<String>,
    samples: Vec<f64>,
    median: f64,
    wrong: u64,
}

/// Measures the step `n` times; each figure's samples in order (the k-th
/// figure of every sample together), their median, and every wrong
/// element seen. A process under `slow` takes every figure as a million times worse.
fn sample(step: &Step, session: &Session, n: u32, slow: bool) -> Result<Vec<Taken>> {
    let mut runs: Vec<Vec<(Option<String>, f64, u64)>> = Vec::new();
    for _ in 0..n {
        let figures = step.kind().measure(&step.metric, session)?;
        for (k, f) in figures.into_iter().enumerate() {
            let value = match (slow, step.lower_is_better()) {
                (false, _) => f.value,
                (true, true) => f.value * 1e6,
                (true, false) => f.value / 1e6,
            };
            if runs.len() <= k {
                runs.push(Vec::new());
            }
            runs[k].push((f.place, value, f.wrong));
        }
    }
    Ok(runs
        .into_iter()
        .map(|run| {
            let samples: Vec<f64> = run.iter().map(|(_, v, _)| *v).collect();
            let median = Summary::of(&samples).median;
            let nearest = run.iter().min_by(|a, b| (a.1 - median).abs().total_cmp(&(b.1 - median).abs()));
            Taken {
                place: nearest.and_then(|(p, _, _)| p.clone()),
                wrong: run.iter().map(|(_, _, w)| w).sum(),
                samples,
                median,
            }
        })
        .collect())
}

fn judged(step: &Step, profile: &Profile, node: &str, f: &Taken, attempts: u32) -> Row {
    let (floor, ceiling) = (step.floor(&profile.profile), step.ceiling(&profile.profile));
    let unit = step.unit();
    let mut status = bound(f.median, floor, ceiling, profile.profile.warn);
    let of = if f.samples.len() > 1 { format!(" (median of {})", f.samples.len()) } else { String::new() };
    let mut found = match &f.place {
        Some(p) => format!("{p}: {:.3} {unit}{of}", f.median),
        None => format!("{:.3} {unit}{of}", f.median),
    };
    if f.wrong > 0 {
        status = Status::Fail;
        found = format!("{found}, {} wrong (the data delivered is not what was sent)", f.wrong);
    }
    let mut r = row(step, node, found, status, String::new());
    if status != Status::Pass {
        r.fix = step.fix.clone().unwrap_or_else(|| "below what a ready node of this kind measures".into());
    }
    r.place = f.place.clone();
    r.measured = Some(f.median);
    r.samples = f.samples.clone();
    r.floor = floor;
    r.ceiling = ceiling;
    r.ratio = step.expected.map(|e| f.median / e);
    r.attempts = attempts;
    r
}
