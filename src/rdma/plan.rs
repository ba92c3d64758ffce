//! What an RDMA run does, in perftest's terms and with perftest's defaults:
//! which tests, which sizes, how many iterations, queue pairs and
//! outstanding requests, and where the other side is. The handshake makes
//! both sides agree on a plan before any traffic, so everything here is
//! plain data (the record of a run holds it too).

use crate::error::{Error, Result};
use crate::fault::Fault;
use crate::libs::Library;
use crate::numa;
use serde::{Deserialize, Serialize};
use std::net::IpAddr;
use std::time::Duration;

/// perftest's defaults (perftest_parameters.h).
pub const DEFAULT_SIZE_BW: u64 = 65536;
pub const DEFAULT_SIZE_LAT: u64 = 2;
pub const DEFAULT_ITERS: u32 = 1000;
/// write_bw alone defaults to more iterations.
pub const DEFAULT_ITERS_WRITE_BW: u32 = 5000;
pub const DEFAULT_TX_DEPTH_BW: u32 = 128;
/// Receives posted ahead by the side that receives sends.
pub const DEFAULT_RX_DEPTH_SEND: u32 = 512;
/// Completion moderation: one signaled request in this many.
pub const DEFAULT_CQ_MOD: u32 = 100;
/// Above this size a single-size run signals every request (perftest's
/// MSG_SIZE_CQ_MOD_LIMIT); `-a` keeps the moderation at every size.
pub const CQ_MOD_SIZE_LIMIT: u64 = 8192;
/// perftest stops computing the peak above this many iterations.
pub const PEAK_ITERS_LIMIT: u64 = 20000;
/// `-a` runs every power of two from 2 B to this.
pub const MAX_SIZE_ALL: u64 = 8 << 20;
/// Largest `-s` accepted.
pub const MAX_SIZE: u64 = 1 << 30;
/// Fewest iterations a latency needs (perftest's MIN_ITER).
pub const MIN_ITERS: u32 = 5;
pub const MAX_ITERS: u32 = 100_000_000;
/// Queue pairs per connection: every one is described in the handshake.
pub const MAX_QPS: u32 = 256;
/// perftest's MAX_TX.
pub const MAX_TX_DEPTH: u32 = 15000;
/// `--run_infinitely` prints a line this often without `-D` (DEF_DURATION).
pub const DEFAULT_DURATION_S: u32 = 5;
/// The InfiniBand MTUs `-m` takes, bytes.
pub const MTUS: [u32; 5] = [256, 512, 1024, 2048, 4096];
/// perftest's MAX_SL.
pub const MAX_SL: u8 = 15;
/// Inline sizes of the latency tests on host memory (DEF_INLINE_WRITE,
/// DEF_INLINE_SEND_RC_UC_XRC).
pub const INLINE_WRITE: u32 = 220;
pub const INLINE_SEND: u32 = 236;

/// The RDMA operation a test times.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verb {
    Write,
    Read,
    Send,
}

/// One of perftest's six tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Test {
    WriteBw,
    ReadBw,
    SendBw,
    WriteLat,
    ReadLat,
    SendLat,
}

impl Test {
    pub const ALL: [Test; 6] =
        [Test::WriteBw, Test::ReadBw, Test::SendBw, Test::WriteLat, Test::ReadLat, Test::SendLat];

    pub fn name(self) -> &'static str {
        match self {
            Test::WriteBw => "write_bw",
            Test::ReadBw => "read_bw",
            Test::SendBw => "send_bw",
            Test::WriteLat => "write_lat",
            Test::ReadLat => "read_lat",
            Test::SendLat => "send_lat",
        }
    }

    pub fn verb(self) -> Verb {
        match self {
            Test::WriteBw | Test::WriteLat => Verb::Write,
            Test::ReadBw | Test::ReadLat => Verb::Read,
            Test::SendBw | Test::SendLat => Verb::Send,
        }
    }

    pub fn is_bw(self) -> bool {
        matches!(self, Test::WriteBw | Test::ReadBw | Test::SendBw)
    }

    /// The number the handshake carries.
    pub fn code(self) -> u8 {
        Test::ALL.iter().position(|&t| t == self).unwrap_or(0) as u8
    }

    pub fn from_code(code: u8) -> Option<Test> {
        Test::ALL.get(code as usize).copied()
    }

    /// "write_bw,read_lat" or "all"; perftest's binary names are accepted too.
    pub fn parse_list(text: &str) -> Result<Vec<Test>> {
        let mut tests = Vec::new();
        for word in text.split(',').map(str::trim).filter(|w| !w.is_empty()) {
            let name = word.strip_prefix("ib_").unwrap_or(word);
            if name == "all" {
                tests.extend(Test::ALL);
                continue;
            }
            let test = Test::ALL.into_iter().find(|t| t.name() == name).ok_or_else(|| {
                Error::Usage(format!(
                    "unknown RDMA test '{word}' (--test): use {} or all",
                    Test::ALL.map(Test::name).join(", ")
                ))
            })?;
            tests.push(test);
        }
        let mut unique: Vec<Test> = Vec::new();
        for t in tests {
            if !unique.contains(&t) {
                unique.push(t);
            }
        }
        if unique.is_empty() {
            return Err(Error::Usage(format!(
                "--test names no test: use {} or all",
                Test::ALL.map(Test::name).join(", ")
            )));
        }
        Ok(unique)
    }
}

