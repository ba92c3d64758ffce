//! The out-of-band messages the two sides of an RDMA test exchange, and
//! their wire format. A server reads whatever any process on the network
//! sends to its port, so parsing is strict and bounded: a fixed header
//! (magic, version, kind, length), a payload of at most [`MAX_PAYLOAD`]
//! bytes read into a fixed buffer, every count and string length checked
//! against a constant before it is used, every value checked for range,
//! and nothing left over. Any violation is one sentence, never a panic.
//! Each value's writing and reading sit side by side (`Field`), so that a
//! message is the list of its fields in both directions.

use super::figures::{BwFigures, LatDurationFigures, LatFigures};
use super::plan::{Agreement, BufferMemory, MAX_QPS, MAX_SL, MTUS, Sizes, Test, Timing};
use crate::error::{Error, Result};
use crate::record::rdma::DataCheck;

pub const MAGIC: [u8; 4] = *b"QBRD";
/// Bumped whenever a message changes; both sides must speak the same one
/// (2: -D, --run_infinitely and -m agreed, -S and --tclass described, the
/// messages a bandwidth figure counts, a timed latency's figures).
pub const VERSION: u16 = 2;
/// magic (4), version (2), kind (1), reserved (1), payload length (4).
pub const HEADER_LEN: usize = 12;
/// The largest payload (an endpoint with [`MAX_QPS`] queue pairs fits).
pub const MAX_PAYLOAD: usize = 4096;
/// Longest host or device name carried.
pub const MAX_NAME: usize = 255;
/// Longest reason an aborting side gives.
pub const MAX_REASON: usize = 1024;

/// One side's queue pair as the other needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QpAddr {
    pub qpn: u32,
    pub psn: u32,
}

/// Everything the peer needs to reach this side's queue pairs and memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub host: String,
    pub device: String,
    pub port: u8,
    pub lid: u16,
    pub gid: [u8; 16],
    pub gid_index: Option<u32>,
    /// RoCE (Ethernet link layer) rather than InfiniBand.
    pub roce: bool,
    /// Active MTU of the port, bytes.
    pub mtu: u32,
    /// The service level and GRH traffic class of this side's packets.
    pub sl: u8,
    pub traffic_class: u8,
    pub memory: BufferMemory,
    pub rkey: u32,
    /// The registered region the peer may read and write: [addr, addr + len).
    pub addr: u64,
    pub len: u64,
    pub qps: Vec<QpAddr>,
}

/// Where a side is in the sequence of a test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Queue pairs connected, ready for traffic.
    Ready,
    /// About to time this size.
    Go,
    /// Done with this size: every request of this side has completed.
    Done,
}

/// "This side is at `phase` of `test` with `size` bytes": both sides swap
/// one and go on only when they match.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StepMarker {
    pub phase: Phase,
    pub test: Test,
    pub size: u64,
}

/// What a side measured and found at one size.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Figures {
    /// This side only received (or served reads).
    None,
    Bw(BwFigures),
    Lat(LatFigures),
    /// A latency test run for a duration (-D).
    LatDuration(LatDurationFigures),
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Report {
    pub test: Test,
    pub size: u64,
    /// The data this side received, checked.
    pub data: DataCheck,
    pub figures: Figures,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    Hello(Agreement),
    Endpoint(Endpoint),
    Step(StepMarker),
    Report(Report),
    /// The sender stopped: its exit code and why.
    Abort {
        code: u8,
        reason: String,
    },
}

impl Message {
    fn kind(&self) -> u8 {
        match self {
            Message::Hello(_) => 1,
            Message::Endpoint(_) => 2,
            Message::Step(_) => 3,
            Message::Report(_) => 4,
            Message::Abort { .. } => 5,
        }
    }

    /// What the message is, for "expected X, got Y".
    pub fn what(&self) -> &'static str {
        match self {
            Message::Hello(_) => "the options (hello)",
            Message::Endpoint(_) => "the queue pair addresses",
            Message::Step(_) => "a step marker",
            Message::Report(_) => "a result report",
            Message::Abort { .. } => "an abort",
        }
    }
}

/// A broken message from the peer: the sentence says what was wrong.
fn bad(what: impl std::fmt::Display) -> Error {
    Error::Runtime(format!("malformed handshake message: {what}"))
}

