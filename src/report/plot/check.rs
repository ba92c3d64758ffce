//! Readiness checks as a picture, so that a step below its floor stands out
//! by colour and not by a shade of a ratio: a row per measured step, a
//! column per run (a node now and its baseline, nodes side by side), each
//! mark measured / expected coloured PASS, WARN, FAIL or SKIP, with the
//! step's floor (a time's ceiling) as a tick on the same scale; under it
//! the pairs of a pairwise pass as a heat map (pairs.rs).

use super::figure::{Chart, Figure, Heading, Judged, Mark, Panel};
use super::{Options, Plot, Source, groups};
use crate::error::{Error, Result};
use crate::record::check::{CheckRun, Row, Status};

/// A time's step: held to a ceiling with no floor, so lower is better.
fn is_time(r: &Row) -> bool {
    r.ceiling.is_some() && r.floor.is_none()
}

/// The run's steps (not its facts), each with its name in the picture:
/// its label, and its node where the run measured several.
fn named_steps(run: &CheckRun) -> Vec<(String, &Row)> {
    let steps: Vec<&Row> = run.rows.iter().filter(|r| r.kind != "fact").collect();
    let mut nodes = steps.iter().map(|r| r.node.as_str()).filter(|n| *n != "all");
    let first = nodes.next();
    let several = nodes.any(|n| Some(n) != first);
    let name = |r: &Row| if several && r.node != "all" { format!("{} on {}", r.label(), r.node) } else { r.label() };
    steps.into_iter().map(|r| (name(r), r)).collect()
}

/// A figure in three significant digits: 55.4, 4267, 0.200.
fn amount(x: f64) -> String {
    let digits = if x == 0.0 { 0 } else { (2 - x.abs().log10().floor() as i32).clamp(0, 6) as usize };
    format!("{x:.digits$}")
}

/// The row's limits in words, for a row with nothing to scale them by.
fn limits(r: &Row) -> String {
    let floor = r.floor.map(|f| format!(", floor {}", amount(f)));
    let ceiling = r.ceiling.map(|c| format!(", ceiling {}", amount(c)));
    floor.into_iter().chain(ceiling).collect()
}

/// The row as a mark: measured / expected with its limits on that scale,
/// or the reason there is nothing to scale.
fn mark(r: &Row) -> Mark {
    let at = |m: f64, e: f64| Mark {
        value: Some(m / e),
        limits: [r.floor, r.ceiling].into_iter().flatten().map(|l| l / e).collect(),
        status: r.status,
        note: format!("{} of {} {}", amount(m), amount(e), r.unit),
    };
    let words = |note: String| Mark { value: None, limits: Vec::new(), status: r.status, note };
    match (r.measured, r.expected) {
        (Some(m), Some(e)) if (m / e).is_finite() && e > 0.0 => at(m, e),
        (Some(m), _) => words(format!("{} {}, no expected value{}", amount(m), r.unit, limits(r))),
        (None, _) if r.status == Status::Skip => words("not measured".into()),
        (None, _) => words(format!("not measured ({})", r.status)),
    }
}

/// The step's heading: its name, and which way is better for a time.
fn heading(name: &str, rows: &[Option<&Row>]) -> Heading {
    let time = rows.iter().flatten().any(|r| is_time(r));
    let detail = if time { "time: lower is better" } else { "" };
    Heading { text: name.to_string(), detail: detail.into(), status: None }
}

/// The run's heading: its name, and its verdict in the verdict's colour.
fn run_heading(run: &Source<'_, CheckRun>) -> Heading {
    let v = run.record.verdict.as_ref();
    Heading {
        text: run.label.clone(),
        detail: v.map_or("no verdict (stopped)".into(), |v| v.summary.clone()),
        status: v.map(|v| v.status),
    }
}

impl Plot for CheckRun {
    fn carrier(&self) -> String {
        format!("{} {}", self.profile, self.level)
    }

    fn figure(runs: &[Source<'_, Self>], options: &Options) -> Result<Figure> {
        if let Some(m) = options.metric {
            return Err(m.not_for("check", "they hold each step against its expected value"));
        }
        let named: Vec<Vec<(String, &Row)>> = runs.iter().map(|s| named_steps(s.record)).collect();
        let names = groups(named.iter().flatten().map(|(n, _)| n.as_str()), |_| true);
        if names.is_empty() {
            return Err(Error::Usage(format!("{}: no step to draw (facts only)", runs[0].path.display())));
        }
        let found: Vec<Vec<Option<&Row>>> = names
            .iter()
            .map(|n| named.iter().map(|run| run.iter().find(|(m, _)| m == n).map(|(_, r)| *r)).collect())
            .collect();
        let judged = Judged {
            x_title: "measured / expected".into(),
            rows_title: "step".into(),
            rows: names.iter().zip(&found).map(|(n, rows)| heading(n, rows)).collect(),
            columns: runs.iter().map(run_heading).collect(),
            marks: found.iter().map(|rows| rows.iter().map(|r| r.map(mark)).collect()).collect(),
            tick_label: "floor (ceiling for a time)".into(),
            expected_label: "expected (1)".into(),
        };
        let mut panels = vec![Panel { title: String::new(), chart: Chart::Judged(judged) }];
        for run in runs {
            let who = if runs.len() > 1 { format!("{}: ", run.label) } else { String::new() };
            panels.extend(super::pairs::panels(run.record, &who));
        }
        Ok(Figure {
            title: format!(
                "Readiness: each step against what a ready node measures, {}",
                super::hosts(runs, |r| &r.header)
            ),
            panels,
            columns: 1,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::amount;

    #[test]
    fn amounts_keep_three_figures() {
        assert_eq!(amount(55.40294), "55.4");
        assert_eq!(amount(4267.08), "4267");
        assert_eq!(amount(7.002), "7.00");
        assert_eq!(amount(0.2003344), "0.200");
        assert_eq!(amount(0.0), "0");
    }
}
