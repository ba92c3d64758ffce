//! `--prometheus` files read as node_exporter's textfile collector reads
//! them: a strict parser of the text exposition format (0.0.4) holds the
//! files exported from every committed record, and from a cpu check run,
//! to its rules (HELP and TYPE once per family, before its samples, which
//! follow each other; metric and label names; escaped label values; Go's
//! float syntax; no series twice); and the figures in them are the
//! record's.

mod common;

use common::{BIN, stderr};
use qbench::record::{self, AnyRecord};
use qbench::report::export::Format;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// One family: its HELP (unescaped) and its samples, each its labels in
/// order and its value.
#[derive(Debug)]
struct Family {
    name: String,
    help: String,
    samples: Vec<(Vec<(String, String)>, f64)>,
}

impl Family {
    /// The value of the sample whose labels include every one of `with`.
    fn value(&self, with: &[(&str, &str)]) -> Option<f64> {
        let has = |labels: &[(String, String)]| with.iter().all(|(k, v)| labels.iter().any(|(l, w)| l == k && w == v));
        let mut found = self.samples.iter().filter(|(l, _)| has(l));
        let (_, v) = found.next()?;
        assert!(found.next().is_none(), "{}: {with:?} names more than one sample", self.name);
        Some(*v)
    }
}

fn metric_name(s: &str) -> bool {
    let mut c = s.chars();
    c.next().is_some_and(|f| f.is_ascii_alphabetic() || f == '_' || f == ':')
        && c.all(|x| x.is_ascii_alphanumeric() || x == '_' || x == ':')
}

fn label_name(s: &str) -> bool {
    let mut c = s.chars();
    !s.starts_with("__")
        && c.next().is_some_and(|f| f.is_ascii_alphabetic() || f == '_')
        && c.all(|x| x.is_ascii_alphanumeric() || x == '_')
}

/// Go's ParseFloat as the format reads values: NaN, ±Inf, or a decimal
/// number with an optional exponent.
fn float(s: &str) -> Result<f64, String> {
    match s {
        "NaN" => return Ok(f64::NAN),
        "+Inf" => return Ok(f64::INFINITY),
        "-Inf" => return Ok(f64::NEG_INFINITY),
        _ => {}
    }
    let body = s.strip_prefix(['-', '+']).unwrap_or(s);
    let (mantissa, exponent) = body.split_once(['e', 'E']).unwrap_or((body, "0"));
    let exponent = exponent.strip_prefix(['-', '+']).unwrap_or(exponent);
    let digits = |t: &str| t.chars().all(|c| c.is_ascii_digit());
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let ok =
        digits(int) && digits(frac) && !(int.is_empty() && frac.is_empty()) && !exponent.is_empty() && digits(exponent);
    if !ok {
        return Err(format!("{s:?} is not a number"));
    }
    s.parse().map_err(|e| format!("{s:?}: {e}"))
}

/// Unescapes `s` where a backslash may only precede the characters of
/// `escapes` (as `(written, meant)`).
fn unescape(s: &str, escapes: &[(char, char)]) -> Result<String, String> {
    let mut out = String::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let next = chars.next().ok_or("a backslash at the end")?;
        let meant = escapes.iter().find(|(w, _)| *w == next).ok_or(format!("\\{next} is not an escape"))?;
        out.push(meant.1);
    }
    Ok(out)
}

