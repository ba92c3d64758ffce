//! Finds libraries and programs the way the loader and the shell would,
//! but by reading directories under the probed root: nothing is loaded or
//! run, so fixtures can hold them too.

use super::Host;

/// Directories ld.so searches: LD_LIBRARY_PATH, then those listed in
/// /etc/ld.so.conf and /etc/ld.so.conf.d/*.conf, then the defaults.
pub fn loader_dirs(host: &Host) -> Vec<String> {
    let mut dirs: Vec<String> = Vec::new();
    let mut add = |d: &str| {
        let d = d.trim();
        if d.starts_with('/') && !dirs.iter().any(|x| x == d) {
            dirs.push(d.to_string());
        }
    };
    host.var("LD_LIBRARY_PATH").unwrap_or_default().split(':').for_each(&mut add);
    let conf_d = "/etc/ld.so.conf.d";
    let confs = std::iter::once("/etc/ld.so.conf".to_string())
        .chain(host.sys.list(conf_d).into_iter().filter(|n| n.ends_with(".conf")).map(|n| format!("{conf_d}/{n}")));
    for conf in confs {
        if let Some(text) = host.sys.read_config(&conf) {
            // "include" lines name the .d files already read; comments start with #.
            text.lines()
                .map(|l| l.split('#').next().unwrap_or_default())
                .filter(|l| !l.starts_with("include"))
                .for_each(&mut add);
        }
    }
    for d in [
        "/lib/x86_64-linux-gnu",
        "/usr/lib/x86_64-linux-gnu",
        "/lib/aarch64-linux-gnu",
        "/usr/lib/aarch64-linux-gnu",
        "/lib64",
        "/usr/lib64",
        "/lib",
        "/usr/lib",
    ] {
        add(d);
    }
    dirs
}

/// The first file in `dirs` named `name`, or whose name starts with
/// `name` followed by a dot (`libmpi.so` finds `libmpi.so.40`).
pub fn find_library(host: &Host, dirs: &[String], name: &str) -> Option<String> {
    dirs.iter().find_map(|d| {
        let mut hits: Vec<String> = host
            .sys
            .list(d)
            .into_iter()
            .filter(|f| f == name || f.strip_prefix(name).is_some_and(|rest| rest.starts_with('.')))
            .collect();
        hits.sort_by_key(|f| (f.len(), f.clone()));
        hits.first().map(|f| format!("{d}/{f}"))
    })
}

/// The program `name` as the shell finds it on PATH.
pub fn which(host: &Host, name: &str) -> Option<String> {
    host.var("PATH")
        .unwrap_or_default()
        .split(':')
        .filter(|d| d.starts_with('/'))
        .map(|d| format!("{}/{name}", d.trim_end_matches('/')))
        .find(|p| host.sys.is_executable(p))
}