/// The whole frame: header and payload.
pub fn encode(msg: &Message) -> Vec<u8> {
    let mut w = Writer(Vec::with_capacity(64));
    match msg {
        Message::Hello(a) => a.put(&mut w),
        Message::Endpoint(e) => e.put(&mut w),
        Message::Step(s) => s.put(&mut w),
        Message::Report(r) => r.put(&mut w),
        Message::Abort { code, reason } => {
            w.u8(*code);
            w.str_max(reason, MAX_REASON);
        }
    }
    let payload = w.0;
    let mut frame = Vec::with_capacity(HEADER_LEN + payload.len());
    frame.extend_from_slice(&MAGIC);
    frame.extend_from_slice(&VERSION.to_le_bytes());
    frame.push(msg.kind());
    frame.push(0);
    frame.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    frame.extend_from_slice(&payload);
    frame
}

/// Checks a header and returns the message kind and payload length.
pub fn decode_header(h: &[u8; HEADER_LEN]) -> Result<(u8, usize)> {
    if h[..4] != MAGIC {
        let shown: String =
            h[..4].iter().map(|&b| if b.is_ascii_graphic() || b == b' ' { b as char } else { '.' }).collect();
        return Err(Error::Runtime(format!(
            "the peer is not a qbench rdma peer: it sent {:02x} {:02x} {:02x} {:02x} ('{shown}') where the handshake starts with 'QBRD'",
            h[0], h[1], h[2], h[3]
        )));
    }
    let version = u16::from_le_bytes([h[4], h[5]]);
    if version != VERSION {
        return Err(Error::Usage(format!(
            "the peer speaks version {version} of the qbench rdma handshake and this qbench version {VERSION}: run the same qbench on both sides"
        )));
    }
    let kind = h[6];
    if !(1..=5).contains(&kind) {
        return Err(bad(format!("unknown message kind {kind}")));
    }
    let len = u32::from_le_bytes([h[8], h[9], h[10], h[11]]) as usize;
    if len > MAX_PAYLOAD {
        return Err(bad(format!("a payload of {len} bytes exceeds the limit of {MAX_PAYLOAD}")));
    }
    Ok((kind, len))
}

/// Parses a payload of kind `kind` (from [`decode_header`]).
pub fn decode_payload(kind: u8, payload: &[u8]) -> Result<Message> {
    let mut r = Reader { buf: payload, at: 0 };
    let msg = match kind {
        1 => Message::Hello(Agreement::take(&mut r)?),
        2 => Message::Endpoint(Endpoint::take(&mut r)?),
        3 => Message::Step(StepMarker::take(&mut r)?),
        4 => Message::Report(Report::take(&mut r)?),
        5 => {
            let code = r.u8()?;
            Message::Abort { code, reason: r.str(MAX_REASON)? }
        }
        k => return Err(bad(format!("unknown message kind {k}"))),
    };
    if r.at != payload.len() {
        return Err(bad(format!("{} bytes after the end of {}", payload.len() - r.at, msg.what())));
    }
    Ok(msg)
}

/// Parses one whole frame held in memory (the in-process and MPI channels).
pub fn decode(frame: &[u8]) -> Result<Message> {
    let header: &[u8; HEADER_LEN] = frame
        .get(..HEADER_LEN)
        .and_then(|h| h.try_into().ok())
        .ok_or_else(|| bad(format!("truncated: {} bytes, shorter than the {HEADER_LEN}-byte header", frame.len())))?;
    let (kind, len) = decode_header(header)?;
    let payload = &frame[HEADER_LEN..];
    if payload.len() != len {
        return Err(bad(format!("the header announces {len} bytes of payload, {} follow", payload.len())));
    }
    decode_payload(kind, payload)
}

/// A value of the wire format, its writing beside its reading: every value
/// read is checked for range where it is read, in the order it was written.
trait Field: Sized {
    fn put(&self, w: &mut Writer);
    fn take(r: &mut Reader) -> Result<Self>;
}

impl Field for Test {
    fn put(&self, w: &mut Writer) {
        w.u8(self.code());
    }
    fn take(r: &mut Reader) -> Result<Test> {
        let code = r.u8()?;
        Test::from_code(code).ok_or_else(|| bad(format!("unknown test code {code}")))
    }
}

