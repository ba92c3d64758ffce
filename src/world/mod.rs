//! The processes of a job: this process alone, or every process of an
//! `mpirun`/`srun` launch (cargo feature `mpi`). Everything ranks exchange
//! outside the data path (communicator ids, device lists, times, wrong
//! counts) goes through a [`World`], and so do the MPI wires' amplitudes.

#[cfg(feature = "mpi")]
pub mod mpi;
pub mod split;

use crate::error::{Error, Result};
use crate::record::RankInfo;
use std::time::Duration;

/// How long a process waits for its partner's half of a point-to-point
/// exchange (one piece of at most 1 GiB) before it takes the partner for
/// lost and ends the job.
pub const PEER_TIMEOUT: Duration = Duration::from_secs(120);

pub trait World {
    /// This process's index in the job.
    fn rank(&self) -> usize;
    /// Processes in the job.
    fn size(&self) -> usize;
    /// This process's index among the job's processes on its node.
    fn local_rank(&self) -> usize;
    /// Processes of the job on this process's node.
    fn local_size(&self) -> usize;
    fn barrier(&self);
    /// Overwrites `buf` on every process with `root`'s.
    fn broadcast(&self, root: usize, buf: &mut [u8]);
    /// Every process's bytes, in process order.
    fn all_gather(&self, mine: &[u8]) -> Vec<Vec<u8>>;
    fn sum_u64(&self, v: u64) -> u64;
    fn min_u64(&self, v: u64) -> u64;
    /// The element-wise maximum over processes.
    fn max_f64(&self, v: &[f64]) -> Vec<f64>;
    /// Ends every process of the job with `code`.
    fn abort(&self, code: i32) -> !;
    /// Sends `len` bytes at `send` to process `peer` and receives as many
    /// into `recv`. A partner silent for [`PEER_TIMEOUT`] ends the job.
    ///
    /// # Safety
    ///
    /// `send` must be readable and `recv` writable for `len` bytes (host
    /// memory; GPU memory only where [`World::cuda_aware`] says so), the two
    /// ranges must not overlap, and nothing else may touch them until this
    /// returns.
    unsafe fn sendrecv_raw(&self, peer: usize, send: *const u8, recv: *mut u8, len: usize) -> Result<()>;
    /// Exchanges `len` bytes with process `peer` as QuEST v4 does: cut into
    /// messages of `message` bytes of `unit`-byte elements, every message's
    /// send and receive posted at once, then one wait for all. A partner
    /// silent for [`PEER_TIMEOUT`] ends the job.
    ///
    /// # Safety
    ///
    /// As [`World::sendrecv_raw`].
    unsafe fn exchange_messages_raw(
        &self,
        peer: usize,
        send: *const u8,
        recv: *mut u8,
        len: usize,
        message: usize,
        unit: usize,
    ) -> Result<()>;
    /// [`World::sendrecv_raw`] of two host slices of one length.
    fn sendrecv(&self, peer: usize, send: &[u8], recv: &mut [u8]) -> Result<()> {
        if send.len() != recv.len() {
            return Err(Error::Runtime(format!("internal: {} bytes sent for {} received", send.len(), recv.len())));
        }
        // SAFETY: two host slices of `send.len()` bytes, borrowed (one of
        // them mutably, so they do not overlap) until the exchange returns.
        unsafe { self.sendrecv_raw(peer, send.as_ptr(), recv.as_mut_ptr(), send.len()) }
    }
    /// [`World::sendrecv`] waited for at most `limit`, under `tag` (a
    /// pass's round, so that a late message of an abandoned exchange
    /// matches no other): false when the partner's part did not come in
    /// time. The job goes on: the abandoned exchange keeps its buffers
    /// (MPI may still write into them), and `send` and `recv` are left as
    /// new buffers of the same contents and length.
    fn sendrecv_within(
        &self,
        peer: usize,
        send: &mut Vec<u8>,
        recv: &mut Vec<u8>,
        _tag: u16,
        _limit: Duration,
    ) -> Result<bool> {
        self.sendrecv(peer, send, recv).map(|()| true)
    }
    /// Every process's `mine` (all of one length), in process order,
    /// waited for at most `limit`: None past it (a process that stopped
    /// or hangs; the job cannot go on without it).
    fn all_gather_f64_within(&self, mine: &[f64], _limit: Duration) -> Result<Option<Vec<f64>>> {
        Ok(Some(gather_f64(self, mine)))
    }
    /// Whether [`World::sendrecv_raw`] takes GPU memory (a CUDA-aware MPI);
    /// Err says why not.
    fn cuda_aware(&self) -> std::result::Result<(), String>;
    /// The MPI communicator, for transports that move data through MPI.
    #[cfg(feature = "mpi")]
    fn mpi(&self) -> Option<&mpi::Mpi> {
        None
    }
}

