//! RDMA runs as perftest reports them: the bandwidth tests' BW average
//! against message size, and the latency tests' median and 99th
//! percentile against it, one line per link (test and connection) of
//! each run.

use super::figure::{Axis, Chart, Dash, Figure, Lines, Marker, Panel, Scale, Series};
use super::{Metric, Options, Plot, Source};
use crate::error::{Error, Result};
use crate::rdma::plan::BufferMemory;
use crate::record::rdma::{LatRow, Link, RdmaRun, Row};
use crate::report::rdma::bw_unit;

impl Plot for RdmaRun {
    fn carrier(&self) -> String {
        let gpu =
            self.links.iter().any(|l| l.local.memory != BufferMemory::Host || l.remote.memory != BufferMemory::Host);
        format!("{}{}", self.mode.name(), if gpu { ", GPU memory" } else { "" })
    }

    fn figure(runs: &[Source<'_, Self>], options: &Options) -> Result<Figure> {
        let (bw, median, p99) = match options.metric {
            None => (true, true, true),
            Some(Metric::AlgBw) => (true, false, false),
            Some(Metric::Time) => (false, true, true),
            Some(Metric::P50) => (false, true, false),
            Some(Metric::P99) => (false, false, true),
            Some(m @ Metric::BusBw) => {
                return Err(m.not_for("rdma", "they plot BW average as algbw, and latency as time, p50 or p99"));
            }
        };
        // Gb/s when every run printed Gb/s, else perftest's default MiB/s.
        let gbits = runs.iter().all(|r| r.record.report_gbits);
        let mut bandwidth = Vec::new();
        let mut latency = Vec::new();
        // A colour per link of every run; a latency link's two lines share it.
        let links = runs.iter().flat_map(|run| run.record.links.iter().enumerate().map(move |(i, l)| (run, i, l)));
        for (colour, (run, i, link)) in links.enumerate() {
            let r = run.record;
            let rows: Vec<&Row> = r.rows.iter().filter(|x| x.link == i).map(|x| &x.row).collect();
            let label = format!("{} {}", run.label, name(link));
            if link.test.is_bw() {
                if bw {
                    let points = rows
                        .iter()
                        .filter_map(|x| match x {
                            Row::Bw(b) => Some((b.bytes as f64, bw_unit(b.bw_avg_bytes_per_s, gbits))),
                            Row::Lat(_) | Row::LatDuration(_) => None,
                        })
                        .collect();
                    bandwidth.push(line(label, points, colour, Dash::Solid, Marker::Circle));
                }
                continue;
            }
            latency.extend(latency_lines(&label, &rows, colour, median, p99));
        }
        let panels = panels(bandwidth, latency, gbits);
        if panels.is_empty() {
            let what = if bw { "bandwidth" } else { "latency" };
            return Err(Error::Usage(format!("nothing to draw: the rdma records hold no {what} test")));
        }
        let columns = panels.len();
        Ok(Figure {
            title: format!("RDMA (perftest's tests) against message size, {}", super::hosts(runs, |r| &r.header)),
            panels,
            columns,
        })
    }
}

/// A latency link's lines: its median and its 99th percentile, as asked.
fn latency_lines(label: &str, rows: &[&Row], colour: usize, median: bool, p99: bool) -> Vec<Series> {
    let at = |pick: fn(&LatRow) -> f64| -> Vec<(f64, f64)> {
        rows.iter()
            .filter_map(|x| match x {
                Row::Lat(l) => Some((l.bytes as f64, pick(l))),
                // A -D row has an average only: no median, no p99.
                Row::Bw(_) | Row::LatDuration(_) => None,
            })
            .collect()
    };
    let mut lines = Vec::new();
    if median {
        lines.push(line(format!("{label}, median"), at(|l| l.t_typical_us), colour, Dash::Solid, Marker::Circle));
    }
    if p99 {
        lines.push(line(format!("{label}, p99"), at(|l| l.t_p99_us), colour, Dash::Dashed, Marker::Triangle));
    }
    lines
}

/// The bandwidth tests' panel and the latency tests', those with lines.
fn panels(bandwidth: Vec<Series>, latency: Vec<Series>, gbits: bool) -> Vec<Panel> {
    let x = || Axis::new("message size (bytes; K, M binary)", Scale::Bytes);
    let mut panels = Vec::new();
    if !bandwidth.is_empty() {
        let values: Vec<f64> = bandwidth.iter().flat_map(|s| s.points.iter().map(|p| p.1)).collect();
        let unit = if gbits { "Gb/s" } else { "MiB/s" };
        panels.push(Panel {
            title: "bandwidth tests".into(),
            chart: Chart::Lines(Lines {
                x: x(),
                y: Axis::new(format!("BW average ({unit})"), super::bandwidth_scale(values)),
                series: bandwidth,
                references: Vec::new(),
            }),
        });
    }
    if !latency.is_empty() {
        panels.push(Panel {
            title: "latency tests (half the round trip for write and send, the whole one for read)".into(),
            chart: Chart::Lines(Lines {
                x: x(),
                y: Axis::new("latency (µs)", Scale::Log10),
                series: latency,
                references: Vec::new(),
            }),
        });
    }
    panels
}

/// A link in a legend: the test, the devices, and what is not perftest's default.
fn name(l: &Link) -> String {
    let p = &l.params;
    let mut s = format!("{} {}→{}", l.test.name(), l.local.device, l.remote.device);
    if p.qps > 1 {
        s.push_str(&format!(", {} QPs", p.qps));
    }
    if p.bidirectional {
        s.push_str(", both directions");
    }
    s
}

fn line(label: String, points: Vec<(f64, f64)>, colour: usize, dash: Dash, marker: Marker) -> Series {
    Series { label, points, colour, dash, marker, reference: false }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::plot::Format;
    use std::path::Path;

    fn options(metric: Option<Metric>) -> Options {
        Options { metric, title: None, tests: None, format: Format::Svg }
    }

    #[test]
    fn bandwidth_and_latency_panels_with_a_line_per_link() {
        let run = crate::record::rdma::tests::sample();
        let runs = [Source { path: Path::new("a.json"), record: &run, label: "a 2026".into() }];
        let fig = RdmaRun::figure(&runs, &options(None)).unwrap();
        assert_eq!(fig.panels.len(), 2);
        let Chart::Lines(bw) = &fig.panels[0].chart else { panic!() };
        assert_eq!(bw.y.title, "BW average (MiB/s)");
        assert_eq!(bw.series[0].label, "a 2026 write_bw rxe0→rxe1");
        assert!((bw.series[0].points[0].1 - 1e6 / 1048576.0).abs() < 1e-9);
        let Chart::Lines(lat) = &fig.panels[1].chart else { panic!() };
        let labels: Vec<&str> = lat.series.iter().map(|s| s.label.as_str()).collect();
        assert_eq!(labels, ["a 2026 read_lat rxe0→rxe1, median", "a 2026 read_lat rxe0→rxe1, p99"]);
        assert_eq!(RdmaRun::figure(&runs, &options(Some(Metric::P99))).unwrap().series(), 1);
        assert_eq!(RdmaRun::figure(&runs, &options(Some(Metric::BusBw))).unwrap_err().exit_code(), 2);
    }
}
