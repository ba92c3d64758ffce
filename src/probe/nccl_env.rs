//! NCCL's own reading of its environment variables, reproduced so that a
//! value is judged exactly as NCCL will take it: the interface and HCA
//! lists, integers, path levels and the algorithm and protocol lists.

/// NCCL's MAX_IB_DEVS (src/include/net_ib.h): entries of NCCL_IB_HCA read.
pub const MAX_IB_DEVS: usize = 32;
/// NCCL's MAX_IFS (src/include/socket.h): entries of NCCL_SOCKET_IFNAME read.
pub const MAX_IFS: usize = 16;

/// One `name[:port]` entry; port -1 matches any port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListEntry {
    pub prefix: String,
    pub port: i32,
}

/// A parsed NCCL_IB_HCA or NCCL_SOCKET_IFNAME value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IfList {
    /// `^`: use everything the list does not match.
    pub exclude: bool,
    /// `=`: names must match whole, not as prefixes.
    pub exact: bool,
    pub entries: Vec<ListEntry>,
}

impl IfList {
    /// As net_ib's device scan and socket.cc's findInterfaces read it: a
    /// leading `^`, then a leading `=`, then parseStringList
    /// (src/misc/utils.cc): comma-separated entries, `name:port` taking
    /// atoi of what follows the colon (so `mlx5_0:` is port 0, which no
    /// port has), empty names skipped, at most `max` entries kept.
    pub fn parse(value: &str, max: usize) -> IfList {
        let (exclude, rest) = match value.strip_prefix('^') {
            Some(r) => (true, r),
            None => (false, value),
        };
        let (exact, rest) = match rest.strip_prefix('=') {
            Some(r) => (true, r),
            None => (false, rest),
        };
        let entries = rest
            .split(',')
            .filter_map(|item| {
                let (name, port) = match item.split_once(':') {
                    Some((name, port)) => (name, atoi(port)),
                    None => (item, -1),
                };
                (!name.is_empty()).then(|| ListEntry { prefix: name.to_string(), port })
            })
            .take(max)
            .collect();
        IfList { exclude, exact, entries }
    }

    /// Whether `entry` names device or interface `name` on `port` (-1 for
    /// interfaces): matchIf and matchPort of src/misc/utils.cc. A prefix
    /// match unless `=`, so `mlx5_1` also names `mlx5_10`.
    pub fn entry_matches(&self, entry: &ListEntry, name: &str, port: i32) -> bool {
        let name_ok = if self.exact { name == entry.prefix } else { name.starts_with(&entry.prefix) };
        name_ok && (port == -1 || entry.port == -1 || port == entry.port)
    }

    /// Whether NCCL uses `name` on `port`: matchIfList(...) ^ searchNot.
    /// An empty list matches everything, so `^` alone excludes everything.
    pub fn selects(&self, name: &str, port: i32) -> bool {
        let listed = self.entries.is_empty() || self.entries.iter().any(|e| self.entry_matches(e, name, port));
        listed != self.exclude
    }
}

/// C's atoi: optional blanks and sign, then decimal digits; 0 when none.
fn atoi(text: &str) -> i32 {
    strtoll(text, 10).map_or(0, |p| p.value.clamp(i32::MIN as i64, i32::MAX as i64) as i32)
}

/// An integer as C's strtoll read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParsedInt {
    pub value: i64,
    /// Whether every character was part of the number.
    pub whole: bool,
}

/// C's strtoll(text, NULL, base) with base 10 or 0 (0x hex, 0 octal):
/// leading blanks, a sign, the longest run of digits; 0 when there are
/// none; None when the number overflows (ERANGE). NCCL reads every integer
/// variable with base 0 (ncclLoadParam, src/misc/param.cc).
pub fn strtoll(text: &str, base: u32) -> Option<ParsedInt> {
    let trimmed = text.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    let (negative, unsigned) = match trimmed.as_bytes().first() {
        Some(b'-') => (true, &trimmed[1..]),
        Some(b'+') => (false, &trimmed[1..]),
        _ => (false, trimmed),
    };
    let hex = base == 0 && (unsigned.starts_with("0x") || unsigned.starts_with("0X"));
    let (radix, digits) = if hex && unsigned[2..].starts_with(|c: char| c.is_ascii_hexdigit()) {
        (16, &unsigned[2..])
    } else if base == 0 && unsigned.starts_with('0') {
        (8, unsigned)
    } else {
        (10, unsigned)
    };
    let len = digits.find(|c: char| !c.is_digit(radix)).unwrap_or(digits.len());
    if len == 0 {
        return Some(ParsedInt { value: 0, whole: text.is_empty() });
    }
    let magnitude = i128::from_str_radix(&digits[..len], radix).ok()?;
    let value = if negative { -magnitude } else { magnitude };
    let value = i64::try_from(value).ok()?;
    Some(ParsedInt { value, whole: len == digits.len() })
}

