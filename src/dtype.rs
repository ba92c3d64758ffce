//! The data types and reduction operations of the collectives, named and
//! parsed as nccl-tests names them, and the host-side element arithmetic the
//! cpu transport and the reference checks share.

use crate::error::{Error, Result};
use float8::{F8E4M3, F8E5M2};
use half::{bf16, f16};
use serde::{Deserialize, Serialize};

/// An element type of a collective buffer (nccl-tests `-d`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DataType {
    Int8,
    Uint8,
    Int32,
    Uint32,
    Int64,
    Uint64,
    Half,
    Float,
    Double,
    Bfloat16,
    /// OCP 8-bit float, 4 exponent and 3 mantissa bits, no infinity (NCCL 2.24 and later).
    F8e4m3,
    /// OCP 8-bit float, 5 exponent and 2 mantissa bits (NCCL 2.24 and later).
    F8e5m2,
}

impl DataType {
    /// Every type, in the order `-d all` runs them (nccl-tests' order).
    pub const ALL: [DataType; 12] = [
        DataType::Int8,
        DataType::Uint8,
        DataType::Int32,
        DataType::Uint32,
        DataType::Int64,
        DataType::Uint64,
        DataType::Half,
        DataType::Float,
        DataType::Double,
        DataType::Bfloat16,
        DataType::F8e4m3,
        DataType::F8e5m2,
    ];

    /// The name nccl-tests prints in its `type` column.
    pub fn name(self) -> &'static str {
        match self {
            DataType::Int8 => "int8",
            DataType::Uint8 => "uint8",
            DataType::Int32 => "int32",
            DataType::Uint32 => "uint32",
            DataType::Int64 => "int64",
            DataType::Uint64 => "uint64",
            DataType::Half => "half",
            DataType::Float => "float",
            DataType::Double => "double",
            DataType::Bfloat16 => "bfloat16",
            DataType::F8e4m3 => "f8e4m3",
            DataType::F8e5m2 => "f8e5m2",
        }
    }

    pub fn size(self) -> usize {
        match self {
            DataType::Int8 | DataType::Uint8 | DataType::F8e4m3 | DataType::F8e5m2 => 1,
            DataType::Half | DataType::Bfloat16 => 2,
            DataType::Int32 | DataType::Uint32 | DataType::Float => 4,
            DataType::Int64 | DataType::Uint64 | DataType::Double => 8,
        }
    }

    pub fn is_float(self) -> bool {
        matches!(
            self,
            DataType::Half
                | DataType::Float
                | DataType::Double
                | DataType::Bfloat16
                | DataType::F8e4m3
                | DataType::F8e5m2
        )
    }

    pub fn is_fp8(self) -> bool {
        matches!(self, DataType::F8e4m3 | DataType::F8e5m2)
    }

    /// The largest magnitude M such that every integer in [-M, M] is exact in
    /// this type (for integer types: the largest value of the type).
    pub fn exact_int_max(self) -> u64 {
        match self {
            DataType::Int8 => i8::MAX as u64,
            DataType::Uint8 => u8::MAX as u64,
            DataType::Int32 => i32::MAX as u64,
            DataType::Uint32 => u32::MAX as u64,
            DataType::Int64 => i64::MAX as u64,
            DataType::Uint64 => u64::MAX,
            DataType::Half => 1 << 11,
            DataType::Bfloat16 => 1 << 8,
            DataType::F8e4m3 => 1 << 4,
            DataType::F8e5m2 => 1 << 3,
            DataType::Float => 1 << 24,
            DataType::Double => 1 << 53,
        }
    }

    /// Unit roundoff of a floating type (half the distance from 1 to the
    /// next representable number); 0 for integer types.
    pub fn unit_roundoff(self) -> f64 {
        match self {
            DataType::Half => 2f64.powi(-11),
            DataType::Bfloat16 => 2f64.powi(-8),
            DataType::F8e4m3 => 2f64.powi(-4),
            DataType::F8e5m2 => 2f64.powi(-3),
            DataType::Float => 2f64.powi(-24),
            DataType::Double => 2f64.powi(-53),
            _ => 0.0,
        }
    }

    /// Largest power-of-two exponent the type holds (for product data).
    pub fn max_exponent(self) -> u32 {
        match self {
            DataType::Half | DataType::F8e5m2 => 15,
            DataType::F8e4m3 => 8,
            DataType::Bfloat16 | DataType::Float => 127,
            DataType::Double => 1023,
            DataType::Int8 | DataType::Uint8 => 7,
            DataType::Int32 | DataType::Uint32 => 31,
            DataType::Int64 | DataType::Uint64 => 63,
        }
    }

    pub fn parse(text: &str) -> Result<Vec<DataType>> {
        let t = match text {
            "all" => return Ok(Self::ALL.to_vec()),
            "int8" | "char" => DataType::Int8,
            "uint8" => DataType::Uint8,
            "int32" | "int" => DataType::Int32,
            "uint32" => DataType::Uint32,
            "int64" => DataType::Int64,
            "uint64" => DataType::Uint64,
            "half" | "float16" | "fp16" => DataType::Half,
            "float" | "float32" | "fp32" => DataType::Float,
            "double" | "float64" | "fp64" => DataType::Double,
            "bfloat16" | "bf16" => DataType::Bfloat16,
            "f8e4m3" | "fp8_e4m3" => DataType::F8e4m3,
            "f8e5m2" | "fp8_e5m2" => DataType::F8e5m2,
            _ => {
                return Err(Error::Usage(format!(
                    "unknown data type '{text}' (-d): use int8, uint8, int32, uint32, int64, uint64, half, float, double, bfloat16, f8e4m3, f8e5m2 or all"
                )));
            }
        };
        Ok(vec![t])
    }
}