/// Which message sizes each test runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Sizes {
    /// perftest's default of each test: 64 KiB for bandwidth, 2 B for latency.
    Default,
    /// `-s`
    Single(u64),
    /// `-a`: 2 B, 4 B, … 8 MiB.
    All,
}

impl Sizes {
    pub fn of(self, test: Test) -> Vec<u64> {
        match self {
            Sizes::Default => vec![if test.is_bw() { DEFAULT_SIZE_BW } else { DEFAULT_SIZE_LAT }],
            Sizes::Single(s) => vec![s],
            Sizes::All => (1..).map(|k| 1u64 << k).take_while(|&s| s <= MAX_SIZE_ALL).collect(),
        }
    }
}

/// Where a side's buffers live, and how the adapter registers them: what a
/// [`MemoryAsk`] resolves to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BufferMemory {
    Host,
    /// GPU memory registered from a dma-buf file descriptor.
    CudaDmabuf {
        gpu: u32,
    },
    /// GPU memory registered by address, through the nvidia_peermem module.
    CudaPeermem {
        gpu: u32,
    },
}

impl BufferMemory {
    pub fn is_gpu(self) -> bool {
        !matches!(self, BufferMemory::Host)
    }
}

/// Which GPU holds the buffers: perftest's `--use_cuda=N` or `--use_cuda_bus_id=ID`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GpuDevice {
    Index(u32),
    /// A PCI address as cuDeviceGetByPCIBusId takes it, `[domain:]bus:device[.function]`, hex.
    BusId(String),
}

impl GpuDevice {
    /// A bus id checked for its form (the driver resolves it at run time).
    pub fn bus_id(text: &str) -> Result<GpuDevice> {
        let hex = |part: &str, most: usize| {
            !part.is_empty() && part.len() <= most && part.chars().all(|c| c.is_ascii_hexdigit())
        };
        let (rest, function) = match text.rsplit_once('.') {
            Some((rest, f)) => (rest, Some(f)),
            None => (text, None),
        };
        let parts: Vec<&str> = rest.split(':').collect();
        let ok = function.is_none_or(|f| hex(f, 1))
            && match parts.as_slice() {
                [domain, bus, device] => hex(domain, 8) && hex(bus, 2) && hex(device, 2),
                [bus, device] => hex(bus, 2) && hex(device, 2),
                _ => false,
            };
        if !ok {
            return Err(Error::Usage(format!(
                "'{text}' (--use_cuda_bus_id) is not a PCI address: use [domain:]bus:device.function in hex, as nvidia-smi shows it (0000:3b:00.0)"
            )));
        }
        Ok(GpuDevice::BusId(text.to_string()))
    }
}

/// How GPU memory is registered with the adapter (`--gpu_reg`, `--use_cuda_dmabuf`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GpuReg {
    /// dma-buf when the GPU supports it, else nvidia_peermem.
    Auto,
    /// A dma-buf file descriptor of the GPU memory (ibv_reg_dmabuf_mr): perftest's `--use_cuda_dmabuf`.
    Dmabuf,
    /// The GPU address itself, through the nvidia_peermem kernel module
    /// (ibv_reg_mr): perftest's `--use_cuda` without `--use_cuda_dmabuf`.
    Peermem,
}

/// Where the buffers are asked to live; GPU memory is resolved into a
/// [`BufferMemory`] when the run starts (`rdma::memory::resolve`), where the
/// driver can name the GPU of a bus id and say whether it exports dma-buf.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MemoryAsk {
    Host,
    Gpu { device: GpuDevice, reg: GpuReg },
}

impl MemoryAsk {
    pub fn is_gpu(&self) -> bool {
        matches!(self, MemoryAsk::Gpu { .. })
    }
}