/// Every process's f64 values, concatenated in process order.
pub fn gather_f64<W: World + ?Sized>(world: &W, mine: &[f64]) -> Vec<f64> {
    let bytes: Vec<u8> = mine.iter().flat_map(|v| v.to_le_bytes()).collect();
    world
        .all_gather(&bytes)
        .iter()
        .flat_map(|b| b.chunks_exact(8).map(|c| f64::from_le_bytes(c.try_into().unwrap_or([0; 8]))).collect::<Vec<_>>())
        .collect()
}

/// [`crate::interrupt::check`] agreed by every process: Err on all of
/// them when any one was signalled (or lost its stdout), so that none goes
/// on into an operation the others will not join.
pub fn check_interrupt(world: &dyn World) -> Result<()> {
    crate::interrupt::stop(world.max_f64(&[crate::interrupt::reason() as f64])[0] as u64)
}

/// Options whose value names a file every process reads as its plan: its
/// contents are part of what the processes must agree on.
const PLAN_FILES: [&str; 3] = ["--profile", "--baseline", "--circuit"];

/// The most bytes its reader takes of the file that `option` of
/// [`PLAN_FILES`] names.
fn limit(option: &str) -> u64 {
    match option {
        "--baseline" => crate::input::RECORD_BYTES,
        "--circuit" => crate::input::CIRCUIT_BYTES,
        _ => crate::input::PROFILE_BYTES,
    }
}

/// Options whose value names a file only rank 0 writes: a launch may give
/// each rank its own name, so the names are not compared.
const OUTPUT_FILES: [&str; 6] = ["-J", "--output_file", "--output-file", "--csv", "--save-baseline", "--init"];

/// This process's settings as the job compares them: its arguments (the
/// names of output files left out), then a digest of each plan file they
/// name (a profile that drifted on one node differs there).
pub fn settings(args: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(args.len());
    let mut files: Vec<(&str, u64)> = Vec::new();
    for (i, arg) in args.iter().enumerate() {
        // Whether `arg` is the value of an option of `names` written apart.
        let value_of = |names: &[&str]| i > 0 && option(&args[i - 1], names).is_some_and(|(_, v)| v.is_none());
        if value_of(&OUTPUT_FILES) {
            out.push("(an output file)".into());
            continue;
        }
        out.push(option(arg, &OUTPUT_FILES).map_or_else(|| arg.clone(), |(name, _)| name.to_string()));
        if value_of(&PLAN_FILES) {
            files.push((arg.as_str(), limit(&args[i - 1])));
        } else if let Some((name, Some(path))) = option(arg, &PLAN_FILES) {
            files.push((path, limit(name)));
        }
    }
    out.extend(files.into_iter().filter_map(|(path, most)| contents(path, most)));
    out
}

/// "the contents of PATH (digest …)" of a file every process reads, read
/// as its reader reads it (a regular file of at most `limit` bytes, never
/// blocking); None when it cannot be read so (the reader says why).
fn contents(path: &str, limit: u64) -> Option<String> {
    use std::hash::{Hash, Hasher};
    let bytes = crate::input::read(std::path::Path::new(path), path, limit).ok()?;
    let mut h = std::collections::hash_map::DefaultHasher::new();
    bytes.hash(&mut h);
    Some(format!("the contents of {path} (digest {:016x})", h.finish()))
}

