//! `qbench plot` as a user runs it: every committed record of the GPU
//! machines' runs (results/h200x2/, results/h200/) drawn, the SVG parsed back (axis titles, a legend entry per run), runs
//! overlaid, the floor of a held run dashed, check steps coloured by their
//! status, PNG, and bad input refused in one line with exit 2.

mod common;

use common::{BIN, qbench};
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A fresh directory for one test's pictures.
fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("qbench-plot-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Plots `files` to `out`; the run must succeed and say what it drew.
fn plot(files: &[&Path], out: &Path, extra: &[&str]) -> String {
    let mut args: Vec<&str> = vec!["plot"];
    args.extend(files.iter().map(|f| f.to_str().unwrap()));
    args.extend(["-o", out.to_str().unwrap()]);
    args.extend(extra);
    let o = qbench(&args);
    assert!(o.status.success(), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The text of every <text> element of the SVG at `path`, which must parse.
fn svg_texts(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap();
    let doc = roxmltree::Document::parse(&text).unwrap_or_else(|e| panic!("{}: not XML: {e}", path.display()));
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    doc.descendants()
        .filter(|n| n.has_tag_name("text"))
        .map(|n| n.text().unwrap_or("").trim().to_string())
        .filter(|t| !t.is_empty())
        .collect()
}

fn has(texts: &[String], want: &str) -> bool {
    texts.iter().any(|t| t.contains(want))
}

/// The files under `dir`, its folders' included.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .flat_map(|p| if p.is_dir() { files_under(&p) } else { vec![p] })
        .collect()
}

/// The GPU machines' committed JSON files that are qbench records, with their kind.
fn records() -> Vec<(PathBuf, String)> {
    let mut v: Vec<(PathBuf, String)> = ["results/h200x2", "results/h200"]
        .iter()
        .flat_map(|d| files_under(&root().join(d)))
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .filter_map(|p| {
            let r = qbench::record::read(&p).ok()?;
            let kind = r.header().kind_and_version()?.0.to_string();
            Some((p, kind))
        })
        .collect();
    v.sort();
    v
}

#[test]
fn every_committed_record_plots_as_svg_with_its_axes_and_runs() {
    let dir = scratch("all");
    let all = records();
    assert!(all.len() >= 20, "{all:?}");
    for (path, kind) in &all {
        let out = dir.join(path.file_stem().unwrap()).with_extension("svg");
        let said = plot(&[path], &out, &[]);
        assert!(said.contains("series"), "{said}");
        let texts = svg_texts(&out);
        let header = qbench::record::read(path).unwrap().header().clone();
        let name = path.display();
        // The run's legend (or, for heat maps, its panel titles) names its host and day.
        assert!(has(&texts, &format!("{} {}", header.host, &header.start_time[..10])), "{name}: {texts:?}");
        let (x, y): (&[&str], &[&str]) = match kind.as_str() {
            "collective" => (&["message size (bytes; K, M, G binary)"], &["bus bandwidth (GB/s)"]),
            "compare" => (&["transport"], &["bandwidth per direction (GB/s)"]),
            // A plan alone draws its circuits' times against the GPU count.
            "exchange" => (
                &["transport (wire)", "register size (qubits)", "GPUs (ranks)"],
                &["bandwidth per direction (GB/s)", "circuit time (s)"],
            ),
            "copy" => (&["GPU", "copy size (bytes; K, M binary)"], &[""]),
            "check" => (&["measured / expected"], &["step"]),
            other => panic!("{name}: a {other} record: add its axes here"),
        };
        assert!(x.iter().any(|t| texts.iter().any(|s| s == t)), "{name}: no x axis title {x:?} in {texts:?}");
        assert!(y.iter().any(|y| has(&texts, y)), "{name}: no y axis title {y:?} in {texts:?}");
    }
}

#[test]
fn collective_sweeps_overlay_with_a_line_per_run_and_placement() {
    let dir = scratch("overlay");
    let files: Vec<PathBuf> = [
        "h200x2/h200x2-allreduce-16M-1G",
        "h200x2/h200x2-mpi-np2-allreduce-16M-1G",
        "h200/verify/h200-allreduce-16M-1G",
    ]
    .iter()
    .map(|f| root().join("results").join(format!("{f}.json")))
    .collect();
    let refs: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    let out = dir.join("overlay.svg");
    let said = plot(&refs, &out, &["--metric", "time", "--title", "allreduce, one and two H200"]);
    assert!(said.contains("6 series in 1 panel"), "{said}");
    let texts = svg_texts(&out);
    for label in [
        "vm 2026-11-30 nccl, 2 ranks, out-of-place",
        "vm 2026-11-30 nccl, 2 ranks, in-place",
        "vm 2026-11-30 nccl, 2 ranks, 2 processes, out-of-place",
        "vm 2026-12-01 nccl, 1 rank, out-of-place",
    ] {
        assert!(texts.iter().any(|t| t == label), "no legend entry {label}: {texts:?}");
    }
    assert!(texts.iter().any(|t| t == "allreduce, one and two H200"));
    assert!(texts.iter().any(|t| t == "time per operation (µs)"), "{texts:?}");
    // Sizes in binary units along the axis.
    for tick in ["16M", "256M", "1G"] {
        assert!(texts.iter().any(|t| t == tick), "no tick {tick}: {texts:?}");
    }
}

#[test]
fn a_sweep_of_a_hundred_thousand_sizes_plots_in_seconds() {
    let dir = scratch("many-sizes");
    let text = std::fs::read_to_string(root().join("results/h200/verify/h200-allreduce-16M-1G.json")).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let row = v["results"][0].clone();
    let rows: Vec<serde_json::Value> = (1..=100_000u64)
        .map(|i| {
            let mut r = row.clone();
            r["size"] = (8 * i).into();
            r
        })
        .collect();
    v["results"] = rows.into();
    let record = dir.join("sweep.json");
    std::fs::write(&record, serde_json::to_vec(&v).unwrap()).unwrap();
    let start = std::time::Instant::now();
    let said = plot(&[&record], &dir.join("sweep.svg"), &[]);
    // Grouping rows by size pairwise took 27 s here; in one pass, under 2.
    assert!(start.elapsed().as_secs() < 12, "{:?} for 100,000 sizes", start.elapsed());
    assert!(said.contains("2 series"), "{said}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn compare_runs_get_a_bar_series_each_and_the_sendrecv_reference() {
    let dir = scratch("compare");
    let original = root().join("results/h200x2/h200x2-compare-1G.json");
    let other = dir.join("other-node.json");
    let text = std::fs::read_to_string(&original).unwrap().replacen("\"host\": \"vm\"", "\"host\": \"node2\"", 1);
    std::fs::write(&other, text).unwrap();
    let out = dir.join("compare.svg");
    let said = plot(&[&original, &other], &out, &[]);
    assert!(said.contains("2 series"), "{said}");
    let texts = svg_texts(&out);
    assert!(has(&texts, "vm 2026-11-30 2× NVIDIA H200"), "{texts:?}");
    assert!(has(&texts, "node2 2026-11-30 2× NVIDIA H200"), "{texts:?}");
    assert!(has(&texts, "nccl-tests sendrecv"), "{texts:?}");
    for wire in ["nccl", "p2p", "p2p-ce", "host", "host-unpipelined"] {
        assert!(texts.iter().any(|t| t == wire), "no group {wire}: {texts:?}");
    }
    assert!(texts.iter().any(|t| t == "not run"), "rdma did not run: {texts:?}");
}

#[test]
fn exchange_and_copy_draw_references_heat_maps_and_latency() {
    let dir = scratch("kinds");
    let ex = dir.join("ex.svg");
    plot(&[&root().join("results/h200x2/h200x2-exchange-33q-double.json")], &ex, &[]);
    let texts = svg_texts(&ex);
    for r in ["host link", "nccl-tests sendrecv", "local copy"] {
        assert!(has(&texts, r), "no reference {r}: {texts:?}");
    }
    let copy = dir.join("copy.svg");
    let said =
        plot(&[&root().join("results/h200x2/h200x2-copy.json")], &copy, &["--test", "peer_ce_write,latency_h2d"]);
    assert!(said.contains("in 2 panels"), "{said}");
    let texts = svg_texts(&copy);
    assert!(has(&texts, "peer_ce_write"), "{texts:?}");
    assert!(has(&texts, "to (destination GPU)"), "{texts:?}");
    assert!(texts.iter().any(|t| t == "n/a"), "a GPU does not copy to itself: {texts:?}");
    assert!(has(&texts, "time per copy, host clock (µs)"), "{texts:?}");
    for stat in ["min", "median", "p99"] {
        assert!(texts.iter().any(|t| t.ends_with(stat)), "no {stat} line: {texts:?}");
    }
}

#[test]
fn a_run_held_to_a_floor_draws_it() {
    let dir = scratch("floor");
    let json = dir.join("floor.json");
    let o = Command::new(BIN)
        .args(["all_reduce", "--transport", "cpu", "-g", "2", "-b", "1K", "-e", "64K", "-f", "4", "-n", "2", "-J"])
        .arg(&json)
        .env("NCCL_TESTS_MIN_BW", "0.000001")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = dir.join("floor.svg");
    plot(&[&json], &out, &[]);
    let texts = svg_texts(&out);
    assert!(has(&texts, "floor NCCL_TESTS_MIN_BW = 0.000001 GB/s"), "{texts:?}");
}

#[test]
fn png_when_the_name_says_so() {
    let dir = scratch("png");
    let out = dir.join("sweep.PNG");
    plot(&[&root().join("results/h200x2/h200x2-sendrecv-16M-1G.json")], &out, &[]);
    let bytes = std::fs::read(&out).unwrap();
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
    let (w, h) =
        (u32::from_be_bytes(bytes[16..20].try_into().unwrap()), u32::from_be_bytes(bytes[20..24].try_into().unwrap()));
    assert!(w >= 800 && h >= 500, "{w}x{h}");
}

#[test]
fn svg_goes_to_stdout_for_a_dash() {
    let o = qbench(&["plot", root().join("results/h200x2/h200x2-compare-1G.json").to_str().unwrap(), "-o", "-"]);
    assert!(o.status.success());
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(roxmltree::Document::parse(&text).is_ok());
}

fn refused(args: &[&str], reason: &str) {
    let o = qbench(args);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    assert!(err.starts_with("qbench: ") && err.contains(reason), "{args:?}: {err}");
    assert!(o.stdout.is_empty(), "{args:?}");
}

#[test]
fn other_tools_json_garbage_and_missing_files_are_refused_with_the_reason() {
    let dir = scratch("bad");
    let out = dir.join("never.svg");
    let out = out.to_str().unwrap();
    let results = root().join("results");
    let r = |f: &str| results.join(f).to_str().unwrap().to_string();
    // PyTorch's results, the probe's report, the kernels' bench: JSON, not qbench records.
    refused(&["plot", &r("h200x2/h200x2-torch-copy.json"), "-o", out], "not a qbench record");
    refused(&["plot", &r("h200/kernels/h200-kernels-bench.json"), "-o", out], "not a qbench record");
    refused(&["plot", &r("h200x2/h200x2-probe.json"), "-o", out], "is not a record qbench reads back");
    let garbage = dir.join("garbage.json");
    std::fs::write(&garbage, b"\x00\x01 not json at all {").unwrap();
    refused(&["plot", garbage.to_str().unwrap(), "-o", out], "not JSON");
    refused(&["plot", dir.join("missing.json").to_str().unwrap(), "-o", out], "cannot read");
    refused(
        &["plot", &r("h200x2/h200x2-allreduce-16M-1G.json"), &r("h200x2/h200x2-copy.json"), "-o", out],
        "plot records of one kind together",
    );
    refused(
        &["plot", &r("h200x2/h200x2-compare-1G.json"), "--metric", "busbw", "-o", out],
        "does not apply to compare",
    );
    refused(&["plot", &r("h200x2/h200x2-compare-1G.json"), "--metric", "fast", "-o", out], "unknown metric");
    refused(&["plot", &r("h200x2/h200x2-compare-1G.json"), "-o", "x.jpg"], "name it .svg or .png");
    refused(&["plot", &r("h200x2/h200x2-copy.json"), "--test", "nonesuch", "-o", out], "nothing to draw");
    assert!(!Path::new(out).exists(), "no picture is written for bad input");
}

#[test]
fn exchange_circuits_draw_measured_lines_and_a_plan_draws_projected_ones() {
    let dir = scratch("circuits");
    let run = dir.join("run.json");
    let o = qbench(&[
        "exchange",
        "--transport",
        "cpu",
        "--qubits",
        "12",
        "-g",
        "1,2",
        "--circuit",
        "qft",
        "-n",
        "1",
        "-w",
        "0",
        "-J",
        run.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let svg = dir.join("run.svg");
    assert!(plot(&[&run], &svg, &[]).contains("in 2 panels"));
    let texts = svg_texts(&svg);
    for want in ["circuits: time against GPUs", "quest over cpu", "swap over cpu", "circuit time (s)", "qft(12)"] {
        assert!(has(&texts, want), "no {want}: {texts:?}");
    }

    let plan = dir.join("plan.json");
    let o = qbench(&[
        "exchange",
        "--plan",
        "--profile",
        "h200x8-ndr",
        "--qubits",
        "34",
        "-g",
        "4,8",
        "--circuit",
        "qft",
        "-J",
        plan.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let svg = dir.join("plan.svg");
    assert!(plot(&[&plan], &svg, &[]).contains("in 1 panel"));
    let texts = svg_texts(&svg);
    assert!(has(&texts, "qft(34) projected"), "{texts:?}");
    assert!(!has(&texts, "bandwidth per direction"), "a plan measured no exchange: {texts:?}");
}

/// The fills draw.rs gives a check step's bar by its status, and its floor tick.
const PASS: &str = "#2CA02C";
const FAIL: &str = "#D62728";
const SKIP: &str = "#A0A0A0";
const TICK: &str = "#1A1A1A";

/// How many rectangles of the SVG at `path` are filled with `colour`.
fn rects(path: &Path, colour: &str) -> usize {
    let text = std::fs::read_to_string(path).unwrap();
    let doc = roxmltree::Document::parse(&text).unwrap();
    doc.descendants().filter(|n| n.has_tag_name("rect") && n.attribute("fill") == Some(colour)).count()
}

/// A committed check record, edited as JSON (so that fields the record
/// gains later ride along), written to `dir`.
fn check_variant(dir: &Path, from: &str, name: &str, edit: impl Fn(&mut serde_json::Value)) -> PathBuf {
    let mut v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(root().join(from)).unwrap()).unwrap();
    edit(&mut v);
    let out = dir.join(name);
    std::fs::write(&out, serde_json::to_string(&v).unwrap()).unwrap();
    out
}

/// The rows of a check record drawn as bars (steps measured against an
/// expected value) with `status`, and how many of those have a floor or ceiling.
fn bars(path: &Path, status: &str) -> (usize, usize) {
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let drawn: Vec<&serde_json::Value> = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["kind"] != "fact" && r["measured"].is_number() && r["expected"].is_number())
        .filter(|r| r["status"] == status)
        .collect();
    let ticked = drawn.iter().filter(|r| r["floor"].is_number() || r["ceiling"].is_number()).count();
    (drawn.len(), ticked)
}

fn set_row(v: &mut serde_json::Value, step: &str, status: &str, measured: serde_json::Value) {
    let rows = v["rows"].as_array_mut().unwrap();
    let row = rows.iter_mut().find(|r| r["step"] == step).unwrap_or_else(|| panic!("no step {step}"));
    row["status"] = status.into();
    row["measured"] = measured;
}

#[test]
fn check_steps_are_coloured_by_status_with_their_floor_ticked() {
    let dir = scratch("check-status");
    let run = check_variant(&dir, "results/h200/check/h200-check-standard.json", "held.json", |v| {
        set_row(v, "host to GPU 1G, pinned", "FAIL", 40.0.into());
        set_row(v, "QFT, 30 qubits double", "SKIP", serde_json::Value::Null);
    });
    let out = dir.join("held.svg");
    plot(&[&run], &out, &[]);
    let (passed, passed_ticked) = bars(&run, "PASS");
    let (failed, failed_ticked) = bars(&run, "FAIL");
    assert!(passed > 0 && failed == 1, "{passed} PASS, {failed} FAIL");
    // A bar per drawn row in its status' colour, and the legend's swatch of each.
    assert_eq!(rects(&out, PASS), passed + 1);
    assert_eq!(rects(&out, FAIL), failed + 1);
    // The SKIP row is words, not a bar.
    assert_eq!(rects(&out, SKIP), 1);
    assert_eq!(rects(&out, TICK), passed_ticked + failed_ticked + 1);
    let texts = svg_texts(&out);
    assert!(texts.iter().any(|t| t == "not measured"), "{texts:?}");
    for want in ["PASS", "WARN", "FAIL", "SKIP", "floor (ceiling for a time)", "expected (1)", "time: lower is better"]
    {
        assert!(texts.iter().any(|t| t == want), "no {want}: {texts:?}");
    }
}

#[test]
fn check_runs_side_by_side_give_each_step_a_mark_per_run() {
    let dir = scratch("check-runs");
    let quick = root().join("results/h200/check/h200-check-quick.json");
    let other =
        check_variant(&dir, "results/h200/check/h200-check-quick.json", "node2.json", |v| v["host"] = "node2".into());
    let out = dir.join("runs.svg");
    assert!(plot(&[&quick, &other], &out, &[]).contains("2 series in 1 panel"));
    let (passed, ticked) = bars(&quick, "PASS");
    assert!(passed > 1 && bars(&quick, "FAIL").0 == 0);
    assert_eq!(rects(&out, PASS), 2 * passed + 1, "two marks per step");
    assert_eq!(rects(&out, TICK), 2 * ticked + 1, "a floor tick per mark");
    let texts = svg_texts(&out);
    for run in ["vm 2026-12-02 h200x1 quick", "node2 2026-12-02 h200x1 quick"] {
        assert!(texts.iter().any(|t| t == run), "no column {run}: {texts:?}");
    }
    // One row per step, named once.
    let step = "host to GPU 1G, pinned (GPU 0)";
    assert_eq!(texts.iter().filter(|t| *t == step).count(), 1, "{texts:?}");
}

#[test]
fn check_steps_without_an_expected_value_are_words() {
    let dir = scratch("check-rxe");
    let out = dir.join("rxe.svg");
    plot(&[&root().join("results/rdma-vm/check-rxe.json")], &out, &[]);
    assert_eq!(rects(&out, PASS), 1, "the legend's swatch alone");
    let texts = svg_texts(&out);
    assert!(texts.iter().any(|t| t.contains("no expected value, floor")), "{texts:?}");
    assert!(texts.iter().any(|t| t.contains("no expected value, ceiling")), "{texts:?}");
}