/// `{a="x",b="y"} 1.5` after the metric name: the labels and the value.
fn labels_and_value(rest: &str) -> Result<(Vec<(String, String)>, f64), String> {
    let mut labels: Vec<(String, String)> = Vec::new();
    let mut rest = rest;
    if let Some(inner) = rest.strip_prefix('{') {
        rest = inner;
        loop {
            if let Some(after) = rest.strip_prefix('}') {
                rest = after;
                break;
            }
            let (name, after) = rest.split_once("=\"").ok_or(format!("no label at {rest:?}"))?;
            if !label_name(name) || labels.iter().any(|(n, _)| n == name) {
                return Err(format!("label {name:?}: not a label name, or given twice"));
            }
            // The value ends at the first quote not escaped.
            let mut end = None;
            let mut escaped = false;
            for (i, c) in after.char_indices() {
                match (escaped, c) {
                    (false, '\\') => escaped = true,
                    (false, '"') => {
                        end = Some(i);
                        break;
                    }
                    (false, '\n') => return Err("a newline in a label value".into()),
                    _ => escaped = false,
                }
            }
            let end = end.ok_or("a label value without its closing quote")?;
            labels.push((name.to_string(), unescape(&after[..end], &[('\\', '\\'), ('"', '"'), ('n', '\n')])?));
            rest = &after[end + 1..];
            rest = rest.strip_prefix(',').unwrap_or(rest);
        }
    }
    let value = rest.strip_prefix(' ').ok_or(format!("no space before the value: {rest:?}"))?;
    if value.contains(' ') {
        return Err(format!("{value:?}: a timestamp or more after the value"));
    }
    Ok((labels, float(value)?))
}

/// The families of an exposition, held to the format's rules.
fn parse(text: &str) -> Result<Vec<Family>, String> {
    if !text.ends_with('\n') || text.contains('\r') {
        return Err("the text does not end with a newline, or holds a carriage return".into());
    }
    let mut families: Vec<Family> = Vec::new();
    let mut series: HashSet<String> = HashSet::new();
    let mut typed = false;
    for (n, line) in text.lines().enumerate() {
        let at = |e: String| format!("line {}: {e}: {line:?}", n + 1);
        if let Some(help) = line.strip_prefix("# HELP ") {
            let (name, help) = help.split_once(' ').ok_or_else(|| at("HELP without text".into()))?;
            if !metric_name(name) || families.iter().any(|f| f.name == name) {
                return Err(at("not a metric name, or a family given twice".into()));
            }
            if families.last().is_some_and(|f| f.samples.is_empty()) {
                return Err(at("the family before has no samples".into()));
            }
            let help = unescape(help, &[('\\', '\\'), ('n', '\n')]).map_err(at)?;
            families.push(Family { name: name.to_string(), help, samples: Vec::new() });
            typed = false;
        } else if let Some(ty) = line.strip_prefix("# TYPE ") {
            let last = families.last().filter(|f| f.samples.is_empty() && !typed);
            if last.is_none_or(|f| ty != format!("{} gauge", f.name)) {
                return Err(at("a TYPE not right after its family's HELP, or not a gauge".into()));
            }
            typed = true;
        } else if line.is_empty() || line.starts_with('#') {
            return Err(at("an empty line or another comment".into()));
        } else {
            let f = families.last_mut().filter(|_| typed).ok_or_else(|| at("a sample before HELP and TYPE".into()))?;
            let rest = line.strip_prefix(f.name.as_str()).ok_or_else(|| at(format!("not a sample of {}", f.name)))?;
            let (labels, value) = labels_and_value(rest).map_err(at)?;
            let mut key: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v:?}")).collect();
            key.sort();
            if !series.insert(format!("{}{{{}}}", f.name, key.join(","))) {
                return Err(at("a series given twice".into()));
            }
            f.samples.push((labels, value));
        }
    }
    if families.last().is_none_or(|f| f.samples.is_empty()) {
        return Err("no families, or the last has no samples".into());
    }
    Ok(families)
}

fn family<'a>(families: &'a [Family], name: &str) -> &'a Family {
    families.iter().find(|f| f.name == name).unwrap_or_else(|| panic!("no family {name}"))
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn prometheus(record: &AnyRecord) -> String {
    String::from_utf8(Format::Prometheus.exporter().export(qbench::report::exported(record)).unwrap()).unwrap()
}

/// The exposition of a committed record, parsed.
fn exported(path: &str) -> (AnyRecord, Vec<Family>) {
    let rec = record::read(&root().join(path)).unwrap();
    let text = prometheus(&rec);
    let families = parse(&text).unwrap_or_else(|e| panic!("{path}: {e}\n{text}"));
    (rec, families)
}

