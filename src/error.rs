//! One error type for the whole tool, so that every failure maps onto the
//! documented exit codes (DESIGN.md): 1 check failed, 2 bad usage, 3 hardware
//! or library missing, 4 runtime failure.

use std::fmt;

/// What went wrong, classified by what the user should do about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// A check failed: wrong data, a threshold missed, a FAIL in a probe.
    CheckFailed(String),
    /// The command line or an input file is wrong.
    Usage(String),
    /// Hardware or a library the command needs is not there.
    Missing(String),
    /// Something broke while running: a timeout, a CUDA or NCCL error.
    Runtime(String),
}

impl Error {
    /// The process exit status for this error.
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::CheckFailed(_) => 1,
            Error::Usage(_) => 2,
            Error::Missing(_) => 3,
            Error::Runtime(_) => 4,
        }
    }

    pub fn message(&self) -> &str {
        match self {
            Error::CheckFailed(m) | Error::Usage(m) | Error::Missing(m) | Error::Runtime(m) => m,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

impl std::error::Error for Error {}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Shorthands that read well at the call site: `usage!("-b {} > -e {}", b, e)`.
#[macro_export]
macro_rules! usage {
    ($($arg:tt)*) => { $crate::error::Error::Usage(format!($($arg)*)) };
}

#[macro_export]
macro_rules! missing {
    ($($arg:tt)*) => { $crate::error::Error::Missing(format!($($arg)*)) };
}

#[macro_export]
macro_rules! runtime {
    ($($arg:tt)*) => { $crate::error::Error::Runtime(format!($($arg)*)) };
}
