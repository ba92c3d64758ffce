//! `qbench rdma`: the options become a plan, the mode (server, client,
//! loopback, MPI pairs) becomes sides and channels, the sessions' records
//! become the perftest-like table, JSON and CSV, and wrong data exit 1.
//! The only part of the RDMA code that prints.

use super::options::RdmaArgs;
use super::record::Mode;
use crate::error::Result;
use crate::usage;

pub fn run(args: &RdmaArgs) -> Result<()> {
    let plan = args.plan()?;
    let mode = mode(args)?;
    #[cfg(feature = "rdma")]
    {
        live::run(args, plan, mode)
    }
    #[cfg(not(feature = "rdma"))]
    {
        let _ = (plan, mode);
        Err(crate::error::Error::Missing(
            "no RDMA: this qbench was built without RDMA support (rebuild with `cargo build --release --features rdma`, which needs cmake and clang)".into(),
        ))
    }
}

fn mode(args: &RdmaArgs) -> Result<Mode> {
    Ok(if args.loopback {
        Mode::Loopback
    } else if args.server {
        Mode::Server
    } else if args.host.is_some() {
        Mode::Client
    } else if crate::world::launched_as_many().is_some() {
        Mode::Mpi
    } else {
        return Err(usage!(
            "say where the other side is: `qbench rdma --server` here and `qbench rdma HOST` there, --loopback for two adapters of this node, or mpirun -np 2N for pairs of ranks"
        ));
    })
}

#[cfg(feature = "rdma")]
mod live {
    use super::super::data::Side;
    use super::super::device::{self, PortChoice};
    use super::super::memory;
    use super::super::oob;
    use super::super::options::RdmaArgs;
    use super::super::plan::Plan;
    use super::super::record::Row;
    use super::super::record::{LinkRecord, Mode, RdmaRun};
    use super::super::session::{self, Progress};
    use super::super::{table, verbs};
    use crate::error::{Error, Result};
    use crate::usage;
    use std::io::Write;

    /// The verdict on the data of a finished run.
    fn verdict(run: &RdmaRun) -> Result<()> {
        match run.wrong_bytes() {
            0 => Ok(()),
            n => Err(Error::CheckFailed(format!(
                "{n} bytes arrived different from what was sent (see the #wrong column)"
            ))),
        }
    }

    /// The run's records as CSV: one line per row.
    fn csv(run: &RdmaRun, path: &std::path::Path) -> Result<()> {
        let fail =
            |e: &dyn std::fmt::Display| Error::Usage(format!("cannot write CSV results to {}: {e}", path.display()));
        let mut w = csv::Writer::from_path(path).map_err(|e| fail(&e))?;
        let head = [
            "test",
            "local",
            "remote",
            "bytes",
            "iterations",
            "bw_peak_bytes_per_s",
            "bw_avg_bytes_per_s",
            "msg_rate_mpps",
            "t_min_us",
            "t_max_us",
            "t_typical_us",
            "t_avg_us",
            "t_stdev_us",
            "t_p99_us",
            "t_p99_9_us",
            "checked_bytes",
            "wrong_bytes",
        ];
        w.write_record(head).map_err(|e| fail(&e))?;
        for l in &run.links {
            for r in &l.rows {
                let mut rec = vec![l.test.name().to_string(), l.local.device.clone(), l.remote.device.clone()];
                let f = |v: f64| v.to_string();
                match r {
                    Row::Bw(b) => {
                        rec.extend([b.bytes.to_string(), b.iterations.to_string()]);
                        rec.extend([
                            b.bw_peak_bytes_per_s.map(f).unwrap_or_default(),
                            f(b.bw_avg_bytes_per_s),
                            f(b.msg_rate_mpps),
                        ]);
                        rec.extend(std::iter::repeat_n(String::new(), 7));
                    }
                    Row::Lat(t) => {
                        rec.extend([t.bytes.to_string(), t.iterations.to_string()]);
                        rec.extend(std::iter::repeat_n(String::new(), 3));
                        rec.extend(
                            [
                                t.t_min_us,
                                t.t_max_us,
                                t.t_typical_us,
                                t.t_avg_us,
                                t.t_stdev_us,
                                t.t_p99_us,
                                t.t_p99_9_us,
                            ]
                            .map(f),
                        );
                    }
                }
                rec.extend([r.data().checked_bytes.to_string(), r.data().wrong_bytes.to_string()]);
                w.write_record(&rec).map_err(|e| fail(&e))?;
            }
        }
        w.flush().map_err(|e| fail(&e))
    }

