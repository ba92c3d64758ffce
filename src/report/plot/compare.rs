//! Comparisons: GB/s per direction, a group of bars per transport (wire),
//! a bar per run, nccl-tests' sendrecv of the same bytes dashed across.

use super::figure::{Axis, BarSeries, Bars, Chart, Figure, Panel, Reference};
use super::{Options, Plot, Source, bandwidth_scale, groups};
use crate::error::Result;
use crate::record::compare::Comparison;

/// The row that is nccl-tests' sendrecv, drawn as a reference line.
const SENDRECV: &str = "nccl-sendrecv";

impl Plot for Comparison {
    fn carrier(&self) -> String {
        super::gpus(self.devices.iter().map(|d| d.name.as_str()))
    }

    fn figure(runs: &[Source<'_, Self>], options: &Options) -> Result<Figure> {
        if let Some(m) = options.metric {
            return Err(m.not_for("compare", "they hold GB/s per direction only"));
        }
        let wires =
            groups(runs.iter().flat_map(|r| r.record.rows.iter().map(|x| x.transport.as_str())), |w| w != SENDRECV);
        let mut series = Vec::new();
        let mut references = Vec::new();
        for (i, run) in runs.iter().enumerate() {
            let rows = &run.record.rows;
            let values = wires.iter().map(|w| rows.iter().find(|x| &x.transport == w).and_then(|x| x.gbps)).collect();
            series.push(BarSeries { label: run.label.clone(), values, colour: i });
            if let Some(g) = rows.iter().find(|x| x.transport == SENDRECV).and_then(|x| x.gbps) {
                references.push(Reference {
                    label: format!("{}, nccl-tests sendrecv, {g:.1} GB/s", run.label),
                    value: g,
                    // One run: a reference colour, apart from its bars.
                    colour: (runs.len() > 1).then_some(i),
                });
            }
        }
        let sizes: Vec<String> = {
            let mut v: Vec<String> = runs.iter().map(|r| super::size_words(r.record.bytes_per_rank)).collect();
            v.dedup();
            v
        };
        let values = series.iter().flat_map(|s| s.values.iter().flatten()).chain(references.iter().map(|r| &r.value));
        let scale = bandwidth_scale(values.copied());
        Ok(Figure {
            title: format!(
                "Transports between partner GPUs, {} per rank, {}",
                sizes.join(" and "),
                super::hosts(runs, |r| &r.header)
            ),
            panels: vec![Panel {
                title: String::new(),
                chart: Chart::Bars(Bars {
                    groups_title: "transport".into(),
                    groups: wires,
                    y: Axis::new("bandwidth per direction (GB/s)", scale),
                    series,
                    references,
                }),
            }],
            columns: 1,
        })
    }
}
