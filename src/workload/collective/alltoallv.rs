//! alltoallv: an all-to-all whose blocks differ in size, as nccl-tests'
//! alltoallv_perf sizes them. By default the size is what each rank sends
//! in all, and rank i sends rank j the share `(1 − s)·uniform +
//! s·distance` of it, where the distance is (j − i) mod n, rounded down to
//! 16 bytes, and s is `NCCL_TESTS_ALLTOALLV_SPREAD` (0 uniform … 1 by
//! distance, the default): every rank sends and receives the same total.
//! With `NCCL_TESTS_ALLTOALLV_MATRIX_FILE`, cell [i][j] of the file's
//! square matrix (times `NCCL_TESTS_ALLTOALLV_MATRIX_SCALE`, rounded down
//! to 16 bytes) is what rank i sends rank j, whatever the size, which must
//! then be one (-b = -e) that holds the busiest rank. Each rank's output
//! is the blocks it receives, in rank order. Issued as a send and a receive
//! to and from every rank with a non-empty block.

use super::{OpUse, Spec, aligned_block};
use crate::dtype::DataType;
use crate::error::{Error, Result};
use crate::transport::{Call, Collective, Counts, Primitives, Source};
use std::fmt::Write;
use std::sync::OnceLock;

const SPREAD: &str = "NCCL_TESTS_ALLTOALLV_SPREAD";
const MATRIX: &str = "NCCL_TESTS_ALLTOALLV_MATRIX_FILE";
const SCALE: &str = "NCCL_TESTS_ALLTOALLV_MATRIX_SCALE";

pub struct AllToAllV;

/// How the blocks are sized.
#[derive(Debug, Clone, PartialEq)]
enum Traffic {
    /// Shares of the size by distance, spread as `spread` says.
    Generated { spread: f64 },
    /// Bytes from rank i to rank j at `bytes[i * dim + j]`.
    Matrix { dim: usize, bytes: Vec<u64> },
}

/// A number of the environment's variable `name` that `fits` accepts,
/// None when unset.
fn number(name: &str, what: &str, fits: fn(f64) -> bool) -> std::result::Result<Option<f64>, String> {
    match std::env::var(name) {
        Err(_) => Ok(None),
        Ok(v) => match v.trim().parse::<f64>() {
            Ok(x) if x.is_finite() && fits(x) => Ok(Some(x)),
            _ => Err(format!("{name}={}: give {what}", crate::input::token(&v))),
        },
    }
}

/// The traffic the environment asks for; Err (one line) when a variable
/// or the matrix file is not what nccl-tests takes.
fn asked_traffic() -> std::result::Result<Traffic, String> {
    let Some(file) = std::env::var_os(MATRIX) else {
        // Past 0 or 1 it is taken as the nearer end, as nccl-tests takes it.
        let spread = number(SPREAD, "a number (0 uniform … 1 weighted by distance)", |_| true)?.unwrap_or(1.0);
        return Ok(Traffic::Generated { spread: spread.clamp(0.0, 1.0) });
    };
    let path = file.to_string_lossy().into_owned();
    let scale = number(SCALE, "a factor above 0 (of every cell)", |s| s > 0.0)?.unwrap_or(1.0);
    let text = crate::input::read(std::path::Path::new(&path), &format!("{MATRIX}={path}"), crate::input::MATRIX_BYTES)
        .map_err(|e| e.message())?;
    parse_matrix(&text, scale).map_err(|e| format!("{MATRIX}={path}: {e}"))
}

/// nccl-tests' traffic matrix: whitespace-separated byte counts, a row a
/// line, square; each cell times `scale`, rounded down to 16 bytes.
fn parse_matrix(text: &str, scale: f64) -> std::result::Result<Traffic, String> {
    let mut rows: Vec<Vec<u64>> = Vec::new();
    for line in text.lines() {
        let mut row = Vec::new();
        for word in line.split_whitespace() {
            let (r, c) = (rows.len(), row.len());
            let v = word
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite())
                .ok_or_else(|| format!("the value '{}' at row {r} column {c} is no number", crate::input::token(word)))?;
            if v < 0.0 {
                return Err(format!("the value {} at row {r} column {c} is negative", crate::input::token(word)));
            }
            let scaled = v * scale;
            if scaled >= u64::MAX as f64 {
                return Err(format!("the value {word} at row {r} column {c} times {scale} overflows"));
            }
            row.push(scaled as u64 & !15);
        }
        if row.is_empty() {
            continue;
        }
        if let Some(first) = rows.first()
            && first.len() != row.len()
        {
            return Err(format!("row {} has {} columns, row 0 {}", rows.len(), row.len(), first.len()));
        }
        rows.push(row);
    }
    let dim = rows.len();
    if dim == 0 {
        return Err("the file holds no matrix".into());
    }
    if rows[0].len() != dim {
        return Err(format!("the matrix must be square, not {dim}x{}", rows[0].len()));
    }
    Ok(Traffic::Matrix { dim, bytes: rows.concat() })
}

