//! The CUDA kernels of `kernels/*.cu`, compiled at run time with NVRTC once
//! per GPU architecture and loaded into each GPU's context.
//!
//! NVRTC builds machine code (a cubin) for the GPU's own architecture when
//! it knows it (`sm_90` on an H200), so that nothing is left to the
//! driver's compiler and the code run is the code `cuobjdump` shows of the
//! same build (docs/kernels-roofline.md). For a GPU newer than the NVRTC at
//! hand it builds PTX for the newest architecture that NVRTC knows, which
//! the driver compiles for the GPU when loading it; [`built`] says which of
//! the two each source's kernels are. What NVRTC builds is kept on disk
//! (`cache.rs`) and loaded from there by later runs.

mod cache;

use super::{Gpu, cuda_err};
use cache::Key;
use crate::error::{Error, Result};
use crate::statevec::layout::SLOW_PARTNER_BYTES;
use cudarc::driver::sys::CUdevice_attribute as Attr;
use cudarc::driver::{CudaFunction, CudaModule, LaunchConfig};
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
pub(crate) enum Target {
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
pub(crate) fn target(cc: (i32, i32), supported: &[i32], own_code: bool) -> Result<Target> {
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
pub(crate) fn nvrtc_facts() -> ((i32, i32), Vec<i32>) {
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

/// NVRTC's options for `target`, `extra` after qbench's own.
fn options(target: Target, extra: &[&str]) -> Vec<String> {
    let mut options = vec![target.option(), "--std=c++14".to_string(), format!("-DQB_VECTORS={VECTORS}")];
    options.extend(extra.iter().map(|o| o.to_string()));
    options
}

/// What NVRTC built: machine code, or PTX's text.
#[derive(Debug, Clone)]
enum Code {
    Cubin(Vec<u8>),
    Ptx(String),
}

impl Code {
    fn bytes(&self) -> &[u8] {
        match self {
            Code::Cubin(b) => b,
            Code::Ptx(t) => t.as_bytes(),
        }
    }

    /// The code of `target` from its bytes; None for PTX that is no text.
    fn of(target: Target, bytes: Vec<u8>) -> Option<Code> {
        match target {
            Target::Cubin(_) => Some(Code::Cubin(bytes)),
            Target::Ptx(_) => String::from_utf8(bytes).ok().map(Code::Ptx),
        }
    }

    fn ptx(self) -> Ptx {
        match self {
            Code::Cubin(b) => Ptx::from_binary(b),
            Code::Ptx(t) => Ptx::from_src(t),
        }
    }
}

/// Compiles `source` for `target` with `extra` options after qbench's own:
/// its cubin or PTX, and NVRTC's log.
fn compile(name: &str, source: &str, target: Target, extra: &[&str]) -> Result<(Code, String)> {
    let fail = |what: String| Error::Runtime(format!("NVRTC could not compile {name}: {what}"));
    let src = CString::new(source).map_err(|_| fail("the source holds a NUL byte".into()))?;
    let cname = CString::new(name).map_err(|_| fail("the name holds a NUL byte".into()))?;
    let prog = nvrtc::create_program(&src, Some(&cname)).map_err(|e| fail(format!("{e:?}")))?;
    let options = options(target, extra);
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
                Ok(Code::Cubin(bin))
            }
            Target::Ptx(_) => {
                let text = nvrtc::get_ptx(prog).map_err(|e| fail(format!("{e:?}")))?;
                Ok(Code::Ptx(CStr::from_ptr(text.as_ptr()).to_string_lossy().into_owned()))
            }
        });
        let _ = nvrtc::destroy_program(prog);
        Ok((code?, log))
    }
}

/// One source's code for one target, compiled on first use (for the tests
/// that compile without a GPU).
#[cfg(test)]
pub(crate) fn code(name: &str, source: &str, target: Target) -> Result<Ptx> {
    Ok(kept(name, source, target, true)?.0.ptx())
}

/// (source name, target) → its code, for this process.
type Kept = Vec<((String, Target), Code)>;
static CODE: Mutex<Kept> = Mutex::new(Vec::new());

/// One source's code for one target: this process's copy, else the disk
/// cache's (where `disk`), else NVRTC's, kept in both. The second value
/// is the disk entry's key where the code came from the disk.
fn kept(name: &str, source: &str, target: Target, disk: bool) -> Result<(Code, Option<Key>)> {
    let mut mine = CODE.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some((_, c)) = mine.iter().find(|(k, _)| k.0 == name && k.1 == target) {
        return Ok((c.clone(), None));
    }
    let entry = cache::here().zip(disk_key(name, source, target));
    let (code, from_disk) = cached_or_compiled(name, source, target, entry.as_ref(), disk)?;
    mine.push(((name.into(), target), code.clone()));
    Ok((code, entry.filter(|_| from_disk).map(|(_, k)| k)))
}

/// The code of the cache entry `entry` (a directory and a key) where it is
/// whole and `read`, else NVRTC's, then kept in the entry; and whether it
/// came from the entry. A cache that cannot be read or written costs a
/// compile, never the run.
fn cached_or_compiled(
    name: &str,
    source: &str,
    target: Target,
    entry: Option<&(std::path::PathBuf, Key)>,
    read: bool,
) -> Result<(Code, bool)> {
    let found = entry.filter(|_| read).and_then(|(dir, key)| Code::of(target, cache::load(dir, key)?));
    if let Some(code) = found {
        return Ok((code, true));
    }
    let code = compile(name, source, target, &[])?.0;
    if let Some((dir, key)) = entry {
        let _ = cache::store(dir, key, code.bytes());
    }
    Ok((code, false))
}

