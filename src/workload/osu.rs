//! OSU Micro-Benchmarks' MPI tests as OSU 7.4 times them (osu_latency,
//! osu_bw, osu_bibw, osu_mbw_mr, osu_allreduce): the same loops, counts,
//! windows and formulas, on host or GPU buffers (`H`/`D`, GPU memory handed
//! to a CUDA-aware MPI), and what OSU leaves to `-c`, done for every size:
//! each receiving buffer compared, once the timed loop ends, with what
//! was sent (the all-reduce's with the exact sum). Prints nothing.

use crate::error::{Error, Result};
use crate::fault::Fault;
use crate::libs::Library;
use crate::record::osu::{Benchmark, Datatype, KIND, OsuRun, Place};
use crate::record::{Header, Observer, Outcome};
use crate::session::Session;
use crate::workload::Job;

/// OSU's switch to the large-message loop counts: sizes above 8 KiB.
const LARGE_MESSAGE: u64 = 8192;
/// The largest message: MPI counts are 32-bit.
pub const MAX_MESSAGE: u64 = 1 << 30;

/// The most messages `-W` puts in flight before a wait: each holds an MPI
/// request (and its status), so 2^32 of them would take tens of GB; OSU's
/// own window is 64.
pub const MOST_WINDOW: u32 = 1 << 16;

/// A run as the command line asked for it.
#[derive(Debug, Clone)]
pub struct OsuPlan {
    pub benchmark: Benchmark,
    pub min: u64,
    pub max: u64,
    /// -i and -x: both loop counts, small and large messages alike.
    pub iterations: Option<u32>,
    pub warmup: Option<u32>,
    pub window: u32,
    pub datatypes: Vec<Datatype>,
    pub buffers: (Place, Place),
    pub full: bool,
    pub validation_column: bool,
    pub fault: Option<Fault>,
}

impl OsuPlan {
    /// OSU's default sizes: osu_latency from 0 (printed from 1), the
    /// bandwidth tests from 1, up to 4 MiB; osu_allreduce from 1 to 1 MiB.
    pub fn default_sizes(benchmark: Benchmark) -> (u64, u64) {
        match benchmark {
            Benchmark::Latency => (0, 1 << 22),
            Benchmark::Bw | Benchmark::Bibw | Benchmark::MbwMr => (1, 1 << 22),
            Benchmark::Allreduce => (1, 1 << 20),
        }
    }

    /// OSU's timed iterations and untimed warm-up at `size`.
    pub fn loops(&self, size: u64) -> (u64, u64) {
        let large = size > LARGE_MESSAGE;
        let (iters, skip) = match (self.benchmark, large) {
            (Benchmark::Latency, false) => (10_000, 100),
            (Benchmark::Latency, true) => (1_000, 10),
            (Benchmark::Bw | Benchmark::Bibw, false) => (100, 10),
            (Benchmark::Bw | Benchmark::Bibw, true) => (20, 2),
            (Benchmark::MbwMr, _) => (100, 10),
            (Benchmark::Allreduce, false) => (1_000, 100),
            (Benchmark::Allreduce, true) => (100, 10),
        };
        (self.iterations.map_or(iters, u64::from), self.warmup.map_or(skip, u64::from))
    }

    /// OSU's sizes: from the minimum, doubling, to the maximum; 0 is never
    /// printed (it carries no element).
    pub fn sizes(&self) -> Vec<u64> {
        let mut out = Vec::new();
        let mut size = self.min;
        while size <= self.max {
            if size > 0 {
                out.push(size);
            }
            size = if size == 0 { 1 } else { size * 2 };
        }
        out
    }

    fn uses_gpus(&self) -> bool {
        self.buffers.0 == Place::Device || self.buffers.1 == Place::Device
    }
}

impl Job for OsuPlan {
    type Record = OsuRun;

    fn libraries(&self) -> Vec<Library> {
        if self.uses_gpus() { vec![Library::Driver] } else { Vec::new() }
    }