    /// Prints the table as the rows come (unless --json).
    fn printer(quiet: bool, gbits: bool, mode: Mode) -> impl FnMut(Progress) {
        move |p| {
            if quiet {
                return;
            }
            let mut out = std::io::stdout().lock();
            let _ = match p {
                Progress::Start(l) => {
                    writeln!(out, "{}\n{}", table::header(l, mode), table::columns(l.test, gbits))
                }
                Progress::Row(_, r) => writeln!(out, "{}", table::row(r, gbits)),
                Progress::End(_) => writeln!(out, "{}", table::LINE),
            };
            let _ = out.flush();
        }
    }

    pub fn run(args: &RdmaArgs, mut plan: Plan, mode: Mode) -> Result<()> {
        verbs::require()?;
        plan.memory = memory::resolve(plan.memory, args.cuda_auto())?;
        let facts = device::facts();
        let (quiet, gbits) = (args.out.json, args.report_gbits);
        let mut run = RdmaRun::start(mode, plan.agreement.clone());
        let devices = args.devices();
        let one = |facts: &crate::probe::collect::rdma::RdmaFacts| {
            if devices.len() > 1 {
                return Err(usage!("-d names one device here ({} given)", devices.len()));
            }
            device::select(facts, devices.first().map(String::as_str), args.ib_port, args.gid_index)
        };
        match mode {
            Mode::Server => {
                let choice = one(&facts)?;
                let listener = oob::Tcp::bind(args.bind, args.port)?;
                if !quiet {
                    println!("************************************");
                    println!("* Waiting for client to connect... *");
                    println!("************************************");
                }
                let mut chan = listener.accept(plan.timeout)?;
                run.links = session::run(&plan, Side::Server, &choice, &mut chan, &mut printer(quiet, gbits, mode))?;
            }
            Mode::Client => {
                let choice = one(&facts)?;
                let host = args.host.as_deref().unwrap_or_default();
                let mut chan = oob::Tcp::connect(host, args.port, plan.timeout)?;
                run.links = session::run(&plan, Side::Client, &choice, &mut chan, &mut printer(quiet, gbits, mode))?;
            }
            Mode::Loopback => {
                let named = match devices.as_slice() {
                    [] => None,
                    [a, b] => Some((a.as_str(), b.as_str())),
                    _ => return Err(usage!("--loopback takes two devices, -d A,B (or none for every pair)")),
                };
                for (a, b) in device::loopback_pairs(&facts, named, args.ib_port, args.gid_index)? {
                    run.links.extend(loopback(&plan, &a, &b, &mut printer(quiet, gbits, mode))?);
                }
            }
            Mode::Mpi => return mpi(args, &plan, &facts, run),
        }
        finish(args, run)
    }

    /// Client on `a` in this thread, server on `b` in another, through memory.
    fn loopback(
        plan: &Plan,
        a: &PortChoice,
        b: &PortChoice,
        observe: &mut dyn FnMut(Progress),
    ) -> Result<Vec<LinkRecord>> {
        let (mut ca, mut cb) = oob::local_pair((b.device.clone(), a.device.clone()), plan.timeout);
        let (client, server) = std::thread::scope(|s| {
            let server = s.spawn(move || session::run(plan, Side::Server, b, &mut cb, &mut |_| {}));
            let client = session::run(plan, Side::Client, a, &mut ca, observe);
            drop(ca);
            (
                client,
                server
                    .join()
                    .unwrap_or_else(|_| Err(Error::Runtime("the server side of the loopback panicked".into()))),
            )
        });
        match (client, server) {
            (Ok(records), Ok(_)) => Ok(records),
            // The side that failed first says why; the other only saw it stop.
            (Err(c), Err(s)) if is_echo(&c) => Err(s),
            (Err(e), _) | (_, Err(e)) => Err(e),
        }
    }