/// A tag, then the size of `-s` (0 for the others).
impl Field for Sizes {
    fn put(&self, w: &mut Writer) {
        let (tag, size) = match *self {
            Sizes::Default => (0, 0),
            Sizes::Single(s) => (1, s),
            Sizes::All => (2, 0),
        };
        w.u8(tag);
        w.u64(size);
    }
    fn take(r: &mut Reader) -> Result<Sizes> {
        let (tag, size) = (r.u8()?, r.u64()?);
        match tag {
            0 => Ok(Sizes::Default),
            1 => Ok(Sizes::Single(size)),
            2 => Ok(Sizes::All),
            _ => Err(bad(format!("unknown size kind {tag}"))),
        }
    }
}

/// A kind, then the seconds and the margin (0 where the kind has none).
impl Field for Timing {
    fn put(&self, w: &mut Writer) {
        let (kind, seconds, margin) = match *self {
            Timing::Iterations => (0, 0, 0),
            Timing::Duration { seconds, margin } => (1, seconds, margin),
            Timing::Infinitely { seconds } => (2, seconds, 0),
        };
        w.u8(kind);
        w.u32(seconds);
        w.u32(margin);
    }
    fn take(r: &mut Reader) -> Result<Timing> {
        let (kind, seconds, margin) = (r.u8()?, r.u32()?, r.u32()?);
        match kind {
            0 => Ok(Timing::Iterations),
            1 => Ok(Timing::Duration { seconds, margin }),
            2 => Ok(Timing::Infinitely { seconds }),
            _ => Err(bad(format!("unknown timing kind {kind}"))),
        }
    }
}

/// The tests (a count, then each code), then the options; read back, the
/// whole agreement is validated as a plan's is.
impl Field for Agreement {
    fn put(&self, w: &mut Writer) {
        w.u8(self.tests.len() as u8);
        for t in &self.tests {
            t.put(w);
        }
        self.sizes.put(w);
        w.u32(self.iters);
        w.u32(self.qps);
        w.u32(self.tx_depth);
        w.u8(self.bidirectional as u8);
        w.u64(self.seed);
        self.timing.put(w);
        w.u32(self.mtu);
    }
    fn take(r: &mut Reader) -> Result<Agreement> {
        let n = r.u8()? as usize;
        if n == 0 || n > Test::ALL.len() {
            return Err(bad(format!("{n} tests (1 to {} allowed)", Test::ALL.len())));
        }
        let mut tests = Vec::with_capacity(Test::ALL.len());
        for _ in 0..n {
            let t = Test::take(r)?;
            if tests.contains(&t) {
                return Err(bad(format!("test {} listed twice", t.name())));
            }
            tests.push(t);
        }
        let sizes = Sizes::take(r)?;
        let (iters, qps, tx_depth, bidirectional, seed) = (r.u32()?, r.u32()?, r.u32()?, r.bool()?, r.u64()?);
        let timing = Timing::take(r)?;
        let a = Agreement { tests, sizes, iters, qps, tx_depth, bidirectional, seed, timing, mtu: r.u32()? };
        a.validate().map_err(|e| bad(e.message()))?;
        Ok(a)
    }
}

/// A kind, then the GPU (0 for host memory).
impl Field for BufferMemory {
    fn put(&self, w: &mut Writer) {
        let (kind, gpu) = match *self {
            BufferMemory::Host => (0, 0),
            BufferMemory::CudaDmabuf { gpu } => (1, gpu),
            BufferMemory::CudaPeermem { gpu } => (2, gpu),
        };
        w.u8(kind);
        w.u32(gpu);
    }
    fn take(r: &mut Reader) -> Result<BufferMemory> {
        let (kind, gpu) = (r.u8()?, r.u32()?);
        match kind {
            0 => Ok(BufferMemory::Host),
            1 => Ok(BufferMemory::CudaDmabuf { gpu }),
            2 => Ok(BufferMemory::CudaPeermem { gpu }),
            _ => Err(bad(format!("unknown memory kind {kind}"))),
        }
    }
}

/// 24-bit numbers in 32 bits.
impl Field for QpAddr {
    fn put(&self, w: &mut Writer) {
        w.u32(self.qpn);
        w.u32(self.psn);
    }
    fn take(r: &mut Reader) -> Result<QpAddr> {
        let (qpn, psn) = (r.u32()?, r.u32()?);
        if qpn > 0xff_ffff || psn > 0xff_ffff {
            return Err(bad(format!("queue pair number {qpn:#x} or PSN {psn:#x} wider than 24 bits")));
        }
        Ok(QpAddr { qpn, psn })
    }
}