    fn without_gpus(&self) -> Option<&'static str> {
        Some("host buffers (H H, the default) need no GPU")
    }

    fn run(&self, session: &Session, obs: &mut dyn Observer<OsuRun>) -> Outcome<OsuRun> {
        let out = OsuRun {
            header: Header::start(KIND, self.fault),
            benchmark: self.benchmark,
            buffers: self.buffers,
            window: self.benchmark.windowed().then_some(self.window),
            pairs: None,
            full: self.full,
            validation_column: self.validation_column,
            ranks: Vec::new(),
            rows: Vec::new(),
            wrong_elements: 0,
        };
        obs.started(&out);
        #[cfg(feature = "mpi")]
        let (out, result) = {
            let mut out = out;
            let result = live::run(self, session, obs, &mut out);
            (out, result)
        };
        // One process (a launch of several stops at the world's start).
        #[cfg(not(feature = "mpi"))]
        let result = processes(self.benchmark, session.world().size()).and_then(|()| {
            let _ = &obs;
            Err(Error::Missing(format!(
                "{} needs MPI: this qbench was built without it (rebuild with `cargo build --release --features mpi`), and runs under mpirun or srun",
                self.benchmark.program()
            )))
        });
        Outcome::new(out, result)
    }

    fn verdict(&self, record: &OsuRun, _rank: usize) -> Result<()> {
        record.verdict()
    }
}

/// The processes `benchmark` needs, against the `n` there are.
fn processes(benchmark: Benchmark, n: usize) -> Result<()> {
    let program = benchmark.program();
    let wrong = match benchmark {
        Benchmark::Latency | Benchmark::Bw | Benchmark::Bibw => (n != 2).then(|| "exactly two processes".to_string()),
        Benchmark::MbwMr => (n < 2 || !n.is_multiple_of(2)).then(|| "an even number of processes (pairs)".to_string()),
        Benchmark::Allreduce => (n < 2).then(|| "at least two processes".to_string()),
    };
    // The count to launch instead: two, or the even count nearest above.
    let fit = if benchmark == Benchmark::MbwMr { (n + n % 2).max(2) } else { 2 };
    match (wrong, n) {
        (None, _) => Ok(()),
        (Some(need), 1) => Err(Error::Usage(format!(
            "{program} needs {need}, not 1: start it under mpirun or srun (mpirun -np {fit} qbench {program})"
        ))),
        (Some(need), _) => Err(Error::Usage(format!(
            "{program} needs {need}, not {n}: launch it with -np {fit} (mpirun -np {fit} qbench {program})"
        ))),
    }
}

/// The bytes process `rank` sends at `size`: a pattern no other size or
/// sender repeats at the same offset.
#[cfg(any(feature = "mpi", test))]
fn pattern(size: u64, rank: usize, len: usize) -> Vec<u8> {
    let seed = size.wrapping_mul(7).wrapping_add(rank as u64 * 29 + 1);
    (0..len as u64).map(|j| ((j.wrapping_mul(131).wrapping_add(seed)) % 251) as u8).collect()
}

/// Process `rank`'s all-reduce input: element i is (i + rank) mod 7 + 1.
#[cfg(any(feature = "mpi", test))]
fn summand(i: u64, rank: usize) -> i64 {
    ((i + rank as u64) % 7 + 1) as i64
}

/// The exact sum of element `i` over `n` processes.
#[cfg(any(feature = "mpi", test))]
fn sum_over(i: u64, n: usize) -> i64 {
    let cycles = (n / 7) as i64 * 28;
    cycles + (0..n % 7).map(|r| summand(i, r)).sum::<i64>()
}

/// `values` as the bytes of `datatype` (MPI_CHAR sums wrap as C's do).
#[cfg(any(feature = "mpi", test))]
fn encode(datatype: Datatype, values: impl Iterator<Item = i64>) -> Vec<u8> {
    match datatype {
        Datatype::Char => values.map(|v| v as i8 as u8).collect(),
        Datatype::Int => values.flat_map(|v| (v as i32).to_ne_bytes()).collect(),
        Datatype::Float => values.flat_map(|v| (v as f32).to_ne_bytes()).collect(),
    }
}