/// Forgets `name`'s code for `target` here and on disk (the driver refused it).
fn forget(name: &str, target: Target, key: &Key) {
    CODE.lock().unwrap_or_else(PoisonError::into_inner).retain(|(k, _)| !(k.0 == name && k.1 == target));
    if let Some(dir) = cache::here() {
        cache::forget(&dir, key);
    }
}

/// The disk cache's key of a source's code for a target: None where the
/// driver is not loaded (NVRTC alone, in tests) or cannot say its version.
fn disk_key(name: &str, source: &str, target: Target) -> Option<Key> {
    if !crate::libs::Library::Driver.loadable() {
        return None;
    }
    let driver = super::driver::version().ok()?;
    let (nvrtc, _) = nvrtc_facts();
    Some(Key::new(driver, nvrtc, &target.build(nvrtc).to_string(), &options(target, &[]), name, source))
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

/// The blocks of [`grid`]'s shape the GPU holds resident at once.
pub fn resident_blocks(gpu: &Gpu) -> Result<u64> {
    let what = || format!("reading GPU {}'s multiprocessors", gpu.ordinal);
    let attr = |a| gpu.ctx.attribute(a).map_err(cuda_err(what()));
    let sms = attr(Attr::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u64;
    let threads = attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR)? as u64;
    Ok(sms * (threads / BLOCK as u64))
}

/// [`streaming`] kept to `blocks` blocks (of the GPU's [`resident_blocks`]),
/// so that kernels queued on other streams of the GPU run beside it: a
/// grid of one block per tile holds every slot until its last block is
/// dispatched, and kernels on two streams would take turns.
pub fn streaming_within(gpu: &Gpu, vectors: u64, blocks: u64) -> LaunchConfig {
    let mut l = streaming(gpu, vectors);
    l.grid_dim.0 = (l.grid_dim.0 as u64).min(blocks.max(1)) as u32;
    l
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
pub(crate) fn load_ptx(gpu: &Gpu, file: &str, source: &str, names: &[String]) -> Result<HashMap<String, CudaFunction>> {
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
        let what = || format!("loading {file} ({})", t.build(version));
        let (code, from_disk) = kept(file, source, t, true)?;
        match (gpu.ctx.load_module(code.ptx()), from_disk) {
            (Ok(m), _) => Ok(m),
            // Kept code the driver refuses is compiled anew, once.
            (Err(_), Some(key)) => {
                forget(file, t, &key);
                gpu.ctx.load_module(kept(file, source, t, false)?.0.ptx()).map_err(cuda_err(what()))
            }
            (Err(e), None) => Err(cuda_err(what())(e)),
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::libs::Library;

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

    /// Compiles the timed kernels with NVRTC where NVRTC is present (no GPU
    /// needed), as each GPU gets them: machine code for a Volta, an Ampere
    /// and a Hopper where this NVRTC knows them, and PTX for a GPU newer
    /// than this NVRTC. CI sets QBENCH_REQUIRE_NVRTC=1 so that a missing
    /// NVRTC fails the test instead of skipping it.
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
        timed.push(future);
        for ((name, source), t) in TIMED.iter().flat_map(|s| timed.iter().map(move |t| (*s, *t))) {
            code(name, source, t).unwrap_or_else(|e| panic!("{name} for {t:?}: {e}"));
        }
    }

    /// A source compiled once is read back from the disk cache; an entry
    /// that is corrupt is compiled anew and rewritten, and a cache that
    /// cannot be written is only a compile: no GPU needed, NVRTC where present.
    #[test]
    fn kept_kernels_are_read_back_and_a_bad_entry_is_compiled_anew() {
        if !Library::Nvrtc.loadable() {
            assert!(std::env::var_os("QBENCH_REQUIRE_NVRTC").is_none(), "NVRTC is required but not loadable");
            return;
        }
        let (name, source) = TIMED[1];
        let dir = std::env::temp_dir().join(format!("qbench-kept-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let (nvrtc, _) = nvrtc_facts();
        let target = Target::Ptx(90);
        let key = Key::new(1, nvrtc, "compute_90 ptx", &options(target, &[]), name, source);
        let entry = (dir.clone(), key.clone());
        let (first, from_disk) = cached_or_compiled(name, source, target, Some(&entry), true).unwrap();
        assert!(!from_disk);
        let (again, from_disk) = cached_or_compiled(name, source, target, Some(&entry), true).unwrap();
        assert!(from_disk && again.bytes() == first.bytes());
        std::fs::write(key.path(&dir), b"garbage").unwrap();
        let (anew, from_disk) = cached_or_compiled(name, source, target, Some(&entry), true).unwrap();
        assert!(!from_disk && anew.bytes() == first.bytes());
        assert_eq!(cache::load(&dir, &key).as_deref(), Some(first.bytes()));
        // Not read where the driver refused it: compiled, and kept again.
        assert!(!cached_or_compiled(name, source, target, Some(&entry), false).unwrap().1);
        std::fs::remove_dir_all(&dir).unwrap();
        std::fs::write(&dir, "a file where the cache would be").unwrap();
        assert!(!cached_or_compiled(name, source, target, Some(&(dir.clone(), key)), true).unwrap().1);
        std::fs::remove_file(&dir).unwrap();
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
