//! The `rdma` wire: each rank writes its message by RDMA WRITE straight
//! into its partner's exchange buffer, over reliable-connected queue pairs
//! of the node's adapter (cargo feature `rdma`): host registers from host
//! memory, GPU registers from GPU memory registered through dma-buf or
//! nvidia_peermem. The connections ([`Peers`]) also carry the pieces of the
//! rdma-staged wire between pinned host slots.
//!
//! A message is three steps on each connection: a zero-length WRITE with
//! immediate that says "my buffer may be written" (ready), the pieces as
//! WRITEs, the last one a WRITE with immediate. A reliable connection
//! keeps order, so the partner's receive completion of that last piece
//! means every piece has landed. The partner's completions therefore come
//! strictly as ready, landed, ready, landed…, which is how they are told
//! apart.

use super::gpu::{GpuRegister, GpuWire};
use super::host_memory::{HostBuffers, HostMove, HostWire};
use super::{Seconds, Wire, WireImpl};
use crate::error::Result;
use crate::statevec::layout::Layout;
use crate::world::World;
use cudarc::driver::CudaContext;
use std::sync::Arc;

/// The `rdma` wire: WRITEs straight from the register's own memory (where
/// the rdma-staged wire goes through pinned host slots).
pub struct Direct;

impl WireImpl for Direct {
    fn name(&self) -> &'static str {
        "rdma"
    }
    fn how(&self) -> &'static str {
        "RDMA WRITE into the partner's buffer (host memory, or GPU memory by GPUDirect)"
    }
    fn gpu(&self) -> Option<&dyn GpuWire> {
        Some(self)
    }
    fn host(&self) -> Option<&dyn HostWire> {
        Some(self)
    }
}

/// Why connections between `local` ranks per process of `world` cannot be
/// made here, if so: no RDMA support in this build, no libibverbs, no
/// active adapter, or several ranks per process under MPI.
pub fn unavailable(world: &dyn World, local: usize) -> Option<String> {
    #[cfg(not(feature = "rdma"))]
    {
        let _ = (world, local);
        Some(
            "this qbench was built without RDMA support (rebuild with --features rdma; it needs cmake and clang)"
                .into(),
        )
    }
    #[cfg(feature = "rdma")]
    {
        use crate::rdma::{device, verbs};
        if let Err(e) = verbs::require().and_then(|_| device::select(&device::facts(), None, 1, None)) {
            return Some(e.message());
        }
        (world.size() > 1 && local > 1)
            .then(|| "between processes it moves one rank per process: use -g 1 and a process per rank".to_string())
    }
}

impl HostWire for Direct {
    fn unavailable(&self, _: &Layout, world: &dyn World, local: usize) -> Option<String> {
        unavailable(world, local)
    }

    /// Host-clock timed from the first ready to the last landed piece.
    fn exchange(&self, bufs: &mut HostBuffers, moves: &[HostMove]) -> Result<Seconds> {
        // Held for the whole exchange, never dereferenced while the adapter
        // works: no other access to the ranks' memory meanwhile.
        let mut guards: Vec<_> = bufs.mem.iter().map(|m| m.write().unwrap_or_else(|e| e.into_inner())).collect();
        let spans: Vec<Span> =
            guards.iter_mut().map(|g| Span { addr: g.as_mut_ptr() as u64, len: g.len() * 8, gpu: None }).collect();
        let puts: Vec<Put> = moves
            .iter()
            .map(|m| Put {
                local: m.rank - bufs.first_rank,
                peer: m.peer,
                from: m.from as u64,
                to: m.to as u64,
                len: m.len as u64,
            })
            .collect();
        let t0 = std::time::Instant::now();
        Peers::reuse(bufs.kept.slot(Wire::Rdma), bufs.first_rank, spans)?.swap(bufs.world, &puts)?;
        Ok(t0.elapsed().as_secs_f64())
    }
}

impl GpuWire for Direct {
    fn unavailable(&self, reg: &GpuRegister) -> Option<String> {
        unavailable(reg.world, reg.local()).or_else(|| gpudirect_unavailable(reg))
    }

