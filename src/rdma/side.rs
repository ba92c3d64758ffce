//! One side of an RDMA run, plan in, records out, nothing printed: agree
//! with the peer on the options, then for each test open the adapter,
//! register the buffers, connect the queue pairs, and for each size time
//! perftest's loop (for -n iterations, or for -D seconds), check every byte
//! that arrived and swap results, so that both sides end with the same
//! records. The records go to an observer, each test's link as it connects
//! and each row as its size finishes (and, with --run_infinitely, a row
//! every -D seconds while it runs); between sizes, and in a timed loop, a
//! Ctrl-C stops the run (and the peer with it). A timed loop's end reaches
//! the peer in band: a zero-length message on each queue pair, which a
//! reliable connection delivers after every message before it.

use super::data::{self, Side};
use super::device::PortChoice;
use super::figures::{self, BwFigures, BwTimes};
use super::handshake::{Endpoint, Figures, Message, Phase, Report, StepMarker};
use super::memory::Region;
use super::oob::{self, Channel, Wait, unexpected};
use super::plan::{BufferMemory, Plan, Test, TestParams, Timing, Verb};
use super::verbs::{Adapter, Caps, Link, Op, Request, Route};
use crate::error::{Error, Result};
use crate::interrupt;
use crate::numa;
use crate::record::rdma::{self as record, BwRow, DataCheck, EndpointInfo, LatDurationRow, LatRow, Row};
use std::cell::Cell;
use std::time::{Duration, Instant};

/// What an observer is told as a run goes.
#[derive(Debug, Clone)]
pub enum Progress {
    /// A test is connected and about to run its sizes.
    Start(Box<record::Link>),
    /// A size of the test last started finished.
    Row(Row),
}

/// Where this side runs: its port, and its buffers' memory (the plan's,
/// resolved on this process's GPUs).
pub struct Place<'a> {
    pub choice: &'a PortChoice,
    pub memory: BufferMemory,
}

/// Runs every test of `plan` as `side`, through `channel` to the peer,
/// at `place`. On failure (an interruption too) the peer is told why.
pub fn run(
    plan: &Plan,
    side: Side,
    place: &Place,
    channel: &mut dyn Channel,
    observe: &mut dyn FnMut(Progress),
) -> Result<()> {
    let result = run_tests(plan, side, place, channel, observe);
    if let Err(e) = &result {
        channel.abort(e);
    }
    result
}

fn run_tests(
    plan: &Plan,
    side: Side,
    place: &Place,
    channel: &mut dyn Channel,
    observe: &mut dyn FnMut(Progress),
) -> Result<()> {
    interrupt::step("rdma: agreeing with the peer");
    oob::agree(channel, &plan.agreement)?;
    for &test in &plan.agreement.tests {
        interrupt::check()?;
        interrupt::step(format!("rdma {}: connecting", test.name()));
        run_test(plan, side, place, test, channel, observe)?;
    }
    // --run_infinitely ends when interrupted, once its last row is made.
    match plan.agreement.timing {
        Timing::Infinitely { .. } => interrupt::check(),
        _ => Ok(()),
    }
}

/// Swaps a step marker; the peer must be at the same step.
fn step(channel: &mut dyn Channel, phase: Phase, test: Test, size: u64, wait: Wait) -> Result<()> {
    let mine = StepMarker { phase, test, size };
    match channel.exchange(&Message::Step(mine), wait)? {
        Message::Step(theirs) if theirs == mine => Ok(()),
        Message::Step(theirs) => Err(Error::Runtime(format!(
            "the peer is at {:?} of {} with {} B where this side is at {:?} of {} with {size} B",
            theirs.phase,
            theirs.test.name(),
            theirs.size,
            phase,
            test.name()
        ))),
        other => Err(unexpected("a step marker", &other)),
    }
}

/// The GID as sysfs writes it.
fn gid_text(gid: &[u8; 16]) -> String {
    gid.chunks(2).map(|c| format!("{:02x}{:02x}", c[0], c[1])).collect::<Vec<_>>().join(":")
}

fn info(e: &Endpoint) -> EndpointInfo {
    EndpointInfo {
        host: e.host.clone(),
        device: e.device.clone(),
        port: e.port,
        gid_index: e.gid_index,
        gid: gid_text(&e.gid),
        lid: e.lid,
        link_layer: if e.roce { "Ethernet" } else { "InfiniBand" }.to_string(),
        mtu: e.mtu,
        sl: e.sl,
        traffic_class: e.traffic_class,
        qpns: e.qps.iter().map(|q| q.qpn).collect(),
        memory: e.memory,
    }
}

/// Where each queue pair's buffers lie in the region: the source it sends
/// (or serves reads) from, then the destination the peer's data lands in.
#[derive(Debug, Clone, Copy)]
struct Layout {
    slot: usize,
}

impl Layout {
    fn new(p: &TestParams) -> Layout {
        Layout { slot: (p.max_size() as usize).next_multiple_of(64) }
    }
    fn src(self, qp: usize) -> usize {
        2 * qp * self.slot
    }
    fn dst(self, qp: usize) -> usize {
        self.src(qp) + self.slot
    }
    fn len(self, qps: u32) -> usize {
        2 * qps as usize * self.slot
    }
}

/// How a write latency test sees the peer's message arrive: by polling its
/// last byte (host memory, as perftest), or by the receive completion of a
/// WRITE with immediate (GPU memory, which the CPU cannot poll).
fn polls_memory(link: &Link) -> bool {
    !link.memory.is_gpu()
}