/// A reduction operation (nccl-tests `-o`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RedOp {
    Sum,
    Prod,
    Max,
    Min,
    Avg,
    /// nccl-tests' `mulsum`: a sum of each rank's input times its scalar
    /// (ncclRedOpCreatePreMulSum), 1 on even ranks and 2 on odd ones.
    MulSum,
}

impl RedOp {
    /// Every operation, in the order `-o all` runs them.
    pub const ALL: [RedOp; 6] = [RedOp::Sum, RedOp::Prod, RedOp::Max, RedOp::Min, RedOp::Avg, RedOp::MulSum];

    /// `mulsum`'s scalar of `rank`: nccl-tests' ncclVerifiablePremulScalar.
    pub fn premul_scalar(rank: usize) -> i64 {
        if rank.is_multiple_of(2) { 1 } else { 2 }
    }

    pub fn name(self) -> &'static str {
        match self {
            RedOp::Sum => "sum",
            RedOp::Prod => "prod",
            RedOp::Max => "max",
            RedOp::Min => "min",
            RedOp::Avg => "avg",
            RedOp::MulSum => "mulsum",
        }
    }

    pub fn parse(text: &str) -> Result<Vec<RedOp>> {
        let op = match text {
            "all" => return Ok(Self::ALL.to_vec()),
            "sum" => RedOp::Sum,
            "prod" => RedOp::Prod,
            "max" => RedOp::Max,
            "min" => RedOp::Min,
            "avg" => RedOp::Avg,
            "mulsum" => RedOp::MulSum,
            _ => {
                return Err(Error::Usage(format!(
                    "unknown reduction op '{text}' (-o): use sum, prod, max, min, avg, mulsum or all"
                )));
            }
        };
        Ok(vec![op])
    }
}

