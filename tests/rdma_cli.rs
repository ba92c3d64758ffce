//! `qbench rdma` outside the soft-RoCE VM: on a machine without RDMA it
//! answers with one "no RDMA" sentence and exit 3 (also when libibverbs
//! itself is missing), usage errors are one line and exit 2, and the
//! handshake between two sides agrees, disagrees and times out in one
//! sentence each, never hanging. The tests with traffic run inside
//! tests/rdma-vm.

mod common;

use common::{one_line_error, qbench};
use qbench::rdma::oob::{self, Channel, Tcp};
use qbench::rdma::plan::{Agreement, Sizes, Test, Timing};
use std::net::TcpListener;
use std::process::Command;
use std::time::{Duration, Instant};

fn has_rdma() -> bool {
    std::fs::read_dir("/sys/class/infiniband").is_ok_and(|mut d| d.next().is_some())
}

#[test]
fn no_rdma_is_one_sentence_and_exit_3() {
    if has_rdma() {
        eprintln!("skipped: this machine has RDMA devices");
        return;
    }
    for args in [
        &["rdma", "--loopback"][..],
        &["rdma", "--server"],
        &["rdma", "127.0.0.1", "--test", "all"],
        // perftest's letters pass the plan and reach the adapter.
        &["rdma", "-D", "2", "-S", "3", "--tclass", "32", "-m", "1024", "-F", "127.0.0.1"],
        &["rdma", "--run_infinitely", "-D", "1", "--test", "ib_send_bw", "127.0.0.1"],
    ] {
        let err = one_line_error(&qbench(args), 3);
        assert!(err.starts_with("qbench: no RDMA"), "{args:?}: {err}");
    }
    // perftest's program names are qbench rdma with their test.
    for program in ["ib_write_bw", "ib_read_bw", "ib_send_bw", "ib_write_lat", "ib_read_lat", "ib_send_lat"] {
        let err = one_line_error(&qbench(&[program, "--loopback", "-n", "5"]), 3);
        assert!(err.starts_with("qbench: no RDMA"), "{program}: {err}");
    }
    // GPU memory needs the CUDA driver too: either is missing here.
    one_line_error(&qbench(&["rdma", "-d", "mlx5_0", "-a", "--report_gbits", "--use_cuda=0"]), 3);
}

/// The path of libibverbs.so.1 the loader would find, if any.
fn libibverbs() -> Option<String> {
    let out = Command::new("ldconfig").arg("-p").output().ok()?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find(|l| l.trim_start().starts_with("libibverbs.so.1 ") && l.contains("x86-64"))
        .and_then(|l| l.rsplit(" => ").next())
        .map(str::to_string)
}

#[test]
fn without_libibverbs_it_still_starts_and_says_so() {
    let bin = env!("CARGO_BIN_EXE_qbench");
    let o = match libibverbs() {
        None => qbench(&["rdma", "--loopback"]),
        // Installed here: hide it in a private mount namespace (needs root).
        Some(lib) => {
            let script = format!("mount --bind /dev/null '{lib}' && exec '{bin}' rdma --loopback");
            match Command::new("unshare").args(["-m", "sh", "-c", &script]).output() {
                Ok(o) if !String::from_utf8_lossy(&o.stderr).contains("mount") => o,
                _ => {
                    eprintln!("skipped: libibverbs is installed and cannot be hidden (not root?)");
                    return;
                }
            }
        }
    };
    let err = one_line_error(&o, 3);
    assert!(err.starts_with("qbench: no RDMA"), "{err}");
    if cfg!(feature = "rdma") && !has_rdma() {
        assert!(err.contains("libibverbs") || err.contains("/sys/class/infiniband"), "{err}");
    }
}

#[test]
fn usage_errors_are_one_line_exit_2() {
    for (args, text) in [
        (&["rdma", "--loopback", "-n", "2"][..], "-n"),
        (&["rdma", "--loopback", "-q", "0"], "-q"),
        (&["rdma", "--loopback", "--test", "ping"], "unknown RDMA test 'ping'"),
        (&["rdma", "--loopback", "-s", "0"], "-s"),
        (&["rdma", "--server", "host"], "cannot be used with"),
        (&["rdma", "-a", "-s", "64", "host"], "cannot be used with"),
        (&["rdma", "--loopback", "--numa", "near"], "'near' is not auto, off or a NUMA node number"),
        (&["rdma", "--loopback", "--numa", "4096"], "--numa 4096: no NUMA node 4096 here"),
    ] {
        let err = one_line_error(&qbench(args), 2);
        assert!(err.contains(text), "{args:?}: {err}");
    }
}

