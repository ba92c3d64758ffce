//! What a process does once per command, before any work: install the
//! interrupt handlers, load the GPU libraries the command needs
//! (re-executing itself at most once, so this comes first), and start the
//! world (MPI once). Workloads run inside a session and may ask it whether
//! a library was loaded; they never load one themselves. The processes of
//! a job agree on their settings before any of them works.

use crate::error::{Error, Result};
use crate::libs::{self, Library};
use crate::world::{self, World};

pub struct Session {
    world: Box<dyn World>,
    loaded: Vec<Library>,
}

impl Session {
    /// Loads `libraries` (a missing one is an error naming `without_gpus`,
    /// what the command runs without them) and starts the world.
    pub fn start(libraries: &[Library], without_gpus: Option<&str>) -> Result<Session> {
        crate::interrupt::install()?;
        let loaded = libs::require(libraries, without_gpus);
        let world = world::detect()?;
        // A library missing on every node is said once, not by each process.
        world::agree(world.as_ref(), loaded)?;
        let args: Vec<String> = std::env::args().skip(1).collect();
        let mut settings = world::settings(&args);
        settings.extend(world::agreed_environment());
        world::agree_on_settings(world.as_ref(), &settings)?;
        Ok(Session { world, loaded: libraries.to_vec() })
    }

    /// This process alone, with the libraries this session loaded: for
    /// work one process of a job does by itself while the others wait.
    pub fn alone(&self) -> Session {
        Session { world: Box::new(world::Solo), loaded: self.loaded.clone() }
    }

    pub fn world(&self) -> &dyn World {
        self.world.as_ref()
    }

    /// Whether this process speaks for the job (prints, writes files).
    pub fn main(&self) -> bool {
        self.world.rank() == 0
    }

    /// Err unless the session loaded every one of `libraries`: a workload
    /// whose plan did not ask for a library it uses is a bug, not a crash.
    pub fn need(&self, libraries: &[Library]) -> Result<()> {
        match libraries.iter().find(|l| !self.loaded.contains(l)) {
            Some(l) => Err(Error::Runtime(format!("internal: {} was used without being loaded", l.describe()))),
            None => Ok(()),
        }
    }
}