fn run_test(
    plan: &Plan,
    side: Side,
    place: &Place,
    test: Test,
    channel: &mut dyn Channel,
    observe: &mut dyn FnMut(Progress),
) -> Result<()> {
    let p = TestParams::new(&plan.agreement, place.memory.is_gpu(), test);
    let layout = Layout::new(&p);
    // Bound before the buffers are allocated and registered (the
    // registration faults their pages in), held while this thread polls.
    let device = &place.choice.device;
    let bound = numa::Host::this().bind_for(plan.numa, device, &numa::rdma_node_file(device));
    let adapter = Adapter::open(place.choice)?;
    let region = Region::new(place.memory, layout.len(p.qps))?;
    let recv_depth = if test.verb() == Verb::Send { p.rx_depth } else { 1 };
    let caps = Caps { qps: p.qps, send_depth: p.tx_depth, recv_depth, inline: p.inline_size };
    let mut link = Link::new(adapter, region, place.memory, caps)?;
    link.set_route(Route { sl: plan.sl, traffic_class: plan.traffic_class, mtu: plan.agreement.mtu })?;
    let mut placement = bound.placement.clone();
    if !place.memory.is_gpu() {
        placement.count_pages(&[(link.region.addr() as usize, link.region.bytes())]);
    }
    let mut pattern = vec![0u8; layout.slot];
    for q in 0..p.qps {
        data::fill(&mut pattern, data::key(plan.agreement.seed, side, q));
        if let Some(byte) = plan.corrupt_byte().filter(|&b| b < pattern.len() as u64) {
            pattern[byte as usize] ^= 0xff;
        }
        link.region.write(layout.src(q as usize), &pattern)?;
    }
    let theirs = match channel.exchange(&Message::Endpoint(link.endpoint()), Wait::Prompt)? {
        Message::Endpoint(e) => e,
        other => return Err(unexpected("the queue pair addresses", &other)),
    };
    link.connect(&theirs, layout.len(p.qps) as u64)?;
    step(channel, Phase::Ready, test, 0, Wait::Prompt)?;
    observe(Progress::Start(Box::new(record::Link {
        test,
        params: p.clone(),
        local: info(&link.endpoint()),
        remote: info(&theirs),
        path_mtu: link.path_mtu,
        inline: link.inline,
        numa: Some(placement),
    })));
    // Receives still posted per queue pair, carried from size to size.
    let mut conn = Connection { waiting: vec![0u64; p.qps as usize], link, p: &p, layout, side };
    for &size in &p.sizes {
        interrupt::check()?;
        interrupt::step(format!("rdma {} with {size} B", test.name()));
        let row = run_size(&mut conn, plan, size, channel, &mut |line| observe(Progress::Row(line)))?;
        observe(Progress::Row(row));
    }
    Ok(())
}

/// Whether this side's destination buffers receive the peer's data.
fn receives_data(test: Test, side: Side, bidirectional: bool) -> bool {
    match test {
        Test::WriteLat | Test::SendLat => true,
        Test::ReadLat => side == Side::Client,
        Test::WriteBw | Test::SendBw => side == Side::Server || bidirectional,
        Test::ReadBw => side == Side::Client || bidirectional,
    }
}

/// One side of a connected test, between sizes.
struct Connection<'a> {
    link: Link,
    p: &'a TestParams,
    layout: Layout,
    side: Side,
    /// Receives posted and not yet consumed, per queue pair.
    waiting: Vec<u64>,
}

/// One size: poison what arrives, time the loop, check what arrived and
/// swap reports. `lines` hears the rows a --run_infinitely loop makes as
/// it goes; the row returned is the size's (for --run_infinitely, the
/// stretch since the last line, with the data checked).
fn run_size(
    conn: &mut Connection,
    plan: &Plan,
    size: u64,
    channel: &mut dyn Channel,
    lines: &mut dyn FnMut(Row),
) -> Result<Row> {
    let Connection { link, p, layout, side, waiting } = conn;
    let (p, layout, side) = (*p, *layout, *side);
    let seed = plan.agreement.seed;
    let receiving = receives_data(p.test, side, p.bidirectional);
    if receiving {
        let mut poison = vec![0u8; size as usize];
        for q in 0..p.qps {
            data::poison(&mut poison, data::key(seed, side.peer(), q));
            if p.test == Test::WriteLat && polls_memory(link) {
                // The arrival marker counts from 1.
                poison[size as usize - 1] = 0;
            }
            link.region.write(layout.dst(q as usize), &poison)?;
        }
    }
    let mut loop_ = Loop { link, p, layout, size, timeout: plan.timeout, side, waiting };
    loop_.prepost()?;
    step(channel, Phase::Go, p.test, size, Wait::Prompt)?;
    // A latency test's messages from the peer that arrived here (a timed
    // one may end before any did); a bandwidth test's destinations always
    // hold what arrived.
    let mut arrived = None;
    let figures = if p.test.is_bw() {
        let sending = side == Side::Client || p.bidirectional;
        let sends_arrive = p.test.verb() == Verb::Send && receiving;
        let mut line = |f: BwFigures| lines(bw_row(size, f, DataCheck::default()));
        match loop_.bandwidth(sending, sends_arrive, &mut line)? {
            Some(f) => Figures::Bw(f),
            None => Figures::None,
        }
    } else {
        let (figures, seen) = loop_.latency()?;
        arrived = Some(seen);
        figures
    };
    if p.test == Test::WriteLat && polls_memory(link) {
        // The marker overwrote the source's last byte: give it back its
        // pattern (and any deliberate corruption) for the larger sizes.
        let last = size as usize - 1;
        let flip = if plan.corrupt_byte() == Some(last as u64) { 0xff } else { 0 };
        link.region.write(layout.src(0) + last, &[data::byte(data::key(seed, side, 0), last) ^ flip])?;
    }
    step(channel, Phase::Done, p.test, size, Wait::Busy)?;
    let mut mine = DataCheck::default();
    if receiving && arrived != Some(0) {
        let mut got = vec![0u8; size as usize];
        for q in 0..p.qps {
            link.region.read(layout.dst(q as usize), &mut got)?;
            let key = data::key(seed, side.peer(), q);
            let counter = p.test == Test::WriteLat && polls_memory(link);
            let check = match arrived {
                Some(seen) if counter => counted(&got, key, seen),
                _ => data::check(&got, key),
            };
            mine = mine.merge(check);
        }
    }
    let report = Report { test: p.test, size, data: mine, figures };
    let theirs = match channel.exchange(&Message::Report(report), Wait::Busy)? {
        Message::Report(r) if r.test == p.test && r.size == size => r,
        other => return Err(unexpected("the result report of this size", &other)),
    };
    Ok(row(p, size, side, &report, &theirs))
}

