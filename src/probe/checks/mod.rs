//! Checks: the facts judged as an admin would, each a status, what was
//! found and, when something is wrong, how to fix it. FAIL means a job
//! will break or silently lose its fast path; WARN means something is
//! missing or odd but jobs still run; SKIP means the check did not apply
//! or could not be made, and says why.

mod gdr;
mod gpu;
mod mpi;
mod nccl;
mod rdma;

pub mod wanted;

use crate::probe::collect::Facts;
pub use crate::record::check::Status;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Check {
    pub check: String,
    pub status: Status,
    pub found: String,
    /// Empty when there is nothing to fix.
    pub fix: String,
    /// What the check is about is not there at all (no GPU, no adapter),
    /// rather than slow or down: a missing-hardware failure.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub missing: bool,
}

impl Check {
    fn new(check: impl Into<String>, status: Status, found: impl Into<String>, fix: impl Into<String>) -> Check {
        Check { check: check.into(), status, found: found.into(), fix: fix.into(), missing: false }
    }

    /// The same check, marked as about hardware that is absent.
    pub fn absent(self) -> Check {
        Check { missing: true, ..self }
    }

    pub fn pass(check: impl Into<String>, found: impl Into<String>) -> Check {
        Check::new(check, Status::Pass, found, "")
    }

    pub fn skip(check: impl Into<String>, why: impl Into<String>) -> Check {
        Check::new(check, Status::Skip, why, "")
    }

    pub fn warn(check: impl Into<String>, found: impl Into<String>, fix: impl Into<String>) -> Check {
        Check::new(check, Status::Warn, found, fix)
    }

    pub fn fail(check: impl Into<String>, found: impl Into<String>, fix: impl Into<String>) -> Check {
        Check::new(check, Status::Fail, found, fix)
    }
}

/// Every check, section by section; `expect_gpus`: a node without an
/// NVIDIA GPU FAILs rather than SKIPs its GPU checks.
pub fn evaluate(facts: &Facts, expect_gpus: bool) -> Vec<Check> {
    let mut checks = Vec::new();
    checks.extend(gpu::checks(facts, expect_gpus));
    checks.extend(rdma::checks(facts));
    checks.extend(gdr::checks(facts));
    checks.extend(nccl::checks(facts));
    checks.extend(mpi::checks(facts));
    checks.push(readable(facts));
    checks
}

/// The worst status: FAIL, WARN, or PASS (a SKIP is no failure).
pub fn verdict(checks: &[Check]) -> Status {
    checks.iter().map(|c| c.status).max().unwrap_or(Status::Pass).max(Status::Pass)
}

fn readable(facts: &Facts) -> Check {
    const NAME: &str = "files.readable";
    if facts.unreadable.is_empty() {
        return Check::pass(NAME, "every file probed was readable");
    }
    let list: Vec<String> = facts.unreadable.iter().map(|u| format!("{} ({})", u.path, u.reason)).collect();
    Check::warn(
        NAME,
        format!("{} unreadable: {}", list.len(), and_list(&list)),
        "the facts read from these files are reported as unknown; a driver that writes malformed sysfs needs reloading or updating (dmesg says why)",
    )
}

/// Past this many, a finding names the first ones and counts the rest (the
/// JSON's facts list every one).
const NAMED: usize = 8;

/// "a, b and c"; past [`NAMED`] items, "a, b, …, h and 92 more".
fn and_list<T: AsRef<str>>(items: &[T]) -> String {
    let names = |items: &[T]| items.iter().map(AsRef::as_ref).collect::<Vec<_>>().join(", ");
    match items {
        [] => String::new(),
        [one] => one.as_ref().to_string(),
        _ if items.len() > NAMED => format!("{} and {} more", names(&items[..NAMED]), items.len() - NAMED),
        [init @ .., last] => format!("{} and {}", names(init), last.as_ref()),
    }
}

/// "1 GPU", "2 GPUs".
fn count(n: usize, noun: &str) -> String {
    if n == 1 { format!("1 {noun}") } else { format!("{n} {noun}s") }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdict_is_the_worst_status_and_skip_is_no_failure() {
        let c = |status| Check::new("", status, "", "");
        assert_eq!(verdict(&[]), Status::Pass);
        assert_eq!(verdict(&[c(Status::Skip)]), Status::Pass);
        assert_eq!(verdict(&[c(Status::Pass), c(Status::Warn)]), Status::Warn);
        assert_eq!(verdict(&[c(Status::Fail), c(Status::Warn), c(Status::Skip)]), Status::Fail);
    }

    #[test]
    fn lists_read_as_english() {
        assert_eq!(and_list(&["a"]), "a");
        assert_eq!(and_list(&["a", "b", "c"]), "a, b and c");
        let many: Vec<String> = (0..100).map(|i| i.to_string()).collect();
        assert_eq!(and_list(&many), "0, 1, 2, 3, 4, 5, 6, 7 and 92 more");
        assert_eq!(and_list(&many[..8]), "0, 1, 2, 3, 4, 5, 6 and 7");
        assert_eq!(count(2, "GPU"), "2 GPUs");
    }
}
