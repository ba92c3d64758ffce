//! The collectives' data kernels (kernels/pattern.cu): the fill of every
//! rank's seeded input and the check of every output element, built for
//! the collectives of a run with each one's expected-value rule as a case
//! of the check's switch. The NCCL transport fills and checks with them.

use crate::dtype::DataType;
use crate::error::{Error, Result};
use crate::gpu::kernels::{grid, load_ptx};
use crate::gpu::{Gpu, cuda_err};
use crate::pattern::Pattern;
use crate::transport::{Collective, Op};
use cudarc::driver::{CudaFunction, PushKernelArg};
use std::collections::HashMap;

/// kernels/pattern.cu with the expected-value rule of each collective, as
/// the cases of its check's switch, in the order given (each rule on the
/// one line of the macro that holds them; a rule that returns nothing
/// leaves the switch, never into the next case).
pub fn pattern_source(collectives: &[&dyn Collective]) -> String {
    let cases: String = collectives
        .iter()
        .enumerate()
        .map(|(code, c)| format!("case {code}: {{ {} }} break; ", c.source_cu().replace('\n', " ")))
        .collect();
    format!("#define QB_SOURCES {cases}\n{}", include_str!("../../kernels/pattern.cu"))
}

/// The fill and check kernels of kernels/pattern.cu on one GPU, for the
/// collectives it was loaded with.
pub struct PatternKernels {
    functions: HashMap<String, CudaFunction>,
    /// The collectives' names, in the order of their check codes.
    collectives: Vec<&'static str>,
}

impl PatternKernels {
    pub fn load(gpu: &Gpu, collectives: &[&dyn Collective]) -> Result<PatternKernels> {
        let names: Vec<String> = DataType::ALL
            .iter()
            .flat_map(|t| [format!("qb_fill_{}", t.name()), format!("qb_check_{}", t.name())])
            .collect();
        let tag: Vec<&str> = collectives.iter().map(|c| c.name()).collect();
        let file = format!("kernels/pattern.cu ({})", tag.join(", "));
        Ok(PatternKernels { functions: load_ptx(gpu, &file, &pattern_source(collectives), &names)?, collectives: tag })
    }

    fn function(&self, kind: &str, t: DataType) -> &CudaFunction {
        &self.functions[&format!("qb_{kind}_{}", t.name())]
    }

    /// Writes `rank`'s input elements 0..n of `pattern` at `ptr`.
    pub fn fill(&self, gpu: &Gpu, ptr: u64, n: u64, pattern: &Pattern, rank: usize) -> Result<()> {
        if n == 0 {
            return Ok(());
        }
        let (kind, a, b) = pattern.draw.encode();
        let rank = rank as i32;
        let f = self.function("fill", pattern.dtype);
        let mut l = gpu.stream.launch_builder(f);
        l.arg(&ptr).arg(&n).arg(&pattern.seed).arg(&kind).arg(&a).arg(&b).arg(&rank);
        // SAFETY: the argument list matches qb_fill_* in kernels/pattern.cu,
        // and `ptr` addresses at least n elements of the pattern's type.
        unsafe { l.launch(grid(gpu, n)) }.map(|_| ()).map_err(cuda_err("launching the fill kernel"))
    }

