//! The nccl-tests collectives as workloads: how large each rank's buffers
//! are for a given size, where each output element's expected value comes
//! from, and how time becomes algbw/busbw. One small file per collective;
//! transports know how to launch each [`Kind`].

mod all_gather;
mod all_reduce;
mod alltoall;
mod broadcast;
mod reduce;
mod reduce_scatter;
mod sendrecv;

use crate::dtype::DataType;
use serde::Serialize;

/// The collectives qbench runs, named as on its command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    AllReduce,
    AllGather,
    ReduceScatter,
    Broadcast,
    Reduce,
    AllToAll,
    SendRecv,
}

impl Kind {
    pub const ALL: [Kind; 7] = [
        Kind::AllReduce,
        Kind::AllGather,
        Kind::ReduceScatter,
        Kind::Broadcast,
        Kind::Reduce,
        Kind::AllToAll,
        Kind::SendRecv,
    ];

    /// The nccl-tests binary this collective stands for.
    pub fn program(self) -> &'static str {
        match self {
            Kind::AllReduce => "all_reduce_perf",
            Kind::AllGather => "all_gather_perf",
            Kind::ReduceScatter => "reduce_scatter_perf",
            Kind::Broadcast => "broadcast_perf",
            Kind::Reduce => "reduce_perf",
            Kind::AllToAll => "alltoall_perf",
            Kind::SendRecv => "sendrecv_perf",
        }
    }

    /// The code the check kernel (kernels/pattern.cu) knows this kind by.
    pub fn kernel_code(self) -> i32 {
        self as i32
    }

    pub fn spec(self) -> &'static dyn Collective {
        match self {
            Kind::AllReduce => &all_reduce::AllReduce,
            Kind::AllGather => &all_gather::AllGather,
            Kind::ReduceScatter => &reduce_scatter::ReduceScatter,
            Kind::Broadcast => &broadcast::Broadcast,
            Kind::Reduce => &reduce::Reduce,
            Kind::AllToAll => &alltoall::AllToAll,
            Kind::SendRecv => &sendrecv::SendRecv,
        }
    }
}

/// Element counts of one rank's buffers for one size (nccl-tests'
/// getCollByteCount). In place, the input starts `send_inplace_offset × rank`
/// elements into the receive buffer and the output `recv_inplace_offset ×
/// rank` elements in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Counts {
    pub send: u64,
    pub recv: u64,
    /// The count passed to the library call and printed in the table.
    pub param: u64,
    pub send_inplace_offset: u64,
    pub recv_inplace_offset: u64,
}

impl Counts {
    /// The size column and the bytes algbw is computed from.
    pub fn bytes(&self, dtype: DataType) -> u64 {
        self.send.max(self.recv) * dtype.size() as u64
    }
}

/// Where the expected value of one output element comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// The reduction over all ranks of input element `index`.
    Reduced { index: u64 },
    /// Input element `index` of `rank`.
    Copied { rank: usize, index: u64 },
    /// The library makes no promise about this element.
    Unchecked,
}

/// How a collective uses the reduction operation (`-o`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpUse {
    /// It reduces with it.
    Reduces,
    /// It does not reduce but runs once per op, as nccl-tests' sendrecv does.
    Labels,
    /// It prints "none" and runs once.
    Ignores,
}

pub trait Collective: Sync {
    fn kind(&self) -> Kind;
    /// Buffer counts for `count` elements of the sweep size over `nranks`.
    fn counts(&self, count: u64, dtype: DataType, nranks: u64) -> Counts;
    /// busbw / algbw for `nranks` ranks (nccl-tests' doc/PERFORMANCE.md).
    fn bus_factor(&self, nranks: u64) -> f64;
    /// The expected value of output element `j` of `rank`.
    fn source(&self, c: &Counts, rank: usize, root: usize, nranks: usize, j: u64) -> Source;
    fn op_use(&self) -> OpUse;
    fn rooted(&self) -> bool {
        false
    }
    /// nccl-tests does not check in-place alltoall and sendrecv (the
    /// libraries do not support them): their in-place `#wrong` is N/A.
    fn checks_in_place(&self) -> bool {
        true
    }
}

