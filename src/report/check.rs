//! The readiness table: step, node, measured, expected, ratio, status and
//! the fix, then the one-line verdict; and its rows, a row per step and
//! node, with the verdict per node for Prometheus.

use super::Table;
use super::rows::{Cell, Rows};
use crate::record::check::{CheckRun, Row, Spent, Status, figure};
use crate::record::history::{Flag, History, Trend};
use crate::stats::Summary;

/// A psql-style table with these column names, fitted to the terminal.
fn table(header: &[&str], rows: Vec<Vec<String>>) -> String {
    let t = super::table(header.iter().map(|h| h.to_string()), rows);
    super::fit::table(t, crate::ui::terminal_width()).to_string()
}

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
        let text = format!(
            "# qbench check: profile {} ({}), level {} ({} s)\n# expected values, {}: {}\n# nodes: {}\n",
            self.profile,
            self.profile_from,
            self.level,
            self.budget_s,
            if self.measured_here { "measured on such a machine" } else { "not measured here" },
            self.source,
            self.nodes.join(", ")
        );
        super::fit::lines(&text, crate::ui::terminal_width())
    }

    /// The rows come together, in the tail, as one table.
    fn part(&self, _: &Row) -> String {
        String::new()
    }

    /// The table, where the time went, the verdict and, under it, the
    /// steps not measured, a line per reason: a SKIP row's measured cell
    /// says only "-", so that a reason never widens the table.
    fn tail(&self) -> String {
        let width = crate::ui::terminal_width();
        let rows = self.rows.iter().map(cells).collect();
        let mut s = table(&["step", "node", "measured", "expected", "ratio", "status", "fix"], rows);
        s.push('\n');
        if !self.spent.is_empty() {
            s.push('\n');
            s.push_str(&spent(&self.spent));
            s.push('\n');
        }
        let mut said = Vec::new();
        if let Some(v) = &self.verdict {
            said.push(format!("qbench check: {} in {:.0} s", v.summary, self.elapsed_s));
            said.extend(skipped(self));
            if let Some(init) = &self.init {
                said.push(format!("qbench check: {init}"));
            }
        } else if !self.header.complete {
            said.push(format!("qbench check: stopped: {}", self.header.stopped.as_deref().unwrap_or("")));
            said.extend(skipped(self));
        }
        for line in said {
            s.push_str(&super::fit::lines(&line, width));
            s.push('\n');
        }
        s
    }

    /// The FAIL rows, then the WARN rows, that `rank` speaks for (its
    /// node's; rows across the job: rank 0's), one line each, in the form Slurm
    /// shows as a drain reason: the node, the step, what was measured and
    /// what was wanted. Then the SKIP rows with why, so that a health check
    /// knows which steps a run did not measure (a lone process measures no
    /// node pairs) and does not lift a drain that such a step put there.
    /// What `--init` wrote comes first.
    fn quiet_lines(&self, rank: usize) -> Vec<String> {
        let mine: Vec<&Row> = self.rows_said_by(rank).collect();
        let judged = [Status::Fail, Status::Warn].into_iter().flat_map(|s| mine.iter().filter(move |r| r.status == s));
        let judged = judged.map(|r| {
            format!("qbench: check {} {} {}: {}; {}", r.status, r.node, r.label(), found_and_wanted(r), r.fix)
        });
        let skipped = mine.iter().filter(|r| r.status == Status::Skip);
        let skipped = skipped.map(|r| format!("qbench: check SKIP {} {}: {}", r.node, r.label(), r.found));
        // What --init wrote, said by the process that wrote it, quiet or not.
        let init = self.init.iter().filter(|_| rank == 0).map(|i| format!("qbench: check: {i}"));
        init.chain(judged).chain(skipped).collect()
    }
}

/// A row of the table: a SKIP's reason is said under it, by [`skipped`].
fn cells(r: &Row) -> Vec<String> {
    let measured = match r.measured {
        Some(m) => format!("{} {}", number(Some(m)), r.unit).trim_end().to_string(),
        None if r.status == Status::Skip => "-".into(),
        None => r.found.clone(),
    };
    let ratio = match (r.ratio, r.vs_baseline) {
        (Some(x), Some(b)) => format!("{x:.2} (baseline {b:.2})"),
        (Some(x), None) => format!("{x:.2}"),
        (None, Some(b)) => format!("baseline {b:.2}"),
        (None, None) => "-".into(),
    };
    vec![r.label(), r.node.clone(), measured, expected(r), ratio, r.status.name().to_string(), r.fix.clone()]
}

/// The steps not measured, a line per reason: "SKIP node pairs, MPI
/// sendrecv 1M: one process: no pair of nodes to test (…)", the nodes
/// named where the run had several.
fn skipped(run: &CheckRun) -> Vec<String> {
    let mut reasons: Vec<(&str, Vec<String>, Vec<&str>)> = Vec::new();
    for r in run.rows.iter().filter(|r| r.status == Status::Skip) {
        let at = match reasons.iter().position(|(why, _, _)| *why == r.found) {
            Some(i) => i,
            None => {
                reasons.push((&r.found, Vec::new(), Vec::new()));
                reasons.len() - 1
            }
        };
        let (_, steps, nodes) = &mut reasons[at];
        if !steps.contains(&r.label()) {
            steps.push(r.label());
        }
        if !nodes.contains(&r.node.as_str()) {
            nodes.push(&r.node);
        }
    }
    let several = run.nodes.len() > 1;
    reasons
        .into_iter()
        .map(|(why, steps, nodes)| {
            let on = if several { format!(" on {}", nodes.join(", ")) } else { String::new() };
            format!("  SKIP {}{on}: {why}", steps.join("; "))
        })
        .collect()
}

