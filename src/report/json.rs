//! JSON rendering of any record: pretty-printed, one document per run.

use crate::error::{Error, Result};
use serde::Serialize;
use std::path::Path;

pub fn to_string<T: Serialize>(record: &T) -> Result<String> {
    serde_json::to_string_pretty(record).map_err(|e| Error::Runtime(format!("cannot encode the results as JSON: {e}")))
}

/// Writes `record` to `path`, replacing the file.
pub fn write<T: Serialize>(record: &T, path: &Path) -> Result<()> {
    let text = to_string(record)?;
    std::fs::write(path, text + "\n")
        .map_err(|e| Error::Usage(format!("cannot write JSON results to {}: {e}", path.display())))
}
