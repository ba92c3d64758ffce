//! `qbench copy`'s command line: nccl-tests' letters where they mean the
//! same thing, made into the copy run's configuration.

use super::{OutputArgs, size_arg};
use crate::error::Result;
use crate::numa::Mode;
use crate::record::copy::Config;
use crate::workload::copy::{CopyPlan, latency_sizes};
use clap::Args;

#[derive(Args, Debug, Clone)]
pub struct CopyArgs {
    /// Tests to run: names, family names or nvbandwidth's test names, comma- or space-separated, or all (see --list)
    #[arg(short = 't', long = "test", alias = "testcase", default_value = "all", value_name = "NAME,...", num_args = 1.., value_delimiter = ',')]
    pub test: Vec<String>,
    /// List the tests and exit
    #[arg(long)]
    pub list: bool,
    /// Smallest copy in bytes of the bandwidth sweep (K, M, G suffixes are binary)
    #[arg(short = 'b', long = "minbytes", default_value = "1M", value_parser = size_arg)]
    pub minbytes: u64,
    /// Largest copy in bytes of the bandwidth sweep (cut to what free memory holds)
    #[arg(short = 'e', long = "maxbytes", default_value = "1G", value_parser = size_arg)]
    pub maxbytes: u64,
    /// Multiplicative step between sizes
    #[arg(short = 'f', long = "stepfactor", default_value_t = 4)]
    pub stepfactor: u64,
    /// Back-to-back copies in one timed sample
    #[arg(short = 'n', long = "iters", default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=10000))]
    pub iters: u32,
    /// Warm-up copies before each size is timed
    #[arg(short = 'w', long = "warmup_iters", alias = "warmup-iters", default_value_t = 3)]
    pub warmup_iters: u32,
    /// Timed samples per size; the median is reported
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    pub samples: u32,
    /// Copies timed one by one at each size of the latency tests (1 B to 16 MiB)
    #[arg(long = "lat_iters", alias = "lat-iters", default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..))]
    pub lat_iters: u32,
    /// GPUs to use, the first ones visible (default: all)
    #[arg(short = 'g', long = "ngpus", value_parser = clap::value_parser!(u32).range(1..))]
    pub ngpus: Option<u32>,
    #[command(flatten)]
    pub out: OutputArgs,
    /// Seed of the copied data
    #[arg(long, default_value_t = crate::pattern::DEFAULT_SEED)]
    pub seed: u64,
    /// Where the host side runs: auto binds each host thread and host buffer to the NUMA node of the GPU it copies to or from (as nvbandwidth), off binds nothing, N binds to node N
    #[arg(long, default_value = "auto", value_name = "auto|off|N")]
    pub numa: Mode,
}

impl CopyArgs {
    pub fn plan(&self) -> Result<CopyPlan> {
        crate::workload::copy::alone_on_this_node()?;
        CopyPlan::new(
            Config {
                tests: self.test.iter().map(|t| t.trim().to_string()).collect(),
                ngpus: self.ngpus.map_or(0, |n| n as usize),
                minbytes: self.minbytes,
                maxbytes: self.maxbytes,
                stepfactor: self.stepfactor,
                iters: self.iters,
                warmup_iters: self.warmup_iters,
                samples: self.samples,
                lat_iters: self.lat_iters,
                lat_sizes: latency_sizes(),
                seed: self.seed,
                corrupt_word: None,
                numa: Some(self.numa),
            },
            CopyPlan::fault_asked()?,
        )
    }
}