/// nccl-tests rounds per-rank blocks down to whole 16-byte units.
fn aligned_block(count: u64, dtype: DataType, nranks: u64) -> u64 {
    let per_unit = (16 / dtype.size()) as u64;
    (count / nranks) / per_unit * per_unit
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes_of(kind: Kind, size: u64, dt: DataType, n: u64) -> (u64, u64) {
        let c = kind.spec().counts(size / dt.size() as u64, dt, n);
        (c.bytes(dt), c.param)
    }

    #[test]
    fn sizes_and_counts_match_nccl_tests() {
        let f = DataType::Float;
        assert_eq!(bytes_of(Kind::AllReduce, 1 << 24, f, 2), (1 << 24, 1 << 22));
        assert_eq!(bytes_of(Kind::AllGather, 1 << 24, f, 8), (1 << 24, 1 << 19));
        assert_eq!(bytes_of(Kind::ReduceScatter, 1 << 24, f, 8), (1 << 24, 1 << 19));
        assert_eq!(bytes_of(Kind::AllToAll, 1 << 24, f, 8), (1 << 24, 1 << 19));
        assert_eq!(bytes_of(Kind::Broadcast, 7, f, 2), (4, 1));
        // Below 16 bytes per rank the aligned collectives move nothing.
        assert_eq!(bytes_of(Kind::AllGather, 64, f, 8), (0, 0));
        assert_eq!(bytes_of(Kind::AllGather, 1000, DataType::Double, 3), (1008 - 48, 40));
    }

    #[test]
    fn bus_factors_match_nccl_tests() {
        let f = |k: Kind, n| k.spec().bus_factor(n);
        assert_eq!(f(Kind::AllReduce, 2), 1.0);
        assert_eq!(f(Kind::AllReduce, 4), 1.5);
        assert_eq!(f(Kind::AllReduce, 8), 1.75);
        assert_eq!(f(Kind::AllGather, 4), 0.75);
        assert_eq!(f(Kind::ReduceScatter, 2), 0.5);
        assert_eq!(f(Kind::AllToAll, 8), 0.875);
        assert_eq!(f(Kind::Broadcast, 8), 1.0);
        assert_eq!(f(Kind::Reduce, 8), 1.0);
        assert_eq!(f(Kind::SendRecv, 8), 1.0);
    }

    #[test]
    fn sources_follow_data_movement() {
        let n = 4;
        let ag = Kind::AllGather.spec();
        let c = ag.counts(64, DataType::Float, n as u64);
        assert_eq!(ag.source(&c, 2, 0, n, 3 * c.param + 1), Source::Copied { rank: 3, index: 1 });
        let a2a = Kind::AllToAll.spec();
        let c = a2a.counts(64, DataType::Float, n as u64);
        assert_eq!(a2a.source(&c, 2, 0, n, c.param + 1), Source::Copied { rank: 1, index: 2 * c.param + 1 });
        let rs = Kind::ReduceScatter.spec();
        let c = rs.counts(64, DataType::Float, n as u64);
        assert_eq!(rs.source(&c, 3, 0, n, 1), Source::Reduced { index: 3 * c.param + 1 });
        let sr = Kind::SendRecv.spec();
        let c = sr.counts(64, DataType::Float, n as u64);
        assert_eq!(sr.source(&c, 0, 0, n, 5), Source::Copied { rank: 3, index: 5 });
        let red = Kind::Reduce.spec();
        assert_eq!(red.source(&c, 1, 2, n, 5), Source::Unchecked);
        assert_eq!(red.source(&c, 2, 2, n, 5), Source::Reduced { index: 5 });
        assert_eq!(Kind::Broadcast.spec().source(&c, 0, 3, n, 5), Source::Copied { rank: 3, index: 5 });
    }

    #[test]
    fn kernel_codes_are_stable() {
        // kernels/pattern.cu switches on these numbers.
        let codes: Vec<i32> = Kind::ALL.iter().map(|k| k.kernel_code()).collect();
        assert_eq!(codes, vec![0, 1, 2, 3, 4, 5, 6]);
    }
}
