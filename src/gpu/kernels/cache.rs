//! Compiled kernels kept on disk from one run to the next, so that a check
//! before every job does not wait for NVRTC: one source's cubin or PTX for
//! one target, in `$QBENCH_KERNEL_CACHE`, else `$XDG_CACHE_HOME/qbench/kernels`,
//! else `~/.cache/qbench/kernels` (`QBENCH_KERNEL_CACHE=off` keeps nothing).
//!
//! An entry is named by the SHA-256 of its key: everything its code
//! depends on (the driver's and NVRTC's versions, the target the GPU's
//! compute capability chose, NVRTC's options, the source). Its first line
//! repeats the key's hash and holds the code's hash and length, checked
//! when it is read, so that an entry that is torn, unreadable or not what
//! its name says is compiled anew, never an error. It is written to a
//! temporary file and renamed onto its name: the processes of a job that
//! compile at once each leave a whole entry, and a reader sees one or none.

use sha2::{Digest, Sha256};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The variable that names the cache's directory, or `off`.
pub const VAR: &str = "QBENCH_KERNEL_CACHE";

/// The largest entry read back (a cubin of qbench's kernels is well under
/// a MiB): a larger file is not an entry of this cache.
const MOST_BYTES: u64 = 64 << 20;

/// What the first line of every entry starts with (its format's version).
const MAGIC: &str = "qbench-kernel-v1";

/// Everything a compiled kernel depends on, as text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Key(String);

impl Key {
    /// The key of `source` (named `name`) compiled by NVRTC `nvrtc` for
    /// `target` ("sm_90 cubin") with `options`, under driver `driver`.
    pub fn new(driver: i32, nvrtc: (i32, i32), target: &str, options: &[String], name: &str, source: &str) -> Key {
        Key(format!(
            "driver {driver}\nnvrtc {}.{}\ntarget {target}\noptions {}\nsource {name} {}\n",
            nvrtc.0,
            nvrtc.1,
            options.join(" "),
            hex(&Sha256::digest(source.as_bytes()))
        ))
    }

    fn hash(&self) -> String {
        hex(&Sha256::digest(self.0.as_bytes()))
    }

