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
    /// This node should have NVIDIA GPUs: none is a FAIL (exit 1). Without it a node with no GPU SKIPs the GPU checks
    #[arg(long)]
    pub expect_gpus: bool,
}

impl ProbeArgs {
    pub fn plan(&self) -> crate::probe::ProbePlan {
        crate::probe::ProbePlan { json: self.json, sysfs_root: self.sysfs_root.clone(), expect_gpus: self.expect_gpus }
    }
}
