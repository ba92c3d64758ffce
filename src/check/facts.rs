//! The facts a profile requires, as rows of the check: each one judged by
//! the probe's own checks (probe::checks::wanted) on what probe found here.

use super::profile::Facts as Required;
use crate::error::Result;
use crate::probe::checks::Check;
use crate::probe::checks::wanted;
use crate::probe::collect::Facts;
use crate::record::check::Row;

/// A fact's row on `node`.
fn row(c: Check, node: &str) -> Row {
    Row {
        step: format!("fact: {}", c.check),
        place: None,
        kind: "fact".into(),
        node: node.into(),
        found: c.found,
        measured: None,
        samples: Vec::new(),
        unit: String::new(),
        expected: None,
        expected_from: None,
        floor: None,
        ceiling: None,
        ratio: None,
        baseline: None,
        vs_baseline: None,
        status: c.status,
        fix: c.fix,
        attempts: 1,
        missing: c.missing,
        pairs: None,
    }
}

/// Every fact `want` names, judged on `facts`, as rows of `node`.
pub fn judge(want: &Required, facts: &Facts, node: &str) -> Result<Vec<Row>> {
    let devices = want.rdma_devices()?;
    let mut checks = Vec::new();
    if let Some(n) = want.gpu_count {
        checks.push(wanted::gpu_count(facts, n));
    }
    if let Some(model) = &want.gpu_model {
        checks.push(wanted::gpu_model(facts, model));
    }
    if want.nvlink == Some(true) {
        checks.push(wanted::nvlink(facts));
    }
    if let Some(n) = want.rdma_active_ports {
        checks.push(wanted::rdma_ports(facts, n, &devices));
    }
    if let Some(rate) = want.rdma_rate_gbps {
        checks.push(wanted::rdma_rate(facts, rate, &devices));
    }
    if let Some(layer) = &want.rdma_link_layer {
        checks.push(wanted::rdma_link_layer(facts, layer, &devices));
    }
    if want.gpudirect == Some(true) {
        checks.push(wanted::gpudirect(facts));
    }
    if want.gdrdrv == Some(true) {
        checks.push(wanted::gdrdrv(facts));
    }
    if let Some(min) = &want.nccl_version {
        checks.push(wanted::nccl_version(facts, min));
    }
    for (name, value) in want.nccl_env.iter().flatten() {
        checks.push(wanted::nccl_env(facts, name, value));
    }
    if want.mpi == Some(true) {
        checks.push(wanted::mpi_build(facts));
    }
    Ok(checks.into_iter().map(|c| row(c, node)).collect())
}