fn asked() -> &'static std::result::Result<Traffic, String> {
    static ASKED: OnceLock<std::result::Result<Traffic, String>> = OnceLock::new();
    ASKED.get_or_init(asked_traffic)
}

/// The traffic of this run (`fits` has rejected a run whose environment
/// asks for none).
fn traffic() -> &'static Traffic {
    static DEFAULT: Traffic = Traffic::Generated { spread: 1.0 };
    asked().as_ref().unwrap_or(&DEFAULT)
}

/// Elements of `dtype` that rank `from` sends rank `to` when each sends
/// `total` bytes in all over `n` ranks (nccl-tests'
/// AlltoAllvGetPeerBytesDistanceWeighted, in the same double arithmetic).
fn peer_count(from: usize, to: usize, n: usize, total: u64, spread: f64, dtype: DataType) -> u64 {
    let bytes = if n == 1 {
        total
    } else {
        let distance = ((to + n - from) % n) as f64;
        let sum = (n * (n - 1) / 2) as f64;
        let uniform = total as f64 / n as f64;
        let weighted = distance * total as f64 / sum;
        ((1.0 - spread) * uniform + spread * weighted) as u64
    };
    (bytes & !15) / dtype.size() as u64
}

/// The bytes each rank sends in all for the count column `param`.
fn total(param: u64, n: usize, dtype: DataType) -> u64 {
    param * n as u64 * dtype.size() as u64
}

impl Traffic {
    /// Elements rank `from` sends rank `to` of `n`, for the count column `param`.
    fn count(&self, from: usize, to: usize, n: usize, param: u64, dtype: DataType) -> u64 {
        match self {
            Traffic::Generated { spread } => peer_count(from, to, n, total(param, n, dtype), *spread, dtype),
            Traffic::Matrix { dim, bytes } => bytes[from * dim + to] / dtype.size() as u64,
        }
    }

    /// Bytes the busiest of `n` ranks sends or receives under a matrix.
    fn busiest(&self, n: usize) -> u64 {
        let Traffic::Matrix { dim, bytes } = self else { return 0 };
        // Saturating: cells near 2^64 must not wrap to a small need.
        let total = |cells: &mut dyn Iterator<Item = u64>| cells.fold(0u64, u64::saturating_add);
        let sent = (0..n).map(|i| total(&mut (0..n).map(|j| bytes[i * dim + j])));
        let received = (0..n).map(|j| total(&mut (0..n).map(|i| bytes[i * dim + j])));
        sent.chain(received).max().unwrap_or(0)
    }
}

impl Collective for AllToAllV {
    fn name(&self) -> &'static str {
        "alltoallv"
    }
    fn issue(&self, p: &mut dyn Primitives, c: &Call) -> Result<()> {
        let (n, t) = (c.nranks, traffic());
        let (mut sent, mut received) = (0, 0);
        for peer in 0..n {
            let send = t.count(c.rank, peer, n, c.count, c.dtype);
            if send > 0 {
                p.send(c.input.at(sent), send, peer)?;
                sent += send;
            }
            let recv = t.count(peer, c.rank, n, c.count, c.dtype);
            if recv > 0 {
                p.recv(c.output.at(received), recv, peer)?;
                received += recv;
            }
        }
        Ok(())
    }
    fn source(&self, c: &Counts, dtype: DataType, rank: usize, _: usize, n: usize, j: u64) -> Source {
        let t = traffic();
        let mut start = 0;
        for from in 0..n {
            let block = t.count(from, rank, n, c.param, dtype);
            if j < start + block {
                let at: u64 = (0..rank).map(|to| t.count(from, to, n, c.param, dtype)).sum();
                return Source::Copied { rank: from, index: at + j - start };
            }
            start += block;
        }
        Source::Unchecked
    }
    fn received(&self, c: &Counts, dtype: DataType, rank: usize, n: usize) -> u64 {
        (0..n).map(|from| traffic().count(from, rank, n, c.param, dtype)).sum()
    }
    fn source_cu(&self) -> &'static str {
        static CU: OnceLock<String> = OnceLock::new();
        CU.get_or_init(|| source_cu(traffic()))
    }
}