/// A write-latency destination: the pattern, except its last byte, which
/// carries the count of the last message that arrived (perftest's arrival marker).
fn counted(got: &[u8], key: u64, arrived: u64) -> DataCheck {
    let Some((&last, body)) = got.split_last() else { return DataCheck::default() };
    let mut c = data::check(body, key);
    c.checked_bytes += 1;
    if last != arrived as u8 {
        c.wrong_bytes += 1;
        c.first_wrong.get_or_insert(body.len() as u64);
    }
    c
}

/// The row both sides print: the client's figures (the sum of both sides'
/// with -b) and both sides' data checks.
fn row(p: &TestParams, size: u64, side: Side, mine: &Report, theirs: &Report) -> Row {
    let data = if side == Side::Client { mine.data.merge(theirs.data) } else { theirs.data.merge(mine.data) };
    let (client, server) =
        if side == Side::Client { (mine.figures, theirs.figures) } else { (theirs.figures, mine.figures) };
    match (client, server) {
        (Figures::Lat(l), _) => Row::Lat(LatRow {
            bytes: size,
            iterations: p.iters as u64,
            t_min_us: l.min,
            t_max_us: l.max,
            t_typical_us: l.typical,
            t_avg_us: l.avg,
            t_stdev_us: l.stdev,
            t_p99_us: l.p99,
            t_p99_9_us: l.p99_9,
            data,
        }),
        (Figures::LatDuration(l), _) => Row::LatDuration(LatDurationRow {
            bytes: size,
            iterations: l.iterations,
            t_avg_us: l.avg,
            tps: l.tps,
            data,
        }),
        (c, s) => {
            let as_bw = |f: Figures| match f {
                Figures::Bw(b) => Some(b),
                _ => None,
            };
            let figures = match (as_bw(c), as_bw(s)) {
                // The client's messages, both directions' rates.
                (Some(c), Some(s)) => BwFigures {
                    messages: c.messages,
                    peak: c.peak.zip(s.peak).map(|(a, b)| a + b).or(c.peak).or(s.peak),
                    average: c.average + s.average,
                    msg_rate_mpps: c.msg_rate_mpps + s.msg_rate_mpps,
                },
                (Some(x), None) | (None, Some(x)) => x,
                (None, None) => BwFigures { messages: 0, peak: None, average: 0.0, msg_rate_mpps: 0.0 },
            };
            bw_row(size, figures, data)
        }
    }
}

/// A bandwidth row of `size` from its figures.
fn bw_row(size: u64, f: BwFigures, data: DataCheck) -> Row {
    Row::Bw(BwRow {
        bytes: size,
        iterations: f.messages,
        bw_peak_bytes_per_s: f.peak,
        bw_avg_bytes_per_s: f.average,
        msg_rate_mpps: f.msg_rate_mpps,
        data,
    })
}

/// A completion for no request this side has outstanding: the figures
/// would count it, so the run stops.
fn stray_error(stray: &Cell<bool>) -> Result<()> {
    if stray.get() {
        return Err(Error::Runtime(
            "the adapter reported a completion for no outstanding request: its driver's completion queue is inconsistent".into(),
        ));
    }
    Ok(())
}

/// Gives up when nothing completes for the run's timeout.
struct Watchdog {
    limit: Option<Duration>,
    idle: u32,
    since: Option<Instant>,
}

impl Watchdog {
    fn new(limit: Option<Duration>) -> Watchdog {
        Watchdog { limit, idle: 0, since: None }
    }

    fn tick(&mut self, progress: bool, what: &dyn Fn() -> String) -> Result<()> {
        if progress {
            self.idle = 0;
            self.since = None;
            return Ok(());
        }
        self.idle = self.idle.wrapping_add(1);
        if !self.idle.is_multiple_of(4096) {
            return Ok(());
        }
        let Some(limit) = self.limit else { return Ok(()) };
        let since = *self.since.get_or_insert_with(Instant::now);
        if since.elapsed() > limit {
            return Err(Error::Runtime(format!(
                "{} for {} s (--timeout): the peer stopped, or the path between the adapters is broken",
                what(),
                limit.as_secs_f64()
            )));
        }
        Ok(())
    }
}

