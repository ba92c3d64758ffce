//! A thin layer over sideway for qbench's RDMA tests (and the rdma wire of
//! exchange and compare): open the adapter that device selection chose,
//! create reliable-connected queue pairs over one registered region, bring
//! them to RTS with the peer's addresses (and perftest's service level,
//! traffic class and MTU where asked), post RDMA WRITE / READ / SEND
//! through the ibv_wr_* API, and poll the completion queues. Every remote
//! access is checked against the region the peer declared.

use super::device::PortChoice;
use super::handshake::{Endpoint, QpAddr};
use super::memory::{self, Region, source};
use super::plan::BufferMemory;
use crate::error::{Error, Result};
use sideway::ibverbs::address::{AddressHandleAttribute, Gid};
use sideway::ibverbs::completion::{
    BasicCompletionQueue, GenericCompletionQueue, PollCompletionQueueError, WorkCompletionStatus,
};
use sideway::ibverbs::device::{DeviceInfo, DeviceList};
use sideway::ibverbs::device_context::{DeviceContext, Mtu, PortState};
use sideway::ibverbs::memory_region::MemoryRegion;
use sideway::ibverbs::protection_domain::ProtectionDomain;
use sideway::ibverbs::queue_pair::{
    ExtendedQueuePair, PostSendGuard, QueuePair, QueuePairAttribute, QueuePairAttributeMask, QueuePairState,
    SetInlineData, SetScatterGatherEntry, WorkRequestFlags,
};
use std::sync::Arc;

/// perftest's RC settings: local ACK timeout 4.096 µs × 2^14, 7 retries,
/// RNR retry for ever, 12 (0.64 ms) RNR timer, hop limit 64.
const QP_TIMEOUT: u8 = 14;
const RETRY: u8 = 7;
const RNR_RETRY: u8 = 7;
const MIN_RNR_TIMER: u8 = 12;
const HOP_LIMIT: u8 = 64;

/// Says whether libibverbs can be loaded, before anything touches it: a
/// node without it answers every RDMA request with this one sentence.
pub fn require() -> Result<()> {
    // SAFETY: dlopen and dlclose of the system's libibverbs; only its
    // initialisers run.
    match unsafe { libloading::Library::new("libibverbs.so.1") } {
        Ok(_) => Ok(()),
        Err(e) => Err(Error::Missing(format!(
            "no RDMA: libibverbs.so.1 cannot be loaded ({e}): install rdma-core (apt install libibverbs1 ibverbs-providers, dnf install libibverbs)"
        ))),
    }
}

fn mtu_bytes(m: Mtu) -> u32 {
    128 << (m as u32)
}

fn mtu_of(bytes: u32) -> Mtu {
    match bytes {
        256 => Mtu::Mtu256,
        512 => Mtu::Mtu512,
        1024 => Mtu::Mtu1024,
        2048 => Mtu::Mtu2048,
        _ => Mtu::Mtu4096,
    }
}

/// An opened adapter port, with its protection domain.
pub struct Adapter {
    pub choice: PortChoice,
    /// The port's active MTU, bytes.
    pub mtu: u32,
    max_rd_atomic: u8,
    pd: Arc<ProtectionDomain>,
    ctx: Arc<DeviceContext>,
}

impl Adapter {
    pub fn open(choice: &PortChoice) -> Result<Adapter> {
        let list = DeviceList::new()
            .map_err(|e| Error::Missing(format!("no RDMA: libibverbs finds no device ({})", source(&e))))?;
        let dev = list.iter().find(|d| d.name() == choice.device).ok_or_else(|| {
            Error::Missing(format!(
                "no RDMA: libibverbs has no driver for {} although sysfs lists it: install ibverbs-providers (rdma-core)",
                choice.device
            ))
        })?;
        let ctx = dev.open().map_err(|e| Error::Runtime(format!("cannot open {}: {}", choice.device, source(&e))))?;
        let port = ctx.query_port(choice.port).map_err(|e| {
            Error::Runtime(format!("cannot query {} port {}: {}", choice.device, choice.port, source(&e)))
        })?;
        if port.port_state() != PortState::Active {
            return Err(Error::Missing(format!(
                "{} port {} is {:?}, not active: bring its link up",
                choice.device,
                choice.port,
                port.port_state()
            )));
        }
        let attr = ctx
            .query_device()
            .map_err(|e| Error::Runtime(format!("cannot query {}: {}", choice.device, source(&e))))?;
        let pd = ctx.alloc_pd().map_err(|e| {
            Error::Runtime(format!("cannot allocate a protection domain on {}: {}", choice.device, source(&e)))
        })?;
        Ok(Adapter {
            choice: choice.clone(),
            mtu: mtu_bytes(port.active_mtu()),
            max_rd_atomic: attr.max_qp_rd_atom().clamp(1, 16) as u8,
            pd,
            ctx,
        })
    }
}

