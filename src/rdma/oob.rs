//! The out-of-band channel of an RDMA test: how the two sides swap the
//! handshake messages. Over TCP between a server and a client (perftest's
//! port 18515, bounded waits, keepalive), in memory between the two threads
//! of a loopback run, and through the MPI world between the ranks of a
//! pair. Every channel moves the same encoded frames, so every peer goes
//! through the same strict parser.

use super::handshake::{self, HEADER_LEN, MAX_PAYLOAD, Message};
use super::plan::Agreement;
use crate::error::{Error, Result};
use std::io::{ErrorKind, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// perftest's default port.
pub const DEFAULT_PORT: u16 = 18515;

/// How long an exchange may wait for the peer's message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// The peer should answer promptly: the run's `--timeout`.
    Prompt,
    /// The peer may be busy with a timed loop of any length: no limit, but
    /// a peer that dies or vanishes still ends the wait (a closed
    /// connection, TCP keepalive, a stopped thread).
    Busy,
}

/// The two sides' message swap: both send, then both receive.
pub trait Channel {
    /// Sends `mine` and returns the peer's message of the same step. A peer
    /// that aborted becomes its error.
    fn exchange(&mut self, mine: &Message, wait: Wait) -> Result<Message>;
    /// The peer, for messages.
    fn peer(&self) -> String;
    /// Tells the peer why this side stops, if it can still be told.
    fn abort(&mut self, why: &Error);
}

/// A message that is not the one this step expects.
pub fn unexpected(wanted: &str, got: &Message) -> Error {
    Error::Runtime(format!("the peer sent {} where {wanted} was due: the two sides are out of step", got.what()))
}

/// Both sides send their options; any difference stops both, each with
/// one sentence naming the option.
pub fn agree(channel: &mut dyn Channel, mine: &Agreement) -> Result<()> {
    match channel.exchange(&Message::Hello(mine.clone()), Wait::Prompt)? {
        Message::Hello(theirs) => match mine.difference(&theirs) {
            Some(d) => Err(Error::Usage(format!(
                "the two sides disagree ({d}): start both with the same --test, -s/-a, -n, -D/-f/--run_infinitely, -m, -q, -t, -b and --seed"
            ))),
            None => Ok(()),
        },
        other => Err(unexpected("the options", &other)),
    }
}

/// The error a peer's abort message stands for.
fn aborted(peer: &str, code: u8, reason: &str) -> Error {
    let text = format!("the peer ({peer}) stopped: {reason}");
    match code {
        1 => Error::CheckFailed(text),
        2 => Error::Usage(text),
        3 => Error::Missing(text),
        _ => Error::Runtime(text),
    }
}

fn abort_message(why: &Error) -> Message {
    Message::Abort { code: why.exit_code() as u8, reason: why.message().to_string() }
}

fn seconds(d: Duration) -> String {
    format!("{} s", d.as_secs_f64())
}

/// A server's listening socket, before its client came.
pub struct Listener {
    listener: TcpListener,
    bind: IpAddr,
    port: u16,
}

impl Listener {
    /// Waits for one client, at most `timeout`.
    pub fn accept(self, timeout: Option<Duration>) -> Result<Tcp> {
        let (bind, port) = (self.bind, self.port);
        let deadline = timeout.map(|t| Instant::now() + t);
        loop {
            match self.listener.accept() {
                Ok((stream, peer)) => return Tcp::open(stream, peer, timeout),
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::Interrupted) => {
                    if deadline.is_some_and(|d| Instant::now() >= d) {
                        return Err(Error::Runtime(format!(
                            "no client connected to {bind} port {port} within {} (--timeout)",
                            seconds(timeout.unwrap_or_default())
                        )));
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => return Err(Error::Runtime(format!("cannot accept a client on port {port}: {e}"))),
            }
        }
    }
}

/// One TCP connection to the peer.
pub struct Tcp {
    stream: TcpStream,
    peer: SocketAddr,
    timeout: Option<Duration>,
    /// Nothing has been read yet: an early close is likely a port scanner.
    fresh: bool,
}

impl Tcp {
    /// Listens on `bind:port` for the one client of a server run.
    pub fn bind(bind: IpAddr, port: u16) -> Result<Listener> {
        let listener = TcpListener::bind((bind, port)).map_err(|e| {
            Error::Runtime(format!(
                "cannot listen on {bind} port {port}: {e} (another server there? pick one with --port)"
            ))
        })?;
        listener.set_nonblocking(true).map_err(|e| Error::Runtime(format!("cannot listen on port {port}: {e}")))?;
        Ok(Listener { listener, bind, port })
    }