/// How long each size of a test runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Timing {
    /// `-n` iterations (perftest's default).
    #[default]
    Iterations,
    /// `-D SECONDS`: the test runs this long, and its figures are those of
    /// the middle `seconds - 2 × margin` (`-f`; perftest's default a quarter
    /// of the duration, rounded down): a warm-up and a cool-down of `margin`
    /// seconds around what is measured.
    Duration { seconds: u32, margin: u32 },
    /// `--run_infinitely`: a line every `seconds` (`-D`, default 5) of what
    /// completed since the last, until interrupted.
    Infinitely { seconds: u32 },
}

impl Timing {
    pub fn is_timed(self) -> bool {
        self != Timing::Iterations
    }

    /// Its options, for messages.
    fn words(self) -> String {
        match self {
            Timing::Iterations => "no -D".into(),
            Timing::Duration { seconds, margin } => format!("-D {seconds} -f {margin}"),
            Timing::Infinitely { seconds } => format!("--run_infinitely -D {seconds}"),
        }
    }

    fn validate(self) -> Result<()> {
        match self {
            Timing::Iterations => Ok(()),
            Timing::Duration { seconds: 0, .. } | Timing::Infinitely { seconds: 0 } => {
                Err(Error::Usage("-D 0: the duration is a positive number of seconds, as in perftest".into()))
            }
            Timing::Duration { seconds, margin } if seconds <= margin.saturating_mul(2) => Err(Error::Usage(format!(
                "-D {seconds} -f {margin}: the duration must be longer than twice the margin (perftest's DURATION > 2*MARGIN)"
            ))),
            _ => Ok(()),
        }
    }
}

/// What both sides must agree on before traffic (perftest's SYMMETRIC
/// options, and the seed): the handshake carries exactly this. Zero in
/// `iters` or `tx_depth` means perftest's default.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Agreement {
    pub tests: Vec<Test>,
    pub sizes: Sizes,
    pub iters: u32,
    pub qps: u32,
    pub tx_depth: u32,
    pub bidirectional: bool,
    pub seed: u64,
    /// `-n`, `-D` or `--run_infinitely` (records before it: `-n`).
    #[serde(default)]
    pub timing: Timing,
    /// `-m`: the path MTU in bytes; 0 (and records before it) the smaller
    /// of the two ports' active MTUs.
    #[serde(default)]
    pub mtu: u32,
}

impl Agreement {
    /// Checks the ranges every side relies on; the handshake parser calls
    /// this on what a peer sends.
    pub fn validate(&self) -> Result<()> {
        if self.tests.is_empty() || self.tests.len() > Test::ALL.len() {
            return Err(Error::Usage(format!("between 1 and {} tests, not {}", Test::ALL.len(), self.tests.len())));
        }
        if let Sizes::Single(s) = self.sizes
            && !(1..=MAX_SIZE).contains(&s)
        {
            return Err(Error::Usage(format!("message size {s} (-s) is outside 1 B..1 GiB")));
        }
        if self.iters != 0 && !(MIN_ITERS..=MAX_ITERS).contains(&self.iters) {
            return Err(Error::Usage(format!("iterations {} (-n) are outside {MIN_ITERS}..{MAX_ITERS}", self.iters)));
        }
        if !(1..=MAX_QPS).contains(&self.qps) {
            return Err(Error::Usage(format!("queue pairs {} (-q) are outside 1..{MAX_QPS}", self.qps)));
        }
        if self.tx_depth > MAX_TX_DEPTH {
            return Err(Error::Usage(format!("tx depth {} (-t) is above {MAX_TX_DEPTH}", self.tx_depth)));
        }
        if self.mtu != 0 && !MTUS.contains(&self.mtu) {
            return Err(Error::Usage(format!(
                "MTU {} (-m) is not an InfiniBand MTU: use 256, 512, 1024, 2048 or 4096",
                self.mtu
            )));
        }
        self.timing.validate()?;
        match self.timing {
            Timing::Iterations => {}
            _ if self.sizes == Sizes::All => {
                return Err(Error::Usage(
                    "-D and --run_infinitely time one size: leave out -a (perftest's duration mode does not run all sizes)".into(),
                ));
            }
            _ if self.iters != 0 => {
                return Err(Error::Usage("-n counts iterations and -D times them: give one of them".into()));
            }
            Timing::Duration { .. } => {}
            Timing::Infinitely { .. } => {
                if let Some(t) = self.tests.iter().find(|t| !t.is_bw()) {
                    return Err(Error::Usage(format!(
                        "--run_infinitely runs bandwidth tests only, as in perftest, not {}",
                        t.name()
                    )));
                }
                if self.tests.len() != 1 {
                    return Err(Error::Usage("--run_infinitely runs one test, for ever: name one with --test".into()));
                }
                if self.bidirectional {
                    return Err(Error::Usage(
                        "--run_infinitely with -b: each side sees only its own direction while it runs, so qbench does not print a sum it cannot measure (perftest doubles its own figure)".into(),
                    ));
                }
            }
        }
        Ok(())
    }

