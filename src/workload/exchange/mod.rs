//! `qbench exchange`: the amplitude exchange of a distributed state-vector
//! simulator, timed, checked amplitude by amplitude, and judged.
pub mod compare;
pub mod layout;
pub mod record;
pub mod register;
pub mod run;
pub mod state;
pub mod verdict;

pub use run::run;
