//! `qbench rdma`'s command line, in perftest's letters, and the way to
//! reach the peer it names: the options of the rdma library's plan. Each
//! of perftest's programs (`qbench ib_write_bw …`) is `qbench rdma` with
//! its test, so that a perftest line runs with `qbench` in front of it.

use super::{OutputArgs, size_arg};
use crate::error::Error;
use crate::error::Result;
use crate::rdma::oob::DEFAULT_PORT;
use crate::rdma::plan::{GpuDevice, GpuReg, MemoryAsk, Options, Peer, Plan};
use clap::parser::ValueSource;
use clap::{ArgMatches, Args, FromArgMatches, Subcommand, ValueEnum};
use std::net::{IpAddr, Ipv4Addr};

/// How GPU memory is registered with the adapter (`--gpu_reg`).
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum GpuRegArg {
    /// The GPU address itself, through the nvidia_peermem kernel module (ibv_reg_mr): perftest's --use_cuda
    Peermem,
    /// A dma-buf file descriptor of the GPU memory (ibv_reg_dmabuf_mr): perftest's --use_cuda_dmabuf
    Dmabuf,
    /// dma-buf when the GPU can export it, else nvidia_peermem
    Auto,
}

/// `--use_cuda`'s value: perftest's GPU index. The registration methods
/// it once took, and no value at all, are one line saying what to write.
fn gpu_index(text: &str) -> std::result::Result<u32, String> {
    let now = match text {
        "" => "--use_cuda=0",
        "peermem" => "--use_cuda=0 (registered through nvidia_peermem, perftest's default)",
        "dmabuf" => "--use_cuda=0 --use_cuda_dmabuf",
        "auto" => "--use_cuda=0 --gpu_reg auto",
        _ => return text.parse().map_err(|_| "--use_cuda takes a GPU index (0, 1, ...), as in perftest".to_string()),
    };
    Err(format!("--use_cuda takes a GPU index, as in perftest: {now}"))
}

/// perftest's programs and the test each runs.
pub const PERFTEST: [(&str, &str); 6] = [
    ("ib_write_bw", "write_bw"),
    ("ib_read_bw", "read_bw"),
    ("ib_send_bw", "send_bw"),
    ("ib_write_lat", "write_lat"),
    ("ib_read_lat", "read_lat"),
    ("ib_send_lat", "send_lat"),
];

/// `qbench rdma`, or one of perftest's programs (hidden from the list of
/// commands, named in rdma's help): the same options, the program's test.
#[derive(Debug)]
pub struct RdmaCommand {
    pub args: RdmaArgs,
}

impl FromArgMatches for RdmaCommand {
    fn from_arg_matches(m: &ArgMatches) -> std::result::Result<Self, clap::Error> {
        let (name, sub) = m.subcommand().ok_or_else(|| clap::Error::new(clap::error::ErrorKind::MissingSubcommand))?;
        let mut args = RdmaArgs::from_arg_matches(sub)?;
        if let Some((program, test)) = PERFTEST.iter().find(|(p, _)| *p == name) {
            if sub.value_source("test") == Some(ValueSource::CommandLine) {
                return Err(clap::Error::raw(
                    clap::error::ErrorKind::ArgumentConflict,
                    format!("--test: {program} runs {test}; qbench rdma --test NAME,... runs others\n"),
                ));
            }
            args.test = test.to_string();
        }
        Ok(RdmaCommand { args })
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> std::result::Result<(), clap::Error> {
        *self = RdmaCommand::from_arg_matches(m)?;
        Ok(())
    }
}

impl Subcommand for RdmaCommand {
    fn augment_subcommands(mut cmd: clap::Command) -> clap::Command {
        cmd = cmd.subcommand(RdmaArgs::augment_args(clap::Command::new("rdma")).about(
            "RDMA WRITE/READ/SEND bandwidth and latency between two adapters (perftest's ib_*_bw and ib_*_lat, which are names of it too)",
        ));
        for (program, test) in PERFTEST {
            let about = format!("perftest's {program}: qbench rdma --test {test}");
            let sub = RdmaArgs::augment_args(clap::Command::new(program)).about(about).hide(true);
            cmd = cmd.subcommand(sub.mut_arg("test", |a| a.hide(true)));
        }
        cmd
    }

    fn augment_subcommands_for_update(cmd: clap::Command) -> clap::Command {
        RdmaCommand::augment_subcommands(cmd)
    }