    /// The first difference from `other`, in the words of the options that
    /// set it; None when both sides run the same thing.
    pub fn difference(&self, other: &Agreement) -> Option<String> {
        let tests = |a: &Agreement| a.tests.iter().map(|t| t.name()).collect::<Vec<_>>().join(",");
        let sizes = |a: &Agreement| match a.sizes {
            Sizes::Default => "the default size".to_string(),
            Sizes::Single(s) => format!("-s {s}"),
            Sizes::All => "-a".to_string(),
        };
        let or_default = |v: u32| if v == 0 { "the default".to_string() } else { v.to_string() };
        if self.tests != other.tests {
            return Some(format!("--test {} here, --test {} there", tests(self), tests(other)));
        }
        if self.sizes != other.sizes {
            return Some(format!("{} here, {} there", sizes(self), sizes(other)));
        }
        if self.iters != other.iters {
            return Some(format!("-n {} here, -n {} there", or_default(self.iters), or_default(other.iters)));
        }
        if self.qps != other.qps {
            return Some(format!("-q {} here, -q {} there", self.qps, other.qps));
        }
        if self.tx_depth != other.tx_depth {
            return Some(format!("-t {} here, -t {} there", or_default(self.tx_depth), or_default(other.tx_depth)));
        }
        if self.bidirectional != other.bidirectional {
            let b = |v: bool| if v { "-b" } else { "no -b" };
            return Some(format!("{} here, {} there", b(self.bidirectional), b(other.bidirectional)));
        }
        if self.seed != other.seed {
            return Some(format!("--seed {} here, --seed {} there", self.seed, other.seed));
        }
        if self.timing != other.timing {
            return Some(format!("{} here, {} there", self.timing.words(), other.timing.words()));
        }
        if self.mtu != other.mtu {
            let m = |v: u32| if v == 0 { "no -m".to_string() } else { format!("-m {v}") };
            return Some(format!("{} here, {} there", m(self.mtu), m(other.mtu)));
        }
        None
    }
}

/// How the two sides of the run found each other.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// This process waited for a client over TCP.
    Server,
    /// This process connected to a server over TCP.
    Client,
    /// Both sides in this process, on two adapters of this node.
    Loopback,
    /// Pairs of ranks of an MPI job.
    Mpi,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Server => "server",
            Mode::Client => "client",
            Mode::Loopback => "loopback",
            Mode::Mpi => "mpi",
        }
    }
}

/// Where the other side is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Peer {
    /// Wait for one client on this address and TCP port.
    Listen { bind: IpAddr, port: u16 },
    /// Connect to the server at this host and TCP port.
    Connect { host: String, port: u16 },
    /// Both sides in this process.
    Loopback,
    /// The partner rank of an MPI job (rank ^ 1).
    Ranks,
}

impl Peer {
    pub fn mode(&self) -> Mode {
        match self {
            Peer::Listen { .. } => Mode::Server,
            Peer::Connect { .. } => Mode::Client,
            Peer::Loopback => Mode::Loopback,
            Peer::Ranks => Mode::Mpi,
        }
    }
}

/// A whole run: what both sides agreed on, and what is this side's own.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub agreement: Agreement,
    /// Host memory, or the GPU memory asked for (resolved when the run starts).
    pub memory: MemoryAsk,
    /// How long to wait for the peer to connect or answer, and for a
    /// completion that makes no progress; None waits for ever.
    pub timeout: Option<Duration>,
    pub peer: Peer,
    /// `-d`: none (the first active device), one, A,B for a loopback run,
    /// one per local rank under MPI.
    pub devices: Vec<String>,
    pub ib_port: u8,
    pub gid_index: Option<u32>,
    /// `-S`: the service level of this side's packets (each side's own, as in perftest).
    pub sl: u8,
    /// `--tclass`: the traffic class of this side's GRH (RoCE, or InfiniBand with -x).
    pub traffic_class: u8,
    /// `--report_gbits`.
    pub report_gbits: bool,
    /// `QBENCH_CORRUPT=rdma[:BYTE]`.
    pub fault: Option<Fault>,
    /// `--numa`: where each side's thread and host buffers are bound.
    pub numa: numa::Mode,
}

