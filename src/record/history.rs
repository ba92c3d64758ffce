//! A node's check records over time (`check --history DIR`): each run
//! appends one JSON line per node to `DIR/NODE.jsonl`, under a lock and in
//! one write, so that runs that overlap (a Prolog and a health check) never
//! interleave within a line. `qbench show --history DIR` reads the last
//! lines back into each step's trend on each node, and flags a drift (the
//! step worse by more than its tolerance over those runs) while the floor
//! is still far, before the node fails.

use super::check::{CheckRun, Status, Tolerance, host_of};
use crate::error::{Error, Result};
use crate::stats::Summary;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

/// The runs a trend needs before a drift is judged: fewer cannot tell a
/// drift from one bad run.
pub const MIN_RUNS: usize = 5;

/// Makes `dir` (and its parents) and proves it writable, before the check
/// measures anything: a Prolog learns of a bad path in a second.
pub fn prepare(dir: &Path) -> Result<()> {
    let bad = |e: std::io::Error| Error::Usage(format!("--history {}: {e}", dir.display()));
    std::fs::create_dir_all(dir).map_err(bad)?;
    let probe = dir.join(format!(".qbench-history.{}.tmp", std::process::id()));
    File::create(&probe).map_err(bad)?;
    std::fs::remove_file(&probe).map_err(bad)?;
    // This node's file, where it is there, is opened as the run will.
    let mine = file_of(dir, &crate::host::short_hostname());
    match regular(OpenOptions::new().append(true), &mine) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(Error::Usage(format!("--history {}: {}: {e}", dir.display(), mine.display())))
        }
        _ => Ok(()),
    }
}

/// The file of `node`'s history in `dir`: its host name, every character
/// other than letters, digits, '.', '-' and '_' made '_'.
pub fn file_of(dir: &Path, node: &str) -> PathBuf {
    let safe: String = host_of(node)
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') { c } else { '_' })
        .collect();
    dir.join(format!("{safe}.jsonl"))
}

/// Appends the lines `rank` speaks for: its host's, when it is the host's
/// first process (the rows of every process of the host), with the rows
/// across the job on rank 0's host. Each line is the record of that host
/// alone, its verdict its own.
pub fn append(dir: &Path, run: &CheckRun, rank: usize) -> Result<()> {
    let host = match run.rank_nodes.get(rank) {
        Some(n) => host_of(n).to_string(),
        None if rank == 0 => run.nodes.first().map_or_else(|| run.header.host.clone(), |n| host_of(n).to_string()),
        None => return Ok(()),
    };
    let first = run.rank_nodes.iter().position(|n| host_of(n) == host).unwrap_or(0);
    if first != rank {
        return Ok(());
    }
    let line = of_host(run, &host, rank == 0);
    let mut text = serde_json::to_string(&line).map_err(|e| Error::Runtime(format!("cannot encode the record: {e}")))?;
    text.push('\n');
    let path = file_of(dir, &host);
    let fail = |e: std::io::Error| Error::Runtime(format!("cannot append to the history {}: {e}", path.display()));
    let file = regular(OpenOptions::new().create(true).append(true), &path).map_err(fail)?;
    lock(&file).map_err(fail)?;
    // One write of the whole line at the end of the file (O_APPEND), under
    // the lock: a reader sees whole lines, and a crash leaves at most a
    // torn last line, which reading skips.
    (&file).write_all(text.as_bytes()).map_err(fail)
}

/// `path` opened with `options` where it is a regular file: the open does
/// not wait (a FIFO put in a history's place would block it until another
/// process opened its other end), and what was opened is what is checked.
fn regular(options: &mut OpenOptions, path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = options.custom_flags(libc::O_NONBLOCK).open(path).map_err(|e| match e.raw_os_error() {
        // What opening a FIFO to write says when nothing reads it.
        Some(libc::ENXIO) => std::io::Error::other("a FIFO, not a regular file"),
        _ => e,
    })?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(std::io::Error::other(format!("{}, not a regular file", crate::input::kind(&meta))));
    }
    Ok(file)
}

/// Holds an exclusive lock on `file` until it is closed (flock: between
/// processes of one machine, and over NFS as a POSIX lock).
fn lock(file: &File) -> std::io::Result<()> {
    // SAFETY: flock on a descriptor this process holds open; it blocks
    // until the lock is granted and touches no memory.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) };
    if rc == 0 { Ok(()) } else { Err(std::io::Error::last_os_error()) }
}

/// `run` as `host`'s line: its rows, processes and seconds, and the rows
/// across the job where `across` (rank 0's host), judged anew.
fn of_host(run: &CheckRun, host: &str, across: bool) -> CheckRun {
    let mine = |node: &str| host_of(node) == host || (across && node == "all");
    let mut line = run.clone();
    line.rows.retain(|r| mine(&r.node));
    line.spent.retain(|s| mine(&s.node));
    line.rank_nodes.retain(|n| host_of(n) == host);
    line.nodes = vec![host.to_string()];
    line.settle();
    line
}