    /// Connects to the server at `host:port`, retrying while it is not yet
    /// listening, at most `timeout`.
    pub fn connect(host: &str, port: u16, timeout: Option<Duration>) -> Result<Tcp> {
        let addrs: Vec<SocketAddr> = (host, port)
            .to_socket_addrs()
            .map_err(|e| Error::Usage(format!("cannot resolve the server name '{host}': {e}")))?
            .collect();
        let deadline = timeout.map(|t| Instant::now() + t);
        loop {
            let mut last = None;
            for addr in &addrs {
                let step = deadline
                    .map(|d| d.saturating_duration_since(Instant::now()))
                    .unwrap_or(Duration::from_secs(5))
                    .clamp(Duration::from_millis(10), Duration::from_secs(5));
                match TcpStream::connect_timeout(addr, step) {
                    Ok(stream) => return Tcp::open(stream, *addr, timeout),
                    Err(e) => last = Some(e),
                }
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                let why = last.map(|e| e.to_string()).unwrap_or_else(|| "no address".into());
                return Err(Error::Runtime(format!(
                    "no qbench rdma server answered at {host} port {port} within {} (--timeout): {why}",
                    seconds(timeout.unwrap_or_default())
                )));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn open(stream: TcpStream, peer: SocketAddr, timeout: Option<Duration>) -> Result<Tcp> {
        let fail = |e: std::io::Error| Error::Runtime(format!("cannot set up the connection with {peer}: {e}"));
        stream.set_nonblocking(false).map_err(fail)?;
        stream.set_nodelay(true).map_err(fail)?;
        keepalive(&stream).map_err(fail)?;
        Ok(Tcp { stream, peer, timeout, fresh: true })
    }

    fn read_full(&mut self, buf: &mut [u8], deadline: Option<Instant>, frame_start: bool) -> Result<()> {
        let mut got = 0;
        while got < buf.len() {
            let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            if left == Some(Duration::ZERO) {
                return Err(Error::Runtime(format!(
                    "no answer from the peer ({}) within {} (--timeout)",
                    self.peer,
                    seconds(self.timeout.unwrap_or_default())
                )));
            }
            let _ = self.stream.set_read_timeout(left.map(|l| l.max(Duration::from_millis(1))));
            match self.stream.read(&mut buf[got..]) {
                Ok(0) if got == 0 && frame_start => {
                    let hint = if self.fresh {
                        " before the handshake (a port scanner, or not a qbench rdma peer)"
                    } else {
                        ""
                    };
                    return Err(Error::Runtime(format!("the peer ({}) closed the connection{hint}", self.peer)));
                }
                Ok(0) => {
                    return Err(Error::Runtime(format!(
                        "the peer ({}) closed the connection in the middle of a message: truncated after {got} of {} bytes",
                        self.peer,
                        buf.len()
                    )));
                }
                Ok(n) => got += n,
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted) => {}
                Err(e) => {
                    return Err(Error::Runtime(format!("lost the connection with the peer ({}): {e}", self.peer)));
                }
            }
        }
        Ok(())
    }

    fn receive(&mut self, wait: Wait) -> Result<Message> {
        let deadline = match wait {
            Wait::Prompt => self.timeout.map(|t| Instant::now() + t),
            Wait::Busy => None,
        };
        let mut header = [0u8; HEADER_LEN];
        self.read_full(&mut header, deadline, true)?;
        let from = |e: Error| prefix(e, &self.peer.to_string());
        let (kind, len) = handshake::decode_header(&header).map_err(from)?;
        let mut payload = [0u8; MAX_PAYLOAD];
        self.read_full(&mut payload[..len], deadline, false)?;
        self.fresh = false;
        handshake::decode_payload(kind, &payload[..len]).map_err(|e| prefix(e, &self.peer.to_string()))
    }

    fn send(&mut self, msg: &Message) -> Result<()> {
        let _ = self.stream.set_write_timeout(self.timeout.or(Some(Duration::from_secs(60))));
        self.stream
            .write_all(&handshake::encode(msg))
            .map_err(|e| Error::Runtime(format!("cannot send to the peer ({}): {e}", self.peer)))
    }
}

/// The same error, saying which peer sent the bad message.
fn prefix(e: Error, peer: &str) -> Error {
    let text = format!("from {peer}: {}", e.message());
    match e {
        Error::Usage(_) => Error::Usage(text),
        _ => Error::Runtime(text),
    }
}

impl Channel for Tcp {
    fn exchange(&mut self, mine: &Message, wait: Wait) -> Result<Message> {
        self.send(mine)?;
        match self.receive(wait)? {
            Message::Abort { code, reason } => Err(aborted(&self.peer.to_string(), code, &reason)),
            m => Ok(m),
        }
    }

    fn peer(&self) -> String {
        self.peer.to_string()
    }

    fn abort(&mut self, why: &Error) {
        let _ = self.send(&abort_message(why));
    }
}

/// TCP keepalive after 10 s idle, 3 probes 5 s apart: a peer whose host
/// vanished during a long loop ends the wait within about 25 s.
fn keepalive(stream: &TcpStream) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let fd = stream.as_raw_fd();
    for (level, name, value) in [
        (libc::SOL_SOCKET, libc::SO_KEEPALIVE, 1),
        (libc::IPPROTO_TCP, libc::TCP_KEEPIDLE, 10),
        (libc::IPPROTO_TCP, libc::TCP_KEEPINTVL, 5),
        (libc::IPPROTO_TCP, libc::TCP_KEEPCNT, 3),
    ] {
        let v: libc::c_int = value;
        // SAFETY: `fd` is the open socket `stream` owns; the option value is
        // a live c_int of the size passed.
        let rc = unsafe {
            libc::setsockopt(fd, level, name, (&v as *const libc::c_int).cast(), size_of::<libc::c_int>() as u32)
        };
        if rc != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// One end of the in-memory channel between the two threads of a loopback run.
pub struct Local {
    tx: mpsc::Sender<Vec<u8>>,
    rx: mpsc::Receiver<Vec<u8>>,
    peer: String,
    timeout: Option<Duration>,
}

/// Two connected ends; `names` are what each end calls the other.
pub fn local_pair(names: (String, String), timeout: Option<Duration>) -> (Local, Local) {
    let (tx_a, rx_b) = mpsc::channel();
    let (tx_b, rx_a) = mpsc::channel();
    (Local { tx: tx_a, rx: rx_a, peer: names.0, timeout }, Local { tx: tx_b, rx: rx_b, peer: names.1, timeout })
}

impl Channel for Local {
    fn exchange(&mut self, mine: &Message, wait: Wait) -> Result<Message> {
        let gone = || Error::Runtime(format!("the other side of the loopback ({}) stopped", self.peer));
        self.tx.send(handshake::encode(mine)).map_err(|_| gone())?;
        let frame = match (wait, self.timeout) {
            (Wait::Prompt, Some(t)) => self.rx.recv_timeout(t).map_err(|e| match e {
                mpsc::RecvTimeoutError::Timeout => Error::Runtime(format!(
                    "no answer from the other side of the loopback ({}) within {} (--timeout)",
                    self.peer,
                    seconds(t)
                )),
                mpsc::RecvTimeoutError::Disconnected => gone(),
            })?,
            _ => self.rx.recv().map_err(|_| gone())?,
        };
        match handshake::decode(&frame)? {
            Message::Abort { code, reason } => Err(aborted(&self.peer, code, &reason)),
            m => Ok(m),
        }
    }

    fn peer(&self) -> String {
        self.peer.clone()
    }

    fn abort(&mut self, why: &Error) {
        let _ = self.tx.send(handshake::encode(&abort_message(why)));
    }
}

/// The channel between rank `rank` and its partner `rank ^ 1` of an MPI
/// job: every exchange is one all-gather of the whole job, so every pair
/// moves in step. A failing rank ends the whole job (world::fail_job), so
/// there is no abort message.
pub struct Ranks<'w> {
    world: &'w dyn crate::world::World,
    partner: usize,
}

impl<'w> Ranks<'w> {
    pub fn new(world: &'w dyn crate::world::World) -> Ranks<'w> {
        Ranks::with_partner(world, world.rank() ^ 1)
    }

    /// The channel to process `partner`: every process exchanges at the
    /// same time, each with its own partner (the rdma wires' pairs of a
    /// global qubit).
    pub fn with_partner(world: &'w dyn crate::world::World, partner: usize) -> Ranks<'w> {
        Ranks { world, partner }
    }
}

impl Channel for Ranks<'_> {
    fn exchange(&mut self, mine: &Message, _: Wait) -> Result<Message> {
        let all = self.world.all_gather(&handshake::encode(mine));
        let frame = all
            .get(self.partner)
            .ok_or_else(|| Error::Runtime(format!("rank {} has no partner", self.world.rank())))?;
        handshake::decode(frame).map_err(|e| prefix(e, &self.peer()))
    }

    fn peer(&self) -> String {
        format!("rank {}", self.partner)
    }

    fn abort(&mut self, _: &Error) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rdma::handshake::{Phase, StepMarker};
    use crate::rdma::plan::Test;

    fn step() -> Message {
        Message::Step(StepMarker { phase: Phase::Ready, test: Test::WriteBw, size: 2 })
    }

    fn listener() -> (TcpListener, u16) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        (l, port)
    }

    /// A server fed `bytes` by a raw client: the one-line error it gives.
    fn server_error(bytes: &'static [u8]) -> Error {
        let (l, port) = listener();
        drop(l);
        let server = std::thread::spawn(move || {
            let mut s =
                Tcp::bind("127.0.0.1".parse().unwrap(), port).unwrap().accept(Some(Duration::from_secs(5))).unwrap();
            s.exchange(&step(), Wait::Prompt).unwrap_err()
        });
        let mut raw = loop {
            match TcpStream::connect(("127.0.0.1", port)) {
                Ok(s) => break s,
                Err(_) => std::thread::sleep(Duration::from_millis(10)),
            }
        };
        raw.write_all(bytes).unwrap();
        drop(raw);
        server.join().unwrap()
    }

    #[test]
    fn garbage_scanners_and_short_frames_are_one_sentence() {
        let e = server_error(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
        assert!(e.message().contains("not a qbench rdma peer"), "{e}");
        let e = server_error(b"");
        assert!(e.message().contains("port scanner"), "{e}");
        let e = server_error(b"QBRD\x02\x00\x03\x00\x0a\x00\x00\x00\x01");
        assert!(e.message().contains("truncated"), "{e}");
        let e = server_error(b"QBRD\x02\x00\x03\x00\xff\xff\xff\x7f");
        assert!(e.message().contains("exceeds the limit"), "{e}");
        let e = server_error(b"QBRD\x07\x00\x03\x00\x00\x00\x00\x00");
        assert_eq!(e.exit_code(), 2, "{e}");
        assert!(!e.message().contains('\n'));
    }

    #[test]
    fn a_silent_server_times_out() {
        // Accepted by the kernel's backlog, never answered.
        let (_l, port) = listener();
        let mut c = Tcp::connect("127.0.0.1", port, Some(Duration::from_millis(300))).unwrap();
        let t = Instant::now();
        let e = c.exchange(&step(), Wait::Prompt).unwrap_err();
        assert!(e.message().contains("within 0.3 s"), "{e}");
        assert_eq!(e.exit_code(), 4);
        assert!(t.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn nobody_listening_times_out() {
        let (l, port) = listener();
        drop(l);
        let e = Tcp::connect("127.0.0.1", port, Some(Duration::from_millis(300))).err().unwrap();
        assert!(e.message().contains("no qbench rdma server answered"), "{e}");
    }

    #[test]
    fn tcp_and_local_channels_swap_and_relay_aborts() {
        let (l, port) = listener();
        drop(l);
        let server = std::thread::spawn(move || {
            let mut s =
                Tcp::bind("127.0.0.1".parse().unwrap(), port).unwrap().accept(Some(Duration::from_secs(5))).unwrap();
            let got = s.exchange(&step(), Wait::Prompt).unwrap();
            s.abort(&Error::Missing("no RDMA device named mlx5_9".into()));
            got
        });
        let mut c = Tcp::connect("127.0.0.1", port, Some(Duration::from_secs(5))).unwrap();
        assert_eq!(c.exchange(&step(), Wait::Prompt).unwrap(), step());
        let e = c.exchange(&step(), Wait::Busy).unwrap_err();
        assert_eq!(e.exit_code(), 3);
        assert!(e.message().contains("stopped: no RDMA device named mlx5_9"), "{e}");
        assert_eq!(server.join().unwrap(), step());

        let (mut a, mut b) = local_pair(("b".into(), "a".into()), Some(Duration::from_millis(100)));
        let t = std::thread::spawn(move || b.exchange(&step(), Wait::Prompt).unwrap());
        assert_eq!(a.exchange(&step(), Wait::Prompt).unwrap(), step());
        assert_eq!(t.join().unwrap(), step());
        assert!(a.exchange(&step(), Wait::Prompt).unwrap_err().message().contains("stopped"));
    }
}
