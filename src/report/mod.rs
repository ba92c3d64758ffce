//! Renderings of run records. A record kind's file here gives its
//! [`Table`] (the nccl-tests table of collective.rs, perftest's of rdma.rs,
//! OSU's, qbench's summary tables) and its [`Rows`], from which export/
//! writes every file format (JSON is the record itself, through serde);
//! plot/ draws them. Each reads a record and nothing else. A new record
//! kind is a file here implementing both, and its arm in [`render_any`] and
//! [`exported`].

pub mod cfmt;
pub mod check;
pub mod collective;
pub mod compare;
pub mod copy;
pub mod exchange;
pub mod export;
pub mod fit;
pub mod osu;
pub mod plan;
pub mod plot;
pub mod rdma;
pub mod rows;

pub use rows::Rows;

use crate::record::{AnyRecord, Streamed};

/// Where the host side of work with `device` ("GPU 0", "mlx5_0") ran, in
/// one phrase: the device's node, the binding (or why there was none), then
/// the CPUs, memory policy and pages as the kernel answered.
pub fn placement(device: &str, p: &crate::numa::Placement) -> String {
    use std::fmt::Write;
    let node = match p.device_node {
        Some(-1) => "no node".to_string(),
        Some(n) => format!("node {n}"),
        None => "node unknown".to_string(),
    };
    let mut notes = p.notes.iter().map(String::as_str);
    let status = match p.node {
        Some(n) => format!("bound to node {n}"),
        None => notes.next().unwrap_or("not bound").to_string(),
    };
    let cpu_nodes: Vec<usize> = p.cpu_nodes.iter().map(|&n| n as usize).collect();
    let mut s = format!("{device} ({node}) {status}: CPUs {}", p.cpus);
    if !cpu_nodes.is_empty() {
        let plural = if cpu_nodes.len() == 1 { "" } else { "s" };
        let _ = write!(s, " (node{plural} {})", crate::numa::format_list(&cpu_nodes));
    }
    let _ = write!(s, ", memory {}", p.memory_policy.as_deref().unwrap_or("policy unknown"));
    if !p.memory_pages.is_empty() {
        let pages: Vec<String> = p.memory_pages.iter().map(|n| format!("{} on node {}", n.pages, n.node)).collect();
        let _ = write!(s, ", pages {}", pages.join(", "));
    }
    let rest: Vec<&str> = notes.collect();
    if !rest.is_empty() {
        let _ = write!(s, " [{}]", rest.join("; "));
    }
    s
}

/// The text a run prints on stdout, streamed: its head once the run is set
/// up, each part as it is measured, and its tail at the end. Whatever is
/// printed once the run is over (a summary table) is the tail's; the
/// record read back prints the same text ([`render`]).
pub trait Table: Streamed {
    /// Everything above the first part.
    fn head(&self) -> String;
    /// The text of one part just measured (a row of the nccl-tests table);
    /// empty where the parts are printed together in the tail.
    fn part(&self, part: &Self::Part) -> String;
    /// Everything below the last part.
    fn tail(&self) -> String;
    /// What `--quiet` prints on stderr for process `rank` instead of the
    /// table (check's FAIL and WARN lines); nothing by default.
    fn quiet_lines(&self, _rank: usize) -> Vec<String> {
        Vec::new()
    }
}

/// The whole text of a finished (or read back) run, as it was printed.
pub fn render<R: Table>(run: &R) -> String {
    let mut s = run.head();
    for p in run.parts() {
        s.push_str(&run.part(p));
    }
    s + &run.tail()
}

/// The text of any record read back; a run stopped before it finished
/// says so first (a collective's own text says it in nccl-tests' words).
pub fn render_any(record: &AnyRecord) -> String {
    let text = match record {
        AnyRecord::Collective(r) => return render(r.as_ref()),
        AnyRecord::Exchange(r) => render(r),
        AnyRecord::Compare(r) => render(r),
        AnyRecord::Copy(r) => render(r),
        AnyRecord::Check(r) => render(r),
        AnyRecord::Rdma(r) => render(r),
        AnyRecord::Osu(r) => render(r),
    };
    let h = record.header();
    if h.complete {
        return text;
    }
    let why = h.stopped.as_deref().unwrap_or("before it finished");
    format!("# stopped: {} (the record is incomplete: it holds what was measured until then)\n{text}", crate::input::token(why))
}

/// Any record read back, as the exporters see it (tests/prometheus.rs
/// exports the committed records).
#[cfg_attr(qbench_private, allow(dead_code))]
pub fn exported(record: &AnyRecord) -> &dyn export::Record {
    match record {
        AnyRecord::Collective(r) => r.as_ref(),
        AnyRecord::Exchange(r) => r,
        AnyRecord::Compare(r) => r,
        AnyRecord::Copy(r) => r,
        AnyRecord::Check(r) => r,
        AnyRecord::Rdma(r) => r,
        AnyRecord::Osu(r) => r,
    }
}

/// A psql-style table with a header row: every summary table qbench prints.
pub fn table(header: impl IntoIterator<Item = String>, rows: Vec<Vec<String>>) -> tabled::Table {
    let mut b = tabled::builder::Builder::default();
    b.push_record(header);
    for r in rows {
        b.push_record(r);
    }
    let mut t = b.build();
    t.with(tabled::settings::Style::psql());
    t
}