/// The parser refuses what the format does not allow.
#[test]
fn the_parser_is_strict() {
    let good = "# HELP a_b what \\\\ is\n# TYPE a_b gauge\na_b{x=\"1\\\"\\n\",y=\"\"} 1.5e3\na_b 2\n";
    assert_eq!(parse(good).unwrap()[0].samples.len(), 2);
    assert_eq!(parse(good).unwrap()[0].help, "what \\ is");
    for bad in [
        "# TYPE a gauge\na 1\n",
        "# HELP a x\na 1\n",
        "# HELP a x\n# TYPE a counter\na 1\n",
        "# HELP a x\n# TYPE a gauge\na 1\na 1\n",
        "# HELP a x\n# TYPE a gauge\na{y=\"1\",x=\"2\"} 1\na{x=\"2\",y=\"1\"} 3\n",
        "# HELP a x\n# TYPE a gauge\na{x=\"\\t\"} 1\n",
        "# HELP a x\n# TYPE a gauge\na{x=\"1\",x=\"2\"} 1\n",
        "# HELP a x\n# TYPE a gauge\na{1x=\"1\"} 1\n",
        "# HELP a x\n# TYPE a gauge\na{__x=\"1\"} 1\n",
        "# HELP a x\n# TYPE a gauge\na inf\n",
        "# HELP a x\n# TYPE a gauge\na 1 1700000000\n",
        "# HELP a x\n# TYPE a gauge\nb 1\n",
        "# HELP 1a x\n# TYPE 1a gauge\n1a 1\n",
        "# HELP a x\n# TYPE a gauge\na 1\n# HELP b y\n# TYPE b gauge\nb 1\n# HELP a x\n# TYPE a gauge\na{x=\"1\"} 1\n",
        "# HELP a x\n# TYPE a gauge\n\na 1\n",
        "# HELP a x\n# TYPE a gauge\na 1",
    ] {
        assert!(parse(bad).is_err(), "{bad}");
    }
}

/// Every committed record (results/, tests/golden/) exports a file the
/// format allows, with a sample per figure of its rows.
#[test]
fn every_committed_record_exports_as_the_format_allows() {
    let mut files = Vec::new();
    let mut dirs = vec![root().join("results"), root().join("tests/golden")];
    while let Some(d) = dirs.pop() {
        for p in std::fs::read_dir(d).unwrap().map(|e| e.unwrap().path()) {
            match p.extension() {
                None if p.is_dir() => dirs.push(p),
                Some(e) if e == "json" => files.push(p),
                _ => {}
            }
        }
    }
    let mut exported = 0;
    for path in files {
        let Ok(rec) = record::read(&path) else { continue };
        let text = prometheus(&rec);
        let families = parse(&text).unwrap_or_else(|e| panic!("{}: {e}\n{text}", path.display()));
        let kind = rec.header().schema.split('.').nth(1).unwrap().to_string();
        assert!(families.iter().all(|f| f.name.starts_with(&format!("qbench_{kind}_"))), "{}", path.display());
        let complete = family(&families, &format!("qbench_{kind}_complete"));
        assert_eq!(complete.samples[0].1, if rec.header().complete { 1.0 } else { 0.0 });
        exported += 1;
    }
    assert!(exported >= 40, "{exported} records exported");
}

