//! `qbench rdma`'s command line, in perftest's letters, and the way to
//! reach the peer it names: the options of the rdma library's plan.

use super::{OutputArgs, size_arg};
use crate::error::Result;
use crate::rdma::oob::DEFAULT_PORT;
use crate::rdma::plan::{CudaVia, Options, Peer, Plan};
use clap::{Args, ValueEnum};
use std::net::{IpAddr, Ipv4Addr};

/// How GPU memory is registered with the adapter (`--use_cuda`).
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum CudaArg {
    /// dma-buf when the GPU supports it, else nvidia_peermem
    Auto,
    /// A dma-buf file descriptor of the GPU memory (ibv_reg_dmabuf_mr)
    Dmabuf,
    /// The GPU address itself, through the nvidia_peermem kernel module (ibv_reg_mr)
    Peermem,
}

#[derive(Args, Debug, Clone)]
#[command(
    after_help = "Start `qbench rdma` (or `--server`) on one node and `qbench rdma HOST` on the other with the same test options, as perftest's ib_*_bw and ib_*_lat, \
or `qbench rdma --loopback` for every pair of adapters of this node, or `mpirun -np 2N qbench rdma` for N pairs of ranks.\n\
Every byte that arrives is compared with its seeded pattern; a wrong byte exits 1.\n\
QBENCH_CORRUPT=rdma[:BYTE] flips byte BYTE (default 0) of every buffer this process sends from, to prove it."
)]
pub struct RdmaArgs {
    /// The server to connect to (this process is the client)
    #[arg(value_name = "HOST", conflicts_with_all = ["server", "loopback"])]
    pub host: Option<String>,
    /// Wait for one client, run the tests with it, then exit (what no HOST means, as in perftest)
    #[arg(long, conflicts_with = "loopback")]
    pub server: bool,
    /// Both sides in this process: every pair of this node's adapters (or the two of -d A,B)
    #[arg(long)]
    pub loopback: bool,
    /// Tests, comma-separated: write_bw, read_bw, send_bw, write_lat, read_lat, send_lat, or all
    #[arg(long = "test", default_value = "write_bw", value_name = "NAME,...")]
    pub test: String,
    /// RDMA device (default: the first with an active port); A,B for --loopback; one per local rank, comma-separated, under MPI
    #[arg(short = 'd', long = "ib-dev", alias = "ib_dev", value_name = "DEVICE")]
    pub device: Option<String>,
    /// Port of the device
    #[arg(short = 'i', long = "ib-port", alias = "ib_port", default_value_t = 1, value_parser = clap::value_parser!(u8).range(1..))]
    pub ib_port: u8,
    /// GID index (default: for RoCE, the RoCE v2 GID holding an IPv4 address, as NCCL; none for InfiniBand)
    #[arg(short = 'x', long = "gid-index", alias = "gid_index")]
    pub gid_index: Option<u32>,
    /// Message size (default 65536 for bandwidth, 2 for latency; K, M, G suffixes are binary)
    #[arg(short = 's', long = "size", value_parser = size_arg, conflicts_with = "all")]
    pub size: Option<u64>,
    /// Every size from 2 B to 8 MiB
    #[arg(short = 'a', long = "all")]
    pub all: bool,
    /// Iterations per size (default 1000; 5000 for write_bw)
    #[arg(short = 'n', long = "iters")]
    pub iters: Option<u32>,
    /// Queue pairs (bandwidth tests)
    #[arg(short = 'q', long = "qp", default_value_t = 1)]
    pub qps: u32,
    /// Outstanding requests per queue pair (bandwidth tests; default 128)
    #[arg(short = 't', long = "tx-depth", alias = "tx_depth")]
    pub tx_depth: Option<u32>,
    /// Both directions at once (bandwidth tests; the figures are the sum)
    #[arg(short = 'b', long = "bidirectional")]
    pub bidirectional: bool,
    /// Bandwidth in Gb/s (10^9 bit/s) instead of MiB/s
    #[arg(long = "report_gbits", alias = "report-gbits")]
    pub report_gbits: bool,
    /// Buffers in GPU memory (GPUDirect RDMA), registered through dma-buf or nvidia_peermem
    #[arg(long = "use_cuda", alias = "use-cuda", value_enum, num_args = 0..=1, default_missing_value = "auto", value_name = "HOW")]
    pub use_cuda: Option<CudaArg>,
    /// The GPU of --use_cuda
    #[arg(long = "cuda_device", alias = "cuda-device", default_value_t = 0, value_name = "N")]
    pub cuda_device: u32,
    /// TCP port of the out-of-band handshake
    #[arg(short = 'p', long = "port", default_value_t = DEFAULT_PORT)]
    pub port: u16,
    /// Address the server listens on
    #[arg(long, value_name = "ADDR", default_value_t = IpAddr::V4(Ipv4Addr::UNSPECIFIED))]
    pub bind: IpAddr,
    /// Seconds to wait for the peer to connect or answer, and for a completion (0 = for ever)
    #[arg(long, default_value_t = 30, value_name = "SECONDS")]
    pub timeout: u64,
    /// Seed of the data pattern
    #[arg(long, default_value_t = crate::pattern::DEFAULT_SEED)]
    pub seed: u64,
    /// Where each side runs: auto binds its thread and host buffers to the NUMA node of its adapter, off binds nothing, N binds to node N
    #[arg(long, default_value = "auto", value_name = "auto|off|N")]
    pub numa: crate::numa::Mode,
    #[command(flatten)]
    pub out: OutputArgs,
}

