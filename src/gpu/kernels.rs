//! The CUDA kernels of `kernels/*.cu`, compiled at run time with NVRTC once
//! per GPU architecture and loaded into each GPU's context.
//!
//! NVRTC builds machine code (a cubin) for the GPU's own architecture when
//! it knows it (`sm_90` on an H200), so that nothing is left to the
//! driver's compiler and the code run is the code `cuobjdump` shows of the
//! same build (docs/kernels-roofline.md). For a GPU newer than the NVRTC at
//! hand it builds PTX for the newest architecture that NVRTC knows, which
//! the driver compiles for the GPU when loading it; [`built`] says which of
//! the two each source's kernels are.

use super::{Gpu, cuda_err};
use crate::dtype::DataType;
use crate::error::{Error, Result};
use crate::pattern::Pattern;
use crate::statevec::layout::SLOW_PARTNER_BYTES;
use crate::transport::{Collective, Op};
use cudarc::driver::{CudaFunction, CudaModule, LaunchConfig, PushKernelArg};
use cudarc::nvrtc::{Ptx, result as nvrtc, sys as nvrtc_sys};
use serde::Serialize;
use std::collections::HashMap;
use std::ffi::{CStr, CString, c_char, c_int};
use std::sync::{Arc, Mutex, PoisonError};

/// Threads per block of every kernel.
const BLOCK: u32 = 128;

/// 16-byte vectors each thread of a streaming kernel takes: `QB_VECTORS` in
/// kernels/*.cu, given to NVRTC.
/// One vector a thread in blocks of 128 (PyTorch's elementwise shape)
/// streamed at 0.99 of the copy engine's device copy on an H200; four, in
/// blocks of 256, at 0.95 (results/ref/copy_shapes.cu).
pub const VECTORS: u64 = 1;

/// The most blocks a launch's x dimension may have.
const MAX_BLOCKS: u64 = (1 << 31) - 1;

/// What NVRTC built one source's kernels as, for the run's records.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KernelBuild {
    /// `sm_90`: machine code for that architecture; `compute_90`: PTX.
    pub arch: String,
    /// `cubin` (loaded as it is) or `ptx` (compiled by the driver when loaded).
    pub code: &'static str,
    /// The NVRTC that compiled it, "12.9".
    pub nvrtc: String,
}

impl std::fmt::Display for KernelBuild {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {} (NVRTC {})", self.arch, self.code, self.nvrtc)
    }
}

/// What to build for a GPU: machine code or PTX, for an architecture
/// (compute capability 9.0 is 90).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    Cubin(i32),
    Ptx(i32),
}

impl Target {
    fn option(self) -> String {
        match self {
            Target::Cubin(a) => format!("--gpu-architecture=sm_{a}"),
            Target::Ptx(a) => format!("--gpu-architecture=compute_{a}"),
        }
    }

    fn build(self, nvrtc: (i32, i32)) -> KernelBuild {
        let (arch, code) = match self {
            Target::Cubin(a) => (format!("sm_{a}"), "cubin"),
            Target::Ptx(a) => (format!("compute_{a}"), "ptx"),
        };
        KernelBuild { arch, code, nvrtc: format!("{}.{}", nvrtc.0, nvrtc.1) }
    }
}

/// The target for a GPU of compute capability `cc`, given the architectures
/// this NVRTC compiles for (`supported`, empty if it could not say): its
/// own machine code if NVRTC knows it and `own_code`, else PTX for it, or
/// for the newest architecture below it, which the driver compiles for a
/// newer GPU.
fn target(cc: (i32, i32), supported: &[i32], own_code: bool) -> Result<Target> {
    let arch = cc.0 * 10 + cc.1;
    if supported.is_empty() {
        return Ok(Target::Ptx(arch));
    }
    if supported.contains(&arch) {
        return Ok(if own_code { Target::Cubin(arch) } else { Target::Ptx(arch) });
    }
    match supported.iter().copied().filter(|&a| a < arch).max() {
        Some(below) => Ok(Target::Ptx(below)),
        None => Err(Error::Runtime(format!(
            "this NVRTC cannot compile for compute capability {}.{} (its oldest architecture is sm_{}): use an older CUDA toolkit's NVRTC",
            cc.0,
            cc.1,
            supported.iter().min().copied().unwrap_or(0)
        ))),
    }
}

