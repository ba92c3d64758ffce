//! Finds the GPU libraries at run time so that the binary starts anywhere.
//!
//! cudarc loads the CUDA driver, NCCL and NVRTC by a fixed list of names
//! (`libnccl.so`, `libnccl.so.12`, … never `libnccl.so.2`, the only name pip's
//! NCCL wheels ship) and panics when none loads. Before any of them is
//! touched, [`require`] checks each one; a library that is installed under a
//! name cudarc does not try is given that name in a private directory of
//! symbolic links, which is put on `LD_LIBRARY_PATH` before the process
//! re-executes itself (the loader reads that variable only at start).
//! Anything not found at all becomes a sentence saying where qbench looked
//! and how to fix it (exit 3).

use crate::error::{Error, Result};
use std::collections::BTreeSet;
use std::ffi::OsString;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Set in the environment of the re-executed process: the links directory.
const REEXEC_ENV: &str = "QBENCH_LIBS_DIR";

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Library {
    Driver,
    Nccl,
    Nvrtc,
}

impl Library {
    /// The file name cudarc tries first; the link is given this name.
    fn link_name(self) -> &'static str {
        match self {
            Library::Driver => "libcuda.so",
            Library::Nccl => "libnccl.so",
            Library::Nvrtc => "libnvrtc.so",
        }
    }

    /// Files whose name starts with this are candidates (`libnccl.so.2`).
    fn file_prefix(self) -> &'static str {
        self.link_name()
    }

    /// The variable naming a file or directory to use in preference.
    pub fn override_env(self) -> Option<&'static str> {
        match self {
            Library::Driver => None,
            Library::Nccl => Some("QBENCH_NCCL_LIB"),
            Library::Nvrtc => Some("QBENCH_NVRTC_LIB"),
        }
    }

    pub fn describe(self) -> &'static str {
        match self {
            Library::Driver => "the CUDA driver library (libcuda.so.1)",
            Library::Nccl => "NCCL (libnccl.so)",
            Library::Nvrtc => "NVRTC, CUDA's run-time compiler (libnvrtc.so)",
        }
    }

    fn remedy(self) -> &'static str {
        match self {
            Library::Driver => "install the NVIDIA driver on a machine with an NVIDIA GPU",
            Library::Nccl => {
                "install NCCL (apt install libnccl2, or pip install nvidia-nccl-cu12) or point QBENCH_NCCL_LIB at libnccl.so.2"
            }
            Library::Nvrtc => {
                "install the CUDA toolkit's NVRTC (apt install cuda-nvrtc-12-x, or pip install nvidia-cuda-nvrtc-cu12) or point QBENCH_NVRTC_LIB at libnvrtc.so.*"
            }
        }
    }

    /// Whether cudarc can load the library by one of its names right now.
    pub fn loadable(self) -> bool {
        // SAFETY: each call only dlopens and dlcloses a candidate library;
        // a library's initialisers are the only code that runs.
        unsafe {
            match self {
                Library::Driver => cudarc::driver::sys::is_culib_present(),
                Library::Nccl => cudarc::nccl::sys::is_culib_present(),
                Library::Nvrtc => cudarc::nvrtc::sys::is_culib_present(),
            }
        }
    }
}

/// Where `lib` comes from: None when cudarc loads it by name already, the
/// file to link under cudarc's name, or why it cannot be had (the driver,
/// which only an NVIDIA driver installation provides, is never linked).
/// `without_gpus` is what the command runs instead, said after the remedy.
fn source(lib: Library, without_gpus: Option<&str>) -> Result<Option<PathBuf>> {
    let forced = lib.override_env().and_then(std::env::var_os);
    if forced.is_none() && lib.loadable() {
        return Ok(None);
    }
    let instead = without_gpus.map_or(String::new(), |w| format!(" (without one, {w})"));
    if lib == Library::Driver {
        return Err(Error::Missing(format!(
            "{} was not found on this machine: {}{instead}",
            lib.describe(),
            lib.remedy()
        )));
    }
    let searched = search_dirs(lib);
    find_in(lib, &searched).map(Some).ok_or_else(|| {
        let looked: Vec<String> = searched.iter().map(|d| d.display().to_string()).collect();
        Error::Missing(format!(
            "{} was not found (looked for {}* on the loader path and in {}): {}{instead}",
            lib.describe(),
            lib.file_prefix(),
            if looked.is_empty() { "no other directory".to_string() } else { looked.join(", ") },
            lib.remedy()
        ))
    })
}

