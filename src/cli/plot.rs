//! `qbench plot` and `qbench show`: records read back, drawn or printed.

use crate::error::{Error, Result};
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug, Clone)]
pub struct PlotArgs {
    /// JSON records written by -J or --json (collective, copy, exchange, compare, check, rdma); several of one kind overlay
    #[arg(required = true, value_name = "FILE.json")]
    pub files: Vec<PathBuf>,
    /// The picture: SVG, or PNG when the name ends in .png; - writes SVG to stdout (default: FILE.svg here)
    #[arg(short = 'o', long = "output", value_name = "OUT.svg|OUT.png")]
    pub output: Option<PathBuf>,
    /// Collectives: the figure against size (default busbw); time, p50 and p99 also pick copy latency and exchange figures
    #[arg(long, value_name = "busbw|algbw|time|p50|p99")]
    pub metric: Option<String>,
    /// The picture's title (default: what is drawn, from which hosts)
    #[arg(long, value_name = "TEXT")]
    pub title: Option<String>,
    /// Copy records: the tests to draw, names or families, comma-separated (default: every test that ran)
    #[arg(long = "test", value_name = "NAME,...")]
    pub test: Option<String>,
}

impl PlotArgs {
    pub fn plan(&self) -> Result<crate::report::plot::PlotPlan> {
        let read = |out: &PathBuf| self.files.iter().find(|f| crate::output::same_file(f, out));
        if let Some(f) = self.output.as_ref().and_then(read) {
            return Err(Error::Usage(format!(
                "-o {}: the picture would be written over the record {} it draws: name another file",
                self.output.as_ref().map_or(String::new(), |o| o.display().to_string()),
                f.display()
            )));
        }
        crate::report::plot::PlotPlan::new(
            self.files.clone(),
            self.output.clone(),
            self.metric.as_deref(),
            self.title.clone(),
            self.test.as_deref(),
        )
    }
}

#[derive(Args, Debug, Clone)]
pub struct ShowArgs {
    /// JSON records written by -J or --json, of any kind
    #[arg(required_unless_present = "history", value_name = "FILE.json")]
    pub files: Vec<PathBuf>,
    #[command(flatten)]
    pub history: super::check::HistoryArgs,
}