/// The last runs of every node read back from a history directory.
#[derive(Debug, Default)]
pub struct History {
    /// Each node's runs, oldest first, nodes in name order.
    pub nodes: Vec<(String, Vec<CheckRun>)>,
    /// Lines that are no check record (a line torn by a crash), skipped.
    pub unreadable: usize,
}

/// Reads the last `last` lines of every `*.jsonl` file in `dir`.
pub fn read(dir: &Path, last: usize) -> Result<History> {
    let entries = std::fs::read_dir(dir).map_err(|e| Error::Usage(format!("--history {}: {e}", dir.display())))?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl") && p.is_file())
        .collect();
    if files.is_empty() {
        return Err(Error::Usage(format!(
            "--history {}: no history here (no NODE.jsonl file): run qbench check --history {} first",
            dir.display(),
            dir.display()
        )));
    }
    files.sort();
    let mut history = History::default();
    for path in files {
        let lines = tail(&path, last)
            .map_err(|e| Error::Usage(format!("cannot read the history {}: {e}", path.display())))?;
        let mut runs = Vec::new();
        for line in lines.iter().filter(|l| !l.trim().is_empty()) {
            match serde_json::from_str::<CheckRun>(line) {
                Ok(run) => runs.push(run),
                Err(_) => history.unreadable += 1,
            }
        }
        let node = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        history.nodes.push((node, runs));
    }
    Ok(history)
}

/// The last `n` lines of a file, read from its end: a history grows by a
/// line a run and is never read whole.
fn tail(path: &Path, n: usize) -> std::io::Result<Vec<String>> {
    const CHUNK: u64 = 1 << 16;
    let mut file = regular(OpenOptions::new().read(true), path)?;
    let mut at = file.seek(SeekFrom::End(0))?;
    // Chunks from the end back, until one newline more than lines wanted
    // (the first line kept is whole) or a record's bytes (a file of one
    // endless line is not read whole).
    let mut chunks: Vec<Vec<u8>> = Vec::new();
    let (mut newlines, mut read) = (0, 0);
    while at > 0 && newlines <= n && read < crate::input::RECORD_BYTES {
        let step = at.min(CHUNK);
        at -= step;
        file.seek(SeekFrom::Start(at))?;
        let mut chunk = vec![0u8; step as usize];
        file.read_exact(&mut chunk)?;
        newlines += chunk.iter().filter(|b| **b == b'\n').count();
        read += step;
        chunks.push(chunk);
    }
    let bytes: Vec<u8> = chunks.into_iter().rev().flatten().collect();
    let text = String::from_utf8_lossy(&bytes);
    let mut lines: Vec<&str> = text.lines().collect();
    if at > 0 && !lines.is_empty() {
        lines.remove(0);
    }
    let from = lines.len().saturating_sub(n);
    Ok(lines[from..].iter().map(|l| l.to_string()).collect())
}

/// How a trend is judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flag {
    /// Within its tolerance over the runs read.
    Steady,
    /// Worse by more than its tolerance over the runs read, not failing yet.
    Drift,
    /// Its last run failed (its floor or ceiling crossed, or wrong data).
    Fail,
}

/// One step on one node over its last runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Trend {
    pub node: String,
    /// The step and its place, as the check's table names it.
    pub label: String,
    pub unit: String,
    /// Its measured figure in each run that measured it, oldest first.
    pub values: Vec<f64>,
    /// A time: worse when it grows.
    pub is_time: bool,
    pub tolerance: Tolerance,
    /// How much worse it got over the runs, as a fraction of where it
    /// started (negative: better); None with fewer than [`MIN_RUNS`].
    pub worse: Option<f64>,
    pub flag: Flag,
}

/// Every measured step's trend on every node, in the order of the node's
/// last run; the flagged ones first.
pub fn trends(history: &History) -> Vec<Trend> {
    let mut out: Vec<Trend> = history.nodes.iter().flat_map(|(node, runs)| node_trends(node, runs)).collect();
    out.sort_by_key(|t| match t.flag {
        Flag::Fail => 0,
        Flag::Drift => 1,
        Flag::Steady => 2,
    });
    out
}

