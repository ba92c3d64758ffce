//! The rdma workload: the plan's mode (server, client, loopback, MPI
//! pairs) becomes sides and channels, and the sides' links and rows become
//! one record, each row observed as its size finishes. Under MPI rank 0
//! speaks for the job: every pair's rows are gathered into every rank's
//! record and observed there. Prints nothing.

use crate::error::Result;
use crate::libs::Library;
use crate::rdma::plan::Plan;
use crate::record::rdma::{KIND, RdmaRun};
use crate::record::{Header, Observer, Outcome};
use crate::session::Session;
use crate::workload::Job;

impl Job for Plan {
    type Record = RdmaRun;

    fn libraries(&self) -> Vec<Library> {
        Plan::libraries(self)
    }

    fn without_gpus(&self) -> Option<&'static str> {
        Some("leave out --use_cuda and --use_cuda_bus_id to register host memory")
    }

    fn run(&self, session: &Session, obs: &mut dyn Observer<RdmaRun>) -> Outcome<RdmaRun> {
        run(self, session, obs)
    }

    fn verdict(&self, record: &RdmaRun, _rank: usize) -> Result<()> {
        record.verdict()
    }
}

/// Runs the plan in `session`, telling `obs` of every row.
fn run(plan: &Plan, session: &Session, obs: &mut dyn Observer<RdmaRun>) -> Outcome<RdmaRun> {
    #[cfg_attr(not(feature = "rdma"), allow(unused_mut))]
    let mut out = RdmaRun {
        header: Header::start(KIND, plan.fault),
        mode: plan.peer.mode(),
        report_gbits: plan.report_gbits,
        connections: 1,
        agreement: plan.agreement.clone(),
        links: Vec::new(),
        rows: Vec::new(),
    };
    obs.started(&out);
    #[cfg(feature = "rdma")]
    let result = live::run(plan, session, obs, &mut out);
    #[cfg(not(feature = "rdma"))]
    let result = {
        let _ = (session, obs, &mut out);
        Err(crate::error::Error::Missing(
            "no RDMA: this qbench was built without RDMA support (rebuild with `cargo build --release --features rdma`, which needs cmake and clang)".into(),
        ))
    };
    Outcome::new(out, result)
}

#[cfg(feature = "rdma")]
mod live {
    use crate::error::{Error, Result};
    use crate::probe::collect::rdma::RdmaFacts;
    use crate::rdma::data::Side;
    use crate::rdma::device;
    use crate::rdma::oob;
    use crate::rdma::plan::{BufferMemory, Peer, Plan};
    use crate::rdma::side::{self, Place, Progress};
    use crate::rdma::{memory, verbs};
    use crate::record::Observer;
    use crate::record::rdma::{Link, RdmaRow, RdmaRun};
    use crate::session::Session;

    pub fn run(plan: &Plan, session: &Session, obs: &mut dyn Observer<RdmaRun>, out: &mut RdmaRun) -> Result<()> {
        verbs::require()?;
        session.need(&plan.libraries())?;
        let memory = memory::resolve(&plan.memory)?;
        let facts = device::facts();
        let one = || device::select(&facts, plan.devices.first().map(String::as_str), plan.ib_port, plan.gid_index);
        match &plan.peer {
            Peer::Listen { bind, port } => {
                let choice = one()?;
                let listener = oob::Tcp::bind(*bind, *port)?;
                // The table's head says that the server waits.
                obs.begin(out);
                let mut chan = listener.accept(plan.timeout)?;
                side::run(plan, Side::Server, &Place { choice: &choice, memory }, &mut chan, &mut recorder(out, obs))
            }
            Peer::Connect { host, port } => {
                let choice = one()?;
                obs.begin(out);
                let mut chan = oob::Tcp::connect(host, *port, plan.timeout)?;
                side::run(plan, Side::Client, &Place { choice: &choice, memory }, &mut chan, &mut recorder(out, obs))
            }
            Peer::Loopback => {
                let named = match plan.devices.as_slice() {
                    [a, b] => Some((a.as_str(), b.as_str())),
                    _ => None,
                };
                let pairs = device::loopback_pairs(&facts, named, plan.ib_port, plan.gid_index)?;
                out.connections = pairs.len();
                obs.begin(out);
                for (a, b) in &pairs {
                    let (a, b) = (Place { choice: a, memory }, Place { choice: b, memory });
                    loopback(plan, &a, &b, &mut recorder(out, obs))?;
                }
                Ok(())
            }
            Peer::Ranks => mpi(plan, memory, session, &facts, obs, out),
        }
    }

