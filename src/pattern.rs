//! The seeded data every check relies on. Each rank's input element is a
//! pure function of (seed, rank, index), computed the same way here and in
//! `kernels/pattern.cu`, and chosen so that every reduction result is exact
//! in the element type whatever order a library reduces in. The expected
//! value of any output element is then known exactly, so every element is
//! compared.

use crate::dtype::{DataType, Element, RedOp};

/// The seed of a run unless the user gives another (`--seed`).
pub const DEFAULT_SEED: u64 = 0x005e_ed0f_9b3e;

/// splitmix64's finaliser: a bijective 64-bit mixer.
pub fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

const GOLDEN: u64 = 0x9e37_79b9_7f4a_7c15;

/// The per-rank key of the stream of hashes.
pub fn rank_key(seed: u64, rank: usize) -> u64 {
    mix(seed ^ mix(rank as u64 + 1))
}

/// The 64 random bits of element `index` of `rank`'s input.
pub fn bits(key: u64, index: u64) -> u64 {
    mix(key.wrapping_add(index.wrapping_mul(GOLDEN)))
}

/// How input values are drawn. The numeric codes are shared with the kernels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Draw {
    /// All bits random (integers; sums and maxima wrap or compare exactly).
    Bits,
    /// Random odd integers, so a product never collapses to 0 modulo 2^k.
    OddBits,
    /// Uniform integers in [lo, lo + span - 1].
    Range { lo: i64, span: u64 },
    /// ±2^e, e in {0, 1} for the first `ranks_with_exponent` ranks and ±1
    /// for the rest: products are exact powers of two within range.
    PowerOfTwo { ranks_with_exponent: u64, signed: bool },
    /// −1, 0 or 1 on the first `ranks` ranks and 0 on the rest: a sum over
    /// more ranks than the type has exact integers stays exact.
    Few { ranks: u64 },
}

impl Draw {
    /// Kernel-side code of this draw: (kind, a, b) as passed to pattern.cu.
    pub fn encode(self) -> (u32, i64, u64) {
        match self {
            Draw::Bits => (0, 0, 0),
            Draw::OddBits => (1, 0, 0),
            Draw::Range { lo, span } => (2, lo, span),
            Draw::PowerOfTwo { ranks_with_exponent, signed } => (3, signed as i64, ranks_with_exponent),
            Draw::Few { ranks } => (4, 0, ranks),
        }
    }
}

/// The data of one run: its seed, how values are drawn, how many ranks.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pattern {
    pub seed: u64,
    pub dtype: DataType,
    pub draw: Draw,
    pub nranks: usize,
    /// Largest |actual − expected| accepted. Zero except for floating `avg`
    /// over a rank count that is not a power of two, where NCCL's
    /// multiplication by a rounded 1/n is inexact; the draw keeps this
    /// tolerance below half the distance between two possible results.
    pub tolerance: f64,
}

impl Pattern {
    /// The pattern for a collective over `nranks` ranks; `op` is None for
    /// collectives that only move data.
    pub fn new(seed: u64, dtype: DataType, op: Option<RedOp>, nranks: usize) -> Pattern {
        let n = nranks.max(1) as u64;
        let exact = dtype.exact_int_max();
        let range = |k: u64| Draw::Range { lo: -(k as i64), span: 2 * k + 1 };
        // Sums of n inputs, each counted up to `weight` times, within the
        // exact integers: a range while each rank can have ±1 or more, else
        // ±1 on as many ranks as the exact integers allow.
        let summed = |weight: u64| match exact / (weight * n) {
            0 => Draw::Few { ranks: exact / weight },
            k => range(k),
        };
        let mut tolerance = 0.0;
        let draw = match (dtype.is_float(), op) {
            (false, None | Some(RedOp::Sum | RedOp::Max | RedOp::Min | RedOp::MulSum)) => Draw::Bits,
            (false, Some(RedOp::Prod)) => Draw::OddBits,
            // Non-negative, and no overflow before the division.
            (false, Some(RedOp::Avg)) => Draw::Range { lo: 0, span: (exact / n).max(1) + 1 },
            (true, None | Some(RedOp::Max | RedOp::Min)) => range(exact),
            (true, Some(RedOp::Sum)) => summed(1),
            // Odd ranks' inputs count twice.
            (true, Some(RedOp::MulSum)) => summed(2),
            (true, Some(RedOp::Prod)) => {
                Draw::PowerOfTwo { ranks_with_exponent: n.min(dtype.max_exponent() as u64 - 1), signed: true }
            }
            (true, Some(RedOp::Avg)) => {
                let mut k = exact / n;
                if !n.is_power_of_two() {
                    let u = dtype.unit_roundoff();
                    let nf = n as f64;
                    let cap = (1.0 / (4.0 * nf * (nf + 2.0) * u)).floor().max(1.0) as u64;
                    k = k.min(cap);
                    tolerance = 2.0 * (nf + 2.0) * u * k.max(1) as f64;
                }
                if k == 0 { Draw::Few { ranks: exact } } else { range(k) }
            }
        };
        Pattern { seed, dtype, draw, nranks, tolerance }
    }