/// Host arithmetic on one element type. Integer arithmetic wraps (as NCCL's
/// does); floating values go through f64, which is exact for the data qbench
/// generates.
pub trait Element: bytemuck::Pod + Send + Sync + PartialEq + 'static {
    const TYPE: DataType;
    /// The element nearest to an integer-valued or dyadic `v` (exact for
    /// qbench's data); integers wrap modulo their width.
    fn from_i64(v: i64) -> Self;
    fn to_f64(self) -> f64;
    fn reduce(self, other: Self, op: RedOp) -> Self;
    /// Divides a sum by the rank count the way NCCL finishes `avg`: integer
    /// division truncating toward zero for integers, multiplication by the
    /// rounded reciprocal for floating types (done before the sum by NCCL;
    /// the data keeps both orders exact or within the checked tolerance).
    fn average(sum: Self, nranks: usize) -> Self;
    /// `rank`'s input as `mulsum` adds it: times its scalar (doubling is
    /// exact for qbench's data; integers wrap).
    fn premul(self, rank: usize) -> Self {
        if RedOp::premul_scalar(rank) == 2 { self.reduce(self, RedOp::Sum) } else { self }
    }
}

macro_rules! int_element {
    ($t:ty, $dt:expr) => {
        impl Element for $t {
            const TYPE: DataType = $dt;
            fn from_i64(v: i64) -> Self {
                v as $t
            }
            fn to_f64(self) -> f64 {
                self as f64
            }
            fn reduce(self, other: Self, op: RedOp) -> Self {
                match op {
                    RedOp::Sum | RedOp::Avg | RedOp::MulSum => self.wrapping_add(other),
                    RedOp::Prod => self.wrapping_mul(other),
                    RedOp::Max => self.max(other),
                    RedOp::Min => self.min(other),
                }
            }
            fn average(sum: Self, nranks: usize) -> Self {
                (sum as i128 / nranks as i128) as $t
            }
        }
    };
}

int_element!(i8, DataType::Int8);
int_element!(u8, DataType::Uint8);
int_element!(i32, DataType::Int32);
int_element!(u32, DataType::Uint32);
int_element!(i64, DataType::Int64);
int_element!(u64, DataType::Uint64);

macro_rules! float_element {
    ($t:ty, $dt:expr, $from:expr, $to:expr) => {
        impl Element for $t {
            const TYPE: DataType = $dt;
            fn from_i64(v: i64) -> Self {
                $from(v as f64)
            }
            fn to_f64(self) -> f64 {
                $to(self)
            }
            fn reduce(self, other: Self, op: RedOp) -> Self {
                let (a, b) = ($to(self), $to(other));
                $from(match op {
                    RedOp::Sum | RedOp::Avg | RedOp::MulSum => a + b,
                    RedOp::Prod => a * b,
                    RedOp::Max => a.max(b),
                    RedOp::Min => a.min(b),
                })
            }
            fn average(sum: Self, nranks: usize) -> Self {
                $from($to(sum) / nranks as f64)
            }
        }
    };
}

float_element!(f16, DataType::Half, f16::from_f64, f16::to_f64);
float_element!(bf16, DataType::Bfloat16, bf16::from_f64, bf16::to_f64);
float_element!(f32, DataType::Float, |v: f64| v as f32, |x: f32| x as f64);
float_element!(f64, DataType::Double, |v: f64| v, |x: f64| x);
// CUDA's conversions (cuda_fp8.hpp): round to nearest even, saturating to
// the largest finite value.
// (to_f32, exact, is no method of Element's: to_f64 would call itself.)
float_element!(F8E4M3, DataType::F8e4m3, F8E4M3::from_f64, |x: F8E4M3| x.to_f32() as f64);
float_element!(F8E5M2, DataType::F8e5m2, F8E5M2::from_f64, |x: F8E5M2| x.to_f32() as f64);