/// What a run asks for, in perftest's terms, before it is checked: what
/// `qbench rdma`'s options say, or what a readiness step says.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// Tests, comma-separated, or all.
    pub tests: String,
    pub peer: Peer,
    /// `-d`: devices, as [`Plan::devices`] takes them.
    pub devices: Vec<String>,
    pub ib_port: u8,
    pub gid_index: Option<u32>,
    /// `-s`; None: perftest's default for the test.
    pub size: Option<u64>,
    /// `-a`: every size from 2 B to 8 MiB.
    pub all: bool,
    /// `-n`; None: perftest's default for the test.
    pub iters: Option<u32>,
    pub qps: u32,
    /// `-t`; None: perftest's default.
    pub tx_depth: Option<u32>,
    pub bidirectional: bool,
    /// `-D`: seconds each test runs (with `run_infinitely`: between lines).
    pub duration_s: Option<u32>,
    /// `-f`: the margins of `-D`; None: a quarter of it.
    pub margin_s: Option<u32>,
    /// `--run_infinitely`.
    pub run_infinitely: bool,
    /// `-m`; None: the ports' active MTU.
    pub mtu: Option<u32>,
    /// `-S`.
    pub sl: u8,
    /// `--tclass`.
    pub traffic_class: u8,
    pub report_gbits: bool,
    /// `--use_cuda`, `--use_cuda_bus_id`, `--use_cuda_dmabuf`, `--gpu_reg`.
    pub memory: MemoryAsk,
    /// Seconds to wait for the peer and for a completion; 0 for ever.
    pub timeout_s: u64,
    pub seed: u64,
    /// What the run injects (`qbench rdma`'s `QBENCH_CORRUPT`, see [`Plan::fault_asked`]).
    pub fault: Option<Fault>,
    /// `--numa`: the adapter's node (auto), none (off) or a node.
    pub numa: numa::Mode,
}

impl Options {
    /// perftest's defaults, the other side at `peer`.
    pub fn new(tests: &str, peer: Peer) -> Options {
        Options {
            tests: tests.into(),
            peer,
            devices: Vec::new(),
            ib_port: 1,
            gid_index: None,
            size: None,
            all: false,
            iters: None,
            qps: 1,
            tx_depth: None,
            bidirectional: false,
            duration_s: None,
            margin_s: None,
            run_infinitely: false,
            mtu: None,
            sl: 0,
            traffic_class: 0,
            report_gbits: false,
            memory: MemoryAsk::Host,
            timeout_s: 30,
            seed: crate::pattern::DEFAULT_SEED,
            fault: None,
            numa: numa::Mode::Auto,
        }
    }
}

/// The checks of [`Plan::new`], in its order.
impl Options {
    /// What both sides must agree on, each option checked against
    /// perftest's range (-s, -n, -q, -t, -D/-f/--run_infinitely, -S, -m).
    fn agreement(&self) -> Result<Agreement> {
        let tests = Test::parse_list(&self.tests)?;
        let sizes = match (self.all, self.size) {
            (true, _) => Sizes::All,
            (false, Some(s)) if (1..=MAX_SIZE).contains(&s) => Sizes::Single(s),
            (false, Some(s)) => return Err(Error::Usage(format!("message size {s} (-s) is outside 1 B..1 GiB"))),
            (false, None) => Sizes::Default,
        };
        let iters = match self.iters {
            None => 0,
            Some(n) if (MIN_ITERS..=MAX_ITERS).contains(&n) => n,
            Some(n) => {
                return Err(Error::Usage(format!("{n} iterations (-n): perftest's range is {MIN_ITERS}..{MAX_ITERS}")));
            }
        };
        if !(1..=MAX_QPS).contains(&self.qps) {
            return Err(Error::Usage(format!("{} queue pairs (-q): use 1..{MAX_QPS}", self.qps)));
        }
        let tx_depth = match self.tx_depth {
            None => 0,
            Some(t) if (1..=MAX_TX_DEPTH).contains(&t) => t,
            Some(t) => return Err(Error::Usage(format!("tx depth {t} (-t): use 1..{MAX_TX_DEPTH}"))),
        };
        let timing = self.timing()?;
        if self.sl > MAX_SL {
            return Err(Error::Usage(format!("service level {} (-S): perftest's range is 0..{MAX_SL}", self.sl)));
        }
        if self.mtu == Some(0) {
            return Err(Error::Usage("MTU 0 (-m): use 256, 512, 1024, 2048 or 4096".into()));
        }
        let mtu = self.mtu.unwrap_or(0);
        let (qps, bidirectional, seed) = (self.qps, self.bidirectional, self.seed);
        let agreement = Agreement { tests, sizes, iters, qps, tx_depth, bidirectional, seed, timing, mtu };
        agreement.validate()?;
        Ok(agreement)
    }

