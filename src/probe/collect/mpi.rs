//! MPI: the launchers on PATH, the MPI library, whether this qbench was
//! built to use them, and whether it was started by one.

use super::Host;
use super::libpath::{find_library, which};
use serde::{Deserialize, Serialize};

const LAUNCHERS: [&str; 3] = ["mpirun", "mpiexec", "srun"];
/// Variables a launcher sets to the number of processes it started.
const SIZE_VARS: [&str; 3] = ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS"];

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Launcher {
    pub name: String,
    pub path: String,
    /// The program it really is, which tells the MPI (orterun, prterun,
    /// mpiexec.hydra, srun).
    pub target: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MpiFacts {
    pub launchers: Vec<Launcher>,
    pub library: Option<String>,
    /// `cfg!(feature = "mpi")` of this binary.
    pub built_with_mpi: bool,
    /// `VAR=N` when a launcher started this process as one of N > 1.
    pub launched_as: Option<String>,
}

/// `dirs`: the loader's directories ([`loader_dirs`](super::libpath::loader_dirs)).
pub fn collect(host: &Host, dirs: &[String]) -> MpiFacts {
    let launchers = LAUNCHERS
        .iter()
        .filter_map(|name| {
            let path = which(host, name)?;
            let real = host.sys.resolve(&path).unwrap_or_else(|| path.clone());
            let target = real.rsplit('/').next().unwrap_or_default().to_string();
            Some(Launcher { name: name.to_string(), path, target })
        })
        .collect();
    let launched_as = SIZE_VARS
        .iter()
        .find_map(|v| host.var(v).filter(|n| n.trim().parse::<u32>().is_ok_and(|n| n > 1)).map(|n| format!("{v}={n}")));
    MpiFacts {
        launchers,
        library: find_library(host, dirs, "libmpi.so"),
        built_with_mpi: cfg!(feature = "mpi"),
        launched_as,
    }
}