/// NCCL's path type names (topoPathTypeStr, src/graph/paths.cc), in rank
/// order: the index is the rank compared with path types.
const PATH_NAMES: [&str; 10] = ["LOC", "NVL", "NVB", "C2C", "PIX", "PXB", "P2C", "PXN", "PHB", "SYS"];
/// Old numeric levels: 0 LOC, 1 PIX, 2 PXB, 3 PHB, 4 and above SYS.
const OLD_LEVELS: [u8; 6] = [0, 4, 5, 8, 9, 9];

/// A level such as NCCL_NET_GDR_LEVEL: the highest path rank allowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Level {
    pub rank: u8,
}

impl Level {
    /// NCCL_NET_GDR_LEVEL's default on PCIe systems (ncclTopoCheckGdr).
    pub const DEFAULT_GDR: Level = Level { rank: 5 };

    /// As ncclGetLevel reads it: a name, case-sensitive, or an old-style
    /// number; anything else is ignored by NCCL (None).
    pub fn parse(text: &str) -> Option<Level> {
        if let Some(rank) = PATH_NAMES.iter().position(|n| *n == text) {
            return Some(Level { rank: rank as u8 });
        }
        if text.starts_with(|c: char| c.is_ascii_digit()) {
            let old = strtoll(text, 0).map_or(i64::MAX, |p| p.value);
            return Some(Level { rank: OLD_LEVELS[old.clamp(0, OLD_LEVELS.len() as i64 - 1) as usize] });
        }
        None
    }

    pub fn name(self) -> &'static str {
        PATH_NAMES[self.rank as usize]
    }
}

/// NCCL's algorithm names (ncclAlgoStr).
pub const ALGORITHMS: [&str; 7] = ["Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT"];
/// NCCL's protocol names (ncclProtoStr).
pub const PROTOCOLS: [&str; 3] = ["LL", "LL128", "Simple"];
/// The collectives a list entry may be prefixed with (ncclFuncStr).
const FUNCTIONS: [&str; 5] = ["Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce"];