    /// Host-clock timed, the GPUs idle before and after.
    fn exchange(&self, reg: &mut GpuRegister) -> Result<Seconds> {
        reg.sync_all()?;
        let spans = reg
            .memory()
            .into_iter()
            .map(|(addr, len, gpu, ctx)| Span { addr, len: len as usize, gpu: Some((gpu, ctx)) })
            .collect();
        let puts: Vec<Put> = (0..reg.local())
            .map(|i| {
                let p = reg.part(i);
                Put { local: i, peer: p.peer, from: p.send, to: p.recv, len: p.len }
            })
            .collect();
        let t0 = std::time::Instant::now();
        Peers::reuse(reg.kept.slot(Wire::Rdma), reg.first_rank, spans)?.swap(reg.world, &puts)?;
        Ok(t0.elapsed().as_secs_f64())
    }
}

/// Why the adapter cannot reach this register's GPU memory, if so: a GPU
/// exports no dma-buf and nvidia_peermem is not loaded.
fn gpudirect_unavailable(reg: &GpuRegister) -> Option<String> {
    #[cfg(feature = "rdma")]
    if crate::rdma::memory::peermem_loaded() {
        return None;
    }
    let (_, _, gpu, _) = reg.memory().into_iter().find(|(_, _, _, ctx)| !crate::gpu::memory::exports_dma_buf(ctx))?;
    Some(format!(
        "the adapter cannot reach GPU {gpu}'s memory: it exports no dma-buf (CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED is 0) and nvidia_peermem is not loaded (modprobe nvidia_peermem); rdma-staged goes through host memory instead"
    ))
}

/// One rank's memory that its connections read and write: a chunk and
/// exchange buffer, or pinned slots; on a GPU when `gpu` names it.
pub struct Span {
    pub addr: u64,
    pub len: usize,
    pub gpu: Option<(u32, Arc<CudaContext>)>,
}

/// Local rank `local` writes `len` bytes at offset `from` of its span into
/// offset `to` of the span of rank `peer` (of the job).
#[derive(Debug, Clone, Copy)]
pub struct Put {
    pub local: usize,
    pub peer: usize,
    pub from: u64,
    pub to: u64,
    pub len: u64,
}

#[cfg(feature = "rdma")]
pub use links::Peers;

/// Without RDMA support no connection can be made.
#[cfg(not(feature = "rdma"))]
pub enum Peers {}

#[cfg(not(feature = "rdma"))]
impl Peers {
    pub fn reuse(_: &mut Option<Peers>, _: usize, _: Vec<Span>) -> Result<&mut Peers> {
        Err(crate::error::Error::Missing(
            "this qbench was built without RDMA support (rebuild with --features rdma)".into(),
        ))
    }

    pub fn swap(&mut self, _: &dyn World, _: &[Put]) -> Result<()> {
        match *self {}
    }
}

#[cfg(feature = "rdma")]
mod links {
    //! The connections of the rdma wires and how a message crosses one.

    use super::{Put, Span};
    use crate::error::{Error, Result};
    use crate::rdma::device::{self, PortChoice};
    use crate::rdma::handshake::Message;
    use crate::rdma::memory::{self, Region};
    use crate::rdma::oob::{self, Channel, Wait};
    use crate::rdma::plan::{BufferMemory, GpuDevice, GpuReg, MemoryAsk};
    use crate::rdma::verbs::{self, Adapter, Caps, Link, Op, Request};
    use crate::world::{PEER_TIMEOUT, World};
    use std::collections::HashMap;
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    /// Signaled requests a connection keeps in flight at most.
    const SEND_DEPTH: u32 = 64;
    /// Receives kept posted for the partner's WRITEs with immediate.
    const RECV_DEPTH: u32 = 8;
    /// The largest piece one WRITE carries.
    const PIECE: u64 = 1 << 30;
    /// The immediate values of the two signals (for whoever reads a trace;
    /// the order of completions tells them apart).
    const READY: u32 = 0;
    const LANDED: u32 = 1;

