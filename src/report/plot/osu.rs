//! OSU runs as OSU reports them: latency (µs) or bandwidth (MB/s) against
//! message size, a line per run and datatype.

use super::figure::{Axis, Chart, Dash, Figure, Lines, Marker, Panel, Scale, Series};
use super::{Metric, Options, Plot, Source};
use crate::error::{Error, Result};
use crate::record::osu::{OsuRun, Place};

impl Plot for OsuRun {
    fn carrier(&self) -> String {
        format!("{} {}{}", self.benchmark.program(), self.buffers.0.letter(), self.buffers.1.letter())
    }

    fn figure(runs: &[Source<'_, Self>], options: &Options) -> Result<Figure> {
        let latency = runs.first().is_some_and(|r| r.record.benchmark.is_latency());
        if runs.iter().any(|r| r.record.benchmark.is_latency() != latency) {
            return Err(Error::Usage(
                "osu records of latency and of bandwidth tests do not share an axis: plot them apart".into(),
            ));
        }
        match (options.metric, latency) {
            (None, _) | (Some(Metric::Time), true) | (Some(Metric::AlgBw), false) => {}
            (Some(m), _) => {
                return Err(
                    m.not_for("osu", "they plot their one figure: time for latency tests, algbw for bandwidth tests")
                );
            }
        }
        let mut series = Vec::new();
        for run in runs {
            for &d in crate::record::osu::Datatype::ALL {
                let points: Vec<(f64, f64)> =
                    run.record.rows.iter().filter(|r| r.datatype == d).map(|r| (r.size as f64, r.value)).collect();
                if points.is_empty() {
                    continue;
                }
                let colour = series.len();
                let gpu = run.record.buffers.0 == Place::Device || run.record.buffers.1 == Place::Device;
                series.push(Series {
                    label: format!("{} {}", run.label, d.name()),
                    points,
                    colour,
                    dash: if gpu { Dash::Dashed } else { Dash::Solid },
                    marker: Marker::Circle,
                    reference: false,
                });
            }
        }
        let values: Vec<f64> = series.iter().flat_map(|s| s.points.iter().map(|p| p.1)).collect();
        let (y, scale) = if latency {
            ("latency (µs)", Scale::Log10)
        } else {
            ("bandwidth (MB/s, 10^6 bytes)", super::bandwidth_scale(values))
        };
        let title = runs.first().map_or(String::new(), |r| r.record.benchmark.title(""));
        Ok(Figure {
            title: format!("{title} against message size, {}", super::hosts(runs, |r| &r.header)),
            panels: vec![Panel {
                title: String::new(),
                chart: Chart::Lines(Lines {
                    x: Axis::new("message size (bytes; K, M binary)", Scale::Bytes),
                    y: Axis::new(y, scale),
                    series,
                    references: Vec::new(),
                }),
            }],
            columns: 1,
        })
    }
}
