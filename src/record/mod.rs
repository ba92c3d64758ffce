//! The typed records every run produces, and the only thing renderers,
//! baselines and plots read. Workloads fill them and know no format;
//! renderers read them and measure nothing. Each record starts with a
//! [`Header`] naming its schema and version; what `-J` writes, [`read`]
//! reads back, older versions included.

pub mod check;
pub mod collective;
pub mod compare;
pub mod copy;
pub mod exchange;
pub mod history;
pub mod osu;
pub mod rdma;
pub mod split;

use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The version every record written now carries.
pub const VERSION: u32 = 2;

/// What every run's record starts with: which schema, which qbench, the
/// command line, where and when, whether a fault was injected, and whether
/// the run finished.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// `qbench.<kind>.v<version>`.
    pub schema: String,
    pub qbench_version: String,
    #[serde(default)]
    pub args: Vec<String>,
    pub host: String,
    pub start_time: String,
    pub end_time: Option<String>,
    /// The fault `QBENCH_CORRUPT` injected, described; None for a clean run.
    #[serde(default)]
    pub fault: Option<String>,
    /// False when the run was stopped before it finished.
    #[serde(default = "yes")]
    pub complete: bool,
    /// Why and where an incomplete run stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
}

fn yes() -> bool {
    true
}

impl Header {
    /// The header of a run of `kind` starting now.
    pub fn start(kind: &str, fault: Option<crate::fault::Fault>) -> Header {
        Header {
            schema: format!("qbench.{kind}.v{VERSION}"),
            qbench_version: env!("CARGO_PKG_VERSION").to_string(),
            args: std::env::args().collect(),
            host: crate::host::short_hostname(),
            start_time: crate::host::now(),
            end_time: None,
            fault: fault.map(|f| f.describe()),
            complete: true,
            stopped: None,
        }
    }

    pub fn finish(&mut self) {
        self.end_time = Some(crate::host::now());
    }

    /// Marks the run as stopped early, with the reason.
    pub fn stop(&mut self, why: String) {
        self.complete = false;
        self.stopped = Some(why);
        self.finish();
    }

    /// (kind, version) of the schema name.
    pub fn kind_and_version(&self) -> Option<(&str, u32)> {
        schema_parts(&self.schema)
    }
}

fn schema_parts(schema: &str) -> Option<(&str, u32)> {
    let rest = schema.strip_prefix("qbench.")?;
    let (kind, v) = rest.rsplit_once(".v")?;
    Some((kind, v.parse().ok()?))
}

/// A record that reaches its reader in parts as they are measured: the
/// collective's rows, the exchange's registers, the copy's tests, the rdma
/// and OSU runs' rows.
pub trait Streamed {
    type Part;
    fn header(&self) -> &Header;
    fn header_mut(&mut self) -> &mut Header;
    /// The parts measured so far, in order.
    fn parts(&self) -> &[Self::Part];
}

/// Who hears of a run as it goes: the table renderer, a progress line, or
/// nobody. Workloads call it; they never print.
pub trait Observer<R: Streamed> {
    /// The run's record exists, nothing measured yet: a run stopped in its
    /// setup still leaves it behind.
    fn started(&mut self, _run: &R) {}
    /// The bytes of every part the run will measure, in order, when the
    /// run knows them before it begins (said just before [`Observer::begin`];
    /// a run that repeats until stopped says nothing).
    fn planned(&mut self, _sizes: &[u64]) {}
    /// The run's header and configuration are known.
    fn begin(&mut self, _run: &R) {}
    /// One part has been measured (and already pushed into the run).
    fn part(&mut self, _run: &R, _part: &R::Part) {}
}

/// An observer that hears nothing.
pub struct Quiet;

impl<R: Streamed> Observer<R> for Quiet {}

/// What a workload hands back: the record of what it measured, and the
/// error that stopped it early, if one did (the record is then partial).
#[derive(Debug)]
pub struct Outcome<R> {
    pub record: R,
    pub error: Option<Error>,
}

impl<R: Streamed> Outcome<R> {
    /// The record, finished, and the error, if any; an error marks the
    /// record as stopped early with the reason.
    pub fn new(mut record: R, result: Result<()>) -> Outcome<R> {
        let error = result.err();
        match &error {
            Some(e) => record.header_mut().stop(if e.message().is_empty() { "stopped".into() } else { e.message() }),
            None => record.header_mut().finish(),
        }
        Outcome { record, error }
    }
}

