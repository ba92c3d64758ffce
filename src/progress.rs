//! Progress on stderr while a long run works: the step the workload named
//! (`interrupt::step`), the parts measured so far, the time elapsed and,
//! where the run's record says how much is left, the time remaining. Drawn
//! only when stderr is a terminal and `--quiet` is off, cleared before the
//! table's last lines; stdout, pipes and files never see it.
//!
//! [`Progress`] is an [`Observer`] around the one that prints the table:
//! it draws between the table's lines, never into them.

use crate::record::check::CheckRun;
use crate::record::collective::CollectiveRun;
use crate::record::compare::Comparison;
use crate::record::copy::CopyRun;
use crate::record::exchange::ExchangeRun;
use crate::record::osu::OsuRun;
use crate::record::rdma::RdmaRun;
use crate::record::{Observer, Streamed};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// How far a run of this record has got: what its parts are called and,
/// when the record knows it once the run has begun, how much work the
/// whole run is. A record kind without an estimate implements it empty.
pub trait Progressive: Streamed {
    /// What one part is, plural ("sizes", "tests").
    fn noun(&self) -> &'static str {
        "parts"
    }
    /// The work of every part of the run, in order, in units that take
    /// about the same time each; None when the record cannot tell.
    fn plan(&self) -> Option<Vec<u64>> {
        None
    }
}

/// A size's work: its bytes, and a fixed cost that dominates small messages.
fn size_work(bytes: u64) -> u64 {
    bytes + (256 << 10)
}

impl Progressive for CollectiveRun {
    fn noun(&self) -> &'static str {
        "sizes"
    }
    fn plan(&self) -> Option<Vec<u64>> {
        let c = &self.config;
        if c.run_cycles == 0 {
            return None;
        }
        let max = self.max_bytes_reduced_to.unwrap_or(c.maxbytes);
        let sizes = crate::units::sweep(c.minbytes.min(max), max, c.step).ok()?;
        let kind = crate::workload::collective::Kind::from_command(&self.collective)?;
        let spec = kind.spec();
        let ops = match spec.op_use() {
            crate::workload::collective::OpUse::Ignores => 1,
            _ => c.ops.len(),
        };
        let roots = match (spec.rooted(), c.root) {
            (false, _) => 1,
            (true, -1) => c.nranks,
            (true, _) => 1,
        };
        // The (type, op) pairs the transport left out do not run.
        let pairs = (c.datatypes.len() * ops).saturating_sub(self.left_out.len());
        let repeats = pairs * roots * c.run_cycles as usize;
        let one: Vec<u64> = sizes.into_iter().map(size_work).collect();
        Some(one.iter().copied().cycle().take(one.len() * repeats).collect())
    }
}

impl Progressive for CopyRun {
    fn noun(&self) -> &'static str {
        "tests"
    }
    fn plan(&self) -> Option<Vec<u64>> {
        Some(vec![1; self.config.tests.len()])
    }
}

impl Progressive for ExchangeRun {
    fn noun(&self) -> &'static str {
        "registers"
    }
}

impl Progressive for Comparison {
    fn noun(&self) -> &'static str {
        "transports"
    }
}

/// Every datatype's sizes.
impl Progressive for OsuRun {
    fn noun(&self) -> &'static str {
        "sizes"
    }
}

/// Every size of every test, on each connection: the messages it times.
impl Progressive for RdmaRun {
    fn noun(&self) -> &'static str {
        "sizes"
    }
    /// None for a timed run (-D, --run_infinitely): it counts no messages ahead.
    fn plan(&self) -> Option<Vec<u64>> {
        use crate::rdma::plan::TestParams;
        if self.agreement.timing.is_timed() {
            return None;
        }
        let one: Vec<u64> = self
            .agreement
            .tests
            .iter()
            .flat_map(|&t| {
                let p = TestParams::new(&self.agreement, false, t);
                let messages = p.iters as u64 * p.qps as u64;
                p.sizes.into_iter().map(move |s| messages * size_work(s))
            })
            .collect();
        Some(one.repeat(self.connections.max(1)))
    }
}

/// The rows come together at the end; the step in progress is named.
impl Progressive for CheckRun {
    fn noun(&self) -> &'static str {
        "rows"
    }
}

/// The bar and the thread that keeps its step and clock current.
struct Bar {
    bar: ProgressBar,
    stop: Arc<AtomicBool>,
    ticker: Option<std::thread::JoinHandle<()>>,
    plan: Option<Vec<u64>>,
    noun: &'static str,
}

