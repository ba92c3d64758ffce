//! The distributed register of the amplitude exchange, on each kind of
//! memory: whatever holds the amplitudes (GPUs, host memory) implements
//! [`Register`], and each way of moving amplitudes between partner ranks is
//! a [`Wire`], one file each; adding one is its file plus a line in the list
//! below, which declares its module. A wire serves the registers it has a
//! part for: GPU registers, host registers, or both (rdma).

pub mod gpu;
pub mod host_memory;
pub mod step;

use crate::error::Result;
use crate::libs::Library;
use crate::record::RankInfo;
use crate::statevec::layout::Layout;
use crate::statevec::state::ProductState;
use crate::world::World;
use num_complex::Complex64;
use std::any::Any;
use std::collections::HashMap;

/// Seconds of one operation: the slowest rank's.
pub type Seconds = f64;

/// Where the amplitudes a wire moves live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Memory {
    Gpu,
    Host,
}

impl Memory {
    pub fn name(self) -> &'static str {
        match self {
            Memory::Gpu => "gpu",
            Memory::Host => "host",
        }
    }
}

/// What every wire says about itself; a register finds in it the part that
/// moves its own memory.
pub trait WireImpl: Sync {
    /// The name `--transport` takes and records carry.
    fn name(&self) -> &'static str;
    /// How it moves amplitudes, in a phrase.
    fn how(&self) -> &'static str;
    /// The GPU libraries it needs beyond those of the register it moves
    /// (the CUDA driver and NVRTC for a register on GPUs).
    fn libraries(&self) -> &'static [Library] {
        &[]
    }
    /// Whether it carries GPU amplitudes through host memory, so that the
    /// processes sharing a GPU share its host link while each makes its own
    /// copies in host memory.
    fn through_host(&self) -> bool {
        false
    }
    /// The part that moves GPU registers' amplitudes.
    fn gpu(&self) -> Option<&dyn gpu::GpuWire> {
        None
    }
    /// The part that moves host registers' amplitudes.
    fn host(&self) -> Option<&dyn host_memory::HostWire> {
        None
    }
}

/// Declares a wire's module where its file is: this folder (`self`) or
/// gpu/ (`gpu`, where gpu/mod.rs calls `gpu_wire_modules!`).
macro_rules! wire_module {
    (self, self $module:ident) => {
        pub mod $module;
    };
    (gpu, gpu $module:ident) => {
        pub mod $module;
    };
    ($folder:ident, $dir:ident $module:ident) => {};
}
pub(crate) use wire_module;

/// Declares the wires: each module that holds wires (`self::` this folder,
/// `gpu::` gpu/) with the wires it holds, the `Wire` enum and the list.
macro_rules! wires {
    ($($dir:ident :: $module:ident { $($wire:ident => $imp:ident),+ $(,)? }),* $(,)?) => {
        $(wire_module!(self, $dir $module);)*

        /// The modules of gpu/ that hold wires, for gpu/mod.rs to declare.
        macro_rules! gpu_wire_modules {
            () => {
                $($crate::transport::amplitudes::wire_module!(gpu, $dir $module);)*
            };
        }
        pub(crate) use gpu_wire_modules;

        /// A way amplitudes travel between partner ranks.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Wire {
            $($($wire),+),*
        }

        impl Wire {
            /// Every wire, in the order of the list.
            pub const ALL: &'static [Wire] = &[$($(Wire::$wire),+),*];

            pub fn imp(self) -> &'static dyn WireImpl {
                match self {
                    $($(Wire::$wire => &$dir::$module::$imp),+),*
                }
            }
        }
    };
}

wires! {
    gpu::nccl { Nccl => Nccl },
    gpu::peer { P2p => Kernel, P2pCe => CopyEngine },
    gpu::host { Host => Pipelined, HostUnpipelined => Unpipelined },
    gpu::mpi { Mpi => Pipelined, MpiCudaAware => CudaAware },
    gpu::quest { Quest => Quest },
    self::rdma { Rdma => Direct },
    gpu::rdma_staged { RdmaStaged => Pipelined },
    self::cpu { Cpu => Cpu },
}

impl Wire {
    pub fn name(self) -> &'static str {
        self.imp().name()
    }

    pub fn parse(text: &str) -> Option<Wire> {
        Wire::ALL.iter().copied().find(|w| w.name() == text)
    }

    /// Whether it moves registers held in `memory`.
    pub fn serves(self, memory: Memory) -> bool {
        match memory {
            Memory::Gpu => self.imp().gpu().is_some(),
            Memory::Host => self.imp().host().is_some(),
        }
    }
}

/// What wires keep between exchanges on one register (connections,
/// registered memory), each wire its own slot. A register holds it as its
/// first field, so that it is dropped before the memory it covers.
#[derive(Default)]
pub struct Kept(HashMap<Wire, Box<dyn Any>>);

impl Kept {
    /// `wire`'s slot for a `T`, empty until the wire fills it.
    pub fn slot<T: 'static>(&mut self, wire: Wire) -> &mut Option<T> {
        let held = self.0.entry(wire).or_insert_with(|| Box::new(None::<T>));
        if !held.is::<Option<T>>() {
            *held = Box::new(None::<T>);
        }
        held.downcast_mut::<Option<T>>().unwrap_or_else(|| unreachable!("the slot was just made an Option<T>"))
    }

    /// Drops what every wire kept: the memory it covers is about to change.
    pub fn clear(&mut self) {
        self.0.clear();
    }
}