/// Where the check's seconds went, a row per step in the order they ran
/// (the start and the facts first): on one node its seconds; over several,
/// the slowest node's, which node, and the median of all.
fn spent(spent: &[Spent]) -> String {
    let mut steps: Vec<(&str, Vec<(&str, f64)>)> = Vec::new();
    for s in spent {
        match steps.iter_mut().find(|(step, _)| *step == s.step) {
            Some((_, nodes)) => nodes.push((&s.node, s.seconds)),
            None => steps.push((&s.step, vec![(&s.node, s.seconds)])),
        }
    }
    let several = steps.iter().any(|(_, nodes)| nodes.len() > 1);
    let rows = steps
        .iter()
        .map(|(step, nodes)| {
            let (node, slowest) = nodes.iter().copied().fold(("", f64::NEG_INFINITY), |a, b| if b.1 > a.1 { b } else { a });
            let mut row = vec![step.to_string(), format!("{slowest:.2}")];
            if several {
                let all: Vec<f64> = nodes.iter().map(|(_, s)| *s).collect();
                row.extend([node.to_string(), format!("{:.2}", Summary::of(&all).median)]);
            }
            row
        })
        .collect();
    let head: &[&str] = if several { &["where the time went", "slowest s", "on", "median s"] } else { &["where the time went", "s"] };
    table(head, rows)
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
    /// it), the check's wall time, and where each node's seconds went.
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
        rows.extend(self.spent.iter().map(|s| {
            vec![
                Cell::key("step", s.step.as_str()),
                Cell::key("node", s.node.as_str()),
                Cell::figure("step_seconds", s.seconds)
                    .help("the seconds each step took on its node, its set-up included; the start and the facts too"),
            ]
        }));
        rows
    }
}

/// `qbench show --history DIR`: the answer first (the trends that drift or
/// fail, one line each), then a table per step with a row per node: its
/// last runs drawn as a sparkline, their least, median and last figures,
/// how much worse it got and its flag.
pub fn history(dir: &str, h: &History, trends: &[Trend]) -> String {
    let runs = h.nodes.iter().map(|(_, r)| r.len()).max().unwrap_or(0);
    let n = h.nodes.len();
    let plural = |k: usize| if k == 1 { "" } else { "s" };
    let mut s = format!("# qbench check history: {dir}, {n} node{}, up to {runs} run{} of each", plural(n), plural(runs));
    if h.unreadable > 0 {
        s.push_str(&format!(" ({} line{} unreadable, skipped)", h.unreadable, plural(h.unreadable)));
    }
    s.push('\n');
    let flagged: Vec<&Trend> = trends.iter().filter(|t| t.flag != Flag::Steady).collect();
    s.push_str(&format!(
        "qbench history: {} of {} trends flagged (a step on a node)\n",
        flagged.len(),
        trends.len()
    ));
    for t in &flagged {
        s.push_str(&format!("qbench history: {} {} {}: {}\n", flag(t.flag), t.node, t.label, said(t)));
    }
    let mut labels: Vec<&str> = Vec::new();
    for t in trends {
        if !labels.contains(&t.label.as_str()) {
            labels.push(&t.label);
        }
    }
    for label in labels {
        let of: Vec<&Trend> = trends.iter().filter(|t| t.label == label).collect();
        let t0 = of[0];
        let unit = if t0.unit.is_empty() { String::new() } else { format!(", {}", t0.unit) };
        s.push_str(&format!("\n{label}{unit}, drift beyond {} flagged\n", percent(t0.tolerance.warn)));
        let rows = of
            .iter()
            .map(|t| {
                let all = Summary::of(&t.values);
                vec![
                    t.node.clone(),
                    sparkline(&t.values, t.tolerance.fail),
                    figure(all.min),
                    figure(all.median),
                    t.values.last().map_or_else(|| "-".into(), |v| figure(*v)),
                    t.worse.map_or_else(|| "-".into(), percent),
                    flag(t.flag).to_string(),
                ]
            })
            .collect();
        s.push_str(&table(&["node", "runs", "min", "median", "last", "worse", "flag"], rows));
        s.push('\n');
    }
    s
}

fn flag(f: Flag) -> &'static str {
    match f {
        Flag::Steady => "",
        Flag::Drift => "DRIFT",
        Flag::Fail => "FAIL",
    }
}

/// A flagged trend in words: "18% worse over 10 runs (its tolerance 5%), last 44.1 GB/s".
fn said(t: &Trend) -> String {
    let last = t.values.last().map_or_else(|| "-".into(), |v| format!("{} {}", figure(*v), t.unit));
    let worse = t.worse.map_or_else(String::new, |w| {
        format!("{} worse over {} runs (its tolerance {}), ", percent(w), t.values.len(), percent(t.tolerance.warn))
    });
    let what = if t.flag == Flag::Fail { "its last run failed, " } else { "" };
    format!("{what}{worse}last {}", last.trim_end())
}

fn percent(x: f64) -> String {
    format!("{:.0}%", x * 100.0)
}

/// Figures as eighth-blocks between their least and greatest; a spread
/// narrower than twice `fail` of their median is drawn as that much, so
/// that noise well within the tolerance stays near one height.
fn sparkline(values: &[f64], fail: f64) -> String {
    const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let all = Summary::of(values);
    let least = (2.0 * fail * all.median).abs();
    let (lo, span) = if all.max - all.min >= least { (all.min, all.max - all.min) } else { (all.median - least / 2.0, least) };
    values
        .iter()
        .map(|v| {
            let at = if span > 0.0 { ((v - lo) / span * 7.0).round() } else { 3.0 };
            BARS[at.clamp(0.0, 7.0) as usize]
        })
        .collect()
}