    fn has_subcommand(name: &str) -> bool {
        name == "rdma" || PERFTEST.iter().any(|(p, _)| *p == name)
    }
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
    /// GID index, 0 to 255 (default: for RoCE, the RoCE v2 GID holding an IPv4 address, as NCCL; none for InfiniBand)
    #[arg(short = 'x', long = "gid-index", alias = "gid_index", value_parser = clap::value_parser!(u32).range(0..=255))]
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
    /// Run each test this long instead of -n iterations; its figures are the middle, after -f seconds of warm-up and before as many of cool-down (perftest's duration mode). With --run_infinitely, the seconds between lines (default 5)
    #[arg(short = 'D', long = "duration", value_name = "SECONDS")]
    pub duration: Option<u32>,
    /// The warm-up and cool-down of -D, seconds (default a quarter of -D, rounded down)
    #[arg(short = 'f', long = "margin", value_name = "SECONDS")]
    pub margin: Option<u32>,
    /// Run one bandwidth test until interrupted, a line every -D seconds of what completed since the last; Ctrl-C ends it with every byte checked and the record written (exit 130)
    #[arg(long = "run_infinitely", alias = "run-infinitely")]
    pub run_infinitely: bool,
    /// Path MTU in bytes: 256, 512, 1024, 2048 or 4096, at most the ports' active MTU (default: the smaller active MTU of the two ports)
    #[arg(short = 'm', long = "mtu", value_name = "BYTES")]
    pub mtu: Option<u32>,
    /// Service level of this side's packets, 0..15
    #[arg(short = 'S', long = "sl", default_value_t = 0, value_name = "SL")]
    pub sl: u8,
    /// Traffic class of this side's GRH, 0..255 (RoCE, or InfiniBand with -x)
    #[arg(long = "tclass", default_value_t = 0, value_name = "TCLASS")]
    pub tclass: u8,
    /// perftest's ToS of rdma_cm queue pairs (its -R): refused, with a pointer to --tclass
    #[arg(short = 'T', long = "tos", hide = true, value_name = "TOS")]
    pub tos: Option<String>,
    /// Accepted for perftest's command lines; changes nothing: qbench reads no CPU frequency (it times with the monotonic clock)
    #[arg(short = 'F', long = "CPU-freq", alias = "cpu-freq")]
    pub cpu_freq: bool,
    /// Bandwidth in Gb/s (10^9 bit/s) instead of MiB/s
    #[arg(long = "report_gbits", alias = "report-gbits")]
    pub report_gbits: bool,
    /// Buffers in this GPU's memory (GPUDirect RDMA), as perftest: registered by address through nvidia_peermem unless --use_cuda_dmabuf or --gpu_reg says otherwise
    #[arg(long = "use_cuda", alias = "use-cuda", value_name = "GPU", value_parser = gpu_index, num_args = 0..=1, default_missing_value = "", conflicts_with = "use_cuda_bus_id")]
    pub use_cuda: Option<u32>,
    /// Buffers in the memory of the GPU at this PCI address (0000:3b:00.0), as perftest
    #[arg(long = "use_cuda_bus_id", alias = "use-cuda-bus-id", value_name = "PCI_ADDRESS")]
    pub use_cuda_bus_id: Option<String>,
    /// Register the GPU memory through dma-buf (ibv_reg_dmabuf_mr), as perftest: --gpu_reg dmabuf
    #[arg(long = "use_cuda_dmabuf", alias = "use-cuda-dmabuf", conflicts_with = "gpu_reg")]
    pub use_cuda_dmabuf: bool,
    /// How the GPU memory is registered (default peermem, as perftest)
    #[arg(long = "gpu_reg", alias = "gpu-reg", value_enum, value_name = "HOW")]
    pub gpu_reg: Option<GpuRegArg>,
    /// What --use_cuda=N now says: refused, with that hint
    #[arg(long = "cuda_device", alias = "cuda-device", hide = true, value_name = "N")]
    pub cuda_device: Option<String>,
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
        if self.tos.is_some() {
            return Err(Error::Usage(
                "-T (--tos) is perftest's ToS of rdma_cm queue pairs, taken only with its -R, which qbench does not use: the GRH's traffic class is --tclass".into(),
            ));
        }
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
            duration_s: self.duration,
            margin_s: self.margin,
            run_infinitely: self.run_infinitely,
            mtu: self.mtu,
            sl: self.sl,
            traffic_class: self.tclass,
            report_gbits: self.report_gbits,
            memory: self.memory()?,
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

