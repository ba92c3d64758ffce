//! qbench: is this cluster ready, and what will moving amplitudes between
//! GPUs cost? The library behind the `qbench` binary; docs/ARCHITECTURE.md
//! shows how its parts fit.
//!
//! The face (the command line, the commands, the errors) is public for the
//! binary. The rest is public for the integration tests and private under
//! `--cfg qbench_private`, which CI builds with dead code denied, so that
//! the compiler names whatever nothing uses.

pub mod cli;
pub mod command;
pub mod error;

// `with_element!` is exported from here and called by its path
// (`crate::with_element!`), which the compiler allows only where the
// module defining it is not itself declared by a macro.
#[cfg(not(qbench_private))]
pub mod dtype;
#[cfg(qbench_private)]
mod dtype;

/// Declares each inner module: public in the ordinary build, private under
/// `--cfg qbench_private`.
macro_rules! inner {
    ($($name:ident),* $(,)?) => {
        $(
            #[cfg(not(qbench_private))]
            pub mod $name;
            #[cfg(qbench_private)]
            mod $name;
        )*
    };
}

inner!(
    check, fault, gpu, host, input, interrupt, libs, numa, output, pattern, probe, progress, rdma, record, report,
    session, statevec, stats, threads, transport, ui, units, workload, world,
);
