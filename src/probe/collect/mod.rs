//! Collectors: everything `qbench probe` knows about the host, gathered
//! once into typed facts that the checks judge and the renderers print.
//! Files are read under a root (the real / or a fixture tree); the GPU
//! libraries are only touched on a live run.

pub mod sysfs;
