//! Copies within one GPU's memory, by cuMemcpyDtoDAsync or the copy kernel:
//! the HBM bandwidth a local gate sees, counted as read + write bytes.

use super::{Bench, Engine};
use crate::error::Result;
use crate::record::copy::TestRecord;

/// Each GPU in turn.
pub fn run(b: &mut Bench, rec: &mut TestRecord, engine: Engine) -> Result<()> {
    let sizes = b.sizes_within(rec, 2, 0)?;
    let Some(&max) = sizes.last() else { return Ok(()) };
    for g in 0..b.ngpus() {
        let flow = b.flow(g, "r+w", engine, b.device(g, max)?, b.device(g, max)?)?.read_write();
        b.bandwidth(rec, &format!("GPU {g}"), &sizes, &mut [flow])?;
    }
    Ok(())
}
