//! Workloads: what is moved and how it is checked, independent of how it
//! is printed. Each measuring command's plan is a [`Job`]: the pipeline
//! (`command.rs`) loads what it needs, runs it and judges its record.

pub mod collective;
pub mod copy;
pub mod exchange;
pub mod osu;
pub mod rdma;

use crate::error::Result;
use crate::libs::Library;
use crate::record::{Observer, Outcome, Streamed};
use crate::session::Session;

/// A measuring command's plan, as the pipeline runs it.
pub trait Job {
    type Record: Streamed;
    /// The GPU libraries the session loads before the run.
    fn libraries(&self) -> Vec<Library>;
    /// What the command runs on a machine without GPUs, said when the
    /// driver is missing (None: nothing of it runs without one).
    fn without_gpus(&self) -> Option<&'static str>;
    /// Runs the plan in `session`, telling `obs` of each part as it is measured.
    fn run(&self, session: &Session, obs: &mut dyn Observer<Self::Record>) -> Outcome<Self::Record>;
    /// What the finished record means for process `rank`'s exit status:
    /// the job's verdict, or (check) the verdict on that rank's node.
    fn verdict(&self, record: &Self::Record, rank: usize) -> Result<()>;
}