    struct Conn {
        link: Link,
        /// A rank connected to itself (the wrong-partner fault) has two
        /// queue pairs: what `link` writes arrives on this one.
        twin: Option<Link>,
        /// Receive completions so far (ready and landed, alternating).
        arrived: u64,
        /// Messages completed on this connection.
        done: u64,
        /// Signaled requests not yet completed.
        in_flight: u32,
    }

    impl Conn {
        fn inbound(&mut self) -> &mut Link {
            self.twin.as_mut().unwrap_or(&mut self.link)
        }
    }

    /// The connections of this process's ranks, each to the partners it
    /// has exchanged with so far, over one span per rank.
    pub struct Peers {
        // Dropped before anything they point into (their owners drop them first).
        conns: HashMap<(usize, usize), Conn>,
        spans: Vec<Span>,
        first_rank: usize,
        port: PortChoice,
    }

    impl Peers {
        /// The connections in `slot` when they cover `spans`, else new ones
        /// (none connected yet) in their place.
        pub fn reuse(slot: &mut Option<Peers>, first_rank: usize, spans: Vec<Span>) -> Result<&mut Peers> {
            let same = slot.as_ref().is_some_and(|p| {
                p.first_rank == first_rank
                    && p.spans.len() == spans.len()
                    && p.spans.iter().zip(&spans).all(|(a, b)| a.addr == b.addr && a.len == b.len)
            });
            if !same {
                *slot = None;
                verbs::require()?;
                let port = device::select(&device::facts(), None, 1, None)?;
                *slot = Some(Peers { conns: HashMap::new(), spans, first_rank, port });
            }
            slot.as_mut().ok_or_else(|| Error::Runtime("internal: no connections".into()))
        }

        /// A queue pair over local rank `i`'s span, not yet connected.
        fn link(&self, i: usize) -> Result<Link> {
            let span = &self.spans[i];
            let (memory, ctx) = match &span.gpu {
                None => (BufferMemory::Host, None),
                Some((gpu, ctx)) => {
                    let ask = MemoryAsk::Gpu { device: GpuDevice::Index(*gpu), reg: GpuReg::Auto };
                    (memory::resolve(&ask)?, Some(Arc::clone(ctx)))
                }
            };
            // SAFETY: a span is a live allocation of its owner (a register's
            // memory or its pinned slots) that stays in place until the
            // owner drops these connections, which it does first.
            let region = unsafe { Region::foreign(span.addr, span.len, ctx) };
            let caps = Caps { qps: 1, send_depth: SEND_DEPTH, recv_depth: RECV_DEPTH, inline: 0 };
            Link::new(Adapter::open(&self.port)?, region, memory, caps)
        }

        /// A connection over `link` (and `twin`), connected: their receives
        /// are posted (a queue pair takes none before it is connected).
        fn conn(mut link: Link, mut twin: Option<Link>) -> Result<Conn> {
            for l in std::iter::once(&mut link).chain(twin.as_mut()) {
                for k in 0..RECV_DEPTH {
                    l.post_recv(0, 0, 0, k as u64)?;
                }
            }
            Ok(Conn { link, twin, arrived: 0, done: 0, in_flight: 0 })
        }

        /// Connects local rank `i` with rank `peer` unless it is connected:
        /// to itself by two queue pairs, to a rank of this process by one
        /// each, to another process's through `world` (every process
        /// connects at the same step, each with its own partner).
        fn ensure(&mut self, world: &dyn World, i: usize, peer: usize) -> Result<()> {
            if self.conns.contains_key(&(i, peer)) {
                return Ok(());
            }
            let (rank, len) = (self.first_rank + i, self.spans[i].len as u64);
            let local = peer.checked_sub(self.first_rank).filter(|&j| j < self.spans.len());
            match local {
                Some(j) => {
                    let (mut a, mut b) = (self.link(i)?, self.link(j)?);
                    a.connect(&b.endpoint(), len)?;
                    b.connect(&a.endpoint(), len)?;
                    if j == i {
                        self.conns.insert((i, peer), Self::conn(a, Some(b))?);
                    } else {
                        self.conns.insert((i, peer), Self::conn(a, None)?);
                        self.conns.insert((j, rank), Self::conn(b, None)?);
                    }
                }
                None => {
                    let mut link = self.link(i)?;
                    let mut channel = oob::Ranks::with_partner(world, peer);
                    let theirs = match channel.exchange(&Message::Endpoint(link.endpoint()), Wait::Prompt)? {
                        Message::Endpoint(e) => e,
                        other => return Err(oob::unexpected("the queue pair addresses", &other)),
                    };
                    link.connect(&theirs, len)?;
                    self.conns.insert((i, peer), Self::conn(link, None)?);
                }
            }
            Ok(())
        }

