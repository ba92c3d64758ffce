//! `qbench probe`: facts about this host turned into checks with a verdict
//! and a remedy each.

pub mod collect;
pub mod nccl_env;
pub mod topo;

use crate::cli::ProbeArgs;
use crate::error::Result;

pub fn run(_args: &ProbeArgs) -> Result<()> {
    Ok(())
}
