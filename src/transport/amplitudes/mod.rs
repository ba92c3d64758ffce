//! The amplitude exchange of a distributed state vector, on each kind of memory.
pub mod cpu;
pub mod gpu;