/// The port's names and addresses, the region, then the queue pairs (a
/// count, then each); no GID index is `u32::MAX`.
impl Field for Endpoint {
    fn put(&self, w: &mut Writer) {
        w.str(&self.host);
        w.str(&self.device);
        w.u8(self.port);
        w.u16(self.lid);
        w.0.extend_from_slice(&self.gid);
        w.u32(self.gid_index.unwrap_or(u32::MAX));
        w.u8(self.roce as u8);
        w.u32(self.mtu);
        w.u8(self.sl);
        w.u8(self.traffic_class);
        self.memory.put(w);
        w.u32(self.rkey);
        w.u64(self.addr);
        w.u64(self.len);
        w.u16(self.qps.len() as u16);
        for q in &self.qps {
            q.put(w);
        }
    }
    fn take(r: &mut Reader) -> Result<Endpoint> {
        let (host, device) = (r.str(MAX_NAME)?, r.str(MAX_NAME)?);
        let (port, lid) = (r.u8()?, r.u16()?);
        let gid: [u8; 16] = r.bytes(16)?.try_into().map_err(|_| bad("short GID"))?;
        let gid_index = match r.u32()? {
            u32::MAX => None,
            i => Some(i),
        };
        let (roce, mtu) = (r.bool()?, r.u32()?);
        if !MTUS.contains(&mtu) {
            return Err(bad(format!("MTU {mtu} is not an InfiniBand MTU")));
        }
        let (sl, traffic_class) = (r.u8()?, r.u8()?);
        if sl > MAX_SL {
            return Err(bad(format!("service level {sl} is above {MAX_SL}")));
        }
        let memory = BufferMemory::take(r)?;
        let (rkey, addr, len) = (r.u32()?, r.u64()?, r.u64()?);
        if addr.checked_add(len).is_none() {
            return Err(bad(format!("a region of {len} bytes at {addr:#x} wraps around the address space")));
        }
        let n = r.u16()? as u32;
        if n == 0 || n > MAX_QPS {
            return Err(bad(format!("{n} queue pairs (1 to {MAX_QPS} allowed)")));
        }
        let qps = (0..n).map(|_| QpAddr::take(r)).collect::<Result<Vec<_>>>()?;
        Ok(Endpoint {
            host,
            device,
            port,
            lid,
            gid,
            gid_index,
            roce,
            mtu,
            sl,
            traffic_class,
            memory,
            rkey,
            addr,
            len,
            qps,
        })
    }
}

/// The phases in the order of their codes.
const PHASES: [Phase; 3] = [Phase::Ready, Phase::Go, Phase::Done];

impl Field for StepMarker {
    fn put(&self, w: &mut Writer) {
        w.u8(PHASES.iter().position(|&p| p == self.phase).unwrap_or(0) as u8);
        self.test.put(w);
        w.u64(self.size);
    }
    fn take(r: &mut Reader) -> Result<StepMarker> {
        let code = r.u8()?;
        let phase = *PHASES.get(code as usize).ok_or_else(|| bad(format!("unknown step {code}")))?;
        Ok(StepMarker { phase, test: Test::take(r)?, size: r.u64()? })
    }
}

/// Bytes checked and wrong, then the first wrong (`u64::MAX`: none).
impl Field for DataCheck {
    fn put(&self, w: &mut Writer) {
        w.u64(self.checked_bytes);
        w.u64(self.wrong_bytes);
        w.u64(self.first_wrong.unwrap_or(u64::MAX));
    }
    fn take(r: &mut Reader) -> Result<DataCheck> {
        let (checked_bytes, wrong_bytes) = (r.u64()?, r.u64()?);
        if wrong_bytes > checked_bytes {
            return Err(bad(format!("{wrong_bytes} wrong of {checked_bytes} checked bytes")));
        }
        let first_wrong = match r.u64()? {
            u64::MAX => None,
            o => Some(o),
        };
        Ok(DataCheck { checked_bytes, wrong_bytes, first_wrong })
    }
}

/// No peak is -1.
impl Field for BwFigures {
    fn put(&self, w: &mut Writer) {
        w.u64(self.messages);
        w.f64(self.peak.unwrap_or(-1.0));
        w.f64(self.average);
        w.f64(self.msg_rate_mpps);
    }
    fn take(r: &mut Reader) -> Result<BwFigures> {
        let (messages, peak) = (r.u64()?, r.f64_or_minus_one()?);
        Ok(BwFigures { messages, peak, average: r.figure()?, msg_rate_mpps: r.figure()? })
    }
}