    #[allow(clippy::too_many_arguments)]
    /// Adds to the u64 at `wrong` the number of `rank`'s output elements of
    /// `op` (n elements at `ptr`) that differ from their expected values.
    pub fn check(&self, gpu: &Gpu, ptr: u64, n: u64, op: &Op, rank: usize, nranks: usize, wrong: u64) -> Result<()> {
        if n == 0 {
            return Ok(());
        }
        let p = &op.pattern;
        let (kind, a, b) = p.draw.encode();
        let name = op.collective.name();
        let coll = self
            .collectives
            .iter()
            .position(|&c| c == name)
            .ok_or_else(|| Error::Runtime(format!("internal: the check kernels were not built for {name}")))?
            as i32;
        let redop = op.redop as i32;
        let (nranks, rank, root) = (nranks as i32, rank as i32, op.root as i32);
        let f = self.function("check", p.dtype);
        let mut l = gpu.stream.launch_builder(f);
        l.arg(&ptr).arg(&n).arg(&p.seed).arg(&kind).arg(&a).arg(&b);
        l.arg(&coll).arg(&redop).arg(&nranks).arg(&rank).arg(&root).arg(&op.counts.param).arg(&p.tolerance).arg(&wrong);
        // SAFETY: the argument list matches qb_check_* in kernels/pattern.cu;
        // `ptr` addresses n elements and `wrong` one u64 on this GPU.
        unsafe { l.launch(grid(gpu, n)) }.map(|_| ()).map_err(cuda_err("launching the check kernel"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::{Element, RedOp};
    use crate::gpu::copy;
    use crate::gpu::kernels::{Target, code, nvrtc_facts, target};
    use crate::libs::Library;
    use crate::transport::Source;
    use crate::with_element;
    use crate::workload::collective::{Kind, OpUse};

    /// Copies `n` elements of type T from the device.
    fn download<T: Element>(ptr: u64, n: u64) -> Vec<T> {
        let mut v = vec![T::from_i64(0); n as usize];
        // `ptr` addresses at least n elements of T; the GPU is idle.
        copy::from_device(bytemuck::cast_slice_mut::<T, u8>(&mut v), ptr).unwrap();
        v
    }

    /// Rank `rank`'s input from the fill kernel is the host's, element for
    /// element; the check kernel counts no wrong element in the output the
    /// host expects and exactly the ones flipped after that.
    fn agree<T: Element>(gpu: &Gpu, k: &PatternKernels, op: &Op, rank: usize, n: usize) {
        let keys = op.pattern.keys();
        let c = op.counts;
        let input = gpu.alloc(c.send.max(1) * 8).unwrap();
        k.fill(gpu, input.ptr(), c.send, &op.pattern, rank).unwrap();
        gpu.stream.synchronize().unwrap();
        let want: Vec<T> = (0..c.send).map(|i| op.pattern.element(&keys, rank, i)).collect();
        let got = download::<T>(input.ptr(), c.send);
        assert!(got.iter().zip(&want).all(|(a, b)| bytemuck::bytes_of(a) == bytemuck::bytes_of(b)));
        if !op.checks_rank(rank, n) {
            return;
        }
        let mut out: Vec<T> = (0..c.recv).map(|j| op.expected(&keys, rank, n, j).unwrap_or(T::from_i64(0))).collect();
        let (output, wrong) = (gpu.alloc(c.recv * 8).unwrap(), gpu.alloc(8).unwrap());
        let count = |out: &[T]| -> u64 {
            // `out` fits the output buffer; the GPU is idle.
            copy::to_device(output.ptr(), bytemuck::cast_slice::<T, u8>(out)).unwrap();
            gpu.memset(wrong.ptr(), 0, 8).unwrap();
            k.check(gpu, output.ptr(), c.recv, op, rank, n, wrong.ptr()).unwrap();
            gpu.stream.synchronize().unwrap();
            download::<u64>(wrong.ptr(), 1)[0]
        };
        assert_eq!(count(&out), 0, "{} {:?} {:?} rank {rank}", op.collective.name(), op.dtype, op.redop);
        let checked: Vec<usize> = (0..c.recv as usize)
            .filter(|&j| op.collective.source(&c, op.dtype, rank, op.root, n, j as u64) != Source::Unchecked)
            .take(3)
            .collect();
        for &j in &checked {
            bytemuck::bytes_of_mut(&mut out[j]).iter_mut().for_each(|b| *b = !*b);
        }
        assert_eq!(count(&out), checked.len() as u64, "{} {:?} {:?}", op.collective.name(), op.dtype, op.redop);
    }

    /// src/pattern.rs and kernels/pattern.cu, and every collective's two
    /// expected-value rules, agree for every type, op and rank count: on
    /// the GPU (`cargo test -- --ignored` on the GPU machine).
    #[test]
    #[ignore = "needs a GPU"]
    fn pattern_kernels_agree_with_the_host() {
        crate::libs::require(&[Library::Driver, Library::Nvrtc], None).unwrap();
        let gpu = Gpu::open(0).unwrap();
        let k = PatternKernels::load(&gpu, &all_collectives()).unwrap();
        for &kind in Kind::ALL {
            let spec = kind.spec();
            for dtype in DataType::ALL {
                let ops: Vec<Option<RedOp>> = match spec.op_use() {
                    OpUse::Reduces => RedOp::ALL.iter().copied().map(Some).collect(),
                    OpUse::Labels | OpUse::Ignores => vec![None],
                };
                for op in ops {
                    // 17 ranks: sums past fp8's exact integers (Draw::Few).
                    for n in [3usize, 4, 17] {
                        let redop = op.unwrap_or(RedOp::Sum);
                        let o = Op {
                            collective: spec,
                            dtype,
                            redop,
                            root: 1,
                            counts: spec.counts(4099, dtype, n as u64),
                            in_place: false,
                            agg: 1,
                            pattern: Pattern::new(0x5eed, dtype, op, n),
                        };
                        for rank in 0..n {
                            with_element!(dtype, T => agree::<T>(&gpu, &k, &o, rank, n));
                        }
                    }
                }
            }
        }
    }

    fn all_collectives() -> Vec<&'static dyn Collective> {
        Kind::ALL.iter().map(|k| k.spec() as &dyn Collective).collect()
    }

    /// The pattern kernels compile with NVRTC where it is present (no GPU
    /// needed), as PTX for a Volta, an Ampere and a Hopper and for a GPU
    /// newer than this NVRTC (CI requires NVRTC: QBENCH_REQUIRE_NVRTC=1).
    #[test]
    fn pattern_kernels_compile_with_nvrtc() {
        if !Library::Nvrtc.loadable() {
            assert!(std::env::var_os("QBENCH_REQUIRE_NVRTC").is_none(), "NVRTC is required but not loadable");
            return;
        }
        let (_, archs) = nvrtc_facts();
        let mut targets: Vec<Target> =
            [(7, 0), (8, 0), (9, 0)].iter().filter_map(|&cc| target(cc, &archs, false).ok()).collect();
        targets.push(target((99, 0), &archs, true).unwrap());
        let source = pattern_source(&all_collectives());
        for t in targets {
            code("kernels/pattern.cu", &source, t).unwrap_or_else(|e| panic!("pattern.cu for {t:?}: {e}"));
        }
    }
}