/// Environment variables that change what a job measures, so that every
/// process must see the same values.
const AGREED_ENV: [&str; 5] = [
    "NCCL_TESTS_SPLIT",
    "NCCL_TESTS_SPLIT_MASK",
    "NCCL_TESTS_ALLTOALLV_SPREAD",
    "NCCL_TESTS_ALLTOALLV_MATRIX_FILE",
    "NCCL_TESTS_ALLTOALLV_MATRIX_SCALE",
];

/// Of [`AGREED_ENV`], those that name a file every process reads: its
/// contents must agree too (a traffic matrix that differs on one node).
const AGREED_ENV_FILES: [&str; 1] = ["NCCL_TESTS_ALLTOALLV_MATRIX_FILE"];

/// [`AGREED_ENV`]'s variables as this process has them, and the contents
/// of the files they name, for [`agree_on_settings`].
pub fn agreed_environment() -> Vec<String> {
    let mut out: Vec<String> =
        AGREED_ENV.iter().map(|v| format!("{v}={}", std::env::var(v).unwrap_or_else(|_| "(unset)".into()))).collect();
    out.extend(AGREED_ENV_FILES.iter().filter_map(|v| contents(&std::env::var(v).ok()?, crate::input::MATRIX_BYTES)));
    out
}

/// The option of `names` that `arg` is, and its value when written
/// `--option=value`.
fn option<'a, 'n>(arg: &'a str, names: &[&'n str]) -> Option<(&'n str, Option<&'a str>)> {
    names.iter().find_map(|&n| match arg.strip_prefix(n)? {
        "" => Some((n, None)),
        rest => rest.strip_prefix('=').map(|v| (n, Some(v))),
    })
}

/// Err (exit 2) on every process unless all were launched with rank 0's
/// settings: a rank with other sizes, iterations or profile would hang
/// in a collective, abort inside MPI or report its data as wrong. Rank
/// 0 prints the one line, naming the first rank that differs, its host
/// and the first differing setting; the others end quietly.
pub fn agree_on_settings(world: &dyn World, mine: &[String]) -> Result<()> {
    if world.size() == 1 {
        return Ok(());
    }
    let encode = serde_json::to_vec(&(crate::host::short_hostname(), mine))
        .map_err(|e| Error::Runtime(format!("cannot encode the command line: {e}")))?;
    let all: Vec<(String, Vec<String>)> = world
        .all_gather(&encode)
        .iter()
        .map(|b| serde_json::from_slice(b).map_err(|e| Error::Runtime(format!("cannot decode a command line: {e}"))))
        .collect::<Result<_>>()?;
    let first = &all[0].1;
    let Some((rank, (host, theirs))) = all.iter().enumerate().find(|(_, (_, s))| s != first) else { return Ok(()) };
    if world.rank() == 0 {
        let at = first.iter().zip(theirs).position(|(a, b)| a != b).unwrap_or(first.len().min(theirs.len()));
        let show = |s: &[String]| s.get(at).map_or_else(|| "nothing".to_string(), |x| format!("'{x}'"));
        crate::ui::say(&format!(
            "qbench: rank {rank} on {host} was launched with other settings than rank 0: {} where rank 0 has {} \
             (every process of a job must run the same command)",
            show(theirs),
            show(first)
        ));
    }
    // No process exits before rank 0 has said why: the launcher ends the
    // job at the first exit.
    world.barrier();
    Err(Error::Said { code: Error::Usage(String::new()).exit_code() })
}

