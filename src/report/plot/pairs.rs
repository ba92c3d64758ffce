//! A pairwise pass as heat maps: the GB/s of every pair measured, node by
//! node in rack order with each node's rack in its name, or rack by rack
//! (the median of the pairs between them) where the nodes are too many to
//! read; a cell left empty was not measured, one at 0 got no answer.

use super::figure::{Chart, Heat, Panel};
use crate::record::check::{CheckRun, PairPass};

/// Past this many nodes (or racks) a map would be unreadable.
const MOST: usize = 16;

/// The pass's maps of `run` (none where it holds no pass).
pub fn panels(run: &CheckRun, who: &str) -> Vec<Panel> {
    let passes = run.rows.iter().filter_map(|r| r.pairs.as_deref().map(|p| (r, p)));
    passes
        .map(|(row, pass)| {
            let name = |n: usize| run.rank_nodes.get(n).cloned().unwrap_or_else(|| format!("rank {n}"));
            let (heat, what) = match by_node(pass, &name) {
                Some(h) => (h, "each pair measured, nodes in rack order".to_string()),
                None => by_rack(pass),
            };
            Panel { title: format!("{who}{}: GB/s of {what}", row.step), chart: Chart::Heat(heat) }
        })
        .collect()
}

/// Each pair's figure: the second pass's where it was measured again, 0
/// where it got no answer.
fn figure_of(pass: &PairPass, a: usize, b: usize) -> Option<f64> {
    let key = (a.min(b), a.max(b));
    let measured = pass.pairs.iter().filter(|p| (p.a, p.b) == key).max_by_key(|p| p.pass)?;
    Some(measured.gbps.unwrap_or(0.0))
}

/// Every pair once, with its figure as [`figure_of`] gives it.
fn latest(pass: &PairPass) -> Vec<(usize, usize, f64)> {
    let mut keys: Vec<(usize, usize)> = pass.pairs.iter().map(|p| (p.a, p.b)).collect();
    keys.sort_unstable();
    keys.dedup();
    keys.into_iter().filter_map(|(a, b)| Some((a, b, figure_of(pass, a, b)?))).collect()
}

/// Ranks in rack order, each rack's in rank order.
fn by_rack_order(pass: &PairPass) -> Vec<usize> {
    let mut racks: Vec<&String> = Vec::new();
    for r in &pass.racks {
        if !racks.contains(&r) {
            racks.push(r);
        }
    }
    racks.iter().flat_map(|r| (0..pass.racks.len()).filter(move |&n| &pass.racks[n] == *r)).collect()
}

/// Node by node; None past [`MOST`] nodes.
fn by_node(pass: &PairPass, name: &dyn Fn(usize) -> String) -> Option<Heat> {
    let order = by_rack_order(pass);
    if order.len() > MOST {
        return None;
    }
    let racked = pass.racks.iter().any(|r| !r.is_empty());
    let label = |n: usize| if racked { format!("{} ({})", name(n), pass.racks[n]) } else { name(n) };
    let labels: Vec<String> = order.iter().map(|&n| label(n)).collect();
    let of_rack = if racked { " (rack)" } else { "" };
    Some(Heat {
        rows_title: format!("node{of_rack}"),
        rows: labels.clone(),
        columns_title: format!("partner{of_rack}"),
        columns: labels,
        cells: order.iter().map(|&a| order.iter().map(|&b| figure_of(pass, a, b)).collect()).collect(),
        unit: "GB/s".into(),
    })
}

/// Rack by rack, the median of the pairs between two racks (within one on
/// the diagonal); past [`MOST`] racks, the racks whose pairs leaving them
/// are slowest. Also the words for the title.
fn by_rack(pass: &PairPass) -> (Heat, String) {
    let mut racks: Vec<String> = Vec::new();
    for r in &pass.racks {
        if !racks.contains(r) {
            racks.push(r.clone());
        }
    }
    let pairs = latest(pass);
    let rack = |n: usize| pass.racks[n].as_str();
    let median = |v: Vec<f64>| (!v.is_empty()).then(|| crate::stats::Summary::of(&v).median);
    let between = |x: &str, y: &str| {
        let of = |&&(a, b, _): &&(usize, usize, f64)| (rack(a), rack(b)) == (x, y) || (rack(a), rack(b)) == (y, x);
        median(pairs.iter().filter(of).map(|p| p.2).collect())
    };
    let total = racks.len();
    let mut what = "the pairs between racks (median)".to_string();
    if total > MOST {
        let leaving = |r: &String| {
            let out = pairs.iter().filter(|&&(a, b, _)| (rack(a) == r) != (rack(b) == r));
            median(out.map(|p| p.2).collect()).unwrap_or(f64::INFINITY)
        };
        racks.sort_by(|x, y| leaving(x).total_cmp(&leaving(y)));
        racks.truncate(MOST);
        what = format!("{what}, the {MOST} of {total} racks slowest leaving them");
    }
    let cells = racks.iter().map(|x| racks.iter().map(|y| between(x, y)).collect()).collect();
    let heat = Heat {
        rows_title: "rack".into(),
        rows: racks.clone(),
        columns_title: "rack".into(),
        columns: racks,
        cells,
        unit: "GB/s".into(),
    };
    (heat, what)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::check::Pair;

    fn pass(racks: &[&str], pairs: &[(usize, usize, u8, Option<f64>)]) -> PairPass {
        PairPass {
            racks: racks.iter().map(|r| r.to_string()).collect(),
            within_gbps: Some(1.0),
            across_gbps: Some(1.0),
            slow_below: 0.5,
            rounds: [2, 1],
            pairs: pairs.iter().map(|&(a, b, pass, gbps)| Pair { a, b, pass, round: 0, gbps }).collect(),
        }
    }

    #[test]
    fn nodes_are_drawn_in_rack_order_with_their_racks_and_the_last_figure() {
        let p = pass(&["r2", "r1", "r2", "r1"], &[(0, 2, 1, Some(1.0)), (1, 3, 1, Some(0.1)), (1, 3, 2, Some(0.2)), (0, 1, 1, None)]);
        let name = |n: usize| format!("qn{n}");
        let h = by_node(&p, &name).unwrap();
        assert_eq!(h.rows, ["qn0 (r2)", "qn2 (r2)", "qn1 (r1)", "qn3 (r1)"]);
        assert_eq!(h.cells[0], [None, Some(1.0), Some(0.0), None]);
        assert_eq!(h.cells[2][3], Some(0.2), "the second pass's figure");
        let (racks, what) = by_rack(&p);
        assert_eq!((racks.rows.clone(), what.as_str()), (vec!["r2".to_string(), "r1".into()], "the pairs between racks (median)"));
        assert_eq!(racks.cells, [[Some(1.0), Some(0.0)], [Some(0.0), Some(0.2)]]);
    }
}