/// The clock of a timed loop (-D, --run_infinitely): when the loop ends,
/// which completions count, and for --run_infinitely when a line is due.
/// As perftest's alarms, a -D run's measured middle is fixed from the
/// start: what is polled from `margin` to `seconds - margin` counts, over
/// exactly that time.
struct Clock {
    timing: Timing,
    start: Instant,
    /// --run_infinitely: when the last line was made.
    line: Instant,
    /// A Ctrl-C came at this moment: the loop ends as at its time.
    interrupted: Option<Instant>,
}

impl Clock {
    fn start(timing: Timing) -> Clock {
        let now = Instant::now();
        Clock { timing, start: now, line: now, interrupted: None }
    }

    /// Reads the clock at `now`: whether time is up (or the run was
    /// interrupted), and for --run_infinitely whether a line is due (the
    /// time since the last one, the next starting now).
    fn read(&mut self, now: Instant) -> (bool, Option<Duration>) {
        if self.interrupted.is_none() && interrupt::reason() != 0 {
            self.interrupted = Some(now);
        }
        let over = self.interrupted.is_some();
        match self.timing {
            Timing::Iterations => (false, None),
            Timing::Duration { seconds, .. } => (over || now >= self.start + secs(seconds), None),
            Timing::Infinitely { seconds } => {
                if over || now - self.line < secs(seconds) {
                    return (over, None);
                }
                let since = now - self.line;
                self.line = now;
                (false, Some(since))
            }
        }
    }

    /// Whether what was polled at `at` counts: in -D's measured middle, or
    /// before --run_infinitely was interrupted.
    fn counts(&self, at: Instant) -> bool {
        match self.timing {
            Timing::Iterations => true,
            Timing::Duration { seconds, margin } => {
                at >= self.start + secs(margin) && at < self.start + secs(seconds - margin)
            }
            Timing::Infinitely { .. } => self.interrupted.is_none_or(|i| at < i),
        }
    }

    /// The time the counted figures cover: -D's measured middle, or
    /// --run_infinitely's last line to the interruption.
    fn measured_ns(&self) -> u64 {
        match self.timing {
            Timing::Iterations => 0,
            Timing::Duration { seconds, margin } => secs(seconds - 2 * margin).as_nanos() as u64,
            Timing::Infinitely { .. } => {
                self.interrupted.map_or(0, |i| i.saturating_duration_since(self.line).as_nanos() as u64)
            }
        }
    }

    /// After the loop has told the peer: a -D run that a Ctrl-C cut short
    /// stops here (--run_infinitely goes on to check and report first).
    fn stop_if_cut_short(&self) -> Result<()> {
        match self.timing {
            Timing::Duration { .. } if self.interrupted.is_some() => interrupt::check(),
            _ => Ok(()),
        }
    }
}

fn secs(n: u32) -> Duration {
    Duration::from_secs(n as u64)
}

/// wr_id of the zero-length message that ends a timed loop, or'd with its queue pair.
const END_MARK: u64 = 1 << 63;

/// The timed loops of one size on one side.
struct Loop<'a> {
    link: &'a mut Link,
    p: &'a TestParams,
    layout: Layout,
    size: u64,
    timeout: Option<Duration>,
    side: Side,
    /// Receives posted and not yet consumed, per queue pair.
    waiting: &'a mut [u64],
}

/// Where a bandwidth loop of one size stands: perftest's counters per
/// queue pair and in all, the times its figures come from, and the clock
/// of a timed loop.
struct BwState {
    timed: bool,
    /// Whether this side posts requests, and whether it receives the peer's sends.
    sending: bool,
    receiving: bool,
    qps: usize,
    iters: u64,
    /// Messages of the whole loop (iterations on every queue pair).
    total: u64,
    cq_mod: u64,
    op: Op,
    /// Whether the peak is computed, from every post and completion time.
    peak: bool,
    times: BwTimes,
    /// Requests posted, and completed (a signaled completion completes its
    /// batch), per queue pair.
    scnt: Vec<u64>,
    ccnt: Vec<u64>,
    /// Receives consumed, and posted (from those still posted before this
    /// size), per queue pair.
    rcnt: Vec<u64>,
    rposted: Vec<u64>,
    /// Requests completed and messages received, on every queue pair.
    tot_c: u64,
    tot_r: u64,
    /// Timed: the peer's end marker came on each queue pair; this side's were sent.
    ended: Vec<bool>,
    sent_end: bool,
    clock: Clock,
    /// Timed: time is up (or the run was interrupted).
    over: bool,
    /// Timed: completions in the measured middle (--run_infinitely: since the last line).
    counted: u64,
    /// The zero of the post and completion times.
    origin: Instant,
    first_post: Option<Instant>,
    watchdog: Watchdog,
}

