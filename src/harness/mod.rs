//! The sweep loop shared by every workload.

use crate::cli::CollArgs;
use crate::error::{Error, Result};
use crate::workload::collective::Kind;

pub fn run_collective(_kind: Kind, _args: &CollArgs) -> Result<()> {
    Err(Error::Runtime("not yet".into()))
}
