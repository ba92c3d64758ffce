//! Ctrl-C, SIGTERM (Slurm's time limit) and a closed stdout: the run stops
//! at its next step, says which step that was, and keeps the records it
//! gathered. Workloads name their current step and call [`check`] between
//! steps; waits on the GPU call it while they poll; threads that step
//! together (a transport's ranks inside one timed loop) stop at one step
//! through a [`Halt`]. A run that does not
//! reach a check within the grace time is ended with the signal's status,
//! and a third signal ends it at once (one signal often arrives twice: a
//! launcher such as `timeout` or `srun` forwards it to the process and to
//! its process group).

use crate::error::{Error, Result};
use signal_hook::consts::{SIGINT, SIGTERM};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

/// How long a run may take to reach its next check after a signal: a
/// step that outlasts it (on a fresh node NVRTC's first build of the check
/// kernels takes seconds in one call) is ended by the watchdog, which
/// leaves the records gathered so far behind.
const GRACE: Duration = Duration::from_millis(1500);

/// What the watchdog has written before it ends a run: given how the run
/// stopped, the files it left behind (None: none).
pub type LastWords = Box<dyn FnOnce(&str) -> Option<String> + Send>;

static LAST_WORDS: Mutex<Option<LastWords>> = Mutex::new(None);

/// Sets (or, with None, clears) what the watchdog does before it ends a
/// run that did not stop in time: the output's writing of the records so far.
pub fn last_words(words: Option<LastWords>) {
    *LAST_WORDS.lock().unwrap_or_else(PoisonError::into_inner) = words;
}

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
        let stopped = format!(
            "{} at {}; the run did not stop within {:.1} s",
            crate::error::signal_name(sig as i32),
            current_step(),
            GRACE.as_secs_f64()
        );
        let words = LAST_WORDS.lock().unwrap_or_else(PoisonError::into_inner).take();
        match words.and_then(|w| w(&stopped)) {
            Some(files) => crate::ui::say(&format!("qbench: {stopped}: the records gathered so far are in {files} (incomplete)")),
            None => crate::ui::say(&format!("qbench: {stopped}, so no records were written")),
        }
        // _exit, not exit: the threads still in the GPU or MPI libraries
        // would race the atexit handlers that tear those libraries down.
        signal_hook::low_level::exit(128 + sig as i32);
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

/// Why the run should stop, as a number processes can agree on by their
/// maximum: 0 none, 1 stdout's reader went away, else the signal's number.
pub fn reason() -> u64 {
    let sig = SIGNAL.get().map_or(0, |s| s.load(Ordering::SeqCst)) as u64;
    if sig != 0 { sig } else { STDOUT_CLOSED.load(Ordering::SeqCst) as u64 }
}

/// The error of a [`reason`] (Ok for 0).
pub fn stop(reason: u64) -> Result<()> {
    match reason {
        0 => Ok(()),
        1 => Err(Error::StdoutClosed),
        sig => Err(Error::Interrupted { signal: sig as i32, step: current_step() }),
    }
}

/// Err when the run should stop: a signal came, or nobody reads stdout.
pub fn check() -> Result<()> {
    stop(reason())
}

/// Where threads that must run the same steps (the ranks of one timed
/// loop, each waiting on the others inside a step) stop after a signal:
/// at the first step no thread has begun, so none waits for a step the
/// others will never run. Each thread asks [`Halt::before`] before each
/// of its steps; the lock is taken once per step, far below the cost of
/// a collective operation.
pub struct Halt {
    state: Mutex<HaltState>,
}

struct HaltState {
    /// Steps each thread has begun.
    begun: Vec<u64>,
    /// The step count every thread stops at, once decided.
    stop_at: Option<u64>,
    reason: u64,
}

impl Halt {
    pub fn new(threads: usize) -> Halt {
        Halt { state: Mutex::new(HaltState { begun: vec![0; threads], stop_at: None, reason: 0 }) }
    }

    /// Before thread `thread`'s step `k` (its steps counted from 0): Err
    /// when the threads stop here, after every thread has run `k` steps.
    pub fn before(&self, thread: usize, k: u64) -> Result<()> {
        self.decide(thread, k, reason)
    }

    /// [`Halt::before`] with the reason to stop read from `why`.
    fn decide(&self, thread: usize, k: u64, why: impl FnOnce() -> u64) -> Result<()> {
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if s.stop_at.is_none() {
            let why = why();
            if why != 0 {
                // Every step some thread has begun is run by all; no more.
                s.stop_at = Some(s.begun.iter().copied().max().unwrap_or(0).max(k));
                s.reason = why;
            }
        }
        if let Some(at) = s.stop_at
            && k >= at
        {
            return stop(s.reason);
        }
        s.begun[thread] = k + 1;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Barrier;
    use std::sync::atomic::AtomicU64;

    /// Threads in lock step (a barrier in every step, as a collective's
    /// ranks), a signal arriving while they run: all stop after the same
    /// number of steps, so none is left waiting in a barrier.
    #[test]
    fn threads_in_lock_step_stop_after_the_same_step() {
        for signal_at in [0u64, 1, 7, 50] {
            let threads = 4;
            let (halt, barrier, seen) = (Halt::new(threads), Barrier::new(threads), AtomicU64::new(0));
            let done = crate::threads::per_rank(threads, |t| {
                for k in 0..1000u64 {
                    // Thread 2 notices the signal first, the others later.
                    if t == 2 && k == signal_at {
                        seen.store(SIGINT as u64, Ordering::SeqCst);
                    }
                    let why = || if t == 2 || k > signal_at + 3 { seen.load(Ordering::SeqCst) } else { 0 };
                    if let Err(e) = halt.decide(t, k, why) {
                        assert!(matches!(e, Error::Interrupted { signal: SIGINT, .. }), "{e:?}");
                        return k;
                    }
                    barrier.wait();
                }
                u64::MAX
            });
            assert!(done.iter().all(|&k| k == done[0] && k <= signal_at + 1), "{signal_at}: {done:?}");
        }
    }

    #[test]
    fn no_reason_no_stop() {
        let halt = Halt::new(2);
        for k in 0..10 {
            assert!(halt.decide(k as usize % 2, k / 2, || 0).is_ok());
        }
        assert!(matches!(halt.decide(0, 5, || 1), Err(Error::StdoutClosed)));
        assert!(matches!(halt.decide(1, 9, || 0), Err(Error::StdoutClosed)), "decided once, for every thread");
    }
}