/// Checks NCCL_ALGO or NCCL_PROTO as parseList (src/graph/tuning.cc) does:
/// `[func:][^]elem,elem;func:…`, names case-insensitive; the error is the
/// reason NCCL refuses to create a communicator.
pub fn check_tuning_list(text: &str, elems: &[&str]) -> Result<(), String> {
    for (i, entry) in text.split(';').filter(|e| !e.is_empty()).enumerate() {
        let mut parts = entry.split(':').filter(|p| !p.is_empty());
        let (prefix, list) = match (parts.next(), parts.next()) {
            (Some(prefix), Some(list)) => (Some(prefix), list),
            (Some(list), None) if i == 0 => (None, list),
            _ => {
                return Err(format!("all entries except the first need a collective prefix: {entry:?}"));
            }
        };
        if let Some(p) = prefix.filter(|p| !FUNCTIONS.iter().any(|f| f.eq_ignore_ascii_case(p))) {
            return Err(format!("unknown collective {p:?} (use {})", FUNCTIONS.join(", ")));
        }
        let list = list.strip_prefix('^').unwrap_or(list);
        if let Some(bad) =
            list.split(',').filter(|e| !e.is_empty()).find(|e| !elems.iter().any(|n| n.eq_ignore_ascii_case(e)))
        {
            return Err(format!("unknown name {bad:?} (use {})", elems.join(", ")));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hca(value: &str) -> IfList {
        IfList::parse(value, MAX_IB_DEVS)
    }

    #[test]
    fn hca_prefix_matches_longer_names() {
        let l = hca("mlx5_1");
        assert!(l.selects("mlx5_1", 1));
        assert!(l.selects("mlx5_10", 1));
        assert!(l.selects("mlx5_19", 2));
        assert!(!l.selects("mlx5_0", 1));
        assert!(!l.selects("mlx4_1", 1));
    }

    #[test]
    fn hca_exact_match_with_equals() {
        let l = hca("=mlx5_1");
        assert!(l.exact);
        assert!(l.selects("mlx5_1", 1));
        assert!(!l.selects("mlx5_10", 1));
    }

    #[test]
    fn hca_caret_excludes() {
        let l = hca("^mlx5_0");
        assert!(!l.selects("mlx5_0", 1));
        assert!(!l.selects("mlx5_01", 1));
        assert!(l.selects("mlx5_1", 1));
        // ^ then =, in that order only.
        let l = hca("^=mlx5_1");
        assert!(l.exclude && l.exact);
        assert!(!l.selects("mlx5_1", 1));
        assert!(l.selects("mlx5_10", 1));
        let l = hca("=^mlx5_1");
        assert!(!l.exclude);
        assert!(!l.selects("mlx5_1", 1));
        // An empty list selects all; `^` with nothing after it selects none.
        assert!(hca("").selects("mlx5_0", 1));
        assert!(!hca("^").selects("mlx5_0", 1));
    }

    #[test]
    fn hca_ports() {
        let l = hca("mlx5_0:1,mlx5_1:2");
        assert_eq!(
            l.entries,
            [ListEntry { prefix: "mlx5_0".into(), port: 1 }, ListEntry { prefix: "mlx5_1".into(), port: 2 }]
        );
        assert!(l.selects("mlx5_0", 1));
        assert!(!l.selects("mlx5_0", 2));
        assert!(l.selects("mlx5_1", 2));
        assert!(!l.selects("mlx5_1", 1));
        // atoi: junk after the digits is ignored, no digits is port 0.
        assert_eq!(hca("mlx5_0:1x").entries[0].port, 1);
        assert_eq!(hca("mlx5_0:").entries[0].port, 0);
        assert!(!hca("mlx5_0:").selects("mlx5_0", 1));
        // Empty entries and names vanish.
        assert_eq!(hca(",mlx5_0,,:1,").entries, [ListEntry { prefix: "mlx5_0".into(), port: -1 }]);
        assert_eq!(IfList::parse("a,b,c", 2).entries.len(), 2);
    }

    #[test]
    fn socket_names_match_any_port() {
        let l = IfList::parse("ib", MAX_IFS);
        assert!(l.selects("ib0", -1));
        assert!(!l.selects("eth0", -1));
        let l = IfList::parse("^docker,lo", MAX_IFS);
        assert!(l.selects("eth0", -1));
        assert!(!l.selects("docker0", -1));
        assert!(!l.selects("lo", -1));
        assert!(IfList::parse("=eth0", MAX_IFS).selects("eth0", -1));
        assert!(!IfList::parse("=eth0", MAX_IFS).selects("eth0.100", -1));
    }

    #[test]
    fn integers_read_like_strtoll() {
        let v = |t: &str| strtoll(t, 0).map(|p| (p.value, p.whole));
        assert_eq!(v("1"), Some((1, true)));
        assert_eq!(v(" -3"), Some((-3, true)));
        assert_eq!(v("0x10"), Some((16, true)));
        assert_eq!(v("010"), Some((8, true)));
        assert_eq!(v("08"), Some((0, false)));
        assert_eq!(v("1abc"), Some((1, false)));
        assert_eq!(v("yes"), Some((0, false)));
        assert_eq!(v("0x"), Some((0, false)));
        assert_eq!(v("99999999999999999999"), None);
        assert_eq!(atoi("12:3"), 12);
    }

    #[test]
    fn levels_read_like_nccl_get_level() {
        assert_eq!(Level::parse("PXB"), Some(Level { rank: 5 }));
        assert_eq!(Level::parse("SYS").map(Level::name), Some("SYS"));
        assert_eq!(Level::parse("pxb"), None);
        assert_eq!(Level::parse("2").map(Level::name), Some("PXB"));
        assert_eq!(Level::parse("3").map(Level::name), Some("PHB"));
        assert_eq!(Level::parse("7").map(Level::name), Some("SYS"));
        assert_eq!(Level::DEFAULT_GDR.name(), "PXB");
    }

    #[test]
    fn tuning_lists() {
        assert!(check_tuning_list("Ring", &ALGORITHMS).is_ok());
        assert!(check_tuning_list("ring,tree;allreduce:^nvls", &ALGORITHMS).is_ok());
        assert!(check_tuning_list("^LL128", &PROTOCOLS).is_ok());
        assert!(check_tuning_list("rings", &ALGORITHMS).unwrap_err().contains("\"rings\""));
        assert!(check_tuning_list("ring;tree", &ALGORITHMS).is_err());
        assert!(check_tuning_list("allgather:ring;bcast:ring", &ALGORITHMS).is_err());
    }
}