/// A failure at a point every process of the job reaches (the session's
/// start, a check of the job's shape), said once: every process's outcome
/// is gathered, the lowest rank holding each distinct message says it
/// (naming the ranks only where not every process failed alike), and every
/// process ends with the lowest failing rank's exit status, none before
/// those lines are out. Alone, `result` as it is.
pub fn agree(world: &dyn World, result: Result<()>) -> Result<()> {
    if world.size() == 1 {
        return result;
    }
    let mine: Option<(i32, String)> = result.err().map(|e| (e.exit_code(), e.message()));
    let encode = serde_json::to_vec(&(crate::host::short_hostname(), &mine))
        .map_err(|e| Error::Runtime(format!("cannot encode an outcome: {e}")))?;
    let all: Vec<(String, Option<(i32, String)>)> = world
        .all_gather(&encode)
        .iter()
        .map(|b| serde_json::from_slice(b).map_err(|e| Error::Runtime(format!("cannot decode an outcome: {e}"))))
        .collect::<Result<_>>()?;
    let Some(code) = all.iter().find_map(|(_, o)| o.as_ref().map(|(code, _)| *code)) else { return Ok(()) };
    if let Some((_, message)) = mine.filter(|(_, m)| !m.is_empty()) {
        let holders: Vec<(usize, &str)> = all
            .iter()
            .enumerate()
            .filter(|(_, (_, o))| o.as_ref().is_some_and(|(_, m)| *m == message))
            .map(|(rank, (host, _))| (rank, host.as_str()))
            .collect();
        if holders.first().map(|h| h.0) == Some(world.rank()) {
            crate::ui::say(&format!("qbench: {}{message}", who(&holders, world.size())));
        }
    }
    world.barrier();
    Err(Error::Said { code })
}

/// Past this many, a list of ranks or nodes names the first and counts the rest.
const NAMED: usize = 8;

/// "" when every process of a job of `size` holds the message; else "rank 2
/// on vm: ", "ranks 1 and 3 on qn1, qn2: ".
fn who(holders: &[(usize, &str)], size: usize) -> String {
    if holders.len() == size {
        return String::new();
    }
    let named = |items: Vec<String>| match items.len() {
        n if n > NAMED => format!("{} and {} more", items[..NAMED].join(", "), n - NAMED),
        1 => items[0].clone(),
        n => format!("{} and {}", items[..n - 1].join(", "), items[n - 1]),
    };
    let mut hosts: Vec<String> = Vec::new();
    for (_, h) in holders {
        if !hosts.iter().any(|x| x == h) {
            hosts.push(h.to_string());
        }
    }
    let ranks = holders.iter().map(|(r, _)| r.to_string()).collect();
    let noun = if holders.len() == 1 { "rank" } else { "ranks" };
    format!("{noun} {} on {}: ", named(ranks), named(hosts))
}

/// An error met before the job's world started (the command line, a plan),
/// to end this process with. Under a launcher, in a qbench built with MPI,
/// the world is started to agree on it: every process launched alike fails
/// alike, and the lowest rank says it once. Otherwise (alone, after the
/// world started, or where it cannot start) `e` itself, for the caller to say.
pub fn before_start(e: Error) -> Error {
    #[cfg(feature = "mpi")]
    if launched_as_many().is_some()
        && !::mpi::environment::is_initialized()
        && let Ok(world) = mpi::Mpi::init()
    {
        return agree(&world, Err(e)).err().unwrap_or(Error::Said { code: 4 });
    }
    e
}

/// Every process's ranks, in rank order, for the `# Using devices` block.
pub fn all_ranks(world: &dyn World, mine: &[RankInfo]) -> Result<Vec<RankInfo>> {
    let bytes = serde_json::to_vec(mine).map_err(|e| Error::Runtime(format!("cannot encode the device list: {e}")))?;
    let mut all = Vec::new();
    for b in world.all_gather(&bytes) {
        let ranks: Vec<RankInfo> =
            serde_json::from_slice(&b).map_err(|e| Error::Runtime(format!("cannot decode a device list: {e}")))?;
        all.extend(ranks);
    }
    all.sort_by_key(|r| r.rank);
    Ok(all)
}

/// This process alone.
pub struct Solo;

