//! C printf number formats (`%g`, `%.Ne`) and nccl-tests' width-bounded
//! number strings, so that tables match the byte layout parsers expect.

/// `%.{prec}e` as C prints it: mantissa, 'e', sign, at least two exponent digits.
pub fn exp(value: f64, prec: usize) -> String {
    if !value.is_finite() {
        return non_finite(value);
    }
    let s = format!("{value:.prec$e}");
    let (mantissa, exponent) = s.split_once('e').unwrap_or((&s, "0"));
    let e: i32 = exponent.parse().unwrap_or(0);
    format!("{mantissa}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs())
}

/// `%g` as C prints it: 6 significant digits, trailing zeros removed,
/// exponent form when the exponent is below -4 or at least 6.
pub fn g(value: f64) -> String {
    if !value.is_finite() {
        return non_finite(value);
    }
    if value == 0.0 {
        return if value.is_sign_negative() { "-0".into() } else { "0".into() };
    }
    const P: i32 = 6;
    // The exponent after rounding to P significant digits.
    let rounded = format!("{value:.prec$e}", prec = (P - 1) as usize);
    let x: i32 = rounded.split_once('e').map_or(0, |(_, e)| e.parse().unwrap_or(0));
    if !(-4..P).contains(&x) {
        let s = exp(value, (P - 1) as usize);
        let (m, e) = s.split_once('e').unwrap_or((&s, ""));
        format!("{}e{e}", strip_zeros(m))
    } else {
        strip_zeros(&format!("{value:.prec$}", prec = (P - 1 - x) as usize))
    }
}

fn strip_zeros(s: &str) -> String {
    if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.').to_string() } else { s.to_string() }
}

fn non_finite(value: f64) -> String {
    match (value.is_nan(), value.is_sign_negative()) {
        (true, _) => "nan".into(),
        (false, true) => "-inf".into(),
        (false, false) => "inf".into(),
    }
}

/// nccl-tests' getFloatStr: two decimals while the integer part leaves room
/// in `width`, then fewer, then exponent form.
pub fn bounded(value: f64, width: usize) -> String {
    if !value.is_finite() {
        return format!("{:>width$}", non_finite(value));
    }
    let mut power = 0usize;
    let mut val = 1f64;
    while value >= val {
        power += 1;
        val *= 10.0;
    }
    if power + 2 < width {
        format!("{value:>width$.2}")
    } else if power + 1 < width {
        format!("{value:>width$.1}")
    } else if power < width + 1 {
        format!("{value:>width$.0}")
    } else {
        format!("{:>width$}", exp(value, if width >= 7 { 1 } else { 0 }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn g_matches_c() {
        for (v, want) in [
            (0.0, "0"),
            (1.0, "1"),
            (275.7154321, "275.715"),
            (1048576.0, "1.04858e+06"),
            (0.0001234, "0.0001234"),
            (0.00001234, "1.234e-05"),
            (100000.0, "100000"),
            (999999.5, "1e+06"),
            (f64::NAN, "nan"),
        ] {
            assert_eq!(g(v), want, "{v}");
        }
    }

    #[test]
    fn exp_matches_c() {
        assert_eq!(exp(12345678.0, 1), "1.2e+07");
        assert_eq!(exp(1234567.0, 0), "1e+06");
        assert_eq!(exp(0.00012, 2), "1.20e-04");
    }

    #[test]
    fn bounded_matches_nccl_tests() {
        assert_eq!(bounded(78.29, 7), "  78.29");
        assert_eq!(bounded(9999.994, 7), "9999.99");
        assert_eq!(bounded(12345.67, 7), "12345.7");
        assert_eq!(bounded(123456.7, 7), " 123457");
        assert_eq!(bounded(12345678.0, 7), "1.2e+07");
        assert_eq!(bounded(214.29, 6), "214.29");
        assert_eq!(bounded(4247.3, 6), "4247.3");
        assert_eq!(bounded(12345.0, 6), " 12345");
        assert_eq!(bounded(0.0, 6), "  0.00");
        assert_eq!(bounded(f64::NAN, 7), "    nan");
    }
}