/// Why one of `libs` cannot be loaded here, if one cannot: for plans that
/// run what they can of a request without asking for what would fail.
pub fn missing(libs: &[Library]) -> Option<String> {
    libs.iter().find_map(|&lib| source(lib, None).err().map(|e| e.message()))
}

/// Makes every library in `libs` loadable, re-executing the process once if
/// that needs a links directory. Returns only when all are loadable; a
/// missing one is exit 3 naming `without_gpus`, what the command can run on
/// a machine without GPUs.
pub fn require(libs: &[Library], without_gpus: Option<&str>) -> Result<()> {
    let mut links: BTreeSet<(Library, PathBuf)> = BTreeSet::new();
    let reexecuted = std::env::var_os(REEXEC_ENV).is_some();
    for &lib in libs {
        if let Some(path) = source(lib, without_gpus)? {
            links.insert((lib, path));
        }
    }
    if links.is_empty() {
        return Ok(());
    }
    if reexecuted {
        // The links exist and the variable is set, yet a library may still
        // not load: report the loader's own reason.
        for (lib, path) in &links {
            if lib.loadable() {
                continue;
            }
            // SAFETY: dlopen of a library file to read the loader's error message.
            let why = match unsafe { libloading::Library::new(path) } {
                Ok(_) => "it loads by path but not by name".to_string(),
                Err(e) => e.to_string(),
            };
            return Err(Error::Missing(format!("{} at {} cannot be loaded: {why}", lib.describe(), path.display())));
        }
        return Ok(());
    }
    let dir = links_dir(&links)?;
    reexec(&dir, &links)
}

/// Directories that may hold `lib` under a name cudarc does not try.
fn search_dirs(lib: Library) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    let mut push = |p: PathBuf| {
        if p.is_dir() && !dirs.contains(&p) {
            dirs.push(p);
        }
    };
    if let Some(v) = lib.override_env().and_then(std::env::var_os) {
        let p = PathBuf::from(v);
        push(if p.is_file() { p.parent().map(Path::to_path_buf).unwrap_or_default() } else { p });
    }
    if let Some(paths) = std::env::var_os("LD_LIBRARY_PATH") {
        std::env::split_paths(&paths).for_each(&mut push);
    }
    for var in ["NCCL_HOME", "CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"] {
        if let Some(root) = std::env::var_os(var) {
            push(PathBuf::from(&root).join("lib64"));
            push(PathBuf::from(&root).join("lib"));
        }
    }
    for d in [
        "/usr/lib/x86_64-linux-gnu",
        "/usr/lib/aarch64-linux-gnu",
        "/usr/lib64",
        "/usr/lib",
        "/usr/local/lib",
        "/usr/local/cuda/lib64",
        "/usr/local/cuda/targets/x86_64-linux/lib",
        "/usr/local/cuda/targets/sbsa-linux/lib",
        "/opt/nccl/lib",
    ] {
        push(PathBuf::from(d));
    }
    let sub = match lib {
        Library::Nccl => &["nvidia/nccl/lib", "nvidia/cu13/lib", "nvidia/cu12/lib"][..],
        Library::Nvrtc => &["nvidia/cuda_nvrtc/lib", "nvidia/cu13/lib", "nvidia/cu12/lib"][..],
        Library::Driver => &[][..],
    };
    for site in python_site_dirs() {
        for s in sub {
            push(site.join(s));
        }
    }
    dirs
}

