//! A record's rows as named cells: the one form that every tabular format
//! is derived from. A record kind says once what its rows are
//! ([`Rows::rows`]); CSV writes a line per row and Prometheus a sample per
//! figure of a row, labelled with the row's keys.

use crate::record::Streamed;
use serde::Serialize;

/// What a record kind gives the exporters of `export/`, besides its serde
/// form (the JSON): its rows, once.
pub trait Rows: Streamed + Serialize + 'static {
    /// The kind's name, as its schema says it ("check"): Prometheus names
    /// its families `qbench_<KIND>_<cell>`.
    const KIND: &'static str;
    /// The record's rows in order, every one with the same cells in the same
    /// order (the CSV's columns).
    fn rows(&self) -> Vec<Vec<Cell>>;
    /// Rows about the record as a whole (check's verdict per node, its wall
    /// time), for Prometheus only: the CSV holds [`Rows::rows`]. None by
    /// default.
    fn summary(&self) -> Vec<Vec<Cell>> {
        Vec::new()
    }
}

/// A cell's value as the record holds it.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Text(String),
    /// A count, a size, a rank: written without a decimal point.
    Int(i128),
    Float(f64),
    /// Not measured, not applicable: an empty CSV field, no sample.
    Absent,
}

impl From<&str> for Value {
    fn from(s: &str) -> Value {
        Value::Text(s.to_string())
    }
}

impl From<String> for Value {
    fn from(s: String) -> Value {
        Value::Text(s)
    }
}

impl From<f64> for Value {
    fn from(x: f64) -> Value {
        Value::Float(x)
    }
}

macro_rules! integers {
    ($($t:ty),*) => {
        $(impl From<$t> for Value {
            fn from(n: $t) -> Value {
                Value::Int(n.into())
            }
        })*
    };
}

integers!(u32, u64, i64);

impl From<usize> for Value {
    fn from(n: usize) -> Value {
        // usize is at most 64 bits wide on every target qbench builds for.
        Value::Int(n as i128)
    }
}

impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(v: Option<T>) -> Value {
        v.map_or(Value::Absent, Into::into)
    }
}

/// How a format reads a cell.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Role {
    /// Says which row this is (a name, a size, a placement): a label of
    /// every sample of the row.
    Key,
    /// A number measured or derived: a sample of its own family, `help`
    /// saying what it is where the cell's name is not enough.
    Figure { help: Option<&'static str> },
    /// A state, in words in the CSV and as `code` in Prometheus, whose HELP
    /// is `legend` (which code is which).
    State { code: u8, legend: &'static str },
    /// Words about the row (what was found, the fix): CSV only.
    Note,
}

/// One named cell of a row.
#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    pub name: &'static str,
    pub value: Value,
    pub role: Role,
}

impl Cell {
    /// A cell that says which row this is.
    pub fn key(name: &'static str, value: impl Into<Value>) -> Cell {
        Cell { name, value: value.into(), role: Role::Key }
    }

    /// A measured or derived number (or its absence).
    pub fn figure(name: &'static str, value: impl Into<Value>) -> Cell {
        let value = value.into();
        debug_assert!(!matches!(value, Value::Text(_)), "{name}: a figure is a number");
        Cell { name, value, role: Role::Figure { help: None } }
    }

    /// A state: `word` in the CSV, `code` in Prometheus, `legend` saying
    /// which code is which.
    pub fn state(name: &'static str, word: &str, code: u8, legend: &'static str) -> Cell {
        Cell { name, value: word.into(), role: Role::State { code, legend } }
    }

    /// Words about the row, for the CSV.
    pub fn note(name: &'static str, value: impl Into<Value>) -> Cell {
        Cell { name, value: value.into(), role: Role::Note }
    }

    /// A figure's meaning, for Prometheus' HELP.
    pub fn help(self, help: &'static str) -> Cell {
        debug_assert!(matches!(self.role, Role::Figure { .. }), "{}: only a figure has a HELP of its own", self.name);
        Cell { role: Role::Figure { help: Some(help) }, ..self }
    }
}