    /// The integer value of element `index` of `rank`'s input. For integer
    /// types the element is this value truncated to the type's width.
    pub fn value(&self, key: u64, rank: usize, index: u64) -> i64 {
        let h = bits(key, index);
        match self.draw {
            Draw::Bits => h as i64,
            Draw::OddBits => (h | 1) as i64,
            Draw::Range { lo, span } => lo.wrapping_add(((h as u128 * span as u128) >> 64) as i64),
            Draw::PowerOfTwo { ranks_with_exponent, signed } => {
                let magnitude = if (rank as u64) < ranks_with_exponent { 1 + ((h >> 1) & 1) as i64 } else { 1 };
                if signed && h & 1 == 1 { -magnitude } else { magnitude }
            }
            Draw::Few { ranks } if (rank as u64) < ranks => ((h as u128 * 3) >> 64) as i64 - 1,
            Draw::Few { .. } => 0,
        }
    }

    /// Every rank's key, computed once for a pass over many elements.
    pub fn keys(&self) -> Vec<u64> {
        (0..self.nranks).map(|r| rank_key(self.seed, r)).collect()
    }

    /// `rank`'s input element `index`, as the element type.
    pub fn element<T: Element>(&self, keys: &[u64], rank: usize, index: u64) -> T {
        T::from_i64(self.value(keys[rank], rank, index))
    }

    /// The reduction of element `index` over all ranks, as the library must
    /// produce it (before any tolerance).
    pub fn reduced<T: Element>(&self, keys: &[u64], op: RedOp, index: u64) -> T {
        let input = |r: usize| -> T {
            let x: T = self.element(keys, r, index);
            if op == RedOp::MulSum { x.premul(r) } else { x }
        };
        let mut acc = input(0);
        for r in 1..self.nranks {
            acc = acc.reduce(input(r), op);
        }
        if op == RedOp::Avg { T::average(acc, self.nranks) } else { acc }
    }