/// Runs `$body` with `$T` bound to the Rust element type of `$dt`.
#[macro_export]
macro_rules! with_element {
    ($dt:expr, $T:ident => $body:expr) => {
        match $dt {
            $crate::dtype::DataType::Int8 => {
                type $T = i8;
                $body
            }
            $crate::dtype::DataType::Uint8 => {
                type $T = u8;
                $body
            }
            $crate::dtype::DataType::Int32 => {
                type $T = i32;
                $body
            }
            $crate::dtype::DataType::Uint32 => {
                type $T = u32;
                $body
            }
            $crate::dtype::DataType::Int64 => {
                type $T = i64;
                $body
            }
            $crate::dtype::DataType::Uint64 => {
                type $T = u64;
                $body
            }
            $crate::dtype::DataType::Half => {
                type $T = half::f16;
                $body
            }
            $crate::dtype::DataType::Float => {
                type $T = f32;
                $body
            }
            $crate::dtype::DataType::Double => {
                type $T = f64;
                $body
            }
            $crate::dtype::DataType::Bfloat16 => {
                type $T = half::bf16;
                $body
            }
            $crate::dtype::DataType::F8e4m3 => {
                type $T = float8::F8E4M3;
                $body
            }
            $crate::dtype::DataType::F8e5m2 => {
                type $T = float8::F8E5M2;
                $body
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_names_and_all() {
        assert_eq!(DataType::parse("float").unwrap(), vec![DataType::Float]);
        assert_eq!(DataType::parse("all").unwrap().len(), 12, "nccl-tests 2.19 with NCCL 2.24+: fp8 last");
        assert_eq!(RedOp::parse("all").unwrap().len(), 6, "nccl-tests 2.19 runs six ops, mulsum last");
        assert_eq!(RedOp::parse("mulsum").unwrap(), vec![RedOp::MulSum]);
        assert_eq!(DataType::parse("float128").unwrap_err().exit_code(), 2);
        assert_eq!(RedOp::parse("xor").unwrap_err().exit_code(), 2);
    }

    #[test]
    fn element_sizes_match_types() {
        fn check<T: Element>() {
            assert_eq!(std::mem::size_of::<T>(), T::TYPE.size());
        }
        check::<i8>();
        check::<u8>();
        check::<i32>();
        check::<u32>();
        check::<i64>();
        check::<u64>();
        check::<f16>();
        check::<bf16>();
        check::<f32>();
        check::<f64>();
        check::<F8E4M3>();
        check::<F8E5M2>();
    }

    /// The fp8 types hold their exact integers, round to nearest even and
    /// saturate as CUDA's conversions do.
    #[test]
    fn fp8_types_are_exact_on_their_integers_and_saturate() {
        for v in -16..=16 {
            assert_eq!(F8E4M3::from_i64(v).to_f64(), v as f64);
        }
        for v in -8..=8 {
            assert_eq!(F8E5M2::from_i64(v).to_f64(), v as f64);
        }
        assert_eq!(F8E4M3::from_i64(17).to_f64(), 16.0, "17 is a tie: to the even 16");
        assert_eq!(F8E4M3::from_i64(1000).to_f64(), 448.0);
        assert_eq!(F8E5M2::from_i64(100_000).to_f64(), 57344.0);
        assert_eq!(F8E4M3::from_i64(-3).reduce(F8E4M3::from_i64(4), RedOp::Prod).to_f64(), -12.0);
    }

    #[test]
    fn integer_arithmetic_wraps_and_truncates() {
        assert_eq!(100i8.reduce(100, RedOp::Sum), -56);
        assert_eq!(200u8.reduce(2, RedOp::Prod), 144);
        assert_eq!(<i32 as Element>::average(-7, 2), -3);
        assert_eq!(i8::from_i64(300), 44);
    }

    #[test]
    fn half_types_are_exact_on_small_integers() {
        assert_eq!(f16::from_i64(2048).to_f64(), 2048.0);
        assert_eq!(bf16::from_i64(-256).to_f64(), -256.0);
        assert_eq!(f16::from_i64(3).reduce(f16::from_i64(4), RedOp::Prod).to_f64(), 12.0);
    }
}
