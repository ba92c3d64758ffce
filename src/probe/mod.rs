//! `qbench probe`: facts about this host turned into checks with a verdict
//! and a remedy each.

use crate::cli::ProbeArgs;
use crate::error::Result;

pub fn run(_args: &ProbeArgs) -> Result<()> {
    Ok(())
}