        /// Every put at once, each after its partner said ready; returns
        /// when every local rank's partner's message has landed in it and
        /// every request has completed.
        pub fn swap(&mut self, world: &dyn World, puts: &[Put]) -> Result<()> {
            for p in puts {
                self.ensure(world, p.local, p.peer)?;
            }
            let keys: Vec<(usize, usize)> = puts.iter().map(|p| (p.local, p.peer)).collect();
            for k in &keys {
                self.post(k, Op::WriteImm(READY), 0, 0, 0)?;
            }
            self.wait(&keys, "said it is ready", |c| c.arrived > 2 * c.done)?;
            for p in puts {
                let k = (p.local, p.peer);
                let mut at = 0;
                loop {
                    let n = (p.len - at).min(PIECE);
                    let last = at + n == p.len;
                    let op = if last { Op::WriteImm(LANDED) } else { Op::Write };
                    self.post(&k, op, p.from + at, p.to + at, n)?;
                    at += n;
                    if last {
                        break;
                    }
                }
            }
            self.wait(&keys, "sent its message", |c| c.arrived > 2 * c.done + 1 && c.in_flight == 0)?;
            for k in &keys {
                if let Some(c) = self.conns.get_mut(k) {
                    c.done += 1;
                }
            }
            Ok(())
        }

        /// Posts one signaled request on connection `k`, first waiting for
        /// room when [`SEND_DEPTH`] are in flight.
        fn post(&mut self, k: &(usize, usize), op: Op, local: u64, remote: u64, len: u64) -> Result<()> {
            self.wait(std::slice::from_ref(k), "took our writes", |c| c.in_flight < SEND_DEPTH)?;
            let c = self.conn_mut(k)?;
            let request =
                Request { qp: 0, op, local: local as usize, len: len as u32, remote, wr_id: c.done, signaled: true };
            c.link.post(request)?;
            c.in_flight += 1;
            Ok(())
        }

        fn conn_mut(&mut self, k: &(usize, usize)) -> Result<&mut Conn> {
            self.conns.get_mut(k).ok_or_else(|| Error::Runtime(format!("internal: rank {} is not connected", k.1)))
        }

        /// Polls the connections `keys` until `done` holds for each, giving
        /// up after [`PEER_TIMEOUT`] without a completion.
        fn wait(&mut self, keys: &[(usize, usize)], what: &str, done: impl Fn(&Conn) -> bool) -> Result<()> {
            let mut last = Instant::now();
            loop {
                let mut all = true;
                for k in keys {
                    let c = self.conn_mut(k)?;
                    let sent = c.link.poll_send(|_| {})?;
                    c.in_flight = c.in_flight.saturating_sub(sent as u32);
                    let mut got = 0;
                    c.inbound().poll_recv(|_| got += 1)?;
                    for _ in 0..got {
                        let id = c.arrived;
                        c.inbound().post_recv(0, 0, 0, id)?;
                        c.arrived += 1;
                    }
                    if sent > 0 || got > 0 {
                        last = Instant::now();
                    }
                    all &= done(c);
                }
                if all {
                    return Ok(());
                }
                crate::interrupt::check()?;
                if last.elapsed() > PEER_TIMEOUT {
                    let peers: Vec<String> = keys.iter().map(|k| k.1.to_string()).collect();
                    return Err(Error::Runtime(format!(
                        "rdma: rank {} never {what} within {} s",
                        peers.join(", rank "),
                        PEER_TIMEOUT.as_secs()
                    )));
                }
                if last.elapsed() > Duration::from_millis(10) {
                    std::thread::sleep(Duration::from_micros(20));
                }
            }
        }
    }
}
