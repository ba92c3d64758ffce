//! Reads /sys, /proc, /dev and /etc under a root directory, so that a fake
//! tree (tests, offline reports) and the real machine go through the same
//! code. Symbolic links are followed inside the root, never out of it.

use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};

/// Files bigger than this are not sysfs attributes: read no further.
const MAX_FILE_BYTES: u64 = 64 * 1024;
/// The kernel's own limit on links followed in one lookup (ELOOP).
const MAX_LINKS: usize = 40;

/// A fact that could not be read, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unreadable {
    pub path: String,
    pub reason: String,
}

/// A value, or the reason it is not known. Nothing is ever guessed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Known<T> {
    Value(T),
    Unknown { unknown: String },
}

impl<T> Known<T> {
    pub fn unknown(reason: impl Into<String>) -> Self {
        Known::Unknown { unknown: reason.into() }
    }

    pub fn value(&self) -> Option<&T> {
        match self {
            Known::Value(v) => Some(v),
            Known::Unknown { .. } => None,
        }
    }

    /// Why the value is not known; None when it is.
    pub fn reason(&self) -> Option<&str> {
        match self {
            Known::Value(_) => None,
            Known::Unknown { unknown } => Some(unknown),
        }
    }

    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Known<U> {
        match self {
            Known::Value(v) => Known::Value(f(v)),
            Known::Unknown { unknown } => Known::Unknown { unknown },
        }
    }

    pub fn and_then<U>(self, f: impl FnOnce(T) -> Known<U>) -> Known<U> {
        match self {
            Known::Value(v) => f(v),
            Known::Unknown { unknown } => Known::Unknown { unknown },
        }
    }

    /// The value, or what `f` finds when it is unknown.
    pub fn or_else(self, f: impl FnOnce() -> Known<T>) -> Known<T> {
        match self {
            Known::Value(v) => Known::Value(v),
            Known::Unknown { .. } => f(),
        }
    }
}

impl<T, E: fmt::Display> From<Result<T, E>> for Known<T> {
    fn from(r: Result<T, E>) -> Self {
        match r {
            Ok(v) => Known::Value(v),
            Err(e) => Known::unknown(e.to_string()),
        }
    }
}

impl<T: fmt::Display> fmt::Display for Known<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Known::Value(v) => v.fmt(f),
            Known::Unknown { unknown } => write!(f, "unknown ({unknown})"),
        }
    }
}

/// The probed machine's files, seen from `root`. Paths given to its methods
/// are absolute paths on the probed machine (`/sys/class/infiniband`).
pub struct Sysfs {
    root: PathBuf,
    /// What could not be read, each with the real path it was read at, so
    /// that one bad file reached by two names is reported once.
    unreadable: RefCell<Vec<(String, Unreadable)>>,
}

