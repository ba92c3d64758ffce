//! The plan held against measurement on host ranks: a plan made from a
//! record of one rank (a sweep of sizes, so that the per-step costs show
//! beside the bandwidths) against the same circuits measured on 1, 2 and 4
//! ranks (threads), small registers where the latencies dominate included.
//! Alone in its test binary, so that no other test shares the cores while
//! it times; each figure is a median of rounds. Only counts this machine's
//! cores can run side by side are held: past them the ranks take turns and
//! the run measures the scheduler (qbench says so when it runs them).

mod common;

use serde_json::Value;

/// How far a projection may be from its measurement, as a factor either way.
/// On a 2-core machine the one-rank record the plan is made from and the
/// 10 ms circuits measured move by tens of percent from run to run (12 runs:
/// ratios 0.72 to 1.53, QFT on 16 qubits the highest); the errors this test
/// is for were ×1.44 on a run's own size and ×78 on small registers.
const TOLERANCE: f64 = 1.75;

fn run(args: &[&str]) -> Value {
    let o = common::qbench(args);
    assert!(o.status.success(), "{args:?}: {}", common::stderr(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn a_plan_from_one_rank_meets_the_runs_on_two_and_four() {
    let dir = std::env::temp_dir().join(format!("qbench-plan-cpu-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let one = dir.join("one.json");
    let common_args = ["--transport", "cpu", "--circuit", "qft,random:60", "--schedule", "quest", "--rounds", "5"];
    let o = common::qbench(
        &[&["exchange", "--qubits", "10..18", "-g", "1", "-n", "10", "-J", one.to_str().unwrap()][..], &common_args]
            .concat(),
    );
    assert!(o.status.success(), "{}", common::stderr(&o));
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let counts: Vec<&str> = ["2", "4"].into_iter().filter(|g| g.parse::<usize>().unwrap() <= cores).collect();
    if counts.is_empty() {
        eprintln!("one core: no count of ranks runs side by side, nothing to hold the plan against");
        return;
    }
    let counts = counts.join(",");
    let mut cells = Vec::new();
    for q in ["12", "16"] {
        let measured =
            run(&[&["exchange", "--qubits", q, "-g", &counts, "-n", "10", "--json"][..], &common_args].concat());
        let plan = run(&[
            "exchange",
            "--plan",
            "--from",
            one.to_str().unwrap(),
            "--qubits",
            q,
            "-g",
            &counts,
            "--transport",
            "cpu",
            "--schedule",
            "quest",
            "--json",
        ]);
        for f in plan["forecasts"].as_array().unwrap() {
            let ranks = f["gpus"].as_u64().unwrap();
            let m = measured["registers"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|r| r["ranks"].as_u64() == Some(ranks))
                .flat_map(|r| r["circuits"].as_array().unwrap().iter())
                .find(|c| c["circuit"] == f["circuit"])
                .unwrap_or_else(|| panic!("{f}"));
            let (p, m) = (f["projected_s"].as_f64().unwrap(), m["time"]["median"].as_f64().unwrap());
            cells.push(format!(
                "{}({q}) on {ranks}: projected {p:.5} s, measured {m:.5} s, ratio {:.2}",
                f["circuit"],
                p / m
            ));
            assert!(p / m < TOLERANCE && m / p < TOLERANCE, "{}", cells.join("\n"));
        }
    }
    assert_eq!(cells.len(), 2 * 2 * counts.split(',').count(), "{}", cells.join("\n"));
    eprintln!("{}", cells.join("\n"));
    std::fs::remove_dir_all(dir).unwrap();
}