/// One rank as the `# Using devices` block lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RankInfo {
    pub rank: usize,
    pub group: usize,
    pub pid: u32,
    pub host: String,
    /// The CUDA device ordinal, or the thread index for host ranks.
    pub device: usize,
    /// PCI address "dddd:bb:dd", or "host" for host memory.
    pub bus_id: String,
    pub name: String,
}

/// The communication library under a transport, when there is one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LibraryInfo {
    pub name: String,
    /// As the library reports it, e.g. 22803 for NCCL 2.28.3.
    pub version_code: i64,
    pub version: String,
    pub path: Option<String>,
}

/// Any record qbench writes, as read back from a file.
#[derive(Debug, Clone)]
pub enum AnyRecord {
    /// Boxed: the largest record by far.
    Collective(Box<collective::CollectiveRun>),
    Exchange(exchange::ExchangeRun),
    Compare(compare::Comparison),
    Copy(copy::CopyRun),
    Check(check::CheckRun),
    Rdma(rdma::RdmaRun),
    Osu(osu::OsuRun),
}

impl AnyRecord {
    /// The record's header.
    pub fn header(&self) -> &Header {
        match self {
            AnyRecord::Collective(r) => &r.header,
            AnyRecord::Exchange(r) => &r.header,
            AnyRecord::Compare(r) => &r.header,
            AnyRecord::Copy(r) => &r.header,
            AnyRecord::Check(r) => &r.header,
            AnyRecord::Rdma(r) => &r.header,
            AnyRecord::Osu(r) => &r.header,
        }
    }
}

/// Reads the record in the JSON file at `path`.
pub fn read(path: &Path) -> Result<AnyRecord> {
    let text = crate::input::read(path, &path.display().to_string(), crate::input::RECORD_BYTES)?;
    parse(&text).map_err(|e| Error::Usage(format!("{}: {}", path.display(), crate::input::bounded(&e.message()))))
}

/// Parses a record of any kind from JSON text.
pub fn parse(text: &str) -> Result<AnyRecord> {
    let value: serde_json::Value = serde_json::from_str(text).map_err(|e| Error::Usage(format!("not JSON ({e})")))?;
    let schema = value
        .get("schema")
        .and_then(|s| s.as_str())
        .map(String::from)
        .ok_or_else(|| Error::Usage("not a qbench record (no \"schema\" field naming a qbench.* schema)".into()))?;
    let schema = schema.as_str();
    let (kind, version) =
        schema_parts(schema).ok_or_else(|| Error::Usage(format!("not a qbench record (schema \"{schema}\")")))?;
    if version > VERSION {
        return Err(Error::Usage(format!(
            "schema {schema} is newer than this qbench reads (v{VERSION}): use a newer qbench"
        )));
    }
    fn typed<T: serde::de::DeserializeOwned>(v: serde_json::Value, schema: &str) -> Result<T> {
        serde_json::from_value(v).map_err(|e| Error::Usage(format!("not a valid {schema} record: {e}")))
    }
    Ok(match kind {
        "collective" => AnyRecord::Collective(Box::new(typed(value, schema)?)),
        "exchange" => AnyRecord::Exchange(typed(value, schema)?),
        "compare" => AnyRecord::Compare(typed(value, schema)?),
        "copy" => AnyRecord::Copy(typed(value, schema)?),
        "check" => AnyRecord::Check(typed(value, schema)?),
        // v1 (before the rdma record had a header) was never committed.
        "rdma" if version >= 2 => AnyRecord::Rdma(typed(value, schema)?),
        "osu" => AnyRecord::Osu(typed(value, schema)?),
        _ => return Err(Error::Usage(format!("schema {schema} is not a record qbench reads back"))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_names_split_into_kind_and_version() {
        assert_eq!(schema_parts("qbench.collective.v1"), Some(("collective", 1)));
        assert_eq!(schema_parts("qbench.copy.v2"), Some(("copy", 2)));
        assert_eq!(schema_parts("nccl-tests"), None);
    }

    #[test]
    fn garbage_and_other_tools_are_refused() {
        for text in ["", "nope", "[]", "{}", r#"{"schema": "other.thing"}"#, r#"{"schema": "qbench.collective.v9"}"#] {
            assert_eq!(parse(text).unwrap_err().exit_code(), 2, "{text}");
        }
        assert!(parse(r#"{"schema": "qbench.collective.v2"}"#).unwrap_err().message().contains("not a valid"));
    }
}
