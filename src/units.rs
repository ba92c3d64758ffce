//! Byte sizes as users type them ("16M", "1G", binary multiples as in
//! nccl-tests), the size sweep of a run, and human formatting of sizes.

use crate::error::{Error, Result};

/// Parses "16M", "1.5G", "4096", "64k". K/M/G/T are powers of 1024, as in
/// nccl-tests; an optional trailing "B" or "iB" is accepted.
pub fn parse_size(text: &str) -> Result<u64> {
    let t = text.trim();
    let bad = || {
        Error::Usage(format!(
            "invalid size '{}': expected a number with an optional K, M, G or T suffix (binary, e.g. 16M = 16777216)",
            crate::input::token(text)
        ))
    };
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, suffix) = t.split_at(split);
    if num.is_empty() {
        return Err(bad());
    }
    let value: f64 = num.parse().map_err(|_| bad())?;
    let suffix = suffix.trim();
    let unit_char = suffix.strip_suffix("iB").or_else(|| suffix.strip_suffix('B')).unwrap_or(suffix);
    let mult: u64 = match unit_char {
        "" => 1,
        "K" | "k" => 1 << 10,
        "M" | "m" => 1 << 20,
        "G" | "g" => 1 << 30,
        "T" | "t" => 1 << 40,
        _ => return Err(bad()),
    };
    let bytes = value * mult as f64;
    if !bytes.is_finite() || bytes >= u64::MAX as f64 {
        return Err(Error::Usage(format!(
            "size '{}' is too large: at most 16 EiB (2^64 bytes) can be counted",
            crate::input::token(text)
        )));
    }
    Ok(bytes as u64)
}

/// Formats a byte count with the largest binary unit that divides it evenly
/// ("16M", "1G", "1536K"), or plain bytes.
pub fn format_size(bytes: u64) -> String {
    const UNITS: [(u64, &str); 4] = [(1 << 40, "T"), (1 << 30, "G"), (1 << 20, "M"), (1 << 10, "K")];
    for (mult, unit) in UNITS {
        if bytes >= mult && bytes.is_multiple_of(mult) {
            return format!("{}{}", bytes / mult, unit);
        }
    }
    format!("{bytes}B")
}

/// Bytes for people: one decimal in the largest binary unit that holds
/// them ("96.0 GiB", "8.0 EiB", "512 B").
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let mut v = bytes as f64;
    let mut unit = None;
    for u in UNITS {
        if v < 1024.0 {
            break;
        }
        v /= 1024.0;
        unit = Some(u);
    }
    match unit {
        Some(u) => format!("{v:.1} {u}"),
        None => format!("{bytes} B"),
    }
}

/// Seconds in the unit that shows three figures: s, ms or µs.
pub fn human_seconds(t: f64) -> String {
    let (v, unit) = if t >= 1.0 {
        (t, "s")
    } else if t >= 1e-3 {
        (t * 1e3, "ms")
    } else {
        (t * 1e6, "µs")
    };
    let digits = if v >= 100.0 {
        0
    } else if v >= 10.0 {
        1
    } else {
        2
    };
    format!("{v:.digits$} {unit}")
}

/// How sizes grow between -b and -e: by a factor (-f > 1) or by a step (-i).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Growth {
    Factor(u64),
    Bytes(u64),
}

/// The sizes of a sweep from `min` to `max` inclusive, as nccl-tests walks
/// them: `size *= factor` when the factor is above 1, else `size += step`.
pub fn sweep(min: u64, max: u64, step: Growth) -> Result<Vec<u64>> {
    if min > max {
        return Err(Error::Usage(format!("minimum size {min} (-b) is larger than maximum size {max} (-e)")));
    }
    let mut sizes = Vec::new();
    let mut size = min;
    loop {
        sizes.push(size);
        let next = match step {
            Growth::Factor(f) if f > 1 => size.checked_mul(f),
            Growth::Factor(_) => return Err(Error::Usage("step factor (-f) must be 2 or more".into())),
            Growth::Bytes(0) if min != max => {
                return Err(Error::Usage("step bytes (-i) must be above 0 when -b differs from -e".into()));
            }
            Growth::Bytes(0) => None,
            Growth::Bytes(b) => size.checked_add(b),
        };
        match next {
            // A zero start with a factor would never grow: nccl-tests steps 0 -> factor.
            Some(0) => size = 1,
            Some(n) if n <= max && n > size => size = n,
            _ => break,
        }
        if sizes.len() > 100_000 {
            return Err(Error::Usage("the sweep has more than 100000 sizes; use a larger -i or -f".into()));
        }
    }
    Ok(sizes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_binary_suffixes() {
        assert_eq!(parse_size("16M").unwrap(), 16 << 20);
        assert_eq!(parse_size("1G").unwrap(), 1 << 30);
        assert_eq!(parse_size("64k").unwrap(), 64 << 10);
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert_eq!(parse_size("1.5K").unwrap(), 1536);
        assert_eq!(parse_size("2GiB").unwrap(), 2 << 30);
        assert_eq!(parse_size("8MB").unwrap(), 8 << 20);
        assert_eq!(parse_size("1T").unwrap(), 1 << 40);
    }

    #[test]
    fn rejects_bad_sizes() {
        for bad in ["", "M", "12Q", "1..2M", "-4M", "1e3", "16 MM", "99999999999999999999T"] {
            let err = parse_size(bad).unwrap_err();
            assert_eq!(err.exit_code(), 2, "{bad}");
        }
    }

    #[test]
    fn formats_sizes() {
        assert_eq!(format_size(16 << 20), "16M");
        assert_eq!(format_size(1 << 30), "1G");
        assert_eq!(format_size(1536), "1536B");
        assert_eq!(format_size(3 << 10), "3K");
        assert_eq!(format_size(7), "7B");
    }

    #[test]
    fn sweeps_by_factor_and_step() {
        assert_eq!(sweep(16 << 20, 1 << 30, Growth::Factor(2)).unwrap().len(), 7);
        assert_eq!(sweep(1 << 20, 64 << 20, Growth::Factor(2)).unwrap().last(), Some(&(64 << 20)));
        assert_eq!(sweep(10, 40, Growth::Bytes(10)).unwrap(), vec![10, 20, 30, 40]);
        assert_eq!(sweep(10, 45, Growth::Bytes(10)).unwrap(), vec![10, 20, 30, 40]);
        assert_eq!(sweep(32, 32, Growth::Bytes(0)).unwrap(), vec![32]);
        assert_eq!(sweep(0, 8, Growth::Factor(2)).unwrap(), vec![0, 1, 2, 4, 8]);
    }

    #[test]
    fn sweep_rejects_inverted_and_stuck_ranges() {
        assert_eq!(sweep(2 << 20, 1 << 20, Growth::Factor(2)).unwrap_err().exit_code(), 2);
        assert_eq!(sweep(1, 8, Growth::Bytes(0)).unwrap_err().exit_code(), 2);
        assert_eq!(sweep(1, 8, Growth::Factor(1)).unwrap_err().exit_code(), 2);
        assert!(sweep(1, 1 << 40, Growth::Bytes(1)).is_err());
    }

    #[test]
    fn times_show_three_figures_in_their_unit() {
        assert_eq!(human_seconds(1.234), "1.23 s");
        assert_eq!(human_seconds(0.0123), "12.3 ms");
        assert_eq!(human_seconds(0.000_045_6), "45.6 µs");
        assert_eq!(human_seconds(250.0), "250 s");
    }
}