impl World for Solo {
    fn rank(&self) -> usize {
        0
    }
    fn size(&self) -> usize {
        1
    }
    fn local_rank(&self) -> usize {
        0
    }
    fn local_size(&self) -> usize {
        1
    }
    fn barrier(&self) {}
    fn broadcast(&self, _: usize, _: &mut [u8]) {}
    fn all_gather(&self, mine: &[u8]) -> Vec<Vec<u8>> {
        vec![mine.to_vec()]
    }
    fn sum_u64(&self, v: u64) -> u64 {
        v
    }
    fn min_u64(&self, v: u64) -> u64 {
        v
    }
    fn max_f64(&self, v: &[f64]) -> Vec<f64> {
        v.to_vec()
    }
    fn abort(&self, code: i32) -> ! {
        std::process::exit(code)
    }
    /// The only peer is this process: a host copy.
    unsafe fn sendrecv_raw(&self, peer: usize, send: *const u8, recv: *mut u8, len: usize) -> Result<()> {
        if peer != 0 {
            return Err(Error::Runtime(format!("internal: no process {peer} in a job of one")));
        }
        // SAFETY: the caller vouches for two disjoint host ranges of `len` bytes.
        unsafe { std::ptr::copy_nonoverlapping(send, recv, len) };
        Ok(())
    }
    unsafe fn exchange_messages_raw(
        &self,
        peer: usize,
        send: *const u8,
        recv: *mut u8,
        len: usize,
        _message: usize,
        _unit: usize,
    ) -> Result<()> {
        // SAFETY: the caller's promise is sendrecv_raw's.
        unsafe { self.sendrecv_raw(peer, send, recv, len) }
    }
    fn cuda_aware(&self) -> std::result::Result<(), String> {
        Err("this process runs alone, without MPI".into())
    }
}

/// The launcher variable that shows this process is one of several, and how
/// many: Open MPI, MPICH/Intel MPI (PMI), PMIx and Slurm's srun.
pub fn launched_as_many() -> Option<(&'static str, usize)> {
    several(&["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_STEP_NUM_TASKS"]).or_else(|| {
        // PMIx gives each process its rank; any rank above 0 means several.
        count("PMIX_RANK").filter(|&r| r > 0).map(|r| ("PMIX_RANK", r + 1))
    })
}

/// How many processes the launcher started on this node, where it says and
/// there are several: Open MPI and MPICH/Hydra (Intel MPI) say.
pub fn launched_on_this_node() -> Option<(&'static str, usize)> {
    several(&["OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"])
}

