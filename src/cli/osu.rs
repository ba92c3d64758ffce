//! The OSU subcommands (`qbench osu_bw -d cuda D D`), one per OSU
//! Micro-Benchmarks program, with OSU's letters and defaults, so that an
//! acceptance script's line runs with `qbench` in front of it.

use super::OutputArgs;
use crate::error::{Error, Result};
use crate::record::osu::{Benchmark, Datatype, Place};
use crate::units::parse_size;
use crate::workload::osu::{MAX_MESSAGE, OsuPlan};
use clap::{ArgMatches, Args, FromArgMatches, Subcommand};

const HELP: &str = "OSU 7.4's loops, counts and formulas: latency is half the mean round trip of rank 0's ping-pongs; bandwidth is bytes (MB = 10^6 bytes) × iterations × window over rank 0's time (the senders' mean for osu_mbw_mr); osu_allreduce's time is MPI_Allreduce alone, averaged over ranks. Sizes above 8 KiB take OSU's shorter loops.\nEvery receiving buffer is compared with what was sent (osu_allreduce's with the exact sum) once each size's loop ends; wrong data exits 1. QBENCH_CORRUPT=RANK[:ELEMENT] flips element ELEMENT of RANK's received data before that check, to prove it.";

/// An OSU subcommand: which test, with OSU's options.
#[derive(Debug)]
pub struct OsuCommand {
    pub benchmark: Benchmark,
    pub args: OsuArgs,
}

impl FromArgMatches for OsuCommand {
    fn from_arg_matches(m: &ArgMatches) -> std::result::Result<Self, clap::Error> {
        let (name, sub) = m.subcommand().ok_or_else(|| clap::Error::new(clap::error::ErrorKind::MissingSubcommand))?;
        let benchmark =
            Benchmark::from_program(name).ok_or_else(|| clap::Error::new(clap::error::ErrorKind::InvalidSubcommand))?;
        Ok(OsuCommand { benchmark, args: OsuArgs::from_arg_matches(sub)? })
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> std::result::Result<(), clap::Error> {
        *self = OsuCommand::from_arg_matches(m)?;
        Ok(())
    }
}

impl Subcommand for OsuCommand {
    fn augment_subcommands(mut cmd: clap::Command) -> clap::Command {
        for &b in Benchmark::ALL {
            let about = match b {
                Benchmark::Latency => "MPI point-to-point latency from 1 byte, ping-pong (OSU's osu_latency)",
                Benchmark::Bw => "MPI point-to-point bandwidth, a window of sends (OSU's osu_bw; -d cuda D D)",
                Benchmark::Bibw => "MPI bandwidth both ways at once (OSU's osu_bibw)",
                Benchmark::MbwMr => "MPI bandwidth and message rate of rank pairs at once (OSU's osu_mbw_mr)",
                Benchmark::Allreduce => "MPI_Allreduce latency on host or GPU buffers (OSU's osu_allreduce)",
            };
            cmd = cmd.subcommand(OsuArgs::augment_args(clap::Command::new(b.program())).about(about).after_help(HELP));
        }
        cmd
    }

    fn augment_subcommands_for_update(cmd: clap::Command) -> clap::Command {
        OsuCommand::augment_subcommands(cmd)
    }