/// How many of each the queue pairs of a link hold.
#[derive(Debug, Clone, Copy)]
pub struct Caps {
    pub qps: u32,
    pub send_depth: u32,
    pub recv_depth: u32,
    pub inline: u32,
}

/// The operation of a send work request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Write,
    /// RDMA WRITE whose arrival the peer sees as a receive completion.
    WriteImm(u32),
    Read,
    Send,
}

/// One send work request: `len` bytes at offset `local` of this side's
/// region and, for WRITE and READ, at offset `remote` of the peer's.
#[derive(Debug, Clone, Copy)]
pub struct Request {
    pub qp: usize,
    pub op: Op,
    pub local: usize,
    pub len: u32,
    pub remote: u64,
    pub wr_id: u64,
    pub signaled: bool,
}

/// The peer's registered region.
#[derive(Debug, Clone, Copy)]
struct Remote {
    rkey: u32,
    addr: u64,
    len: u64,
}

/// What this side's queue pairs put in their address vector and path:
/// perftest's -S, --tclass and -m (all 0 by default).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Route {
    pub sl: u8,
    /// The GRH's traffic class (a port routed by GID only).
    pub traffic_class: u8,
    /// The path MTU, bytes; 0: the smaller active MTU of the two ports.
    pub mtu: u32,
}

/// One completed work request.
#[derive(Debug, Clone, Copy)]
pub struct Completion {
    pub wr_id: u64,
    pub byte_len: u32,
}

/// Reliable-connected queue pairs from this side's adapter to one peer,
/// over one registered region.
pub struct Link {
    qps: Vec<ExtendedQueuePair>,
    psns: Vec<u32>,
    send_cq: Arc<BasicCompletionQueue>,
    recv_cq: Arc<BasicCompletionQueue>,
    // Deregistered before the region it covers is freed.
    mr: Arc<MemoryRegion>,
    pub region: Region,
    pub memory: BufferMemory,
    remote: Option<Remote>,
    /// The path MTU the queue pairs hold once connected (read back from them).
    pub path_mtu: u32,
    pub inline: u32,
    route: Route,
    pub adapter: Adapter,
}

impl Link {
    pub fn new(adapter: Adapter, region: Region, memory: BufferMemory, caps: Caps) -> Result<Link> {
        let name = adapter.choice.device.clone();
        let cq = |depth: u32| {
            adapter
                .ctx
                .create_cq_builder()
                .setup_cqe(depth.max(1))
                .build()
                .map_err(|e| Error::Runtime(format!("cannot create a completion queue on {name}: {}", source(&e))))
        };
        let send_cq = cq(caps.send_depth * caps.qps)?;
        let recv_cq = cq(caps.recv_depth * caps.qps)?;
        let mr = memory::register(&adapter.pd, &region, memory)?;
        let build = |inline: u32| {
            adapter
                .pd
                .create_qp_builder()
                .setup_max_send_wr(caps.send_depth.max(1))
                .setup_max_recv_wr(caps.recv_depth.max(1))
                .setup_max_send_sge(1)
                .setup_max_recv_sge(1)
                .setup_max_inline_data(inline)
                .setup_send_cq(GenericCompletionQueue::from(Arc::clone(&send_cq)))
                .setup_recv_cq(GenericCompletionQueue::from(Arc::clone(&recv_cq)))
                .build_ex()
        };
        let mut inline = caps.inline;
        let mut qps = Vec::with_capacity(caps.qps as usize);
        for _ in 0..caps.qps {
            let qp = match build(inline) {
                // A device without inline data takes every message by reference.
                Err(_) if inline > 0 => {
                    inline = 0;
                    build(0)
                }
                r => r,
            }
            .map_err(|e| Error::Runtime(format!("cannot create a queue pair on {name}: {}", source(&e))))?;
            qps.push(qp);
        }
        let seed = crate::pattern::mix(std::process::id() as u64 ^ region.addr());
        let psns = (0..caps.qps).map(|i| (crate::pattern::bits(seed, i as u64) & 0xff_ffff) as u32).collect();
        Ok(Link {
            qps,
            psns,
            send_cq,
            recv_cq,
            mr,
            region,
            memory,
            remote: None,
            path_mtu: 0,
            inline,
            route: Route::default(),
            adapter,
        })
    }