/// What one rank does to its own amplitudes for a step: local bits only,
/// the step's global qubits already turned into this rank's bits.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Local {
    /// Nothing: a global control this rank does not meet.
    Idle,
    /// H on local qubit `q` (its own kernels).
    H(u32),
    /// A one-qubit unitary on local qubit `q`, row-major.
    U { q: u32, m: [Complex64; 4] },
    /// Multiplies the amplitudes whose local bits `ones` are all set by
    /// `phase` (`ones` = 0: every amplitude).
    Phase { ones: u64, phase: Complex64 },
    /// Swaps amplitudes i and i ^ `flip`, for every i whose bits `ones` are
    /// set and `zeros` clear (a SWAP, or a controlled NOT).
    Pairs { ones: u64, zeros: u64, flip: u64 },
    /// The amplitudes whose bit `bit` is `value`, in order, into the upper
    /// half of the exchange buffer: a half to send that is not contiguous.
    Pack { bit: u32, value: bool },
    /// The lower half of the exchange buffer, as it was received, into the
    /// amplitudes whose bit `bit` is `value`.
    Unpack { bit: u32, value: bool },
    /// After a whole chunk came in, H on the global qubit: this rank holds
    /// the |1⟩ amplitudes of each pair when `one`, the |0⟩ ones otherwise.
    CombineH { one: bool },
    /// After a whole chunk came in: amplitude = own·`own` + received·`received`.
    Mix { own: Complex64, received: Complex64 },
    /// The received chunk replaces this rank's.
    Take,
}

/// One rank's part of an exchange: `len` bytes from offset `send` of its
/// memory (its chunk, then its exchange buffer) to offset `recv` of its
/// partner's, the partner's coming back to its own `recv` the same way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Part {
    /// The partner, a rank of the job (itself under the wrong-partner fault).
    pub peer: usize,
    pub send: u64,
    pub recv: u64,
    pub len: u64,
}

pub trait Register {
    fn layout(&self) -> &Layout;
    /// The ranks this process holds.
    fn ranks(&self) -> &[RankInfo];
    /// The processes the register spans.
    fn world(&self) -> &dyn World;
    /// The memory of one rank's device: the smallest GPU's, or the host's
    /// available memory.
    fn device_memory(&self) -> u64;
    /// What the register's kernels were built as, for the records.
    fn kernel_build(&self) -> Option<String> {
        None
    }
    /// Writes the product state into every rank's chunk.
    fn init(&mut self, state: &ProductState) -> Result<()>;
    /// Amplitudes on every rank that differ from `state`: by more than the
    /// precision's tolerance of the larger of their own magnitude and
    /// `floor` (0: of their own; a circuit's rounding is of the state's
    /// norm, so it passes 2^(−n/2)).
    fn count_wrong(&mut self, state: &ProductState, floor: f64) -> Result<u64>;
    /// What `op` says for each of this process's ranks (by its job rank),
    /// on all of them at once: this process's seconds (its slowest rank's).
    /// Every timing of a register is this process's own: a caller that
    /// times one step at a time takes the slowest process's
    /// ([`step::Timed::slowest`]); a circuit, as a simulator runs it, holds
    /// its processes together only where they exchange.
    fn apply(&mut self, op: &dyn Fn(usize) -> Local) -> Result<Seconds>;
    /// A copy of [`Register::copy_bytes`] within each rank's memory (the
    /// bandwidth ceiling of a local gate, which reads and writes every
    /// amplitude once).
    fn local_copy(&mut self) -> Result<Seconds>;
    /// Bytes `local_copy` copies: a chunk, or less where no second chunk fits.
    fn copy_bytes(&self) -> u64 {
        self.layout().chunk_bytes()
    }
    /// Every rank's part of an exchange over `wire` (`parts` by job rank).
    fn exchange(&mut self, wire: Wire, parts: &dyn Fn(usize) -> Part) -> Result<Seconds>;
    /// Why `wire` cannot run here, if it cannot.
    fn unavailable(&self, wire: Wire) -> Option<String>;
    /// Device-to-host and host-to-device copies of `bytes` at once on every
    /// rank through pinned memory, where ranks are GPUs.
    fn host_link(&mut self, _bytes: u64) -> Result<Option<Seconds>> {
        Ok(None)
    }
    /// nccl-tests' sendrecv ring of `bytes` per rank, where NCCL is set up.
    fn nccl_sendrecv(&mut self, _bytes: u64) -> Result<Option<Seconds>> {
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wires_are_named_once_and_parse_back() {
        for (i, w) in Wire::ALL.iter().enumerate() {
            assert_eq!(Wire::parse(w.name()), Some(*w));
            assert!(Wire::ALL[..i].iter().all(|v| v.name() != w.name()));
            assert!(!w.imp().how().is_empty());
            assert!(w.serves(Memory::Gpu) || w.serves(Memory::Host), "{} serves no register", w.name());
        }
        assert!(Wire::Rdma.serves(Memory::Gpu) && Wire::Rdma.serves(Memory::Host));
        assert!(Wire::Cpu.serves(Memory::Host) && !Wire::Cpu.serves(Memory::Gpu));
        assert_eq!(Wire::parse("mpi_unpipelined"), None);
    }
}