    fn has_subcommand(name: &str) -> bool {
        Benchmark::from_program(name).is_some()
    }
}

/// OSU's options, same letters, same defaults.
#[derive(Args, Debug, Clone)]
pub struct OsuArgs {
    /// [MIN:]MAX message sizes in bytes (K, M, G binary): -m 128, -m 2:128, -m 2: (default: OSU's, 4M; 1M for osu_allreduce)
    #[arg(short = 'm', long = "message-size", value_name = "[MIN:]MAX")]
    pub message_size: Option<String>,
    /// Timed iterations, small and large messages alike (default: OSU's for each test)
    #[arg(short = 'i', long = "iterations", value_name = "ITER")]
    pub iterations: Option<u32>,
    /// Untimed warm-up iterations before timing
    #[arg(short = 'x', long = "warmup", value_name = "ITER")]
    pub warmup: Option<u32>,
    /// Messages sent before each wait (osu_bw, osu_bibw, osu_mbw_mr), at most 65536
    #[arg(short = 'W', long = "window-size", value_name = "SIZE")]
    pub window: Option<u32>,
    /// cuda: buffers in GPU memory (with SRC DST, the sides named D)
    #[arg(short = 'd', long = "accelerator", value_name = "TYPE")]
    pub accelerator: Option<String>,
    /// osu_allreduce: min and max latency and iterations columns too
    #[arg(short = 'f', long = "full")]
    pub full: bool,
    /// A Validation column (qbench checks every size whether asked or not)
    #[arg(short = 'c', long = "validation")]
    pub validation: bool,
    /// mpi_char (default), mpi_int, mpi_float or all; repeatable
    #[arg(short = 'T', long = "type", value_name = "TYPE")]
    pub types: Vec<String>,
    /// Where rank 0's and rank 1's buffers live (the senders' and the receivers' for osu_mbw_mr): H H (default), D D, H D, D H
    #[arg(value_name = "SRC DST", num_args = 0..=2)]
    pub buffers: Vec<String>,
    #[command(flatten)]
    pub out: OutputArgs,
}

impl OsuArgs {
    pub fn plan(&self, benchmark: Benchmark) -> Result<OsuPlan> {
        let program = benchmark.program();
        let not_of = |what: &str| Error::Usage(format!("{what} is not an option of {program}"));
        if self.window.is_some() && !benchmark.windowed() {
            return Err(not_of("-W"));
        }
        if self.full && benchmark != Benchmark::Allreduce {
            return Err(not_of("-f"));
        }
        let (min, max) = sizes(self.message_size.as_deref(), OsuPlan::default_sizes(benchmark))?;
        let cuda = match self.accelerator.as_deref() {
            None => false,
            Some("cuda") => true,
            Some(other) => {
                return Err(Error::Usage(format!(
                    "-d {other}: qbench moves host memory or CUDA GPU memory (-d cuda); managed, openacc and rocm buffers are not offered"
                )));
            }
        };
        let buffers = match (benchmark, self.buffers.as_slice()) {
            (Benchmark::Allreduce, [_, ..]) => {
                return Err(Error::Usage(format!(
                    "{program} takes no SRC DST: -d cuda puts every rank's buffers on its GPU"
                )));
            }
            (Benchmark::Allreduce, []) if cuda => (Place::Device, Place::Device),
            (_, []) if cuda => (Place::Device, Place::Device),
            (_, []) => (Place::Host, Place::Host),
            (_, [a, b]) => (place(a)?, place(b)?),
            (_, [_]) => {
                return Err(Error::Usage(format!(
                    "{program} takes two buffer places, SRC and DST (H H, D D, H D, D H)"
                )));
            }
            _ => unreachable!("clap takes at most two"),
        };
        let iterations = self.iterations.map(|i| positive("-i", i)).transpose()?;
        let window = positive("-W", self.window.unwrap_or(64))?;
        let most = crate::workload::osu::MOST_WINDOW;
        if window > most {
            return Err(Error::Usage(format!("-W {window}: at most {most} messages in flight (each holds a request)")));
        }
        let plan = OsuPlan {
            benchmark,
            min,
            max,
            iterations,
            warmup: self.warmup,
            window,
            datatypes: datatypes(&self.types)?,
            buffers,
            full: self.full,
            validation_column: self.validation,
            fault: crate::fault::Fault::requested(program, &[crate::fault::Kind::Element])?,
        };
        // A type larger than every size would be measured at none of them.
        let largest = plan.sizes().last().copied().unwrap_or(0);
        if let Some(d) = plan.datatypes.iter().find(|d| d.size() > largest) {
            return Err(Error::Usage(format!(
                "-m {}: no size of at least {} bytes (one {}) to measure; raise the maximum",
                self.message_size.as_deref().unwrap_or_default(),
                d.size(),
                d.name()
            )));
        }
        Ok(plan)
    }
}

fn positive(what: &str, v: u32) -> Result<u32> {
    if v == 0 {
        return Err(Error::Usage(format!("{what} 0: at least 1")));
    }
    Ok(v)
}

/// OSU's `-m`: MAX, MIN:MAX, MIN: or :MAX.
fn sizes(text: Option<&str>, (dmin, dmax): (u64, u64)) -> Result<(u64, u64)> {
    let Some(text) = text else { return Ok((dmin, dmax)) };
    let bad = |e: Error| Error::Usage(format!("-m {text}: {}", e.message()));
    let read = |s: &str, default: u64| if s.is_empty() { Ok(default) } else { parse_size(s).map_err(bad) };
    let (min, max) = match text.split_once(':') {
        Some((lo, hi)) => (read(lo, dmin)?, read(hi, dmax)?),
        None => (dmin, read(text, dmax)?),
    };
    if min > max {
        return Err(Error::Usage(format!("-m {text}: the minimum {min} is above the maximum {max}")));
    }
    if max > MAX_MESSAGE {
        return Err(Error::Usage(format!("-m {text}: messages of at most 1G (MPI counts are 32-bit)")));
    }
    if max == 0 {
        return Err(Error::Usage(format!("-m {text}: no size above 0 bytes to measure")));
    }
    Ok((min, max))
}

fn place(text: &str) -> Result<Place> {
    match text {
        "H" | "h" => Ok(Place::Host),
        "D" | "d" => Ok(Place::Device),
        _ => Err(Error::Usage(format!("buffer place '{text}': H (host memory) or D (GPU memory)"))),
    }
}

fn datatypes(names: &[String]) -> Result<Vec<Datatype>> {
    if names.is_empty() {
        return Ok(vec![Datatype::Char]);
    }
    let mut out = Vec::new();
    for name in names.iter().flat_map(|n| n.split(',')) {
        let picked: Vec<Datatype> = match name.to_ascii_lowercase().as_str() {
            "all" => Datatype::ALL.to_vec(),
            "mpi_char" => vec![Datatype::Char],
            "mpi_int" => vec![Datatype::Int],
            "mpi_float" => vec![Datatype::Float],
            _ => return Err(Error::Usage(format!("-T {name}: mpi_char, mpi_int, mpi_float or all"))),
        };
        for d in picked {
            if !out.contains(&d) {
                out.push(d);
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_sizes_read_as_osu_reads_them() {
        let d = (1, 1 << 22);
        assert_eq!(sizes(None, d).unwrap(), d);
        assert_eq!(sizes(Some("128"), d).unwrap(), (1, 128));
        assert_eq!(sizes(Some("2:128"), d).unwrap(), (2, 128));
        assert_eq!(sizes(Some("2:"), d).unwrap(), (2, 1 << 22));
        assert_eq!(sizes(Some(":1M"), d).unwrap(), (1, 1 << 20));
        for bad in ["x", "9:3", "2G", "0", "1:y"] {
            assert_eq!(sizes(Some(bad), d).unwrap_err().exit_code(), 2, "{bad}");
        }
    }

    #[test]
    fn types_and_places() {
        assert_eq!(datatypes(&[]).unwrap(), vec![Datatype::Char]);
        assert_eq!(datatypes(&["all".into(), "MPI_INT".into()]).unwrap(), Datatype::ALL.to_vec());
        assert!(datatypes(&["mpi_double".into()]).is_err());
        assert_eq!(place("D").unwrap(), Place::Device);
        assert!(place("MD").is_err());
    }
}
