//! The nccl-tests collectives as workloads: how large each rank's buffers
//! are for a given size, how the operation is issued through NCCL's
//! primitives, where each output element's expected value comes from (in
//! Rust and in CUDA), and how time becomes algbw/busbw. One small file per
//! collective; adding one is its file plus a line in the list below.

use crate::dtype::DataType;
pub mod plan;
pub mod sweep;

use crate::transport::{Collective, Counts};

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

/// A collective as the sweep runs it.
pub trait Spec: Collective {
    /// The subcommand, e.g. "allreduce" (the name is its alias).
    fn command(&self) -> &'static str;
    /// The subcommand's one-line help.
    fn about(&self) -> &'static str;
    /// Buffer counts for `count` elements of the sweep size over `nranks`.
    fn counts(&self, count: u64, dtype: DataType, nranks: u64) -> Counts;
    /// algbw / (size / time) for `nranks` ranks: the part of the size
    /// column that nccl-tests counts as moved (1 but for hypercube).
    fn alg_factor(&self, _nranks: u64) -> f64 {
        1.0
    }
    /// busbw / algbw for `nranks` ranks (nccl-tests' doc/PERFORMANCE.md).
    fn bus_factor(&self, nranks: u64) -> f64;
    /// Err when the collective cannot run over `nranks` ranks.
    fn fits(&self, _nranks: usize) -> crate::error::Result<()> {
        Ok(())
    }
    /// Err when it cannot run the sweep from `min` to `max` bytes over
    /// `nranks` ranks.
    fn fits_sizes(&self, _nranks: usize, _min: u64, _max: u64) -> crate::error::Result<()> {
        Ok(())
    }
    fn op_use(&self) -> OpUse;
    /// What the redop column says when the collective uses no op.
    fn no_op_label(&self) -> &'static str {
        "none"
    }
    fn rooted(&self) -> bool {
        false
    }
    /// nccl-tests does not check in-place alltoall and sendrecv (the
    /// libraries do not support them): their in-place `#wrong` is N/A.
    fn checks_in_place(&self) -> bool {
        true
    }
}

/// Declares the collectives: their modules, the `Kind` enum, and the list.
macro_rules! collectives {
    ($($kind:ident => $module:ident::$spec:ident),* $(,)?) => {
        $(mod $module;)*

        /// The collectives qbench runs.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Kind {
            $($kind),*
        }

        impl Kind {
            /// Every collective, in the order of the list.
            pub const ALL: &'static [Kind] = &[$(Kind::$kind),*];

            pub fn spec(self) -> &'static dyn Spec {
                match self {
                    $(Kind::$kind => &$module::$spec),*
                }
            }
        }
    };
}

collectives! {
    AllReduce => all_reduce::AllReduce,
    AllGather => all_gather::AllGather,
    ReduceScatter => reduce_scatter::ReduceScatter,
    Broadcast => broadcast::Broadcast,
    Reduce => reduce::Reduce,
    AllToAll => alltoall::AllToAll,
    AllToAllV => alltoallv::AllToAllV,
    SendRecv => sendrecv::SendRecv,
    Gather => gather::Gather,
    Scatter => scatter::Scatter,
    HyperCube => hypercube::HyperCube,
}

impl Kind {
    /// NCCL's name, e.g. "all_reduce".
    pub fn name(self) -> &'static str {
        self.spec().name()
    }

    /// The nccl-tests binary this collective stands for.
    pub fn program(self) -> String {
        format!("{}_perf", self.name())
    }

    /// The collective a subcommand, its name or its nccl-tests program names.
    pub fn from_command(word: &str) -> Option<Kind> {
        Kind::ALL.iter().copied().find(|k| word == k.spec().command() || word == k.name() || word == k.program())
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
    use crate::transport::Source;

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
        assert_eq!(bytes_of(Kind::Gather, 1 << 24, f, 8), (1 << 24, 1 << 19));
        assert_eq!(bytes_of(Kind::Scatter, 1 << 24, f, 8), (1 << 24, 1 << 19));
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
        assert_eq!(f(Kind::Gather, 4), 0.75);
        assert_eq!(f(Kind::Scatter, 8), 0.875);
    }

    #[test]
    fn sources_follow_data_movement() {
        let n = 4;
        let ag = Kind::AllGather.spec();
        let c = ag.counts(64, DataType::Float, n as u64);
        assert_eq!(ag.source(&c, DataType::Float, 2, 0, n, 3 * c.param + 1), Source::Copied { rank: 3, index: 1 });
        let a2a = Kind::AllToAll.spec();
        let c = a2a.counts(64, DataType::Float, n as u64);
        assert_eq!(
            a2a.source(&c, DataType::Float, 2, 0, n, c.param + 1),
            Source::Copied { rank: 1, index: 2 * c.param + 1 }
        );
        let rs = Kind::ReduceScatter.spec();
        let c = rs.counts(64, DataType::Float, n as u64);
        assert_eq!(rs.source(&c, DataType::Float, 3, 0, n, 1), Source::Reduced { index: 3 * c.param + 1 });
        let sr = Kind::SendRecv.spec();
        let c = sr.counts(64, DataType::Float, n as u64);
        assert_eq!(sr.source(&c, DataType::Float, 0, 0, n, 5), Source::Copied { rank: 3, index: 5 });
        let red = Kind::Reduce.spec();
        assert_eq!(red.source(&c, DataType::Float, 1, 2, n, 5), Source::Unchecked);
        assert_eq!(red.source(&c, DataType::Float, 2, 2, n, 5), Source::Reduced { index: 5 });
        assert_eq!(
            Kind::Broadcast.spec().source(&c, DataType::Float, 0, 3, n, 5),
            Source::Copied { rank: 3, index: 5 }
        );
    }

    #[test]
    fn names_are_nccl_tests_and_commands_unique() {
        let names: Vec<&str> = Kind::ALL.iter().map(|k| k.name()).collect();
        assert_eq!(
            names,
            [
                "all_reduce",
                "all_gather",
                "reduce_scatter",
                "broadcast",
                "reduce",
                "alltoall",
                "alltoallv",
                "sendrecv",
                "gather",
                "scatter",
                "hypercube"
            ]
        );
        for k in Kind::ALL {
            assert_eq!(Kind::from_command(k.spec().command()), Some(*k));
            assert_eq!(Kind::from_command(&k.program()), Some(*k));
        }
    }
}