/// The CUDA rule of `t`: statements that return input element `at + j −
/// start` of the rank whose block holds output element `j`.
fn source_cu(t: &Traffic) -> String {
    // The elements `from` sends `to`: under a matrix its cell (a
    // table of the function, the same for every thread); else the
    // share, the products and sums rounded one by one (no fused
    // multiply-add) as the host computes them.
    let peer = match t {
        Traffic::Matrix { dim, bytes } => {
            let mut cells = String::new();
            for b in bytes {
                let _ = write!(cells, "{b}ULL,");
            }
            format!(
                "static const u64 cells[{}] = {{{cells}}};
                 auto peer = [&](int from, int to) -> u64 {{ return cells[from * {dim} + to] / esz; }};",
                bytes.len()
            )
        }
        Traffic::Generated { spread } => format!(
            "const double spread = {spread:?};
             const u64 total = blk * (u64)c.nranks * esz;
             auto peer = [&](int from, int to) -> u64 {{
                 u64 bytes = total;
                 if (c.nranks > 1) {{
                     double distance = (double)((to - from + c.nranks) % c.nranks);
                     double sum = (double)((u64)c.nranks * (c.nranks - 1) / 2);
                     double uniform = (double)total / (double)c.nranks;
                     double weighted = __ddiv_rn(__dmul_rn(distance, (double)total), sum);
                     bytes = (u64)__dadd_rn(__dmul_rn(1.0 - spread, uniform), __dmul_rn(spread, weighted));
                 }}
                 return (bytes & ~15ULL) / esz;
             }};"
        ),
    };
    format!(
        "const u64 esz = sizeof(typename E::storage);
         {peer}
         u64 start = 0;
         for (int from = 0; from < c.nranks; from++) {{
             u64 block = peer(from, c.rank);
             if (j < start + block) {{
                 u64 at = 0;
                 for (int to = 0; to < c.rank; to++) at += peer(from, to);
                 return input<E>(c, from, at + j - start);
             }}
             start += block;
         }}"
    )
}