impl Field for LatFigures {
    fn put(&self, w: &mut Writer) {
        w.u64(self.samples);
        for v in [self.min, self.max, self.typical, self.avg, self.stdev, self.p99, self.p99_9] {
            w.f64(v);
        }
    }
    fn take(r: &mut Reader) -> Result<LatFigures> {
        let samples = r.u64()?;
        let mut v = [0.0; 7];
        for x in &mut v {
            *x = r.figure()?;
        }
        let [min, max, typical, avg, stdev, p99, p99_9] = v;
        Ok(LatFigures { samples, min, max, typical, avg, stdev, p99, p99_9 })
    }
}

impl Field for LatDurationFigures {
    fn put(&self, w: &mut Writer) {
        w.u64(self.iterations);
        w.f64(self.avg);
        w.f64(self.tps);
    }
    fn take(r: &mut Reader) -> Result<LatDurationFigures> {
        Ok(LatDurationFigures { iterations: r.u64()?, avg: r.figure()?, tps: r.figure()? })
    }
}

/// A kind, then that kind's figures.
impl Field for Figures {
    fn put(&self, w: &mut Writer) {
        match self {
            Figures::None => w.u8(0),
            Figures::Bw(b) => {
                w.u8(1);
                b.put(w);
            }
            Figures::Lat(l) => {
                w.u8(2);
                l.put(w);
            }
            Figures::LatDuration(l) => {
                w.u8(3);
                l.put(w);
            }
        }
    }
    fn take(r: &mut Reader) -> Result<Figures> {
        match r.u8()? {
            0 => Ok(Figures::None),
            1 => Ok(Figures::Bw(BwFigures::take(r)?)),
            2 => Ok(Figures::Lat(LatFigures::take(r)?)),
            3 => Ok(Figures::LatDuration(LatDurationFigures::take(r)?)),
            f => Err(bad(format!("unknown figures kind {f}"))),
        }
    }
}

impl Field for Report {
    fn put(&self, w: &mut Writer) {
        self.test.put(w);
        w.u64(self.size);
        self.data.put(w);
        self.figures.put(w);
    }
    fn take(r: &mut Reader) -> Result<Report> {
        let (test, size) = (Test::take(r)?, r.u64()?);
        Ok(Report { test, size, data: DataCheck::take(r)?, figures: Figures::take(r)? })
    }
}

struct Writer(Vec<u8>);

impl Writer {
    fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    fn u16(&mut self, v: u16) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn f64(&mut self, v: f64) {
        self.u64(v.to_bits());
    }
    fn str(&mut self, s: &str) {
        self.str_max(s, MAX_NAME);
    }
    /// Control characters become spaces and the text is cut at a
    /// character boundary, so that the peer's strict parser accepts it.
    fn str_max(&mut self, s: &str, max: usize) {
        let clean: String = s.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
        let mut end = clean.len().min(max);
        while !clean.is_char_boundary(end) {
            end -= 1;
        }
        self.u16(end as u16);
        self.0.extend_from_slice(&clean.as_bytes()[..end]);
    }
}

