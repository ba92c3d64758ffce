//! qbench's own JSON (`-J`, `--json`): the record itself, as serde writes
//! it, which `show`, `plot` and `check --baseline` read back.

use super::{Exporter, Record, pretty};
use crate::error::{Error, Result};

pub struct Json;

impl Exporter for Json {
    fn name(&self) -> &'static str {
        "JSON"
    }

    fn export(&self, record: &dyn Record) -> Result<Vec<u8>> {
        self.value(record)
            .as_ref()
            .and_then(pretty)
            .ok_or_else(|| Error::Runtime("cannot encode the results as JSON".into()))
    }

    fn value(&self, record: &dyn Record) -> Option<serde_json::Value> {
        record.json()
    }
}
