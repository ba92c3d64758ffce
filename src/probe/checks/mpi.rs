//! MPI checks: a launcher and a library to run across nodes, and a qbench
//! built to use them (a build without MPI under mpirun runs N lone jobs).

use super::{Check, and_list};
use crate::probe::collect::Facts;

pub fn checks(f: &Facts) -> Vec<Check> {
    vec![launcher(f), library(f), build(f)]
}

fn launcher(f: &Facts) -> Check {
    const NAME: &str = "mpi.launcher";
    let list: Vec<String> = f
        .mpi
        .launchers
        .iter()
        .map(|l| if l.target == l.name { l.path.clone() } else { format!("{} ({})", l.path, l.target) })
        .collect();
    if list.is_empty() {
        return Check::warn(
            NAME,
            "no mpirun, mpiexec or srun on PATH: multi-node runs cannot be launched from here",
            "install an MPI (apt install openmpi-bin) or launch through Slurm (srun)",
        );
    }
    Check::pass(NAME, and_list(&list))
}

fn library(f: &Facts) -> Check {
    const NAME: &str = "mpi.library";
    match &f.mpi.library {
        Some(path) => Check::pass(NAME, path.clone()),
        None => Check::warn(
            NAME,
            "no libmpi.so* in the loader's directories",
            "install the MPI runtime (apt install libopenmpi3, or your MPI's module): a qbench built with MPI needs it to start",
        ),
    }
}

fn build(f: &Facts) -> Check {
    const NAME: &str = "mpi.build";
    let mpi = &f.mpi;
    if mpi.built_with_mpi {
        return Check::pass(NAME, "this qbench was built with MPI support (feature mpi)");
    }
    let rebuild = "rebuild with `cargo build --release --features mpi`";
    if let Some(size) = &mpi.launched_as {
        return Check::fail(
            NAME,
            format!(
                "this qbench was built without MPI but started by a launcher ({size}): every process runs alone, as separate single-node jobs"
            ),
            format!("{rebuild}, or start one process per node without a launcher"),
        );
    }
    if mpi.launchers.is_empty() {
        return Check::pass(NAME, "built without MPI, and no launcher here: single-process runs only");
    }
    Check::warn(
        NAME,
        "built without MPI (feature mpi): `mpirun -np N qbench …` would run N independent jobs",
        format!("{rebuild} to run across nodes"),
    )
}