impl Bar {
    fn start() -> Bar {
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr_with_hz(10));
        bar.set_style(style(false));
        let stop = Arc::new(AtomicBool::new(false));
        let (b, s) = (bar.clone(), Arc::clone(&stop));
        let ticker = std::thread::Builder::new()
            .name("qbench-progress".into())
            .spawn(move || {
                while !s.load(Ordering::Relaxed) {
                    let step = crate::interrupt::current_step();
                    b.set_message(if step == "the start" { "starting".into() } else { step });
                    b.tick();
                    std::thread::sleep(Duration::from_millis(200));
                }
            })
            .ok();
        Bar { bar, stop, ticker, plan: None, noun: "parts" }
    }

    /// The line's prefix: the parts done, out of how many when known.
    fn count(&self, done: usize) {
        let of = self.plan.as_ref().map_or(String::new(), |p| format!("/{}", p.len()));
        self.bar.set_prefix(format!("{done}{of} {}", self.noun));
    }
}

impl Drop for Bar {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.ticker.take() {
            let _ = t.join();
        }
        self.bar.finish_and_clear();
    }
}

/// The line: with a plan (once a part is done) a bar, the share done and
/// the time left; otherwise the parts done. Both end with the step.
fn style(planned: bool) -> ProgressStyle {
    let template = if planned {
        "{spinner} {elapsed:>4} [{bar:24}] {percent:>3}% {prefix}, {eta} left · {wide_msg}"
    } else {
        "{spinner} {elapsed:>4} {prefix} · {wide_msg}"
    };
    ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_spinner()).progress_chars("=> ")
}

/// An observer that draws progress on stderr around another that prints.
pub struct Progress<'o, R> {
    inner: &'o mut dyn Observer<R>,
    bar: Option<Bar>,
}

impl<'o, R: Progressive> Progress<'o, R> {
    /// Progress around `inner`, drawn when `on` (stderr a terminal, not
    /// --quiet, the job's main process); otherwise `inner` alone.
    pub fn new(inner: &'o mut dyn Observer<R>, on: bool) -> Progress<'o, R> {
        Progress { inner, bar: on.then(Bar::start) }
    }

    /// Whether anything is drawn.
    #[cfg(test)]
    fn drawn(&self) -> bool {
        self.bar.is_some()
    }
}

impl<R: Progressive> Observer<R> for Progress<'_, R> {
    fn started(&mut self, run: &R) {
        self.inner.started(run);
    }

    fn begin(&mut self, run: &R) {
        let Some(b) = &mut self.bar else { return self.inner.begin(run) };
        b.noun = run.noun();
        b.plan = run.plan().filter(|p| !p.is_empty());
        if let Some(p) = &b.plan {
            b.bar.set_length(p.iter().sum());
        }
        b.count(0);
        let inner = &mut self.inner;
        b.bar.suspend(|| inner.begin(run));
    }

    fn part(&mut self, run: &R, part: &R::Part) {
        let Some(b) = &mut self.bar else { return self.inner.part(run, part) };
        let done = run.parts().len();
        if let Some(p) = &b.plan {
            b.bar.set_position(p.iter().take(done).sum());
            // The time left is estimated from the parts after the first
            // (which carries the run's set-up and warm-up), shown from the second.
            match done {
                1 => b.bar.reset_eta(),
                2 => b.bar.set_style(style(true)),
                _ => {}
            }
        }
        b.count(done);
        let inner = &mut self.inner;
        b.bar.suspend(|| inner.part(run, part));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Quiet;

    #[test]
    fn a_collective_sweep_plans_every_size_of_every_type() {
        let text = std::fs::read_to_string("results/h200x2/h200x2-allreduce-all-types-ops.json").unwrap();
        let crate::record::AnyRecord::Collective(run) = crate::record::parse(&text).unwrap() else { panic!() };
        let plan = run.plan().unwrap();
        assert_eq!(plan.len(), run.results.len());
        let gather = std::fs::read_to_string("results/h200x2/h200x2-allgather-all-types-ops.json").unwrap();
        let crate::record::AnyRecord::Collective(run) = crate::record::parse(&gather).unwrap() else { panic!() };
        assert_eq!(run.plan().unwrap().len(), run.results.len(), "all_gather ignores the ops");
        let bcast = std::fs::read_to_string("results/h200x2/h200x2-broadcast-all-types-ops.json").unwrap();
        let crate::record::AnyRecord::Collective(run) = crate::record::parse(&bcast).unwrap() else { panic!() };
        assert_eq!(run.plan().unwrap().len(), run.results.len(), "broadcast from every root");
    }

    #[test]
    fn an_rdma_run_plans_every_size_of_every_test_on_every_connection() {
        let mut run = crate::record::rdma::tests::sample();
        let one = run.plan().unwrap();
        assert_eq!(one.len(), 2);
        // write_bw times 1000 messages of 64 B, read_lat 1000 round trips of 64 B.
        assert_eq!(one[0], one[1]);
        run.connections = 3;
        run.agreement.sizes = crate::rdma::plan::Sizes::All;
        assert_eq!(run.plan().unwrap().len(), 3 * 2 * 23);
    }

    #[test]
    fn off_it_passes_everything_through_and_draws_nothing() {
        let mut quiet = Quiet;
        let p: Progress<'_, CopyRun> = Progress::new(&mut quiet, false);
        assert!(!p.drawn());
    }
}
