//! `qbench exchange` and `qbench compare`: the amplitude exchange of a
//! distributed state-vector simulator, timed, checked amplitude by
//! amplitude, and judged; and the same bytes over every wire side by side.

pub mod compare;
pub mod plan;
pub mod run;
pub mod verdict;