    /// `-D`, `-f` and `--run_infinitely` together.
    fn timing(&self) -> Result<Timing> {
        Ok(match (self.run_infinitely, self.duration_s, self.margin_s) {
            (true, _, Some(_)) => {
                return Err(Error::Usage("-f sets the margins of -D, which --run_infinitely has not".into()));
            }
            (true, seconds, None) => Timing::Infinitely { seconds: seconds.unwrap_or(DEFAULT_DURATION_S) },
            (false, Some(seconds), margin) => Timing::Duration { seconds, margin: margin.unwrap_or(seconds / 4) },
            (false, None, Some(_)) => return Err(Error::Usage("-f sets the margins of -D: give -D too".into())),
            (false, None, None) => Timing::Iterations,
        })
    }

    /// A byte `QBENCH_CORRUPT` flips must lie in a message the run sends.
    fn check_fault(&self, agreement: &Agreement) -> Result<()> {
        let Some(Fault::SourceByte(byte)) = self.fault else { return Ok(()) };
        let gpu = self.memory.is_gpu();
        let largest = agreement.tests.iter().map(|&t| TestParams::new(agreement, gpu, t).max_size()).max();
        if largest.is_none_or(|l| byte >= l) {
            return Err(Error::Usage(format!(
                "{}=rdma:{byte} names byte {byte} but the largest message here is {} bytes: it would never cross the link",
                crate::fault::VAR,
                largest.unwrap_or(0)
            )));
        }
        Ok(())
    }

    /// `-d` names one device for a side over TCP, two (or none) for a loopback run.
    fn check_devices(&self) -> Result<()> {
        match (&self.peer, self.devices.len()) {
            (Peer::Listen { .. } | Peer::Connect { .. }, n) if n > 1 => {
                Err(Error::Usage(format!("-d names one device here ({n} given)")))
            }
            (Peer::Loopback, n) if n != 0 && n != 2 => {
                Err(Error::Usage("--loopback takes two devices, -d A,B (or none for every pair)".into()))
            }
            _ => Ok(()),
        }
    }
}

impl Plan {
    /// The plan `o` describes, with every range checked.
    pub fn new(o: &Options) -> Result<Plan> {
        let agreement = o.agreement()?;
        o.check_fault(&agreement)?;
        o.check_devices()?;
        if let numa::Mode::Node(n) = o.numa {
            numa::Host::this().has_node(n).map_err(|e| Error::Usage(format!("--numa {n}: {e}")))?;
        }
        Ok(Plan {
            agreement,
            memory: o.memory.clone(),
            timeout: (o.timeout_s > 0).then(|| Duration::from_secs(o.timeout_s)),
            peer: o.peer.clone(),
            devices: o.devices.clone(),
            ib_port: o.ib_port,
            gid_index: o.gid_index,
            sl: o.sl,
            traffic_class: o.traffic_class,
            report_gbits: o.report_gbits,
            fault: o.fault,
            numa: o.numa,
        })
    }

    /// The fault `QBENCH_CORRUPT` asks of rdma, if it can apply it.
    pub fn fault_asked() -> Result<Option<Fault>> {
        Fault::requested("rdma", &[crate::fault::Kind::SourceByte])
    }

    /// The byte flipped in every buffer this side sends from, if any.
    pub fn corrupt_byte(&self) -> Option<u64> {
        match self.fault {
            Some(Fault::SourceByte(b)) => Some(b),
            _ => None,
        }
    }

    /// The GPU libraries the run needs: the CUDA driver for GPU memory.
    pub fn libraries(&self) -> Vec<Library> {
        if self.memory.is_gpu() { vec![Library::Driver] } else { Vec::new() }
    }
}

/// One test's parameters with every default and perftest's adjustments applied.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestParams {
    pub test: Test,
    pub sizes: Vec<u64>,
    /// `-a`: perftest keeps the completion moderation at every size then.
    pub all_sizes: bool,
    pub iters: u32,
    pub qps: u32,
    pub tx_depth: u32,
    /// Receives outstanding per queue pair (send tests; 1 for the others).
    pub rx_depth: u32,
    /// Both directions at once (bandwidth tests only).
    pub bidirectional: bool,
    /// Messages up to this size go inline in the work request.
    pub inline_size: u32,
    /// `-D` or `--run_infinitely` (records before it: `-n`).
    #[serde(default)]
    pub timing: Timing,
}