/// This NVRTC's version and the architectures it compiles for.
fn nvrtc_facts() -> ((i32, i32), Vec<i32>) {
    let (mut major, mut minor): (c_int, c_int) = (0, 0);
    // SAFETY: both out-pointers are valid for one write each.
    let version = match unsafe { nvrtc_sys::nvrtcVersion(&mut major, &mut minor) }.result() {
        Ok(()) => (major, minor),
        Err(_) => (0, 0),
    };
    let mut count: c_int = 0;
    // SAFETY: the out-pointer is valid; the list is sized from the count.
    let archs = unsafe {
        if nvrtc_sys::nvrtcGetNumSupportedArchs(&mut count).result().is_err() || count <= 0 {
            Vec::new()
        } else {
            let mut v = vec![0 as c_int; count as usize];
            match nvrtc_sys::nvrtcGetSupportedArchs(v.as_mut_ptr()).result() {
                Ok(()) => v,
                Err(_) => Vec::new(),
            }
        }
    };
    (version, archs)
}

/// Compiles `source` for `target` with `extra` options after qbench's own:
/// its cubin or PTX, and NVRTC's log.
fn compile(name: &str, source: &str, target: Target, extra: &[&str]) -> Result<(Ptx, String)> {
    let fail = |what: String| Error::Runtime(format!("NVRTC could not compile {name}: {what}"));
    let src = CString::new(source).map_err(|_| fail("the source holds a NUL byte".into()))?;
    let cname = CString::new(name).map_err(|_| fail("the name holds a NUL byte".into()))?;
    let prog = nvrtc::create_program(&src, Some(&cname)).map_err(|e| fail(format!("{e:?}")))?;
    let mut options = vec![target.option(), "--std=c++14".to_string(), format!("-DQB_VECTORS={VECTORS}")];
    options.extend(extra.iter().map(|o| o.to_string()));
    // SAFETY: `prog` was just created and is destroyed once, below; `src`
    // and `cname` outlive it. The output buffers are sized by NVRTC's own
    // size calls before each copy.
    unsafe {
        let compiled = nvrtc::compile_program(prog, &options);
        let log = nvrtc::get_program_log(prog)
            .map(|l| CStr::from_ptr(l.as_ptr()).to_string_lossy().trim().to_string())
            .unwrap_or_default();
        let code = compiled.map_err(|_| fail(log.clone())).and_then(|()| match target {
            Target::Cubin(_) => {
                let mut size = 0usize;
                nvrtc_sys::nvrtcGetCUBINSize(prog, &mut size).result().map_err(|e| fail(format!("{e:?}")))?;
                let mut bin = vec![0u8; size];
                nvrtc_sys::nvrtcGetCUBIN(prog, bin.as_mut_ptr() as *mut c_char)
                    .result()
                    .map_err(|e| fail(format!("{e:?}")))?;
                Ok(Ptx::from_binary(bin))
            }
            Target::Ptx(_) => {
                let text = nvrtc::get_ptx(prog).map_err(|e| fail(format!("{e:?}")))?;
                Ok(Ptx::from_src(CStr::from_ptr(text.as_ptr()).to_string_lossy().into_owned()))
            }
        });
        let _ = nvrtc::destroy_program(prog);
        Ok((code?, log))
    }
}

/// One source's code for one target, compiled on first use.
fn code(name: &str, source: &str, target: Target) -> Result<Ptx> {
    /// (source name, target) → its code.
    type Cache = Vec<((String, Target), Ptx)>;
    static CACHE: Mutex<Cache> = Mutex::new(Vec::new());
    let mut cache = CACHE.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some((_, p)) = cache.iter().find(|(k, _)| k.0 == name && k.1 == target) {
        return Ok(p.clone());
    }
    let p = compile(name, source, target, &[])?.0;
    cache.push(((name.into(), target), p.clone()));
    Ok(p)
}

/// (source name, compute capability) → what its loaded kernels were built as.
type Builds = Vec<((String, (i32, i32)), KernelBuild)>;
static BUILT: Mutex<Builds> = Mutex::new(Vec::new());

