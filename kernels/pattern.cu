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
    unsigned kind;  // 0 bits, 1 odd bits, 2 range, 3 power of two
    i64 a;          // range: lo; power of two: signed
    u64 b;          // range: span; power of two: ranks with an exponent
};

__device__ __forceinline__ i64 draw_value(const Draw& d, u64 key, u64 rank, u64 index) {
    u64 h = bits(key, index);
    switch (d.kind) {
    case 0: return (i64)h;
    case 1: return (i64)(h | 1ULL);
    case 2: return d.a + (i64)__umul64hi(h, d.b);
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