impl TestParams {
    /// On GPU memory (`gpu`) nothing goes inline.
    pub fn new(a: &Agreement, gpu: bool, test: Test) -> TestParams {
        let default_iters = if test == Test::WriteBw { DEFAULT_ITERS_WRITE_BW } else { DEFAULT_ITERS };
        // A timed run counts no iterations (perftest sets them to 0) and
        // caps no depth by them.
        let (iters, cap) = match (a.timing, a.iters) {
            (Timing::Iterations, 0) => (default_iters, default_iters),
            (Timing::Iterations, n) => (n, n),
            _ => (0, u32::MAX),
        };
        let tx_depth = match (test.is_bw(), a.tx_depth) {
            (false, _) => 1,
            (true, 0) => DEFAULT_TX_DEPTH_BW,
            (true, t) => t,
        }
        .min(cap);
        let rx_depth = if test.verb() == Verb::Send { DEFAULT_RX_DEPTH_SEND.min(cap) } else { 1 };
        let inline_size = match (test.is_bw() || gpu, test.verb()) {
            (false, Verb::Write) => INLINE_WRITE,
            (false, Verb::Send) => INLINE_SEND,
            _ => 0,
        };
        TestParams {
            test,
            sizes: a.sizes.of(test),
            all_sizes: a.sizes == Sizes::All,
            iters,
            qps: if test.is_bw() { a.qps } else { 1 },
            tx_depth,
            rx_depth,
            bidirectional: a.bidirectional && test.is_bw(),
            inline_size,
            timing: a.timing,
        }
    }

    /// Signaled requests: one in this many at `size` (perftest's cq_mod
    /// after force_dependecies).
    pub fn cq_mod(&self, size: u64) -> u32 {
        let m = if size > CQ_MOD_SIZE_LIMIT && !self.all_sizes { 1 } else { DEFAULT_CQ_MOD };
        m.min(self.tx_depth).max(1)
    }

    /// The largest message, which sizes every buffer.
    pub fn max_size(&self) -> u64 {
        self.sizes.iter().copied().max().unwrap_or(1)
    }

