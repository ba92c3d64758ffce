//! The "never" rules of docs/ARCHITECTURE.md, held against the source:
//! only the face (cli/, main.rs, command.rs) speaks clap or reaches the
//! command line, no transport imports a workload, no workload, transport,
//! check, rdma, record or report prints or reaches the renderers above
//! it. Each file's unit tests (after `#[cfg(test)]`) are left out.

use std::path::{Path, PathBuf};

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Every source file under src/, relative to it, with its code before its tests.
fn code() -> Vec<(String, String)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            let code = text.split("#[cfg(test)]").next().unwrap_or("").to_string();
            (p.strip_prefix(&src).unwrap().display().to_string(), code)
        })
        .collect()
}

/// The lines of files under `dirs` that contain any of `words`.
fn offences(dirs: &[&str], words: &[&str]) -> Vec<String> {
    code()
        .into_iter()
        .filter(|(f, _)| dirs.iter().any(|d| f.starts_with(d)))
        .flat_map(|(f, c)| {
            c.lines()
                .enumerate()
                .filter(|(_, l)| !l.trim_start().starts_with("//") && words.iter().any(|w| l.contains(w)))
                .map(|(i, l)| format!("src/{f}:{}: {}", i + 1, l.trim()))
                .collect::<Vec<_>>()
        })
        .collect()
}

const BELOW_THE_FACE: [&str; 17] = [
    "check/",
    "dtype",
    "fault",
    "gpu/",
    "host",
    "input",
    "interrupt",
    "libs",
    "numa",
    "output",
    "pattern",
    "probe/",
    "rdma/",
    "record/",
    "report/",
    "transport/",
    "workload/",
];

#[test]
fn only_the_face_speaks_clap() {
    let mut dirs = BELOW_THE_FACE.to_vec();
    dirs.extend(["session", "statevec/", "stats", "threads", "ui", "units", "world/"]);
    let found = offences(&dirs, &["clap::", "use clap", "crate::cli"]);
    assert!(found.is_empty(), "the command line below the face:\n{}", found.join("\n"));
}

#[test]
fn no_transport_imports_a_workload() {
    let found =
        offences(&["transport/", "rdma/", "gpu/", "statevec/", "record/"], &["crate::workload", "crate::check"]);
    assert!(found.is_empty(), "a layer reaching up to the workloads:\n{}", found.join("\n"));
}

#[test]
fn workloads_neither_print_nor_render() {
    let layers = ["workload/", "transport/", "check/", "rdma/", "record/", "report/", "statevec/"];
    let found = offences(&layers, &["println!", "print!(", "eprint", "std::io::stdout"]);
    assert!(found.is_empty(), "printing below the face:\n{}", found.join("\n"));
    let found =
        offences(&["workload/", "transport/", "check/", "rdma/", "record/"], &["crate::report", "crate::output"]);
    assert!(found.is_empty(), "a workload reaching the renderers:\n{}", found.join("\n"));
}