/// What the kernels of `file` (`kernels/statevec.cu`) were built as for
/// GPUs of compute capability `cc`, once [`load`] has loaded them: for the
/// records, e.g. "sm_90 cubin (NVRTC 12.9)".
pub fn built(file: &str, cc: (i32, i32)) -> Option<KernelBuild> {
    let b = BUILT.lock().unwrap_or_else(PoisonError::into_inner);
    b.iter().find(|(k, _)| k.0 == file && k.1 == cc).map(|(_, v)| v.clone())
}

/// A launch of `threads` threads, BLOCK to a block, not a grid sized to the
/// multiprocessors: every kernel loops over `blockIdx.x, blockIdx.x +
/// gridDim.x, …`, so any grid is correct. The streaming kernels (gate,
/// combine, copies) are launched by [`streaming`]; the others take one
/// element a thread. The hardware then hands small pieces to whichever
/// multiprocessor frees a slot, and no long-running block is left alone at
/// the end: with 16 blocks a multiprocessor, each looping over a 1/2112
/// share of the chunk, the gate ran at 0.91 of the copy engine on an H200.
/// The GPU is not consulted.
pub fn grid(_gpu: &Gpu, threads: u64) -> LaunchConfig {
    let blocks = threads.div_ceil(BLOCK as u64).clamp(1, MAX_BLOCKS) as u32;
    LaunchConfig { grid_dim: (blocks, 1, 1), block_dim: (BLOCK, 1, 1), shared_mem_bytes: 0 }
}

/// The launch of a streaming kernel over `vectors` 16-byte vectors: a
/// thread for each [`VECTORS`], which gives every block one tile of the
/// kernel's.
pub fn streaming(gpu: &Gpu, vectors: u64) -> LaunchConfig {
    grid(gpu, vectors.div_ceil(VECTORS))
}

/// The threads of sv_h_4k's block: one for each 16-byte vector of a pair
/// group whose partners are 4 KiB apart (kernels/statevec.cu, QB_GROUP).
const PAIR_GROUP_VECTORS: u64 = 2 * SLOW_PARTNER_BYTES / 16;

/// The launch of sv_h_4k over `vectors` 16-byte vectors: exactly one block
/// of [`PAIR_GROUP_VECTORS`] threads for each pair group, as the kernel
/// requires. None where `vectors` is not a whole number of groups or they
/// outnumber a grid.
pub fn pair_groups(vectors: u64) -> Option<LaunchConfig> {
    let groups = vectors / PAIR_GROUP_VECTORS;
    if groups == 0 || !vectors.is_multiple_of(PAIR_GROUP_VECTORS) || groups > MAX_BLOCKS {
        return None;
    }
    Some(LaunchConfig {
        grid_dim: (groups as u32, 1, 1),
        block_dim: (PAIR_GROUP_VECTORS as u32, 1, 1),
        shared_mem_bytes: 0,
    })
}

/// Loads the named kernels of one source file into a GPU's context: its
/// cubin where NVRTC knows the GPU, PTX otherwise, and PTX for the same
/// architecture if the driver refuses the cubin.
pub fn load(gpu: &Gpu, file: &str, source: &str, names: &[String]) -> Result<HashMap<String, CudaFunction>> {
    load_built(gpu, file, source, names, true)
}

/// As [`load`], as PTX that the driver compiles (and keeps in its cache
/// from one run to the next): for kernels that are not timed and whose
/// machine code takes long to build, as kernels/pattern.cu's (NVRTC 12.9
/// builds its sm_90 cubin in 20 s and its PTX in 6 s; the driver's build
/// of the PTX is cached after a machine's first run).
fn load_ptx(gpu: &Gpu, file: &str, source: &str, names: &[String]) -> Result<HashMap<String, CudaFunction>> {
    load_built(gpu, file, source, names, false)
}