impl Sysfs {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Sysfs { root: root.into(), unreadable: RefCell::new(Vec::new()) }
    }

    fn host_path(&self, path: &str) -> PathBuf {
        self.root.join(path.trim_start_matches('/'))
    }

    /// Where `path` really is, every link followed the way the kernel does
    /// (realpath), but inside the root: an absolute link target starts again
    /// at the root. None when a component does not exist or links loop.
    pub fn resolve(&self, path: &str) -> Option<String> {
        let mut done: Vec<String> = Vec::new();
        let mut todo: Vec<String> = path.split('/').rev().map(str::to_string).collect();
        let mut links = 0;
        while let Some(part) = todo.pop() {
            match part.as_str() {
                "" | "." => continue,
                ".." => {
                    done.pop();
                    continue;
                }
                _ => done.push(part),
            }
            let here = self.root.join(done.join("/"));
            let meta = std::fs::symlink_metadata(&here).ok()?;
            if meta.file_type().is_symlink() {
                links += 1;
                if links > MAX_LINKS {
                    return None;
                }
                let target = std::fs::read_link(&here).ok()?;
                let target = target.to_str()?;
                done.pop();
                if target.starts_with('/') {
                    done.clear();
                }
                todo.extend(target.split('/').rev().map(str::to_string));
            }
        }
        Some(format!("/{}", done.join("/")))
    }

    pub fn exists(&self, path: &str) -> bool {
        self.resolve(path).is_some()
    }

    /// Whether `path` is a regular file with an execute bit.
    pub fn is_executable(&self, path: &str) -> bool {
        use std::os::unix::fs::PermissionsExt;
        self.resolve(path)
            .and_then(|p| std::fs::metadata(self.host_path(&p)).ok())
            .is_some_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    }

    /// Names in directory `path`, sorted; empty when it is not a directory.
    pub fn list(&self, path: &str) -> Vec<String> {
        let Some(real) = self.resolve(path) else {
            return Vec::new();
        };
        let Ok(entries) = std::fs::read_dir(self.host_path(&real)) else {
            return Vec::new();
        };
        let mut names: Vec<String> = entries.flatten().filter_map(|e| e.file_name().into_string().ok()).collect();
        names.sort();
        names
    }

    /// The trimmed text of a file that should exist; when it cannot be
    /// read, the reason is recorded and returned.
    pub fn read(&self, path: &str) -> Known<String> {
        self.read_opt(path).unwrap_or_else(|| self.fail(path, "missing"))
    }

    /// Like [`read`](Self::read), but a missing file is not worth a word
    /// (None): optional attributes, modules that may not be loaded.
    pub fn read_opt(&self, path: &str) -> Option<Known<String>> {
        let real = self.resolve(path)?;
        Some(match self.read_text(&real) {
            Ok(text) if text.is_empty() => self.fail(path, "empty"),
            Ok(text) => Known::Value(text),
            Err(why) => self.fail(path, &why),
        })
    }

    /// A configuration file's text, which may be empty; None when there is
    /// no such file, or it cannot be read (then recorded).
    pub fn read_config(&self, path: &str) -> Option<String> {
        let real = self.resolve(path)?;
        self.read_text(&real).map_err(|why| self.fail::<()>(path, &why)).ok()
    }

    /// A file's content parsed by `parse`; content it rejects is recorded
    /// as unexpected, quoting what was there.
    pub fn parse<T>(&self, path: &str, parse: impl FnOnce(&str) -> Option<T>) -> Known<T> {
        self.read(path).and_then(|text| match parse(&text) {
            Some(v) => Known::Value(v),
            None => self.fail(path, &format!("unexpected content {:?}", crate::input::excerpt(&text, 40))),
        })
    }

    fn read_text(&self, real: &str) -> Result<String, String> {
        let host = self.host_path(real);
        let meta = std::fs::metadata(&host).map_err(|e| e.to_string())?;
        if !meta.is_file() {
            // A FIFO or device would block or stream: never open one.
            return Err("not a regular file".into());
        }
        let mut bytes = Vec::new();
        std::fs::File::open(&host)
            .and_then(|f| f.take(MAX_FILE_BYTES).read_to_end(&mut bytes))
            .map_err(|e| e.to_string())?;
        let text = String::from_utf8(bytes).map_err(|_| "not text".to_string())?;
        if text.contains('\0') {
            return Err("not text".into());
        }
        Ok(text.trim().to_string())
    }

    /// Records that `path` could not be read.
    pub fn fail<T>(&self, path: &str, reason: &str) -> Known<T> {
        let real = self.resolve(path).unwrap_or_else(|| path.to_string());
        let mut list = self.unreadable.borrow_mut();
        if !list.iter().any(|(r, u)| *r == real && u.reason == reason) {
            list.push((real, Unreadable { path: path.to_string(), reason: reason.to_string() }));
        }
        Known::unknown(format!("{path}: {reason}"))
    }

    /// Everything recorded as unreadable so far, by path.
    pub fn unreadable(&self) -> Vec<Unreadable> {
        let mut list: Vec<Unreadable> = self.unreadable.borrow().iter().map(|(_, u)| u.clone()).collect();
        list.sort_by(|a, b| a.path.cmp(&b.path));
        list
    }

    pub fn root(&self) -> &Path {
        &self.root
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn tree(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("qbench-sysfs-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0")).unwrap();
        std::fs::create_dir_all(dir.join("sys/class/infiniband/mlx5_0")).unwrap();
        dir
    }

    #[test]
    fn links_resolve_inside_the_root() {
        let dir = tree("links");
        symlink(
            "../../../devices/pci0000:00/0000:00:01.0/0000:01:00.0",
            dir.join("sys/class/infiniband/mlx5_0/device"),
        )
        .unwrap();
        // An absolute target means the root's /sys, not the real one.
        symlink("/sys/devices/pci0000:00", dir.join("sys/class/infiniband/abs")).unwrap();
        symlink("loop", dir.join("sys/class/infiniband/loop")).unwrap();
        let sys = Sysfs::new(&dir);
        assert_eq!(
            sys.resolve("/sys/class/infiniband/mlx5_0/device").as_deref(),
            Some("/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0")
        );
        assert_eq!(
            sys.resolve("/sys/class/infiniband/abs/0000:00:01.0").as_deref(),
            Some("/sys/devices/pci0000:00/0000:00:01.0")
        );
        assert_eq!(sys.resolve("/sys/class/infiniband/loop"), None);
        assert_eq!(sys.resolve("/sys/nothing"), None);
        assert_eq!(sys.resolve("/../../sys/class").as_deref(), Some("/sys/class"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn bad_files_are_recorded_not_fatal() {
        let dir = tree("bad");
        let ib = dir.join("sys/class/infiniband/mlx5_0");
        std::fs::write(ib.join("empty"), "\n").unwrap();
        std::fs::write(ib.join("binary"), [0xff, 0xfe, 0x00]).unwrap();
        std::fs::write(ib.join("guid"), "0002:c903:0010:1234\n").unwrap();
        std::fs::write(ib.join("lid"), "zz\n").unwrap();
        let sys = Sysfs::new(&dir);
        assert_eq!(sys.read("/sys/class/infiniband/mlx5_0/guid"), Known::Value("0002:c903:0010:1234".to_string()));
        assert!(sys.read("/sys/class/infiniband/mlx5_0/empty").value().is_none());
        assert!(sys.read("/sys/class/infiniband/mlx5_0/binary").value().is_none());
        assert!(sys.read("/sys/class/infiniband/mlx5_0/missing").value().is_none());
        assert!(sys.read_opt("/sys/class/infiniband/mlx5_0/optional").is_none());
        assert!(sys.parse("/sys/class/infiniband/mlx5_0/lid", |t| t.parse::<u32>().ok()).value().is_none());
        assert!(sys.read("/sys/class/infiniband/mlx5_0").value().is_none());
        let found: Vec<(String, String)> = sys.unreadable().into_iter().map(|u| (u.path, u.reason)).collect();
        let ib = "/sys/class/infiniband/mlx5_0";
        let expected = [
            (ib.to_string(), "not a regular file"),
            (format!("{ib}/binary"), "not text"),
            (format!("{ib}/empty"), "empty"),
            (format!("{ib}/lid"), "unexpected content \"zz\""),
            (format!("{ib}/missing"), "missing"),
        ]
        .map(|(p, r)| (p, r.to_string()));
        assert_eq!(found, expected);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