/// Elements of `unit` bytes where `got` and `want` differ.
#[cfg(any(feature = "mpi", test))]
fn wrong_elements(got: &[u8], want: &[u8], unit: usize) -> u64 {
    got.chunks(unit).zip(want.chunks(unit)).filter(|(a, b)| a != b).count() as u64
}

#[cfg(feature = "mpi")]
mod live {
    use super::{OsuPlan, encode, pattern, processes, sum_over, summand, wrong_elements};
    use crate::error::{Error, Result};
    use crate::fault::Fault;
    use crate::gpu::{DeviceBuffer, Gpu};
    use crate::record::osu::{Benchmark, Datatype, OsuRow, OsuRun, Place};
    use crate::record::{Observer, RankInfo};
    use crate::session::Session;
    use crate::world::mpi::{Element, Mpi};
    use crate::world::{self, World};
    use std::time::Instant;

    /// A buffer of host or GPU memory.
    enum Buffer {
        Host(Vec<u8>),
        Device(DeviceBuffer),
    }

    impl Buffer {
        fn new(place: Place, gpu: Option<&Gpu>, len: u64) -> Result<Buffer> {
            match (place, gpu) {
                (Place::Device, Some(g)) => Ok(Buffer::Device(g.alloc(len)?)),
                (Place::Device, None) => Err(Error::Runtime("internal: a GPU buffer without a GPU".into())),
                (Place::Host, _) => {
                    let mut v = Vec::new();
                    v.try_reserve_exact(len as usize).map_err(|_| {
                        Error::Usage(format!(
                            "{} of host memory for the largest message does not fit here: lower -m",
                            crate::units::format_size(len)
                        ))
                    })?;
                    v.resize(len as usize, 0);
                    Ok(Buffer::Host(v))
                }
            }
        }

        fn ptr(&mut self) -> *mut u8 {
            match self {
                Buffer::Host(v) => v.as_mut_ptr(),
                Buffer::Device(d) => d.ptr() as *mut u8,
            }
        }

        fn write(&mut self, bytes: &[u8]) -> Result<()> {
            match self {
                Buffer::Host(v) => {
                    v[..bytes.len()].copy_from_slice(bytes);
                    Ok(())
                }
                Buffer::Device(d) => d.upload(bytes),
            }
        }

        fn read(&self, len: usize) -> Result<Vec<u8>> {
            match self {
                Buffer::Host(v) => Ok(v[..len].to_vec()),
                Buffer::Device(d) => {
                    let mut out = vec![0u8; len];
                    d.download(&mut out)?;
                    Ok(out)
                }
            }
        }
    }

    fn element(d: Datatype) -> Element {
        match d {
            Datatype::Char => Element::Char,
            Datatype::Int => Element::Int,
            Datatype::Float => Element::Float,
        }
    }

