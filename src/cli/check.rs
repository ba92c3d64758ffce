//! `qbench check`'s command line: the profile, the level, baselines.

use super::OutputArgs;
use crate::check::CheckPlan;
use crate::check::profile;
use crate::error::{Error, Result};
use crate::output::OutputPlan;
use clap::Args;
use std::path::PathBuf;

/// What check's exit status says, under its --help.
pub const CHECK_HELP: &str = "Exit status: 0 ready, 1 not ready (a FAIL), 2 bad profile or usage, 3 hardware the profile requires is missing, 4 runtime failure.\nBuilt-in profiles: cpu, h200x1, h200x2-nvlink, h100x8-ndr, h200x8-ndr, a100x8-hdr, mlx4-fdr (profiles/README.md).";

#[derive(Args, Debug, Clone)]
pub struct CheckArgs {
    /// A built-in profile or a TOML file (default: the built-in profile matching this node's GPUs)
    #[arg(long, value_name = "NAME|FILE")]
    pub profile: Option<String>,
    /// prolog, quick, standard or full: which steps run, within the profile's time budget for the level (prolog: before every job, one sample of each step the profile marks prolog)
    #[arg(long, default_value = "quick")]
    pub level: String,
    /// Hold the measurements against an earlier --save-baseline of this node or one of its kind (a check of the same profile); each step against the same step of the same node, else of a node of the baseline; a baseline that compares nothing is refused
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<PathBuf>,
    /// Hold --baseline even though it was taken with another profile
    #[arg(long, requires = "baseline")]
    pub baseline_any: bool,
    /// Write this check's record, to be the baseline of later checks
    #[arg(long, value_name = "FILE")]
    pub save_baseline: Option<PathBuf>,
    /// Measure this node and write a profile of it: its facts, a [match], each step expected at the median it measured, its floor below its worst sample by the spread the node showed (refused on fixtures, on a node that is not ready, and on an existing FILE without --force)
    #[arg(long, value_name = "FILE")]
    pub init: Option<PathBuf>,
    /// With --init: replace FILE where it exists (without it an existing file is refused before anything is measured)
    #[arg(long, requires = "init")]
    pub force: bool,
    /// Samples every step takes, over the profile's `samples`; the median is judged, and a baseline keeps them all
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=i64::from(profile::MOST_SAMPLES)))]
    pub samples: Option<u32>,
    /// How the pairwise pass pairs the nodes, over the profile's: hypercube (ceil(log2 N) rounds, each node meeting partners within its rack and across racks) or all (every pair, N-1 rounds)
    #[arg(long, value_name = "SCHEDULE", value_parser = ["hypercube", "all"])]
    pub pairs: Option<String>,
    /// Append this run's record to DIR/NODE.jsonl, one JSON line per node, for `qbench show --history DIR` (the directory is made if missing)
    #[arg(long, value_name = "DIR")]
    pub history: Option<PathBuf>,
    /// Judge the facts read under this directory instead of / and measure nothing (fixture trees)
    #[arg(long, value_name = "DIR")]
    pub sysfs_root: Option<PathBuf>,
    #[command(flatten)]
    pub out: OutputArgs,
}

