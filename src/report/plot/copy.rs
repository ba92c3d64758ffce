//! Copy runs: nvbandwidth's matrices as heat maps with the GB/s written in
//! each cell (host and local copies in one map, a map per GPU-to-GPU test),
//! and gdrcopy's latency tables as min, median and p99 against size.

use super::figure::{Axis, Chart, Dash, Figure, Heat, Lines, Marker, Panel, Scale, Series};
use super::{Metric, Options, Plot, Source};
use crate::error::{Error, Result};
use crate::record::copy::{CopyRun, LatencyRow, Status, TestRecord};
use crate::report::copy::{Matrix, Orientation, matrices_of};

impl Plot for CopyRun {
    fn carrier(&self) -> String {
        super::gpus(self.devices.iter().map(|d| d.name.as_str()))
    }

    fn figure(runs: &[Source<'_, Self>], options: &Options) -> Result<Figure> {
        let stats: Vec<Stat> = {
            let min: Stat = ("min", Dash::Dotted, Marker::None, |r| r.host.min);
            let median: Stat = ("median", Dash::Solid, Marker::Circle, |r| r.host.median);
            let p99: Stat = ("p99", Dash::Dashed, Marker::Triangle, |r| r.host.p99);
            match options.metric {
                None | Some(Metric::Time) => vec![min, median, p99],
                Some(Metric::P50) => vec![median],
                Some(Metric::P99) => vec![p99],
                Some(m) => return Err(m.not_for("copy", "they plot GB/s matrices, and latency as time, p50 or p99")),
            }
        };
        let chosen = |t: &TestRecord| {
            t.status == Status::Ran
                && options.tests.as_ref().is_none_or(|w| w.iter().any(|x| x == &t.name || x == &t.family || x == "all"))
        };
        // One run: its name heads the figure, not every panel.
        let named = runs.len() > 1;
        let mut panels = Vec::new();
        for run in runs {
            panels.extend(heat_maps(run, &chosen, named));
        }
        panels.extend(latency_panels(runs, &chosen, &stats));
        if panels.is_empty() {
            let asked = options.tests.as_ref().map_or("any test".to_string(), |t| t.join(","));
            return Err(Error::Usage(format!(
                "nothing to draw: no {asked} of the copy record{} ran (see qbench copy --list)",
                if runs.len() > 1 { "s" } else { "" }
            )));
        }
        let columns = if panels.len() > 1 { 2 } else { 1 };
        let whose = if named { super::hosts(runs, |r| &r.header) } else { runs[0].label.clone() };
        Ok(Figure { title: format!("Copy bandwidth and latency, {whose}"), panels, columns })
    }
}

/// A latency statistic drawn: its name, its line and markers, where it is
/// in a row.
type Stat = (&'static str, Dash, Marker, fn(&LatencyRow) -> f64);

/// Latency: a panel per table of the tests `chosen`, every run's lines of
/// the statistics `stats` in it.
fn latency_panels(runs: &[Source<'_, CopyRun>], chosen: &dyn Fn(&TestRecord) -> bool, stats: &[Stat]) -> Vec<Panel> {
    let mut panels = Vec::new();
    let mut tables: Vec<(String, String, String)> = Vec::new();
    for run in runs {
        for t in run.record.tests.iter().filter(|t| chosen(t)) {
            for s in &t.latency {
                let k = (t.name.clone(), s.label.clone(), s.placement.clone());
                if !tables.contains(&k) {
                    tables.push(k);
                }
            }
        }
    }
    for (test, label, placement) in &tables {
        let mut series = Vec::new();
        for (i, run) in runs.iter().enumerate() {
            let Some(s) = run
                .record
                .tests
                .iter()
                .filter(|t| &t.name == test)
                .flat_map(|t| &t.latency)
                .find(|s| &s.label == label && &s.placement == placement)
            else {
                continue;
            };
            for (k, (stat, dash, marker, pick)) in stats.iter().enumerate() {
                series.push(Series {
                    label: format!("{}, {stat}", run.label),
                    points: s.rows.iter().map(|r| (r.size as f64, pick(r))).collect(),
                    // One run: a colour per statistic; several: per run.
                    colour: if runs.len() == 1 { k } else { i },
                    dash: *dash,
                    marker: *marker,
                    reference: false,
                });
            }
        }
        panels.push(Panel {
            title: format!("{test}: {label}, {placement}"),
            chart: Chart::Lines(Lines {
                x: Axis::new("copy size (bytes; K, M binary)", Scale::Bytes),
                y: Axis::new("time per copy, host clock (µs)", Scale::Log10),
                series,
                references: Vec::new(),
            }),
        });
    }
    panels
}

/// What a matrix row is: the direction its flows took.
fn direction(o: Orientation) -> &'static str {
    match o {
        Orientation::HostToGpu => "CPU→GPU",
        Orientation::GpuToHost => "GPU→CPU",
        Orientation::GpuToGpu => "GPU→GPU",
        Orientation::Local => "local, read + write",
    }
}

/// The run's bandwidth tests: one map of every one-row matrix (host and
/// local copies, a row each), a map per GPU-to-GPU matrix.
fn heat_maps(run: &Source<'_, CopyRun>, chosen: &dyn Fn(&TestRecord) -> bool, named: bool) -> Vec<Panel> {
    let who = if named { format!("{}: ", run.label) } else { String::new() };
    let ngpu = run.record.devices.len().max(1);
    let gpu_names: Vec<String> = (0..ngpu).map(|g| format!("GPU {g}")).collect();
    let tests: Vec<(&TestRecord, Vec<Matrix>)> = run
        .record
        .tests
        .iter()
        .filter(|t| chosen(t))
        .map(|t| (t, matrices_of(t)))
        .filter(|(_, m)| !m.is_empty())
        .collect();
    let sizes = |ms: &mut dyn Iterator<Item = u64>| {
        let mut v: Vec<u64> = ms.collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    let mut panels = Vec::new();
    let one_row: Vec<(&TestRecord, &Matrix)> = tests
        .iter()
        .flat_map(|(t, ms)| ms.iter().filter(|m| m.orientation != Orientation::GpuToGpu).map(move |m| (*t, m)))
        .collect();
    if !one_row.is_empty() {
        let at = sizes(&mut one_row.iter().map(|(_, m)| m.size));
        let several = |t: &TestRecord| tests.iter().find(|(x, _)| x.name == t.name).is_some_and(|(_, ms)| ms.len() > 1);
        let rows: Vec<String> = one_row
            .iter()
            .map(|(t, m)| {
                let mut s = t.name.clone();
                if several(t) || m.orientation == Orientation::Local {
                    s = format!("{s} ({})", direction(m.orientation));
                }
                if at.len() > 1 {
                    s = format!("{s} at {}", super::size_label(m.size as f64));
                }
                s
            })
            .collect();
        let cells = one_row.iter().map(|(_, m)| fit(&m.values[0], ngpu)).collect();
        panels.push(Panel {
            title: format!("{who}host and local copies, GB/s{}", at_size(&at)),
            chart: Chart::Heat(Heat {
                rows_title: "test".into(),
                rows,
                columns_title: "GPU".into(),
                columns: gpu_names.clone(),
                cells,
                unit: "GB/s".into(),
            }),
        });
    }
    for (t, ms) in &tests {
        for m in ms.iter().filter(|m| m.orientation == Orientation::GpuToGpu) {
            panels.push(Panel {
                title: format!("{who}{} ({}), GB/s{}", t.name, m.engine, at_size(&[m.size])),
                chart: Chart::Heat(Heat {
                    rows_title: "from (source GPU)".into(),
                    rows: gpu_names.clone(),
                    columns_title: "to (destination GPU)".into(),
                    columns: gpu_names.clone(),
                    cells: (0..ngpu).map(|r| m.values.get(r).map_or(vec![None; ngpu], |v| fit(v, ngpu))).collect(),
                    unit: "GB/s".into(),
                }),
            });
        }
    }
    panels
}

fn at_size(sizes: &[u64]) -> String {
    match sizes {
        [one] => format!(" at {} copies", super::size_words(*one)),
        _ => String::new(),
    }
}

/// A matrix row widened (or cut) to the run's GPUs.
fn fit(row: &[Option<f64>], n: usize) -> Vec<Option<f64>> {
    (0..n).map(|i| row.get(i).copied().flatten()).collect()
}