    /// Whether `actual` is an acceptable result where `expected` is exact.
    pub fn matches<T: Element>(&self, actual: T, expected: T) -> bool {
        if self.tolerance == 0.0 {
            actual == expected
        } else {
            (actual.to_f64() - expected.to_f64()).abs() <= self.tolerance
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use half::{bf16, f16};

    #[test]
    fn mixer_is_reference_splitmix64() {
        // splitmix64 with state 0: first output of the reference generator.
        assert_eq!(mix(GOLDEN), 0xe220_a839_7b1d_cdaf);
    }

    #[test]
    fn values_depend_on_rank_and_index() {
        let p = Pattern::new(DEFAULT_SEED, DataType::Float, Some(RedOp::Sum), 4);
        let k0 = rank_key(p.seed, 0);
        let k1 = rank_key(p.seed, 1);
        assert_ne!(p.value(k0, 0, 7), p.value(k1, 1, 7));
        assert_ne!(p.value(k0, 0, 7), p.value(k0, 0, 8));
    }

    #[test]
    fn float_sums_stay_exact_in_every_order() {
        for dt in [DataType::Half, DataType::Bfloat16] {
            for n in [2usize, 3, 8, 16] {
                let p = Pattern::new(1, dt, Some(RedOp::Sum), n);
                for i in 0..2000u64 {
                    let vals: Vec<i64> = (0..n).map(|r| p.value(rank_key(1, r), r, i)).collect();
                    let exact: i64 = vals.iter().sum();
                    let fwd = with_t(dt, &vals, false);
                    let rev = with_t(dt, &vals, true);
                    assert_eq!(fwd, exact as f64);
                    assert_eq!(rev, exact as f64);
                }
            }
        }
        fn with_t(dt: DataType, vals: &[i64], rev: bool) -> f64 {
            let mut v: Vec<i64> = vals.to_vec();
            if rev {
                v.reverse();
            }
            match dt {
                DataType::Half => {
                    v.iter().fold(f16::from_f64(0.0), |a, &x| a.reduce(f16::from_i64(x), RedOp::Sum)).to_f64()
                }
                _ => v.iter().fold(bf16::from_f64(0.0), |a, &x| a.reduce(bf16::from_i64(x), RedOp::Sum)).to_f64(),
            }
        }
    }

    /// mulsum: rank r's input counts 1 or 2 times (nccl-tests' scalar), and
    /// the premultiplied sums stay exact in half and bfloat16.
    #[test]
    fn mulsum_is_each_input_times_its_rank_scalar() {
        for (dt, n) in [
            (DataType::Half, 5usize),
            (DataType::Bfloat16, 16),
            (DataType::Int8, 3),
            (DataType::F8e4m3, 3),
            (DataType::F8e5m2, 4),
            (DataType::F8e4m3, 17),
            (DataType::F8e5m2, 9),
            (DataType::Bfloat16, 300),
        ] {
            let p = Pattern::new(1, dt, Some(RedOp::MulSum), n);
            let keys = p.keys();
            for i in 0..2000u64 {
                let exact: i64 = (0..n).map(|r| RedOp::premul_scalar(r) * p.value(keys[r], r, i)).sum();
                let got = crate::with_element!(dt, T => p.reduced::<T>(&keys, RedOp::MulSum, i).to_f64());
                let want = if dt == DataType::Int8 { exact as i8 as f64 } else { exact as f64 };
                assert_eq!(got, want, "{dt:?} n {n} i {i}");
            }
        }
        assert_eq!((RedOp::premul_scalar(0), RedOp::premul_scalar(3)), (1, 2));
    }

    /// fp8 sums are exact whatever order a library adds in: every partial
    /// sum of the drawn integers is within the type's exact integers.
    #[test]
    fn fp8_sums_are_exact_in_every_order() {
        for dt in [DataType::F8e4m3, DataType::F8e5m2] {
            for n in [2usize, 3, 4, 8, 9, 16, 17, 24, 64] {
                let p = Pattern::new(1, dt, Some(RedOp::Sum), n);
                let keys = p.keys();
                for i in 0..2000u64 {
                    let vals: Vec<i64> = (0..n).map(|r| p.value(keys[r], r, i)).collect();
                    let exact: i64 = vals.iter().sum();
                    let fold = |order: &mut dyn Iterator<Item = &i64>| {
                        crate::with_element!(dt, T => order
                            .fold(T::from_i64(0), |a, &x| a.reduce(T::from_i64(x), RedOp::Sum))
                            .to_f64())
                    };
                    assert_eq!(fold(&mut vals.iter()), exact as f64, "{dt:?} n {n} i {i}");
                    assert_eq!(fold(&mut vals.iter().rev()), exact as f64, "{dt:?} n {n} i {i}");
                }
            }
        }
    }

    #[test]
    fn products_of_powers_of_two_fit_half() {
        let p = Pattern::new(3, DataType::Half, Some(RedOp::Prod), 64);
        for i in 0..1000 {
            let r: f16 = p.reduced(&p.keys(), RedOp::Prod, i);
            assert!(r.to_f64().is_finite() && r.to_f64().abs() >= 1.0);
        }
    }

    /// (Not so for fp8: with 3 or 2 mantissa bits no draw keeps it there,
    /// and the check of an fp8 avg over a rank count that is not a power of
    /// two catches only errors beyond 2(n + 2)u.)
    #[test]
    fn avg_tolerance_is_below_half_a_step() {
        for dt in [DataType::Half, DataType::Float, DataType::Double] {
            for n in [3usize, 5, 6, 7] {
                let p = Pattern::new(1, dt, Some(RedOp::Avg), n);
                assert!(p.tolerance > 0.0 && p.tolerance < 0.5 / n as f64, "{dt:?} {n}");
            }
        }
        assert_eq!(Pattern::new(1, DataType::Float, Some(RedOp::Avg), 4).tolerance, 0.0);
    }

    #[test]
    fn a_wrong_element_never_matches() {
        let p = Pattern::new(9, DataType::Int32, Some(RedOp::Sum), 4);
        let good: i32 = p.reduced(&p.keys(), RedOp::Sum, 5);
        assert!(p.matches(good, good));
        assert!(!p.matches(good.wrapping_add(1), good));
        let pf = Pattern::new(9, DataType::Float, None, 2);
        assert!(!pf.matches(f32::NAN, f32::NAN));
    }
}
