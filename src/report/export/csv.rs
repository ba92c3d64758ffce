//! CSV (`--csv`): a line per row of the record ([`crate::report::Rows`]),
//! the cells' names the header, written by the csv crate (its formatting
//! of numbers, its quoting); no lines at all, not even the header, for a
//! record without rows.

use super::{Exporter, Record};
use crate::error::{Error, Result};
use crate::report::rows::Value;

pub struct Csv;

impl Exporter for Csv {
    fn name(&self) -> &'static str {
        "CSV"
    }

    fn export(&self, record: &dyn Record) -> Result<Vec<u8>> {
        let rows = record.rows();
        let enc = |e: ::csv::Error| Error::Runtime(format!("cannot encode CSV: {e}"));
        let mut w = ::csv::WriterBuilder::new().has_headers(false).from_writer(Vec::new());
        if let Some(first) = rows.first() {
            w.write_record(first.iter().map(|c| c.name)).map_err(enc)?;
        }
        for row in &rows {
            w.serialize(row.iter().map(|c| Field(&c.value)).collect::<Vec<_>>()).map_err(enc)?;
        }
        w.into_inner().map_err(|e| Error::Runtime(format!("cannot encode CSV: {e}")))
    }
}

/// A value as the csv crate writes a field of its type: text as it is,
/// integers without a decimal point, floats as ryu writes them, nothing for
/// an absent value.
struct Field<'a>(&'a Value);

impl serde::Serialize for Field<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match self.0 {
            Value::Text(t) => s.serialize_str(t),
            Value::Int(n) => s.serialize_i128(*n),
            Value::Float(x) => s.serialize_f64(*x),
            Value::Absent => s.serialize_none(),
        }
    }
}