impl BwState {
    fn new(
        p: &TestParams,
        size: u64,
        waiting: &[u64],
        timeout: Option<Duration>,
        sending: bool,
        receiving: bool,
    ) -> BwState {
        let (qps, iters) = (p.qps as usize, p.iters as u64);
        let total = iters * qps as u64;
        let peak = sending && p.peak();
        BwState {
            timed: p.timing.is_timed(),
            sending,
            receiving,
            qps,
            iters,
            total,
            cq_mod: p.cq_mod(size) as u64,
            op: match p.test.verb() {
                Verb::Write => Op::Write,
                Verb::Read => Op::Read,
                Verb::Send => Op::Send,
            },
            peak,
            times: BwTimes {
                posted: Vec::with_capacity(if peak { total as usize } else { 0 }),
                completed: vec![None; if peak { total as usize } else { 0 }],
                ..BwTimes::default()
            },
            scnt: vec![0; qps],
            ccnt: vec![0; qps],
            rcnt: vec![0; qps],
            rposted: waiting.to_vec(),
            tot_c: 0,
            tot_r: 0,
            ended: vec![false; qps],
            sent_end: false,
            clock: Clock::start(p.timing),
            over: false,
            counted: 0,
            origin: Instant::now(),
            first_post: None,
            watchdog: Watchdog::new(timeout),
        }
    }

    fn sending_left(&self) -> bool {
        if self.timed { self.sending && !self.sent_end } else { self.sending && self.tot_c < self.total }
    }

    fn receiving_left(&self) -> bool {
        if self.timed {
            self.receiving && !self.ended.iter().all(|&e| e)
        } else {
            self.receiving && self.tot_r < self.total
        }
    }
}

/// `t` in nanoseconds from `origin`.
fn ns(origin: Instant, t: Instant) -> u64 {
    t.duration_since(origin).as_nanos() as u64
}

/// What a latency loop's wait saw arrive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Arrival {
    /// The peer's message of this iteration.
    Message,
    /// The zero-length message that ends a timed loop.
    End,
}

