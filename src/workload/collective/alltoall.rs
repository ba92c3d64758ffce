//! alltoall: block d of rank s's buffer lands as block s of rank d's.

use super::{Collective, Counts, Kind, OpUse, Source, aligned_block};
use crate::dtype::DataType;

pub struct AllToAll;

impl Collective for AllToAll {
    fn kind(&self) -> Kind {
        Kind::AllToAll
    }
    fn counts(&self, count: u64, dtype: DataType, n: u64) -> Counts {
        let b = aligned_block(count, dtype, n);
        Counts { send: b * n, recv: b * n, param: b, send_inplace_offset: 0, recv_inplace_offset: 0 }
    }
    fn bus_factor(&self, n: u64) -> f64 {
        (n as f64 - 1.0) / n as f64
    }
    fn source(&self, c: &Counts, rank: usize, _: usize, _: usize, j: u64) -> Source {
        Source::Copied { rank: (j / c.param) as usize, index: rank as u64 * c.param + j % c.param }
    }
    fn op_use(&self) -> OpUse {
        OpUse::Ignores
    }
    fn checks_in_place(&self) -> bool {
        false
    }
}