fn node_trends(node: &str, runs: &[CheckRun]) -> Vec<Trend> {
    let Some(latest) = runs.last() else { return Vec::new() };
    let measured = latest.rows.iter().filter(|r| r.measured.is_some());
    measured
        .map(|now| {
            let label = now.label();
            let same = |r: &&super::check::Row| r.label() == label && r.node == now.node;
            let values: Vec<f64> =
                runs.iter().filter_map(|run| run.rows.iter().find(same).and_then(|r| r.measured)).collect();
            let tolerance = latest.tolerance.get(&now.step).copied().unwrap_or_default();
            let worse = worsening(&values, now.is_time());
            let flag = match (now.status, worse) {
                (Status::Fail, _) => Flag::Fail,
                (_, Some(w)) if w > tolerance.warn && drifted(&values, now.is_time(), tolerance.warn) => Flag::Drift,
                _ => Flag::Steady,
            };
            let node = if now.node == "all" { "all".to_string() } else { node.to_string() };
            Trend { node, label, unit: now.unit.clone(), values, is_time: now.is_time(), tolerance, worse, flag }
        })
        .collect()
}

/// How much worse `values` (oldest first) got, as a fraction of where they
/// started: the fall of their least-squares line from the first run to the
/// last (its rise for a time). None with fewer than [`MIN_RUNS`] runs.
pub fn worsening(values: &[f64], is_time: bool) -> Option<f64> {
    let n = values.len();
    if n < MIN_RUNS {
        return None;
    }
    let xm = (n - 1) as f64 / 2.0;
    let ym = values.iter().sum::<f64>() / n as f64;
    let sxy: f64 = values.iter().enumerate().map(|(i, y)| (i as f64 - xm) * (y - ym)).sum();
    let sxx: f64 = (0..n).map(|i| (i as f64 - xm).powi(2)).sum();
    let slope = sxy / sxx;
    let first = ym - slope * xm;
    let change = slope * (n - 1) as f64 / first;
    let worse = if is_time { change } else { -change };
    worse.is_finite().then_some(worse)
}

