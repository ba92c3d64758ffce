//! Prometheus' text exposition format (version 0.0.4), as node_exporter's
//! textfile collector reads it (`--prometheus FILE`, written whole or not
//! at all like every output file). Every figure of a row
//! ([`crate::report::Rows`]) is a gauge sample of the family
//! `qbench_<kind>_<cell>`, labelled with the row's keys; a state is its
//! code; notes are left out. The record's summary rows follow, then the
//! run itself: whether it finished, when it started and ended. Each
//! family's HELP and TYPE come once, before its samples; a later row with
//! the same labels as an earlier one (perftest's `--run_infinitely`
//! reports a size again) replaces it, so that no series is given twice.

use super::{Exporter, Record};
use crate::error::Result;
use crate::record::Header;
use crate::report::rows::{Cell, Role, Value};
use std::fmt::Write;

pub struct Prometheus;

impl Exporter for Prometheus {
    fn name(&self) -> &'static str {
        "Prometheus"
    }

    fn export(&self, record: &dyn Record) -> Result<Vec<u8>> {
        let kind = record.kind();
        let mut families = Families::default();
        for row in record.rows().iter().chain(&record.summary()).chain([&run(record.header())]) {
            families.add(kind, row);
        }
        Ok(families.text().into_bytes())
    }
}

/// The run's own figures, from its header.
fn run(header: &Header) -> Vec<Cell> {
    let unix = |rfc3339: &str| {
        let t = time::OffsetDateTime::parse(rfc3339, &time::format_description::well_known::Rfc3339).ok()?;
        Some(t.unix_timestamp() as f64 + f64::from(t.nanosecond()) / 1e9)
    };
    vec![
        Cell::figure("complete", u32::from(header.complete))
            .help("1 when the run finished, 0 when it was stopped before its end"),
        Cell::figure("start_timestamp_seconds", unix(&header.start_time))
            .help("when the run started, in seconds since 1970-01-01 UTC"),
        Cell::figure("end_timestamp_seconds", header.end_time.as_deref().and_then(unix))
            .help("when the run ended, in seconds since 1970-01-01 UTC"),
    ]
}

/// One metric family: its samples as (labels, value) text, in order.
struct Family {
    name: String,
    help: String,
    samples: Vec<(String, String)>,
}

#[derive(Default)]
struct Families(Vec<Family>);

impl Families {
    /// The samples of `row`: one per figure and state, labelled with its keys.
    fn add(&mut self, kind: &str, row: &[Cell]) {
        let labels = labels(row);
        for cell in row {
            let (value, help) = match (cell.role, &cell.value) {
                (Role::Figure { help }, v) => match number(v) {
                    Some(x) => (x, help.map_or_else(|| format!("the {} of each row of qbench's {kind} record (its CSV column)", cell.name), String::from)),
                    None => continue,
                },
                (Role::State { code, legend }, _) => (code.to_string(), legend.to_string()),
                (Role::Key | Role::Note, _) => continue,
            };
            let name = sanitized(&format!("qbench_{kind}_{}", cell.name), true);
            self.sample(name, help, labels.clone(), value);
        }
    }

    fn sample(&mut self, name: String, help: String, labels: String, value: String) {
        let at = match self.0.iter().position(|f| f.name == name) {
            Some(at) => at,
            None => {
                self.0.push(Family { name, help, samples: Vec::new() });
                self.0.len() - 1
            }
        };
        let samples = &mut self.0[at].samples;
        match samples.iter_mut().find(|(l, _)| *l == labels) {
            Some(same) => same.1 = value,
            None => samples.push((labels, value)),
        }
    }

    fn text(&self) -> String {
        let mut s = String::new();
        for f in &self.0 {
            let help = f.help.replace('\\', "\\\\").replace('\n', "\\n");
            let _ = writeln!(s, "# HELP {} {help}\n# TYPE {} gauge", f.name, f.name);
            for (labels, value) in &f.samples {
                let _ = writeln!(s, "{}{labels} {value}", f.name);
            }
        }
        s
    }
}

/// `{key="value",…}` of a row's keys; nothing for a row without keys.
fn labels(row: &[Cell]) -> String {
    let pairs: Vec<String> = row
        .iter()
        .filter(|c| c.role == Role::Key)
        .map(|c| {
            let value = match &c.value {
                Value::Text(t) => t.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n"),
                v => number(v).unwrap_or_default(),
            };
            format!("{}=\"{value}\"", sanitized(c.name, false))
        })
        .collect();
    if pairs.is_empty() { String::new() } else { format!("{{{}}}", pairs.join(",")) }
}

/// A number as the format writes it (Go's float syntax); None for text or
/// an absent value.
fn number(v: &Value) -> Option<String> {
    match v {
        Value::Int(n) => Some(n.to_string()),
        Value::Float(x) if x.is_nan() => Some("NaN".into()),
        Value::Float(x) if x.is_infinite() => Some(if *x > 0.0 { "+Inf" } else { "-Inf" }.into()),
        Value::Float(x) => Some(x.to_string()),
        Value::Text(_) | Value::Absent => None,
    }
}

/// `name` with every character a metric name (`[a-zA-Z_:][a-zA-Z0-9_:]*`)
/// or, without `colon`, a label name (`[a-zA-Z_][a-zA-Z0-9_]*`) may not
/// hold made an underscore.
fn sanitized(name: &str, colon: bool) -> String {
    let mut s: String =
        name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || (colon && c == ':') { c } else { '_' }).collect();
    if s.starts_with(|c: char| c.is_ascii_digit()) {
        s.insert(0, '_');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_escaped_and_a_repeated_row_replaces_the_first() {
        let mut f = Families::default();
        let row = |v: f64| vec![Cell::key("step", "a \"b\" \\ c\nd"), Cell::key("size", 64u64), Cell::figure("gbps", v)];
        f.add("rdma", &row(1.0));
        f.add("rdma", &row(2.5));
        f.add("rdma", &[Cell::figure("gbps", None::<f64>), Cell::note("why", "absent")]);
        f.add("rdma", &[Cell::state("status", "FAIL", 2, "0 ok, 2 failed"), Cell::figure("x", f64::INFINITY)]);
        assert_eq!(
            f.text(),
            "# HELP qbench_rdma_gbps the gbps of each row of qbench's rdma record (its CSV column)\n\
             # TYPE qbench_rdma_gbps gauge\n\
             qbench_rdma_gbps{step=\"a \\\"b\\\" \\\\ c\\nd\",size=\"64\"} 2.5\n\
             # HELP qbench_rdma_status 0 ok, 2 failed\n\
             # TYPE qbench_rdma_status gauge\n\
             qbench_rdma_status 2\n\
             # HELP qbench_rdma_x the x of each row of qbench's rdma record (its CSV column)\n\
             # TYPE qbench_rdma_x gauge\n\
             qbench_rdma_x +Inf\n"
        );
        assert_eq!(sanitized("9 a-b:c", true), "_9_a_b:c");
        assert_eq!(sanitized("a:b", false), "a_b");
    }
}