impl RdmaArgs {
    /// The plan these options describe, checked.
    pub fn plan(&self) -> Result<Plan> {
        let use_cuda = self.use_cuda.map(|c| match c {
            CudaArg::Auto => CudaVia::Auto,
            CudaArg::Dmabuf => CudaVia::Dmabuf,
            CudaArg::Peermem => CudaVia::Peermem,
        });
        Plan::new(&Options {
            tests: self.test.clone(),
            peer: self.peer()?,
            devices: self.devices(),
            ib_port: self.ib_port,
            gid_index: self.gid_index,
            size: self.size,
            all: self.all,
            iters: self.iters,
            qps: self.qps,
            tx_depth: self.tx_depth,
            bidirectional: self.bidirectional,
            report_gbits: self.report_gbits,
            use_cuda,
            cuda_device: self.cuda_device,
            timeout_s: self.timeout,
            seed: self.seed,
            fault: Plan::fault_asked()?,
            numa: self.numa,
        })
    }

    /// Where the other side is: --loopback, --server, HOST, or the ranks of
    /// the launcher that started this process.
    fn peer(&self) -> Result<Peer> {
        Ok(if self.loopback {
            Peer::Loopback
        } else if let Some(host) = &self.host {
            Peer::Connect { host: host.clone(), port: self.port }
        } else if !self.server && crate::world::launched_as_many().is_some() {
            Peer::Ranks
        } else {
            // No host is the server, as perftest's `ib_write_bw -d mlx5_0`.
            Peer::Listen { bind: self.bind, port: self.port }
        })
    }

    /// `-d` split at commas.
    fn devices(&self) -> Vec<String> {
        self.device
            .iter()
            .flat_map(|d| d.split(','))
            .map(str::trim)
            .filter(|d| !d.is_empty())
            .map(String::from)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rdma::plan::{Memory, Mode, Sizes};
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        rdma: RdmaArgs,
    }

    fn parse(args: &[&str]) -> std::result::Result<RdmaArgs, clap::Error> {
        Cli::try_parse_from(std::iter::once("rdma").chain(args.iter().copied())).map(|c| c.rdma)
    }

    #[test]
    fn perftest_letters() {
        let a =
            parse(&["-d", "rxe0", "-i", "1", "-x", "0", "-s", "64K", "-n", "200", "-q", "2", "-t", "64", "-b", "host"])
                .unwrap();
        let p = a.plan().unwrap();
        assert_eq!(p.agreement.sizes, Sizes::Single(65536));
        assert_eq!(
            (p.agreement.iters, p.agreement.qps, p.agreement.tx_depth, p.agreement.bidirectional),
            (200, 2, 64, true)
        );
        assert_eq!(a.host.as_deref(), Some("host"));
        assert_eq!(p.peer, Peer::Connect { host: "host".into(), port: DEFAULT_PORT });
        assert_eq!((p.devices.as_slice(), p.ib_port, p.gid_index), (&["rxe0".to_string()][..], 1, Some(0)));
        let a = parse(&["--server", "-a", "--test", "all", "--report_gbits", "--use_cuda"]).unwrap();
        let p = a.plan().unwrap();
        assert!(p.report_gbits && p.cuda_auto);
        assert_eq!(p.memory, Memory::CudaDmabuf { gpu: 0 });
        assert_eq!(p.peer.mode(), Mode::Server);
        assert_eq!(p.libraries(), [crate::libs::Library::Driver]);
        // No host is perftest's server: `ib_write_bw -d mlx5_0 -a --report_gbits`.
        let p = parse(&["-d", "mlx5_0", "-a", "--report_gbits"]).unwrap().plan().unwrap();
        assert_eq!(p.peer.mode(), Mode::Server);
        assert_eq!(p.peer, Peer::Listen { bind: a.bind, port: DEFAULT_PORT });
        assert_eq!(p.devices, ["mlx5_0"]);
        let a = parse(&["--loopback", "--use_cuda=peermem", "-d", "rxe0, rxe1"]).unwrap();
        let p = a.plan().unwrap();
        assert_eq!(p.memory, Memory::CudaPeermem { gpu: 0 });
        assert!(!p.cuda_auto);
        assert_eq!(p.devices, ["rxe0", "rxe1"]);
        assert!(parse(&["--loopback"]).unwrap().plan().unwrap().libraries().is_empty());
    }

    #[test]
    fn ranges_are_usage_errors() {
        assert!(parse(&["--server", "host"]).is_err());
        assert!(parse(&["-s", "1", "-a"]).is_err());
        for bad in [
            &["--loopback", "-n", "2"][..],
            &["--loopback", "-q", "0"],
            &["--loopback", "-t", "20000"],
            &["--loopback", "-s", "0"],
            &["--loopback", "--test", "ping"],
            &["--loopback", "-d", "rxe0"],
            &["--server", "-d", "rxe0,rxe1"],
            &["-d", "rxe0,rxe1"],
            &["-d", "a,b,c", "host"],
        ] {
            assert_eq!(parse(bad).unwrap().plan().unwrap_err().exit_code(), 2, "{bad:?}");
        }
    }
}
