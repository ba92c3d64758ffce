//! sendrecv: a ring; rank r sends its buffer to r+1 and receives r−1's.

use super::{Collective, Counts, Kind, OpUse, Source};
use crate::dtype::DataType;

pub struct SendRecv;

impl Collective for SendRecv {
    fn kind(&self) -> Kind {
        Kind::SendRecv
    }
    fn counts(&self, count: u64, _: DataType, _: u64) -> Counts {
        Counts { send: count, recv: count, param: count, send_inplace_offset: 0, recv_inplace_offset: 0 }
    }
    fn bus_factor(&self, _: u64) -> f64 {
        1.0
    }
    fn source(&self, _: &Counts, rank: usize, _: usize, n: usize, j: u64) -> Source {
        Source::Copied { rank: (rank + n - 1) % n, index: j }
    }
    fn op_use(&self) -> OpUse {
        OpUse::Labels
    }
    fn checks_in_place(&self) -> bool {
        false
    }
}
