//! Ctrl-C, SIGTERM (Slurm's time limit) and a closed stdout: the run stops
//! at its next step, says which step that was, and keeps the records it
//! gathered. Workloads name their current step and call [`check`] between
//! steps; waits on the GPU call it while they poll. A run that does not
//! reach a check within the grace time is ended with the signal's status,
//! and a third signal ends it at once (one signal often arrives twice: a
//! launcher such as `timeout` or `srun` forwards it to the process and to
//! its process group).

use crate::error::{Error, Result};
use signal_hook::consts::{SIGINT, SIGTERM};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

/// How long a run may take to reach its next check after a signal.
const GRACE: Duration = Duration::from_secs(10);

/// The signal that asked the run to stop (0: none).
static SIGNAL: OnceLock<Arc<AtomicUsize>> = OnceLock::new();
/// Signals received so far.
static SIGNALS: AtomicUsize = AtomicUsize::new(0);
/// Set when stdout was closed by its reader.
static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);
static STEP: Mutex<String> = Mutex::new(String::new());

/// Installs the handlers for SIGINT and SIGTERM. Idempotent.
pub fn install() -> Result<()> {
    if SIGNAL.get().is_some() {
        return Ok(());
    }
    let signal = Arc::new(AtomicUsize::new(0));
    for sig in [SIGINT, SIGTERM] {
        let fail = |e: std::io::Error| Error::Runtime(format!("cannot install the handler of signal {sig}: {e}"));
        signal_hook::flag::register_usize(sig, Arc::clone(&signal), sig as usize).map_err(fail)?;
        // SAFETY: the action only increments an atomic counter and may call
        // _exit, both async-signal-safe.
        unsafe {
            signal_hook::low_level::register(sig, move || {
                if SIGNALS.fetch_add(1, Ordering::SeqCst) + 1 >= 3 {
                    signal_hook::low_level::exit(128 + sig);
                }
            })
        }
        .map_err(fail)?;
    }
    let watched = Arc::clone(&signal);
    std::thread::Builder::new()
        .name("qbench-interrupt".into())
        .spawn(move || watchdog(&watched))
        .map_err(|e| Error::Runtime(format!("cannot start the interrupt watchdog: {e}")))?;
    let _ = SIGNAL.set(signal);
    Ok(())
}

/// Ends the process when a signalled run does not stop within [`GRACE`].
fn watchdog(signal: &AtomicUsize) {
    loop {
        std::thread::sleep(Duration::from_millis(50));
        let sig = signal.load(Ordering::SeqCst);
        if sig == 0 {
            continue;
        }
        let since = Instant::now();
        while since.elapsed() < GRACE {
            std::thread::sleep(Duration::from_millis(50));
        }
        eprintln!(
            "qbench: {} at {}; the run did not stop within {} s, so no records were written",
            crate::error::signal_name(sig as i32),
            current_step(),
            GRACE.as_secs()
        );
        std::process::exit(128 + sig as i32);
    }
}

/// Names the step the run is at, for the interruption message.
pub fn step(text: impl Into<String>) {
    *STEP.lock().unwrap_or_else(PoisonError::into_inner) = text.into();
}

pub fn current_step() -> String {
    let s = STEP.lock().unwrap_or_else(PoisonError::into_inner).clone();
    if s.is_empty() { "the start".into() } else { s }
}

/// Notes that stdout's reader went away (`qbench … | head`).
pub fn stdout_closed() {
    STDOUT_CLOSED.store(true, Ordering::SeqCst);
}

/// Err when the run should stop: a signal came, or nobody reads stdout.
pub fn check() -> Result<()> {
    let sig = SIGNAL.get().map_or(0, |s| s.load(Ordering::SeqCst)) as i32;
    if sig != 0 {
        return Err(Error::Interrupted { signal: sig, step: current_step() });
    }
    if STDOUT_CLOSED.load(Ordering::SeqCst) {
        return Err(Error::StdoutClosed);
    }
    Ok(())
}