/// Python package directories, where pip puts NVIDIA's library wheels.
fn python_site_dirs() -> Vec<PathBuf> {
    let mut roots: Vec<PathBuf> = Vec::new();
    for var in ["VIRTUAL_ENV", "CONDA_PREFIX"] {
        if let Some(v) = std::env::var_os(var) {
            roots.push(PathBuf::from(v).join("lib"));
        }
    }
    if let Some(home) = std::env::var_os("HOME") {
        roots.push(PathBuf::from(home).join(".local/lib"));
    }
    roots.extend(["/usr/lib", "/usr/local/lib", "/usr/lib64"].map(PathBuf::from));
    let mut sites = Vec::new();
    for root in roots {
        let Ok(entries) = std::fs::read_dir(&root) else { continue };
        for e in entries.flatten() {
            if e.file_name().to_string_lossy().starts_with("python3") {
                for kind in ["site-packages", "dist-packages"] {
                    sites.push(e.path().join(kind));
                }
            }
        }
    }
    // The interpreter on PATH knows its own (a venv elsewhere, say).
    if let Ok(out) = std::process::Command::new("python3")
        .args(["-c", "import site,sys; print('\\n'.join(site.getsitepackages() + [site.getusersitepackages()]))"])
        .stderr(std::process::Stdio::null())
        .output()
    {
        sites.extend(String::from_utf8_lossy(&out.stdout).lines().map(PathBuf::from));
    }
    sites
}

/// The first loadable file for `lib` in `dirs`: the override file itself, or
/// the shortest-named `libX.so*` in the first directory that has one.
fn find_in(lib: Library, dirs: &[PathBuf]) -> Option<PathBuf> {
    if let Some(v) = lib.override_env().and_then(std::env::var_os) {
        let p = PathBuf::from(v);
        if p.is_file() {
            return loads(&p).then_some(p);
        }
    }
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(dir) else { continue };
        let mut names: Vec<OsString> = entries
            .flatten()
            .map(|e| e.file_name())
            .filter(|n| n.to_string_lossy().starts_with(lib.file_prefix()))
            .collect();
        names.sort_by_key(|n| (n.len(), n.clone()));
        if let Some(p) = names.into_iter().map(|n| dir.join(n)).find(|p| loads(p)) {
            return Some(p);
        }
    }
    None
}

fn loads(path: &Path) -> bool {
    // SAFETY: dlopen + dlclose of a candidate file; only its initialisers run.
    unsafe { libloading::Library::new(path).is_ok() }
}

/// A directory holding one link per library, named as cudarc looks for it.
/// Its name is derived from the targets, so concurrent ranks agree on it; it
/// is made under a unique name and renamed into place, so a rank never sees
/// it half made.
fn links_dir(links: &BTreeSet<(Library, PathBuf)>) -> Result<PathBuf> {
    let key: String = links.iter().map(|(l, p)| format!("{}={};", l.link_name(), p.display())).collect();
    let hash = crate::pattern::mix(
        key.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3)),
    );
    // SAFETY: getuid has no preconditions and cannot fail.
    let uid = unsafe { libc::getuid() };
    let base = std::env::temp_dir();
    let dir = base.join(format!("qbench-libs-{uid}-{hash:016x}"));
    if valid_links_dir(&dir, links, uid) {
        return Ok(dir);
    }
    let fail = |e: std::io::Error| {
        Error::Runtime(format!("cannot make the library links directory under {}: {e}", base.display()))
    };
    let tmp = base.join(format!("qbench-libs-{uid}-{hash:016x}.{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir(&tmp).map_err(fail)?;
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o700)).map_err(fail)?;
    for (lib, target) in links {
        std::os::unix::fs::symlink(target, tmp.join(lib.link_name())).map_err(fail)?;
    }
    match std::fs::rename(&tmp, &dir) {
        Ok(()) => Ok(dir),
        Err(_) if valid_links_dir(&dir, links, uid) => {
            // Another rank made the same directory first.
            let _ = std::fs::remove_dir_all(&tmp);
            Ok(dir)
        }
        // Someone else's or a stale directory in the way: keep ours.
        Err(_) => Ok(tmp),
    }
}