    /// Host memory, or perftest's GPU memory: the GPU by index or PCI
    /// address, registered by address unless dma-buf is asked for.
    fn memory(&self) -> Result<MemoryAsk> {
        if self.cuda_device.is_some() {
            return Err(Error::Usage("--cuda_device is gone: name the GPU as perftest does, --use_cuda=N".into()));
        }
        let device = match (self.use_cuda, &self.use_cuda_bus_id) {
            (Some(i), _) => Some(GpuDevice::Index(i)),
            (None, Some(id)) => Some(GpuDevice::bus_id(id)?),
            (None, None) => None,
        };
        let reg = match (self.use_cuda_dmabuf, self.gpu_reg) {
            (true, _) | (false, Some(GpuRegArg::Dmabuf)) => Some(GpuReg::Dmabuf),
            (false, Some(GpuRegArg::Peermem)) => Some(GpuReg::Peermem),
            (false, Some(GpuRegArg::Auto)) => Some(GpuReg::Auto),
            (false, None) => None,
        };
        match (device, reg) {
            (None, None) => Ok(MemoryAsk::Host),
            (None, Some(_)) => Err(Error::Usage(
                "--use_cuda_dmabuf and --gpu_reg say how GPU memory is registered: name the GPU with --use_cuda=N or --use_cuda_bus_id".into(),
            )),
            (Some(device), reg) => Ok(MemoryAsk::Gpu { device, reg: reg.unwrap_or(GpuReg::Peermem) }),
        }
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
    use crate::rdma::plan::{Mode, Sizes, Timing};
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
        assert_eq!((p.agreement.timing, p.agreement.mtu, p.sl, p.traffic_class), (Timing::Iterations, 0, 0, 0));
        assert_eq!(p.memory, MemoryAsk::Host);
        assert!(parse(&["--loopback"]).unwrap().plan().unwrap().libraries().is_empty());
    }

    /// perftest's GPU options: --use_cuda=N is a GPU index registered by
    /// address (nvidia_peermem), --use_cuda_dmabuf registers through
    /// dma-buf, --use_cuda_bus_id names the GPU by PCI address.
    #[test]
    fn perftest_gpu_options() {
        // No host is perftest's server: `ib_write_bw -d mlx5_0 -a --report_gbits --use_cuda=0`.
        let a = parse(&["-d", "mlx5_0", "-a", "--report_gbits", "--use_cuda=0"]).unwrap();
        let p = a.plan().unwrap();
        assert_eq!(p.peer, Peer::Listen { bind: a.bind, port: DEFAULT_PORT });
        assert_eq!(p.peer.mode(), Mode::Server);
        assert_eq!(
            (p.devices.as_slice(), p.agreement.sizes, p.report_gbits),
            (&["mlx5_0".to_string()][..], Sizes::All, true)
        );
        assert_eq!(p.memory, MemoryAsk::Gpu { device: GpuDevice::Index(0), reg: GpuReg::Peermem });
        assert_eq!(p.libraries(), [crate::libs::Library::Driver]);
        let gpu = |args: &[&str]| parse(args).unwrap().plan().unwrap().memory;
        assert_eq!(
            gpu(&["--use_cuda", "3", "--use_cuda_dmabuf", "host"]),
            MemoryAsk::Gpu { device: GpuDevice::Index(3), reg: GpuReg::Dmabuf }
        );
        assert_eq!(
            gpu(&["--use_cuda_bus_id=0000:3b:00.0", "--gpu_reg", "auto"]),
            MemoryAsk::Gpu { device: GpuDevice::BusId("0000:3b:00.0".into()), reg: GpuReg::Auto }
        );
        assert_eq!(
            gpu(&["--loopback", "--use_cuda=1", "--gpu_reg=dmabuf", "-d", "rxe0, rxe1"]),
            MemoryAsk::Gpu { device: GpuDevice::Index(1), reg: GpuReg::Dmabuf }
        );
    }

