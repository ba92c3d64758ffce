//! The formats a record is written in besides its table, one file each
//! behind [`Exporter`]: qbench's JSON (the record itself), nccl-tests' JSON,
//! CSV and Prometheus. An exporter sees any record through [`Record`]: its
//! header, its serde form and its rows ([`super::Rows`]). A new format is a
//! file here with a unit struct implementing [`Exporter`], one line in
//! `formats!`, and its option in the command line's `OutputArgs`; a new
//! record kind gives every format at once with its `rows()`.

use super::rows::{Cell, Rows};
use crate::error::Result;
use crate::record::Header;
use std::any::Any;

/// One output format.
pub trait Exporter {
    /// What its files are called in messages: "JSON", "CSV".
    fn name(&self) -> &'static str;
    /// Err when records of `kind` (a [`Rows::KIND`]) have no form in this
    /// format: said before the run begins. Every kind has one by default.
    fn accepts(&self, _kind: &str) -> Result<()> {
        Ok(())
    }
    /// The record in this format, whole.
    fn export(&self, record: &dyn Record) -> Result<Vec<u8>>;
    /// The record as a JSON value, for a format that is JSON: what the
    /// interrupt watchdog marks incomplete and writes when a stopped run
    /// does not end in time. None for the others.
    fn value(&self, _record: &dyn Record) -> Option<serde_json::Value> {
        None
    }
}

/// Any record, as the exporters see it: every record kind with its
/// [`Rows`] is one.
pub trait Record {
    /// [`Rows::KIND`].
    fn kind(&self) -> &'static str;
    fn header(&self) -> &Header;
    /// The record as qbench writes and reads it back (its serde form).
    fn json(&self) -> Option<serde_json::Value>;
    /// [`Rows::rows`].
    fn rows(&self) -> Vec<Vec<Cell>>;
    /// [`Rows::summary`].
    fn summary(&self) -> Vec<Vec<Cell>>;
    /// The record's own type, for a format that exists for one kind only
    /// (nccl-tests' JSON, the collectives').
    fn any(&self) -> &dyn Any;
}

impl<R: Rows> Record for R {
    fn kind(&self) -> &'static str {
        R::KIND
    }
    fn header(&self) -> &Header {
        crate::record::Streamed::header(self)
    }
    fn json(&self) -> Option<serde_json::Value> {
        serde_json::to_value(self).ok()
    }
    fn rows(&self) -> Vec<Vec<Cell>> {
        Rows::rows(self)
    }
    fn summary(&self) -> Vec<Vec<Cell>> {
        Rows::summary(self)
    }
    fn any(&self) -> &dyn Any {
        self
    }
}

/// The formats: a variant of [`Format`] per module of this folder, whose
/// unit struct of the same name is its [`Exporter`].
macro_rules! formats {
    ($($format:ident => $module:ident),* $(,)?) => {
        $(mod $module;)*

        /// Every format a record can be written in.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum Format {
            $($format),*
        }

        impl Format {
            pub fn exporter(self) -> &'static dyn Exporter {
                match self {
                    $(Format::$format => &$module::$format),*
                }
            }
        }
    };
}

formats! {
    Json => json,
    NcclTests => nccl_tests,
    Csv => csv,
    Prometheus => prometheus,
}

/// qbench's own records, unless asked otherwise.
impl Default for Format {
    fn default() -> Format {
        Format::Json
    }
}

/// A JSON value as every JSON file qbench writes holds it: pretty, one
/// newline at the end.
fn pretty(value: &serde_json::Value) -> Option<Vec<u8>> {
    serde_json::to_string_pretty(value).ok().map(|s| (s + "\n").into_bytes())
}
