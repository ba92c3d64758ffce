// Fill and check kernels of qbench's collectives, compiled at run time with
// NVRTC. The data formulas are those of src/pattern.rs; the expected-value
// rule of each collective comes from its file in src/workload/collective/
// (Collective::source_cu): QB_SOURCES, defined before this source is
// compiled, holds one `case CODE: { ... }` per collective. Every kernel is a
// grid-stride loop over 64-bit indices.

typedef unsigned long long u64;
typedef long long i64;

__device__ __forceinline__ u64 mix(u64 z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

__device__ __forceinline__ u64 rank_key(u64 seed, u64 rank) { return mix(seed ^ mix(rank + 1)); }

__device__ __forceinline__ u64 bits(u64 key, u64 index) {
    return mix(key + index * 0x9e3779b97f4a7c15ULL);
}

// How values are drawn (src/pattern.rs, Draw::encode).
struct Draw {
    unsigned kind;  // 0 bits, 1 odd bits, 2 range, 3 power of two, 4 few
    i64 a;          // range: lo; power of two: signed
    u64 b;          // range: span; power of two: ranks with an exponent; few: ranks
};

__device__ __forceinline__ i64 draw_value(const Draw& d, u64 key, u64 rank, u64 index) {
    u64 h = bits(key, index);
    switch (d.kind) {
    case 0: return (i64)h;
    case 1: return (i64)(h | 1ULL);
    case 2: return d.a + (i64)__umul64hi(h, d.b);
    case 4: return rank < d.b ? (i64)__umul64hi(h, 3ULL) - 1 : 0;
    default: {
        i64 m = rank < d.b ? 1 + (i64)((h >> 1) & 1ULL) : 1;
        return (d.a && (h & 1ULL)) ? -m : m;
    }
    }
}

// ---- element types: storage, conversion from the drawn integer, arithmetic.
// Integer arithmetic is done on unsigned 64-bit values (wrapping, as NCCL's),
// floating arithmetic in double, exact for the drawn data.

__device__ __forceinline__ float half_to_float(unsigned short h) {
    float f;
    asm("{ .reg .b16 t; mov.b16 t, %1; cvt.f32.f16 %0, t; }" : "=f"(f) : "h"(h));
    return f;
}
__device__ __forceinline__ unsigned short float_to_half(float f) {
    unsigned short h;
    asm("{ .reg .b16 t; cvt.rn.f16.f32 t, %1; mov.b16 %0, t; }" : "=h"(h) : "f"(f));
    return h;
}
__device__ __forceinline__ float bf16_to_float(unsigned short b) {
    return __uint_as_float(((unsigned)b) << 16);
}
__device__ __forceinline__ unsigned short float_to_bf16(float f) {
    unsigned u = __float_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0;  // NaN
    u += 0x7fffu + ((u >> 16) & 1u);                     // round to nearest even
    return (unsigned short)(u >> 16);
}

// fp8 (OCP E4M3 and E5M2) as cuda_fp8.hpp converts in software: from a
// double rounded to nearest even, saturating to the largest finite value;
// to float exactly; the kernels are built for GPUs before sm_89 too, which
// have no fp8 conversion instructions.
__device__ __forceinline__ unsigned char double_to_fp8(double x, bool e4m3) {
    const u64 xbits = (u64)__double_as_longlong(x);
    const unsigned char maxnorm = e4m3 ? 0x7E : 0x7B;
    const unsigned char mmask = e4m3 ? 0x7 : 0x3;
    const unsigned bias = e4m3 ? 7u : 15u;
    const u64 sbits = e4m3 ? 4 : 3;
    const u64 mindenorm_o2 = e4m3 ? 0x3F50000000000000ULL : 0x3EE0000000000000ULL;
    const u64 overflow = e4m3 ? 0x407D000000000000ULL : 0x40EE000000000000ULL - 1;
    const u64 minnorm = e4m3 ? 0x3F90000000000000ULL : 0x3F10000000000000ULL;
    const u64 half_ulp = 1ULL << (53 - sbits - 1);
    const unsigned char sign = (unsigned char)((xbits >> 63) << 7);
    const unsigned char exp = (unsigned char)((((unsigned)(xbits >> 52)) & 0x7FFu) - 1023u + bias);
    const unsigned char mant = (unsigned char)((xbits >> (53 - sbits)) & mmask);
    const u64 absx = xbits & 0x7FFFFFFFFFFFFFFFULL;
    unsigned char res;
    if (absx <= mindenorm_o2) {
        res = 0;
    } else if (absx > 0x7FF0000000000000ULL) {
        res = e4m3 ? 0x7F : (unsigned char)(0x7E | mant);
    } else if (absx > overflow) {
        res = maxnorm;
    } else if (absx >= minnorm) {
        res = (unsigned char)((exp << (sbits - 1)) | mant);
        const u64 round = xbits & ((half_ulp << 1) - 1);
        if (round > half_ulp || (round == half_ulp && (mant & 1))) res++;
    } else {
        const unsigned char shift = (unsigned char)(1 - exp);
        res = (unsigned char)((mant | (1u << (sbits - 1))) >> shift);
        const u64 round = (xbits | (1ULL << 52)) & ((half_ulp << (shift + 1)) - 1);
        if (round > (half_ulp << shift) || (round == (half_ulp << shift) && (res & 1))) res++;
    }
    return res | sign;
}
__device__ __forceinline__ float fp8_to_float(unsigned char v, bool e4m3) {
    const float nan = __int_as_float(0x7fffffff);
    float r;
    if (e4m3) {
        const int e = (v >> 3) & 0xF, m = v & 7;
        if (e == 15 && m == 7) return nan;
        r = e == 0 ? ldexpf((float)m, -9) : ldexpf((float)(8 + m), e - 10);
    } else {
        const int e = (v >> 2) & 0x1F, m = v & 3;
        if (e == 31) return m ? nan : __int_as_float((v & 0x80) ? 0xff800000 : 0x7f800000);
        r = e == 0 ? ldexpf((float)m, -16) : ldexpf((float)(4 + m), e - 17);
    }
    return (v & 0x80) ? -r : r;
}
__device__ __forceinline__ float e4m3_to_float(unsigned char v) { return fp8_to_float(v, true); }
__device__ __forceinline__ unsigned char float_to_e4m3(float f) { return double_to_fp8((double)f, true); }
__device__ __forceinline__ float e5m2_to_float(unsigned char v) { return fp8_to_float(v, false); }
__device__ __forceinline__ unsigned char float_to_e5m2(float f) { return double_to_fp8((double)f, false); }

// Op codes: 0 sum, 1 prod, 2 max, 3 min, 4 avg, 5 mulsum (src/dtype.rs
// order); mulsum adds, its inputs premultiplied (see `reduced`).
template <typename S, bool SIGNED> struct IntT {
    typedef S storage;
    static __device__ __forceinline__ S from_value(i64 v) { return (S)(u64)v; }
    static __device__ __forceinline__ S reduce(S a, S b, int op) {
        switch (op) {
        case 1: return (S)((u64)a * (u64)b);
        case 2: return a > b ? a : b;
        case 3: return a < b ? a : b;
        default: return (S)((u64)a + (u64)b);
        }
    }
    static __device__ __forceinline__ S average(S sum, int n) { return (S)(sum / (S)n); }
    static __device__ __forceinline__ bool matches(S actual, S expected, double) { return actual == expected; }
};

template <typename S, float (*TO)(S), S (*FROM)(float)> struct SmallFloatT {
    typedef S storage;
    static __device__ __forceinline__ S from_value(i64 v) { return FROM((float)v); }
    static __device__ __forceinline__ S reduce(S a, S b, int op) {
        float x = TO(a), y = TO(b);
        switch (op) {
        case 1: return FROM(x * y);
        case 2: return FROM(fmaxf(x, y));
        case 3: return FROM(fminf(x, y));
        default: return FROM(x + y);
        }
    }
    static __device__ __forceinline__ S average(S sum, int n) { return FROM((float)((double)TO(sum) / n)); }
    static __device__ __forceinline__ bool matches(S actual, S expected, double tol) {
        float a = TO(actual), e = TO(expected);
        return tol == 0.0 ? a == e : fabs((double)a - (double)e) <= tol;
    }
};

template <typename S> struct FloatT {
    typedef S storage;
    static __device__ __forceinline__ S from_value(i64 v) { return (S)(double)v; }
    static __device__ __forceinline__ S reduce(S a, S b, int op) {
        double x = a, y = b;
        switch (op) {
        case 1: return (S)(x * y);
        case 2: return (S)fmax(x, y);
        case 3: return (S)fmin(x, y);
        default: return (S)(x + y);
        }
    }
    static __device__ __forceinline__ S average(S sum, int n) { return (S)((double)sum / n); }
    static __device__ __forceinline__ bool matches(S actual, S expected, double tol) {
        return tol == 0.0 ? actual == expected : fabs((double)actual - (double)expected) <= tol;
    }
};

// ---- what an output element must hold.
struct Check {
    u64 seed;
    Draw draw;
    int coll;   // the collective's code: its case in QB_SOURCES
    int op;
    int nranks;
    int rank;
    int root;
    u64 count;   // elements per rank block (param count)
    double tol;
};

template <typename E>
__device__ __forceinline__ typename E::storage input(const Check& c, int rank, u64 index) {
    return E::from_value(draw_value(c.draw, rank_key(c.seed, rank), rank, index));
}

// Rank `rank`'s input as the reduction takes it: mulsum's scalar is 2 on
// odd ranks (nccl-tests' ncclVerifiablePremulScalar), 1 on even ones.
template <typename E>
__device__ __forceinline__ typename E::storage contribution(const Check& c, int rank, u64 index) {
    typename E::storage x = input<E>(c, rank, index);
    return (c.op == 5 && (rank & 1)) ? E::reduce(x, x, 0) : x;
}

template <typename E>
__device__ __forceinline__ typename E::storage reduced(const Check& c, u64 index) {
    typename E::storage acc = contribution<E>(c, 0, index);
    for (int r = 1; r < c.nranks; r++) acc = E::reduce(acc, contribution<E>(c, r, index), c.op);
    return c.op == 4 ? E::average(acc, c.nranks) : acc;
}

// The expected value of output element j of rank c.rank (blk: the count).
template <typename E>
__device__ __forceinline__ typename E::storage expected(const Check& c, u64 j) {
    u64 blk = c.count;
    (void)blk;
    switch (c.coll) {
    QB_SOURCES
    }
    return E::from_value(0);
}

template <typename E>
__device__ void fill(typename E::storage* buf, u64 n, u64 seed, Draw draw, int rank) {
    u64 key = rank_key(seed, rank);
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x)
        buf[i] = E::from_value(draw_value(draw, key, rank, i));
}