/// perftest's options with values they cannot take, and qbench's earlier
/// --use_cuda HOW and --cuda_device: one line, exit 2, before any adapter
/// or GPU is looked for (this machine has neither, which would be exit 3).
#[test]
fn perftest_options_with_bad_values_are_one_line_exit_2() {
    for (args, text) in [
        (&["rdma", "-S", "16", "host"][..], "service level 16 (-S): perftest's range is 0..15"),
        (&["rdma", "--tclass", "256"], "256"),
        (&["rdma", "-m", "1500"], "MTU 1500 (-m) is not an InfiniBand MTU"),
        (&["rdma", "-m", "0", "host"], "MTU 0 (-m)"),
        (&["rdma", "--run_infinitely", "-D", "0"], "-D 0"),
        (&["rdma", "-D", "0", "host"], "-D 0"),
        (&["rdma", "-D", "4", "-f", "2"], "longer than twice the margin"),
        (&["rdma", "-D", "2", "-a", "host"], "leave out -a"),
        (&["rdma", "-D", "2", "-n", "100", "host"], "give one of them"),
        (&["rdma", "--run_infinitely", "--test", "write_lat"], "bandwidth tests only"),
        (&["rdma", "--run_infinitely", "--test", "write_bw,read_bw"], "runs one test"),
        (&["rdma", "--use_cuda=x"], "--use_cuda takes a GPU index"),
        (&["rdma", "--use_cuda"], "as in perftest: --use_cuda=0"),
        (&["rdma", "--use_cuda=dmabuf", "host"], "--use_cuda=0 --use_cuda_dmabuf"),
        (&["rdma", "--cuda_device", "1", "host"], "--use_cuda=N"),
        (&["rdma", "--use_cuda_dmabuf", "host"], "name the GPU with --use_cuda=N"),
        (&["rdma", "--use_cuda_bus_id=3b", "host"], "not a PCI address"),
        (&["rdma", "-T", "32", "host"], "the GRH's traffic class is --tclass"),
    ] {
        let err = one_line_error(&qbench(args), 2);
        assert!(err.contains(text), "{args:?}: {err}");
    }
}

fn agreement(sizes: Sizes) -> Agreement {
    Agreement {
        tests: vec![Test::WriteBw],
        sizes,
        iters: 0,
        qps: 1,
        tx_depth: 0,
        bidirectional: false,
        seed: 1,
        timing: Timing::Iterations,
        mtu: 0,
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

#[test]
fn sides_that_disagree_on_sizes_both_say_so() {
    let port = free_port();
    let t = Some(Duration::from_secs(10));
    let server = std::thread::spawn(move || {
        let mut s = Tcp::bind("127.0.0.1".parse().unwrap(), port).unwrap().accept(t).unwrap();
        oob::agree(&mut s, &agreement(Sizes::Single(4096))).unwrap_err()
    });
    let mut c = Tcp::connect("127.0.0.1", port, t).unwrap();
    let e = oob::agree(&mut c, &agreement(Sizes::Single(8192))).unwrap_err();
    assert_eq!(e.exit_code(), 2);
    assert!(e.message().contains("disagree (-s 8192 here, -s 4096 there)"), "{e}");
    let e = server.join().unwrap();
    assert!(e.message().contains("disagree (-s 4096 here, -s 8192 there)"), "{e}");
    assert!(!e.message().contains('\n'));
}

#[test]
fn sides_that_agree_go_on() {
    let port = free_port();
    let t = Some(Duration::from_secs(10));
    let server = std::thread::spawn(move || {
        let mut s = Tcp::bind("127.0.0.1".parse().unwrap(), port).unwrap().accept(t).unwrap();
        oob::agree(&mut s, &agreement(Sizes::All))
    });
    let mut c = Tcp::connect("127.0.0.1", port, t).unwrap();
    oob::agree(&mut c, &agreement(Sizes::All)).unwrap();
    server.join().unwrap().unwrap();
    assert!(c.peer().starts_with("127.0.0.1:"));
}

#[test]
fn a_server_that_never_answers_times_out() {
    // The kernel accepts the connection; nobody ever reads or writes it.
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let start = Instant::now();
    let mut c = Tcp::connect("127.0.0.1", port, Some(Duration::from_secs(1))).unwrap();
    let e = oob::agree(&mut c, &agreement(Sizes::Default)).unwrap_err();
    assert_eq!(e.exit_code(), 4);
    assert!(e.message().contains("no answer from the peer") && e.message().contains("within 1 s"), "{e}");
    assert!(start.elapsed() < Duration::from_secs(10));
    drop(l);
}

#[test]
fn no_client_times_out_the_server() {
    let port = free_port();
    let l = Tcp::bind("127.0.0.1".parse().unwrap(), port).unwrap();
    let e = l.accept(Some(Duration::from_millis(200))).err().unwrap();
    assert_eq!(e.exit_code(), 4);
    assert!(e.message().contains("no client connected"), "{e}");
}