impl CheckArgs {
    pub fn plan(&self) -> Result<CheckPlan> {
        let fault = crate::fault::Fault::requested("check", &[crate::fault::Kind::Slow])?;
        let level = profile::Level::parse(&self.level)?;
        if let Some(root) = &self.sysfs_root {
            std::fs::read_dir(root).map_err(|e| Error::Usage(format!("--sysfs-root {}: {e}", root.display())))?;
            if self.init.is_some() {
                return Err(Error::Usage(
                    "--init measures this node, and --sysfs-root measures nothing: a profile needs a real node".into(),
                ));
            }
        }
        if let Some(path) = &self.init {
            crate::check::init_target(path, self.force)?;
        }
        let (mut profile, profile_from) = match &self.profile {
            Some(spec) => profile::load(spec)?,
            None => {
                let host = crate::probe::collect::Host::new(self.sysfs_root.clone(), Default::default());
                let gpus = crate::probe::collect::gpu::collect(&host);
                let names: Vec<String> = gpus.gpus.iter().filter_map(|g| g.name.value().cloned()).collect();
                profile::choose(&names)?
            }
        };
        match self.pairs.as_deref() {
            Some("all") => profile.set_pairs(crate::check::localise::Schedule::All)?,
            Some(_) => profile.set_pairs(crate::check::localise::Schedule::Hypercube)?,
            None => {}
        }
        if level == profile::Level::Prolog && profile.levels.prolog.is_none() {
            return Err(Error::Usage(format!(
                "profile {} has no prolog level: give it `prolog = SECONDS` under [levels] and `level = \"prolog\"` on the steps a job's Prolog runs, or use --level quick",
                profile.profile.name
            )));
        }
        if let Some(dir) = &self.history {
            crate::record::history::prepare(dir)?;
        }
        let baseline = match &self.baseline {
            None => None,
            Some(path) => match crate::record::read(path)? {
                crate::record::AnyRecord::Check(run) if run.profile == profile.profile.name || self.baseline_any => {
                    Some((path.display().to_string(), run))
                }
                crate::record::AnyRecord::Check(run) => {
                    return Err(Error::Usage(format!(
                        "--baseline {} was taken with profile {}, and this check runs profile {}: its figures are of another kind of node (save one with --profile {} --save-baseline FILE, or add --baseline-any to hold it anyway)",
                        path.display(),
                        run.profile,
                        profile.profile.name,
                        profile.profile.name
                    )));
                }
                _ => {
                    return Err(Error::Usage(format!(
                        "--baseline {}: not the record of a qbench check",
                        path.display()
                    )));
                }
            },
        };
        let plan = CheckPlan {
            profile,
            profile_from,
            level,
            baseline,
            sysfs_root: self.sysfs_root.clone(),
            init: self.init.clone(),
            samples: self.samples,
            history: self.history.clone(),
            fault,
        };
        plan.check_baseline()?;
        Ok(plan)
    }

    /// Where the record goes: -J and --save-baseline; `quiet` (the global
    /// --quiet): no table, the lines of what is wrong instead.
    pub fn output(&self, quiet: bool) -> OutputPlan {
        let mut output = self.out.plan();
        output.json_files.extend(self.save_baseline.iter().cloned());
        output.also.extend(self.init.iter().cloned());
        // This node's line of --history (each node of a job writes its own).
        let node = crate::host::short_hostname();
        output.also.extend(self.history.iter().map(|d| crate::record::history::file_of(d, &node)));
        output.quiet = quiet;
        output
    }
}

/// `qbench show --history DIR`: what a check's `--history` gathered.
#[derive(Args, Debug, Clone)]
pub struct HistoryArgs {
    /// Print each check step's trend on each node from the lines `check --history DIR` appended: its last runs, least, median and last figures, flagged DRIFT when it got worse by more than the step's baseline tolerance over them (before its floor is crossed), FAIL when its last run failed
    #[arg(long, value_name = "DIR", conflicts_with = "files")]
    pub history: Option<PathBuf>,
    /// The runs of each node the trends span (the last N lines of each node's file)
    #[arg(long, value_name = "N", requires = "history", default_value_t = 10,
          value_parser = clap::value_parser!(u16).range(crate::record::history::MIN_RUNS as i64..=10_000))]
    pub last: u16,
}

impl HistoryArgs {
    /// The trends' text, where `--history` was given.
    pub fn render(&self) -> Option<Result<String>> {
        let dir = self.history.as_ref()?;
        Some(crate::record::history::read(dir, usize::from(self.last)).map(|h| {
            let trends = crate::record::history::trends(&h);
            crate::report::check::history(&dir.display().to_string(), &h, &trends)
        }))
    }
}
