//! nccl-tests' JSON (`-J` with `--format nccl-tests`): its format version 3
//! as nccl-tests 2.19 writes it (util.cu), so that its tools
//! (tools/analyze_perf_json.py) read qbench's runs. Only a collective run
//! has that form. Times are the record's (UTC); `env` holds the NCCL
//! variables the run started with.

use super::{Exporter, Record, pretty};
use crate::error::{Error, Result};
use crate::record::collective::{Cell, CollectiveRun, Config, PerIter, SizeRecord};
use crate::units::Growth;
use serde_json::{Value, json};

pub struct NcclTests;

impl Exporter for NcclTests {
    fn name(&self) -> &'static str {
        "JSON"
    }

    fn accepts(&self, kind: &str) -> Result<()> {
        if kind == crate::record::collective::KIND {
            return Ok(());
        }
        Err(Error::Usage("--format nccl-tests: only the collectives' records have nccl-tests' JSON form".into()))
    }

    fn export(&self, record: &dyn Record) -> Result<Vec<u8>> {
        self.accepts(record.kind())?;
        self.value(record)
            .as_ref()
            .and_then(pretty)
            .ok_or_else(|| Error::Runtime("cannot encode the results as JSON".into()))
    }

    fn value(&self, record: &dyn Record) -> Option<Value> {
        record.any().downcast_ref::<CollectiveRun>().map(document)
    }
}

/// The whole file.
fn document(run: &CollectiveRun) -> Value {
    let results: Vec<Value> = run.results.iter().map(|r| result(run, r)).collect();
    let okay = run.min_bandwidth.as_ref().map_or(json!("unchecked"), |m| json!(m.ok));
    json!({
        "version": 3,
        "start_time": time(&run.header.start_time),
        "args": run.header.args,
        "env": run.nccl_env,
        "nccl_version": run.library.as_ref().map(|l| l.version_code),
        "config": config(run),
        "results": results,
        "out_of_bounds": {"count": run.out_of_bounds, "okay": run.out_of_bounds == 0},
        "average_bus_bandwidth": {"bandwidth": run.avg_busbw_gbps, "okay": okay},
        "errors": [],
        "end_time": run.header.end_time.as_deref().map(time),
    })
}

/// The run's options and devices, in nccl-tests' order.
fn config(run: &CollectiveRun) -> Value {
    let c = &run.config;
    let mut config = json!({
        "nthreads": c.nthreads,
        "ngpus": c.ngpus,
        "minimum_bytes": c.minbytes,
        "maximum_bytes": c.maxbytes,
    });
    match c.step {
        Growth::Factor(f) => config["step_factor"] = json!(f),
        Growth::Bytes(b) => config["step_bytes"] = json!(b),
    }
    for (k, v) in [
        ("warmup_iters", json!(c.warmup_iters)),
        ("iterations", json!(c.iters)),
        ("aggregated_iterations", json!(c.agg_iters)),
        ("validation", json!(c.check)),
        ("graph", json!(c.cudagraph)),
        ("blocking_collectives", json!(c.blocking != 0)),
        ("per_iter_timing", json!(c.per_iter_timing)),
        ("per_iter_skip", json!(c.per_iter_skip)),
        ("parallel_init", json!(false)),
    ] {
        config[k] = v;
    }
    config["devices"] = run
        .devices
        .iter()
        .map(|d| {
            json!({
                "rank": d.rank,
                "group": d.group,
                "pid": d.pid,
                "hostname": d.host,
                "device": d.device,
                "device_hex": d.bus_id,
                "device_info": d.name,
            })
        })
        .collect();
    config
}

/// One size's row: both halves, each with -I's per-iteration report.
fn result(run: &CollectiveRun, r: &SizeRecord) -> Value {
    let c = &run.config;
    let mut row = serde_json::Map::new();
    row.insert("size".into(), json!(r.size));
    row.insert("count".into(), json!(r.count));
    row.insert("type".into(), json!(r.dtype.name()));
    row.insert("redop".into(), json!(run.op_label(r)));
    row.insert("root".into(), json!(format!("{:>6}", r.root)));
    for (key, x) in [("out_of_place", &r.out_of_place), ("in_place", &r.in_place)] {
        row.insert(key.into(), half(c, x));
        if let Some(p) = x.per_iter.as_ref().filter(|_| c.per_iter_timing) {
            row.insert(format!("{key}_per_iter"), per_iter(p));
        }
    }
    row.insert("actual_iterations".into(), json!(c.iters));
    row.insert("experiment_name".into(), json!(""));
    Value::Object(row)
}

/// One half of a row, its time -C's cputime when asked.
fn half(c: &Config, x: &Cell) -> Value {
    let time_key = if c.report_cputime { "cpu_time" } else { "time" };
    json!({
        time_key: if c.report_cputime { x.cpu_time_us.unwrap_or(x.time_us) } else { x.time_us },
        "alg_bw": x.algbw_gbps,
        "bus_bw": x.busbw_gbps,
        "nwrong": x.wrong,
    })
}

/// -I's report of a half, with each process's series where there were several.
fn per_iter(p: &PerIter) -> Value {
    let mut v = json!({
        "skipped_iterations": p.skipped,
        "min_us": p.min_us,
        "max_us": p.max_us,
        "avg_us": p.avg_us,
        "p50_us": p.p50_us,
        "p95_us": p.p95_us,
        "p99_us": p.p99_us,
        "stdev_us": p.stdev_us,
        "cv_pct": p.cv_pct,
        "times_us": p.times_us,
    });
    if p.per_process_times_us.len() > 1 {
        v["per_process_max_times_us"] = json!(p.per_process_times_us);
    }
    v
}

/// An RFC 3339 time as nccl-tests writes times: "%Y-%m-%d %H:%M:%S".
fn time(rfc3339: &str) -> String {
    rfc3339.get(..19).map_or_else(|| rfc3339.to_string(), |t| t.replacen('T', " ", 1))
}