    /// Sets what the queue pairs will connect with; a value this side's
    /// port cannot take is one sentence (exit 3).
    pub fn set_route(&mut self, route: Route) -> Result<()> {
        let (c, active) = (&self.adapter.choice, self.adapter.mtu);
        if route.mtu > active {
            return Err(Error::Missing(format!(
                "-m {}: {} port {} has an active MTU of {active} B, the most a path through it takes (perftest would lower it): use -m {active} or less",
                route.mtu, c.device, c.port
            )));
        }
        if route.traffic_class != 0 && c.gid_index.is_none() {
            return Err(Error::Missing(format!(
                "--tclass {}: {} port {} is addressed by LID, without the GRH that carries a traffic class: give a GID index with -x",
                route.traffic_class, c.device, c.port
            )));
        }
        self.route = route;
        Ok(())
    }

    /// This side as the peer needs to see it.
    pub fn endpoint(&self) -> Endpoint {
        let c = &self.adapter.choice;
        Endpoint {
            host: crate::host::short_hostname(),
            device: c.device.clone(),
            port: c.port,
            lid: c.lid,
            gid: c.gid,
            gid_index: c.gid_index,
            roce: c.roce(),
            mtu: self.adapter.mtu,
            sl: self.route.sl,
            traffic_class: self.route.traffic_class,
            memory: self.memory,
            rkey: self.mr.rkey(),
            addr: self.region.addr(),
            len: self.region.bytes() as u64,
            qps: self.qps.iter().zip(&self.psns).map(|(q, &psn)| QpAddr { qpn: q.qp_number(), psn }).collect(),
        }
    }

    /// Brings every queue pair to RTS towards the peer's; the peer must
    /// have as many queue pairs and a region of at least `need` bytes.
    pub fn connect(&mut self, peer: &Endpoint, need: u64) -> Result<()> {
        if peer.qps.len() != self.qps.len() {
            return Err(Error::Runtime(format!(
                "the peer has {} queue pairs where {} were agreed",
                peer.qps.len(),
                self.qps.len()
            )));
        }
        if peer.len < need {
            return Err(Error::Runtime(format!(
                "the peer's buffer holds {} bytes where the test needs {need}",
                peer.len
            )));
        }
        if peer.roce != self.adapter.choice.roce() {
            return Err(Error::Usage(format!(
                "{} is {} but the peer's {} is {}: both sides need the same link layer",
                self.adapter.choice.device,
                if self.adapter.choice.roce() { "RoCE" } else { "InfiniBand" },
                peer.device,
                if peer.roce { "RoCE" } else { "InfiniBand" }
            )));
        }
        let path_mtu = match self.route.mtu {
            0 => self.adapter.mtu.min(peer.mtu),
            asked => asked,
        };
        let (choice, route) = (self.adapter.choice.clone(), self.route);
        let fail = |state: &str, e: &dyn std::error::Error| {
            let gid_hint = if choice.roce() { " (check the GID index -x on both sides)" } else { "" };
            Error::Runtime(format!("cannot move a queue pair of {} to {state}: {}{gid_hint}", choice.device, source(e)))
        };
        for (i, qp) in self.qps.iter_mut().enumerate() {
            let mut init = QueuePairAttribute::new();
            init.setup_state(QueuePairState::Init)
                .setup_pkey_index(0)
                .setup_port(choice.port)
                .setup_access_flags(memory::access());
            qp.modify(&init).map_err(|e| fail("INIT", &e))?;
            let mut av = AddressHandleAttribute::new();
            av.setup_dest_lid(peer.lid).setup_service_level(route.sl).setup_port(choice.port);
            if let Some(index) = choice.gid_index {
                av.setup_grh(&Gid { raw: peer.gid }, 0, index as u8, HOP_LIMIT, route.traffic_class);
            }
            let mut rtr = QueuePairAttribute::new();
            rtr.setup_state(QueuePairState::ReadyToReceive)
                .setup_path_mtu(mtu_of(path_mtu))
                .setup_dest_qp_num(peer.qps[i].qpn)
                .setup_rq_psn(peer.qps[i].psn)
                .setup_max_dest_read_atomic(self.adapter.max_rd_atomic)
                .setup_min_rnr_timer(MIN_RNR_TIMER)
                .setup_address_vector(&av);
            qp.modify(&rtr).map_err(|e| fail("RTR", &e))?;
            let mut rts = QueuePairAttribute::new();
            rts.setup_state(QueuePairState::ReadyToSend)
                .setup_sq_psn(self.psns[i])
                .setup_timeout(QP_TIMEOUT)
                .setup_retry_cnt(RETRY)
                .setup_rnr_retry(RNR_RETRY)
                .setup_max_read_atomic(self.adapter.max_rd_atomic);
            qp.modify(&rts).map_err(|e| fail("RTS", &e))?;
        }
        self.path_mtu = self.held_path_mtu()?;
        self.remote = Some(Remote { rkey: peer.rkey, addr: peer.addr, len: peer.len });
        Ok(())
    }