fn valid_links_dir(dir: &Path, links: &BTreeSet<(Library, PathBuf)>, uid: u32) -> bool {
    let Ok(meta) = std::fs::symlink_metadata(dir) else { return false };
    meta.is_dir()
        && meta.uid() == uid
        && meta.mode() & 0o022 == 0
        && links.iter().all(|(lib, target)| std::fs::read_link(dir.join(lib.link_name())).is_ok_and(|t| &t == target))
}

fn reexec(dir: &Path, links: &BTreeSet<(Library, PathBuf)>) -> Result<()> {
    use std::os::unix::process::CommandExt;
    // The links first, then each real directory (for files a library loads
    // next to itself, such as libnvrtc-builtins), then what was there.
    let mut path: Vec<PathBuf> = vec![dir.to_path_buf()];
    path.extend(links.iter().filter_map(|(_, t)| t.parent().map(Path::to_path_buf)));
    if let Some(old) = std::env::var_os("LD_LIBRARY_PATH") {
        path.extend(std::env::split_paths(&old));
    }
    let joined = std::env::join_paths(path).map_err(|e| Error::Runtime(format!("cannot set LD_LIBRARY_PATH: {e}")))?;
    let mut args = std::env::args_os();
    let argv0 = args.next().unwrap_or_else(|| "qbench".into());
    let err = std::process::Command::new("/proc/self/exe")
        .arg0(argv0)
        .args(args)
        .env("LD_LIBRARY_PATH", joined)
        .env(REEXEC_ENV, dir)
        .exec();
    Err(Error::Runtime(format!("cannot re-execute qbench to load the GPU libraries: {err}")))
}

/// Where `lib` is installed under a name cudarc does not try (pip's
/// `libnccl.so.2`, say), searching as [`require`] does.
pub fn locate(lib: Library) -> Option<PathBuf> {
    find_in(lib, &search_dirs(lib))
}

/// NCCL's version code spelled out: X*10000+Y*100+Z since 2.9, X*1000+Y*100+Z before.
pub fn nccl_version_text(code: i64) -> String {
    if code >= 10000 {
        format!("{}.{}.{}", code / 10000, code % 10000 / 100, code % 100)
    } else {
        format!("{}.{}.{}", code / 1000, code % 1000 / 100, code % 100)
    }
}

/// The file a loaded library was mapped from, read from /proc/self/maps.
pub fn loaded_path(lib: Library) -> Option<PathBuf> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    let stem = lib.link_name();
    maps.lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .find(|p| Path::new(p).file_name().is_some_and(|n| n.to_string_lossy().starts_with(stem)))
        .map(PathBuf::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_versioned_names_cudarc_skips() {
        let dir = std::env::temp_dir().join(format!("qbench-libs-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // A real shared object under a pip-style name.
        let libc_path = ["/lib/x86_64-linux-gnu/libm.so.6", "/usr/lib64/libm.so.6", "/lib64/libm.so.6"]
            .into_iter()
            .map(PathBuf::from)
            .find(|p| p.exists())
            .expect("libm");
        std::fs::copy(&libc_path, dir.join("libnccl.so.2")).unwrap();
        std::fs::write(dir.join("libnccl.so.2.bad"), b"not an ELF file").unwrap();
        let found = find_in(Library::Nccl, std::slice::from_ref(&dir)).unwrap();
        assert_eq!(found.file_name().unwrap(), "libnccl.so.2");
        assert!(find_in(Library::Nvrtc, std::slice::from_ref(&dir)).is_none());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn nccl_version_codes() {
        assert_eq!(nccl_version_text(22803), "2.28.3");
        assert_eq!(nccl_version_text(2804), "2.8.4");
    }

    #[test]
    fn links_directory_is_shared_and_validated() {
        let target = PathBuf::from("/nonexistent/libnccl.so.2");
        let links: BTreeSet<_> = [(Library::Nccl, target.clone())].into_iter().collect();
        let a = links_dir(&links).unwrap();
        let b = links_dir(&links).unwrap();
        assert_eq!(a, b);
        assert_eq!(std::fs::read_link(a.join("libnccl.so")).unwrap(), target);
        std::fs::remove_dir_all(&a).unwrap();
    }
}
