//! Collective sweeps: the metric against size, one line per run, placement
//! and type (and op and root where the run has several), the
//! `NCCL_TESTS_MIN_BW` floor dashed where the run was held to one.

use super::figure::{Axis, Chart, Dash, Figure, Lines, Marker, Panel, Reference, Scale, Series};
use super::{Metric, Options, Plot, Source};
use crate::error::Result;
use crate::record::collective::{Cell, CollectiveRun, SizeRecord};
use std::collections::{BTreeMap, HashMap};

impl Plot for CollectiveRun {
    fn carrier(&self) -> String {
        let processes = {
            let mut pids: Vec<(String, u32)> = self.devices.iter().map(|d| (d.host.clone(), d.pid)).collect();
            pids.sort();
            pids.dedup();
            pids.len()
        };
        let ranks = self.config.nranks;
        let mut s = format!("{}, {ranks} rank{}", self.transport.name(), if ranks == 1 { "" } else { "s" });
        if processes > 1 {
            s.push_str(&format!(", {processes} processes"));
        }
        if self.config.cudagraph > 0 {
            s.push_str(", CUDA graph");
        }
        s
    }

    fn figure(runs: &[Source<'_, Self>], options: &Options) -> Result<Figure> {
        let metric = options.metric.unwrap_or(Metric::BusBw);
        let naming = Naming::of(runs);
        let mut series = Vec::new();
        let mut references = Vec::new();
        for run in runs {
            let r = run.record;
            for rows in groups(&r.results) {
                let name = naming.name(run, rows[0]);
                let colour = series.len() / 2;
                for (placement, marker, dash, cell) in [
                    (
                        "out-of-place",
                        Marker::Circle,
                        Dash::Solid,
                        (|x: &SizeRecord| &x.out_of_place) as fn(&SizeRecord) -> &Cell,
                    ),
                    ("in-place", Marker::Triangle, Dash::Dotted, |x: &SizeRecord| &x.in_place),
                ] {
                    series.push(Series {
                        label: format!("{name}, {placement}"),
                        points: by_size(&rows, |x| value(metric, cell(x))),
                        colour,
                        dash,
                        marker,
                        reference: false,
                    });
                }
            }
            if let (Metric::BusBw, Some(m)) = (metric, &r.min_bandwidth) {
                references.push(Reference {
                    label: format!(
                        "{}, floor NCCL_TESTS_MIN_BW = {} GB/s (average busbw {:.1}, {})",
                        run.label,
                        m.required_gbps,
                        r.avg_busbw_gbps,
                        if m.ok { "met" } else { "missed" }
                    ),
                    value: m.required_gbps,
                    colour: None,
                });
            }
        }
        let names: Vec<String> = {
            let mut v: Vec<String> = runs.iter().map(|r| r.record.collective.clone()).collect();
            v.dedup();
            v
        };
        let (title, scale) = y_axis(metric);
        Ok(Figure {
            title: format!(
                "{} {} against message size, {}",
                names.join(", "),
                metric.name(),
                super::hosts(runs, |r| &r.header)
            ),
            panels: vec![Panel {
                title: String::new(),
                chart: Chart::Lines(Lines {
                    x: Axis::new("message size (bytes; K, M, G binary)", Scale::Bytes),
                    y: Axis::new(title, scale),
                    series,
                    references,
                }),
            }],
            columns: 1,
        })
    }
}

/// The y axis' title and scale for `metric`.
fn y_axis(metric: Metric) -> (&'static str, Scale) {
    match metric {
        Metric::BusBw => ("bus bandwidth (GB/s)", Scale::Linear),
        Metric::AlgBw => ("algorithm bandwidth (GB/s)", Scale::Linear),
        Metric::Time => ("time per operation (µs)", Scale::Log10),
        Metric::P50 => ("per-iteration median time (µs)", Scale::Log10),
        Metric::P99 => ("per-iteration 99th percentile time (µs)", Scale::Log10),
    }
}

/// `metric` of one half of a row.
fn value(metric: Metric, c: &Cell) -> f64 {
    match metric {
        Metric::BusBw => c.busbw_gbps,
        Metric::AlgBw => c.algbw_gbps,
        Metric::Time => c.time_us,
        Metric::P50 => c.iterations.median,
        Metric::P99 => c.iterations.p99,
    }
}

/// What a line's name says besides its run: whatever differs between the
/// lines drawn (the collective, the type, the op, the root).
struct Naming {
    collectives: bool,
    types: bool,
    ops: bool,
    roots: bool,
}

impl Naming {
    fn of(runs: &[Source<'_, CollectiveRun>]) -> Naming {
        let many = |f: &dyn Fn(&CollectiveRun) -> usize| runs.iter().any(|r| f(r.record) > 1);
        Naming {
            collectives: distinct(runs, |r| r.record.collective.clone()) > 1,
            types: many(&|r| distinct(&r.results, |x| x.dtype.name().to_string())),
            ops: many(&|r| distinct(&r.results, |x| x.redop.map_or("none", |o| o.name()).to_string())),
            roots: many(&|r| distinct(&r.results, |x| x.root.to_string())),
        }
    }

    /// The name of `run`'s line whose first row is `first`.
    fn name(&self, run: &Source<'_, CollectiveRun>, first: &SizeRecord) -> String {
        let mut name = run.label.clone();
        if self.collectives {
            name = format!("{name} {}", run.record.collective);
        }
        if self.types {
            name = format!("{name} {}", first.dtype.name());
        }
        if self.ops {
            name = format!("{name} {}", first.redop.map_or("none", |o| o.name()));
        }
        if self.roots && first.root >= 0 {
            name = format!("{name} root {}", first.root);
        }
        name
    }
}

/// A run's rows by line (type, op and root), the lines in the order the
/// run measured them: one pass, however many rows and lines.
fn groups(rows: &[SizeRecord]) -> Vec<Vec<&SizeRecord>> {
    let mut at: HashMap<(&str, Option<&str>, i64), usize> = HashMap::new();
    let mut groups: Vec<Vec<&SizeRecord>> = Vec::new();
    for r in rows {
        let key = (r.dtype.name(), r.redop.map(|o| o.name()), r.root);
        let i = *at.entry(key).or_insert_with(|| {
            groups.push(Vec::new());
            groups.len() - 1
        });
        groups[i].push(r);
    }
    groups
}

fn distinct<T>(items: &[T], key: impl Fn(&T) -> String) -> usize {
    let mut v: Vec<String> = items.iter().map(key).collect();
    v.sort();
    v.dedup();
    v.len()
}

/// (size, value) in size order; sizes repeated by -N cycles give their mean.
fn by_size(rows: &[&SizeRecord], value: impl Fn(&SizeRecord) -> f64) -> Vec<(f64, f64)> {
    let mut sums: BTreeMap<u64, (f64, usize)> = BTreeMap::new();
    for r in rows {
        let e = sums.entry(r.size).or_default();
        *e = (e.0 + value(r), e.1 + 1);
    }
    sums.into_iter().map(|(s, (sum, n))| (s as f64, sum / n as f64)).collect()
}
