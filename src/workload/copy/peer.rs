//! GPU->GPU copies over NVLink or PCIe peer-to-peer, by the copy engine or
//! the copy kernel, read (issued by the destination) or write (issued by the
//! source), one direction or both at once, over every pair of GPUs. A pair
//! whose GPUs cannot reach each other is listed with the reason, never timed.

use super::{Bench, Engine};
use crate::error::Result;
use crate::record::copy::TestRecord;

/// Every ordered pair (source, destination), one direction.
pub fn one_way(b: &mut Bench, rec: &mut TestRecord, engine: Engine, by_destination: bool) -> Result<()> {
    if !b.has_peer(rec) {
        return Ok(());
    }
    let sizes = b.sizes_within(rec, 1, 0)?;
    let Some(&max) = sizes.last() else { return Ok(()) };
    for s in 0..b.ngpus() {
        for d in (0..b.ngpus()).filter(|&d| d != s) {
            let placement = format!("GPU {s} -> GPU {d}");
            let (issuer, other) = if by_destination { (d, s) } else { (s, d) };
            if let Some(why) = b.blocked(issuer, other) {
                rec.skip(placement, why);
                continue;
            }
            let flow = b.flow(issuer, "d2d", engine, b.device(s, max)?, b.device(d, max)?)?;
            b.bandwidth(rec, &placement, &sizes, &mut [flow])?;
        }
    }
    Ok(())
}

/// Every pair at once both ways, each source writing to its peer.
pub fn both_ways(b: &mut Bench, rec: &mut TestRecord, engine: Engine) -> Result<()> {
    if !b.has_peer(rec) {
        return Ok(());
    }
    let sizes = b.sizes_within(rec, 2, 0)?;
    let Some(&max) = sizes.last() else { return Ok(()) };
    for i in 0..b.ngpus() {
        for j in i + 1..b.ngpus() {
            let placement = format!("GPU {i} <-> GPU {j}");
            if let Some(why) = b.blocked(i, j).or(b.blocked(j, i)) {
                rec.skip(placement, why);
                continue;
            }
            let mut flows = [
                b.flow(i, "fwd", engine, b.device(i, max)?, b.device(j, max)?)?,
                b.flow(j, "rev", engine, b.device(j, max)?, b.device(i, max)?)?,
            ];
            b.bandwidth(rec, &placement, &sizes, &mut flows)?;
        }
    }
    Ok(())
}
