//! `qbench probe`'s command line.

use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug, Clone)]
pub struct ProbeArgs {
    /// Print the report as JSON on stdout instead of tables
    #[arg(long)]
    pub json: bool,
    /// Read /sys, /dev and /proc facts under this directory instead of / (for tests and offline reports)
    #[arg(long, value_name = "DIR")]
    pub sysfs_root: Option<PathBuf>,
}

impl ProbeArgs {
    pub fn plan(&self) -> crate::probe::ProbePlan {
        crate::probe::ProbePlan { json: self.json, sysfs_root: self.sysfs_root.clone() }
    }
}
