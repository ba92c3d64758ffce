//! The readiness table: step, node, measured, expected, ratio, status and
//! the fix, then the one-line verdict; and its rows, a row per step and
//! node, with the verdict per node for Prometheus.

use super::Table;
use super::exchange::table;
use super::rows::{Cell, Rows};
use crate::record::check::{CheckRun, Row, Status, figure};

fn number(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), figure)
}

/// The expected value, where it comes from and the bound beside it:
/// "55.5 (≥ 49.95)", "2.49 projected (≤ 2.77)".
fn expected(r: &Row) -> String {
    let bound = match (r.floor, r.ceiling) {
        (Some(f), _) => format!("≥ {}", number(Some(f))),
        (None, Some(c)) => format!("≤ {}", number(Some(c))),
        _ => String::new(),
    };
    let value = r.expected.map(|e| match &r.expected_from {
        Some(from) => format!("{} {from}", number(Some(e))),
        None => number(Some(e)),
    });
    match (value, bound.is_empty()) {
        (Some(e), true) => e,
        (Some(e), false) => format!("{e} ({bound})"),
        (None, _) => bound,
    }
}

impl Table for CheckRun {
    fn head(&self) -> String {
        format!(
            "# qbench check: profile {} ({}), level {} ({} s)\n# expected values, {}: {}\n# nodes: {}\n",
            self.profile,
            self.profile_from,
            self.level,
            self.budget_s,
            if self.measured_here { "measured on such a machine" } else { "not measured here" },
            self.source,
            self.nodes.join(", ")
        )
    }

    /// The rows come together, in the tail, as one table.
    fn part(&self, _: &Row) -> String {
        String::new()
    }

    fn tail(&self) -> String {
        let rows = self
            .rows
            .iter()
            .map(|r| {
                let measured = match r.measured {
                    Some(m) => format!("{} {}", number(Some(m)), r.unit).trim_end().to_string(),
                    None => r.found.clone(),
                };
                let ratio = match (r.ratio, r.vs_baseline) {
                    (Some(x), Some(b)) => format!("{x:.2} (baseline {b:.2})"),
                    (Some(x), None) => format!("{x:.2}"),
                    (None, Some(b)) => format!("baseline {b:.2}"),
                    (None, None) => "-".into(),
                };
                vec![
                    r.label(),
                    r.node.clone(),
                    measured,
                    expected(r),
                    ratio,
                    r.status.name().to_string(),
                    r.fix.clone(),
                ]
            })
            .collect();
        let mut s = table(&["step", "node", "measured", "expected", "ratio", "status", "fix"], rows);
        s.push('\n');
        if let Some(v) = &self.verdict {
            s.push_str(&format!("qbench check: {} in {:.0} s\n", v.summary, self.elapsed_s));
            if let Some(init) = &self.init {
                s.push_str(&format!("qbench check: {init}\n"));
            }
        } else if !self.header.complete {
            s.push_str(&format!("qbench check: stopped: {}\n", self.header.stopped.as_deref().unwrap_or("")));
        }
        s
    }

    /// The FAIL rows, then the WARN rows, that `rank` speaks for (its
    /// node's; rows across the job: rank 0's), one line each, in the form Slurm
    /// shows as a drain reason: the node, the step, what was measured and
    /// what was wanted. Then the SKIP rows with why, so that a health check
    /// knows which steps a run did not measure (a lone process measures no
    /// node pairs) and does not lift a drain that such a step put there.
    fn quiet_lines(&self, rank: usize) -> Vec<String> {
        let mine: Vec<&Row> = self.rows_said_by(rank).collect();
        let judged = [Status::Fail, Status::Warn].into_iter().flat_map(|s| mine.iter().filter(move |r| r.status == s));
        let judged = judged.map(|r| {
            format!("qbench: check {} {} {}: {}; {}", r.status, r.node, r.label(), found_and_wanted(r), r.fix)
        });
        let skipped = mine.iter().filter(|r| r.status == Status::Skip);
        judged.chain(skipped.map(|r| format!("qbench: check SKIP {} {}: {}", r.node, r.label(), r.found))).collect()
    }
}

/// "1963.5 GB/s, wanted ≥ 3733.2": the bound the row missed (or came near),
/// else the baseline it fell behind, else what was found.
fn found_and_wanted(r: &Row) -> String {
    let u = &r.unit;
    let Some(m) = r.measured else { return r.found.clone() };
    // Within the warn band of a bound (5%) or beyond it.
    match (r.floor, r.ceiling, r.baseline, r.vs_baseline) {
        (Some(f), _, _, _) if m <= f * 1.05 => format!("{} {u}, wanted ≥ {} {u}", figure(m), figure(f)),
        (None, Some(c), _, _) if m >= c * 0.95 => format!("{} {u}, wanted ≤ {} {u}", figure(m), figure(c)),
        (_, _, Some(b), Some(vs)) => format!("{} {u}, {vs:.2}× the baseline's {} {u}", figure(m), figure(b)),
        _ => format!("{} {u}", figure(m)),
    }
}

/// The status' code for Prometheus, as [`STATUS`] says.
fn code(s: Status) -> u8 {
    match s {
        Status::Pass => 0,
        Status::Warn => 1,
        Status::Fail => 2,
        Status::Skip => 3,
    }
}

/// Prometheus' HELP of the status: which code is which.
const STATUS: &str = "each step's status on its node: 0 PASS, 1 WARN, 2 FAIL, 3 SKIP (not measured)";

impl Rows for CheckRun {
    const KIND: &'static str = crate::record::check::KIND;

    /// One row per step and node (and place, for a step measured per GPU).
    fn rows(&self) -> Vec<Vec<Cell>> {
        let rows = self.rows.iter().map(|r| {
            vec![
                Cell::key("step", r.step.as_str()),
                Cell::key("place", r.place.as_deref().unwrap_or("")),
                Cell::key("node", r.node.as_str()),
                Cell::key("kind", r.kind.as_str()),
                Cell::figure("measured", r.measured)
                    .help("each step's measured figure on its node (the median of its samples), in its unit"),
                Cell::key("unit", r.unit.as_str()),
                Cell::figure("expected", r.expected),
                Cell::figure("floor", r.floor),
                Cell::figure("ceiling", r.ceiling),
                Cell::figure("ratio", r.ratio),
                Cell::figure("vs_baseline", r.vs_baseline),
                Cell::state("status", r.status.name(), code(r.status), STATUS),
                Cell::note("found", r.found.as_str()),
                Cell::note("fix", r.fix.as_str()),
            ]
        });
        rows.collect()
    }

    /// Each node's verdict, as its processes exit (once the run settled
    /// it), and the check's wall time.
    fn summary(&self) -> Vec<Vec<Cell>> {
        let mut rows: Vec<Vec<Cell>> = Vec::new();
        if self.verdict.is_some() {
            rows.extend(self.nodes.iter().map(|n| {
                let rank = self.rank_nodes.iter().position(|m| m == n).unwrap_or(0);
                vec![
                    Cell::key("node", n.as_str()),
                    Cell::figure("ready", u32::from(self.verdict(rank).is_ok()))
                        .help("1 when the node is ready (no FAIL of its own or across the job), 0 when it is not"),
                ]
            }));
        }
        rows.push(vec![Cell::figure("elapsed_seconds", self.elapsed_s).help("the check's wall time, in seconds")]);
        rows
    }
}