/// The check of four nodes with one slowed: each step's figure, unit and
/// status per node, each node's verdict, the wall time and the end.
#[test]
fn a_check_exports_each_step_each_node_and_each_verdict() {
    let (rec, families) = exported("results/cluster/check-4-nodes-qn3-slowed.json");
    let AnyRecord::Check(run) = &rec else { panic!("not a check") };
    let status = family(&families, "qbench_check_status");
    assert!(status.help.contains("0 PASS, 1 WARN, 2 FAIL, 3 SKIP"), "{}", status.help);
    assert_eq!(status.samples.len(), run.rows.len());
    let step = run.rows[0].step.as_str();
    assert_eq!(status.value(&[("node", "qn3"), ("step", step)]), Some(2.0));
    assert_eq!(status.value(&[("node", "qn1"), ("step", step)]), Some(0.0));
    let measured = family(&families, "qbench_check_measured");
    for r in &run.rows {
        let labels = [("node", r.node.as_str()), ("step", r.step.as_str()), ("unit", r.unit.as_str())];
        assert_eq!(measured.value(&labels), r.measured, "{labels:?}");
    }
    let ready = family(&families, "qbench_check_ready");
    for (node, is) in [("qn1", 1.0), ("qn2", 1.0), ("qn3", 0.0), ("qn4", 1.0)] {
        assert_eq!(ready.value(&[("node", node)]), Some(is), "{node}");
    }
    assert_eq!(family(&families, "qbench_check_elapsed_seconds").samples[0].1, run.elapsed_s);
    // 2026-12-03T08:44:38.091082247Z
    let end = family(&families, "qbench_check_end_timestamp_seconds").samples[0].1;
    assert!((end - 1_796_287_478.0 - 0.091_082_247).abs() < 1e-6, "{end}");

    // A check on one H200 node: every step's status, the node ready.
    let (rec, families) = exported("results/h200/check/h200-check-quick.json");
    let AnyRecord::Check(run) = &rec else { panic!("not a check") };
    assert_eq!(family(&families, "qbench_check_status").samples.len(), run.rows.len());
    let ready = family(&families, "qbench_check_ready");
    assert_eq!(ready.samples.len(), run.nodes.len());
    assert_eq!(ready.value(&[("node", run.nodes[0].as_str())]), Some(1.0));
}

/// A collective's and an exchange's rows: a sample per figure, labelled
/// with what makes the row (size, type, placement; class, qubits, wire).
#[test]
fn a_collective_and_an_exchange_export_their_rows() {
    let (rec, families) = exported("results/h200x2/h200x2-allreduce-16M-1G.json");
    let AnyRecord::Collective(run) = &rec else { panic!("not a collective") };
    let busbw = family(&families, "qbench_collective_busbw_gbps");
    assert_eq!(busbw.samples.len(), 2 * run.results.len());
    let last = run.results.last().unwrap();
    let size = last.size.to_string();
    let in_place = busbw.value(&[("size", size.as_str()), ("placement", "in-place")]);
    assert_eq!(in_place, Some(last.in_place.busbw_gbps));

    let (rec, families) = exported("results/h200/quest/h200-exchange-qft-30q.json");
    let AnyRecord::Exchange(run) = &rec else { panic!("not an exchange") };
    let time = family(&families, "qbench_exchange_time_s");
    let r = &run.registers[0];
    assert_eq!(time.samples.len(), r.classes.len() + r.circuits.len());
    let c = &r.circuits[0];
    let schedule = c.schedule.map_or("-", |s| s.name());
    let labels = [("kind", "circuit"), ("name", c.circuit.as_str()), ("schedule", schedule)];
    let transport = [("transport", c.transport.as_deref().unwrap_or("-"))];
    assert_eq!(time.value(&[&labels[..], &transport].concat()), Some(c.time.median));
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("qbench-prometheus-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `qbench check --profile cpu --prometheus F` writes a file the format
/// allows, the node ready, and nothing beside it.
#[test]
fn a_cpu_check_writes_a_prometheus_file() {
    let dir = scratch("check");
    let file = dir.join("qbench.prom");
    let o = std::process::Command::new(BIN)
        .args(["check", "--profile", "cpu", "--prometheus"])
        .arg(&file)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("CUDA_VISIBLE_DEVICES", "")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&file).unwrap();
    let families = parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let ready = family(&families, "qbench_check_ready");
    assert_eq!(ready.samples.len(), 1);
    assert_eq!(ready.samples[0].1, 1.0);
    assert!(family(&families, "qbench_check_status").samples.iter().all(|(_, v)| *v == 0.0), "{text}");
    assert_eq!(family(&families, "qbench_check_complete").samples[0].1, 1.0);
    let left: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left, vec![std::ffi::OsString::from("qbench.prom")], "{left:?}");
    std::fs::remove_dir_all(Path::new(&dir)).unwrap();
}
