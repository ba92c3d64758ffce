//! Readiness checks: a matrix of each measured step (rows) in each run
//! (columns: a node now and its baseline, nodes side by side), each cell
//! measured / expected; for a time (a ceiling's step) expected / measured,
//! so that above 1 is better in every cell.

use super::figure::{Chart, Figure, Heat, Panel};
use super::{Options, Plot, Source, groups};
use crate::error::{Error, Result};
use crate::record::check::{CheckRun, Row};

/// How far a row is from what a ready node measures, above 1 better.
fn score(r: &Row) -> Option<f64> {
    let (m, e) = (r.measured?, r.expected?);
    let s = if r.ceiling.is_some() { e / m } else { m / e };
    s.is_finite().then_some(s)
}

impl Plot for CheckRun {
    fn carrier(&self) -> String {
        format!("{} {}", self.profile, self.level)
    }

    fn figure(runs: &[Source<'_, Self>], options: &Options) -> Result<Figure> {
        if let Some(m) = options.metric {
            return Err(m.not_for("check", "they hold each step against its expected value"));
        }
        let labels: Vec<String> =
            runs.iter().flat_map(|r| r.record.rows.iter().filter(|x| score(x).is_some())).map(Row::label).collect();
        let steps = groups(labels.iter().map(String::as_str), |_| true);
        if steps.is_empty() {
            return Err(Error::Usage(format!(
                "{}: no step with an expected value to draw (a profile of floors only, or facts only)",
                runs[0].path.display()
            )));
        }
        let cells = steps
            .iter()
            .map(|s| runs.iter().map(|run| run.record.rows.iter().find(|r| &r.label() == s).and_then(score)).collect())
            .collect();
        Ok(Figure {
            title: format!(
                "Readiness: each step against what a ready node measures (above 1 is better), {}",
                super::hosts(runs, |r| &r.header)
            ),
            panels: vec![Panel {
                title: String::new(),
                chart: Chart::Heat(Heat {
                    rows_title: "step".into(),
                    rows: steps,
                    columns_title: "run".into(),
                    columns: runs.iter().map(|r| r.label.clone()).collect(),
                    cells,
                    unit: "of expected".into(),
                }),
            }],
            columns: 1,
        })
    }
}