    fn is_echo(e: &Error) -> bool {
        let m = e.message();
        m.starts_with("the peer (") || m.starts_with("the other side of the loopback")
    }

    /// Pairs of ranks: even ranks are clients of the next odd rank; each
    /// rank takes the device of its local rank (from -d A,B,… or the active
    /// devices by name). Rank 0 prints its pair as it runs and the others
    /// after.
    fn mpi(
        args: &RdmaArgs,
        plan: &Plan,
        facts: &crate::probe::collect::rdma::RdmaFacts,
        mut run: RdmaRun,
    ) -> Result<()> {
        let world = crate::world::detect()?;
        let (rank, size) = (world.rank(), world.size());
        let result = (|| {
            if size % 2 != 0 {
                return Err(usage!("pairs of ranks need an even number of processes, not {size}"));
            }
            let mut names = args.devices();
            if names.is_empty() {
                let mut active: Vec<String> = facts
                    .devices
                    .iter()
                    .filter(|d| d.ports.iter().any(|p| p.port == args.ib_port as u32 && p.is_active()))
                    .map(|d| d.name.clone())
                    .collect();
                active.sort();
                names = active;
            }
            let name = names.get(world.local_rank() % names.len().max(1)).cloned();
            let choice = device::select(facts, name.as_deref(), args.ib_port, args.gid_index)?;
            let side = if rank % 2 == 0 { Side::Client } else { Side::Server };
            let mut chan = oob::Ranks::new(world.as_ref());
            let quiet = args.out.json || rank != 0;
            let records =
                session::run(plan, side, &choice, &mut chan, &mut printer(quiet, args.report_gbits, Mode::Mpi))?;
            Ok::<_, Error>(if side == Side::Client { records } else { Vec::new() })
        })();
        let (mine, outcome) = match result {
            Ok(records) => (records, Ok(())),
            Err(e) => (Vec::new(), Err(e)),
        };
        crate::world::conclude(world.as_ref(), outcome)?;
        let text = serde_json::to_vec(&mine).map_err(|e| Error::Runtime(format!("cannot encode records: {e}")))?;
        let all = world.all_gather(&text);
        if rank != 0 {
            return Ok(());
        }
        run.links = Vec::new();
        for (r, bytes) in all.iter().enumerate() {
            let links: Vec<LinkRecord> = serde_json::from_slice(bytes)
                .map_err(|e| Error::Runtime(format!("rank {r} sent unreadable records: {e}")))?;
            if r > 0 && !args.out.json {
                for l in &links {
                    println!("{}\n{}", table::header(l, Mode::Mpi), table::columns(l.test, args.report_gbits));
                    for row in &l.rows {
                        println!("{}", table::row(row, args.report_gbits));
                    }
                    println!("{}", table::LINE);
                }
            }
            run.links.extend(links);
        }
        finish(args, run)
    }

    fn finish(args: &RdmaArgs, mut run: RdmaRun) -> Result<()> {
        run.finish();
        if let Some(path) = &args.out.output_file {
            let text =
                serde_json::to_string_pretty(&run).map_err(|e| Error::Runtime(format!("cannot encode JSON: {e}")))?;
            std::fs::write(path, text + "\n")
                .map_err(|e| Error::Usage(format!("cannot write JSON results to {}: {e}", path.display())))?;
        }
        if let Some(path) = &args.out.csv {
            csv(&run, path)?;
        }
        if args.out.json {
            println!(
                "{}",
                serde_json::to_string_pretty(&run).map_err(|e| Error::Runtime(format!("cannot encode JSON: {e}")))?
            );
        } else {
            println!("{}", table::summary(&run));
        }
        verdict(&run)
    }
}
