//! NCCL as a job on this host would meet it: the library and its version,
//! the net plugin it would load, and every NCCL_* variable set in the
//! environment or in the files NCCL reads at start.

use super::libpath::find_library;
use super::sysfs::Known;
use super::{Host, NOT_LIVE};
use crate::libs::{Library, loaded_path, locate, nccl_version_text};
use serde::{Deserialize, Serialize};
use std::ffi::c_int;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NcclLibrary {
    pub path: Known<String>,
    pub version: Known<String>,
    /// Whether cudarc, and so qbench's benchmarks, load it without help.
    pub cudarc_name: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NetPlugin {
    /// The names NCCL tries, in order; empty when NCCL_NET_PLUGIN=none.
    pub tried: Vec<String>,
    pub found: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NcclVar {
    pub name: String,
    pub value: String,
    /// `environment`, or the configuration file it came from.
    pub source: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NcclFacts {
    pub library: NcclLibrary,
    pub net_plugin: NetPlugin,
    pub variables: Vec<NcclVar>,
}

impl NcclFacts {
    pub fn var(&self, name: &str) -> Option<&NcclVar> {
        self.variables.iter().find(|v| v.name == name)
    }
}

/// `dirs`: the loader's directories ([`loader_dirs`](super::libpath::loader_dirs)).
pub fn collect(host: &Host, dirs: &[String]) -> NcclFacts {
    let variables = variables(host);
    let plugin_env = variables.iter().find(|v| v.name == "NCCL_NET_PLUGIN").map(|v| v.value.as_str());
    NcclFacts { library: library(host, dirs), net_plugin: net_plugin(host, dirs, plugin_env), variables }
}

fn library(host: &Host, dirs: &[String]) -> NcclLibrary {
    let on_disk = || find_library(host, dirs, "libnccl.so");
    if !host.live {
        return NcclLibrary {
            path: on_disk()
                .map_or_else(|| Known::unknown(format!("no libnccl.so* in {}", dirs.join(", "))), Known::Value),
            version: Known::unknown(NOT_LIVE),
            cudarc_name: false,
        };
    }
    if Library::Nccl.loadable() {
        let version =
            Known::from(cudarc::nccl::result::get_nccl_version().map_err(|e| format!("ncclGetVersion: {e:?}")));
        return NcclLibrary {
            path: loaded_path(Library::Nccl)
                .map(|p| p.display().to_string())
                .map_or_else(|| Known::unknown("loaded, but not in /proc/self/maps"), Known::Value),
            version: version.map(|c| nccl_version_text(c as i64)),
            cudarc_name: true,
        };
    }
    // Installed under a name cudarc does not try (libnccl.so.2, pip's wheels):
    // the benchmarks link it in for themselves; load it here for its version.
    let Some(found) = locate(Library::Nccl) else {
        return NcclLibrary {
            path: Known::unknown("not found by the loader, nor in the CUDA, NCCL and Python package directories"),
            version: Known::unknown("not found"),
            cudarc_name: false,
        };
    };
    // SAFETY: dlopen of the NCCL library file found; only its initialisers run.
    let loaded = match unsafe { libloading::Library::new(&found) } {
        Ok(lib) => lib,
        Err(e) => {
            // The loader's own words ("cannot open shared object file…").
            let e = std::error::Error::source(&e).map_or_else(|| e.to_string(), |s| s.to_string());
            return NcclLibrary {
                path: on_disk().map_or_else(|| Known::unknown(format!("not found by the loader ({e})")), Known::Value),
                version: Known::unknown(format!("cannot be loaded: {e}")),
                cudarc_name: false,
            };
        }
    };
    // SAFETY: ncclGetVersion has this signature in every NCCL 2 release.
    let version = match unsafe { loaded.get::<unsafe extern "C" fn(*mut c_int) -> c_int>(b"ncclGetVersion\0") } {
        Ok(get) => {
            let mut code: c_int = 0;
            // SAFETY: NCCL writes one int through a valid pointer.
            match unsafe { get(&mut code) } {
                0 => Known::Value(nccl_version_text(code as i64)),
                err => Known::unknown(format!("ncclGetVersion returned {err}")),
            }
        }
        Err(e) => Known::unknown(format!("no ncclGetVersion: {e}")),
    };
    let path = loaded_path(Library::Nccl).map(|p| p.display().to_string());
    NcclLibrary {
        path: path.map_or_else(|| Known::unknown("loaded, but not in /proc/self/maps"), Known::Value),
        version,
        cudarc_name: false,
    }
}

/// NCCL_NET_PLUGIN=x makes NCCL try `x`, then `libnccl-net-x.so`; unset,
/// `libnccl-net.so`; `none` turns plugins off (src/plugin/net.cc).
fn net_plugin(host: &Host, dirs: &[String], env: Option<&str>) -> NetPlugin {
    let tried: Vec<String> = match env {
        Some("none") => Vec::new(),
        Some(v) if !v.is_empty() => vec![v.to_string(), format!("libnccl-net-{v}.so")],
        _ => vec!["libnccl-net.so".to_string()],
    };
    let found = tried.iter().find_map(|name| {
        if name.contains('/') {
            host.sys.exists(name).then(|| name.clone())
        } else {
            dirs.iter().map(|d| format!("{d}/{name}")).find(|p| host.sys.exists(p))
        }
    });
    NetPlugin { tried, found }
}

/// NCCL_* from the environment, then ~/.nccl.conf, then /etc/nccl.conf:
/// NCCL reads both files with setenv(…, 0), so the first one wins
/// (initEnv, src/misc/param.cc). Each line is NAME=VALUE, taken verbatim.
fn variables(host: &Host) -> Vec<NcclVar> {
    let mut vars: Vec<NcclVar> = host
        .env
        .iter()
        .filter(|(k, _)| k.starts_with("NCCL_"))
        .map(|(k, v)| NcclVar { name: k.clone(), value: v.clone(), source: "environment".into() })
        .collect();
    let files = host
        .var("HOME")
        .map(|h| format!("{}/.nccl.conf", h.trim_end_matches('/')))
        .into_iter()
        .chain(["/etc/nccl.conf".to_string()]);
    for file in files {
        let Some(text) = host.sys.read_config(&file) else {
            continue;
        };
        for (name, value) in text.lines().filter_map(|l| l.split_once('=')) {
            if name.starts_with("NCCL_") && !vars.iter().any(|v| v.name == name) {
                vars.push(NcclVar { name: name.to_string(), value: value.to_string(), source: file.clone() });
            }
        }
    }
    vars.sort_by(|a, b| a.name.cmp(&b.name));
    vars
}