    /// The path MTU every queue pair holds (ibv_query_qp), bytes.
    fn held_path_mtu(&self) -> Result<u32> {
        let name = &self.adapter.choice.device;
        let mut held = None;
        for qp in &self.qps {
            let (attr, _) = qp.query(QueuePairAttributeMask::PathMtu).map_err(|e| {
                Error::Runtime(format!("cannot read back a queue pair of {name} (ibv_query_qp): {}", source(&e)))
            })?;
            let mtu = mtu_bytes(attr.path_mtu());
            if held.is_some_and(|h| h != mtu) {
                return Err(Error::Runtime(format!("the queue pairs of {name} hold different path MTUs")));
            }
            held = Some(mtu);
        }
        Ok(held.unwrap_or(0))
    }

    /// Posts one work request; a message that fits goes inline (host memory).
    pub fn post(&mut self, r: Request) -> Result<()> {
        let Request { qp, op, local, len, remote, wr_id, signaled } = r;
        let peer = self.remote.ok_or_else(|| Error::Runtime("posting before the queue pairs are connected".into()))?;
        let local_end = local.checked_add(len as usize).filter(|&e| e <= self.region.bytes());
        let remote_end = remote.checked_add(len as u64).filter(|&e| e <= peer.len);
        if local_end.is_none() || (op != Op::Send && remote_end.is_none()) {
            return Err(Error::Runtime(format!(
                "{len} bytes at local offset {local} / remote offset {remote} fall outside the registered buffers"
            )));
        }
        let inline = (op == Op::Write || op == Op::Send) && len <= self.inline && len > 0;
        let inline_bytes = if inline { self.region.host_bytes(local, len as usize) } else { None };
        let lkey = self.mr.lkey();
        let laddr = self.region.addr() + local as u64;
        let raddr = peer.addr + remote;
        let mut flags = if signaled { WorkRequestFlags::Signaled } else { WorkRequestFlags::none() };
        if inline_bytes.is_some() {
            // Providers read the inline flag from the request (rxe does), as
            // perftest sets it.
            flags |= WorkRequestFlags::Inline;
        }
        let q = self.qps.get_mut(qp).ok_or_else(|| Error::Runtime(format!("no queue pair {qp}")))?;
        let mut guard = q.start_post_send();
        let wr = guard.construct_wr(wr_id, flags);
        let buf = match op {
            Op::Write => wr.setup_write(peer.rkey, raddr),
            Op::WriteImm(imm) => wr.setup_write_imm(peer.rkey, raddr, imm),
            Op::Read => wr.setup_read(peer.rkey, raddr),
            Op::Send => wr.setup_send(),
        };
        match inline_bytes {
            Some(bytes) => buf.setup_inline_data(bytes),
            // A zero-length message (a WRITE with immediate as a signal)
            // carries no scatter entry: some adapters read a length of 0 as
            // 2 GiB (mlx5's byte count).
            // SAFETY: an empty list names no memory.
            None if len == 0 => unsafe { buf.setup_sge_list(&[]) },
            // SAFETY: [laddr, laddr + len) lies inside the registered region
            // (checked above), which outlives every request on it: the
            // caller polls every request before dropping the link.
            None => unsafe { buf.setup_sge(lkey, laddr, len) },
        }
        guard
            .post()
            .map_err(|e| Error::Runtime(format!("cannot post on {}: {}", self.adapter.choice.device, source(&e))))
    }