impl Loop<'_> {
    /// Posts one receive on queue pair `q`, as long as the largest message.
    fn post_recv(&mut self, q: usize) -> Result<()> {
        self.link.post_recv(q, self.layout.dst(q), self.layout.slot as u32, q as u64)
    }

    /// Receives posted before the peer may send: perftest's rx depth for
    /// the receiving side of a send test, one for a write latency test on
    /// GPU memory or a timed one (its end arrives as a receive), topped up
    /// from what the previous size left.
    fn prepost(&mut self) -> Result<()> {
        let p = self.p;
        let want = match p.test {
            Test::SendBw if receives_data(p.test, self.side, p.bidirectional) => p.rx_depth,
            Test::SendLat => p.rx_depth,
            Test::WriteLat if !polls_memory(self.link) || p.timing.is_timed() => 1,
            _ => 0,
        };
        for q in 0..p.qps as usize {
            while self.waiting[q] < want as u64 {
                self.post_recv(q)?;
                self.waiting[q] += 1;
            }
        }
        Ok(())
    }

    /// Ends a timed loop at the peer: a zero-length message on each queue
    /// pair, after everything this side sent on it (`op`: SEND, or a WRITE
    /// with immediate where the peer waits for writes), signaled; returns
    /// once each has completed.
    fn send_end(&mut self, op: Op, watchdog: &mut Watchdog) -> Result<()> {
        let qps = self.p.qps as usize;
        for q in 0..qps {
            let local = self.layout.src(q);
            self.link.post(Request {
                qp: q,
                op,
                local,
                len: 0,
                remote: 0,
                wr_id: END_MARK | q as u64,
                signaled: true,
            })?;
        }
        let mut done = 0;
        while done < qps {
            let n = self.link.poll_send(|_| {})?;
            done += n;
            watchdog.tick(n > 0, &|| format!("{done} of {qps} end markers completed"))?;
        }
        Ok(())
    }

    /// perftest's run_iter_bw: up to tx depth outstanding per queue pair,
    /// one signaled request in cq_mod, post and completion times for the
    /// figures; the receiving side of a send test reposts its receives.
    /// Timed (-D), the completions of the measured middle count; with
    /// --run_infinitely, `lines` hears every -D seconds what completed
    /// since its last line. A timed loop ends at a whole batch of cq_mod
    /// requests, waits for them, then ends the peer's receive loop.
    fn bandwidth(
        &mut self,
        sending: bool,
        receiving: bool,
        lines: &mut dyn FnMut(BwFigures),
    ) -> Result<Option<BwFigures>> {
        let mut b = BwState::new(self.p, self.size, self.waiting, self.timeout, sending, receiving);
        loop {
            let (sending_left, receiving_left) = (b.sending_left(), b.receiving_left());
            if !sending_left && !receiving_left {
                break;
            }
            if b.timed {
                let (now_over, line) = b.clock.read(Instant::now());
                b.over = now_over;
                if let Some(since) = line.filter(|_| sending) {
                    lines(figures::bandwidth_over(self.size, b.counted, since.as_nanos() as u64));
                    b.counted = 0;
                }
            }
            let mut progress = false;
            if sending_left {
                self.post_sends(&mut b)?;
                progress |= self.complete_sends(&mut b)?;
            }
            if receiving_left {
                progress |= self.receive(&mut b)?;
            }
            let (timed, tot_c, tot_r, total) = (b.timed, b.tot_c, b.tot_r, b.total);
            b.watchdog.tick(progress, &|| {
                if timed {
                    format!("{tot_c} requests completed and {tot_r} messages received")
                } else {
                    format!("{tot_c} of {total} requests completed and {tot_r} of {total} messages received")
                }
            })?;
        }
        for (w, (posted, used)) in self.waiting.iter_mut().zip(b.rposted.iter().zip(&b.rcnt)) {
            *w = posted - used;
        }
        b.clock.stop_if_cut_short()?;
        if !sending {
            return Ok(None);
        }
        if b.timed {
            return Ok(Some(figures::bandwidth_over(self.size, b.counted, b.clock.measured_ns())));
        }
        let mut times = b.times;
        times.first_post = times.posted.first().copied().unwrap_or_else(|| b.first_post.map_or(0, |t| ns(b.origin, t)));
        Ok(Some(figures::bandwidth(self.size, b.total, &times, b.cq_mod as u32)))
    }

    /// Posts on each queue pair up to the tx depth outstanding: to the last
    /// iteration, or timed, until time is up and then to the end of the
    /// batch, whose last request is signaled.
    fn post_sends(&mut self, b: &mut BwState) -> Result<()> {
        let (size, cq_mod, iters) = (self.size as u32, b.cq_mod, b.iters);
        for q in 0..b.qps {
            loop {
                let more = if b.timed { !b.over || !b.scnt[q].is_multiple_of(cq_mod) } else { b.scnt[q] < iters };
                if !more || b.scnt[q] >= self.p.tx_depth as u64 + b.ccnt[q] {
                    break;
                }
                let signaled = b.scnt[q] % cq_mod == cq_mod - 1 || (!b.timed && b.scnt[q] == iters - 1);
                let now = Instant::now();
                if b.peak {
                    b.times.posted.push(ns(b.origin, now));
                }
                b.first_post.get_or_insert(now);
                let (local, remote) = match b.op {
                    Op::Read => (self.layout.dst(q), self.layout.src(q)),
                    _ => (self.layout.src(q), self.layout.dst(q)),
                };
                let op = b.op;
                self.link.post(Request {
                    qp: q,
                    op,
                    local,
                    len: size,
                    remote: remote as u64,
                    wr_id: q as u64,
                    signaled,
                })?;
                b.scnt[q] += 1;
            }
        }
        Ok(())
    }

    /// Polls this side's completions, each counting its batch of cq_mod
    /// requests; a timed loop whose time is up and whose requests have all
    /// completed then ends the peer's receive loop. Whether any completed.
    fn complete_sends(&mut self, b: &mut BwState) -> Result<bool> {
        let (qps, iters, total, cq_mod, timed, peak, origin) =
            (b.qps, b.iters, b.total, b.cq_mod, b.timed, b.peak, b.origin);
        let stray = Cell::new(false);
        let mut last = None;
        let done = self.link.poll_send(|c| {
            let q = c.wr_id as usize;
            if q >= qps || b.ccnt[q] >= b.scnt[q] {
                stray.set(true);
                return;
            }
            let fill = if timed { cq_mod } else { cq_mod.min(iters - b.ccnt[q]) };
            b.ccnt[q] += fill;
            b.tot_c += fill;
            let now = Instant::now();
            if timed && b.clock.counts(now) {
                b.counted += fill;
            }
            if peak {
                b.times.completed[(b.tot_c.min(total) - 1) as usize] = Some(ns(origin, now));
            }
            last = Some(now);
        })?;
        if let Some(t) = last {
            b.times.last_completion = ns(origin, t);
        }
        stray_error(&stray)?;
        if timed && b.over && b.scnt.iter().zip(&b.ccnt).all(|(s, c)| s == c) {
            // Only a peer that receives sends is in a loop that waits for the end.
            if b.op == Op::Send {
                self.send_end(Op::Send, &mut b.watchdog)?;
            }
            b.sent_end = true;
        }
        Ok(done > 0)
    }

    /// Polls the receives of the peer's sends (or, timed, its end markers),
    /// each of the full size, and reposts up to the rx depth. Whether any
    /// arrived.
    fn receive(&mut self, b: &mut BwState) -> Result<bool> {
        let (qps, size, timed) = (b.qps, self.size as u32, b.timed);
        let (stray, wrong_len) = (Cell::new(false), Cell::new(None));
        let got = self.link.poll_recv(|c| {
            let q = c.wr_id as usize;
            if q >= qps || b.rcnt[q] >= b.rposted[q] {
                stray.set(true);
                return;
            }
            b.rcnt[q] += 1;
            if timed && c.byte_len == 0 {
                b.ended[q] = true;
                return;
            }
            b.tot_r += 1;
            if c.byte_len != size {
                wrong_len.set(Some(c.byte_len));
            }
        })?;
        stray_error(&stray)?;
        if let Some(len) = wrong_len.get() {
            return Err(Error::CheckFailed(format!("a send of {size} B arrived as {len} B")));
        }
        let rx_depth = self.p.rx_depth as u64;
        for q in 0..qps {
            while (timed || b.rposted[q] < b.iters) && !b.ended[q] && b.rposted[q] - b.rcnt[q] < rx_depth {
                self.post_recv(q)?;
                b.rposted[q] += 1;
            }
        }
        Ok(got > 0)
    }

    /// perftest's latency loops: the client posts and waits for the answer
    /// (or, for read, the completion) each iteration; the server answers
    /// write and send. Only the client's post times make figures. Timed
    /// (-D), the client counts the iterations whose own request completes
    /// in the measured middle, and when time is up ends the server's loop
    /// in band. Returns the figures and how many of the peer's messages
    /// arrived here.
    fn latency(&mut self) -> Result<(Figures, u64)> {
        let (test, iters, size) = (self.p.test, self.p.iters as u64, self.size);
        let timed = self.p.timing.is_timed();
        let client = self.side == Side::Client;
        if test == Test::ReadLat && !client {
            return Ok((Figures::None, 0));
        }
        let layout = self.layout;
        let last = layout.src(0) + size as usize - 1;
        let arrival = layout.dst(0) + size as usize - 1;
        let memory_polling = test == Test::WriteLat && polls_memory(self.link);
        let mut posts = Vec::with_capacity(iters as usize);
        let origin = Instant::now();
        let mut watchdog = Watchdog::new(self.timeout);
        let mut clock = Clock::start(self.p.timing);
        let (mut counted, mut arrived) = (0u64, 0u64);
        let mut i = 0u64;
        while timed || i < iters {
            i += 1;
            let mark = i as u8;
            if !client {
                if self.wait_arrival(test, memory_polling, arrival, mark, &mut watchdog)? == Arrival::End {
                    break;
                }
                arrived += 1;
            } else if !timed {
                posts.push(origin.elapsed().as_nanos() as u64);
            }
            if memory_polling {
                self.link.region.write(last, &[mark])?;
            }
            self.ping(memory_polling, i, &mut watchdog)?;
            // perftest counts the iterations whose own request completes in the middle.
            let now = Instant::now();
            let over = client && timed && clock.read(now).0;
            counted += (client && timed && clock.counts(now)) as u64;
            if client && test != Test::ReadLat {
                self.wait_arrival(test, memory_polling, arrival, mark, &mut watchdog)?;
                arrived += 1;
            }
            if over {
                break;
            }
        }
        if client && timed && test != Test::ReadLat {
            let end = if test == Test::SendLat { Op::Send } else { Op::WriteImm(0) };
            self.send_end(end, &mut watchdog)?;
        }
        clock.stop_if_cut_short()?;
        if !client {
            return Ok((Figures::None, arrived));
        }
        let divisor = if test == Test::ReadLat { 1 } else { 2 };
        let figures = if timed {
            Figures::LatDuration(figures::latency_over(counted, clock.measured_ns(), divisor))
        } else {
            Figures::Lat(figures::latency(&posts, divisor))
        };
        Ok((figures, if test == Test::ReadLat { i } else { arrived }))
    }

    /// Posts iteration `i`'s request of a latency test (a READ of the
    /// peer's source, or this side's message to the peer) and waits for its
    /// completion.
    fn ping(&mut self, memory_polling: bool, i: u64, watchdog: &mut Watchdog) -> Result<()> {
        let layout = self.layout;
        let (op, local, remote) = match self.p.test {
            Test::ReadLat => (Op::Read, layout.dst(0), layout.src(0)),
            Test::WriteLat if memory_polling => (Op::Write, layout.src(0), layout.dst(0)),
            Test::WriteLat => (Op::WriteImm(i as u32), layout.src(0), layout.dst(0)),
            _ => (Op::Send, layout.src(0), layout.dst(0)),
        };
        let len = self.size as u32;
        self.link.post(Request { qp: 0, op, local, len, remote: remote as u64, wr_id: 0, signaled: true })?;
        loop {
            let n = self.link.poll_send(|_| {})?;
            if n > 0 {
                break;
            }
            watchdog.tick(false, &|| format!("iteration {i}: no completion of this side's request"))?;
        }
        watchdog.tick(true, &String::new)
    }

    /// Waits for the peer's message of iteration `mark`: its last byte
    /// (write on host memory) or a receive completion, which is then
    /// reposted; in a timed loop, or the zero-length end marker.
    fn wait_arrival(
        &mut self,
        test: Test,
        memory_polling: bool,
        arrival: usize,
        mark: u8,
        watchdog: &mut Watchdog,
    ) -> Result<Arrival> {
        let what = || format!("no message from the peer (iteration {})", mark);
        let timed = self.p.timing.is_timed();
        let mut got = Arrival::Message;
        if memory_polling {
            let mut spins = 0u32;
            while self.link.region.peek(arrival) != Some(mark) {
                spins = spins.wrapping_add(1);
                // The end marker is the only receive a memory-polling loop posts.
                if timed && spins.is_multiple_of(256) && self.link.poll_recv(|_| {})? > 0 {
                    got = Arrival::End;
                    self.post_recv(0)?;
                    break;
                }
                watchdog.tick(false, &what)?;
            }
            std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
        } else {
            loop {
                let mut len = None;
                let n = self.link.poll_recv(|c| len = Some(c.byte_len))?;
                if n > 0 {
                    if timed && len == Some(0) {
                        got = Arrival::End;
                    } else if test == Test::SendLat && len != Some(self.size as u32) {
                        return Err(Error::CheckFailed(format!("a send of {} B arrived as {len:?} B", self.size)));
                    }
                    break;
                }
                watchdog.tick(false, &what)?;
            }
            self.post_recv(0)?;
        }
        watchdog.tick(true, &what)?;
        Ok(got)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rdma::figures::{LatDurationFigures, LatFigures};
    use crate::rdma::plan::{Agreement, Sizes};

    fn params(test: Test, bidirectional: bool) -> TestParams {
        let a = Agreement {
            tests: vec![test],
            sizes: Sizes::Default,
            iters: 10,
            qps: 2,
            tx_depth: 0,
            bidirectional,
            seed: 1,
            timing: Timing::Iterations,
            mtu: 0,
        };
        TestParams::new(&a, false, test)
    }

    fn report(figures: Figures, wrong: u64) -> Report {
        Report {
            test: Test::WriteBw,
            size: 64,
            data: DataCheck { checked_bytes: 64, wrong_bytes: wrong, first_wrong: (wrong > 0).then_some(5) },
            figures,
        }
    }

    fn bw(peak: Option<f64>, average: f64) -> Figures {
        // 10 iterations on each of 2 queue pairs.
        Figures::Bw(BwFigures { messages: 20, peak, average, msg_rate_mpps: average / 1e6 })
    }

    #[test]
    fn both_sides_print_the_clients_figures_and_both_checks() {
        let p = params(Test::WriteBw, false);
        let (client, server) = (report(bw(Some(2.0), 1.0), 0), report(Figures::None, 3));
        let a = row(&p, 64, Side::Client, &client, &server);
        let b = row(&p, 64, Side::Server, &server, &client);
        assert_eq!(a, b);
        let Row::Bw(r) = a else { panic!("{a:?}") };
        assert_eq!((r.bw_peak_bytes_per_s, r.bw_avg_bytes_per_s, r.iterations), (Some(2.0), 1.0, 20));
        assert_eq!((r.data.checked_bytes, r.data.wrong_bytes, r.data.first_wrong), (128, 3, Some(5)));
    }

    #[test]
    fn bidirectional_rows_add_both_directions() {
        let p = params(Test::ReadBw, true);
        let r = row(&p, 64, Side::Client, &report(bw(Some(3.0), 2.0), 0), &report(bw(None, 1.0), 0));
        let Row::Bw(r) = r else { panic!() };
        assert_eq!((r.bw_peak_bytes_per_s, r.bw_avg_bytes_per_s), (Some(3.0), 3.0));
    }

    #[test]
    fn latency_rows_come_from_the_client() {
        let p = params(Test::SendLat, false);
        let lat =
            LatFigures { samples: 9, min: 1.0, max: 5.0, typical: 2.0, avg: 2.5, stdev: 1.0, p99: 5.0, p99_9: 5.0 };
        let r = row(&p, 2, Side::Server, &report(Figures::None, 0), &report(Figures::Lat(lat), 0));
        let Row::Lat(r) = r else { panic!() };
        assert_eq!((r.t_typical_us, r.iterations), (2.0, 10));
    }

    #[test]
    fn a_timed_latency_row_is_the_clients_average() {
        let p = params(Test::WriteLat, false);
        let l = LatDurationFigures { iterations: 4000, avg: 250.0, tps: 2000.0 };
        let r = row(&p, 2, Side::Server, &report(Figures::None, 0), &report(Figures::LatDuration(l), 0));
        assert_eq!(
            r,
            Row::LatDuration(LatDurationRow {
                bytes: 2,
                iterations: 4000,
                t_avg_us: 250.0,
                tps: 2000.0,
                data: DataCheck { checked_bytes: 128, wrong_bytes: 0, first_wrong: None }
            })
        );
    }

    /// A -D run counts only what completes in its measured middle, and
    /// ends once the margin after it has passed; --run_infinitely makes a
    /// line every -D seconds.
    #[test]
    fn the_clock_of_a_timed_loop() {
        let ms = |n: u64| Duration::from_millis(n);
        let mut c = Clock::start(Timing::Duration { seconds: 2, margin: 0 });
        let t0 = c.start;
        assert_eq!(c.read(t0 + ms(1500)), (false, None));
        assert!(c.counts(t0) && c.counts(t0 + ms(1999)) && !c.counts(t0 + ms(2000)));
        assert_eq!(c.read(t0 + ms(2100)), (true, None));
        assert_eq!(c.measured_ns(), 2_000_000_000);
        let mut c = Clock::start(Timing::Duration { seconds: 4, margin: 1 });
        let t0 = c.start;
        assert_eq!(c.read(t0 + ms(3500)), (false, None));
        assert!(!c.counts(t0 + ms(999)) && c.counts(t0 + ms(1000)) && c.counts(t0 + ms(2999)));
        assert!(!c.counts(t0 + ms(3000)));
        assert_eq!(c.read(t0 + ms(4000)), (true, None));
        // The middle: from 1 s to 3 s.
        assert_eq!(c.measured_ns(), 2_000_000_000);
        assert_eq!(c.stop_if_cut_short(), Ok(()));
        let mut c = Clock::start(Timing::Infinitely { seconds: 1 });
        let t0 = c.start;
        assert_eq!(c.read(t0 + ms(900)), (false, None));
        assert_eq!(c.read(t0 + ms(1200)), (false, Some(ms(1200))));
        assert_eq!(c.read(t0 + ms(2100)), (false, None));
        assert_eq!(c.read(t0 + ms(2300)), (false, Some(ms(1100))));
        // Interrupted at 2.8 s: the last stretch is 0.5 s, and nothing after counts.
        c.interrupted = Some(t0 + ms(2800));
        assert_eq!(c.read(t0 + ms(2900)), (true, None));
        assert!(c.counts(t0 + ms(2700)) && !c.counts(t0 + ms(2850)));
        assert_eq!(c.measured_ns(), 500_000_000);
    }

    #[test]
    fn the_write_latency_marker_is_checked_too() {
        let key = data::key(1, Side::Client, 0);
        let mut got = vec![0u8; 16];
        data::fill(&mut got, key);
        got[15] = 10;
        assert_eq!(counted(&got, key, 10).wrong_bytes, 0);
        assert_eq!(counted(&got, key, 11), DataCheck { checked_bytes: 16, wrong_bytes: 1, first_wrong: Some(15) });
        assert_eq!(counted(&[], key, 1), DataCheck::default());
    }
}