impl Spec for AllToAllV {
    fn command(&self) -> &'static str {
        "alltoallv"
    }
    fn about(&self) -> &'static str {
        "NCCL all-to-all with blocks of different sizes (nccl-tests alltoallv_perf)"
    }
    /// The count column is the uniform per-peer count (0 under a matrix);
    /// each rank's buffers hold what the busiest rank sends and receives.
    fn counts(&self, count: u64, dtype: DataType, n: u64) -> Counts {
        let t = traffic();
        let param = match t {
            Traffic::Generated { .. } => aligned_block(count, dtype, n),
            Traffic::Matrix { .. } => 0,
        };
        let n = n as usize;
        let most = |sum: &dyn Fn(usize) -> u64| (0..n).map(sum).max().unwrap_or(0);
        let send = most(&|i| (0..n).map(|j| t.count(i, j, n, param, dtype)).sum());
        let recv = most(&|j| (0..n).map(|i| t.count(i, j, n, param, dtype)).sum());
        Counts { send, recv, param, send_inplace_offset: 0, recv_inplace_offset: 0 }
    }
    fn bus_factor(&self, n: u64) -> f64 {
        (n as f64 - 1.0) / n as f64
    }
    fn fits(&self, n: usize) -> Result<()> {
        match asked() {
            Err(e) => Err(Error::Usage(e.clone())),
            Ok(Traffic::Matrix { dim, .. }) if *dim < n => Err(Error::Usage(format!(
                "the traffic matrix of {MATRIX} is {dim}x{dim}, too small for {n} ranks"
            ))),
            Ok(_) => Ok(()),
        }
    }
    fn fits_sizes(&self, n: usize, min: u64, max: u64) -> Result<()> {
        let t = traffic();
        if !matches!(t, Traffic::Matrix { .. }) {
            return Ok(());
        }
        if min != max {
            return Err(Error::Usage(format!(
                "under {MATRIX} the matrix gives the sizes: set -b and -e to the same value (nccl-tests' rule)"
            )));
        }
        let need = t.busiest(n);
        if max < need {
            return Err(Error::Usage(format!(
                "-e must be at least {need} bytes, what the busiest rank sends or receives under {MATRIX} (got {max})"
            )));
        }
        Ok(())
    }
    fn op_use(&self) -> OpUse {
        OpUse::Ignores
    }
    fn checks_in_place(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// nccl-tests' example: rank 0 of 4 sends nothing to itself and 1, 2
    /// and 3 parts to ranks 1, 2 and 3 at spread 1; equal parts at 0.
    #[test]
    fn shares_follow_distance_and_spread() {
        let f = DataType::Float;
        let t = 6 * 1024;
        let shares: Vec<u64> = (0..4).map(|to| peer_count(0, to, 4, t, 1.0, f)).collect();
        assert_eq!(shares, [0, 256, 512, 768]);
        let uniform: Vec<u64> = (0..4).map(|to| peer_count(0, to, 4, t, 0.0, f)).collect();
        assert_eq!(uniform, [384; 4]);
        // Each part is rounded down to 16 bytes: 100 bytes over 2 ranks at
        // spread 1 is 0 and 100, then 96.
        assert_eq!(peer_count(0, 1, 2, 100, 1.0, DataType::Int8), 96);
        // Every rank receives what it sends in all.
        for rank in 0..5 {
            let sent: u64 = (0..5).map(|to| peer_count(rank, to, 5, 5 << 20, 0.3, f)).sum();
            let received: u64 = (0..5).map(|from| peer_count(from, rank, 5, 5 << 20, 0.3, f)).sum();
            assert_eq!(sent, received);
        }
    }

    /// Rank 2's output is rank 0's, 1's and 3's blocks in order, each taken
    /// at the place its sender keeps for rank 2.
    #[test]
    fn sources_walk_the_blocks_in_rank_order() {
        let f = DataType::Float;
        let c = AllToAllV.counts(1536, f, 4);
        assert_eq!((c.param, c.send, c.recv), (384, 1536, 1536));
        let s = |j| AllToAllV.source(&c, f, 2, 0, 4, j);
        // From rank 0 (distance 2): 512 elements, after its 0 + 256 to ranks 0 and 1.
        assert_eq!(s(0), Source::Copied { rank: 0, index: 256 });
        // From rank 1 (distance 1): 256 elements, after its 768 + 0.
        assert_eq!(s(512), Source::Copied { rank: 1, index: 768 });
        // Nothing from itself; from rank 3 (distance 3): 768 elements, after 256 + 512.
        assert_eq!(s(768), Source::Copied { rank: 3, index: 768 });
        assert_eq!(s(1535), Source::Copied { rank: 3, index: 768 + 767 });
        assert_eq!(s(1536), Source::Unchecked);
    }

    /// nccl-tests' matrix file: rows by line (blank lines skipped), each
    /// cell scaled and rounded down to 16 bytes; what it refuses, in one
    /// line each.
    #[test]
    fn a_traffic_matrix_is_read_as_nccl_tests_reads_it() {
        let m = parse_matrix("0 100 200\n300 0 50\n\n16 32 0\n", 1.0).unwrap();
        assert_eq!(m, Traffic::Matrix { dim: 3, bytes: vec![0, 96, 192, 288, 0, 48, 16, 32, 0] });
        assert_eq!(m.busiest(3), 336);
        assert_eq!(m.busiest(2), 288);
        let Traffic::Matrix { bytes, .. } = parse_matrix("10 1e3\n0.5 7", 4.0).unwrap() else { panic!() };
        assert_eq!(bytes, [32, 4000, 0, 16]);
        for (text, says) in [
            ("1 2\n3\n", "row 1 has 1 columns"),
            ("1 2\n3 4\n5 6\n", "square"),
            ("1 -2\n3 4\n", "negative"),
            ("1 x\n3 4\n", "no number"),
            ("\n \n", "no matrix"),
        ] {
            let e = parse_matrix(text, 1.0).unwrap_err();
            assert!(e.contains(says), "{text:?}: {e}");
        }
        // A peer's count is its cell over the element size, whatever the
        // count column (0 under a matrix); rank 2 receives 192 + 48 bytes.
        let f = DataType::Float;
        assert_eq!(m.count(1, 0, 3, 0, f), 72);
        assert_eq!((0..3).map(|i| m.count(i, 2, 3, 0, f)).sum::<u64>(), 60);
    }

    /// Both rules compile with NVRTC where it is present (CI requires it:
    /// QBENCH_REQUIRE_NVRTC=1), the matrix one with its table of cells.
    #[test]
    fn both_cuda_rules_compile() {
        use crate::gpu::kernels::{code, nvrtc_facts, target};
        if !crate::libs::Library::Nvrtc.loadable() {
            assert!(std::env::var_os("QBENCH_REQUIRE_NVRTC").is_none(), "NVRTC is required but not loadable");
            return;
        }
        let (_, archs) = nvrtc_facts();
        let t = target((9, 0), &archs, false).unwrap();
        let matrix = parse_matrix("0 100 200\n300 0 50\n16 32 0\n", 1.0).unwrap();
        for traffic in [Traffic::Generated { spread: 0.3 }, matrix] {
            let rule = source_cu(&traffic).replace('\n', " ");
            let source =
                format!("#define QB_SOURCES case 0: {{ {rule} }} break;\n{}", include_str!("../../../kernels/pattern.cu"));
            code("kernels/pattern.cu", &source, t).unwrap_or_else(|e| panic!("{traffic:?}: {e}"));
        }
    }
}