    /// perftest's -D, --run_infinitely, -S, --tclass, -m and -F.
    #[test]
    fn perftest_timing_and_path_options() {
        let p = parse(&["-D", "2", "-S", "3", "--tclass", "32", "-m", "1024", "-F", "host"]).unwrap().plan().unwrap();
        assert_eq!(p.agreement.timing, Timing::Duration { seconds: 2, margin: 0 });
        assert_eq!((p.sl, p.traffic_class, p.agreement.mtu), (3, 32, 1024));
        let p = parse(&["--duration=10", "--margin=3", "--sl=15", "--mtu=4096", "--CPU-freq"]).unwrap().plan().unwrap();
        assert_eq!(
            (p.agreement.timing, p.sl, p.agreement.mtu),
            (Timing::Duration { seconds: 10, margin: 3 }, 15, 4096)
        );
        let p = parse(&["-d", "mlx5_0", "--run_infinitely", "-D", "1", "--report_gbits"]).unwrap().plan().unwrap();
        assert_eq!(p.agreement.timing, Timing::Infinitely { seconds: 1 });
        let p = parse(&["--run_infinitely", "host"]).unwrap().plan().unwrap();
        assert_eq!(p.agreement.timing, Timing::Infinitely { seconds: crate::rdma::plan::DEFAULT_DURATION_S });
    }

    /// Bad values of the perftest options, and qbench's own earlier
    /// --use_cuda HOW and --cuda_device: each one line, exit 2.
    #[test]
    fn bad_perftest_values_are_one_line() {
        for (args, text) in [
            (&["--use_cuda=x"][..], "takes a GPU index (0, 1, ...)"),
            (&["--use_cuda"], "as in perftest: --use_cuda=0"),
            (&["--use_cuda=dmabuf"], "--use_cuda=0 --use_cuda_dmabuf"),
            (&["--use_cuda=auto"], "--use_cuda=0 --gpu_reg auto"),
            (&["--use_cuda=-1"], "GPU index"),
            (&["-S", "256"], "256"),
            (&["--tclass", "256"], "256"),
            (&["--use_cuda=0", "--use_cuda_bus_id=3b:00.0"], "cannot be used with"),
            (&["--use_cuda=0", "--use_cuda_dmabuf", "--gpu_reg", "auto"], "cannot be used with"),
            (&["-D", "x"], "invalid value"),
        ] {
            let e = parse(args).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{args:?}: {e}");
            assert!(e.to_string().contains(text), "{args:?}: {e}");
        }
        for (args, text) in [
            (&["-S", "16"][..], "perftest's range is 0..15"),
            (&["-m", "1500"], "not an InfiniBand MTU"),
            (&["-D", "0"], "-D 0"),
            (&["--run_infinitely", "-D", "0"], "-D 0"),
            (&["-D", "4", "-f", "2"], "twice the margin"),
            (&["-D", "2", "-a"], "leave out -a"),
            (&["-D", "2", "-n", "100"], "give one of them"),
            (&["--run_infinitely", "--test", "all"], "bandwidth tests only"),
            (&["--run_infinitely", "-b"], "with -b"),
            (&["-T", "32"], "--tclass"),
            (&["--tos=32"], "--tclass"),
            (&["--cuda_device", "1"], "--use_cuda=N"),
            (&["--use_cuda_dmabuf"], "name the GPU"),
            (&["--gpu_reg", "peermem"], "name the GPU"),
            (&["--use_cuda_bus_id", "3b"], "not a PCI address"),
        ] {
            let e = parse(args).map(|a| a.plan()).unwrap_or_else(|e| panic!("{args:?}: {e}")).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{args:?}: {e}");
            assert!(e.message().contains(text), "{args:?}: {e}");
            assert!(!e.message().contains('\n'), "{args:?}: {e}");
        }
    }

    /// `qbench ib_read_bw -d mlx5_0 host` is `qbench rdma --test read_bw -d
    /// mlx5_0 host`; a --test beside a program's name is refused.
    #[test]
    fn perftest_programs_are_rdma_with_their_test() {
        use crate::cli::{Cli, Command};
        let rdma = |args: &[&str]| match Cli::try_parse_from(std::iter::once("qbench").chain(args.iter().copied())) {
            Ok(Cli { command: Command::Rdma(c), .. }) => Ok(c.args),
            Ok(other) => panic!("{args:?}: {other:?}"),
            Err(e) => Err(e),
        };
        for (program, test) in PERFTEST {
            let a = rdma(&[program, "-d", "mlx5_0", "-s", "4K", "host"]).unwrap();
            assert_eq!((a.test.as_str(), a.device.as_deref(), a.host.as_deref()), (test, Some("mlx5_0"), Some("host")));
            assert_eq!(a.plan().unwrap().agreement.sizes, Sizes::Single(4096), "{program}");
        }
        assert_eq!(rdma(&["rdma", "--loopback"]).unwrap().test, "write_bw");
        let e = rdma(&["ib_send_lat", "--test", "write_bw"]).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("ib_send_lat runs send_lat"), "{e}");
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