/// Whether the last third of the runs is worse than the first third by
/// more than `tolerance`, median against median: a drift moves them all,
/// one bad run at the end does not.
fn drifted(values: &[f64], is_time: bool, tolerance: f64) -> bool {
    let k = (values.len() / 3).max(1);
    let first = Summary::of(&values[..k]).median;
    let last = Summary::of(&values[values.len() - k..]).median;
    let worse = if is_time { last / first - 1.0 } else { 1.0 - last / first };
    worse > tolerance
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` values around 100 with a deterministic ±`noise` fraction.
    fn noisy(n: usize, noise: f64, trend: impl Fn(usize) -> f64) -> Vec<f64> {
        let wobble = [0.3, -0.9, 0.6, -0.2, 1.0, -0.7, 0.1, -1.0, 0.8, -0.4, 0.5, -0.6];
        (0..n).map(|i| trend(i) * (1.0 + noise * wobble[i % wobble.len()])).collect()
    }

    #[test]
    fn a_flat_history_is_no_drift() {
        let flat = noisy(10, 0.03, |_| 100.0);
        let w = worsening(&flat, false).unwrap();
        assert!(w.abs() < 0.05, "{w}");
        assert!(!drifted(&flat, false, 0.05));
        // Too few runs to say.
        assert_eq!(worsening(&flat[..4], false), None);
    }

    #[test]
    fn a_fall_of_a_fifth_over_ten_runs_is_a_drift() {
        let falling = noisy(10, 0.02, |i| 100.0 * (1.0 - 0.2 * i as f64 / 9.0));
        let w = worsening(&falling, false).unwrap();
        assert!((0.15..0.25).contains(&w), "{w}");
        assert!(drifted(&falling, false, 0.05));
        // A time that grows by a fifth is worse; one that shrinks is better.
        let growing: Vec<f64> = noisy(10, 0.02, |i| 10.0 * (1.0 + 0.2 * i as f64 / 9.0));
        assert!(worsening(&growing, true).unwrap() > 0.15);
        assert!(worsening(&growing, false).unwrap() < -0.15);
    }

    #[test]
    fn one_bad_run_at_the_end_is_no_drift() {
        let mut values = noisy(10, 0.01, |_| 100.0);
        values[9] = 85.0;
        assert!(!drifted(&values, false, 0.05));
    }

    /// A record of `nodes` (rank order), a row of step "bw" per node at
    /// `value`, FAIL on the nodes named in `failing`, and one across them.
    fn run_of(nodes: &[&str], value: f64, failing: &[&str]) -> CheckRun {
        let row = |node: &str| {
            let status = if failing.contains(&node) { "FAIL" } else { "PASS" };
            serde_json::from_value(serde_json::json!({
                "step": "bw", "kind": "copy", "node": node, "found": "", "measured": value,
                "unit": "GB/s", "expected": null, "floor": 1.0, "ceiling": null, "ratio": null,
                "baseline": null, "vs_baseline": null, "status": status, "fix": "", "attempts": 1,
                "missing": false
            }))
            .unwrap()
        };
        let mut run = CheckRun {
            header: super::super::Header::start("check", None),
            profile: "p".into(),
            profile_from: "test".into(),
            source: String::new(),
            measured_here: false,
            level: "prolog".into(),
            budget_s: 10,
            elapsed_s: 1.0,
            baseline: None,
            nodes: nodes.iter().map(|n| n.to_string()).collect(),
            rank_nodes: nodes.iter().map(|n| n.to_string()).collect(),
            rows: nodes.iter().map(|n| row(n)).chain([row("all")]).collect(),
            spent: Vec::new(),
            tolerance: Default::default(),
            verdict: None,
            init: None,
        };
        run.settle();
        run
    }

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("qbench-history-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        prepare(&d).unwrap();
        d
    }

    #[test]
    fn each_host_gets_one_line_by_its_first_process_judged_alone() {
        let d = scratch("hosts");
        let run = run_of(&["a:0", "a:1", "b:2", "b:3"], 5.0, &["b:3"]);
        for rank in 0..4 {
            append(&d, &run, rank).unwrap();
        }
        let h = read(&d, 10).unwrap();
        let names: Vec<&str> = h.nodes.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        let (a, b) = (&h.nodes[0].1, &h.nodes[1].1);
        assert_eq!((a.len(), b.len()), (1, 1));
        let nodes = |r: &CheckRun| r.rows.iter().map(|r| r.node.clone()).collect::<Vec<_>>();
        // The row across the job goes with rank 0's host alone.
        assert_eq!(nodes(&a[0]), ["a:0", "a:1", "all"]);
        assert_eq!(nodes(&b[0]), ["b:2", "b:3"]);
        assert!(a[0].verdict.as_ref().unwrap().ready);
        assert!(!b[0].verdict.as_ref().unwrap().ready);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn runs_appending_at_once_leave_whole_lines() {
        let d = scratch("concurrent");
        let mut run = run_of(&["n"], 5.0, &[]);
        // Lines far longer than a pipe's atomic write.
        run.rows[0].found = "x".repeat(200_000);
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    for _ in 0..10 {
                        append(&d, &run, 0).unwrap();
                    }
                });
            }
        });
        let text = std::fs::read_to_string(d.join("n.jsonl")).unwrap();
        assert_eq!(text.lines().count(), 80);
        assert!(text.lines().all(|l| serde_json::from_str::<CheckRun>(l).is_ok()));
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn trends_flag_a_drift_and_a_failure_and_skip_torn_lines() {
        let d = scratch("trends");
        let falling = noisy(10, 0.02, |i| 100.0 * (1.0 - 0.2 * i as f64 / 9.0));
        for (i, v) in falling.iter().enumerate() {
            append(&d, &run_of(&["drifts"], *v, &[]), 0).unwrap();
            append(&d, &run_of(&["steady"], 100.0 + i as f64 % 2.0, &[]), 0).unwrap();
            let failing: &[&str] = if i == 9 { &["fails"] } else { &[] };
            append(&d, &run_of(&["fails"], 100.0, failing), 0).unwrap();
        }
        let mut f = OpenOptions::new().append(true).open(d.join("steady.jsonl")).unwrap();
        f.write_all(b"{\"schema\": \"qbench.check.v2\", torn").unwrap();
        let h = read(&d, 10).unwrap();
        assert_eq!(h.unreadable, 1);
        let flags: Vec<(String, Flag)> =
            trends(&h).into_iter().filter(|t| t.node != "all").map(|t| (t.node, t.flag)).collect();
        let want = [("fails", Flag::Fail), ("drifts", Flag::Drift), ("steady", Flag::Steady)];
        assert_eq!(flags, want.map(|(n, f)| (n.to_string(), f)));
        assert!(read(&d, 3).unwrap().nodes.iter().all(|(_, runs)| runs.len() <= 3));
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn file_names_are_the_host_made_safe() {
        let dir = Path::new("/h");
        assert_eq!(file_of(dir, "qn1:3"), Path::new("/h/qn1.jsonl"));
        assert_eq!(file_of(dir, "a/b c"), Path::new("/h/a_b_c.jsonl"));
    }

    #[test]
    fn the_tail_of_a_file_is_its_last_whole_lines() {
        let dir = std::env::temp_dir().join(format!("qbench-tail-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("n.jsonl");
        let long = "x".repeat(70_000);
        let text: String = (0..5).map(|i| format!("{i}{long}\n")).collect();
        std::fs::write(&path, text).unwrap();
        let got = tail(&path, 2).unwrap();
        assert_eq!(got.iter().map(|l| &l[..1]).collect::<Vec<_>>(), ["3", "4"]);
        assert_eq!(tail(&path, 9).unwrap().len(), 5);
        std::fs::write(&path, "a\nb").unwrap();
        assert_eq!(tail(&path, 1).unwrap(), ["b"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