template <typename E>
__device__ void check(const typename E::storage* buf, u64 n, Check c, u64* wrong) {
    u64 local = 0;
    for (u64 j = blockIdx.x * (u64)blockDim.x + threadIdx.x; j < n; j += (u64)gridDim.x * blockDim.x)
        if (!E::matches(buf[j], expected<E>(c, j), c.tol)) local++;
    if (local) atomicAdd(wrong, local);
}

typedef IntT<signed char, true> I8;
typedef IntT<unsigned char, false> U8;
typedef IntT<int, true> I32;
typedef IntT<unsigned int, false> U32;
typedef IntT<long long, true> I64;
typedef IntT<unsigned long long, false> U64;
typedef SmallFloatT<unsigned short, half_to_float, float_to_half> F16;
typedef SmallFloatT<unsigned short, bf16_to_float, float_to_bf16> BF16;
typedef SmallFloatT<unsigned char, e4m3_to_float, float_to_e4m3> F8E4M3;
typedef SmallFloatT<unsigned char, e5m2_to_float, float_to_e5m2> F8E5M2;
typedef FloatT<float> F32;
typedef FloatT<double> F64;

#define QB_KERNELS(NAME, E)                                                                       \
    extern "C" __global__ void qb_fill_##NAME(E::storage* buf, u64 n, u64 seed, unsigned kind,    \
                                              i64 a, u64 b, int rank) {                           \
        Draw d = {kind, a, b};                                                                    \
        fill<E>(buf, n, seed, d, rank);                                                           \
    }                                                                                             \
    extern "C" __global__ void qb_check_##NAME(const E::storage* buf, u64 n, u64 seed,            \
                                               unsigned kind, i64 a, u64 b, int coll, int op,     \
                                               int nranks, int rank, int root, u64 count,         \
                                               double tol, u64* wrong) {                          \
        Check c = {seed, {kind, a, b}, coll, op, nranks, rank, root, count, tol};                 \
        check<E>(buf, n, c, wrong);                                                               \
    }

QB_KERNELS(int8, I8)
QB_KERNELS(uint8, U8)
QB_KERNELS(int32, I32)
QB_KERNELS(uint32, U32)
QB_KERNELS(int64, I64)
QB_KERNELS(uint64, U64)
QB_KERNELS(half, F16)
QB_KERNELS(bfloat16, BF16)
QB_KERNELS(float, F32)
QB_KERNELS(double, F64)
QB_KERNELS(f8e4m3, F8E4M3)
QB_KERNELS(f8e5m2, F8E5M2)
