//! A job split as nccl-tests' `NCCL_TESTS_SPLIT` asks ([`Split`], plain
//! data in the record): every process joins the communicator of its
//! colour (an MPI_Comm_split), and the colours run the benchmark together.

use crate::error::{Error, Result};
use crate::record::split::Split;

/// This process's part of a split job.
pub struct Joined {
    pub colour: usize,
    /// Every colour and its job ranks.
    pub groups: Vec<(usize, Vec<usize>)>,
    /// The processes of this colour.
    pub world: Box<dyn super::World>,
}

/// Splits the job as `split` asks; every process calls it together. None
/// for a process alone: nccl-tests splits MPI jobs only.
pub fn join(split: &Split, world: &dyn super::World) -> Result<Option<Joined>> {
    if world.size() == 1 {
        return Ok(None);
    }
    let colour = split.colour(world.rank());
    let groups = split.groups(world.size());
    #[cfg(feature = "mpi")]
    if let Some(mpi) = world.mpi() {
        return Ok(Some(Joined { colour, groups, world: Box::new(mpi.split(colour)?) }));
    }
    let _ = (colour, groups);
    Err(Error::Runtime("internal: a multi-process world without MPI".into()))
}