    /// The entry's file in `dir`.
    pub fn path(&self, dir: &Path) -> PathBuf {
        dir.join(format!("{}.bin", self.hash()))
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The cache's directory as `env` (a variable's value by name) says, or
/// None when it is turned off or no home is known.
pub fn dir(env: impl Fn(&str) -> Option<String>) -> Option<PathBuf> {
    let set = |k: &str| env(k).filter(|v| !v.is_empty());
    match set(VAR).as_deref() {
        Some("off" | "0" | "no" | "false") => None,
        Some(d) => Some(PathBuf::from(d)),
        None => set("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|| set("HOME").map(|h| Path::new(&h).join(".cache")))
            .map(|base| base.join("qbench").join("kernels")),
    }
}

/// The directory of this process's environment.
pub fn here() -> Option<PathBuf> {
    dir(|k| std::env::var(k).ok())
}

/// The code kept for `key` in `dir`; None where there is none, or what is
/// there cannot be read or is not whole.
pub fn load(dir: &Path, key: &Key) -> Option<Vec<u8>> {
    let path = key.path(dir);
    if std::fs::metadata(&path).ok()?.len() > MOST_BYTES {
        return None;
    }
    let bytes = std::fs::read(&path).ok()?;
    let end = bytes.iter().position(|b| *b == b'\n')?;
    let head = std::str::from_utf8(&bytes[..end]).ok()?;
    let code = &bytes[end + 1..];
    let mut words = head.split(' ');
    let whole = words.next() == Some(MAGIC)
        && words.next() == Some(key.hash().as_str())
        && words.next() == Some(hex(&Sha256::digest(code)).as_str())
        && words.next().and_then(|n| n.parse::<usize>().ok()) == Some(code.len());
    whole.then(|| code.to_vec())
}

/// Keeps `code` for `key` in `dir` (made if missing). Errors are the
/// caller's to ignore: a cache that cannot be written costs a compile.
pub fn store(dir: &Path, key: &Key, code: &[u8]) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let path = key.path(dir);
    let temp = dir.join(format!(".{}.{}.tmp", key.hash(), std::process::id()));
    let head = format!("{MAGIC} {} {} {}\n", key.hash(), hex(&Sha256::digest(code)), code.len());
    let written = std::fs::File::create(&temp).and_then(|mut f| {
        f.write_all(head.as_bytes())?;
        f.write_all(code)?;
        f.sync_all()
    });
    match written.and_then(|()| std::fs::rename(&temp, &path)) {
        Ok(()) => Ok(()),
        Err(e) => {
            let _ = std::fs::remove_file(&temp);
            Err(e)
        }
    }
}

/// Drops `key`'s entry (code the driver refused): the next run compiles it.
pub fn forget(dir: &Path, key: &Key) {
    let _ = std::fs::remove_file(key.path(dir));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(driver: i32, nvrtc: (i32, i32), target: &str, options: &[&str], source: &str) -> Key {
        let options: Vec<String> = options.iter().map(|o| o.to_string()).collect();
        Key::new(driver, nvrtc, target, &options, "kernels/x.cu", source)
    }

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("qbench-kcache-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn the_key_changes_with_everything_the_code_depends_on() {
        let base = key(12080, (12, 9), "sm_90 cubin", &["--std=c++14"], "k()");
        let path = |k: &Key| k.path(Path::new("/c"));
        assert_eq!(path(&base), path(&key(12080, (12, 9), "sm_90 cubin", &["--std=c++14"], "k()")));
        for other in [
            key(13000, (12, 9), "sm_90 cubin", &["--std=c++14"], "k()"),
            key(12080, (13, 0), "sm_90 cubin", &["--std=c++14"], "k()"),
            key(12080, (12, 9), "compute_90 ptx", &["--std=c++14"], "k()"),
            key(12080, (12, 9), "sm_80 cubin", &["--std=c++14"], "k()"),
            key(12080, (12, 9), "sm_90 cubin", &["--std=c++17"], "k()"),
            key(12080, (12, 9), "sm_90 cubin", &["--std=c++14"], "k() "),
        ] {
            assert_ne!(path(&base), path(&other), "{other:?}");
        }
    }

    #[test]
    fn the_directory_follows_the_variable_then_xdg_then_home() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())
        };
        assert_eq!(dir(env(&[(VAR, "/k"), ("HOME", "/h")])), Some(PathBuf::from("/k")));
        assert_eq!(dir(env(&[(VAR, "off"), ("HOME", "/h")])), None);
        assert_eq!(dir(env(&[("XDG_CACHE_HOME", "/x"), ("HOME", "/h")])), Some(PathBuf::from("/x/qbench/kernels")));
        assert_eq!(dir(env(&[("HOME", "/h")])), Some(PathBuf::from("/h/.cache/qbench/kernels")));
        assert_eq!(dir(env(&[("HOME", "")])), None);
    }

    #[test]
    fn what_is_stored_is_read_back_and_nothing_else() {
        let d = scratch("roundtrip");
        let k = key(12080, (12, 9), "sm_90 cubin", &[], "k()");
        assert_eq!(load(&d, &k), None);
        store(&d, &k, b"\x7fELF code\n\x00bytes").unwrap();
        assert_eq!(load(&d, &k).as_deref(), Some(&b"\x7fELF code\n\x00bytes"[..]));
        // Another key's entry is not this one's, even under its name.
        let other = key(12080, (12, 9), "sm_90 cubin", &[], "j()");
        std::fs::copy(k.path(&d), other.path(&d)).unwrap();
        assert_eq!(load(&d, &other), None);
        // No temporary file is left behind.
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 2);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_torn_or_corrupt_entry_is_a_miss() {
        let d = scratch("corrupt");
        let k = key(12080, (12, 9), "compute_90 ptx", &[], "k()");
        store(&d, &k, b".version 8.0\n.target sm_90\n").unwrap();
        let whole = std::fs::read(k.path(&d)).unwrap();
        let cases: [Vec<u8>; 5] = [
            whole[..whole.len() - 3].to_vec(),
            [&whole[..], b"more"].concat(),
            whole.iter().map(|b| if *b == b'9' { b'8' } else { *b }).collect(),
            b"not an entry at all".to_vec(),
            Vec::new(),
        ];
        for bytes in cases {
            std::fs::write(k.path(&d), &bytes).unwrap();
            assert_eq!(load(&d, &k), None, "{:?}", String::from_utf8_lossy(&bytes));
        }
        // An entry that cannot be read (a directory in its place) is a miss too.
        std::fs::remove_file(k.path(&d)).unwrap();
        std::fs::create_dir(k.path(&d)).unwrap();
        assert_eq!(load(&d, &k), None);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_cache_that_cannot_be_written_is_an_error_to_ignore() {
        let d = scratch("unwritable");
        std::fs::write(&d, "a file where the directory would be").unwrap();
        let k = key(1, (1, 0), "sm_90 cubin", &[], "k()");
        assert!(store(&d, &k, b"code").is_err());
        assert_eq!(load(&d, &k), None);
        std::fs::remove_file(&d).unwrap();
    }
}