    /// Posts one receive of up to `len` bytes at `local` on queue pair `qp`;
    /// of none, without a scatter entry, for WRITEs with immediate alone.
    pub fn post_recv(&mut self, qp: usize, local: usize, len: u32, wr_id: u64) -> Result<()> {
        if local.checked_add(len as usize).is_none_or(|e| e > self.region.bytes()) {
            return Err(Error::Runtime(format!("a receive of {len} bytes at {local} falls outside the buffer")));
        }
        let (lkey, addr) = (self.mr.lkey(), self.region.addr() + local as u64);
        let q = self.qps.get_mut(qp).ok_or_else(|| Error::Runtime(format!("no queue pair {qp}")))?;
        let mut guard = q.start_post_recv();
        let wr = guard.construct_wr(wr_id);
        if len > 0 {
            // SAFETY: the range lies inside the registered region (checked
            // above), which outlives the receive.
            unsafe { wr.setup_sge(lkey, addr, len) };
        }
        guard.post().map_err(|e| {
            Error::Runtime(format!("cannot post a receive on {}: {}", self.adapter.choice.device, source(&e)))
        })
    }

    /// Completed sends, WRITEs and READs, handed to `f`; an error completion is an error.
    pub fn poll_send(&self, f: impl FnMut(Completion)) -> Result<usize> {
        poll(&self.send_cq, &self.adapter.choice.device, f)
    }

    /// Completed receives (of SEND and of WRITE with immediate).
    pub fn poll_recv(&self, f: impl FnMut(Completion)) -> Result<usize> {
        poll(&self.recv_cq, &self.adapter.choice.device, f)
    }
}

/// ibv_poll_cq, as perftest: the extended CQ's ibv_start_poll of rxe in
/// rdma-core before 55 moves its consumer index past the producer's and
/// then returns stale entries as completions.
fn poll(cq: &BasicCompletionQueue, device: &str, mut f: impl FnMut(Completion)) -> Result<usize> {
    let poller = match cq.start_poll() {
        Ok(p) => p,
        Err(PollCompletionQueueError::CompletionQueueEmpty) => return Ok(0),
        Err(e) => return Err(Error::Runtime(format!("cannot poll a completion queue of {device}: {e}"))),
    };
    let mut n = 0;
    for wc in poller {
        let status = wc.status();
        if status != WorkCompletionStatus::Success as u32 {
            // Every status rdma-core defines (0..=23) has a name.
            let name = if status <= 23 {
                format!("{:?}", WorkCompletionStatus::from(status))
            } else {
                format!("status {status}")
            };
            let hint = match WorkCompletionStatus::from(status.min(23)) {
                WorkCompletionStatus::RetryCounterExceededError => {
                    ": the peer did not answer (is it still running? do both sides use GIDs of one subnet, -x?)"
                }
                WorkCompletionStatus::RemoteAccessError => ": the peer refused the access (keys or addresses wrong)",
                _ => "",
            };
            return Err(Error::Runtime(format!(
                "a work request on {device} completed with {name} (vendor error {:#x}){hint}",
                wc.vendor_err()
            )));
        }
        f(Completion { wr_id: wc.wr_id(), byte_len: wc.byte_len() });
        n += 1;
    }
    Ok(n)
}