/// The first of `vars` that holds a count above 1, and the count.
fn several(vars: &[&'static str]) -> Option<(&'static str, usize)> {
    vars.iter().find_map(|&var| count(var).filter(|&n| n > 1).map(|n| (var, n)))
}

/// The number in environment variable `var`, if it holds one.
fn count(var: &str) -> Option<usize> {
    std::env::var(var).ok()?.trim().parse().ok()
}

/// The launchers' count variables, any of which, set to something other
/// than a whole number, says a launcher meant something qbench cannot read.
const COUNT_VARS: [&str; 6] =
    ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_STEP_NUM_TASKS", "PMIX_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"];

/// Err naming the first launcher variable that is set but holds no count.
fn counts_readable() -> Result<()> {
    for var in COUNT_VARS {
        if let Ok(v) = std::env::var(var)
            && count(var).is_none()
        {
            return Err(Error::Usage(format!(
                "{var}={}: a launcher's process count that is no whole number; unset it, or start qbench with the launcher that sets it",
                crate::input::token(&v)
            )));
        }
    }
    Ok(())
}

/// The world this process is part of. Under a launcher without MPI
/// support, refuses rather than run as one of N unrelated jobs.
pub fn detect() -> Result<Box<dyn World>> {
    counts_readable()?;
    let Some((var, n)) = launched_as_many() else { return Ok(Box::new(Solo)) };
    #[cfg(feature = "mpi")]
    {
        let _ = (var, n);
        Ok(Box::new(mpi::Mpi::init()?))
    }
    // Every process of the launch meets this alike; the first says it.
    #[cfg(not(feature = "mpi"))]
    Err(match launched_rank() {
        Some(r) if r > 0 => Error::Said { code: Error::Usage(String::new()).exit_code() },
        _ => Error::Usage(format!(
            "this qbench was started as one of several processes ({var} says {n}) but was built without MPI support, so each would run alone; rebuild with `cargo build --release --features mpi`, or start one process"
        )),
    })
}

/// This process's rank as its launcher tells it (Open MPI, PMI, PMIx,
/// Slurm), for a qbench that cannot ask MPI.
#[cfg(not(feature = "mpi"))]
fn launched_rank() -> Option<usize> {
    ["OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"].iter().find_map(|v| count(v))
}

/// How a job's outcome ends this process. Every rank reaches the same
/// verdict on the data, and rank 0 says it; any other failure of a rank
/// ends the whole job.
pub fn conclude(world: &dyn World, result: Result<()>) -> Result<()> {
    match result {
        Err(e @ Error::CheckFailed(_)) => verdict(world, Err(e)),
        // Every process has it, and it was said: nobody is left waiting.
        Err(e @ Error::Said { .. }) => Err(e),
        Err(e) if world.size() > 1 => fail_job(world, &e),
        r => r,
    }
}

/// A verdict every rank reached alike: rank 0 says it, the others end with
/// its exit status in silence.
pub fn verdict(world: &dyn World, result: Result<()>) -> Result<()> {
    match result {
        Err(e) if world.rank() != 0 => Err(match e {
            Error::Said { .. } => e,
            Error::Missing(_) => Error::Missing(String::new()),
            Error::Usage(_) => Error::Usage(String::new()),
            Error::Runtime(_) => Error::Runtime(String::new()),
            _ => Error::CheckFailed(String::new()),
        }),
        r => r,
    }
}

/// Reports a failure of this rank and ends the whole job: a rank that stops
/// alone would leave the others waiting for it.
pub fn fail_job(world: &dyn World, e: &Error) -> ! {
    say_for_rank(world.rank(), e);
    world.abort(e.exit_code())
}

/// A failure's one line, naming the rank and its node (nothing for a
/// failure already said).
fn say_for_rank(rank: usize, e: &Error) {
    if !e.message().is_empty() {
        crate::ui::say(&format!("qbench: rank {rank} on {}: {e}", crate::host::short_hostname()));
    }
}

/// The one line of a panic (`e`, an internal error), from the panic hook.
/// In an MPI job it names the rank and ends the whole job at once, as
/// [`fail_job`] does: unwinding would reach MPI_Finalize, which waits for
/// the ranks that wait for this one. Alone, a panic on the main thread
/// unwinds to main, which exits 4; on any other thread the process exits
/// 4 here.
pub fn panicked(e: &Error) {
    #[cfg(feature = "mpi")]
    if let Some(world) = mpi::running() {
        use ::mpi::topology::Communicator;
        say_for_rank(world.rank() as usize, e);
        world.abort(e.exit_code())
    }
    crate::ui::say(&format!("qbench: {e}"));
    // A rank's thread that panics leaves the others waiting for it in a
    // barrier or a collective: the process ends here rather than hang
    // (_exit, as the other threads are still inside the libraries).
    if std::thread::current().name() != Some("main") {
        signal_hook::low_level::exit(e.exit_code());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(args: &[&str]) -> Vec<String> {
        settings(&args.iter().map(|a| a.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn output_names_are_not_compared_but_plan_files_contents_are() {
        assert_eq!(
            of(&["allreduce", "-J", "a.json", "--csv=a.csv"]),
            of(&["allreduce", "-J", "b.json", "--csv=b.csv"])
        );
        assert_ne!(of(&["allreduce", "-n", "5"]), of(&["allreduce", "-n", "50"]));
        let dir = std::env::temp_dir().join(format!("qbench-settings-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (a, b) = (dir.join("a.toml"), dir.join("b.toml"));
        std::fs::write(&a, "x").unwrap();
        std::fs::write(&b, "y").unwrap();
        for form in [
            |p: &str| vec!["check".to_string(), "--profile".into(), p.into()],
            |p: &str| vec!["check".to_string(), format!("--profile={p}")],
        ] {
            let s = settings(&form(a.to_str().unwrap()));
            assert!(s.last().unwrap().starts_with("the contents of "), "{s:?}");
            std::fs::write(&b, "x").unwrap();
            let same = settings(&form(b.to_str().unwrap()));
            assert_eq!(s.last().unwrap().rsplit(' ').next(), same.last().unwrap().rsplit(' ').next(), "one digest");
            std::fs::write(&b, "y").unwrap();
            let other = settings(&form(b.to_str().unwrap()));
            assert_ne!(s.last().unwrap().rsplit(' ').next(), other.last().unwrap().rsplit(' ').next());
        }
        std::fs::remove_dir_all(dir).unwrap();
    }
}
