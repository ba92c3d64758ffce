//! A step on this process: who measures it under MPI (its scope), the
//! runs and retries, and its rows. Wrong data is a FAIL whatever the
//! figure; a step that cannot run here is a FAIL too, marked missing when
//! the hardware it needs is absent.

use super::judge::bound;
use super::profile::{Profile, Step};
use super::steps::{Figure, Scope};
use crate::error::{Error, Result};
use crate::record::check::{Row, Status};
use crate::session::Session;

fn row(step: &Step, node: &str, found: String, status: Status, fix: String) -> Row {
    Row {
        step: step.name.clone(),
        place: None,
        kind: step.keys.name().into(),
        node: node.into(),
        found,
        measured: None,
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
    let missing = matches!(e, Error::Missing(_) | Error::Usage(_));
    let mut r = row(step, node, e.message(), Status::Fail, step.fix.clone().unwrap_or_default());
    if missing {
        r.fix = "the hardware or library the step needs is not here: check the node against the profile's facts".into();
    }
    r.missing = missing;
    r
}

/// Runs a step on this process: its rows (none where another process
/// speaks for the step). `short_of_gpus`: this node has fewer GPUs than the
/// profile's facts want, so that no GPU step is measured against figures of
/// a machine it is not (they are FAILs of missing hardware instead).
pub fn run(step: &Step, profile: &Profile, session: &Session, node: &str, short_of_gpus: bool) -> Result<Vec<Row>> {
    let world = session.world();
    let kind = step.kind();
    let scope = kind.scope();
    if scope == Scope::Node && world.local_rank() != 0 {
        // One run a node: the others would measure each other.
        return Ok(Vec::new());
    }
    if scope == Scope::Pairs && world.size() < 2 {
        return Ok(if world.rank() == 0 {
            vec![skipped(step, node, "one process: no pair of nodes to test (run under mpirun or srun)")]
        } else {
            Vec::new()
        });
    }
    let across = scope == Scope::Job;
    let name = if across && world.size() > 1 { "all" } else { node };
    // A step across the job speaks through rank 0.
    let speak = |rows: Vec<Row>| if across && world.rank() != 0 { Vec::new() } else { rows };
    if kind.uses_gpus() && if across { super::any(session, short_of_gpus) } else { short_of_gpus } {
        let mut r = row(
            step,
            name,
            "not run: fewer GPUs than the profile's facts want (fact: gpu count)".into(),
            Status::Fail,
            "a GPU is missing, or this is not the profile of this node: check nvidia-smi, or name the right --profile"
                .into(),
        );
        r.missing = true;
        return Ok(speak(vec![r]));
    }
    let mut attempts: u32 = 0;
    loop {
        attempts += 1;
        let figures = match kind.measure(&step.metric, session) {
            Ok(f) => f,
            Err(e) if e.is_interruption() => return Err(e),
            Err(e) => {
                let mut r = failed(step, name, &e);
                r.attempts = attempts;
                return Ok(speak(vec![r]));
            }
        };
        let rows: Vec<Row> = figures.iter().map(|f| judged(step, profile, name, f, attempts)).collect();
        let failing = rows.iter().any(|r| r.status == Status::Fail);
        // A retry of a step across processes is rank 0's decision for all.
        let again = attempts <= step.retries && if across { super::agree(session, failing) } else { failing };
        if !again {
            return Ok(speak(rows));
        }
    }
}

fn judged(step: &Step, profile: &Profile, node: &str, f: &Figure, attempts: u32) -> Row {
    let (floor, ceiling) = (step.floor(&profile.profile), step.ceiling(&profile.profile));
    let unit = step.unit();
    let mut status = bound(f.value, floor, ceiling, profile.profile.warn);
    let mut found = match &f.place {
        Some(p) => format!("{p}: {:.3} {unit}", f.value),
        None => format!("{:.3} {unit}", f.value),
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
    r.measured = Some(f.value);
    r.floor = floor;
    r.ceiling = ceiling;
    r.ratio = step.expected.map(|e| f.value / e);
    r.attempts = attempts;
    r
}
