//! The MPI world: the processes of an mpirun/srun launch, through rsmpi.

use super::World;
use crate::error::{Error, Result};
use mpi::collective::SystemOperation;
use mpi::datatype::PartitionMut;
use mpi::environment::Universe;
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::*;

pub struct Mpi {
    comm: SimpleCommunicator,
    local_rank: usize,
    local_size: usize,
    // Finalises MPI when dropped, after the communicators above.
    _universe: Universe,
}

impl Mpi {
    pub fn init() -> Result<Mpi> {
        let universe = mpi::initialize().ok_or_else(|| Error::Runtime("MPI was initialised twice".into()))?;
        let comm = universe.world();
        let node = comm.split_shared(comm.rank());
        let (local_rank, local_size) = (node.rank() as usize, node.size() as usize);
        Ok(Mpi { comm, local_rank, local_size, _universe: universe })
    }

    pub fn comm(&self) -> &SimpleCommunicator {
        &self.comm
    }

    /// Processes of the job on this node.
    pub fn local_size(&self) -> usize {
        self.local_size
    }
}

/// Counts and displacements (in elements) of blocks of the given sizes.
pub fn partition(sizes: &[usize]) -> (Vec<i32>, Vec<i32>) {
    let counts: Vec<i32> = sizes.iter().map(|&s| s as i32).collect();
    let displs = counts.iter().scan(0i32, |acc, &c| Some(std::mem::replace(acc, *acc + c))).collect();
    (counts, displs)
}

impl World for Mpi {
    fn rank(&self) -> usize {
        self.comm.rank() as usize
    }
    fn size(&self) -> usize {
        self.comm.size() as usize
    }
    fn local_rank(&self) -> usize {
        self.local_rank
    }
    fn barrier(&self) {
        self.comm.barrier();
    }
    fn broadcast(&self, root: usize, buf: &mut [u8]) {
        self.comm.process_at_rank(root as i32).broadcast_into(buf);
    }
    fn all_gather(&self, mine: &[u8]) -> Vec<Vec<u8>> {
        let mut lens = vec![0i32; self.size()];
        self.comm.all_gather_into(&(mine.len() as i32), &mut lens[..]);
        let sizes: Vec<usize> = lens.iter().map(|&l| l as usize).collect();
        let mut all = vec![0u8; sizes.iter().sum()];
        let (counts, displs) = partition(&sizes);
        let mut part = PartitionMut::new(&mut all[..], counts, &displs[..]);
        self.comm.all_gather_varcount_into(mine, &mut part);
        let mut out = Vec::with_capacity(sizes.len());
        let mut at = 0;
        for s in sizes {
            out.push(all[at..at + s].to_vec());
            at += s;
        }
        out
    }
    fn sum_u64(&self, v: u64) -> u64 {
        let mut out = 0u64;
        self.comm.all_reduce_into(&v, &mut out, SystemOperation::sum());
        out
    }
    fn min_u64(&self, v: u64) -> u64 {
        let mut out = 0u64;
        self.comm.all_reduce_into(&v, &mut out, SystemOperation::min());
        out
    }
    fn max_f64(&self, v: &[f64]) -> Vec<f64> {
        let mut out = vec![0f64; v.len()];
        self.comm.all_reduce_into(v, &mut out[..], SystemOperation::max());
        out
    }
    fn abort(&self, code: i32) -> ! {
        self.comm.abort(code)
    }
    fn sendrecv(&self, peer: usize, send: &[u8], recv: &mut [u8]) {
        let p = self.comm.process_at_rank(peer as i32);
        mpi::point_to_point::send_receive_into(send, &p, recv, &p);
    }
    fn mpi(&self) -> Option<&Mpi> {
        Some(self)
    }
}