fn load_built(
    gpu: &Gpu,
    file: &str,
    source: &str,
    names: &[String],
    own_code: bool,
) -> Result<HashMap<String, CudaFunction>> {
    let (version, archs) = nvrtc_facts();
    let first = target(gpu.compute_capability, &archs, own_code)?;
    let load_as = |t: Target| -> Result<Arc<CudaModule>> {
        gpu.ctx.load_module(code(file, source, t)?).map_err(cuda_err(format!("loading {file} ({})", t.build(version))))
    };
    let (t, module) = match (first, load_as(first)) {
        (_, Ok(m)) => (first, m),
        (Target::Cubin(a), Err(cubin)) => match load_as(Target::Ptx(a)) {
            Ok(m) => (Target::Ptx(a), m),
            Err(ptx) => return Err(Error::Runtime(format!("{cubin}; and as PTX: {ptx}"))),
        },
        (_, Err(e)) => return Err(e),
    };
    let functions = names
        .iter()
        .map(|n| Ok((n.clone(), module.load_function(n).map_err(cuda_err(format!("finding kernel {n}")))?)))
        .collect::<Result<HashMap<_, _>>>()?;
    let mut b = BUILT.lock().unwrap_or_else(PoisonError::into_inner);
    b.retain(|(k, _)| !(k.0 == file && k.1 == gpu.compute_capability));
    b.push(((file.into(), gpu.compute_capability), t.build(version)));
    Ok(functions)
}

