//! One error type for the whole tool, so that every failure maps onto the
//! documented exit codes: 1 check failed, 2 bad usage, 3 hardware or
//! library missing, 4 runtime failure; 128 + N when signal N stopped the
//! run, 0 when stdout's reader went away.

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
    /// A signal stopped the run at this step.
    Interrupted { signal: i32, step: String },
    /// Nobody reads stdout any more: the run ends quietly.
    StdoutClosed,
    /// A failure every process of a job knows of and one of them has
    /// already said: this process ends with `code` in silence.
    Said { code: i32 },
}

impl Error {
    /// The process exit status for this error.
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::CheckFailed(_) => 1,
            Error::Usage(_) => 2,
            Error::Missing(_) => 3,
            Error::Runtime(_) => 4,
            Error::Interrupted { signal, .. } => 128 + signal,
            Error::StdoutClosed => 0,
            Error::Said { code } => *code,
        }
    }

    pub fn message(&self) -> String {
        match self {
            Error::CheckFailed(m) | Error::Usage(m) | Error::Missing(m) | Error::Runtime(m) => m.clone(),
            Error::Interrupted { signal, step } => format!("{} at {step}", signal_name(*signal)),
            Error::StdoutClosed | Error::Said { .. } => String::new(),
        }
    }

    /// Whether the run stopped early on request rather than failing.
    pub fn is_interruption(&self) -> bool {
        matches!(self, Error::Interrupted { .. } | Error::StdoutClosed)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message())
    }
}

impl std::error::Error for Error {}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// How a signal that stopped a run is named in its last sentence.
pub fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGINT => "interrupted (SIGINT)",
        libc::SIGTERM => "terminated (SIGTERM)",
        _ => "stopped by a signal",
    }
}