    /// This process's part: its rank, its peer, its buffers, and whether it
    /// receives data (and so checks it).
    struct Side<'a> {
        mpi: &'a Mpi,
        rank: usize,
        n: usize,
        send: Buffer,
        recv: Buffer,
        fault: Option<Fault>,
    }

    pub fn run(plan: &OsuPlan, session: &Session, obs: &mut dyn Observer<OsuRun>, out: &mut OsuRun) -> Result<()> {
        let world = session.world();
        // Every process finds the same count: the first says it, once.
        crate::world::agree(world, processes(plan.benchmark, world.size()))?;
        let mpi = world
            .mpi()
            .ok_or_else(|| Error::Runtime(format!("internal: {} processes without an MPI world", world.size())))?;
        let (rank, n) = (world.rank(), world.size());
        let pairs = n / 2;
        // OSU's SRC is rank 0's (the senders' of osu_mbw_mr), DST rank 1's.
        let first = match plan.benchmark {
            Benchmark::MbwMr => rank < pairs,
            Benchmark::Allreduce => true,
            _ => rank == 0,
        };
        let place = if first { plan.buffers.0 } else { plan.buffers.1 };
        let gpu = if place == Place::Device {
            world.cuda_aware().map_err(|why| {
                Error::Missing(format!(
                    "D buffers need an MPI that takes GPU memory (CUDA-aware), and this one does not: {why}; use H H"
                ))
            })?;
            Some(crate::gpu::open_local_gpus_shared(1, world)?.0.remove(0))
        } else {
            None
        };
        let mine = match &gpu {
            Some(g) => g.rank_info(rank),
            None => RankInfo {
                rank,
                group: 0,
                pid: std::process::id(),
                host: crate::host::short_hostname(),
                device: 0,
                bus_id: "host".into(),
                name: "host memory".into(),
            },
        };
        out.ranks = world::all_ranks(world, &[mine])?;
        out.pairs = (plan.benchmark == Benchmark::MbwMr).then_some(pairs);
        let len = plan.max.max(1);
        let mut side = Side {
            mpi,
            rank,
            n,
            send: Buffer::new(place, gpu.as_ref(), len)?,
            recv: Buffer::new(place, gpu.as_ref(), len)?,
            fault: plan.fault,
        };
        obs.begin(out);
        for &datatype in &plan.datatypes {
            for size in plan.sizes() {
                let count = (size / datatype.size()) as usize;
                if count == 0 {
                    continue;
                }
                world::check_interrupt(world)?;
                let (iterations, skip) = plan.loops(size);
                let row = side.size(plan, datatype, size, count, iterations, skip)?;
                out.push(row);
                obs.part(out, out.rows.last().expect("pushed"));
            }
        }
        Ok(())
    }

    impl Side<'_> {
        /// One row: the buffers filled, the loops run and timed as OSU
        /// times them, the received data checked.
        fn size(
            &mut self,
            plan: &OsuPlan,
            datatype: Datatype,
            size: u64,
            count: usize,
            iterations: u64,
            skip: u64,
        ) -> Result<OsuRow> {
            let bytes = count * datatype.size() as usize;
            let (sender, receives) = self.roles(plan.benchmark);
            let sent = match plan.benchmark {
                Benchmark::Allreduce => encode(datatype, (0..count as u64).map(|i| summand(i, self.rank))),
                _ => pattern(size, self.rank, bytes),
            };
            let expected = match (plan.benchmark, sender) {
                (Benchmark::Allreduce, _) => encode(datatype, (0..count as u64).map(|i| sum_over(i, self.n))),
                (_, Some(s)) => pattern(size, s, bytes),
                _ => Vec::new(),
            };
            self.send.write(&sent)?;
            // Poisoned: a message that never arrived is wrong everywhere.
            self.recv.write(&expected.iter().map(|b| !b).collect::<Vec<u8>>())?;
            let total = self.timed(plan, element(datatype), count, iterations, skip)?;
            let wrong = if receives { self.wrong_received(datatype, count, &expected)? } else { 0 };
            let wrong = self.mpi.sum_u64(wrong);
            let times = world::gather_f64(self.mpi, &[total]);
            Ok(row(plan, datatype, size, iterations, &times, self.n / 2, wrong))
        }

        /// Who sends what to this process, and whether it receives at all.
        fn roles(&self, benchmark: Benchmark) -> (Option<usize>, bool) {
            let (rank, pairs) = (self.rank, self.n / 2);
            match benchmark {
                Benchmark::Latency | Benchmark::Bibw => (Some(1 - rank), true),
                Benchmark::Bw => (Some(0), rank == 1),
                Benchmark::MbwMr => (Some(rank.saturating_sub(pairs)), rank >= pairs),
                Benchmark::Allreduce => (None, true),
            }
        }

        /// OSU's loop: `skip` untimed and `iterations` timed rounds of the
        /// benchmark's messages of `count` elements, each round timed by
        /// the host clock; the timed rounds' seconds summed.
        fn timed(&mut self, plan: &OsuPlan, e: Element, count: usize, iterations: u64, skip: u64) -> Result<f64> {
            let window = plan.window as usize;
            let pairs = self.n / 2;
            let (rank, mpi) = (self.rank, self.mpi);
            let (s, r) = (self.send.ptr() as *const u8, self.recv.ptr());
            mpi.barrier();
            let mut total = 0.0f64;
            for i in 0..iterations + skip {
                if plan.benchmark == Benchmark::MbwMr {
                    mpi.barrier();
                }
                let t0 = Instant::now();
                // SAFETY: `s` and `r` are this side's two buffers of `max`
                // bytes each, at least `count` elements, in the memory MPI
                // was found to take; nothing else touches them in the loop.
                unsafe {
                    match (plan.benchmark, rank) {
                        (Benchmark::Latency, 0) => {
                            mpi.send(1, s, count, e)?;
                            mpi.recv(1, r, count, e)?;
                        }
                        (Benchmark::Latency, _) => {
                            mpi.recv(0, r, count, e)?;
                            mpi.send(0, s, count, e)?;
                        }
                        (Benchmark::Bw, 0) => {
                            mpi.window(1, None, Some(s), count, e, window)?;
                            mpi.recv(1, r, 1, Element::Char)?;
                        }
                        (Benchmark::Bw, _) => {
                            mpi.window(0, Some(r), None, count, e, window)?;
                            mpi.send(0, s, 1, Element::Char)?;
                        }
                        (Benchmark::Bibw, _) => mpi.window(1 - rank, Some(r), Some(s), count, e, window)?,
                        (Benchmark::MbwMr, _) if rank < pairs => {
                            mpi.window(rank + pairs, None, Some(s), count, e, window)?;
                            mpi.recv(rank + pairs, r, 1, Element::Char)?;
                        }
                        (Benchmark::MbwMr, _) => {
                            mpi.window(rank - pairs, Some(r), None, count, e, window)?;
                            mpi.send(rank - pairs, s, 1, Element::Char)?;
                        }
                        (Benchmark::Allreduce, _) => mpi.all_reduce_sum(s, r, count, e)?,
                    }
                }
                let t = t0.elapsed().as_secs_f64();
                if i >= skip {
                    total += t;
                }
                if plan.benchmark == Benchmark::Allreduce {
                    mpi.barrier();
                }
            }
            Ok(total)
        }

        /// The elements of the receive buffer that differ from `expected`,
        /// after the test hook has flipped one of them where asked.
        fn wrong_received(&self, datatype: Datatype, count: usize, expected: &[u8]) -> Result<u64> {
            let unit = datatype.size() as usize;
            let mut got = self.recv.read(expected.len())?;
            if let Some(Fault::Element { rank: at, index }) = self.fault
                && at == self.rank
            {
                let k = (index as usize % count) * unit;
                got[k..k + unit].iter_mut().for_each(|b| *b = !*b);
            }
            Ok(wrong_elements(&got, expected, unit))
        }
    }

    /// OSU's figures from every process's summed time.
    fn row(
        plan: &OsuPlan,
        datatype: Datatype,
        size: u64,
        iterations: u64,
        times: &[f64],
        pairs: usize,
        wrong: u64,
    ) -> OsuRow {
        let iters = iterations as f64;
        let window = f64::from(plan.window);
        let mb = size as f64 / 1e6;
        let mut r =
            OsuRow { datatype, size, iterations, value: 0.0, messages_per_s: None, min_us: None, max_us: None, wrong };
        let rate = |t: f64| if t > 0.0 { mb * iters * window / t } else { 0.0 };
        match plan.benchmark {
            Benchmark::Latency => r.value = times[0] * 1e6 / (2.0 * iters),
            Benchmark::Bw => r.value = rate(times[0]),
            Benchmark::Bibw => r.value = 2.0 * rate(times[0]),
            Benchmark::MbwMr => {
                let avg = times[..pairs].iter().sum::<f64>() / pairs as f64;
                r.value = pairs as f64 * rate(avg);
                r.messages_per_s = Some(1e6 * r.value / size as f64);
            }
            Benchmark::Allreduce => {
                let each: Vec<f64> = times.iter().map(|t| t * 1e6 / iters).collect();
                r.value = each.iter().sum::<f64>() / each.len() as f64;
                r.min_us = each.iter().copied().reduce(f64::min);
                r.max_us = each.iter().copied().reduce(f64::max);
            }
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(benchmark: Benchmark) -> OsuPlan {
        let (min, max) = OsuPlan::default_sizes(benchmark);
        OsuPlan {
            benchmark,
            min,
            max,
            iterations: None,
            warmup: None,
            window: 64,
            datatypes: vec![Datatype::Char],
            buffers: (Place::Host, Place::Host),
            full: false,
            validation_column: false,
            fault: None,
        }
    }

    #[test]
    fn sizes_and_loops_are_osus() {
        let p = plan(Benchmark::Latency);
        let sizes = p.sizes();
        assert_eq!((sizes[0], *sizes.last().unwrap(), sizes.len()), (1, 1 << 22, 23));
        assert_eq!((p.loops(8192), p.loops(16384)), ((10_000, 100), (1_000, 10)));
        assert_eq!(plan(Benchmark::Bw).loops(1 << 20), (20, 2));
        assert_eq!(plan(Benchmark::MbwMr).loops(1 << 20), (100, 10));
        assert_eq!(*plan(Benchmark::Allreduce).sizes().last().unwrap(), 1 << 20);
        let odd = OsuPlan { min: 3, max: 20, iterations: Some(5), warmup: Some(0), ..plan(Benchmark::Bw) };
        assert_eq!((odd.sizes(), odd.loops(1 << 20)), (vec![3, 6, 12], (5, 0)));
    }

    #[test]
    fn the_process_count_is_checked() {
        assert!(processes(Benchmark::Bw, 2).is_ok());
        assert!(processes(Benchmark::Bw, 3).unwrap_err().message().contains("exactly two processes, not 3"));
        assert!(processes(Benchmark::MbwMr, 3).is_err());
        assert!(processes(Benchmark::MbwMr, 4).is_ok());
        assert!(processes(Benchmark::Allreduce, 3).is_ok());
        assert_eq!(processes(Benchmark::Allreduce, 1).unwrap_err().exit_code(), 2);
        // The fix fits the count: the launcher for one process, the count for more.
        assert!(processes(Benchmark::Latency, 1).unwrap_err().message().contains("start it under mpirun"));
        let three = processes(Benchmark::Latency, 3).unwrap_err().message();
        assert!(three.contains("launch it with -np 2") && !three.contains("start it under"), "{three}");
        assert!(processes(Benchmark::MbwMr, 3).unwrap_err().message().contains("-np 4"));
    }

    #[test]
    fn the_expected_sum_is_every_rank_added() {
        for n in [2, 3, 7, 8, 15] {
            for i in [0, 1, 6, 99] {
                assert_eq!(sum_over(i, n), (0..n).map(|r| summand(i, r)).sum::<i64>(), "{n} {i}");
            }
        }
        // 40 ranks of MPI_CHAR wrap as C does.
        assert_eq!(encode(Datatype::Char, [sum_over(0, 40)].into_iter()), vec![(sum_over(0, 40) as i8) as u8]);
    }

    #[test]
    fn a_wrong_element_is_counted_once_and_senders_differ() {
        let a = pattern(64, 0, 64);
        assert_ne!(a, pattern(64, 1, 64));
        assert_ne!(a, pattern(128, 0, 64));
        let mut b = a.clone();
        b[5] ^= 1;
        b[6] ^= 1;
        assert_eq!((wrong_elements(&b, &a, 1), wrong_elements(&b, &a, 4)), (2, 1));
    }
}