/// kernels/pattern.cu with the expected-value rule of each collective, as
/// the cases of its check's switch, in the order given.
pub fn pattern_source(collectives: &[&dyn Collective]) -> String {
    let cases: String =
        collectives.iter().enumerate().map(|(code, c)| format!("case {code}: {{ {} }} ", c.source_cu())).collect();
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
    use crate::libs::Library;
    use crate::transport::Source;
    use crate::with_element;
    use crate::workload::collective::{Kind, OpUse};
    use cudarc::driver::result;

    /// Copies `n` elements of type T from the device.
    fn download<T: Element>(ptr: u64, n: u64) -> Vec<T> {
        let mut v = vec![T::from_i64(0); n as usize];
        // SAFETY: `ptr` addresses at least n elements of T; the GPU is idle.
        unsafe { result::memcpy_dtoh_sync(bytemuck::cast_slice_mut::<T, u8>(&mut v), ptr) }.unwrap();
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
            // SAFETY: `out` fits the output buffer; the GPU is idle.
            unsafe { result::memcpy_htod_sync(output.ptr(), bytemuck::cast_slice::<T, u8>(out)) }.unwrap();
            gpu.memset(wrong.ptr(), 0, 8).unwrap();
            k.check(gpu, output.ptr(), c.recv, op, rank, n, wrong.ptr()).unwrap();
            gpu.stream.synchronize().unwrap();
            download::<u64>(wrong.ptr(), 1)[0]
        };
        assert_eq!(count(&out), 0, "{} {:?} {:?} rank {rank}", op.collective.name(), op.dtype, op.redop);
        let checked: Vec<usize> = (0..c.recv as usize)
            .filter(|&j| op.collective.source(&c, rank, op.root, n, j as u64) != Source::Unchecked)
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
        crate::libs::require(&[Library::Driver, Library::Nvrtc]).unwrap();
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
                    for n in [3usize, 4] {
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

    /// The timed kernels, loaded as machine code.
    const TIMED: [(&str, &str); 2] = [
        ("kernels/statevec.cu", include_str!("../../kernels/statevec.cu")),
        ("kernels/copy.cu", include_str!("../../kernels/copy.cu")),
    ];

    #[test]
    fn targets_are_the_gpus_own_code_or_ptx_below_it() {
        let archs = [75, 80, 86, 89, 90, 100, 120];
        assert_eq!(target((9, 0), &archs, true).unwrap(), Target::Cubin(90));
        assert_eq!(target((8, 6), &archs, true).unwrap(), Target::Cubin(86));
        assert_eq!(target((9, 0), &archs, false).unwrap(), Target::Ptx(90));
        // Newer than this NVRTC: PTX for the newest it knows, or the newest below.
        for own_code in [true, false] {
            assert_eq!(target((13, 0), &archs, own_code).unwrap(), Target::Ptx(120));
            assert_eq!(target((10, 3), &archs, own_code).unwrap(), Target::Ptx(100));
            // Older than it: no build at all.
            assert!(target((7, 0), &archs, own_code).is_err());
            // An NVRTC that cannot list its architectures: PTX, as before.
            assert_eq!(target((9, 0), &[], own_code).unwrap(), Target::Ptx(90));
        }
        assert_eq!(Target::Cubin(90).build((12, 9)).to_string(), "sm_90 cubin (NVRTC 12.9)");
        assert_eq!(Target::Ptx(120).build((13, 0)).to_string(), "compute_120 ptx (NVRTC 13.0)");
    }

    /// Compiles every kernel source with NVRTC where NVRTC is present (no GPU
    /// needed), as each GPU gets it: the timed kernels as machine code for a
    /// Volta, an Ampere and a Hopper where this NVRTC knows them, the
    /// pattern kernels as PTX, and both as PTX for a GPU newer than this
    /// NVRTC. CI sets QBENCH_REQUIRE_NVRTC=1 so that a missing NVRTC fails
    /// the test instead of skipping it.
    #[test]
    fn kernels_compile_with_nvrtc() {
        if !Library::Nvrtc.loadable() {
            assert!(std::env::var_os("QBENCH_REQUIRE_NVRTC").is_none(), "NVRTC is required but not loadable");
            eprintln!("NVRTC not loadable: kernel compilation not tested");
            return;
        }
        let (version, archs) = nvrtc_facts();
        assert!(archs.contains(&90), "NVRTC {version:?} does not compile for sm_90: {archs:?}");
        let future = target((99, 0), &archs, true).unwrap();
        assert_eq!(future, Target::Ptx(*archs.iter().max().unwrap()));
        let ccs = [(7, 0), (8, 0), (9, 0)];
        let mut timed: Vec<Target> = ccs.iter().filter_map(|&cc| target(cc, &archs, true).ok()).collect();
        let mut pattern: Vec<Target> = ccs.iter().filter_map(|&cc| target(cc, &archs, false).ok()).collect();
        timed.push(future);
        pattern.push(future);
        for ((name, source), t) in TIMED.iter().flat_map(|s| timed.iter().map(move |t| (*s, *t))) {
            code(name, source, t).unwrap_or_else(|e| panic!("{name} for {t:?}: {e}"));
        }
        let pattern_cu = pattern_source(&all_collectives());
        for t in pattern {
            code("kernels/pattern.cu", &pattern_cu, t).unwrap_or_else(|e| panic!("pattern.cu for {t:?}: {e}"));
        }
    }

    /// sv_h_4k's launch: one block of 512 threads for each pair group, none
    /// for a register that is not whole groups.
    #[test]
    fn pair_groups_give_each_group_a_block() {
        let c = pair_groups(1 << 30).unwrap();
        assert_eq!((c.grid_dim, c.block_dim, c.shared_mem_bytes), ((1 << 21, 1, 1), (512, 1, 1), 0));
        assert_eq!(pair_groups(512).unwrap().grid_dim.0, 1);
        assert!(pair_groups(256).is_none());
        assert!(pair_groups(512 * 3 + 16).is_none());
    }

    /// The block pair_groups launches is the one sv_h_4k is written for.
    #[test]
    fn pair_groups_block_is_the_kernels_group() {
        let define = format!("#define QB_GROUP {PAIR_GROUP_VECTORS}u");
        assert!(TIMED[0].1.lines().any(|l| l == define), "kernels/statevec.cu lacks `{define}`");
    }

    fn all_collectives() -> Vec<&'static dyn Collective> {
        Kind::ALL.iter().map(|k| k.spec() as &dyn Collective).collect()
    }

    /// ptxas's report for the sm_90 cubin of the timed kernels: none keeps
    /// anything in local memory (no stack frame, no spills), which would add
    /// memory traffic to the streaming kernels.
    #[test]
    fn kernels_keep_everything_in_registers_on_sm_90() {
        if !Library::Nvrtc.loadable() {
            assert!(std::env::var_os("QBENCH_REQUIRE_NVRTC").is_none(), "NVRTC is required but not loadable");
            return;
        }
        for (name, source) in TIMED {
            let log = compile(name, source, Target::Cubin(90), &["--ptxas-options=-v"]).unwrap().1;
            let reports: Vec<&str> = log.lines().filter(|l| l.contains("bytes stack frame")).collect();
            assert!(!reports.is_empty(), "no ptxas report for {name}:\n{log}");
            for r in reports {
                assert!(
                    r.contains(" 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads"),
                    "{name} uses local memory:\n{log}"
                );
            }
        }
    }
}
