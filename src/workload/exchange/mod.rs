//! `qbench exchange` and `qbench compare`: the amplitude exchange of a
//! distributed state-vector simulator, every gate class timed and checked,
//! circuits run for real and judged; and the same bytes over every wire
//! side by side.

mod circuits;
mod classes;
pub mod compare;
pub mod decision;
pub mod forecast;
pub mod model;
pub mod plan;
mod projection;
pub mod run;
