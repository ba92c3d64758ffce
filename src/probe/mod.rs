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
    /// A node without an NVIDIA GPU FAILs (else its GPU checks SKIP).
    pub expect_gpus: bool,
}

/// `qbench show` of a file: the probe's text report when the file holds
/// `qbench probe --json`'s document (Ok(None) when it holds anything else).
pub fn reread(path: &std::path::Path, width: Option<usize>) -> Result<Option<String>> {
    let json = crate::input::read(path, &path.display().to_string(), crate::input::RECORD_BYTES)?;
    let report = render::reread(&json, width).transpose();
    // As `run` prints it.
    report.map(|r| r.map(|text| format!("{text}\n"))).map_err(|e| Error::Usage(format!("{}: {}", path.display(), e.message())))
}

pub fn run(args: &ProbePlan, ui: &crate::ui::Ui) -> Result<()> {
    if let Some(root) = &args.sysfs_root {
        std::fs::read_dir(root).map_err(|e| Error::Usage(format!("--sysfs-root {}: {e}", root.display())))?;
    }
    let env = std::env::vars_os().filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?))).collect();
    let host = Host::new(args.sysfs_root.clone(), env);
    let facts = collect::collect(&host);
    let checks = checks::evaluate(&facts, args.expect_gpus);
    let verdict = checks::verdict(&checks);
    let report = if args.json {
        render::json(&facts, &checks, verdict)
    } else {
        render::text(&facts, &checks, verdict, ui.width)
    };
    crate::output::write_stdout(&format!("{report}\n"))?;
    if verdict == Status::Fail { Err(Error::CheckFailed(String::new())) } else { Ok(()) }
}