    /// Whether the peak bandwidth is computed (perftest skips it above
    /// 20000 messages, and in a timed run).
    pub fn peak(&self) -> bool {
        !self.timing.is_timed() && self.iters as u64 <= PEAK_ITERS_LIMIT
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agreement() -> Agreement {
        Agreement {
            tests: vec![Test::WriteBw],
            sizes: Sizes::Default,
            iters: 0,
            qps: 1,
            tx_depth: 0,
            bidirectional: false,
            seed: 1,
            timing: Timing::Iterations,
            mtu: 0,
        }
    }

    #[test]
    fn perftest_defaults() {
        let a = agreement();
        let w = TestParams::new(&a, false, Test::WriteBw);
        assert_eq!((w.sizes.clone(), w.iters, w.tx_depth, w.rx_depth), (vec![65536], 5000, 128, 1));
        assert_eq!(w.cq_mod(65536), 1);
        assert_eq!(w.cq_mod(4096), 100);
        let r = TestParams::new(&a, false, Test::ReadBw);
        assert_eq!(r.iters, 1000);
        let s = TestParams::new(&a, false, Test::SendBw);
        assert_eq!(s.rx_depth, 512);
        let l = TestParams::new(&a, false, Test::WriteLat);
        assert_eq!((l.sizes.clone(), l.iters, l.tx_depth, l.inline_size), (vec![2], 1000, 1, 220));
        let g = TestParams::new(&a, true, Test::SendLat);
        assert_eq!(g.inline_size, 0);
    }

    #[test]
    fn depths_follow_the_iterations() {
        let a = Agreement { iters: 50, tx_depth: 200, ..agreement() };
        let p = TestParams::new(&a, false, Test::SendBw);
        assert_eq!((p.tx_depth, p.rx_depth, p.cq_mod(2)), (50, 50, 50));
    }

    #[test]
    fn all_sizes_run_2_bytes_to_8_mib() {
        let s = Sizes::All.of(Test::WriteLat);
        assert_eq!((s.len(), s[0], *s.last().unwrap()), (23, 2, 8 << 20));
    }

    #[test]
    fn test_lists() {
        assert_eq!(Test::parse_list("ib_write_bw, read_lat,write_bw").unwrap(), vec![Test::WriteBw, Test::ReadLat]);
        assert_eq!(Test::parse_list("all").unwrap().len(), 6);
        assert_eq!(Test::parse_list("write").unwrap_err().exit_code(), 2);
        for t in Test::ALL {
            assert_eq!(Test::from_code(t.code()), Some(t));
        }
    }

    #[test]
    fn differences_name_the_option() {
        let a = agreement();
        assert_eq!(a.difference(&a.clone()), None);
        let b = Agreement { sizes: Sizes::Single(1024), ..agreement() };
        assert_eq!(a.difference(&b).unwrap(), "the default size here, -s 1024 there");
        let c = Agreement { qps: 4, ..agreement() };
        assert_eq!(a.difference(&c).unwrap(), "-q 1 here, -q 4 there");
        let d = Agreement { timing: Timing::Duration { seconds: 2, margin: 0 }, ..agreement() };
        assert_eq!(a.difference(&d).unwrap(), "no -D here, -D 2 -f 0 there");
        let e = Agreement { timing: Timing::Infinitely { seconds: 1 }, ..agreement() };
        assert_eq!(d.difference(&e).unwrap(), "-D 2 -f 0 here, --run_infinitely -D 1 there");
        let m = Agreement { mtu: 1024, ..agreement() };
        assert_eq!(m.difference(&a).unwrap(), "-m 1024 here, no -m there");
    }

    fn plan(o: impl FnOnce(&mut Options)) -> Result<Plan> {
        let mut options = Options::new("write_bw", Peer::Loopback);
        o(&mut options);
        Plan::new(&options)
    }

    /// perftest's duration mode: a quarter of -D on each side unless -f
    /// says, no iteration count, no depth capped by one, no peak.
    #[test]
    fn duration_mode() {
        let p = plan(|o| o.duration_s = Some(10)).unwrap();
        assert_eq!(p.agreement.timing, Timing::Duration { seconds: 10, margin: 2 });
        let p = plan(|o| o.duration_s = Some(2)).unwrap();
        assert_eq!(p.agreement.timing, Timing::Duration { seconds: 2, margin: 0 });
        let p = plan(|o| (o.duration_s, o.margin_s, o.tests) = (Some(5), Some(2), "send_bw,write_lat".into())).unwrap();
        assert_eq!(p.agreement.timing, Timing::Duration { seconds: 5, margin: 2 });
        let t = TestParams::new(&p.agreement, false, Test::SendBw);
        assert_eq!((t.iters, t.tx_depth, t.rx_depth, t.peak(), t.timing.is_timed()), (0, 128, 512, false, true));
        let p = plan(|o| o.run_infinitely = true).unwrap();
        assert_eq!(p.agreement.timing, Timing::Infinitely { seconds: DEFAULT_DURATION_S });
        let p = plan(|o| (o.run_infinitely, o.duration_s) = (true, Some(1))).unwrap();
        assert_eq!(p.agreement.timing, Timing::Infinitely { seconds: 1 });
    }

    #[test]
    fn bad_values_are_usage_errors() {
        type Set = fn(&mut Options);
        let cases: [(&str, Set); 13] = [
            ("-D 0", |o| o.duration_s = Some(0)),
            ("-D 0", |o| (o.run_infinitely, o.duration_s) = (true, Some(0))),
            ("twice the margin", |o| (o.duration_s, o.margin_s) = (Some(4), Some(2))),
            ("give -D too", |o| o.margin_s = Some(1)),
            ("which --run_infinitely has not", |o| (o.run_infinitely, o.margin_s) = (true, Some(1))),
            ("leave out -a", |o| (o.duration_s, o.all) = (Some(2), true)),
            ("give one of them", |o| (o.duration_s, o.iters) = (Some(2), Some(100))),
            ("bandwidth tests only", |o| (o.run_infinitely, o.tests) = (true, "write_lat".into())),
            ("runs one test", |o| (o.run_infinitely, o.tests) = (true, "write_bw,read_bw".into())),
            ("with -b", |o| (o.run_infinitely, o.bidirectional) = (true, true)),
            ("-S", |o| o.sl = 16),
            ("not an InfiniBand MTU", |o| o.mtu = Some(1500)),
            ("MTU 0", |o| o.mtu = Some(0)),
        ];
        for (text, set) in cases {
            let e = plan(set).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{text}: {e}");
            assert!(e.message().contains(text), "{text}: {e}");
        }
        for mtu in MTUS {
            assert_eq!(plan(|o| (o.mtu, o.sl) = (Some(mtu), MAX_SL)).unwrap().agreement.mtu, mtu);
        }
    }

    #[test]
    fn bus_ids_as_the_driver_takes_them() {
        for good in ["0000:3b:00.0", "00000000:3B:00.0", "3b:00.0", "3b:00", "0:18:00.0"] {
            assert_eq!(GpuDevice::bus_id(good).unwrap(), GpuDevice::BusId(good.into()), "{good}");
        }
        for bad in ["", "3b", "0000:3b:00.0.1", "zz:00.0", "0000:3b:000.0", "3b:00.10", "1:2:3:4", "3b:00."] {
            assert_eq!(GpuDevice::bus_id(bad).unwrap_err().exit_code(), 2, "{bad}");
        }
    }
}
