//! The kinds of readiness step, one file each: a kind owns its keys in a
//! profile, the metrics it measures and their units, the libraries it
//! needs, where it runs under MPI, and its measurement: the workload's plan
//! made from its keys, run in the check's session with nobody watching,
//! and the figures read from its record. Adding a kind is its file and a
//! line in the list below.

use crate::error::Result;
use crate::libs::Library;
use crate::record::check::{PairPass, Status};
use crate::session::Session;
use serde::{Deserialize, Serialize};

/// One figure of a step on one node.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    /// Where on the node: "GPU 0", "mlx5_0→mlx5_1", "rank 3 with 2".
    pub place: Option<String>,
    pub value: f64,
    /// Elements, amplitudes, words or bytes that arrived wrong.
    pub wrong: u64,
    /// What a judgement across the job (the pairwise pass's) says of it.
    pub judged: Option<Box<Judged>>,
}

/// A judgement made across the job, beside the figure's own floor: a node
/// the pairwise pass names, or the fabric's elements it names.
#[derive(Debug, Clone, PartialEq)]
pub struct Judged {
    /// The row is the job's ("all"), not this process's node.
    pub of_job: bool,
    /// At least this status.
    pub status: Status,
    /// What is bad and the evidence, and what to do: the row's fix.
    pub fix: String,
    /// The pass's every pair, for the record.
    pub pass: Option<PairPass>,
}

/// A metric a kind measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Metric {
    pub name: &'static str,
    pub unit: &'static str,
    /// A time or a latency: a ready node stays under a ceiling, not above a floor.
    pub lower_is_better: bool,
}

impl Metric {
    /// A bandwidth or a share: the more the better.
    pub const fn rate(name: &'static str, unit: &'static str) -> Metric {
        Metric { name, unit, lower_is_better: false }
    }

    /// A time: the less the better.
    pub const fn time(name: &'static str, unit: &'static str) -> Metric {
        Metric { name, unit, lower_is_better: true }
    }
}

/// Which processes of an MPI job measure a step, and whose rows it gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Every process at once, one measurement across the job: one row.
    Job,
    /// One process of each node (the others would measure each other): a row per node.
    Node,
    /// Every process, each with a partner: a row per process.
    Pairs,
}

/// A key of a step that cannot run as written, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct BadKey {
    pub key: &'static str,
    pub why: String,
}

impl BadKey {
    /// `key` is wrong as `e` says.
    pub fn new(key: &'static str, e: crate::error::Error) -> BadKey {
        BadKey { key, why: e.message() }
    }
}

/// What each kind of step says about itself and does.
pub trait StepKind {
    /// The metrics it can judge.
    fn metrics(&self) -> &'static [Metric];
    /// Refuses keys that cannot run as written (an unknown collective, a
    /// bad size), or that `metric` (one of `metrics`) does not read.
    fn validate(&self, metric: &str) -> std::result::Result<(), BadKey>;
    /// The GPU libraries its measurement needs.
    fn libraries(&self) -> Vec<Library>;
    fn scope(&self) -> Scope;
    /// Whether it measures GPUs (a node short of GPUs does not run it).
    fn uses_gpus(&self) -> bool;
    /// What a job of one process lacks for it, where it needs several.
    fn needs_several(&self) -> Option<&'static str> {
        None
    }
    /// Runs it in `session` and reads `metric` from the record.
    fn measure(&self, metric: &str, session: &Session) -> Result<Vec<Figure>>;
}

/// Declares the kinds: their files and the `Keys` a profile's step holds.
macro_rules! kinds {
    ($($kind:ident => $module:ident),* $(,)?) => {
        $(mod $module;)*

        /// A step's own keys, by its `kind`.
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        #[serde(tag = "kind", rename_all = "lowercase")]
        pub enum Keys {
            $($kind($module::Keys)),*
        }

        impl Keys {
            pub fn kind(&self) -> &dyn StepKind {
                match self {
                    $(Keys::$kind(k) => k),*
                }
            }

            /// A pairs step's schedule set to `schedule` (`check --pairs`);
            /// false for the other kinds.
            pub fn set_schedule(&mut self, schedule: crate::check::localise::Schedule) -> bool {
                match self {
                    Keys::Pairs(k) => {
                        k.pairs = Some(schedule);
                        true
                    }
                    _ => false,
                }
            }

            /// The kind's name, as profiles and rows say it.
            pub fn name(&self) -> &'static str {
                match self {
                    $(Keys::$kind(_) => stringify!($module)),*
                }
            }
        }
    };
}

kinds! {
    Collective => collective,
    Copy => copy,
    Exchange => exchange,
    Pairs => pairs,
    Rails => rails,
    Rdma => rdma,
}

/// The workload's outcome as a result: its record, or the error that stopped it.
fn done<R>(o: crate::record::Outcome<R>) -> Result<R> {
    match o.error {
        Some(e) => Err(e),
        None => Ok(o.record),
    }
}

/// A step's size key in bytes: at least one (no bytes measure nothing).
fn bytes(size: &str) -> Result<u64> {
    match crate::units::parse_size(size)? {
        0 => Err(crate::error::Error::Usage(format!("\"{size}\" is no bytes: give at least 1"))),
        n => Ok(n),
    }
}

/// The most timed iterations a step may ask for: more would outlast any
/// level's budget.
const MOST_ITERS: u32 = 100_000;

/// A step's `iters`: 1 to [`MOST_ITERS`], said as the profile's key.
fn iters(iters: Option<u32>) -> std::result::Result<(), BadKey> {
    match iters {
        Some(n) if n == 0 || n > MOST_ITERS => Err(BadKey { key: "iters", why: format!("{n}: use 1 to {MOST_ITERS}") }),
        _ => Ok(()),
    }
}

/// A step's `gpus` (host ranks for the cpu transport) a process: at least
/// one, a power of two where a register spreads over them.
fn gpus(gpus: Option<usize>, power_of_two: bool) -> std::result::Result<(), BadKey> {
    match gpus {
        Some(0) => Err(BadKey { key: "gpus", why: "0: use at least 1".into() }),
        Some(g) if power_of_two && !g.is_power_of_two() => {
            Err(BadKey { key: "gpus", why: format!("{g}: a register spreads over a power of two (1, 2, 4, 8, …)") })
        }
        _ => Ok(()),
    }
}

/// GPUs (or host ranks) per process: host ranks under MPI are one a process.
fn per_process(gpus: Option<usize>, session: &Session, cpu: bool) -> usize {
    if cpu && session.world().size() > 1 { 1 } else { gpus.unwrap_or(1) }
}