struct Reader<'a> {
    buf: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn bytes(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.buf.len());
        let end = end.ok_or_else(|| bad(format!("truncated: {} more bytes needed at byte {}", n, self.at)))?;
        let b = &self.buf[self.at..end];
        self.at = end;
        Ok(b)
    }
    fn array<const N: usize>(&mut self) -> Result<[u8; N]> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.bytes(N)?);
        Ok(a)
    }
    fn u8(&mut self) -> Result<u8> {
        Ok(self.array::<1>()?[0])
    }
    fn u16(&mut self) -> Result<u16> {
        Ok(u16::from_le_bytes(self.array()?))
    }
    fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.array()?))
    }
    fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(self.array()?))
    }
    fn bool(&mut self) -> Result<bool> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            b => Err(bad(format!("flag {b} is neither 0 nor 1"))),
        }
    }
    /// A measured figure: finite and not negative.
    fn figure(&mut self) -> Result<f64> {
        let v = f64::from_bits(self.u64()?);
        if v.is_finite() && v >= 0.0 {
            Ok(v)
        } else {
            Err(bad(format!("figure {v} is not a finite non-negative number")))
        }
    }
    /// A figure, or -1 for none.
    fn f64_or_minus_one(&mut self) -> Result<Option<f64>> {
        let at = self.at;
        if f64::from_bits(u64::from_le_bytes(self.array()?)) == -1.0 {
            return Ok(None);
        }
        self.at = at;
        self.figure().map(Some)
    }
    fn str(&mut self, max: usize) -> Result<String> {
        let n = self.u16()? as usize;
        if n > max {
            return Err(bad(format!("a text of {n} bytes exceeds the limit of {max}")));
        }
        let b = self.bytes(n)?;
        let s = std::str::from_utf8(b).map_err(|_| bad("text that is not UTF-8"))?;
        if s.chars().any(char::is_control) {
            return Err(bad("text with control characters"));
        }
        Ok(s.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pattern::mix;

    pub(crate) fn samples() -> Vec<Message> {
        let agreement = Agreement {
            tests: vec![Test::WriteBw, Test::SendLat],
            sizes: Sizes::Single(4096),
            iters: 0,
            qps: 2,
            tx_depth: 64,
            bidirectional: true,
            seed: 99,
            timing: Timing::Duration { seconds: 10, margin: 2 },
            mtu: 1024,
        };
        vec![
            Message::Hello(agreement),
            Message::Hello(Agreement {
                tests: Test::ALL.to_vec(),
                sizes: Sizes::All,
                iters: 0,
                qps: 1,
                tx_depth: 0,
                bidirectional: false,
                seed: 0,
                timing: Timing::Iterations,
                mtu: 0,
            }),
            Message::Hello(Agreement {
                tests: vec![Test::ReadBw],
                sizes: Sizes::Default,
                iters: 0,
                qps: 4,
                tx_depth: 16,
                bidirectional: false,
                seed: 5,
                timing: Timing::Infinitely { seconds: 1 },
                mtu: 4096,
            }),
            Message::Endpoint(Endpoint {
                host: "node-a".into(),
                device: "rxe0".into(),
                port: 1,
                lid: 0,
                gid: [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8],
                gid_index: Some(0),
                roce: true,
                mtu: 1024,
                sl: 3,
                traffic_class: 32,
                memory: BufferMemory::CudaDmabuf { gpu: 1 },
                rkey: 0x1234,
                addr: 0x7f00_0000_0000,
                len: 1 << 24,
                qps: vec![QpAddr { qpn: 17, psn: 0xabcdef }, QpAddr { qpn: 18, psn: 1 }],
            }),
            Message::Step(StepMarker { phase: Phase::Go, test: Test::ReadBw, size: 65536 }),
            Message::Report(Report {
                test: Test::WriteBw,
                size: 65536,
                data: DataCheck { checked_bytes: 65536, wrong_bytes: 1, first_wrong: Some(0) },
                figures: Figures::Bw(BwFigures { messages: 1000, peak: None, average: 1e9, msg_rate_mpps: 0.01 }),
            }),
            Message::Report(Report {
                test: Test::WriteLat,
                size: 2,
                data: DataCheck { checked_bytes: 2, wrong_bytes: 0, first_wrong: None },
                figures: Figures::LatDuration(LatDurationFigures { iterations: 5000, avg: 2.5, tps: 200000.0 }),
            }),
            Message::Report(Report {
                test: Test::ReadLat,
                size: 2,
                data: DataCheck::default(),
                figures: Figures::Lat(LatFigures {
                    samples: 999,
                    min: 1.0,
                    max: 9.0,
                    typical: 2.0,
                    avg: 2.5,
                    stdev: 0.5,
                    p99: 8.0,
                    p99_9: 9.0,
                }),
            }),
            Message::Report(Report { test: Test::SendBw, size: 2, data: DataCheck::default(), figures: Figures::None }),
            Message::Abort { code: 3, reason: "no RDMA device named mlx5_9".into() },
        ]
    }

    #[test]
    fn every_message_reads_back() {
        for m in samples() {
            let frame = encode(&m);
            assert!(frame.len() <= HEADER_LEN + MAX_PAYLOAD);
            assert_eq!(decode(&frame).unwrap(), m);
        }
    }

    #[test]
    fn the_largest_endpoint_fits() {
        let Message::Endpoint(mut e) = samples().swap_remove(3) else { unreachable!() };
        e.host = "h".repeat(MAX_NAME);
        e.device = "d".repeat(MAX_NAME);
        e.qps = vec![QpAddr { qpn: 1, psn: 1 }; MAX_QPS as usize];
        let frame = encode(&Message::Endpoint(e.clone()));
        assert!(frame.len() - HEADER_LEN <= MAX_PAYLOAD, "{}", frame.len());
        assert_eq!(decode(&frame).unwrap(), Message::Endpoint(e));
    }

    #[test]
    fn clear_sentences_for_bad_headers() {
        let mut frame = encode(&samples()[0]);
        let http: [u8; HEADER_LEN] = *b"GET / HTTP/1";
        let e = decode(&http).unwrap_err();
        assert!(e.message().contains("not a qbench rdma peer") && e.message().contains("'GET '"), "{e}");
        frame[4] = 7;
        let e = decode(&frame).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.message().contains("version 7"), "{e}");
        frame[4] = VERSION as u8;
        frame[8..12].copy_from_slice(&(1u32 << 30).to_le_bytes());
        assert!(decode(&frame).unwrap_err().message().contains("exceeds the limit"));
        let short = encode(&samples()[0]);
        let e = decode(&short[..short.len() - 1]).unwrap_err();
        assert!(e.message().contains("announces"), "{e}");
    }

    #[test]
    fn out_of_range_values_are_refused() {
        let m = Message::Hello(Agreement {
            tests: vec![Test::WriteBw],
            sizes: Sizes::Single(0),
            iters: 0,
            qps: 1,
            tx_depth: 0,
            bidirectional: false,
            seed: 0,
            timing: Timing::Iterations,
            mtu: 0,
        });
        assert!(decode(&encode(&m)).unwrap_err().message().contains("outside"));
        let all = samples();
        let Message::Hello(a) = &all[0] else { unreachable!() };
        for (bad, text) in [
            (Agreement { mtu: 1500, ..a.clone() }, "not an InfiniBand MTU"),
            (Agreement { timing: Timing::Duration { seconds: 0, margin: 0 }, ..a.clone() }, "-D 0"),
            (Agreement { timing: Timing::Infinitely { seconds: 1 }, ..a.clone() }, "bandwidth tests only"),
        ] {
            let e = decode(&encode(&Message::Hello(bad))).unwrap_err();
            assert!(e.message().contains(text), "{e}");
        }
        let Message::Endpoint(mut e) = samples().swap_remove(3) else { unreachable!() };
        e.sl = 16;
        assert!(decode(&encode(&Message::Endpoint(e.clone()))).unwrap_err().message().contains("service level 16"));
        e.sl = 0;
        e.addr = u64::MAX - 10;
        assert!(decode(&encode(&Message::Endpoint(e))).unwrap_err().message().contains("wraps"));
    }

    /// Random bytes, and valid frames damaged at random, never panic and
    /// never parse into anything but a message that encodes back the same.
    #[test]
    fn random_and_damaged_frames_never_panic() {
        let valid: Vec<Vec<u8>> = samples().iter().map(encode).collect();
        let mut state = 0x5eed_u64;
        let mut next = || {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            mix(state)
        };
        let mut parsed = 0;
        for round in 0..60_000u32 {
            let frame: Vec<u8> = if round % 3 == 0 {
                let len = (next() % 200) as usize;
                let mut f: Vec<u8> = (0..len).map(|_| next() as u8).collect();
                if round % 2 == 0 && f.len() >= HEADER_LEN {
                    // A valid header in front of random bytes reaches the payload parser.
                    f[..4].copy_from_slice(&MAGIC);
                    f[4..6].copy_from_slice(&VERSION.to_le_bytes());
                    f[6] = 1 + (next() % 5) as u8;
                    f[8..12].copy_from_slice(&((len - HEADER_LEN) as u32).to_le_bytes());
                }
                f
            } else {
                let mut f = valid[(next() % valid.len() as u64) as usize].clone();
                match next() % 4 {
                    0 => f.truncate((next() as usize) % (f.len() + 1)),
                    1 => f.extend((0..1 + next() % 16).map(|_| next() as u8)),
                    _ => {
                        for _ in 0..1 + next() % 4 {
                            let i = (next() as usize) % f.len();
                            f[i] ^= 1 << (next() % 8);
                        }
                    }
                }
                f
            };
            if let Ok(m) = decode(&frame) {
                parsed += 1;
                assert_eq!(decode(&encode(&m)).unwrap(), m);
            }
        }
        // Some damage (a flipped seed bit, say) still leaves a valid message.
        assert!(parsed > 0);
    }
}