    /// What one side's session tells: its links and rows go into the
    /// record, and each row to `obs` as its size finishes.
    fn recorder<'a>(out: &'a mut RdmaRun, obs: &'a mut dyn Observer<RdmaRun>) -> impl FnMut(Progress) + 'a {
        move |p| match p {
            Progress::Start(link) => out.links.push(*link),
            Progress::Row(row) => {
                out.rows.push(RdmaRow { link: out.links.len().saturating_sub(1), row });
                let run: &RdmaRun = out;
                obs.part(run, &run.rows[run.rows.len() - 1]);
            }
        }
    }

    /// Client at `a` in this thread, server at `b` in another, through memory.
    fn loopback(plan: &Plan, a: &Place, b: &Place, observe: &mut dyn FnMut(Progress)) -> Result<()> {
        let names = (b.choice.device.clone(), a.choice.device.clone());
        let (mut ca, mut cb) = oob::local_pair(names, plan.timeout);
        let (client, server) = std::thread::scope(|s| {
            let server = s.spawn(move || side::run(plan, Side::Server, b, &mut cb, &mut |_| {}));
            let client = side::run(plan, Side::Client, a, &mut ca, observe);
            drop(ca);
            (
                client,
                server
                    .join()
                    .unwrap_or_else(|_| Err(Error::Runtime("the server side of the loopback panicked".into()))),
            )
        });
        match (client, server) {
            (Ok(()), Ok(())) => Ok(()),
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
    /// devices by name). The clients record their pairs; then every rank
    /// gathers every pair's links and rows, and observes the other pairs'.
    fn mpi(
        plan: &Plan,
        memory: BufferMemory,
        session: &Session,
        facts: &RdmaFacts,
        obs: &mut dyn Observer<RdmaRun>,
        out: &mut RdmaRun,
    ) -> Result<()> {
        let world = session.world();
        let (rank, size) = (world.rank(), world.size());
        if size % 2 != 0 {
            return Err(Error::Usage(format!("pairs of ranks need an even number of processes, not {size}")));
        }
        let mut names = plan.devices.clone();
        if names.is_empty() {
            names = facts
                .devices
                .iter()
                .filter(|d| d.ports.iter().any(|p| p.port == plan.ib_port as u32 && p.is_active()))
                .map(|d| d.name.clone())
                .collect();
            names.sort();
        }
        let name = names.get(world.local_rank() % names.len().max(1)).cloned();
        let choice = device::select(facts, name.as_deref(), plan.ib_port, plan.gid_index)?;
        let place = Place { choice: &choice, memory };
        let side = if rank % 2 == 0 { Side::Client } else { Side::Server };
        out.connections = size / 2;
        obs.begin(out);
        let mut chan = oob::Ranks::new(world);
        match side {
            Side::Client => side::run(plan, side, &place, &mut chan, &mut recorder(out, obs))?,
            // Both sides end with the same rows: the client's are kept.
            Side::Server => side::run(plan, side, &place, &mut chan, &mut |_| {})?,
        }
        let mine = serde_json::to_vec(&(&out.links, &out.rows))
            .map_err(|e| Error::Runtime(format!("cannot encode this rank's records: {e}")))?;
        let all = world.all_gather(&mine);
        out.links.clear();
        out.rows.clear();
        for (r, bytes) in all.iter().enumerate() {
            let (links, rows): (Vec<Link>, Vec<RdmaRow>) = serde_json::from_slice(bytes)
                .map_err(|e| Error::Runtime(format!("rank {r} sent unreadable records: {e}")))?;
            let first = out.links.len();
            out.links.extend(links);
            for row in rows {
                out.rows.push(RdmaRow { link: first + row.link, row: row.row });
                // This rank's own rows were observed as they came.
                if r != rank {
                    obs.part(&*out, &out.rows[out.rows.len() - 1]);
                }
            }
        }
        Ok(())
    }
}
