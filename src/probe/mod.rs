//! `qbench probe`: facts about this host turned into checks with a verdict
//! and a remedy each. Collectors gather facts (collect), checks judge them
//! (checks), renderers print them (render); exit 1 when a check FAILs.

pub mod checks;
pub mod collect;
pub mod nccl_env;
pub mod render;
pub mod topo;

use crate::error::{Error, Result};
use checks::Status;
use collect::Host;
use std::path::PathBuf;

/// What `qbench probe` reads and how it reports.
#[derive(Debug, Clone, Default)]
pub struct ProbePlan {
    /// JSON on stdout instead of tables.
    pub json: bool,
    /// Read /sys, /dev and /proc under this directory instead of /.
    pub sysfs_root: Option<PathBuf>,
}

pub fn run(args: &ProbePlan, ui: &crate::ui::Ui) -> Result<()> {
    if let Some(root) = &args.sysfs_root {
        std::fs::read_dir(root).map_err(|e| Error::Usage(format!("--sysfs-root {}: {e}", root.display())))?;
    }
    let env = std::env::vars_os().filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?))).collect();
    let host = Host::new(args.sysfs_root.clone(), env);
    let facts = collect::collect(&host);
    let checks = checks::evaluate(&facts);
    let verdict = checks::verdict(&checks);
    let report = if args.json {
        render::json(&facts, &checks, verdict)
    } else {
        render::text(&facts, &checks, verdict, ui.width)
    };
    crate::output::write_stdout(&format!("{report}\n"))?;
    if verdict == Status::Fail { Err(Error::CheckFailed(String::new())) } else { Ok(()) }
}
